"""Linear time on any text (issue 29, mechanism 7): every word tokenizer, sentence splitter, n-gram and
repetition routine of the filters, dedup's units and match form, the quality classifier's text form and the
extractor take time linear in the text's length, on the texts that broke them (whitespace-free punctuation,
emoji, combining marks, long runs of one character, mixed scripts, 2 M characters) and on texts Hypothesis makes.

No test asserts seconds: each compares the CPU time of one routine on a text of n and of 8n characters in the
same run. Linear work gives a ratio near 8 (n log n a little more), quadratic work 64; the bound is 24 (+2 ms
for timer noise), and a pair over it is measured again (up to three times) before it fails, so a busy machine
does not fail it. The quadratic code this replaced took seconds to minutes on these texts
(benchmarks/pathological.py, docs/benchmarks.md); tests/test_same_output.py checks the rewrites give the same
output on real text.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curate import Document, filters
from curate.dedup import units
from curate.dedup.text import match_form
from curate.extract import base as extract_base
from curate.extract.main import Main
from curate.filters import _text, _words
from curate.filters.c4 import count_sentences
from curate.quality.text import chunk_text, classifier_text

FACTOR = 8  # the big text is FACTOR times the small one
BOUND = 24  # allowed ratio of their times: 3x linear's 8, well under quadratic's 64
NOISE_S = 0.002
N = 4_000  # characters of the small text


def _fresh(f: Callable[[str], object]) -> Callable[[str], object]:
    """f without the tokenizer's caches (a repeated text would otherwise be a cache hit)."""

    def call(text: str) -> object:
        _words._CHUNKS.clear()
        _text._cache.clear()
        return f(text)

    return call


def _doc(text: str) -> Document:
    return Document(id="x", text=text, source="s", lang="en", url="http://example.com/")


def _steps() -> dict[str, Callable[[str], object]]:
    gq, gr, fw = filters.GopherQuality(), filters.GopherRepetition(), filters.FineWeb()
    c4 = filters.C4(max_word_length=0)  # no word-length rule: every line reaches the sentence count
    bad, rw, pii = filters.BadWords(), filters.RefinedWebLines(), filters.Pii()
    url = filters.Url(blocked_domains=["example.org", "a.b.example.net"], banned_subwords=["xyz"])
    for s in (c4, bad, url):
        s.setup()
    return {
        "word_tokens": _words.word_tokens,
        "GopherQuality": lambda t: gq.reject_rule(_doc(t)),
        "GopherRepetition": lambda t: gr.reject_rule(_doc(t)),
        "FineWeb": lambda t: fw.reject_rule(_doc(t)),
        "C4": lambda t: c4.apply(_doc(t)),
        "count_sentences": count_sentences,
        "BadWords": lambda t: bad.reject_rule(_doc(t)),
        "RefinedWebLines": lambda t: rw.apply(_doc(t)),
        "Pii": lambda t: pii.apply(_doc(t)),
        "Url": lambda t: url.reject_rule(Document(id="x", text="", source="s", url=t)),
        "sentences": lambda t: units.cut(t, "sentence"),
        "lines": lambda t: units.cut(t, "line"),
        "paragraphs": lambda t: units.cut(t, "paragraph", "pt"),
        "match_form": match_form,
        "classifier_text": classifier_text,
        "chunk_text": chunk_text,
    }


_MAIN = Main()
HTML_STEPS: dict[str, Callable[[str], object]] = {
    "nesting_depth": lambda h: extract_base.nesting_depth(h, 512),
    "regex_depth": lambda h: extract_base.regex_depth(h, 512),  # the fallback without the C extension
    "extract.Main": lambda h: _MAIN.apply(Document(id="x", text="", source="s", html=h)),
}

