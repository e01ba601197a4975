"""GopherRepetition's compiled n-gram statistics (curate/filters/_repetition.c) against two references: brute force
over word tuples (the statistics themselves), and the Python implementation it replaced, kept as
`gopher.ngram_rule_python` (the decisions, which must not move). Agreement with datatrove's GopherRepetitionFilter
is tests/test_filters.py::test_decisions_match_datatrove, which runs the compiled path."""

from __future__ import annotations

import gzip
import itertools
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from curate import filters
from curate.core.document import Document
from curate.filters import gopher
from curate.lang import words

_repetition = pytest.importorskip("curate.filters._repetition")

TOP = {2: 0.20, 3: 0.18, 4: 0.16}
DUP = {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}


def brute_stats(ws: list[str], n: int) -> tuple[int, int]:
    """(top n-gram characters, duplicate n-gram characters) by the definitions, on tuples of words: the most
    frequent n-gram (ties: the first to occur) times its length joined by spaces; the left-to-right scan that
    counts a seen n-gram's characters and jumps past it."""
    grams = [tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)]
    counts = Counter(grams)  # insertion order is first occurrence, and max() keeps the first of equals
    gram, count = max(counts.items(), key=lambda kv: kv[1])
    seen: set[tuple[str, ...]] = set()
    dup = i = 0
    while i < len(grams):
        if grams[i] in seen:
            dup += sum(map(len, grams[i]))
            i += n
        else:
            seen.add(grams[i])
            i += 1
    return count * len(" ".join(gram)), dup


def compiled(ws: list[str], ns=tuple(range(2, 11))) -> tuple[dict, dict]:
    return _repetition.ngram_stats(ws, ns, ns)


