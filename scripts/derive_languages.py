"""Derive per-language filter configurations from parallel reference text (method `udhr-ratio/1`).

    .venv/bin/python scripts/derive_languages.py [--udhr ../shared/data/text/multilingual/nltk_udhr2.zip]

Writes curate/lang/data/filters.json. Reproducible: same zip in, same file out (no randomness).

Reference text: the Universal Declaration of Human Rights (NLTK's `udhr2`, public domain), one
translation per language. Each translation's paragraphs alternate between a *fit* half (paragraphs
0, 2, 4, …), the only text this script reads figures from, and a *held-out* half (1, 3, 5, …) that the
tests and benchmarks/lang_filters.py evaluate on; nothing here looks at the held-out half.

Method. The UDHR says the same thing in every language, so the ratio of a statistic in language L to
the same statistic in English isolates what the language changes (word length, punctuation, function
words) from what the genre does. Each English threshold T_en (the published Gopher / FineWeb values)
is scaled by that ratio: T_L = T_en * s_L / s_en, where s is measured on the fit half with the
filter's own tokens (`curate.lang.words`). So a language whose words are 1.4x English's on the same content gets mean word
length bounds of 4.2-14 instead of 3-10, and one that needs 1.3x as many words to say the same thing
needs 65 words where English needs 50. Repetition limits (top and duplicated n-gram characters) are
only ever loosened (ratio floored at 1, capped at 2): repetition is mostly a property of the page.
A language whose lines end in the known terminal marks under half as often as English's gets no
punctuation-line rule (Thai, Burmese: the marks are not written). Stop words are the most frequent words of the fit half among NLTK's stop-word list for the language
(27 languages), else among words no longer than the language's mean word length (function words are
short; UDHR's own topic words, "right", "everyone", are long), that occur in at least a fifth of the paragraphs, 12 of them, as FineWeb-2's configurations ship about
a dozen per language; none (the rule off) when fewer than 4 qualify, as happens where the tokens are
phrases, not words. A translation whose fit half has under 300 words gives no configuration. English keeps the
published defaults exactly (the paper's 8 stop words).

FineWeb-2 (Penedo et al. 2025) derived its thresholds from the distributions of each statistic over
large reference corpora per language (its `configs/<lang>_<script>.yml`); this is the cheap,
offline analogue on a small parallel text, and the figures differ from FineWeb-2's.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
import zipfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.filters._text import TERMINAL_PUNCTUATION  # noqa: E402
from curate.lang import units_version, words  # noqa: E402
from curate.lang.config import dominant_script  # noqa: E402

METHOD = "udhr-ratio/1"
DEFAULT_UDHR = ROOT.parent / "shared" / "data" / "text" / "multilingual" / "nltk_udhr2.zip"
DEFAULT_STOPWORDS = ROOT.parent / "shared" / "data" / "text" / "wordlists" / "nltk_stopwords.zip"
OUT = ROOT / "curate" / "lang" / "data" / "filters.json"
# NLTK's stop-word lists (Snowball and others; see the zip's README) by the language they are for.
NLTK_STOPWORDS = {
    "nl": "dutch", "de": "german", "sl": "slovene", "hu": "hungarian", "ro": "romanian", "kk": "kazakh",
    "tr": "turkish", "ru": "russian", "it": "italian", "el": "greek", "tg": "tajik", "no": "norwegian",
    "pt": "portuguese", "fi": "finnish", "da": "danish", "fr": "french", "sv": "swedish", "az": "azerbaijani",
    "es": "spanish", "id": "indonesian", "ar": "arabic", "ne": "nepali", "bn": "bengali", "he": "hebrew",
    "zh": "chinese", "ca": "catalan", "eu": "basque",
}

# lid.176 label -> the UDHR translation (udhr2 file stem) that is that language. Checked by hand where
# the ISO 639-3 code differs from the file's (macrolanguages, scripts, variants). lid.176's `als` is
# Alemannic, not the Tosk Albanian of udhr2/als.txt, so it has none; Kurdish (`ku`, Kurmanji) neither.
UDHR_FILE = {
    "af": "afr", "am": "amh", "ar": "arb", "ast": "ast", "az": "azj_latn", "bcl": "bcl", "be": "bel",
    "bg": "bul", "bn": "ben", "bo": "bod", "br": "bre", "bs": "bos_latn", "ca": "cat", "ceb": "ceb",
    "ckb": "ckb", "co": "cos", "cs": "ces", "cy": "cym", "da": "dan", "de": "deu", "dv": "div",
    "el": "ell_monotonic", "eml": "eml", "en": "eng", "eo": "epo", "es": "spa", "et": "est", "eu": "eus",
    "fa": "pes_1", "fi": "fin", "fr": "fra", "fy": "fri", "ga": "gle", "gd": "gla", "gl": "glg", "gn": "gug",
    "gu": "guj", "he": "heb", "hi": "hin", "hr": "hrv", "hsb": "hsb", "ht": "hat_kreyol", "hu": "hun",
    "hy": "hye", "ia": "ina", "id": "ind", "ilo": "ilo", "io": "ido", "is": "isl", "it": "ita", "ja": "jpn",
    "jv": "jav", "ka": "kat", "kk": "kaz", "km": "khm", "kn": "kan", "ko": "kor", "ky": "kir", "la": "lat",
    "lb": "ltz", "lo": "lao", "lt": "lit", "lv": "lav", "mai": "mai", "mg": "plt", "min": "min", "mk": "mkd",
    "ml": "mal", "mn": "khk", "mr": "mar", "ms": "mly_latn", "mt": "mlt", "my": "mya", "nds": "nds",
    "ne": "nep", "nl": "nld", "nn": "nno", "no": "nob", "os": "oss", "pa": "pan", "pam": "pam", "pl": "pol",
    "pnb": "pnb", "ps": "pbu", "pt": "por_BR", "qu": "quz", "rm": "roh", "ro": "ron", "ru": "rus",
    "sa": "san", "sah": "sah", "sc": "src", "sco": "sco", "sk": "slk", "sl": "slv", "so": "som", "sq": "als",
    "sr": "srp_cyrl", "su": "sun", "sv": "swe", "sw": "swh", "ta": "tam", "tg": "tgk", "th": "tha",
    "tk": "tuk_latn", "tl": "tgl", "tr": "tur", "tt": "tat", "tyv": "tyv", "ug": "uig_arab", "uk": "ukr",
    "ur": "urd", "uz": "uzn_latn", "vec": "vec", "vep": "vep", "vi": "vie", "wa": "wln", "war": "war",
    "yi": "ydd", "yo": "yor", "zh": "cmn_hans",
}

# The published English values (Gopher: Rae et al. 2021 table A1; FineWeb: Penedo et al. 2024; C4).
EN = {
    "gopher_quality": {"min_words": 50, "max_words": 100_000, "min_mean_word_length": 3, "max_mean_word_length": 10, "min_alpha_words_ratio": 0.8},
    "gopher_repetition": {"max_top_ngram_char_frac": {2: 0.20, 3: 0.18, 4: 0.16},
                          "max_dup_ngram_char_frac": {5: .15, 6: .14, 7: .13, 8: .12, 9: .11, 10: .10}},
    "fineweb": {"min_punct_line_ratio": 0.12, "max_newline_word_ratio": 0.3},
}
GOPHER_STOP_WORDS = ["the", "be", "to", "of", "and", "that", "have", "with"]
N_STOP_WORDS = 12
MIN_STOP_SPREAD = 0.2  # a stop word occurs in at least this share of the fit paragraphs
MIN_STOP_WORDS = 4  # fewer qualifying words: no list (the rule is off for the language)
MIN_FIT_WORDS = 300  # a translation shorter than this (some hold one article) gives no configuration
MIN_PUNCT_RATIO = 0.5  # a language whose lines end in known marks under half as often as English's: rule off
C4_END_MARKS = (".", "?", "!", '"')
_HAS_ALNUM = re.compile(r"[^\W_]")
_HAS_LETTER = re.compile(r"[^\W\d_]")


def filter_tokens(text: str, lang: str) -> list[str]:
    """The tokens the filters count for `text` in `lang` (words and punctuation)."""
    return words(text, lang)


def udhr_paragraphs(z: zipfile.ZipFile, stem: str) -> list[str]:
    """The translation's paragraphs (non-blank lines, stripped, NFC), the title line left out."""
    text = unicodedata.normalize("NFC", z.read(f"udhr2/{stem}.txt").decode("utf-8"))
    lines = [s.strip() for s in text.splitlines() if s.strip()]
    return lines[1:]