# Texts of about n characters on which some routine was quadratic, or might be.
TEXTS: dict[str, Callable[[int], str]] = {
    "equals": lambda n: "=" * n,
    "emoji": lambda n: "\U0001F600" * n,
    "combining": lambda n: "a\u0301" * (n // 2),
    "only_combining": lambda n: "\u0301" * n,
    "one_letter": lambda n: "a" * n,
    "periods": lambda n: "." * n,
    "punctuation": lambda n: ",." * (n // 2),
    "letter_marks_letter": lambda n: "a" + "=" * n + "a",
    "mixed_scripts": lambda n: ("abcЖжあ한😀\u0301٣.-'" * (n // 14 + 1))[:n],
    "newlines": lambda n: "\n" * n,
    "spaces": lambda n: " " * n,
    "words": lambda n: "word " * (n // 5),
    "stops_lowercase": lambda n: "! x" * (n // 3),
    "periods_lowercase": lambda n: "." * n + " x.",
    "at_signs": lambda n: "a@" * (n // 2),
    "colons": lambda n: "a:" * (n // 2),
    "quotes": lambda n: "'" * n,
    "clitics": lambda n: "'s" * (n // 2),
    "currency": lambda n: "$" * n,
    "number_unit": lambda n: "1" * n + "km",
    "initials": lambda n: "A." * (n // 2),
    "host_labels": lambda n: "http://" + "a." * (n // 2) + "com/",
    "lines_of_marks": lambda n: ("=" * 99 + "\n") * (n // 100),
}

HTML: dict[str, Callable[[int], str]] = {
    "open_tags": lambda n: "<a" * (n // 2),  # no '>' anywhere: the regex scan read to the end from every '<'
    "nested_divs": lambda n: "<div>" * (n // 5),
    "formatting": lambda n: "".join(f"<b id={i}>" for i in range(n // 10)),
    "misnested": lambda n: "<a><b></a>" * (n // 10),
    "table_row": lambda n: "<article><table><tr>" + "<td>The cat sat on the mat, a good day.</td>" * (n // 44),
    "paragraphs": lambda n: "<p>a sentence of words." * (n // 23),
    "long_attribute": lambda n: '<div class="' + "comment " * (n // 8) + '">x</div>',
    "text": lambda n: "<p>" + "\U0001F600 word. " * (n // 8),
    "comments": lambda n: "<!--" * (n // 4),
}


def _cpu(f: Callable[[str], object], text: str, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        gc.disable()
        try:
            t0 = time.process_time()
            f(text)
            best = min(best, time.process_time() - t0)
        finally:
            gc.enable()
    return best


def assert_linear(f: Callable[[str], object], make: Callable[[int], str], n: int = N, what: str = "") -> None:
    """f on make(FACTOR * n) costs at most BOUND times f on make(n) (+ NOISE_S), in CPU seconds of this process."""
    small, big = make(n), make(FACTOR * n)
    for _ in range(3):
        t_small, t_big = _cpu(f, small, 3), _cpu(f, big, 1)
        if t_big <= BOUND * t_small + NOISE_S:
            return
    pytest.fail(f"{what}: {len(small):,} chars {t_small * 1e3:.2f} ms, {len(big):,} chars {t_big * 1e3:.2f} ms "
                f"(ratio {t_big / max(t_small, 1e-9):.0f}, linear ~{FACTOR}, bound {BOUND})")


STEPS = _steps()


@pytest.mark.parametrize("step", sorted(STEPS))
def test_text_routines_are_linear_on_pathological_text(step):
    f = _fresh(STEPS[step])
    for name, make in TEXTS.items():
        assert_linear(f, make, what=f"{step} on {name}")


@pytest.mark.parametrize("step", sorted(HTML_STEPS))
def test_extraction_is_linear_on_pathological_html(step):
    for name, make in {**HTML, **{k: TEXTS[k] for k in ("equals", "emoji", "mixed_scripts", "periods")}}.items():
        assert_linear(HTML_STEPS[step], make, n=4 * N, what=f"{step} on {name}")


def test_two_million_characters():
    """The word rules, the sentence splitters and extraction on 2 M characters against 250 k, one call each: one
    whitespace-free chunk of mixed scripts, marks and emoji (a chunk is tokenized whole, never from the cache)."""
    text = ("abc=Жж😀\u0301'.-!?Dr.x,٣" * 100_000)[:2_000_000]
    for step in ("GopherQuality", "count_sentences", "sentences", "Pii", "match_form"):
        assert_linear(_fresh(STEPS[step]), lambda n: text[:n], n=250_000, what=f"{step} on 2 M characters")
    assert_linear(HTML_STEPS["extract.Main"], HTML["table_row"], n=250_000, what="extract.Main on 2 M characters")


# Characters that tokenizers and splitters treat specially: edge marks, stops, quotes, currency, emoji and other
# symbols, combining marks, digits, letters of several scripts, whitespace.
ALPHABET = list("=.,;:!?'\"`$€%°()[]<>#*&+-/@_…。！？\u0301\u0308😀❤1aAzZЖжあ한٣ \n\t") + ["n't", "'s", "km", "Mr.", ":)"]


@st.composite
def pathological(draw) -> tuple[str, Callable[[int], str]]:
    """A step, and texts of a repeated unit between an optional head and tail (e.g. "a" + "=" * n + "a")."""
    step = draw(st.sampled_from(sorted(STEPS)))
    unit = "".join(draw(st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=4)))
    head = "".join(draw(st.lists(st.sampled_from(ALPHABET), max_size=2)))
    tail = "".join(draw(st.lists(st.sampled_from(ALPHABET), max_size=2)))
    return step, lambda n: head + unit * max(1, n // len(unit)) + tail


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pathological())
def test_linear_on_texts_hypothesis_makes(case):
    step, make = case
    assert_linear(_fresh(STEPS[step]), make, n=2_000, what=f"{step} on {make(8)!r}...")
