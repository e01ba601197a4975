"""The language layer: what a word and a sentence are in each language, between `curate.io` and the steps.

`words(text, lang)` and `sentences(text, lang)` (with `count_sentences`, `sentence_breaks`, `word_count`) are
what every filter, `dedup.Lines` and the decontamination and quality text forms use; `units_version()` names
the rules and the segmenter's version, and steps keep it as a parameter so a resumed run notices a change.
See `curate.lang.units` and docs/languages.md ("Words and sentences"). Per-language stop words and
thresholds live in `curate.lang.config`; thresholds stated in English words are scaled to languages whose units are
characters by `curate.lang.scale`.
"""

from curate.lang.scale import SCALE_VERSION, UNIT, UNIT_RANGES, UNITS_PER_ENGLISH_WORD, scaled, script_language
from curate.lang.units import (
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
    "SCALE_VERSION", "UNIT", "UNIT_RANGES", "UNITS_PER_ENGLISH_WORD", "scaled", "script_language",
    "MAX_SEGMENT", "SEGMENTED", "STOPS", "TERMINAL_PUNCTUATION", "VERSION", "SegmenterMissing", "count_sentences", "is_segmented",
    "language", "segmenter_version", "sentence_breaks", "sentences", "terminal_punctuation", "units_version", "word_count", "words",
]
