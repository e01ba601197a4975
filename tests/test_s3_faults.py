"""The whole flow on S3 under injected faults: exit non-zero (loudly, with the error) or the fault-free output,
never a silent difference.

The faults come from the S3 server's fault hook (tests/conftest.py), which sits in front of moto's S3
application on 127.0.0.1: every request the flow's processes send (driver and workers, through s3fs and
botocore, unchanged) may, by a seeded plan, be answered 500/503, have its body cut mid-way (the
connection closes after half the promised bytes), be delayed, or, for a listing, get the previous answer
to the same LIST (a stale listing). Some seeds also make one kind of request under one folder fail every
time (permanently). The flow is `curate run` (exact and MinHash dedup), `curate mix` and `curate tokenize`,
each in processes of its own with two workers; the reference is the same flow without faults, whose
MinHash step drops exactly the planted near-duplicates (an independent ground truth). A flow that failed
loudly is run again without faults: the resumed output must be the reference too.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

import fsspec
import pytest
from conftest import Fault

from curate.io import fs

ROOT = Path(__file__).resolve().parents[1]
PT = "text/pt/bosque_docs.jsonl"
SEEDS = [int(x) for x in os.environ.get("PENEIRA_FAULT_SEEDS", "1,2,3,4").split(",") if x]
NEAR, EXACT = 6, 4  # planted near-duplicates (one word changed) and exact copies

PIPELINE_FILE = """
from curate import Pipeline, dedup, readers, writers
pipeline = Pipeline(name="faults", reader=readers.Jsonl(source="pt"),
                    writer=writers.Parquet(row_group_docs=32, max_shard_chars=60_000),
                    steps=[dedup.Exact(), dedup.MinHash(partitions=1)])
