"""Per-task scheduling overhead of the Slurm executor against the local process pool, for docs/benchmarks.md.

    .venv/bin/python -P benchmarks/slurm_overhead.py [--tasks 64] [--workers 2]

Maps a no-op function over --tasks items on each executor and prints one JSON object: wall seconds and
seconds per task for the local pool (N workers), for one Slurm array of --tasks elements (at most N running:
`--array=...%N`), and for a one-task map on Slurm (the latency a phase with one task pays: sbatch, the
scheduler, the task's Python start-up, the outcome file, the driver's poll). Needs a running Slurm
(scripts/slurm-setup.sh on one machine); every figure is wall time, so run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time

from curate.run.executors.local import LocalExecutor
from curate.run.executors.slurm import SlurmExecutor


def noop(i: int) -> int:
    return i


def timed(ex, n: int) -> float:
    t = time.perf_counter()
    assert ex.map(noop, list(range(n))) == list(range(n))
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    n, w = args.tasks, args.workers
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as tmp:  # the work folder must be on a shared filesystem
        local = timed(LocalExecutor(w, progress=False), n)
        one = timed(SlurmExecutor(os.path.join(tmp, "one"), workers=w, progress=False), 1)
        slurm = timed(SlurmExecutor(os.path.join(tmp, "many"), workers=w, progress=False), n)
    version = subprocess.run(["sinfo", "-V"], capture_output=True, text=True, check=False).stdout.strip()
    print(json.dumps({
        "tasks": n, "workers": w, "slurm": version, "load_avg": os.getloadavg(),
        "local_s": round(local, 2), "local_ms_per_task": round(1000 * local / n, 1),
        "slurm_s": round(slurm, 2), "slurm_ms_per_task": round(1000 * slurm / n, 1),
        "slurm_one_task_map_s": round(one, 2),
    }))


if __name__ == "__main__":
    main()