@pytest.fixture(scope="module")
def corpus(shared: Path) -> list[tuple[str, str]]:
    """(text, language): the 697 web_cc pages, 200 Bosque (Portuguese) documents, and the Tatoeba sentences of
    each language (those that space words and those ICU segments: zh, ja, th, ...), one document a language."""
    with gzip.open(shared / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz", "rt") as f:
        docs = [(json.loads(line)["text"], "en") for line in f]
    bosque = (shared / "text/pt/bosque_docs.jsonl").read_text(encoding="utf-8").splitlines()[:200]
    docs += [(json.loads(line)["text"], "pt") for line in bosque]
    per_lang: dict[str, list[str]] = {}
    for line in (shared / "text/multilingual/tatoeba_long.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        code, _, _, sentence = line.split("\t")
        per_lang.setdefault(code, []).append(sentence)
    for code, sents in per_lang.items():  # one document a language, its first two sentences repeated at the end
        docs.append(("\n".join(sents + sents[:2]), code))
    return docs


def test_statistics_equal_brute_force_on_real_text(corpus):
    checked = 0
    for text, lang in corpus[::3]:
        ws = words(text, lang)
        top, dup = compiled(ws)
        for n in range(2, 11):
            if len(ws) < n:
                assert n not in top and n not in dup
                continue
            assert (top[n], dup[n]) == brute_stats(ws, n), (lang, n, text[:80])
            checked += 1
    assert checked > 2000


def test_statistics_equal_brute_force_on_small_vocabularies():
    """Random words from 1-4 letter vocabularies: every n-gram repeats, ties for the top n-gram everywhere."""
    rng = random.Random(7)
    for trial in range(400):
        vocab = ["a", "bb", "ccc", "dddd", "é", "ø"][: rng.randint(1, 6)]
        ws = [rng.choice(vocab) for _ in range(rng.randint(0, 60))]
        top, dup = compiled(ws)
        for n in range(2, min(len(ws), 10) + 1):
            assert (top[n], dup[n]) == brute_stats(ws, n), (trial, ws, n)


def test_decisions_equal_the_python_reference(corpus):
    """Default limits, then limits drawn at random around each page's own statistics, so that many pages sit
    on either side of some limit: the compiled path and `ngram_rule_python` decide alike every time."""
    rng = random.Random(3)
    rep = filters.GopherRepetition()
    fired = Counter()
    for text, lang in corpus:
        ws = words(text, lang)
        for trial in range(4):
            if trial:
                rep.max_top_ngram_char_frac = {n: rng.uniform(0, 0.4) for n in rng.sample(range(2, 6), 3)}
                rep.max_dup_ngram_char_frac = {n: rng.uniform(0, 0.3) for n in rng.sample(range(4, 12), 4)}
            else:
                rep.max_top_ngram_char_frac, rep.max_dup_ngram_char_frac = dict(TOP), dict(DUP)
            want = gopher.ngram_rule_python(ws, len(text), rep.max_top_ngram_char_frac, rep.max_dup_ngram_char_frac)
            got = rep._ngram_rule(ws, len(text))
            assert rule(got) == want, (lang, trial, text[:80])
            if got is not None:  # the evidence: the statistic over its limit, and that limit
                limits = rep.max_top_ngram_char_frac if got.rule.startswith("top") else rep.max_dup_ngram_char_frac
                assert got.limit == limits[int(got.rule.split("_")[1])] and got.measured > got.limit
            fired[want] += 1
    assert fired[None] > 100 and len(fired) > 10  # both outcomes, and many different rules, were exercised


def test_filter_without_the_extension_decides_alike(corpus, monkeypatch):
    """A source tree without the built module falls back to the reference: the same drop reasons."""
    docs = [Document(id=str(i), text=t, source="test", lang=lang) for i, (t, lang) in enumerate(corpus[::2])]
    with_c = [rule(filters.GopherRepetition().reject_rule(d)) for d in docs]
    monkeypatch.setattr(gopher, "_repetition", None)
    assert [rule(filters.GopherRepetition().reject_rule(d)) for d in docs] == with_c


def rule(result):
    """The rule a reject_rule result names (a Reject carries it with its evidence; the reference returns the name)."""
    return getattr(result, "rule", result)


def test_hostile_inputs_have_exact_statistics():
    """A 10 MB text with no space is one word (no n-gram); a million-word repeat of one bigram, and of a
    10-word sentence: the statistics follow in closed form. Time and memory are linear in the words for each
    n (one table of 2 x words slots, reused), so these run in about the time of tokenising them."""
    assert compiled(["x" * 10_000_000]) == ({}, {})
    ws = ["ab", "c"] * 500_000  # 1,000,000 words
    top, dup = compiled(ws)
    assert top[2] == 500_000 * len("ab c")  # "ab c" occurs 500,000 times (and "c ab" 499,999)
    csum = [0, *itertools.accumulate(map(len, ws))]
    for n in range(2, 11):  # the scan: starts 0 and 1 are new; from 2 on every n-gram is seen, so it jumps by n
        assert dup[n] == sum(csum[s + n] - csum[s] for s in range(2, len(ws) - n + 1, n))
    sentence = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "again"]
    top, dup = compiled(sentence * 100_000)
    assert top[2] == 100_000 * len("the quick")  # "the quick" and "the lazy" tie; "the quick" comes first


def test_sizes_outside_the_text_and_bad_input():
    assert compiled(["a", "b", "a"], (2, 50_000)) == ({2: 3}, {2: 0})  # no 50,000-gram, nothing allocated for it
    with pytest.raises(ValueError):
        _repetition.ngram_stats(["a", "b"], (1,), ())
    with pytest.raises(TypeError):
        _repetition.ngram_stats(["a", 3], (2,), ())


def test_duplicate_lines_and_paragraphs_equal_the_reference(corpus):
    """`dup_pieces` against `re.split` + `find_duplicates` (the Python it replaced): the real documents as the
    filter passes them (stripped) and not, and random texts of newlines, carriage returns and a few letters in
    every string kind (Latin-1, BMP, astral), where empty and repeated pieces abound."""
    rng = random.Random(11)
    texts = [t for t, _ in corpus] + [t.strip() for t, _ in corpus]
    alphabet = ["\n", "\n", "\n", "a", "b", " ", "\r", "é", "ж", "😀"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(5000)]
    for text in texts:
        for min_run in (1, 2):
            assert _repetition.dup_pieces(text, min_run) == gopher.dup_pieces_python(text, min_run), (text[:80], min_run)


def test_duplicate_lines_on_hostile_text():
    """10 MB without a newline is one piece; a million repeated lines and a million newlines stay exact."""
    assert _repetition.dup_pieces("x" * 10_000_000, 1) == (1, 0, 0)
    assert _repetition.dup_pieces("same line\n" * 1_000_000, 1) == (1_000_001, 999_999, 999_999 * 9)  # and a last ""
    assert _repetition.dup_pieces("\n" * 1_000_000, 2) == (2, 1, 0)  # "" before and after the one run
    with pytest.raises(ValueError):
        _repetition.dup_pieces("a", 0)
