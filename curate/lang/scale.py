"""Thresholds stated in English words, scaled to languages whose units are not space-separated words.

A step that counts a text's length in context-free units (decontamination's n-grams: a passage must be cut the same
way inside a benchmark item and inside a page, which a dictionary segmenter does not promise) takes every Han and
kana character, and every letter of Thai, Lao, Khmer and Burmese, as a unit of its own (`UNIT_SCRIPTS`). Such a
unit carries less than an English word, so a floor or an n-gram size stated in English words is multiplied by the
units the language needs for what English says in one word, measured on parallel text: the Universal Declaration of
Human Rights (nltk's udhr2), letters and digits of each translation after decontamination's fold (marks dropped)
over the words of the English one (`derive`, `UNITS_PER_ENGLISH_WORD`; tests/test_decontam_languages.py recomputes
it from ../shared/data). So 13 English words are 20 Chinese characters, 53 Thai letters; the floor of 8 is 12 and 33.

Which rule a text takes is identified from its script (`script_language`): the language whose unit script holds
most of its letters (any kana makes Han Japanese), else None: a language that spaces its words, whose units are
its words (scale 1).
"""

from __future__ import annotations

import re
import unicodedata

# The scripts whose every letter is a unit, by the language whose ratio they take; Han is Chinese unless kana is
# present. Ranges of the Unicode blocks (the same as curate.lang.units' segmented scripts).
UNIT_SCRIPTS: dict[str, tuple[tuple[int, int], ...]] = {
    "ja": ((0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F)),  # hiragana, katakana, half-width katakana
    "zh": ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3FFFF)),  # Han
    "th": ((0x0E00, 0x0E7F),),
    "lo": ((0x0E80, 0x0EFF),),
    "km": ((0x1780, 0x17FF), (0x19E0, 0x19FF)),
    "my": ((0x1000, 0x109F), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F)),
}
UNIT_RANGES = tuple(r for ranges in UNIT_SCRIPTS.values() for r in ranges)
UNIT = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in UNIT_RANGES) + "]")

# Units per English word on the UDHR (`derive`; udhr2 files cmn_hans, jpn, tha, lao, khm, mya over eng).
UNITS_PER_ENGLISH_WORD = {"zh": 1.53, "ja": 2.16, "th": 4.07, "lo": 4.5, "km": 3.56, "my": 3.71}
UDHR_FILES = {"en": "eng", "zh": "cmn_hans", "ja": "jpn", "th": "tha", "lo": "lao", "km": "khm", "my": "mya"}
SCALE_VERSION = "udhr-units-per-english-word-1: " + ", ".join(f"{k} {v}" for k, v in UNITS_PER_ENGLISH_WORD.items())

_SCRIPT_OF = [(a, b, lang) for lang, ranges in UNIT_SCRIPTS.items() for a, b in ranges]


def script_language(text: str) -> str | None:
    """The unit-script language of a text: the one of `UNIT_SCRIPTS` holding the most of its letters (Han with any
    kana is Japanese), if those are at least as many as its other letters; else None (a spaced language)."""
    counts: dict[str, int] = {}
    other = 0
    for ch in text:
        if not ch.isalpha() and unicodedata.category(ch)[0] != "M":
            continue
        cp = ord(ch)
        lang = next((lang for a, b, lang in _SCRIPT_OF if a <= cp <= b), None)
        if lang is None:
            other += 1
        else:
            counts[lang] = counts.get(lang, 0) + 1
    if not counts:
        return None
    if "ja" in counts and "zh" in counts:
        counts["ja"] += counts.pop("zh")
    lang, n = max(counts.items(), key=lambda kv: kv[1])
    return lang if n >= other else None


def scaled(words: int, lang: str | None) -> int:
    """`words` English words in units of `lang` (a `script_language`): unchanged for a spaced language."""
    return words if lang is None else max(1, round(words * UNITS_PER_ENGLISH_WORD[lang]))


def derive(udhr_zip: str, units) -> dict[str, float]:
    """`UNITS_PER_ENGLISH_WORD` from nltk's udhr2.zip: `units(text)` (decontamination's words, one per character of
    a unit script) of each translation over those of the English text, to two decimals."""
    import zipfile

    with zipfile.ZipFile(udhr_zip) as z:
        count = {lang: len(units(z.read(f"udhr2/{name}.txt").decode("utf-8"))) for lang, name in UDHR_FILES.items()}
    return {lang: round(n / count["en"], 2) for lang, n in count.items() if lang != "en"}
