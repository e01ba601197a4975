"""Speed of the multilingual filter chain against the English chain on the same bytes (issue 32, item 1).

The documents are the Universal Declaration of Human Rights in every language of nltk's udhr2 (388 files, one
document each; ../shared/data). The chain is GopherQuality, GopherRepetition, C4 and FineWeb, each document
through every filter (no early exit, so both chains do the same work). The English chain gives every document
`lang="en"` (what every language got before curate.lang); the multilingual chain gives each its own language,
so Chinese, Japanese, Thai, Lao, Khmer and Burmese are segmented by ICU and every language but English takes the
script-aware sentence rule. CPU seconds (time.process_time), best of `--repeat`, and the ratio; then the same
for the six segmented languages alone, and `curate.lang.words` on hostile text of 10 MB without a space.
Then the agreement figures tests/test_lang_units.py asserts: word boundaries against jieba, MeCab + UniDic
(fugashi, unidic-lite) and pythainlp's newmm on UDHR + Tatoeba, and the sentence breaks found at Tatoeba's row
joins in its 83 languages, with C4's English rule on the same joins.

    .venv/bin/python benchmarks/lang_units.py [--repeat 3] [--hostile-mb 10]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import zipfile
from pathlib import Path

from curate import Document, filters, lang
from curate.filters import _text
from curate.lang import spaced

UDHR = Path(__file__).resolve().parents[2] / "shared" / "data" / "text" / "multilingual" / "nltk_udhr2.zip"
# udhr2's file names (ISO 639-3, with a script or variant) of the languages written without spaces
SEGMENTED = {"cmn_hans": "zh", "cmn_hant": "zh", "jpn": "ja", "tha": "th", "lao": "lo", "khm": "km", "mya": "my"}


def load() -> list[tuple[str, str]]:
    """(language, text) of every UDHR file: the segmented ones by their ISO 639-1 code, the rest by the file's
    639-3 code (any code but "en" takes the multilingual rules; stop-word lists are not this benchmark's)."""
    out = []
    with zipfile.ZipFile(UDHR) as z:
        for name in sorted(z.namelist()):
            if not name.endswith(".txt"):
                continue
            stem = name.rsplit("/", 1)[-1][:-4]
            code = SEGMENTED.get(stem, stem.split("_")[0])
            out.append(("en" if code == "eng" else code, z.read(name).decode("utf-8", errors="replace")))
    return out


def chain_seconds(docs: list[tuple[str, str]], english: bool, repeat: int) -> float:
    steps = [filters.GopherQuality(), filters.GopherRepetition(), filters.C4(bad_words_languages=()),
             filters.FineWeb()]
    best = float("inf")
    for _ in range(repeat):
        _text._cache.clear()
        spaced._CHUNKS.clear()
        gc.collect()
        t = time.process_time()
        for code, text in docs:
            for step in steps:
                step.apply(Document(id="d", text=text, source="udhr", lang="en" if english else code))
        best = min(best, time.process_time() - t)
    return best


def hostile_seconds(unit: str, mb: float, code: str) -> tuple[float, int]:
    text = unit * int(mb * 1e6 / len(unit.encode()))
    gc.collect()
    t = time.process_time()
    n = len(lang.words(text, code))
    return time.process_time() - t, n


def agreement() -> None:
    """The reference comparisons of tests/test_lang_units.py, printed (that file's helpers, one definition)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import test_lang_units as t

    for code, udhr, tatoeba, _, _ in t.SEGMENTED_CASES:
        texts = [s for name in udhr for s in t._udhr(name)] + t._tatoeba()[tatoeba]
        ref = t._reference(code)
        p, r, f1 = t._prf(texts, lambda s, c=code: lang.words(s, c), ref)
        _, _, f1_space = t._prf(texts, lambda s: lang.words(s, "en"), ref)
        name = {"zh": "jieba", "ja": "MeCab + UniDic (fugashi)", "th": "pythainlp newmm"}[code]
        print(f"words {code}: {len(texts)} texts, boundaries vs {name}: P {p:.3f} R {r:.3f} F1 {f1:.3f} "
              f"(whitespace split: F1 {f1_space:.3f})")
    found = expected = en_found = 0
    for code, rows in t._tatoeba().items():
        f, n = t._join_recall(code, code, rows)
        fe, _ = t._join_recall("en", code, rows)
        found, expected, en_found = found + f, expected + n, en_found + fe
    print(f"sentences: Tatoeba row joins after a stop, {expected} in {len(t._tatoeba())} languages: "
          f"{found / expected:.3f} found (C4's English rule: {en_found / expected:.3f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hostile-mb", type=float, default=10.0)
    args = ap.parse_args()
    docs = load()
    lang.words("预热", "zh")  # load ICU's dictionaries outside the timings
    print(f"segmenter: {lang.units_version()}")
    for label, subset in (("all 388 UDHR files", docs),
                          ("the 7 segmented files (zh x2, ja, th, lo, km, my)",
                           [d for d in docs if lang.is_segmented(d[0])])):
        mb = sum(len(t.encode()) for _, t in subset) / 1e6
        en = chain_seconds(subset, True, args.repeat)
        multi = chain_seconds(subset, False, args.repeat)
        print(f"{label}: {mb:.2f} MB; English chain {en:.3f} s CPU ({mb / en:.2f} MB/s), multilingual chain "
              f"{multi:.3f} s ({mb / multi:.2f} MB/s): {multi / en:.2f}x")
    for name, unit, code in (("Han, no space", "我们是中国人爱北京天安门", "zh"),
                             ("Thai, no space", "ภาษาไทยเป็นภาษาที่สวยงาม", "th"),
                             ("mixed scripts, no space", "abc東京ภาษา১২৩мир。！？", "ja")):
        s, n = hostile_seconds(unit, args.hostile_mb, code)
        print(f"words() on {args.hostile_mb:g} MB of {name}: {s:.2f} s CPU, {n:,} words "
              f"({args.hostile_mb / s:.2f} MB/s)")
    agreement()


if __name__ == "__main__":
    main()
