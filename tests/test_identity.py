"""Issue 29, cases 1 and 6: documents that share an id, and input files reached twice through symlinks.

Ids repeat when one run's shards are given twice, when the outputs of two runs over one crawl are unioned,
and when a step splits a document and gives every part the document's id. The dedup steps tell rows apart
by (shard, row) and keep exactly one of each set of copies; each scenario is checked against brute force
(the distinct texts, or lines, of the input). Any other global step refuses repeated ids with one line.
A `**` glob follows a symlinked folder at most once and cuts loops, so no file is read under two names.
"""

from __future__ import annotations

import dataclasses
import glob
import gzip
import json
import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curate import GlobalStep, Pipeline, dedup, extract, filters, readers
from curate.cli.main import main as cli_main
from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.dedup.sketch import signatures
from curate.dedup.text import match_form
from curate.dedup.units import units
from curate.io import fs
from curate.run.executors.local import LocalExecutor

WEB = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
STEPS = {"exact": dedup.Exact, "minhash": dedup.MinHash, "lines": dedup.Lines}


def web_docs(shared: Path) -> list[dict]:
    with gzip.open(shared / WEB, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def run(steps, inputs, out, reader=None, workers: int = 1) -> dict:
    pipe = Pipeline(name="ids", reader=reader or readers.Parquet(), steps=steps)
    return pipe.run(inputs=inputs, output=str(out), executor=LocalExecutor(workers, progress=False), progress=False)


def rows(out) -> list[dict]:
    return [r for p in sorted(glob.glob(f"{out}/data/*.parquet")) for r in pq.read_table(p).to_pylist()]


def texts(out) -> Counter:
    return Counter(r["text"] for r in rows(out))


def lines_of(text: str) -> list[str]:
    """The match forms of a text's lines that have a word: what `Lines()` compares."""
    return [m for m in (match_form(u) for u in units(text, "line")) if m]


def check_against_brute_force(name: str, given: list[tuple[str, str]], kept: list[tuple[str, str]]) -> None:
    """What a dedup step must keep of the (id, text) documents `given`, by brute force: one document per distinct
    match form (Exact), no two documents alike (MinHash), every line with a word once (Lines). A document with
    no word has nothing to compare: Exact and MinHash keep it, but one of each set of copies (id and text)."""
    worded = [t for _, t in kept if match_form(t)]
    if name != "lines":
        assert sorted(d for d in kept if not match_form(d[1])) == sorted({d for d in given if not match_form(d[1])})
    if name == "exact":
        forms = Counter(match_form(t) for t in worded)
        assert all(n == 1 for n in forms.values()), "two kept documents share a text"
        assert set(forms) == {match_form(t) for _, t in given} - {""}
    elif name == "minhash":
        assert len(set(worded)) == len(worded), "two kept documents are the same text"
    else:
        kept_lines = [ln for _, t in kept for ln in lines_of(t)]
        assert len(set(kept_lines)) == len(kept_lines), "a line is kept twice"
        assert set(kept_lines) == {ln for _, t in given for ln in lines_of(t)}


def pairs(out) -> list[tuple[str, str]]:
    return [(r["id"], r["text"]) for r in rows(out)]


@pytest.fixture(scope="module")
def curated(shared, tmp_path_factory) -> tuple[Path, list[tuple[str, str]]]:
    """web_cc's 697 pages plus 40 exact and 40 near copies of them (other ids), curated into 3 shards of a
    run (our own shards: their ids are kept when read back), and a copy of those shards elsewhere."""
    root = tmp_path_factory.mktemp("curated")
    docs = web_docs(shared)
    extra = [{"id": f"{d['id']}-exact", "text": d["text"]} for d in docs[:40]]
    extra += [{"id": f"{d['id']}-near", "text": d["text"] + " Share this page."} for d in docs[40:80]]
    all_rows = [{"id": d["id"], "text": d["text"]} for d in docs] + extra
    files = []
    for k in range(3):
        path = root / f"part{k}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in all_rows[k::3]))
        files.append(str(path))
    run([], files, root / "base", reader=readers.Jsonl())
    shutil.copytree(root / "base" / "data", root / "copy" / "data")
    return root, pairs(root / "base")


# ---------------------------------------------------------------- case 1: copies that share an id


@pytest.mark.parametrize("name", list(STEPS))
def test_the_same_shards_given_twice_keep_what_they_keep_once(curated, tmp_path, name):
    """Before issue 29 Exact and MinHash kept both copies of every document (each was its cluster's keeper by
    id) and Lines picked the kept copy of a line at random between them."""
    root, given = curated
    once = run([STEPS[name]()], str(root / "base/data/*.parquet"), tmp_path / "once")
    twice = run([STEPS[name]()], [str(root / "base/data/*.parquet"), str(root / "copy/data/*.parquet")], tmp_path / "twice")
    assert twice["docs_read"] == 2 * once["docs_read"] == 2 * len(given)
    assert texts(tmp_path / "twice") == texts(tmp_path / "once")
    check_against_brute_force(name, given, pairs(tmp_path / "twice"))
    stats = json.loads((tmp_path / "twice" / "stats.json").read_text())["steps"][-1]
    if name != "lines":  # each document kept had its copy, under its id, dropped
        assert stats["extra"]["same_id_copies"] == stats["docs_out"] > 0


@pytest.mark.parametrize("name", list(STEPS))
def test_which_copy_is_kept_depends_on_neither_workers_nor_input_order(curated, tmp_path, name):
    """The same documents whatever the input order; a pool of workers (one step: a pool costs seconds a phase)."""
    root, _ = curated
    base, copy = str(root / "base/data/*.parquet"), str(root / "copy/data/*.parquet")
    run([STEPS[name]()], [base, copy], tmp_path / "a", workers=1)
    run([STEPS[name]()], [copy, base], tmp_path / "b", workers=2 if name == "exact" else 1)
    a, b = (sorted(pairs(tmp_path / x)) for x in "ab")
    assert a == b


def test_two_runs_over_one_crawl_unioned_keep_each_text_once(shared, tmp_path):
    """Two pipelines over the same WARCs give the same record the same id, with the same or another text;
    Exact on the union keeps one document per distinct text, and both texts where they differ."""
    warcs = sorted(str(p) for p in (shared / "warc" / "wget").glob("*.warc.gz"))
    runs = {"all": [], "gopher": [filters.GopherRepetition()], "c4": [filters.C4()]}
    for name, steps in runs.items():
        run([extract.Main(), *steps], warcs, tmp_path / name, reader=readers.Warc())
    union = [r for name in runs for r in rows(tmp_path / name)]
    by_id: dict[str, set[str]] = {}
    for r in union:
        by_id.setdefault(r["id"], set()).add(r["text"])
    copies = sum(n - len(by_id[i]) for i, n in Counter(r["id"] for r in union).items())
    assert copies >= 10 and sum(len(t) > 1 for t in by_id.values()) >= 10  # same id: same text, and another
    run([dedup.Exact()], [str(tmp_path / name / "data/*.parquet") for name in runs], tmp_path / "exact")
    check_against_brute_force("exact", [(r["id"], r["text"]) for r in union], pairs(tmp_path / "exact"))


def _split_reusing_id(doc):
    """A split that gives every part the document's own id (instead of `doc.child`), its first part twice."""
    parts = [p for p in doc.text.split("\n") if match_form(p)]
    return [dataclasses.replace(doc, text=p) for p in [parts[0], *parts]] if parts else []  # none: dropped


@pytest.mark.parametrize("name", list(STEPS))
def test_a_split_that_reuses_its_parents_id_keeps_each_part_once(shared, tmp_path, name):
    docs = web_docs(shared)[:120]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in docs))
    run([_split_reusing_id, STEPS[name]()], str(src), tmp_path / "out", reader=readers.Jsonl())
    parts = [p for d in docs for p in d["text"].split("\n") if match_form(p)]
    kept = pairs(tmp_path / "out")
    check_against_brute_force(name, [("", p) for p in parts], kept)
    if name == "exact":
        assert len(kept) == len({match_form(p) for p in parts})


