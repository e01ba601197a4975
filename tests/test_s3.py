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
from _recording import Recording

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
    """Every shard of a run by name, each as its rows: every column but `id`, which readers derive from
    the input's path (the same WARC file in a bucket and on a disk gives other ids)."""
    shards = {fs.basename(p): fs.read_table(p).to_pylist() for p in fs.glob(fs.join(out, sub, "*.parquet"))}
    return {name: [{k: v for k, v in r.items() if k != "id"} for r in rows] for name, rows in shards.items()}


def ids(out: str) -> list[str]:
    return [i for p in fs.glob(fs.join(out, "data", "*.parquet")) for i in fs.read_table(p, columns=["id"])["id"].to_pylist()]


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
        "read", "extract", "lambda", "exact", "read", "lambda_2", "characters:"]  # the last: what chars count
    assert cli(["inspect", out, "-n", "1"]) == 0 and f"── {ids(out)[0]}  source=" in capsys.readouterr().out
    assert cli(["report", out]) == 0 and cli(["report", local_run]) == 0
    with fs.open(f"{out}/report.md", "r", encoding="utf-8") as f:
        md = f.read()

    def untimed(text: str) -> list[str]:  # and the Inputs table's paths by their file names (s3:// vs local)
        return [re.sub(r"^\| \S*/", "| ", line) for line in text.splitlines() if "| seconds |" not in line]

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


def curate_run(pipe_file: Path, inputs: str, out: str, spool: Path, workers: int = 2) -> subprocess.Popen:
    """`curate run` in a new process (its workers are processes of their own), reaching S3 through the
    environment the server fixture set: endpoint (fsspec config) and credentials."""
    cmd = [sys.executable, "-m", "curate.cli.main", "run", str(pipe_file), "--input", inputs, "--output", out,
           "--workers", str(workers), "--rejected", "--no-progress"]
    env = {**os.environ, "PENEIRA_SPOOL": str(spool)}
    return subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture
def pipe_file(tmp_path) -> Path:
    path = tmp_path / "s3_pipeline.py"
    path.write_text(PIPELINE_FILE)
    return path


def test_worker_killed_mid_upload_then_rerun_gives_the_uninterrupted_corpus(
        shared, local_run, s3_bucket, s3_server, pipe_file, tmp_path):
    """The server holds the upload of a task's second shard (its first is already in the bucket, its
    marker is not); the test kills every worker process of the run while that PUT is in flight, and
    the upload never lands. The rerun must end with exactly the documents of the local run."""
    inputs = upload_warcs(shared, s3_bucket)
    out = f"{s3_bucket}/runs/killed"
    held, release = threading.Event(), threading.Event()
    second_shard = re.compile(rf"/{s3_bucket[5:]}/runs/killed/_work/stage0/(part-[0-9]+)-001\.parquet")
    stem: list[str] = []

    def hold(method: str, path: str, query: str) -> bool:
        m = second_shard.fullmatch(path)
        if method != "PUT" or not m or held.is_set():
            return False
        stem.append(m.group(1))
        held.set()
        release.wait(60)
        return True  # the upload fails: its client is dead

    s3_server.fault = hold
    proc = curate_run(pipe_file, inputs, out, tmp_path / "spool")
    try:
        deadline = time.monotonic() + 300
        while not held.wait(0.5) and proc.poll() is None and time.monotonic() < deadline:
            pass
        assert held.is_set(), f"the run never uploaded the shard the test waits for:\n{proc.communicate()[0]}"
        assert fs.exists(f"{out}/_work/stage0/{stem[0]}-000.parquet")  # the task is half-way through its commit
        assert not fs.exists(f"{out}/_done/stage0-{stem[0]}")
        import psutil

        workers = psutil.Process(proc.pid).children(recursive=True)
        assert workers
        for p in workers:
            p.send_signal(signal.SIGKILL)
    finally:
        release.set()
        log = proc.communicate(timeout=120)[0]
    assert proc.returncode == 1, log
    assert "task(s) failed" in log and not fs.exists(f"{out}/stats.json")
    s3_server.fault = None

    rerun = curate_run(pipe_file, inputs, out, tmp_path / "spool", workers=1)
    log = rerun.communicate(timeout=180)[0]
    assert rerun.returncode == 0, log
    assert corpus(out) == corpus(local_run) and corpus(out, "rejected") == corpus(local_run, "rejected")
    assert step_rows(out) == step_rows(local_run)
    assert sorted(fs.listdir(f"{out}/_work/stage0")) == sorted(os.listdir(Path(local_run, "_work", "stage0")))


