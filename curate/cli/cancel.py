"""curate cancel OUT: stop a Slurm run (its driver and task arrays) and leave it resumable.

The waiting driver is told first (a `cancel` file in `_work/slurm` that it reads each poll: otherwise it
would resubmit the tasks scancel ended; a driver still pending reads it when it starts and exits without
work), then every job the run submitted is scancelled, the detached driver's job too (recorded before it
could start: `slurm.submit_recorded`). The command returns once squeue shows none of them live, and says
which it stopped in which state. Finished tasks keep their markers, and an attempt cut short left only temporary files,
so the same command run again resumes. Runs on other executors are stopped where their command runs.
"""

from __future__ import annotations

import os
import subprocess
import time

from curate.core.errors import UsageError
from curate.io import fs


def add_parser(sub):
    p = sub.add_parser("cancel", help="stop a Slurm run (scancel its jobs); it stays resumable")
    p.add_argument("output", help="the run's output folder")
    p.add_argument("--slurm-work-dir", default=None, metavar="DIR", help="the run's --slurm-work-dir, if it had one")
    p.add_argument("--wait", type=float, default=120.0, metavar="S",
                   help="seconds to wait for Slurm to confirm that every job ended (default 120)")
    return p


def main(args) -> int:
    from curate.cli.status import job_ids
    from curate.run.executors.slurm import CANCEL_FILE

    out = args.output
    local = fs.local_path(out)
    work = os.path.join(local, "_work", "slurm") if local else None
    if args.slurm_work_dir:
        work = fs.local_path(args.slurm_work_dir)
    if work is None or not os.path.isdir(work):
        if not fs.isdir(out):
            raise UsageError(f"{out}: no such folder")
        print(f"{out} is not a Slurm run: stop its command where it runs (Ctrl-C or kill PID sends SIGTERM; "
              "Ray tasks stop with it); rerun the same command to resume")
        return 0
    fs.atomic_write_text(os.path.join(work, CANCEL_FILE), f"{time.time()}\n")
    jobs = sorted(job_ids(work), key=int)
    before = _live(jobs)
    if jobs:
        p = subprocess.run(["scancel", *jobs], capture_output=True, text=True, check=False)
        if p.returncode != 0 and "Invalid job id" not in p.stderr and "already completing" not in p.stderr:
            raise UsageError(f"scancel failed: {p.stderr.strip()}")
    left = _wait_ended(jobs, args.wait)
    if left:
        raise UsageError(f"scancel was sent, but after {args.wait:g} s Slurm still shows {_shown(left)} of {out}: "
                         "check squeue, then run curate cancel again")
    stopped = _shown(before) if before else "nothing: no job of it was pending or running"
    print(f"cancelled {out}: stopped {stopped} ({len(jobs)} Slurm job(s) recorded); rerun the same command "
          "to resume")
    return 0


def _live(jobs: list[str]) -> dict[str, str]:
    """The live array elements and jobs of `jobs` ("JOB" or "JOB_INDEX" -> state), as squeue shows them."""
    from curate.run.executors.slurm import LIVE_STATES, _states

    states = _states(jobs) if jobs else {}
    if states is None:
        raise UsageError("squeue cannot answer (the controller busy or down): nothing was cancelled; try again")
    return {k: v for k, v in states.items() if v in LIVE_STATES}


def _wait_ended(jobs: list[str], wait: float) -> dict[str, str]:
    """Poll squeue until none of `jobs` is live (the scheduler confirms the cancel) or `wait` s pass; what is left."""
    deadline = time.monotonic() + wait
    while True:
        left = _live(jobs)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def _shown(states: dict[str, str]) -> str:
    """"job 12 (pending), job 13: 2 tasks (1 running, 1 pending)": what was live, by job."""
    by_job: dict[str, list[str]] = {}
    for key, state in states.items():
        by_job.setdefault(key.split("_")[0], []).append(state.lower())
    parts = []
    for job, st in sorted(by_job.items(), key=lambda kv: int(kv[0])):
        counts = ", ".join(f"{st.count(x)} {x}" for x in sorted(set(st)))
        parts.append(f"job {job} ({st[0]})" if len(st) == 1 else f"job {job}: {len(st)} tasks ({counts})")
    return ", ".join(parts)
