"""Issue 41.3: MinHash finds near-duplicates as well in every language `curate.lang` segments as in English.

Pairs are built from the Universal Declaration of Human Rights (../shared/data, nltk's udhr2: one parallel text per
language) with one word in 50 replaced by another word of the same text. Words to replace are cut independently of
curate: by whitespace in English and Russian, by ICU's word break iterator called directly in the others. The
exact Jaccard of the shingle sets (brute force over `shingles`) must be on a par with English's (before: about 0.2
in Chinese, Japanese and Thai, where a clause between two punctuation marks was one "word"), both signature schemes
must estimate it, and the MinHash step must keep one document of each pair.
"""

from __future__ import annotations

import glob
import json
import zipfile

import numpy as np
import pyarrow.parquet as pq
import pytest

from curate import Pipeline, dedup, readers
from curate.dedup.sketch import signatures_by_scheme
from curate.dedup.text import shingles
from curate.run.executors.local import LocalExecutor

UDHR = {"en": "eng", "ru": "rus", "zh": "cmn_hans", "ja": "jpn", "th": "tha", "lo": "lao", "km": "khm", "my": "mya"}
SPACED = {"en", "ru"}
CHARS = {True: 6000, False: 3000}  # a prefix of each text (about 1,000 words), to keep the test short


def _udhr(shared, lang: str) -> str:
    with zipfile.ZipFile(shared / "text/multilingual/nltk_udhr2.zip") as z:
        return z.read(f"udhr2/{UDHR[lang]}.txt").decode("utf-8")[:CHARS[lang in SPACED]]


def _word_spans(text: str, lang: str) -> list[tuple[int, int]]:
    """(start, end) of each word with a letter: whitespace chunks, or ICU's word boundaries (called directly)."""
    if lang in SPACED:
        import re

        return [m.span() for m in re.finditer(r"\S+", text) if any(c.isalpha() for c in m.group())]
    icu = pytest.importorskip("icu")
    it = icu.BreakIterator.createWordInstance(icu.Locale(lang))
    it.setText(text)
    assert len(text.encode("utf-16-le")) == 2 * len(text)  # BMP only: ICU's offsets are str offsets
    bounds = [0, *it]
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if any(c.isalpha() for c in text[a:b])]


def near_copy(text: str, lang: str, every: int = 50) -> str:
    """`text` with one word in `every` replaced by the word seven words later (a different one)."""
    spans = _word_spans(text, lang)
    out, last = [], 0
    for i in range(every // 2, len(spans) - 20, every):
        a, b = spans[i]
        other = next(text[c:d] for c, d in spans[i + 7:] if text[c:d] != text[a:b])
        out += [text[last:a], other]
        last = b
    return "".join(out) + text[last:]


@pytest.fixture(scope="module")
def pairs(shared) -> dict[str, tuple[str, str]]:
    return {lang: (t := _udhr(shared, lang), near_copy(t, lang)) for lang in UDHR}


def _jaccard(a: str, b: str, lang: str) -> float:
    x, y = set(shingles(a, 5, lang)), set(shingles(b, 5, lang))
    return len(x & y) / len(x | y)


def test_shingle_jaccard_is_on_par_with_english_in_every_segmented_language(pairs):
    got = {lang: _jaccard(a, b, lang) for lang, (a, b) in pairs.items()}
    assert 0.75 < got["en"] < 0.9, got  # one word in 50 changes 5 shingles in 50: about 0.82
    low = {lang: round(j, 3) for lang, j in got.items() if abs(j - got["en"]) > 0.08}
    assert low == {}, f"Jaccard off English's {got['en']:.3f}: {low}"


@pytest.mark.parametrize("scheme", ["datasketch", "fast"])
def test_both_schemes_estimate_it_from_the_documents_language(pairs, scheme):
    langs = list(pairs)
    texts = [t for lang in langs for t in pairs[lang]]
    sigs, counts = signatures_by_scheme(texts, scheme, langs=[lang for lang in langs for _ in range(2)])
    for k, lang in enumerate(langs):
        a, b = sigs[2 * k], sigs[2 * k + 1]
        assert counts[2 * k] == len(shingles(pairs[lang][0], 5, lang))
        assert abs(float(np.mean(a == b)) - _jaccard(*pairs[lang], lang)) < 0.12, lang
    # without its language a Chinese page is shingled by clause, as before: the language is what changes it
    zh = signatures_by_scheme(list(pairs["zh"]), scheme)[0]
    assert np.mean(zh[0] == zh[1]) < 0.5


def _lang_from_metadata(doc):
    doc.lang = doc.metadata["lang"]  # as a language step would have set it
    return doc


def test_minhash_step_keeps_one_of_each_pair(pairs, tmp_path):
    """One word in 100 (Jaccard about 0.9: the 14x8 bands meet such a pair with probability 0.9996; at 0.82 it is
    0.92, which would make a missed pair chance, not a defect): the step reads each document's `lang`."""
    src = tmp_path / "docs.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for lang, (a, _) in pairs.items():
            for i, t in enumerate((a, near_copy(a, lang, every=100))):
                f.write(json.dumps({"id": f"{lang}-{i}", "text": t, "lang": lang}, ensure_ascii=False) + "\n")
    pipe = Pipeline(name="ml", reader=readers.Jsonl(), steps=[_lang_from_metadata, dedup.MinHash(scheme="fast")])
    pipe.run(inputs=[str(src)], output=str(tmp_path / "out"), executor=LocalExecutor(1, progress=False),
             progress=False)
    kept = {r["id"].split("#")[0] for p in glob.glob(f"{tmp_path}/out/data/*.parquet")
            for r in pq.read_table(p, columns=["id"]).to_pylist()}
    assert kept == {f"{lang}-0" for lang in pairs}
