"""curate status OUT: a run's progress read from its output folder alone, whatever executor runs it.

Everything shown is what the run itself leaves there (docs/data-contract.md): `_done/` markers (one per
finished task), `stats/*.json` (each finished task's counts), `manifest.json` (written last), the output lock
(`curate.io.outputs`) and, for a Slurm run, `_work/slurm/` (its batches and job ids, checked with squeue).
Nothing is written, so it is safe while the run goes on.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict

from curate.core.errors import UsageError
from curate.core.shown import for_terminal
from curate.io import fs


def add_parser(sub):
    p = sub.add_parser("status", help="a run's progress from its output folder (any executor)")
    p.add_argument("output", help="the run's output folder")
    p.add_argument("--slurm-work-dir", default=None, metavar="DIR",
                   help="the run's --slurm-work-dir, if it had one (its Slurm jobs are shown from there)")
    return p


def main(args) -> int:
    out = args.output
    if not fs.isdir(out):
        raise UsageError(f"{out}: no such folder")
    for line in status_lines(out, args.slurm_work_dir):
        print(for_terminal(line, lines=False))  # names of folders, phases and the lock's holder come from disk
    return 0


def status_lines(out: str, slurm_work_dir: str | None = None) -> list[str]:
    names = set(fs.listdir(out))
    lines = [f"{out}: {state_text(out, names)}"]
    inputs = _inputs(out)
    done = fs.listdir(fs.join(out, "_done")) if "_done" in names else []
    by_stage: dict[int, list[str]] = defaultdict(list)
    for tag in done:
        m = re.match(r"stage(\d+)-", tag)
        if m:
            by_stage[int(m.group(1))].append(tag)
    for k in sorted(by_stage):
        tags = by_stage[k]
        if tags == [f"stage{k}-global"]:
            lines.append(f"  stage {k}: global step done")
            continue
        total = f" of {inputs}" if k == 0 and inputs is not None else ""
        read, kept = _docs(out, tags)
        lines.append(f"  stage {k}: {len(tags):,}{total} task(s) done, {read:,} documents read, {kept:,} kept")
    lines += _global_phases(out, names, by_stage)
    if not by_stage and "manifest.json" not in names:
        lines.append("  no task has finished yet" + (f" ({inputs} task(s) planned)" if inputs is not None else ""))
    slurm = slurm_work_dir or fs.join(out, "_work", "slurm")
    if fs.local_path(slurm) and os.path.isdir(fs.local_path(slurm)):
        lines.append("  " + slurm_text(fs.local_path(slurm)))
    return lines


def state_text(out: str, names: set[str]) -> str:
    if "manifest.json" in names:
        with fs.open(fs.join(out, "manifest.json"), "r", encoding="utf-8") as f:
            m = json.load(f)
        written = m.get("docs_written")
        docs = f": {written:,} documents in {len(m.get('outputs', []))} shard(s)" if isinstance(written, int) else ""
        return f"finished{docs}"
    holder = lock_holder(out)
    if holder:
        return f"running (held by {holder})"
    if "_done" in names or "_work" in names:
        return "not finished and no command holds it (stopped or killed): rerun the same command to resume"
    return "no run has started here"


def lock_holder(out: str) -> str | None:
    """Who holds the output's lock now, or None. Local folders: a shared flock probe (it never blocks and is
    dropped at once); object stores: the lease's holder while it has not expired."""
    from curate.io.outputs import LOCK_NAME, _holder_text

    local = fs.local_path(out)
    if local is None:
        return None  # leases: left to the command that would take them
    import fcntl

    try:
        fd = os.open(os.path.join(local, LOCK_NAME), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
            except (OSError, ValueError):
                info = {}
            return _holder_text(info)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None  # a file a killed command left: nobody holds it
    finally:
        os.close(fd)


def _global_phases(out: str, names: set[str], by_stage: dict[int, list[str]]) -> list[str]:
    """A global step under way: the tasks each of its phases has finished (its `_phases/PHASE/` markers)."""
    if "_work" not in names:
        return []
    lines = []
    for name in sorted(fs.listdir(fs.join(out, "_work"))):
        m = re.fullmatch(r"global(\d+)", name)
        if not m or f"stage{m.group(1)}-global" in by_stage.get(int(m.group(1)), []):
            continue
        root = fs.join(out, "_work", name, "_phases")
        phases = sorted(fs.listdir(root)) if fs.isdir(root) else []
        done = ", ".join(f"{p} {len(fs.listdir(fs.join(root, p)))}" for p in phases) or "none yet"
        lines.append(f"  stage {m.group(1)}: global step under way; tasks done per phase: {done}")
    return lines


def _inputs(out: str) -> int | None:
    """The first stage's tasks in the units the plan made: its byte ranges where it cut files (`split_plan`,
    issue 42.4: a split run said "6 of 2 task(s) done", ranges against files), else one task per input."""
    try:
        with fs.open(fs.join(out, "_work", "config.json"), "r", encoding="utf-8") as f:
            config = json.load(f)
        plan, inputs = config.get("split_plan"), config.get("inputs")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(plan, dict) and isinstance(plan.get("tasks"), int):
        return plan["tasks"]
    return len(inputs) if isinstance(inputs, list) else None


def _docs(out: str, tags: list[str]) -> tuple[int, int]:
    """Documents read (the first step's input) and kept (the last step's output) by these finished tasks."""
    read = kept = 0
    for tag in tags:
        try:
            with fs.open(fs.join(out, "stats", f"{tag}.json"), "r", encoding="utf-8") as f:
                steps = json.load(f)["steps"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a task whose stats cannot be read runs again on resume (pipeline._done_records)
        if steps:
            read += int(steps[0].get("docs_in", 0))
            kept += int(steps[-1].get("docs_out", 0))
    return read, kept


def slurm_text(work: str) -> str:
    """The Slurm jobs of this run by state (squeue keeps ended ones for the cluster's MinJobAge)."""
    import subprocess

    jobs = job_ids(work)
    if not jobs:
        return "slurm: no job submitted yet"
    try:
        p = subprocess.run(["squeue", "-h", "-r", "-t", "all", "-u", str(os.getuid()), "-o", "%i %T"],
                           capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"slurm: {len(jobs)} job(s) submitted; squeue cannot answer ({e})"
    counts: dict[str, int] = defaultdict(int)
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].split("_")[0] in jobs:
            counts[parts[1]] += 1
    shown = ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items())) or "none known to squeue now"
    failed = sum(n for s, n in counts.items() if s not in {"RUNNING", "PENDING", "COMPLETED", "COMPLETING"})
    note = f" ({failed} ended without success: retried by the driver while it runs)" if failed else ""
    return f"slurm: {len(jobs)} job(s) submitted; tasks: {shown}{note}"


def job_ids(work: str) -> set[str]:
    from curate.run.executors.slurm import JOBS_FILE

    try:
        with open(os.path.join(work, JOBS_FILE), encoding="utf-8") as f:
            return {line.strip() for line in f if line.strip().isdigit()}
    except FileNotFoundError:
        return set()