def test_transient_503s_lose_and_duplicate_nothing(shared, local_run, s3_bucket, s3_server, pipe_file, tmp_path):
    """Every 3rd request of the run is answered 503 SlowDown (each request at most once, 15 in all):
    botocore's retries absorb them and the run equals the local one, no document lost or doubled."""
    inputs = upload_warcs(shared, s3_bucket)
    out = f"{s3_bucket}/runs/slow"
    failed: list[tuple[str, str, str]] = []
    seen = [0]
    lock = threading.Lock()

    def slow_down(method: str, path: str, query: str) -> bool:
        with lock:
            seen[0] += 1
            req = (method, path, query)
            if seen[0] % 3 or len(failed) >= 15 or req in failed:
                return False
            failed.append(req)
            return True

    s3_server.fault = slow_down
    proc = curate_run(pipe_file, inputs, out, tmp_path / "spool", workers=1)
    log = proc.communicate(timeout=180)[0]
    s3_server.fault = None
    assert proc.returncode == 0, log
    assert len(failed) == 15 and {m for m, _, _ in failed} >= {"GET", "PUT"}  # reads, uploads and listings
    assert corpus(out) == corpus(local_run) and corpus(out, "rejected") == corpus(local_run, "rejected")
    got = ids(out)
    assert len(got) == len(set(got)) == len(ids(local_run))
    assert step_rows(out) == step_rows(local_run)