def halves(paragraphs: list[str]) -> tuple[list[str], list[str]]:
    """(fit, held-out): even and odd paragraphs, so both halves span the whole declaration."""
    return paragraphs[0::2], paragraphs[1::2]


def stats(lines: list[str], lang: str) -> dict:
    """The statistics the thresholds scale with, measured on one text (lines joined by newlines)."""
    text = "\n".join(lines)
    tokens = filter_tokens(text, lang)
    words = [t for t in tokens if _HAS_ALNUM.search(t)]
    return {
        "mean_word_length": sum(map(len, words)) / max(len(words), 1),
        "alpha_ratio": sum(1 for w in words if _HAS_LETTER.search(w)) / max(len(tokens), 1),
        "punct_lines": sum(s.endswith(TERMINAL_PUNCTUATION) for s in lines) / len(lines),
        "newline_per_token": text.count("\n") / max(len(tokens), 1),
        "top_ngram": {n: top_ngram_frac(tokens, n, len(text)) for n in (2, 3, 4)},
        "dup_ngram": {n: dup_ngram_frac(tokens, n, len(text)) for n in range(5, 11)},
        "words": words,
        "paragraphs": [[t for t in filter_tokens(p, lang) if _HAS_ALNUM.search(t)] for p in lines],
        "n_words": len(words),
        "end_marks": Counter(s[-1] for s in lines),
    }


