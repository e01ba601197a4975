"""The language layer: what a word and a sentence are in each language, between `curate.io` and the steps.

`words(text, lang)` and `sentences(text, lang)` (with `count_sentences`, `sentence_breaks`, `word_count`) are
what every filter, `dedup.Lines` and the decontamination and quality text forms use; `units_version()` names
the rules and the segmenter's version, and steps keep it as a parameter so a resumed run notices a change.
See `curate.lang.units` and docs/languages.md ("Words and sentences"). Per-language stop words and
thresholds live in `curate.lang.config`.
"""

from curate.lang.units import (
    CHARACTER_WORD,
    CHARACTER_WORD_RANGES,
    MAX_SEGMENT,
    SEGMENTED,
    STOPS,
    TERMINAL_PUNCTUATION,
    VERSION,
    SegmenterMissing,
    count_sentences,
    is_segmented,
    language,
    segmenter_version,
    sentence_breaks,
    sentences,
    terminal_punctuation,
    units_version,
    word_count,
    words,
)

__all__ = [
    "CHARACTER_WORD", "CHARACTER_WORD_RANGES",
    "MAX_SEGMENT", "SEGMENTED", "STOPS", "TERMINAL_PUNCTUATION", "VERSION", "SegmenterMissing", "count_sentences", "is_segmented",
    "language", "segmenter_version", "sentence_breaks", "sentences", "terminal_punctuation", "units_version", "word_count", "words",
]