def test_models_indexes_and_lists_at_s3_urls(shared, s3_bucket, s3_server, tmp_path, monkeypatch, capsys):
    """`models fetch --from s3://`, a language model, a decontamination index (built to s3:// from a
    benchmark at s3://), a block list and a quality model named by s3:// URLs: each is downloaded once
    into the local cache and gives what the same file on a local disk gives."""
    from curate import decontam, filters, quality
    from curate.decontam.index import IndexFormatError
    from curate.io import models

    monkeypatch.setenv("PENEIRA_CACHE", str(tmp_path / "cache"))
    s3 = fsspec.filesystem("s3")
    b = s3_bucket[5:]
    lid = shared / "models" / "lid.176.ftz"
    he = shared / "benchmarks" / "humaneval" / "HumanEval.jsonl.gz"
    s3.put_file(str(lid), f"{b}/models/lid.176.ftz")
    s3.put_file(str(he), f"{b}/bench/HumanEval.jsonl.gz")
    s3.pipe_file(f"{b}/lists/domains.txt", b"# blocked\nexample.org\n")

    assert cli(["models", "fetch", "lid", "--from", f"{s3_bucket}/models/lid.176.ftz"]) == 0
    assert "verified" in capsys.readouterr().out
    assert models.cached_path("lid").read_bytes() == lid.read_bytes()

    pages = [Document(id=str(i), text=t, source="web", url=u) for i, (t, u) in enumerate([
        ("The quick brown fox jumps over the lazy dog near the river bank every morning.", "https://a.com/1"),
        ("O rato roeu a roupa do rei de Roma e a rainha com raiva resolveu remendar.", "https://example.org/x"),
    ])]
    by_url = filters.Language(["en", "pt"], model_path=f"{s3_bucket}/models/lid.176.ftz")
    by_path = filters.Language(["en", "pt"], model_path=str(lid))
    start = len(s3_server.requests())
    by_url.setup()
    by_url.setup()  # a second worker on the same machine: the copy is reused, one HEAD to check its version
    gets = [p for m, p, _ in s3_server.requests()[start:] if m == "GET"]
    assert gets == [f"/{b}/models/lid.176.ftz"]  # downloaded once
    assert by_url.predict([d.text for d in pages]) == by_path.predict([d.text for d in pages])
    assert [r.text if isinstance(r, Document) else r.rule for r in by_url.apply_batch(pages)] == [
        r.text if isinstance(r, Document) else r.rule for r in by_path.apply_batch(pages)]

    blocked = filters.Url(blocked_domains=f"{s3_bucket}/lists/domains.txt")
    assert [isinstance(r, Document) for r in blocked.apply_batch(pages)] == [True, False]
    with pytest.raises(ValueError, match="must be an existing file"):
        filters.Url(blocked_domains=f"{s3_bucket}/lists/missing.txt")

    # the index built to s3:// from the benchmark at s3:// holds the arrays of the local build
    assert cli(["decontam", "index", "--benchmark", f"humaneval={s3_bucket}/bench/HumanEval.jsonl.gz",
                "--out", f"{s3_bucket}/index"]) == 0
    assert cli(["decontam", "index", "--benchmark", f"humaneval={he}", "--out", str(tmp_path / "index")]) == 0
    for name in ("hashes.npy", "items.npy", "items.json"):
        assert s3.cat_file(f"{b}/index/{name}") == (tmp_path / "index" / name).read_bytes(), name
    item = decontam.load_benchmark(str(he))[3].segments[0]  # HumanEval/3's prompt, planted in a page
    planted = Document(id="p", text=f"Some page text before the code.\n{item}\nand after it.", source="web")
    step = decontam.Decontaminate(f"{s3_bucket}/index", mode="drop")
    step.setup()
    got = step.apply_batch([planted, pages[0]])
    assert not isinstance(got[0], Document) and got[0].rule == "contaminated" and got[1] is pages[0]
    with pytest.raises(IndexFormatError, match="no decontamination index"):
        decontam.Decontaminate(f"{s3_bucket}/nowhere").setup()

    # a quality model at s3:// scores as the same file on disk does
    pos = [" ".join(f"good{j % 7} word{j}" for j in range(60)) for _ in range(20)]
    neg = [" ".join(f"bad{j % 5}" for j in range(20)) for _ in range(20)]
    for name, rows in (("pos", pos), ("neg", neg)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in rows))
    quality.train(str(tmp_path / "pos.jsonl"), str(tmp_path / "neg.jsonl"), str(tmp_path / "q.bin"),
                  quality.TrainConfig(holdout=0, bucket=1000, epoch=2))
    s3.put_file(str(tmp_path / "q.bin"), f"{b}/models/q.bin")
    texts = [pos[0], neg[0], "good0 word1 bad3"]
    by_url = quality.load_model(f"{s3_bucket}/models/q.bin")
    assert by_url.path != str(tmp_path / "q.bin") and by_url.score(texts).tolist() == quality.load_model(
        str(tmp_path / "q.bin")).score(texts).tolist()
    quality.Classifier(f"{s3_bucket}/models/q.bin", threshold=0.5).setup()
    with pytest.raises(ValueError, match="does not exist"):
        quality.load_model(f"{s3_bucket}/models/none.bin")