def top_ngram_frac(tokens: list[str], n: int, n_chars: int) -> float:
    grams = Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
    if not grams:
        return 0.0
    gram, count = grams.most_common(1)[0]
    return count * len(" ".join(gram)) / n_chars


def dup_ngram_frac(tokens: list[str], n: int, n_chars: int) -> float:
    """Characters in repeated n-grams (the reference scan: count a seen n-gram and jump past it)."""
    seen: set[tuple[str, ...]] = set()
    chars = i = 0
    while i <= len(tokens) - n:
        g = tuple(tokens[i:i + n])
        if g in seen:
            chars += sum(map(len, g))
            i += n
        else:
            seen.add(g)
            i += 1
    return chars / n_chars


def stop_words(paragraphs: list[list[str]], mean_len: float, vetted: frozenset[str] | None) -> list[str] | None:
    """Up to 12 stop words: the most frequent (lower-cased) words of the fit half that occur in at least a
    fifth of its paragraphs (function words are everywhere; "Article 3" is in one). With a vetted list
    (NLTK's, for 27 languages) only its words qualify, and a tenth of the paragraphs suffices: this keeps
    the declaration's topic words ("droit", "oikeus") out. Without one, only words no longer than the
    mean word length qualify (function words are short). Ties by first use.

    None when fewer than 4 words qualify: then the "words" are not words (a script whose word separator
    the tokenizer does not know, as Ethiopic's ፡ or Tibetan's ་) and a list drawn from them would drop the
    language's clean text, so the rule is off for it."""
    counts: Counter = Counter()
    spread: Counter = Counter()
    for para in paragraphs:
        ok = [w.lower() for w in para]
        ok = [w for w in ok if w in vetted] if vetted else [w for w in ok if len(w) <= max(mean_len, 2)]
        counts.update(ok)
        spread.update(set(ok))
    share = MIN_STOP_SPREAD / 2 if vetted else MIN_STOP_SPREAD
    common = [w for w, _ in counts.most_common() if spread[w] >= share * len(paragraphs)]
    return common[:N_STOP_WORDS] if len(common) >= MIN_STOP_WORDS else None


def nltk_lists(path: Path) -> dict[str, frozenset[str]]:
    """NLTK's stop-word lists, by language code."""
    with zipfile.ZipFile(path) as z:
        return {lang: frozenset(w.strip().lower() for w in z.read(f"stopwords/{name}").decode("utf-8").splitlines()
                                if w.strip()) for lang, name in NLTK_STOPWORDS.items()}


def _r(x: float) -> float:
    return round(x, 3)


