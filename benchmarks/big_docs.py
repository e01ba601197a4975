"""Big documents through a global step and a run's writer: every document kept, and peak RSS per phase (issue 29).

    nice .venv/bin/python benchmarks/big_docs.py --out /tmp/peneira-big-docs.json

Two cases, each on unique documents of random words (seeded: no two alike, so a brute-force reference
keeps all of them), read from one JSONL file, on a `LocalExecutor(--workers)`:

* `exact`: `--exact-docs` documents of `--exact-bytes` (9,000 x 150 KB) through `[dedup.Exact(), len > 0]`:
  the stage after the global step reads the shards the step wrote;
* `run`: `--run-docs` documents of `--run-bytes` (10,000 x 120 KB) through `[len > 0]` (one task: its writer
  holds what it has not written), then a second pipeline reads that run's shards (`readers.Parquet`).

Per phase (one `executor.map`: a stage, or a global step's phase), the peak RSS of the driver and of the
largest pool worker: a worker lives for one phase, and its VmHWM (/proc, sampled every 20 ms until it exits)
is its peak; the driver's VmHWM is reset at each phase (/proc/self/clear_refs). Every figure comes with
docs read, kept and every drop reason: `read:too_large` must be absent.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def write_docs(path: Path, n: int, size: int, seed: int) -> None:
    """`n` unique documents of `size` ASCII characters (random words from a 20,000-word vocabulary)."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{v:x}".encode() for v in rng.integers(0, 1 << 40, 20_000)])
    with open(path, "wb") as f:
        for i in range(n):
            text = b" ".join(vocab[rng.integers(0, len(vocab), size // 8)])[:size].decode()
            f.write(json.dumps({"id": f"doc{i:06d}", "text": text}).encode() + b"\n")


def _status(pid: int | str, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _grandchildren(root: int) -> list[int]:
    """Processes whose parent is a child of `root`: pool workers (children of the forkserver)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    children = {p for p, pp in parents.items() if pp == root}
    return [p for p, pp in parents.items() if pp in children]


class Meter:
    """Peak RSS per phase: the driver's (VmHWM, reset per phase) and each pool worker's (VmHWM, sampled)."""

    def __init__(self) -> None:
        self.phase = "setup"
        self.phases: dict[str, dict] = {}
        self.worker_phase: dict[int, str] = {}
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        me = os.getpid()
        while not self.stop.wait(0.02):
            for pid in _grandchildren(me):
                hwm = _status(pid, "VmHWM")
                if hwm is None:
                    continue
                with self.lock:
                    phase = self.worker_phase.setdefault(pid, self.phase)
                    rec = self.phases.setdefault(phase, {})
                    rec["worker_peak"] = max(rec.get("worker_peak", 0), hwm)

    def begin(self, phase: str) -> None:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets this process's VmHWM to its current RSS
        with self.lock:
            self.phase = phase
            self.phases.setdefault(phase, {})
        self.t0 = time.perf_counter()

    def end(self) -> None:
        time.sleep(0.05)  # a last sample of workers still exiting
        with self.lock:
            rec = self.phases[self.phase]
            rec["driver_peak"] = max(rec.get("driver_peak", 0), _status("self", "VmHWM") or 0)
            rec["seconds"] = round(rec.get("seconds", 0) + time.perf_counter() - self.t0, 1)

    def close(self) -> dict:
        self.stop.set()
        self.thread.join()
        return {p: {k: (round(v / 2**20) if k.endswith("peak") else v) for k, v in r.items()} | {"unit": "MiB"}
                for p, r in self.phases.items()}


def _executor(meter: Meter, workers: int, prefix: str):
    from curate.run.executors.local import LocalExecutor

    class Measured(LocalExecutor):
        def map(self, fn, items, desc="tasks", labels=()):
            meter.begin(f"{prefix}{desc}")
            try:
                return super().map(fn, items, desc=desc, labels=labels)
            finally:
                meter.end()

    return Measured(workers, progress=False)


def _summary(manifest: dict, out: Path) -> dict:
    stats = json.loads((out / "stats.json").read_text())["steps"]
    dropped: dict[str, int] = {}
    for s in stats:
        for k, v in s["dropped"].items():
            dropped[k] = dropped.get(k, 0) + v
    return {"docs_read": manifest["docs_read"], "docs_written": manifest["docs_written"], "dropped": dropped}


def nonempty(d) -> bool:
    return len(d.text) > 0


def case_exact(work: Path, n: int, size: int, workers: int) -> dict:
    from curate import Pipeline, dedup, readers

    src = work / "in.jsonl"
    write_docs(src, n, size, seed=1)
    meter = Meter()
    pipe = Pipeline(name="big-exact", reader=readers.Jsonl(source="web"), steps=[dedup.Exact(), nonempty])
    m = pipe.run([str(src)], str(work / "out"), executor=_executor(meter, workers, ""))
    return {"case": f"exact: {n} x {size} B through [dedup.Exact(), len > 0]", **_summary(m, work / "out"),
            "phases": meter.close()}


def case_run(work: Path, n: int, size: int, workers: int) -> dict:
    from curate import Pipeline, readers

    src = work / "in.jsonl"
    write_docs(src, n, size, seed=2)
    meter = Meter()
    first = Pipeline(name="big-run", reader=readers.Jsonl(source="web"), steps=[nonempty])
    m1 = first.run([str(src)], str(work / "run1"), executor=_executor(meter, workers, "run 1: "))
    shards = sorted(str(p) for p in (work / "run1" / "data").glob("*.parquet"))
    second = Pipeline(name="big-run-2", reader=readers.Parquet(), steps=[nonempty])
    m2 = second.run(shards, str(work / "run2"), executor=_executor(meter, workers, "run 2: "))
    import pyarrow.parquet as pq

    groups = [(md.row_group(g).num_rows, md.row_group(g).total_byte_size)
              for p in shards for md in [pq.ParquetFile(p).metadata] for g in range(md.num_row_groups)]
    return {"case": f"run: {n} x {size} B through [len > 0], its shards read by a second run",
            "run1": _summary(m1, work / "run1"), "run2": _summary(m2, work / "run2"),
            "row_groups": {"count": len(groups), "max_rows": max(r for r, _ in groups),
                           "max_mib": round(max(b for _, b in groups) / 2**20, 1)},
            "phases": meter.close()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="JSON file with every case's figures")
    ap.add_argument("--cases", nargs="+", default=["exact", "run"], choices=["exact", "run"])
    ap.add_argument("--exact-docs", type=int, default=9_000)
    ap.add_argument("--exact-bytes", type=int, default=150_000)
    ap.add_argument("--run-docs", type=int, default=10_000)
    ap.add_argument("--run-bytes", type=int, default=120_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--work", default=None, help="scratch folder (default: a temporary one, removed)")
    ap.add_argument("--one", choices=["exact", "run"], help=argparse.SUPPRESS)  # internal: one case, this process
    args = ap.parse_args()
    if args.one:
        work = Path(tempfile.mkdtemp(prefix=f"big-docs-{args.one}-", dir=args.work))
        try:
            if args.one == "exact":
                got = case_exact(work, args.exact_docs, args.exact_bytes, args.workers)
            else:
                got = case_run(work, args.run_docs, args.run_bytes, args.workers)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(json.dumps(got))
        return
    results = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                          f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB",
               "cases": []}
    for case in args.cases:
        cmd = [sys.executable, __file__, "--one", case, "--out", args.out, "--workers", str(args.workers),
               "--exact-docs", str(args.exact_docs), "--exact-bytes", str(args.exact_bytes),
               "--run-docs", str(args.run_docs), "--run-bytes", str(args.run_bytes)]
        if args.work:
            cmd += ["--work", args.work]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        got = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps(got, indent=1))
        results["cases"].append(got)
    Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
