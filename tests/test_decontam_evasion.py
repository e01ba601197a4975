"""Decontamination that invisible characters, combining marks and look-alike letters cannot evade (issue 36).

Every test plants a real benchmark item (GSM8K test questions from ../shared/data) in real web text, disguised
the way a hyphenating page, a word processor or a homoglyph substitution disguises it, and checks that the
index still finds it, that drop mode drops it, and that redact mode's output scans clean. The ground truth is
the planted position; the reference for the fold is `unicodedata` applied character by character.
"""

from __future__ import annotations

import gzip
import html
import json
import random
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curate.cli.main import main as cli_main
from curate.core.document import Document
from curate.core.step import Reject
from curate.decontam import Decontaminate, NgramIndex, build_index, load_benchmark
from curate.decontam.confusables import CONFUSABLES
from curate.decontam.text import char_map, fold, fold_char, words
from curate.extract.main import extract_text

WEB = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
GSM = "benchmarks/gsm8k/test.jsonl"


class _Short(list):
    """A list that hypothesis prints as its length: the test's fixtures are megabytes of text."""

    def __repr__(self) -> str:
        return f"<{len(self)} items>"


@pytest.fixture(scope="module")
def gsm(shared: Path) -> list:
    return load_benchmark(str(shared / GSM))


@pytest.fixture(scope="module")
def questions(gsm) -> list[tuple[str, str]]:
    """(item key, question) for every GSM8K test question (all 1,319 have 13+ words)."""
    out = [(it.key, it.segments[0]) for it in gsm if len(words(it.segments[0])) >= 13]
    assert len(out) > 1300
    return _Short(out)