def run_cmd(*args: str, timeout: int = 240) -> str:
    """A command in a new process (curate, or python -m train), every path an s3:// URL; its output."""
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=dict(os.environ), capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{args[:3]} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_warc_to_token_shards_to_training_all_on_s3(shared, local_run, s3_server, pipe_file, tmp_path):
    """The demo flow with every input and output an s3:// URL: curate run (extraction, a filter, exact
    dedup) over WARC files in the bucket, mix, tokenizer train, tokenize, and three training steps
    that read the token shards from the bucket. The curated corpus is the local run's; the token
    shards decode back to exactly the mix's documents."""
    from tokenizers import Tokenizer

    from train.data import TokenDataset

    b = "s3://peneira-demo"  # a fixed name: document ids (hence the validation split) follow the input paths
    fsspec.filesystem("s3").mkdir(b[5:])
    inputs = upload_warcs(shared, b)
    curate = ("-m", "curate.cli.main")
    run_cmd(*curate, "run", str(pipe_file), "--input", inputs, "--output", f"{b}/curated", "--workers", "1",
            "--no-progress")
    assert corpus(f"{b}/curated") == corpus(local_run)
    run_cmd(*curate, "mix", "--source", f"web={b}/curated:1.0", "--tokens", "16K", "--max-epochs", "4", "--seed", "0",
            "--out", f"{b}/mix", "--workers", "1", "--no-progress")
    run_cmd(*curate, "tokenizer", "train", f"{b}/mix", "--vocab-size", "400", "--out", f"{b}/tokenizer.json")
    run_cmd(*curate, "tokenize", f"{b}/mix", "--tokenizer", f"{b}/tokenizer.json", "--val-fraction", "0.3",
            "--out", f"{b}/tokens", "--workers", "1", "--no-progress")

    # the shards hold the mix's documents, each encoded and followed by EOS (read through the loader's own
    # cache of the s3:// shards; decoded with the tokenizer read back from the bucket)
    with fs.open(f"{b}/tokenizer.json", "r", encoding="utf-8") as f:
        tok = Tokenizer.from_str(f.read())
    mix_texts = sorted(r["text"] for rows in corpus(f"{b}/mix").values() for r in rows)
    decoded = []
    for split in ("train", "val"):
        ds = TokenDataset(f"{b}/tokens", split)
        ids = ds.read(0, ds.num_tokens).tolist()
        docs, cur = [], []
        for t in ids:
            if t == ds.eos_id:
                docs.append(tok.decode(cur, skip_special_tokens=False))
                cur = []
            else:
                cur.append(t)
        assert cur == [] and len(docs) == ds.num_docs
        decoded += docs
    assert sorted(decoded) == mix_texts and len(mix_texts) > len(corpus(local_run))  # epochs: documents repeat

    run_dir = tmp_path / "train"
    run_cmd("-m", "train", "--config", "tiny", "--data", f"{b}/tokens", "--out", str(run_dir), "--steps", "3",
            "--seq_len", "32", "--batch_tokens", "256", "--micro_batch", "8", "--eval_every", "3", "--eval_batches", "1",
            "--warmup_steps", "1", "--ckpt_every", "0", "--device", "cpu", timeout=300)
    steps = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    train_steps = [s for s in steps if "loss" in s]
    assert train_steps and max(s["step"] for s in train_steps) == 3


def test_a_file_another_process_wrote_after_a_listing_is_seen(s3_bucket):
    """Existence and opening never answer from a listing taken before another process wrote (issue 22.1):
    s3fs caches `ls` results and its `info` (hence `open`, `exists`, `isfile`) trusts them."""
    d = f"{s3_bucket}/_done"
    fs.atomic_write_text(f"{d}/config.json", "{}")
    assert fs.listdir(d) == ["config.json"]
    other = fsspec.filesystem("s3", skip_instance_cache=True)  # another process's client
    other.pipe_file(f"{s3_bucket[5:]}/_done/part-00000.json", b'{"n": 1}')
    assert fs.exists(f"{d}/part-00000.json") and fs.isfile(f"{d}/part-00000.json")
    with fs.open(f"{d}/part-00000.json", "r", encoding="utf-8") as f:
        assert json.load(f) == {"n": 1}
    assert fs.size(f"{d}/part-00000.json") == 8
    other.rm_file(f"{s3_bucket[5:]}/_done/config.json")
    assert not fs.exists(f"{d}/config.json") and fs.listdir(d) == ["part-00000.json"]