# ---------------------------------------------------------------- any other global step: refused


class PassThrough(GlobalStep):
    """A global step that finds nothing by id; it declares nothing, so the run checks ids before it."""

    name = "pass"

    def run_global(self, ctx):
        for p in ctx.inputs:
            shutil.copy(p, fs.join(ctx.output_dir, fs.basename(p)))
        return [StepStats(self.name)]


def test_a_global_step_that_needs_unique_ids_refuses_repeats_naming_the_id_and_both_inputs(curated, tmp_path):
    root, given = curated
    base, copy = root / "base/data", root / "copy/data"
    with pytest.raises(UsageError) as e:
        run([PassThrough()], [str(base / "*.parquet"), str(copy / "*.parquet")], tmp_path / "twice", workers=2)
    first = min(r["id"] for r in rows(root / "base"))
    msg = str(e.value)
    assert "\n" not in msg and repr(first) in msg and f"{len(given) - 1} more ids repeat" in msg
    assert f"is in both {base}/part-0000" in msg and f" and {copy}/part-0000" in msg
    assert not list((tmp_path / "twice").glob("data/*.parquet"))  # refused before the step ran
    run([PassThrough()], str(base / "*.parquet"), tmp_path / "once")  # unique ids: it runs
    assert sorted(pairs(tmp_path / "once")) == sorted(given)


