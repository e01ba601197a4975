"""The driver's peak memory as the corpus grows, when a phase has one task (issue 22.16).

    nice .venv/bin/python benchmarks/driver_rss.py --copies 1 4 16 --out /tmp/peneira-driver-rss.jsonl

Each size is `--copies` copies of Bosque's 486 Portuguese documents (../shared/data/text/pt, 274 KB; every
copy an exact duplicate under another id, so MinHash's clusters hold every document), dealt into four files, run through
`dedup.MinHash(partitions=1)` on a `LocalExecutor(2)` in a fresh process: with one hash partition the
`components`, `keep` and `members` phases have one task each. The figure is that process's own peak RSS
(`ru_maxrss` of RUSAGE_SELF: the driver, not its pool workers), one JSON line per size in `--out`.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOSQUE = ROOT.parent / "shared" / "data" / "text" / "pt" / "bosque_docs.jsonl"


def one(copies: int, work: Path) -> dict:
    from curate import Pipeline, dedup, readers
    from curate.run.executors.local import LocalExecutor

    docs = [json.loads(line) for line in BOSQUE.read_text(encoding="utf-8").splitlines()]
    inputs = [str(work / f"in-{k}.jsonl") for k in range(4)]  # four files at every size: four tasks per shard phase
    files = [open(p, "w", encoding="utf-8") for p in inputs]  # noqa: SIM115 (closed below)
    for c in range(copies):
        for i, d in enumerate(docs):
            files[i % 4].write(json.dumps({"id": f"{d['id']}-c{c}", "text": d["text"]}) + "\n")
    for f in files:
        f.close()
    pipe = Pipeline(name="rss", reader=readers.Jsonl(source="pt"), steps=[dedup.MinHash(partitions=1)])
    m = pipe.run(inputs, str(work / "out"), executor=LocalExecutor(2, progress=False))
    return {"copies": copies, "docs_read": m["docs_read"], "docs_written": m["docs_written"],
            "driver_peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--out", required=True, help="JSON lines, one per size (appended)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size in this process
    args = ap.parse_args()
    if args.one:
        with tempfile.TemporaryDirectory() as work:
            print(json.dumps(one(args.one, Path(work))))
        return
    for copies in args.copies:
        got = subprocess.run([sys.executable, __file__, "--one", str(copies), "--out", args.out], cwd=ROOT,
                             check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        print(got)
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(got + "\n")


if __name__ == "__main__":
    main()
