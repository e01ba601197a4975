"""Runs through fsspec URLs: file:// gives the same run as plain paths, memory:// holds a whole run with dedup."""

from __future__ import annotations

import gzip
import json
import os
import uuid
from pathlib import Path

import fsspec
import pyarrow.parquet as pq
import pytest
from _recording import Recording

from curate import Pipeline, dedup, readers
from curate.cli.main import main as cli
from curate.core.document import Document, shard_schema
from curate.io import fs
from curate.io.writers import Parquet
from curate.run.executors.local import LocalExecutor

WARCS = "warc/cc/*.warc.gz"  # three small Common Crawl WARC files
WEB = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"

PIPELINE_FILE = """
from curate import Pipeline, extract, readers
pipeline = Pipeline(name="urls", reader=readers.Warc(), steps=[extract.Resiliparse(), lambda d: len(d.text) > 200])
"""


def shard_tables(files: list[str]) -> dict[str, list[dict]]:
    return {fs.basename(p): fs.read_table(p).to_pylist() for p in files}


def step_rows(out: str) -> list[dict]:
    with fs.open(fs.join(out, "stats.json"), "r", encoding="utf-8") as f:
        steps = json.load(f)["steps"]
    return [{k: v for k, v in s.items() if k != "seconds" and k != "extra"} for s in steps]


