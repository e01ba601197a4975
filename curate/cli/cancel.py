"""curate cancel OUT: stop a Slurm run (its driver and task arrays) and leave it resumable.

The waiting driver is told first (a `cancel` file in `_work/slurm` that it reads each poll: otherwise it
would resubmit the tasks scancel ended), then every job the run submitted is scancelled, the detached
driver's job too. Finished tasks keep their markers, and an attempt cut short left only temporary files,
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
    if jobs:
        p = subprocess.run(["scancel", *jobs], capture_output=True, text=True, check=False)
        if p.returncode != 0 and "Invalid job id" not in p.stderr and "already completing" not in p.stderr:
            raise UsageError(f"scancel failed: {p.stderr.strip()}")
    print(f"cancelled {len(jobs)} Slurm job(s) of {out}; rerun the same command to resume")
    return 0
