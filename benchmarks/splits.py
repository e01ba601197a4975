"""Within-file tasks (issue 30.2): one big JSONL and one big WARC split 1, 7 and 64 ways.

Generates the inputs from the real data in ../shared/data into a scratch folder (never the repository):
a JSONL of real records (CC web text, benchmark questions, prose) repeated to `--jsonl-mb`, each line with
its own `id`, and a `.warc.gz` made of the real WARC files' gzip members concatenated to `--warc-mb` (a
valid multi-member file; the copies differ by offset, so their ids differ). Then runs a pipeline over each
with `--tasks` 1, 7 and 64 on 1 and 2 local workers, checks that every run wrote the same documents (a
digest of (id, text) of every row, in shard-name order) and prints the wall times.

    .venv/bin/python benchmarks/splits.py --jsonl-mb 2048 --warc-mb 2048 --scratch /tmp/splits-bench
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from _data import DATA

from curate.io import readers
from curate.run.pipeline import Pipeline

JSONL_SOURCES = [  # (file, text field)
    (DATA / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz", "text"),
    (DATA / "benchmarks/llm_foundry_icl/boolq.jsonl", "context"),
    (DATA / "benchmarks/llm_foundry_icl/math.jsonl", "context"),
    (DATA / "benchmarks/gsm8k/test.jsonl", "question"),
    (DATA / "text/pt/bosque_docs.jsonl", "text"),
]
WARC_SOURCES = sorted((DATA / "warc").rglob("*.warc.gz"))


def make_jsonl(path: Path, mb: int) -> int:
    texts = []
    for src, key in JSONL_SOURCES:
        opener = gzip.open if src.suffix == ".gz" else open
        with opener(src, "rt", encoding="utf-8") as f:
            texts += [t for line in f if isinstance(t := json.loads(line).get(key), str) and t.strip()]
    target, n = mb << 20, 0
    with open(path, "w", encoding="utf-8") as out:
        while out.tell() < target:
            for t in texts:
                out.write(json.dumps({"id": f"doc{n}", "text": t}) + "\n")
                n += 1
    return n


def make_warc(path: Path, mb: int) -> None:
    blobs = [p.read_bytes() for p in WARC_SOURCES]
    target = mb << 20
    with open(path, "wb") as out:
        while out.tell() < target:
            for b in blobs:
                out.write(b)


def keep_long(doc):
    return len(doc.text) >= 200


def html_text(doc):
    doc.text = doc.html[:4000] if doc.html else ""
    return bool(doc.text)


def digest(out: Path) -> tuple[str, int]:
    h, rows = hashlib.blake2b(digest_size=16), 0
    for shard in sorted((out / "data").glob("*.parquet")):
        for batch in pq.ParquetFile(shard).iter_batches(columns=["id", "text"], batch_size=4096):
            for i, t in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
                h.update(i.encode() + b"\0" + t.encode() + b"\1")
                rows += 1
    return h.hexdigest(), rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl-mb", type=int, default=2048)
    ap.add_argument("--warc-mb", type=int, default=2048)
    ap.add_argument("--scratch", default="/tmp/splits-bench")
    ap.add_argument("--tasks", default="1,7,64")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--only", choices=["jsonl", "warc"], default=None, help="run one of the two inputs")
    args = ap.parse_args()
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    jsonl, warc = scratch / "big.jsonl", scratch / "big.warc.gz"
    if not jsonl.exists() or abs(jsonl.stat().st_size - (args.jsonl_mb << 20)) > 64 << 20:
        t = time.time()
        n = make_jsonl(jsonl, args.jsonl_mb)
        print(f"generated {jsonl}: {jsonl.stat().st_size / 2**20:.0f} MiB, {n} lines ({time.time() - t:.0f} s)", flush=True)
    if not warc.exists() or abs(warc.stat().st_size - (args.warc_mb << 20)) > 64 << 20:
        make_warc(warc, args.warc_mb)
        print(f"generated {warc}: {warc.stat().st_size / 2**20:.0f} MiB", flush=True)
    cases = [("jsonl", Pipeline(name="bench-jsonl", reader=readers.Jsonl(), steps=[keep_long]), jsonl),
             ("warc", Pipeline(name="bench-warc", reader=readers.FastWarc(), steps=[html_text]), warc)]
    rows = []
    for name, pipe, path in cases:
        if path.stat().st_size == 0 or args.only not in (None, name):
            continue
        ref = None
        for tasks in (int(x) for x in args.tasks.split(",")):
            for workers in (int(x) for x in args.workers.split(",")):
                if tasks == 1 and workers > 1:
                    continue  # one task: a second worker has nothing to do
                out = scratch / f"out-{name}-{tasks}-{workers}"
                shutil.rmtree(out, ignore_errors=True)
                t = time.time()
                m = pipe.run(inputs=[str(path)], output=str(out), workers=workers, progress=False,
                             tasks=None if tasks == 1 else tasks)
                wall = time.time() - t
                d = digest(out)
                ref = ref or d
                planned = m.get("split_plan", {}).get("tasks", 1)
                rows.append((name, tasks, planned, workers, wall, m["docs_read"], m["docs_written"], d == ref))
                print(f"{name:5} --tasks {tasks:3} ({planned:3} planned) workers {workers}: {wall:7.1f} s  "
                      f"read {m['docs_read']}  written {m['docs_written']}  identical {d == ref}", flush=True)
                shutil.rmtree(out, ignore_errors=True)
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