def scaled(s: dict, en: dict) -> dict:
    """Each English threshold scaled by the language's statistic over English's (see the module doc)."""
    def ratio(key: str) -> float:
        return s[key] / en[key] if en[key] else 1.0

    def loosen(key: str, n: int) -> float:
        return min(2.0, max(1.0, s[key][n] / en[key][n] if en[key][n] else 1.0))

    wl = ratio("mean_word_length")
    nw = ratio("n_words")
    p = ratio("punct_lines")
    q, r, f = EN["gopher_quality"], EN["gopher_repetition"], EN["fineweb"]
    return {
        "gopher_quality": {
            "min_words": max(1, round(q["min_words"] * nw)),
            "max_words": max(1000, round(q["max_words"] * nw)),
            "min_mean_word_length": _r(q["min_mean_word_length"] * wl),
            "max_mean_word_length": _r(q["max_mean_word_length"] * wl),
            "min_alpha_words_ratio": _r(min(0.95, q["min_alpha_words_ratio"] * ratio("alpha_ratio"))),
        },
        "gopher_repetition": {
            "max_top_ngram_char_frac": {n: _r(v * loosen("top_ngram", n)) for n, v in r["max_top_ngram_char_frac"].items()},
            "max_dup_ngram_char_frac": {n: _r(v * loosen("dup_ngram", n)) for n, v in r["max_dup_ngram_char_frac"].items()},
        },
        "fineweb": {
            "min_punct_line_ratio": _r(f["min_punct_line_ratio"] * p) if p >= MIN_PUNCT_RATIO else 0.0,
            "max_newline_word_ratio": _r(f["max_newline_word_ratio"] * ratio("newline_per_token")),
        },
    }


def end_marks(s: dict) -> list[str]:
    """C4's end marks: English's, plus the terminal punctuation that ends the language's lines."""
    own = [m for m, _ in s["end_marks"].most_common() if m in TERMINAL_PUNCTUATION and m not in C4_END_MARKS]
    return list(C4_END_MARKS) + sorted(own)


def derive(udhr: Path, stopwords: Path) -> dict:
    languages: dict[str, dict] = {}
    vetted = nltk_lists(stopwords)
    with zipfile.ZipFile(udhr) as z:
        fit = {lang: halves(udhr_paragraphs(z, stem))[0] for lang, stem in UDHR_FILE.items()}
    en = stats(fit["en"], "en")
    for lang in sorted(UDHR_FILE):
        s = stats(fit[lang], lang)
        if s["n_words"] < MIN_FIT_WORDS:
            print(f"{lang}: {s['n_words']} words in the fit half, under {MIN_FIT_WORDS}: no configuration")
            continue
        entry = {"source": f"udhr2/{UDHR_FILE[lang]}.txt (fit half)", "method": METHOD,
                 "script": dominant_script("\n".join(fit[lang])),
                 "code_3": UDHR_FILE[lang].split("_")[0]}
        if lang == "en":
            entry.update({k: dict(v) for k, v in EN.items()})
            entry["source"] = "published defaults (Gopher table A1, FineWeb, C4)"
            entry["method"] = "published"
            entry["gopher_quality"]["stop_words"] = GOPHER_STOP_WORDS
            entry["c4"] = {"end_marks": list(C4_END_MARKS)}
        else:
            entry.update(scaled(s, en))
            entry["gopher_quality"]["stop_words"] = stop_words(s["paragraphs"], s["mean_word_length"], vetted.get(lang))
            entry["c4"] = {"end_marks": end_marks(s)}
            if lang in vetted:
                entry["stop_words_source"] = f"NLTK stopwords/{NLTK_STOPWORDS[lang]}, ranked by the fit half"
        languages[lang] = entry
    return {
        "format": "peneira.lang-filters/1",
        "method": METHOD,
        "units": units_version(),  # the words the figures were measured with: re-derive when they change
        "about": "Per-language thresholds and stop words for GopherQuality, GopherRepetition, FineWeb and C4, "
                 "derived by scripts/derive_languages.py (docs/languages.md).",
        "reference": {"udhr2": "Universal Declaration of Human Rights, NLTK data `udhr2` (public domain)",
                      "nltk_stopwords": "NLTK data `stopwords` (Snowball-derived lists, BSD; others as its README)"},
        "licence": "Thresholds and frequency-ranked words: derived from public-domain text; the stop words of "
                   "languages marked stop_words_source are a subset of NLTK's lists (their licences apply); "
                   "en: the published values.",
        "languages": languages,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--udhr", type=Path, default=DEFAULT_UDHR)
    ap.add_argument("--stopwords", type=Path, default=DEFAULT_STOPWORDS)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    data = derive(args.udhr, args.stopwords)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(data['languages'])} languages -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
