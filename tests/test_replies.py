"""Checked replies and one path parser for http(s) inputs (issue 42.2, 42.4): `curate run --input http://…` reads
what `mix` and `tokenize` resolve for the same URL, and every ranged read of it goes through the one checked path
(`curate.io.commoncrawl.check_reply`): a fault-injecting proxy's wrong ranges, short and long bodies are retried
to the clean output; a changed validator or a 200 for a range fails loudly; never a silent difference."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _ccserver import FaultProxy, RangeServer

from curate.core.stats import StepStats
from curate.io import commoncrawl as cc
from curate.io import corpus, fs, readers
from curate.io.plan import plan_splits
from curate.io.splits import Split

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
JSONL = DATA / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"

pytestmark = pytest.mark.skipif(not JSONL.exists(), reason="needs /work/shared/data (the real test data)")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """150 real pages as a `.jsonl.gz` of one gzip member per line (so `--tasks` cuts it), over HTTP."""
    root = tmp_path_factory.mktemp("srv")
    lines = gzip.decompress(JSONL.read_bytes()).splitlines(keepends=True)[:150]
    (root / "web.jsonl.gz").write_bytes(b"".join(gzip.compress(x, mtime=0) for x in lines))
    server = RangeServer(root)
    yield root, server
    server.close()


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setenv("PENEIRA_CC_BACKOFF_BASE", "0.001")
    monkeypatch.setenv("PENEIRA_CC_BACKOFF_CAP", "0.002")
    monkeypatch.setenv("PENEIRA_CC_TRIES", "3")


def _docs(url: str, tasks: int = 4) -> list[tuple]:
    stats = StepStats("read")
    return [(d.id, d.text) for s in plan_splits(url, tasks=tasks)
            for d in readers.Jsonl().read_split(Split(s.url, "k", s.start, s.end), stats)]


def test_run_resolves_a_url_as_mix_and_tokenize_do(served):
    """`curate run` made `http://http://…` of a URL (fsspec's HTTP filesystem keeps the protocol in its paths);
    run's resolver (`fs.expand_inputs`) and mix / tokenize's (`corpus.resolve_inputs`) now give the same."""
    import fsspec

    root, server = served
    fsspec.filesystem("memory").pipe("/replies/web.jsonl.gz", (root / "web.jsonl.gz").read_bytes())
    for spec in (server.url + "web.jsonl.gz", str(root / "web.jsonl.gz"), f"file://{root}/web.jsonl.gz",
                 f"{root}/*.jsonl.gz", "memory://replies/web.jsonl.gz", "memory://replies/*.jsonl.gz"):
        assert fs.expand_inputs([spec]) == corpus.resolve_inputs(spec), spec
    assert fs.expand_inputs([server.url + "web.jsonl.gz"]) == [server.url + "web.jsonl.gz"]


@pytest.mark.parametrize("fault", ["shifted", "short", "long", None])
def test_wrong_ranges_over_http_are_retried_to_the_clean_documents(served, quick, fault):
    root, server = served
    want = _docs(str(root / "web.jsonl.gz"))
    proxy = FaultProxy(server.url, lambda path, rng, attempt: fault if rng and not attempt else None)
    try:
        assert _docs(proxy.url + "web.jsonl.gz") == want and len(want) == 150
    finally:
        proxy.close()
    assert fault is None or proxy.faults[fault] > 0


@pytest.mark.parametrize(("fault", "error", "message"), [("etag", cc.Changed, "changed while this run read it"),
                                                         ("norange", OSError, "does not serve ranges")])
def test_a_changed_file_or_a_whole_file_for_a_range_fails_loudly(served, quick, fault, error, message):
    root, server = served
    proxy = FaultProxy(server.url, lambda path, rng, attempt: fault if rng and not rng.startswith("bytes=0-") else None)
    try:
        with pytest.raises(error, match=message):
            _docs(proxy.url + "web.jsonl.gz")
    finally:
        proxy.close()


def test_curate_run_over_http_through_a_shifting_proxy_writes_the_clean_output(served, quick, tmp_path):
    """The issue's case end to end: `curate run --input http://… --tasks 3` (a 107-line traceback before), each
    range's first reply 1000 bytes off: the documents of the same run over the local file."""
    from curate.cli.main import main

    root, server = served
    pipe = tmp_path / "p.py"
    pipe.write_text("from curate import Pipeline, readers\npipeline = Pipeline(name='p', reader=readers.Jsonl(), "
                    "steps=[])\n")
    proxy = FaultProxy(server.url, lambda path, rng, attempt: "shifted" if rng and not attempt else None)
    try:
        outs = {}
        for name, inp in (("http", proxy.url + "web.jsonl.gz"), ("local", str(root / "web.jsonl.gz"))):
            out = tmp_path / name
            assert main(["run", str(pipe), "--input", inp, "--output", str(out), "--tasks", "3", "--workers", "1",
                         "--no-progress"]) == 0
            outs[name] = sorted(t for f in sorted((out / "data").glob("*.parquet"))
                                for t in pq.read_table(f, columns=["text"]).column("text").to_pylist())
    finally:
        proxy.close()
    assert outs["http"] == outs["local"] and len(outs["local"]) == 150 and proxy.faults["shifted"] > 0