def test_a_split_that_reuses_ids_before_such_a_step_is_refused_with_one_line(shared, tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in web_docs(shared)[:20]))
    pipe = tmp_path / "pipe.py"
    pipe.write_text(
        "import dataclasses, shutil, os\n"
        "from curate import GlobalStep, Pipeline, readers\n"
        "from curate.core.stats import StepStats\n"
        "def halves(doc):\n"
        "    return [dataclasses.replace(doc, text=doc.text[:50]), dataclasses.replace(doc, text=doc.text[50:])]\n"
        "class Keep(GlobalStep):\n"
        "    name = 'keep'\n"
        "    def run_global(self, ctx):\n"
        "        for p in ctx.inputs:\n"
        "            shutil.copy(p, os.path.join(ctx.output_dir, os.path.basename(p)))\n"
        "        return [StepStats(self.name)]\n"
        "pipeline = Pipeline(name='split', reader=readers.Jsonl(), steps=[halves, Keep()])\n")
    code = cli_main(["run", str(pipe), "--input", str(src), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("curate run: error: step 'keep' tells documents apart by id, and id ")
    assert f"is twice in {src} (19 more ids repeat)" in err[-1] and "Document.child" in err[-1]


def test_a_bad_repeated_ids_declaration_is_refused(curated, tmp_path):
    class Odd(PassThrough):
        repeated_ids = "both"

    with pytest.raises(UsageError, match="repeated_ids must be one of"):
        run([Odd()], str(curated[0] / "base/data/*.parquet"), tmp_path / "o")


# ---------------------------------------------------------------- the property, on random corpora


@pytest.fixture(scope="module")
def pool(shared) -> list[str]:
    """12 web_cc pages of 50+ words no two of which are near duplicates (signatures agree on under a tenth of
    their values), as lines of their sentences."""
    texts = [d["text"].replace(". ", ".\n") for d in web_docs(shared) if len(d["text"].split()) >= 50]
    sig, _ = signatures(texts)
    out: list[int] = []
    for i in range(len(texts)):
        if len(out) < 12 and all((sig[i] == sig[j]).mean() < 0.1 for j in out):
            out.append(i)
    return [texts[i] for i in out]


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_ids_any_copies_keep_one_of_each(pool, data):
    """Random corpora over 1 to 3 files: ids drawn from 5 (so they repeat, with the same text or another),
    texts from 12 distinct pages (so they repeat, under one id or another). Ids are taken as written."""
    name = data.draw(st.sampled_from(list(STEPS)))
    n = data.draw(st.integers(1, 3))
    docs = data.draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, len(pool) - 1), st.integers(0, n - 1)),
                              min_size=1, max_size=25))
    with tempfile.TemporaryDirectory() as tmp:
        files = [os.path.join(tmp, f"in{k}.jsonl") for k in range(n)]
        for k, path in enumerate(files):
            with open(path, "w") as f:
                f.writelines(json.dumps({"id": f"id{i}", "text": pool[t]}) + "\n" for i, t, where in docs if where == k)
        used = [p for p in files if os.path.getsize(p)]
        run([STEPS[name]()], used, os.path.join(tmp, "out"), reader=readers.Jsonl(unique_ids=False))
        kept = rows(os.path.join(tmp, "out"))
    check_against_brute_force(name, [(f"id{i}", pool[t]) for i, t, _ in docs], [(r["id"], r["text"]) for r in kept])
    if name != "lines":  # one per distinct text, and the one with the smallest id
        assert sorted(r["text"] for r in kept) == sorted({pool[t] for _, t, _ in docs})
        for r in kept:
            assert r["id"] == min(f"id{i}" for i, t, _ in docs if pool[t] == r["text"])


# ---------------------------------------------------------------- case 6: inputs reached twice through symlinks


def _tree(root: Path, shared: Path) -> Path:
    """crawl/2024-10/{a,b}.jsonl and crawl/2024-10/sub/c.jsonl: 3 files of 20 web_cc pages each."""
    docs = web_docs(shared)
    month = root / "crawl" / "2024-10"
    (month / "sub").mkdir(parents=True)
    for k, path in enumerate([month / "a.jsonl", month / "b.jsonl", month / "sub" / "c.jsonl"]):
        path.write_text("".join(json.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in docs[20 * k:20 * k + 20]))
    return root / "crawl"