"""


class FaultPlan:
    """A seeded plan of faults for the requests under one prefix of a bucket.

    Transient: each request fails with probability `rate`, at most twice for the same request (method,
    key, query), so the retries of s3fs, botocore and `fs.retrying` can get through. Permanent (odd seeds):
    one kind of request (read, write, listing, copy) under one folder fails every time.
    """

    takes_headers = True
    FOLDERS = ["clusters/", "_phases/", "_done/", "data/", "members/", "edges/", "tokens/"]

    def __init__(self, seed: int, prefix: str, rate: float = 0.06):
        self.rng = random.Random(seed)
        self.prefix, self.rate = prefix, rate
        self.lock = threading.Lock()
        self.injected: Counter = Counter()
        self.seen: Counter = Counter()
        self.permanent = None
        if seed % 2:
            self.permanent = (self.rng.choice(["read", "write", "list"]), self.rng.choice(self.FOLDERS))

    @staticmethod
    def kind(method: str, query: str, headers: dict) -> str:
        if method == "GET" and "list-type" in query:
            return "list"
        if method == "PUT" and "x-amz-copy-source" in headers:
            return "copy"
        if method in ("GET", "HEAD"):
            return "read"
        return "write" if method in ("PUT", "POST") else "delete"

    def __call__(self, method: str, path: str, query: str, headers: dict):
        where = unquote(path + "?" + query)
        if not (where.startswith(self.prefix) or f"prefix={self.prefix.split('/', 2)[2]}" in where):
            return None
        kind = self.kind(method, query, headers)
        with self.lock:
            if self.permanent and kind == self.permanent[0] and self.permanent[1] in where:
                self.injected[f"{kind}:permanent"] += 1
                return Fault("status", "500 Internal Server Error") if kind != "read" else Fault("cut")
            req = (method, path, query)
            if self.seen[req] >= 2 or self.rng.random() >= self.rate:
                return None
            self.seen[req] += 1
            choice = self.rng.choice({"read": ["cut", "500", "503", "delay"], "list": ["stale", "500", "503", "delay"],
                                      }.get(kind, ["500", "503", "delay"]))
            self.injected[f"{kind}:{choice}"] += 1
        if choice == "cut" and method == "HEAD":
            choice = "500"  # a HEAD has no body to cut
        return {"cut": Fault("cut"), "stale": Fault("stale"), "delay": Fault("delay", seconds=0.1),
                "500": Fault("status"), "503": True}[choice]


def corpus_inputs(shared: Path, bucket: str) -> tuple[str, list[str]]:
    """Bosque's 486 documents in three JSONL files, with planted exact copies and near-duplicates; the ids
    the reference must drop as near-duplicates (the planted copies, each one word off a long original)."""
    docs = [json.loads(line) for line in (shared / PT).read_text(encoding="utf-8").splitlines()]
    long_docs = [d for d in docs if len(d["text"].split()) > 150][: NEAR + EXACT]
    planted, near = [], []
    for i, d in enumerate(long_docs):
        words = d["text"].split(" ")
        if i < NEAR:
            words[len(words) // 2] = "PLANTADA"
            near.append(f"near-{i}")
        planted.append({**d, "id": f"near-{i}" if i < NEAR else f"copy-{i}", "text": " ".join(words)})
    allr = docs + planted
    s3 = fsspec.filesystem("s3")
    for k in range(3):
        s3.pipe_file(f"{bucket[5:]}/in/part-{k}.jsonl", "".join(json.dumps(d) + "\n" for d in allr[k::3]).encode())
    return f"{bucket}/in/*.jsonl", near


def flow(pipe: Path, inputs: str, out: str, tokenizer: Path, spool: Path) -> tuple[int, str]:
    """curate run, mix, tokenize into `out`, each a process of its own; (exit status, output) of the first that
    fails, or (0, outputs) when all pass."""
    base = [sys.executable, "-m", "curate.cli.main"]
    steps = [["run", str(pipe), "--input", inputs, "--output", f"{out}/run", "--workers", "1", "--no-progress"],
             ["mix", "--source", f"pt={out}/run:1.0", "--tokens", "60K", "--max-epochs", "2", "--seed", "0",
              "--out", f"{out}/mix", "--workers", "1", "--no-progress"],
             ["tokenize", f"{out}/mix", "--tokenizer", str(tokenizer), "--val-fraction", "0.1",
              "--out", f"{out}/tokens", "--workers", "2", "--no-progress"]]
    # fewer attempts than the defaults at each layer (botocore 2, fs.retrying 3, s3fs its own 5), so that a
    # permanent fault fails in seconds; a transient one (at most twice per request) still gets through
    env = {**os.environ, "PENEIRA_SPOOL": str(spool), "PENEIRA_IO_TRIES": "3", "AWS_MAX_ATTEMPTS": "2"}
    logs = []
    for args in steps:
        proc = subprocess.run([*base, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        logs.append(proc.stdout + proc.stderr)
        if proc.returncode:
            return proc.returncode, "\n".join(logs)
    return 0, "\n".join(logs)


def outcome_of(out: str) -> dict:
    """Everything the flow produced that a user reads: curated rows and step counts, mix rows, token shards."""
    def rows(d: str) -> dict:
        return {fs.basename(p): fs.read_table(p).to_pylist() for p in fs.glob(f"{d}/data/*.parquet")}

    stats = json.loads(fs.read_bytes(f"{out}/run/stats.json"))["steps"]
    tokens = {fs.basename(p): fs.read_bytes(p) for p in fs.glob(f"{out}/tokens/*") if not p.endswith("manifest.json")}
    manifest = json.loads(fs.read_bytes(f"{out}/tokens/manifest.json"))
    return {"run": rows(f"{out}/run"), "steps": [{k: v for k, v in s.items() if k not in ("seconds", "extra")}
                                                 for s in stats],
            "mix": rows(f"{out}/mix"), "tokens": tokens, "splits": manifest["splits"]}


@pytest.mark.slow
@pytest.mark.timeout(1200)  # seven flows: 336 s at a load average of 13 on 2 cores, the suite's 600 s is too close
def test_flow_under_injected_faults_fails_loudly_or_matches(shared, s3_bucket, s3_server, tmp_path):
    pipe = tmp_path / "faults.py"
    pipe.write_text(PIPELINE_FILE)
    inputs, near = corpus_inputs(shared, s3_bucket)

    tok = tmp_path / "tok.json"
    subprocess.run([sys.executable, "-m", "curate.cli.main", "tokenizer", "train", str(shared / PT), "--vocab-size",
                    "300", "--out", str(tok)], cwd=ROOT, check=True, capture_output=True)
    ref = f"{s3_bucket}/ref"
    rc, log = flow(pipe, inputs, ref, tok, tmp_path / "spool")
    assert rc == 0, log
    want = outcome_of(ref)
    minhash = next(s for s in want["steps"] if s["name"] == "minhash")
    exact = next(s for s in want["steps"] if s["name"] == "exact")
    assert exact["docs_in"] - exact["docs_out"] == EXACT and minhash["docs_in"] - minhash["docs_out"] == NEAR
    kept = {r["id"] for shard in want["run"].values() for r in shard}
    assert not kept & set(near) and len(kept) == 486  # the ground truth: exactly the planted copies dropped

    tally: Counter = Counter()
    faults: Counter = Counter()
    for seed in SEEDS:
        out = f"{s3_bucket}/s{seed}"
        plan = FaultPlan(seed, f"/{out[5:]}/")
        s3_server.fault = plan
        try:
            rc, log = flow(pipe, inputs, out, tok, tmp_path / "spool")
        finally:
            s3_server.fault = None
        faults.update(plan.injected)
        failed = rc != 0
        if failed:
            assert "error" in log.lower(), f"seed {seed}: exit {rc} without an error message:\n{log[-3000:]}"
            tally["failed loudly"] += 1
            rc, log = flow(pipe, inputs, out, tok, tmp_path / "spool")  # the fault gone, the same commands resume
            assert rc == 0, f"seed {seed}: the rerun without faults failed:\n{log[-3000:]}"
        got = outcome_of(out)
        diff = [k for k in want if got[k] != want[k]]
        if failed:
            tally["rerun identical" if not diff else "rerun differs"] += 1
        else:
            tally["identical" if not diff else "silent difference"] += 1
        assert not diff, f"seed {seed} (faults {dict(plan.injected)}, failed first: {failed}): {diff} differ"
    total = sum(faults.values())
    print(f"\nfault injection: {len(SEEDS)} runs, {total} faults injected ({dict(sorted(faults.items()))}); "
          f"identical {tally['identical']}, failed loudly {tally['failed loudly']} "
          f"(then identical on a fault-free rerun: {tally['rerun identical']}), "
          f"silent difference {tally['silent difference']}")
    assert total > 20 and tally["identical"] >= 1