def test_fresh_tokenize_to_s3_with_worker_processes(shared, s3_bucket, tmp_path):
    """`curate tokenize --out s3://…` with two worker processes: the driver listed `_done/` before the workers
    wrote their markers, and reads them after (failed every time with exit 2 before, issue 22.1)."""
    pt = str(shared / "text" / "pt" / "bosque_docs.jsonl")
    run_cmd("-m", "curate.cli.main", "tokenizer", "train", pt, "--vocab-size", "300", "--out", str(tmp_path / "t.json"))
    half = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    lines = Path(pt).read_text(encoding="utf-8").splitlines(keepends=True)
    half[0].write_text("".join(lines[::2]), encoding="utf-8")
    half[1].write_text("".join(lines[1::2]), encoding="utf-8")
    out = run_cmd("-m", "curate.cli.main", "tokenize", *map(str, half), "--tokenizer", str(tmp_path / "t.json"),
                  "--val-fraction", "0", "--out", f"{s3_bucket}/tokens", "--workers", "2", "--no-progress")
    assert f"train: {len(lines):,} documents" in out


def planted_jsonl(shared: Path, bucket: str, near: int = 4) -> tuple[str, list[str]]:
    """Bosque's documents in two JSONL files at `bucket/in/`, plus `near` planted near-duplicates (one word of a
    long document changed): the glob, and the planted ids MinHash must drop."""
    docs = [json.loads(line) for line in (shared / "text" / "pt" / "bosque_docs.jsonl").read_text("utf-8").splitlines()]
    longs = [d for d in docs if len(d["text"].split()) > 150][:near]
    planted = []
    for i, d in enumerate(longs):
        words = d["text"].split(" ")
        words[len(words) // 2] = "PLANTADA"
        planted.append({**d, "id": f"near-{i}", "text": " ".join(words)})
    rows = docs + planted
    s3 = fsspec.filesystem("s3")
    for k in range(2):
        s3.pipe_file(f"{bucket[5:]}/in/part-{k}.jsonl", "".join(json.dumps(d) + "\n" for d in rows[k::2]).encode())
    return f"{bucket}/in/*.jsonl", [d["id"] for d in planted]


def test_a_read_fault_on_decisions_is_an_error_not_no_duplicates(shared, s3_bucket, s3_server, monkeypatch, request):
    """Every read under MinHash's `clusters/` fails (issue 22.2): a GET has its connection closed mid-body, a HEAD
    gets a 500. The run fails with the fault, where it used to take the files for missing (fsspec's `isfile`
    answers False to any error), read no decisions and keep every duplicate. Without the fault, the rerun
    drops exactly the planted near-duplicates."""
    import s3fs
    from conftest import Fault

    from curate.run.executors.base import TaskFailures

    monkeypatch.setattr(fs, "TRIES", 2, raising=False)  # raising=False: main had no TRIES
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # no botocore retries of the 500s: the test is about what follows
    s3fs.S3FileSystem.clear_instance_cache()  # clients read the setting when they are made
    request.addfinalizer(s3fs.S3FileSystem.clear_instance_cache)
    inputs, near = planted_jsonl(shared, s3_bucket)
    out = f"{s3_bucket}/run"
    pipe = Pipeline(name="nd", reader=readers.Jsonl(source="pt"), steps=[dedup.MinHash(partitions=1)])
    cut = []

    def close_mid_body(method: str, path: str, query: str):
        if method in ("GET", "HEAD") and "/clusters/" in path:
            cut.append(path)
            return Fault("cut") if method == "GET" else Fault("status")
        return None

    s3_server.fault = close_mid_body
    with pytest.raises(TaskFailures, match="filter"):
        pipe.run(inputs, out, executor=LocalExecutor(1, progress=False))
    assert cut and not fs.exists(f"{out}/stats.json")
    s3_server.fault = None
    m = pipe.run(inputs, out, executor=LocalExecutor(1, progress=False))
    assert m["docs_read"] - m["docs_written"] == len(near)
    assert not set(near) & set(ids(out))