def test_a_symlinked_folder_is_read_once_under_its_own_name(shared, tmp_path, monkeypatch):
    """crawl/latest -> 2024-10: Python's glob listed every file twice, so a run read each record under two ids."""
    monkeypatch.chdir(tmp_path)
    crawl = _tree(tmp_path, shared)
    (crawl / "latest").symlink_to("2024-10")
    real = ["crawl/2024-10/a.jsonl", "crawl/2024-10/b.jsonl", "crawl/2024-10/sub/c.jsonl"]
    assert len(glob.glob("crawl/**/*.jsonl", recursive=True)) == 6  # the bug, in Python's glob
    assert fs.glob("crawl/**/*.jsonl") == real
    assert fs.expand_inputs("crawl/**/*.jsonl") == real
    assert fs.expand_inputs(["crawl/latest/*.jsonl", "crawl/2024-10/*.jsonl"]) == real[:2]  # the real names
    assert fs.glob("crawl/latest/**/*.jsonl") == ["crawl/latest/a.jsonl", "crawl/latest/b.jsonl",
                                                  "crawl/latest/sub/c.jsonl"]  # asked through the link: its names
    linked = run([dedup.Exact()], "crawl/**/*.jsonl", tmp_path / "linked", reader=readers.Jsonl())
    plain = run([dedup.Exact()], ["crawl/2024-10/*.jsonl", "crawl/2024-10/sub/*.jsonl"], tmp_path / "plain",
                reader=readers.Jsonl())
    assert linked["docs_read"] == plain["docs_read"] == 60
    assert sorted((r["id"], r["text"]) for r in rows(tmp_path / "linked")) == \
        sorted((r["id"], r["text"]) for r in rows(tmp_path / "plain"))


def test_a_symlink_loop_is_cut_and_named(shared, tmp_path, monkeypatch, capsys):
    """sub/back -> .. and two links to their own folder: Python's glob listed the 3 files under hundreds of
    paths (every path up to the kernel's 40-link limit; two loops in a folder double it at each level)."""
    monkeypatch.chdir(tmp_path)
    crawl = _tree(tmp_path, shared)
    (crawl / "2024-10" / "sub" / "back").symlink_to("..")
    (crawl / "2024-10" / "here").symlink_to(".")
    (crawl / "2024-10" / "again").symlink_to(".")
    assert fs.expand_inputs("crawl/**/*.jsonl") == ["crawl/2024-10/a.jsonl", "crawl/2024-10/b.jsonl",
                                                    "crawl/2024-10/sub/c.jsonl"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("curate: warning: 'crawl/**/*.jsonl': 3 symlink loops not followed")
    for link in ("crawl/2024-10/again -> .", "crawl/2024-10/here -> .", "crawl/2024-10/sub/back -> .."):
        assert link in err[0]
    out = run([], "crawl/**/*.jsonl", tmp_path / "out", reader=readers.Jsonl())
    assert out["docs_read"] == 60


def test_one_file_under_two_names_is_listed_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.jsonl").write_text('{"text": "x"}\n')
    (tmp_path / "a" / "y.jsonl").write_text('{"text": "y"}\n')
    os.link(tmp_path / "a" / "y.jsonl", tmp_path / "a" / "y-hard.jsonl")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x-link.jsonl").symlink_to(tmp_path / "a" / "x.jsonl")
    assert fs.expand_inputs(["a/*.jsonl", "./a/x.jsonl", str(tmp_path / "a" / "x.jsonl")]) == ["a/x.jsonl", "a/y-hard.jsonl"]
    assert fs.expand_inputs(["b/*.jsonl", "a/x.jsonl"]) == ["a/x.jsonl"]  # the name without a link in it
    assert fs.expand_inputs(["b/*.jsonl"]) == ["b/x-link.jsonl"]
    assert fs.expand_inputs([f"file://{tmp_path}/a/x.jsonl", "a/x.jsonl"]) == [f"file://{tmp_path}/a/x.jsonl"]


def test_glob_without_symlinks_is_pythons_glob(tmp_path, monkeypatch):
    """Hidden files and folders stay out of `*` and `**`, as in Python's glob, and nested `**` works."""
    monkeypatch.chdir(tmp_path)
    for d in ("a/b/c", "a/.h/d", "e/b", ".top"):
        (tmp_path / d).mkdir(parents=True)
    for f in ("a/x.txt", "a/.y.txt", "a/b/x.txt", "a/b/c/z.x", "a/.h/q.txt", "a/.h/d/r.txt", "e/b/w.x", "e/b/k.txt",
              ".top/t.txt", "top.txt"):
        (tmp_path / f).write_text(f)
    for pattern in ("**/*.txt", "a/**", "a/**/b/**/*.x", "*/**/*.txt", "a/**/.h/*", "**", "**/b/*", "a/**/*",
                    f"{tmp_path}/**/*.x", "a/*/**/*.txt", "a/**/.h/**/*.txt", "a/**/.y.txt", "nothing/**/*.txt"):
        expected = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
        assert fs.glob(pattern) == expected, pattern
