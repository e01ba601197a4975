"""Runs on a real S3 API (moto's server on 127.0.0.1, through s3fs): the same corpus as on a local disk,
O(tasks) requests, a worker killed mid-upload, injected 503s, models and indexes at s3:// URLs, and the
demo flow from WARC files to token shards and a few training steps with every path an s3:// URL.

The reference for every run is the same pipeline on a local disk: the store must change nothing."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs

import fsspec
import pytest

from curate import Pipeline, dedup, extract, readers
from curate.cli.main import main as cli
from curate.core.document import Document, shard_schema
from curate.io import fs
from curate.io.writers import Parquet
from curate.run.executors.local import LocalExecutor

ROOT = Path(__file__).resolve().parents[1]
WARCS = ["resiliparse_warcfile.CC-MAIN-2020-34.warc.gz", "whirlwind.CC-MAIN-2024-22.warc.gz",
         "cmoncrawl_mini.CC-MAIN-2022-05.warc.gz"]

PIPELINE_FILE = """
import os
from curate import Pipeline, dedup, extract, readers, writers
pipeline = Pipeline(name="s3", reader=readers.Warc(), writer=writers.Parquet(row_group_docs=4, max_shard_chars=2_000),
                    steps=[extract.Resiliparse(), lambda d: len(d.text) > 200, dedup.Exact(keep="longest"),
                           lambda d: not d.text.startswith("#")])