@pytest.fixture(scope="module")
def index_dir(gsm, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("evasion") / "index"
    build_index({"gsm8k": (GSM, gsm)}, out)
    return out


@pytest.fixture(scope="module")
def index(index_dir) -> NgramIndex:
    return NgramIndex.load(index_dir)


@pytest.fixture(scope="module")
def drop(index_dir) -> Decontaminate:
    step = Decontaminate(str(index_dir), mode="drop")
    step.setup()
    return step


@pytest.fixture(scope="module")
def redact(index_dir) -> Decontaminate:
    step = Decontaminate(str(index_dir), mode="redact")
    step.setup()
    return step


@pytest.fixture(scope="module")
def web(shared: Path) -> list[str]:
    with gzip.open(shared / WEB, "rt", encoding="utf-8") as f:
        return _Short(json.loads(line)["text"] for line in f)


def _items_found(index: NgramIndex, text: str) -> set[str]:
    return {index.key_of(m.item) for m in index.scan([text])[0]}


# ------------------------------------------------------------------ the reported evasions, one by one

# Each disguise issue 36 found kept: (letter, what replaces it in text, what replaces it in HTML).
DISGUISES = {
    "soft_hyphen": ("e", "e\u00ad", "e&shy;"),
    "zero_width_space": ("a", "a\u200b", "a&#8203;"),
    "zero_width_joiner": ("o", "o\u200d", "o&zwj;"),
    "combining_acute": ("e", "e\u0301", "e&#769;"),
    "turkish_capital_i": ("i", "\u0130", "&#304;"),
    "cyrillic_a": ("a", "\u0430", "&#x430;"),
    "cyrillic_o": ("o", "\u043e", "&#1086;"),
    "greek_omicron": ("o", "\u03bf", "&omicron;"),
}


def _nfkc_grams(s: str) -> set[tuple[str, ...]]:
    """The 13-grams of a matcher that folds only NFKC and case (the old rule): the reference for "evades"."""
    w = re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", s).lower())
    return {tuple(w[i : i + 13]) for i in range(len(w) - 12)}


def _evading(questions, name: str) -> tuple[str, str, str]:
    """(key, question, disguised question): the first question whose disguise shares no 13-gram with it under
    NFKC and case folding alone, so that only the new fold can find it."""
    letter, plain, _ = DISGUISES[name]
    for key, q in questions:
        s = q.replace(letter, plain)
        if not _nfkc_grams(s) & _nfkc_grams(q):
            return key, q, s
    raise AssertionError(f"no question that {name} hides")


@pytest.mark.parametrize("name", sorted(DISGUISES))
def test_disguised_item_found_and_dropped(drop, redact, index, questions, web, name):
    key, q, s = _evading(questions, name)
    assert words(s) == words(q)  # the same words once folded...
    text = f"{web[3][:1500]}\n{s}\n{web[4][:1500]}"
    assert key in _items_found(index, text)  # ...so the item is found
    assert drop.apply(Document(id="d", text=text, source="web")) == Reject("contaminated")
    redacted = redact.apply(Document(id="d", text=text, source="web"))
    assert isinstance(redacted, Document) and index.scan([redacted.text]) == [[]]


@pytest.mark.parametrize("name", sorted(DISGUISES))
def test_disguised_item_in_html_found(index, questions, web, name):
    key, q, _ = _evading(questions, name)
    letter, _, entity = DISGUISES[name]
    body = html.escape(q.replace(letter, "\0"), quote=False).replace("\0", entity)  # "&amp;" keeps its "a"
    filler = "".join(f"<p>{html.escape(p)}</p>" for p in web[5].split("\n")[:6] if p.strip())
    page = f"<html><body><article>{filler}<p>{body}</p>{filler}</article></body></html>"
    text = extract_text(page)
    assert q not in text and not _nfkc_grams(text) & _nfkc_grams(q)  # the extractor keeps the disguise
    assert key in _items_found(index, text)


def test_fold_is_the_per_character_rule():
    """`fold` against an independent statement of the rule: unicodedata, one character at a time."""
    import opencc

    t2s = opencc.OpenCC("t2s").convert  # issue 41: a Traditional Han character folds to its Simplified one

    def reference(c: str) -> str:
        out = c
        for _ in range(4):
            prev = out
            out = "".join(x for x in unicodedata.normalize("NFKD", out)
                          if unicodedata.category(x)[0] != "M" and unicodedata.category(x) not in ("Cf", "Cs")
                          and ord(x) not in (0x115F, 0x1160, 0x3164, 0xFFA0, 0x0640)).casefold().lower()
            out = "".join(CONFUSABLES.get(x, x) for x in out)
            out = "".join(t2s(x) if unicodedata.name(x, "").startswith("CJK") and len(t2s(x)) == 1 else x
                          for x in out)
            if out == prev:
                break
        return out

    rng = random.Random(36)
    sample = [chr(c) for c in rng.sample(range(0x20, 0x3134F), 20_000)] + list(CONFUSABLES) + list("İıſßΣςﬁ½ꭰᎠ")
    sample = [c for c in sample if not 0xE0000 <= ord(c) < 0xE1000 and ord(c) not in (0x2065, *range(0xFFF0, 0xFFF9))]
    assert [fold_char(c) for c in sample] == [reference(c) for c in sample]
    text = "".join(sample)
    assert fold(text) == "".join(map(reference, text)) and fold(fold(text)) == fold(text)
    for t in ("ΑΣ ΟΔΟΣ.", "Ꭰꭰ word ꭰ", "x\u0130y", "İ"):  # whole-text lowercasing has contexts: none survive
        assert fold(t) == "".join(map(reference, t))
    assert {c: fold_char(c) for c in CONFUSABLES} == CONFUSABLES  # every look-alike folds to its letter
    # Case never decides a match, also for the look-alike letters (both cases of each map alike).
    letters = [c for c in map(chr, range(0x100, 0x2000)) if c.isalpha() and len(c.upper()) == 1]
    assert [c for c in letters if fold(c.upper()) != fold(c.lower())] == []


# ------------------------------------------------------------------ redaction offsets are exact


@pytest.mark.parametrize("prefix", ["a\u0301" * 4000, unicodedata.normalize("NFD", "한국어 텍스트입니다. " * 400),
                                    "\u00ad\u200b" * 3000, "ﬁ½ß" * 2000])
def test_redact_is_exact_after_length_changing_text(index_dir, index, questions, web, prefix):
    """Issue 36.2: with 4,000 `a` + U+0301 before the item the cut landed ~170 characters early and 13 words
    of the item stayed. Now the span is the planted item exactly, and the redacted output scans clean."""
    key, q = questions[2]
    head = prefix + "\n" + web[6][:800] + " "
    text = head + q + " " + web[7][:800]
    s, e = len(head), len(head) + max(m.end() for m in re.finditer(r"[^\W_]", q))  # ends at its last word
    doc = Decontaminate(str(index_dir), mode="redact").apply(Document(id="d", text=text, source="web"))
    assert isinstance(doc, Document)
    [hit] = doc.metadata["decontam"]
    assert hit["item"] == key and hit["span"] == [s, e]
    assert index.scan([doc.text]) == [[]] and q not in doc.text


def test_char_map_spans_fold_back():
    """Every word of the folded text comes from a source span that folds to exactly that word."""
    rng = random.Random(5)
    alphabet = list("abcdefgh XYZ,.") + ["\u00ad", "\u200b", "\u0301", "\u0130", "\u0430", "ﬁ", "ß", "\uac00",
                                         "\u1100\u1161", "\ufeff", "\ud800"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 60)))
        norm, cmap = fold(text), char_map(text)
        if cmap is None:
            assert len(norm) == len(text)
            continue
        assert cmap.shape == (2, len(norm) + 1)
        for m in re.finditer(r"[^\W_]+", norm):
            a, b = int(cmap[0, m.start()]), int(cmap[1, m.end()])
            assert fold(text[a:b]) == m.group()  # nothing more, nothing less
            assert b == len(text) or fold(text[b]) != ""  # and every dropped character after it is inside


