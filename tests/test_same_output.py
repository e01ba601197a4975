"""The same output, whatever the machine or its load, and the same as before the linear rewrites (issue 29).

Part of mechanism 7: the routines made linear (tests/test_linear.py) must give the very words, sentence counts,
cuts and decisions of the quadratic code they replace on real text, so a copy of each replaced function is kept
here as the reference (it is only run on real text, where it is fast). And a run must not depend on the clock:
pipelines/web.py over two shared WARC files gives byte-identical shards idle and with every core busy.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from curate import Document, Pipeline, Reject, filters
from curate.dedup import units
from curate.extract import main as extract_main
from curate.filters import _text, _words, c4
from curate.filters._words import (
    _CLITICS,
    _CURRENCY,
    _PLAIN,
    _PREFIX,
    _PUNCT,
    _QUOTES,
    _SUFFIX,
    _SUFFIX_EMOTICONS,
    _UNITS,
    _WHOLE,
    _core,
    _is_icon,
    _lowerish,
    _plain,
)
from curate.filters.url import in_domains
from curate.quality.text import chunk_text

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------- the replaced code, as it was (the reference)


def old_prefix(s: str) -> int:
    c = s[0]
    if s.startswith(".."):
        return len(s) - len(s.lstrip("."))
    if s.startswith(("''", "``")):
        return 2
    if c in _PREFIX or c == "…" or _is_icon(c) or (c == "+" and not s[1:2].isdigit()):
        return 1
    return 0


def old_suffix(s: str) -> int:
    c = s[-1]
    if c == ".":
        if s.endswith(".."):
            return len(s) - len(s.rstrip("."))
        if len(s) > 1:
            b = s[-2]
            if (_lowerish(b) or b.isdigit() or b in "%²-+" or b in _PUNCT or b in _QUOTES
                    or (b.isupper() and s[-3:-2].isupper())):
                return 1
        return 0
    if c in _SUFFIX or c == "…":
        if s.endswith("''"):
            return 2
        if s.endswith(_SUFFIX_EMOTICONS):
            for e in _SUFFIX_EMOTICONS:
                if s.endswith(e) and len(s) > len(e):
                    return len(e)
        return 1
    if s.endswith(_CLITICS) and len(s) > 2:
        return 2
    if _is_icon(c):
        return 1
    if c == "+" and len(s) > 1 and s[-2].isdigit():
        return 1
    if c in _CURRENCY:
        head = s.rstrip("".join(_CURRENCY))
        return len(s) - len(head) if head[-1:].isdigit() else 0
    if not (s[:1].isdigit() and s.endswith(_UNITS)):
        return 0
    for unit in _UNITS:
        if s.endswith(unit) and len(s) > len(unit) and s[-len(unit) - 1].isdigit() and not s[:-len(unit)].isalpha():
            return len(unit) if s[: -len(unit)].replace(",", "").replace(".", "").isdigit() else 0
    return 0


def old_split_chunk(chunk: str) -> list[str]:
    """split_chunk before issue 29: it sliced what was left at every peel (quadratic in the chunk)."""
    if _PLAIN.fullmatch(chunk):
        return _plain(chunk)
    head: list[str] = []
    tail: list[str] = []
    s = chunk
    while s and s not in _WHOLE:
        n = old_prefix(s)
        if n:
            head.append(s[:n])
            s = s[n:]
            continue
        m = old_suffix(s)
        if not m:
            break
        tail.append(s[-m:])
        s = s[:-m]
    return head + (_core(s) if s else []) + tail[::-1]


OLD_SENTENCE_BREAK = re.compile(r"(?<!\b[A-Z])(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)(?<!\bvs)(?<!\bSr)(?<!\bJr)"
                                r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)[.!?]+[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-ZÀ-ÖØ-Þ0-9])")


def old_count_sentences(line: str) -> int:
    return 1 + len(OLD_SENTENCE_BREAK.findall(line.rstrip()))


OLD_CANDIDATE = re.compile(r"\S*[" + re.escape("".join(sorted(units.SENTENCE_END))) + r"]\S*")


def old_in_domains(host: str, domains: frozenset[str]) -> bool:
    parts = host.split(".")
    return any(".".join(parts[i:]) in domains for i in range(len(parts) - 1))


def old_render(blocks, keep) -> str:
    lines: list[str] = []
    row = None
    for b, k in zip(blocks, keep, strict=True):
        if not k:
            row = None
            continue
        if b.kind == "td" and row is not None and b.path[:-1] == row and "\n" not in b.text:
            lines[-1] += " | " + b.text
            continue
        row = b.path[:-1] if b.kind == "td" and "\n" not in b.text else None
        lines.append(b.text)
    return "\n".join(lines)


# ---------------------------------------------------------------- real text


@pytest.fixture(scope="module")
def real_texts(shared) -> dict[str, list[str]]:
    """Real documents by kind: Common Crawl web text, clean prose, informal and low-quality text, Portuguese and
    many other scripts (SOURCES.md of the shared data)."""
    t = shared / "text"
    web = []
    for p in sorted((t / "web_cc").glob("*.jsonl.gz")):
        with gzip.open(p, "rt", encoding="utf-8") as f:
            web += [json.loads(line)["text"] for line in f]
    clean = [c for name in ("botchan_gutenberg8868.txt", "wikitext-2-test.txt")
             for c in chunk_text((t / "clean_en" / name).read_text(encoding="utf-8"))]
    with zipfile.ZipFile(t / "clean_en" / "nltk_inaugural.zip") as z:
        clean += [z.read(n).decode("utf-8", "replace") for n in z.namelist() if n.endswith(".txt")]
    with zipfile.ZipFile(t / "low_quality" / "nltk_webtext.zip") as z:
        low = [c for n in z.namelist() if n.endswith(".txt") for c in chunk_text(z.read(n).decode("utf-8", "replace"))]
    sms = (t / "low_quality" / "SMSSpamCollection.tsv").read_text(encoding="utf-8").splitlines()[1:]
    low += ["\n".join(sms[i : i + 50]) for i in range(0, len(sms), 50)]
    low.append((t / "cs336_fixtures" / "low_quality_cc.txt").read_text(encoding="utf-8"))
    pt = [json.loads(line)["text"] for line in (t / "pt" / "bosque_docs.jsonl").read_text(encoding="utf-8").splitlines()]
    with zipfile.ZipFile(t / "multilingual" / "nltk_udhr2.zip") as z:
        names = sorted(n for n in z.namelist() if n.endswith(".txt"))
        scripts = [z.read(n).decode("utf-8", "replace") for n in names[::4]]
    scripts += (t / "multilingual" / "tatoeba_long.tsv").read_text(encoding="utf-8").splitlines()[1:]
    kinds = {"web": web, "clean": clean, "low": low, "pt": pt, "scripts": scripts}
    return {kind: _first_chars(texts, 800_000) for kind, texts in kinds.items()}


def _first_chars(texts: list[str], n: int) -> list[str]:
    """The first texts of a list up to about n characters in all (every kind weighs about the same)."""
    out, total = [], 0
    for text in texts:
        if total >= n:
            break
        out.append(text)
        total += len(text)
    return out


def test_word_tokens_are_the_same_on_real_text(real_texts):
    chunks = {c for texts in real_texts.values() for text in texts for c in text.split()}
    assert len(chunks) > 100_000
    differ = [c for c in chunks if _words.split_chunk(c) != old_split_chunk(c)]
    assert not differ, differ[:10]


def test_sentence_counts_are_the_same_on_real_text(real_texts):
    lines = [ln for texts in real_texts.values() for text in texts for ln in text.splitlines() if ln.strip()]
    assert len(lines) > 30_000
    differ = [ln for ln in lines if c4.count_sentences(ln) != old_count_sentences(ln)]
    assert not differ, differ[:5]


def test_sentence_cuts_are_the_same_on_real_text(real_texts, monkeypatch):
    texts = [text for kind in ("web", "clean", "pt", "scripts") for text in real_texts[kind]]
    new = [units.cut(text, "sentence", "pt" if i % 7 == 0 else "en") for i, text in enumerate(texts)]
    monkeypatch.setattr(units, "_CANDIDATE", OLD_CANDIDATE)
    assert new == [units.cut(text, "sentence", "pt" if i % 7 == 0 else "en") for i, text in enumerate(texts)]


def _decisions(docs: list[Document]) -> list[tuple]:
    """What each filter that counts words or sentences does with each document: ("drop", rule) or ("keep", text)."""
    _text._cache.clear()
    _words._CHUNKS.clear()
    steps = [filters.GopherQuality(), filters.GopherQuality(punctuation_counts_as_words=False),
             filters.GopherRepetition(), filters.FineWeb(), filters.C4(),
             filters.C4(min_words_per_line=3, min_sentences=5, require_terminal_punct=False, bad_words_languages=())]
    for s in steps:
        s.setup()
    out = []
    for d in docs:
        for s in steps:
            r = s.apply(Document(id=d.id, text=d.text, source=d.source, lang=d.lang))
            out.append(("drop", r.rule) if isinstance(r, Reject) else ("keep", r.text))
    return out


def test_filter_decisions_are_the_same_on_real_text(real_texts, monkeypatch):
    """The Gopher, FineWeb and C4 filters decide (and C4 rewrites) each real document as with the old code."""
    docs = [Document(id=f"{kind}{i}", text=text, source=kind, lang="pt" if kind == "pt" else "en")
            for kind, texts in real_texts.items() for i, text in enumerate(texts[:100])]
    new = _decisions(docs)
    monkeypatch.setattr(_words, "split_chunk", old_split_chunk)
    monkeypatch.setattr(c4, "count_sentences", old_count_sentences)
    old = _decisions(docs)
    assert new == old
    assert {"keep", "drop"} <= {d for d, _ in new}  # the set has documents of both kinds


def test_url_domains_the_same():
    domains = frozenset(["example.com", "a.b.example.org", "x.y", "co.uk", "..b", "b."])
    hosts = ["example.com", "www.example.com", "sub.example.com", "example.com.evil.net", "a.b.example.org",
             "b.example.org", "z.a.b.example.org", "x.y", "w.x.y", "y", "", "co.uk", "bbc.co.uk", "a..b", "a.b.",
             "c.a.b.", ".", "..", "example", "com"]
    longest = max(map(len, domains))
    for h in hosts:
        assert in_domains(h, domains, longest) == old_in_domains(h, domains), h


def test_extract_main_renders_the_same(shared):
    """extract.Main's text (cells of a row now joined once at the end) on the gold pages of two sets."""
    pages = []
    for name in ("readability", "CleanPortalEval"):
        pages += [gzip.decompress(p.read_bytes()).decode("utf-8", "replace")
                  for p in sorted((shared / "extraction" / name / "html").glob("*.gz"))]
    pages.append("<table><tr>" + "<td>a cell</td>" * 50 + "</tr><tr><td>x</td><td>y</td></tr></table>" * 3)
    for html in pages:
        blocks, _ = extract_main.parse(html)
        if not blocks:
            continue
        p, words = extract_main.scores(blocks)
        keep = extract_main.select(blocks, p, words, extract_main.THRESHOLD, 10)
        assert extract_main.render(blocks, keep) == old_render(blocks, keep)


