"""Per-task scheduling overhead of the Slurm and Ray executors against the local process pool, for docs/benchmarks.md.

    .venv/bin/python -P benchmarks/slurm_overhead.py [--tasks 64] [--workers 2] [--executors local,ray,slurm]

Maps a no-op function over --tasks items on each executor and prints one JSON object: wall seconds and
seconds per task for the local pool (N workers; the pool's start included, as a run's first map pays it), for one
Slurm array of --tasks elements (at most N running: `--array=...%N`), and for a one-task map on Slurm (the latency
a phase with one task pays: sbatch, the scheduler, the task's Python start-up, the outcome file, the driver's
poll); for Ray (extra `ray`, a local cluster of N CPUs started by the executor), the first map (cluster start
included) and a second one on the running cluster. Slurm needs a running Slurm (scripts/slurm-setup.sh on one
machine); every figure is wall time, so run it on an idle machine. What a task's own process costs on Slurm
(start-up, imports, the outcome file) is measured in CPU seconds by `benchmarks/startup.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time

from curate.run.executors.local import LocalExecutor


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
    ap.add_argument("--executors", default="local,slurm", help="comma-separated: local, ray, slurm")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    n, w, chosen = args.tasks, args.workers, args.executors.split(",")
    out: dict = {"tasks": n, "workers": w}
    if "local" in chosen:
        with LocalExecutor(w, progress=False) as ex:  # its pool ended before Ray or Slurm start
            local = timed(ex, n)
        out |= {"local_s": round(local, 2), "local_ms_per_task": round(1000 * local / n, 1)}
    if "ray" in chosen:
        out |= ray_overhead(n, w)
    if "slurm" in chosen:
        out |= slurm_overhead(n, w)
    out["load_avg"] = os.getloadavg()
    print(json.dumps(out))


def ray_overhead(n: int, w: int) -> dict:
    """A first map that starts a local Ray cluster of `w` CPUs, then a map on the running cluster."""
    import ray

    from curate.run.executors.ray import RayExecutor

    ex = RayExecutor(workers=w, progress=False, num_cpus=w)
    try:
        first, warm = timed(ex, n), timed(ex, n)
    finally:
        ex.close()
        ray.shutdown()
    return {"ray": ray.__version__, "ray_first_map_s": round(first, 2), "ray_s": round(warm, 2),
            "ray_ms_per_task": round(1000 * warm / n, 1)}


def slurm_overhead(n: int, w: int) -> dict:
    from curate.run.executors.slurm import SlurmExecutor

    with tempfile.TemporaryDirectory(dir=os.getcwd()) as tmp:  # the work folder must be on a shared filesystem
        one = timed(SlurmExecutor(os.path.join(tmp, "one"), workers=w, progress=False), 1)
        slurm = timed(SlurmExecutor(os.path.join(tmp, "many"), workers=w, progress=False), n)
    version = subprocess.run(["sinfo", "-V"], capture_output=True, text=True, check=False).stdout.strip()
    return {"slurm": version, "slurm_s": round(slurm, 2), "slurm_ms_per_task": round(1000 * slurm / n, 1),
            "slurm_one_task_map_s": round(one, 2)}


if __name__ == "__main__":
    main()