"""


def stream_pipeline() -> Pipeline:
    """Three stages: extraction and a filter (stream), exact dedup (global), one more filter (stream)."""
    return Pipeline(name="s3", reader=readers.Warc(), writer=Parquet(row_group_docs=4, max_shard_chars=2_000),
                    steps=[extract.Resiliparse(), lambda d: len(d.text) > 200, dedup.Exact(keep="longest"),
                           lambda d: not d.text.startswith("#")])


def upload_warcs(shared: Path, bucket: str, names=WARCS) -> str:
    s3 = fsspec.filesystem("s3")
    for name in names:
        s3.put_file(str(shared / "warc" / "cc" / name), f"{bucket[5:]}/crawl/{name}")
    return f"{bucket}/crawl/*.warc.gz"


def corpus(out: str, sub: str = "data") -> dict[str, list[dict]]:
    """Every shard of a run by name, each as its rows (every column)."""
    return {fs.basename(p): fs.read_table(p).to_pylist() for p in fs.glob(fs.join(out, sub, "*.parquet"))}


def step_rows(out: str) -> list[dict]:
    with fs.open(fs.join(out, "stats.json"), "r", encoding="utf-8") as f:
        return [{k: v for k, v in s.items() if k not in ("seconds", "extra")} for s in json.load(f)["steps"]]


def listings(requests: list[tuple[str, str, str]]) -> list[str]:
    """The prefix of every LIST request the server answered (ListObjectsV2 with its `prefix=`)."""
    out = []
    for method, _path, query in requests:
        q = parse_qs(query, keep_blank_values=True)
        if method == "GET" and "list-type" in q:
            out.append(q.get("prefix", [""])[0])
    return out


@pytest.fixture(scope="module")
def local_run(shared, tmp_path_factory) -> str:
    """The reference: the pipeline on the same WARC files on a local disk."""
    out = str(tmp_path_factory.mktemp("local") / "out")
    files = [str(shared / "warc" / "cc" / n) for n in sorted(WARCS)]  # the order a listing gives
    stream_pipeline().run(files, out, executor=LocalExecutor(1, progress=False), rejected=True)
    return out


class Recording(LocalExecutor):
    """A one-process executor that records which tasks each map call ran."""

    def __init__(self):
        super().__init__(1, progress=False)
        self.calls: list[tuple[str, list[str]]] = []

    def map(self, fn, items, desc="tasks", labels=()):
        self.calls.append((desc, list(labels)))
        return super().map(fn, items, desc, labels)


def test_run_on_s3_is_the_local_run_with_one_marker_listing_per_stage(shared, local_run, s3_bucket, s3_server, capsys):
    inputs = upload_warcs(shared, s3_bucket)
    out = f"{s3_bucket}/runs/a"
    start = len(s3_server.requests())
    m = stream_pipeline().run(inputs, out, executor=Recording(), rejected=True)
    reqs = s3_server.requests()[start:]

    assert m["inputs"] == [f"{s3_bucket}/crawl/{n}" for n in sorted(WARCS)]
    local = corpus(local_run)
    assert local and corpus(out) == local and sum(map(len, local.values())) == m["docs_written"]
    assert corpus(out, "rejected") == corpus(local_run, "rejected")
    assert step_rows(out) == step_rows(local_run)
    assert len(local) > 3  # several shards per task (max_shard_chars), so commits have stale-shard checks to do

    # completion markers: one listing of _done/ per stage (three), never a request per task; commits
    # look for their own stem's files (one prefix listing per writer), never list data/ or rejected/ whole
    key = out[len(s3_bucket) + 1:]
    prefixes = listings(reqs)
    assert [p for p in prefixes if p.startswith(f"{key}/_done/")] == [f"{key}/_done/"] * 3
    assert not [meth for meth, p, _ in reqs if "/_done/" in p and meth != "PUT"]  # no HEAD or GET of a marker
    commits = [p for p in prefixes if p.startswith((f"{key}/data/", f"{key}/rejected/", f"{key}/_work/stage0/"))]
    assert all(re.fullmatch(rf"{key}/(data|rejected|_work/stage0)/(stage[02]-)?part-[0-9-]+-", p) for p in commits)
    stage2_tasks = len(fs.glob(f"{out}/_work/stage1/*.parquet"))
    assert len(commits) == 2 * (len(WARCS) + stage2_tasks)  # a data and a rejected writer per task

    # a rerun of the finished run runs nothing and lists the markers once per stage again
    ex = Recording()
    start = len(s3_server.requests())
    stream_pipeline().run(inputs, out, executor=ex, rejected=True)
    assert ex.calls == [] and listings(s3_server.requests()[start:]).count(f"{key}/_done/") == 3
    assert corpus(out) == local

    # every command that reads a run takes the s3:// URL
    capsys.readouterr()
    tables = []
    for run in (out, local_run):
        assert cli(["stats", run]) == 0
        tables.append([line.rsplit(None, 1)[0] for line in capsys.readouterr().out.splitlines()[2:]])  # less seconds
    assert tables[0] == tables[1] and [t.split()[0] for t in tables[0] if not t.startswith(" ")] == [
        "read", "extract", "lambda", "exact", "read", "lambda_2"]
    first = next(iter(local.values()))[0]
    assert cli(["inspect", out, "-n", "1"]) == 0 and f"── {first['id']}  source=" in capsys.readouterr().out
    assert cli(["report", out]) == 0 and cli(["report", local_run]) == 0
    with fs.open(f"{out}/report.md", "r", encoding="utf-8") as f:
        md = f.read()

    def untimed(text: str) -> list[str]:
        return [line for line in text.splitlines() if "| seconds |" not in line]

    assert untimed(md) == untimed(Path(local_run, "report.md").read_text()) and "kept 14" in md
    assert sorted(fs.listdir(f"{out}/report")) == sorted(os.listdir(Path(local_run, "report")))


def test_commit_removes_its_own_stale_shards_by_prefix(s3_bucket, s3_server):
    """A rerun of a task that now writes fewer shards deletes the extra ones of its stem, found by one
    prefix listing, and leaves the shards of stems that merely start alike."""
    d = f"{s3_bucket}/data"
    others = ["part-00001-000-000.parquet", "part-000010-000.parquet", "part-00001-x.parquet"]
    for name in ["part-00001-000.parquet", "part-00001-001.parquet", "part-00001-002.parquet", *others]:
        fs.atomic_write_text(fs.join(d, name), "old")
    w = Parquet().open(d, "part-00001", shard_schema({}))
    w.write(Document(id="a", text="new text", source="web"))
    start = len(s3_server.requests())
    (path,) = w.commit()
    prefixes = listings(s3_server.requests()[start:])
    assert prefixes == ["data/part-00001-"]
    assert sorted(fs.listdir(d)) == sorted(["part-00001-000.parquet", *others])
    assert fs.read_table(path).to_pylist()[0]["text"] == "new text"
