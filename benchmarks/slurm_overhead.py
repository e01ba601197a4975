"""Per-task scheduling overhead of the Slurm and Ray executors against the local process pool, for docs/benchmarks.md.

    .venv/bin/python -P benchmarks/slurm_overhead.py [--tasks 64] [--workers 2] [--executors local,ray,slurm]
    .venv/bin/python -P benchmarks/slurm_overhead.py --executors local,slurm --per-element 1,8 --json benchmarks/slurm_overhead.json
    .venv/bin/python -P benchmarks/slurm_overhead.py --markdown benchmarks/slurm_overhead.json

Maps a no-op function over --tasks items on each executor and prints one JSON object: wall seconds and
seconds per task for the local pool (N workers; the pool's start included, as a run's first map pays it), for one
Slurm array of --tasks elements (at most N running: `--array=...%N`), and for a one-task map on Slurm (the latency
a phase with one task pays: sbatch, the scheduler, the task's Python start-up, the outcome file, the driver's
poll); for Ray (extra `ray`, a local cluster of N CPUs started by the executor), the first map (cluster start
included) and a second one on the running cluster. `--per-element 1,8` runs the Slurm array once per packing
(`SlurmExecutor(tasks_per_element=N)`: N tasks one after the other in each element's process), and beside it
Slurm's own cost: an array of as many elements running `true` (`sbatch --wrap true`, squeue polled every 0.1 s as
the executor's driver polls), so the figure
beyond Slurm's own is what the executor adds (a Python process, its imports, the outcome files, the driver's
polls) per task. Slurm needs a running Slurm (scripts/slurm-setup.sh on one
machine); every figure is wall time, so run it on an idle machine. What a task's own process costs on Slurm
(start-up, imports, the outcome file) is measured in CPU seconds by `benchmarks/startup.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    ap.add_argument("--per-element", default="1", help="comma-separated Slurm packings (tasks an array element runs)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--markdown", metavar="JSON", help="print the docs' table from a results file, run nothing")
    args = ap.parse_args()
    if args.markdown:
        with open(args.markdown) as f:
            print(markdown(json.load(f)))
        return
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
        out |= slurm_overhead(n, w, [int(x) for x in args.per_element.split(",")])
    out["load_avg"] = os.getloadavg()
    info = Path("/proc/cpuinfo").read_text().splitlines() if os.path.exists("/proc/cpuinfo") else []
    model = next((ln.split(":", 1)[1].strip() for ln in info if ln.startswith("model name")), "")
    out |= {"machine": f"{model}, {os.cpu_count()} cores", "command": " ".join(["benchmarks/slurm_overhead.py", *sys.argv[1:]])}
    print(json.dumps(out))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


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


def slurm_overhead(n: int, w: int, packings: list[int]) -> dict:
    from curate.run.executors.slurm import SlurmExecutor

    out: dict = {}
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as tmp:  # the work folder must be on a shared filesystem
        out["slurm_one_task_map_s"] = round(timed(SlurmExecutor(os.path.join(tmp, "one"), workers=w, progress=False), 1), 2)
        for per in packings:
            ex = SlurmExecutor(os.path.join(tmp, f"many{per}"), workers=w, progress=False, tasks_per_element=per)
            bare = slurm_alone(-(-n // per), w)  # Slurm's own: as many elements, each running `true`
            took = timed(ex, n)
            out[f"per_element_{per}"] = {"elements": -(-n // per), "slurm_s": round(took, 2),
                                         "slurm_ms_per_task": round(1000 * took / n, 1), "true_array_s": round(bare, 2),
                                         "beyond_slurm_ms_per_task": round(1000 * (took - bare) / n, 1)}
    version = subprocess.run(["sinfo", "-V"], capture_output=True, text=True, check=False).stdout.strip()
    return {"slurm": version, **out}


def slurm_alone(elements: int, w: int) -> float:
    """Wall seconds of an array of `elements` elements that run `true` (at most `w` at once), from sbatch to
    squeue showing every element ended, polled every 0.1 s (`sbatch --wait` polls at growing intervals, up to
    tens of seconds): Slurm's own cost, with no Python in the tasks."""
    from curate.run.executors.slurm import LIVE_STATES

    t = time.perf_counter()
    job = subprocess.run(["sbatch", "--parsable", f"--array=0-{elements - 1}%{w}", "--output=/dev/null", "--wrap", "true"],
                         check=True, capture_output=True, text=True).stdout.strip().split(";")[0]
    while True:
        states = subprocess.run(["squeue", "-h", "-r", "-t", "all", "-j", job, "-o", "%T"], capture_output=True,
                                text=True, check=False).stdout.split()
        if len(states) == elements and not set(states) & LIVE_STATES:
            return time.perf_counter() - t
        time.sleep(0.1)


def markdown(res: dict) -> str:
    """The docs' table from a results file (`--json`)."""
    rows = [f"Machine: {res['machine']}, load average {res['load_avg'][0]:.2f}; {res['slurm']}, one node. Command: "
            f"`.venv/bin/python -P {res['command']}` (wall seconds: Slurm's scheduling is in wall time).", "",
            "| executor | elements | wall s | ms per task | `true` array of as many elements, s | ms per task beyond "
            "Slurm's own |", "|---|---:|---:|---:|---:|---:|"]
    if "local_s" in res:
        rows.append(f"| local pool, {res['workers']} workers | | {res['local_s']:.2f} | {res['local_ms_per_task']:.1f} | | |")
    for key, r in res.items():
        if key.startswith("per_element_"):
            per = key.rsplit("_", 1)[1]
            rows.append(f"| Slurm, {per} task(s) an element | {r['elements']} | {r['slurm_s']:.2f} | "
                        f"{r['slurm_ms_per_task']:.1f} | {r['true_array_s']:.2f} | **{r['beyond_slurm_ms_per_task']:.1f}** |")
    rows.append(f"\n{res['tasks']} no-op tasks, at most {res['workers']} running; a one-task map on Slurm: "
                f"{res['slurm_one_task_map_s']:.2f} s.")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