def test_half_split_by_a_word_edge_keeps_the_character_whole():
    cmap = char_map("x ½")  # folds to "x 1⁄2": the word "1" is only part of "½"
    assert fold("x ½") == "x 1\u20442"
    assert (int(cmap[0, 2]), int(cmap[1, 3])) == (2, 3) and (int(cmap[0, 4]), int(cmap[1, 5])) == (2, 3)


def test_redacted_pieces_that_spell_another_item_are_dropped(index_dir, index, questions):
    """Window 0 and an item planted inside another: the two halves of the outer item meet across the cut."""
    key, inner = questions[10]
    outer = next(q for _, q in questions[11:] if 16 <= len(words(q)) == len(q.split()) <= 24)
    w = outer.split()  # each half is under 13 words, so only the inner item matches the planted text
    text = " ".join(w[: len(w) // 2]) + " " + inner + " " + " ".join(w[len(w) // 2 :])
    assert _items_found(index, text) == {key}
    step = Decontaminate(str(index_dir), mode="redact", window_chars=0, min_chars_left=0)
    assert step.apply(Document(id="d", text=text, source="web")) == Reject("still_contaminated")


# ------------------------------------------------------------------ the property: random disguises, every path

LOOKALIKES: dict[str, list[str]] = {}
for _src, _dst in CONFUSABLES.items():
    LOOKALIKES.setdefault(_dst, []).append(_src)
LOOKALIKES["i"].append("\u0130")  # Turkish capital dotted I
INVISIBLE = ["\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e", "\u061c", "\u200e", "\u3164"]
MARKS = ["\u0301", "\u0300", "\u0308", "\u0307", "\u0327", "\u030c", "\u034f", "\ufe0f"]


def _disguise(q: str, rng: random.Random, rate: float) -> list[str]:
    """The item as a list of visible-unit strings: each letter maybe swapped, marked or followed by invisibles."""
    out = []
    for c in q:
        piece = c
        if c.lower() in LOOKALIKES and rng.random() < rate:
            piece = rng.choice(LOOKALIKES[c.lower()])
        if c.isalpha() and rng.random() < rate:
            piece += rng.choice(MARKS)
        if c.isalnum() and rng.random() < rate:
            piece += rng.choice(INVISIBLE)
        out.append(piece)
    return out


def _as_html(units: list[str]) -> str:
    def ent(u: str) -> str:
        return "".join(html.escape(c, quote=False) if c.isascii() else f"&#{ord(c)};" if ord(c) % 2 else f"&#x{ord(c):x};"
                       for c in u)
    return "".join(ent(u) for u in units).replace("&#173;", "&shy;").replace("&#8205;", "&zwj;")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_disguises_never_get_through(drop, redact, index, questions, web, data):
    key, q = data.draw(st.sampled_from(questions), label="item")
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    rate = data.draw(st.sampled_from([0.05, 0.3, 1.0]), label="rate")
    units = _disguise(q, rng, rate)
    prefix = data.draw(st.sampled_from(["", "a\u0301" * 500, "\u00ad" * 300, unicodedata.normalize("NFD", "é" * 300)]),
                       label="prefix")
    host = web[rng.randrange(len(web))]
    if data.draw(st.booleans(), label="html"):
        paras = [p for p in host.split("\n") if len(p.split()) > 5][:8] or ["Some plain words of filler text here."]
        filler = "".join(f"<p>{html.escape(p)}</p>" for p in paras)
        page = f"<html><body><article><p>{prefix}</p>{filler}<p>{_as_html(units)}</p>{filler}</article></body></html>"
        text = extract_text(page, min_words=0)
    else:
        cut = rng.randrange(len(host) + 1)
        text = f"{prefix}{host[:cut]} {''.join(units)} {host[cut:]}"
    assert key in _items_found(index, text)
    doc = Document(id="d", text=text, source="web")
    assert drop.apply(doc) == Reject("contaminated")
    out = redact.apply(Document(id="d", text=text, source="web"))
    if isinstance(out, Document):
        assert index.scan([out.text]) == [[]]
    else:
        assert out.rule in ("too_short", "too_fragmented", "still_contaminated")


# ------------------------------------------------------------------ indexes that would do nothing are refused


def test_index_refuses_empty_and_short_benchmarks(tmp_path, capsys):
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "short.jsonl").write_text('{"question": "What is two plus two?", "answer": "4"}\n' * 3)
    for name in ("empty.jsonl", "short.jsonl"):
        argv = ["decontam", "index", "--benchmark", f"b={tmp_path / name}", "--out", str(tmp_path / "ix")]
        assert cli_main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and name in err and "find nothing" in err, err
        assert not (tmp_path / "ix" / "index.json").exists()


def test_index_refuses_an_empty_corpus_sample(shared, tmp_path, capsys):
    gsm = shared / GSM
    sample = tmp_path / "sample.jsonl"
    sample.write_text("".join(json.dumps({"body": t}) + "\n" for t in ["one page", "another page"]))
    argv = ["decontam", "index", "--benchmark", f"gsm8k={gsm}", "--out", str(tmp_path / "ix"),
            "--corpus-sample", str(sample), "--max-doc-freq", "2"]
    assert cli_main([*argv, "--text-key", "text"]) == 2  # the sample's field is "body"
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--text-key" in err and str(sample) in err, err
    assert cli_main([*argv, "--text-key", "body"]) == 0
    assert json.loads((tmp_path / "ix/index.json").read_text())["frequency_cap"]["sample_docs"] == 2


def test_mmlu_header_is_not_an_item(shared, tmp_path):
    src = (shared / "benchmarks/mmlu/test/anatomy_test.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    rows = src[1:]  # the shared file's own header (question,choice0,...) off
    (tmp_path / "bare_test.csv").write_text("".join(rows), encoding="utf-8")
    (tmp_path / "mine_test.csv").write_text("q,a,b,c,d,ans\n" + "".join(rows), encoding="utf-8")
    bare = load_benchmark(str(tmp_path / "bare_test.csv"))
    mine = load_benchmark(str(tmp_path / "mine_test.csv"))
    assert len(bare) == len(mine) == 135 and [it.segments for it in bare] == [it.segments for it in mine]
    (tmp_path / "bad_test.csv").write_text("".join(rows[:3]) + "Why?,w x,y z,u v,s t,maybe\n", encoding="utf-8")
    from curate.decontam import BenchmarkError
    with pytest.raises(BenchmarkError, match=r"bad_test.csv:4: answer 'maybe' is not A-D"):
        load_benchmark(str(tmp_path / "bad_test.csv"))