def test_file_urls_give_the_same_run_as_plain_paths(shared, tmp_path, capsys):
    pipe_file = tmp_path / "urls.py"
    pipe_file.write_text(PIPELINE_FILE)
    plain, url = tmp_path / "plain", f"file://{tmp_path}/url"
    common = [str(pipe_file), "--workers", "1", "--no-progress", "--rejected"]
    assert cli(["run", *common, "--input", str(shared / WARCS), "--output", str(plain)]) == 0
    assert cli(["run", *common, "--input", f"file://{shared / WARCS}", "--output", url]) == 0

    for sub in ("data", "rejected"):
        a = shard_tables(fs.glob(str(plain / sub / "*.parquet")))
        b = shard_tables(fs.glob(f"{url}/{sub}/*.parquet"))
        assert a and a == b  # same shard names, same rows, every column
    assert step_rows(str(plain)) == step_rows(url)
    assert sorted(os.listdir(plain / "_done")) == sorted(fs.listdir(f"{url}/_done"))
    manifests = [json.loads(Path(p, "manifest.json").read_text()) for p in (plain, tmp_path / "url")]
    assert manifests[0]["outputs"] == manifests[1]["outputs"]
    assert all(i.startswith("file://") for i in manifests[1]["inputs"])
    assert not [p for p in (tmp_path / "url").rglob("*") if ".tmp" in p.name]

    # the commands that read a run take the URL too
    capsys.readouterr()
    assert cli(["stats", url]) == 0 and cli(["inspect", url, "-n", "1"]) == 0
    printed = capsys.readouterr().out
    assert "extract" in printed and "── " in printed
    first = [r for f in fs.glob(f"{url}/data/*.parquet") for r in fs.read_table(f).to_pylist()][:2]
    assert cli(["inspect", url, "-n", "2"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("── ") == 2 and all(f"── {r['id']}  source=" in printed for r in first)
    assert cli(["inspect", url, "-n", "1", "--rejected"]) == 0
    assert capsys.readouterr().out.count("drop_reason=") == 1


@pytest.fixture
def memory_root():
    root = f"memory://peneira-{uuid.uuid4().hex[:8]}"
    yield root
    mem = fsspec.filesystem("memory")
    if mem.exists(root):
        mem.rm(root, recursive=True)


def test_memory_run_with_dedup_matches_local_and_resumes(shared, tmp_path, memory_root):
    with gzip.open(shared / WEB, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    rows = [{"id": d["id"], "text": d["text"]} for d in docs]
    rows.append({"id": "zz-upper", "text": docs[5]["text"].upper()})  # an exact duplicate up to case
    rows += [{"id": f"{d['id']}~near", "text": d["text"] + " one more line"} for d in docs[10:40]]
    inputs_local, inputs_mem = [], []
    for k in range(3):
        body = "".join(json.dumps(r) + "\n" for r in rows[k::3])
        (tmp_path / f"part{k}.jsonl").write_text(body)
        inputs_local.append(str(tmp_path / f"part{k}.jsonl"))
        with fs.open(f"{memory_root}/in/part{k}.jsonl", "w", encoding="utf-8") as f:
            f.write(body)
        inputs_mem.append(f"{memory_root}/in/part{k}.jsonl")

    def pipeline():
        steps = [lambda d: len(d.text) > 0, dedup.Exact(), dedup.MinHash(), lambda d: len(d.text) > 50]
        return Pipeline(name="mem", reader=readers.Jsonl(), steps=steps)

    out_local, out_mem = str(tmp_path / "out"), f"{memory_root}/out"
    pipeline().run(inputs_local, out_local, executor=LocalExecutor(1, progress=False), rejected=True)
    ex = Recording()
    m = pipeline().run(f"{memory_root}/in/*.jsonl", out_mem, executor=ex, rejected=True)

    assert m["inputs"] == inputs_mem  # as written, the name mix and tokenize give them (issue 42.4)
    data_local = shard_tables(fs.glob(f"{out_local}/data/*.parquet"))
    data_mem = shard_tables(fs.glob(f"{out_mem}/data/*.parquet"))
    assert data_local and data_local == data_mem
    assert shard_tables(fs.glob(f"{out_local}/rejected/*.parquet")) == shard_tables(fs.glob(f"{out_mem}/rejected/*.parquet"))
    steps = {s["name"]: s for s in step_rows(out_mem)}
    assert steps["exact"]["dropped"]["exact:duplicate"] >= 1 and steps["minhash"]["dropped"]["minhash:duplicate"] >= 25
    assert step_rows(out_local) == step_rows(out_mem)
    assert fs.exists(f"{out_mem}/_work/global2/_phases/buckets") and fs.exists(f"{out_mem}/manifest.json")
    assert not [p for p in fsspec.filesystem("memory").find(memory_root) if ".tmp" in p]
    assert any("minhash" in desc or "signatures" in desc for desc, _ in ex.calls)

    # resume: a finished run runs nothing; with one stage-0 marker gone, exactly that task runs again
    ex = Recording()
    pipeline().run(f"{memory_root}/in/*.jsonl", out_mem, executor=ex, rejected=True)
    assert ex.calls == []
    fs.remove(f"{out_mem}/_done/stage0-part-00001")
    pipeline().run(f"{memory_root}/in/*.jsonl", out_mem, executor=ex, rejected=True)
    assert ex.calls == [("mem stage 0", [inputs_mem[1]])]
    assert shard_tables(fs.glob(f"{out_mem}/data/*.parquet")) == data_local


@pytest.mark.parametrize("kind", ["local", "file", "memory"])
def test_atomic_publish_leaves_no_partial_file(tmp_path, memory_root, monkeypatch, kind):
    spool = tmp_path / "spool"
    monkeypatch.setenv("PENEIRA_SPOOL", str(spool))
    base = {"local": str(tmp_path / "d"), "file": f"file://{tmp_path}/d", "memory": f"{memory_root}/d"}[kind]
    path = fs.join(base, "x.bin")
    fs.atomic_write_text(path, "old")

    with pytest.raises(RuntimeError), fs.atomic_open(path, "wb") as f:
        f.write(b"partial")
        raise RuntimeError("writer died")
    with fs.open(path, "r", encoding="utf-8") as f:
        assert f.read() == "old"  # the old file is untouched
    with pytest.raises(RuntimeError), fs.atomic_open(fs.join(base, "new.bin"), "wb") as f:
        f.write(b"partial")
        raise RuntimeError("writer died")
    assert not fs.exists(fs.join(base, "new.bin"))

    # a shard writer that fails before commit leaves nothing under a final name either
    w = Parquet(row_group_docs=2).open(fs.join(base, "data"), "part-00000", shard_schema({}))
    for i in range(5):
        w.write(Document(id=str(i), text="t" * 10, source="web"))
    w._flush()
    w.abort()
    assert fs.listdir(fs.join(base, "data")) == []

    w = Parquet(row_group_docs=2).open(fs.join(base, "data"), "part-00000", shard_schema({}))
    for i in range(5):
        w.write(Document(id=str(i), text="t" * 10, source="web"))
    (final,) = w.commit()
    assert fs.listdir(fs.join(base, "data")) == ["part-00000-000.parquet"]
    assert fs.read_table(final).num_rows == 5

    assert sorted(fs.listdir(base)) == ["data", "x.bin"]  # no temporary file beside the outputs
    assert not spool.exists() or not os.listdir(spool)  # nor in the spool of uploads
    if kind == "memory":
        assert pq.ParquetFile(fs.open(final, "rb")).metadata.num_rows == 5


@pytest.mark.parametrize("kind", ["local", "file", "memory"])
def test_prefix_listing_and_cat_files(tmp_path, memory_root, kind):
    """`listdir_prefix` names exactly the directory's files that start with the prefix (not those of a
    subdirectory); `cat_files` returns many files' bytes in the order asked; a missing directory lists empty."""
    base = {"local": str(tmp_path / "d"), "file": f"file://{tmp_path}/d", "memory": f"{memory_root}/d"}[kind]
    names = ["part-00001-000.parquet", "part-00001-001.parquet", "part-000010-000.parquet", "part-0000.json", "x"]
    for n in names:
        fs.atomic_write_text(fs.join(base, n), n.upper())
    fs.atomic_write_text(fs.join(base, "part-00001-sub", "part-00001-inner.parquet"), "deeper")
    assert sorted(fs.listdir_prefix(base, "part-00001-")) == ["part-00001-000.parquet", "part-00001-001.parquet"]
    assert sorted(fs.listdir_prefix(base, "part-0000")) == sorted(n for n in names if n.startswith("part-0000"))
    assert fs.listdir_prefix(base, "nothing") == [] and fs.listdir_prefix(fs.join(base, "missing"), "p") == []
    asked = ["x", "part-0000.json", "part-00001-001.parquet"]
    assert fs.cat_files([fs.join(base, n) for n in asked]) == [n.upper().encode() for n in asked]
    assert fs.cat_files([]) == []


def test_a_rerun_removes_what_killed_attempts_left_and_nothing_else(shared, tmp_path, monkeypatch):
    """Attempts that die between writing a temporary file and renaming it (issue 22.17: `*.tmp.PID` in `sigs/`
    and `stats/` stayed forever) leave them behind; the rerun that completes the run removes exactly those,
    and keeps a file of the same folders whose name is not one of ours."""
    from curate.run.executors.base import TaskFailures

    out = tmp_path / "out"
    pipe = Pipeline(name="left", reader=readers.Jsonl(source="pt"), steps=[dedup.MinHash(partitions=1)])
    src = str(shared / "text" / "pt" / "bosque_docs.jsonl")
    real_replace = os.replace
    folder = [""]

    def killed_before_rename(a, b):
        if os.sep + folder[0] + os.sep in str(b):
            raise OSError("killed")  # the process dies here: its temporary file stays
        return real_replace(a, b)

    monkeypatch.setattr(os, "replace", killed_before_rename)
    monkeypatch.setattr(fs.Staged, "discard", lambda self: None)  # a killed process cleans nothing up
    for attempt, (folder[0], failure) in enumerate((("sigs", TaskFailures), ("stats", OSError))):
        monkeypatch.setattr(os, "getpid", lambda a=attempt: 4_000_000 + a)  # each attempt a process of its own
        with pytest.raises(failure):  # MinHash's signatures, then its stats record
            pipe.run([src], str(out), executor=LocalExecutor(1, progress=False))
    monkeypatch.undo()
    left = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if ".tmp." in p.name)
    assert any("/sigs/" in p for p in left) and any(p.startswith("stats/") for p in left), left
    (out / "stats" / "notes.tmp").write_text("mine")  # not a name this package gives its temporary files

    pipe.run([src], str(out), executor=LocalExecutor(1, progress=False))
    assert sorted(p.name for p in out.rglob("*") if ".tmp" in p.name) == ["notes.tmp"]
    assert (out / "stats" / "notes.tmp").read_text() == "mine"


def test_inspect_shows_control_characters_escaped(tmp_path, capsys):
    """Crawled text with terminal escape sequences, a bell and a bidi override (issue 22.17): `curate inspect`
    prints none of them raw (judged by Unicode categories), newlines and tabs stay, the shard is unchanged."""
    import unicodedata

    nasty = "title\x1b]0;owned\x07 and \x1b[2J cleared\r\nline two\tcol \u202eevil\u202c end\x9b1m"
    out = tmp_path / "run"
    w = Parquet().open(str(out / "data"), "part-00000", shard_schema({}))
    w.write(Document(id="x\x1b[31m", text=nasty, source="web"))
    w.commit()
    capsys.readouterr()
    assert cli(["inspect", str(out), "-n", "1", "--chars", "1000"]) == 0
    shown = capsys.readouterr().out
    bad = [c for c in shown if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]
    assert bad == []
    assert "\\x1b]0;owned\\x07" in shown and "\\x1b[2J" in shown and "\\u202eevil\\u202c" in shown
    assert "line two\tcol" in shown and "x\\x1b[31m" in shown
    assert fs.read_table(fs.glob(str(out / "data" / "*.parquet"))[0]).to_pylist()[0]["text"] == nasty


def test_a_file_missing_mid_run_is_a_runtime_error_not_a_usage_error(monkeypatch):
    """`curate` mapped every FileNotFoundError to a usage error (one line, exit 2, issue 22.1): a marker or phase
    file that must exist and does not is a fault of the run, raised with its traceback (exit 1)."""
    import curate.cli.stats as stats_cli

    def lost(args):
        raise FileNotFoundError("bucket/run/_work/global1/_phases/filter/00001.json")

    monkeypatch.setattr(stats_cli, "main", lost)
    with pytest.raises(FileNotFoundError, match="00001.json"):
        cli(["stats", "anything"])


def test_a_missing_phase_file_is_an_error_not_no_rows(tmp_path):
    """`read_where` (the members, keep, components and filter phases' reads) took a missing file for "no rows"
    (issue 22.2): every task of a phase writes its file, so one that is missing is an error naming it."""
    import pyarrow as pa

    from curate.dedup.common import read_where, write_table

    here = str(tmp_path / "0000.parquet")
    write_table(pa.table({"shard": pa.array([1, 1, 2], pa.int32()), "id": ["a", "b", "c"]}), here)
    assert read_where([here], {"shard": 1}, ["id"])["id"].to_pylist() == ["a", "b"]
    for gone in (str(tmp_path / "0001.parquet"), f"memory://{uuid.uuid4().hex}/0001.parquet"):
        with pytest.raises(FileNotFoundError, match="0001.parquet"):
            read_where([here, gone], {"shard": 1}, ["id"])