# ---------------------------------------------------------------- the same output busy or idle

BUSY = "import time\nend = time.monotonic() + 300\nwhile time.monotonic() < end:\n    pass\n"


def _run_web(shared: Path, out: Path) -> tuple[dict[str, bytes], dict]:
    pipeline = Pipeline.from_file(str(ROOT / "pipelines" / "web.py"))
    warcs = [str(shared / "warc" / "wget" / "dolma_sample-0000.warc.gz"),
             str(shared / "warc" / "internet_archive" / "aut_IAH-20080430204825-00000-blackbook.warc.gz")]
    pipeline.run(inputs=warcs, output=str(out), workers=1, progress=False)
    shards = {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "data").rglob("*.parquet"))}
    stats = json.loads((out / "stats.json").read_text())
    return shards, {s["name"]: s.get("dropped", {}) for s in stats["steps"]}


@pytest.mark.slow
def test_web_pipeline_gives_the_same_shards_idle_and_under_load(shared, tmp_path, monkeypatch):
    """Extraction's guards are budgets on work (characters, tags, depth), not a wall-clock timeout, so a loaded
    machine keeps and drops the very same pages: the shards are byte-identical and every drop reason the same."""
    monkeypatch.setenv("PENEIRA_LID_MODEL", str(shared / "models" / "lid.176.ftz"))
    idle, idle_drops = _run_web(shared, tmp_path / "idle")
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(max(2, min(4, os.cpu_count() or 2)))]
    try:
        loaded, loaded_drops = _run_web(shared, tmp_path / "loaded")
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert idle and idle.keys() == loaded.keys()
    assert all(idle[k] == loaded[k] for k in idle)
    assert idle_drops == loaded_drops
    assert idle_drops["extract"] and "extract:timeout" not in idle_drops["extract"]
