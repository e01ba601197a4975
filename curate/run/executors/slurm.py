"""SlurmExecutor: the Executor interface on a Slurm cluster, each `map` a job array (`sbatch --array`).

Nothing about a task changes on Slurm: the task function writes its own outputs, stats and completion
marker, exactly as under LocalExecutor, so a run is resumable across executors and its outputs are the
same bytes. The driver (this process, on a login node or itself a job: `curate run --detach`) needs a
folder on the filesystem the nodes share, `work_dir`. Each `map` gets a batch folder there:

* `tasks.pkl`: the function and its items (cloudpickle), read by every array task;
* `task.sh`: the script sbatch runs: the user's set-up line (venv, `module load`), then
  `python -m curate.run.executors._slurm_task BATCH ELEMENT [PER]`: one array element runs PER items
  (`tasks_per_element`, default 1) in one process, so a short task does not pay a Python start, the imports and
  its stage's setup each (issue 45); a retry runs one item an element;
* `out/INDEX.pkl`: each task's outcome, written atomically by the task (`call_captured`'s shape plus
  whether an exception is worth retrying); `meta.json`: what the batch is and the job ids it submitted.

The driver polls `squeue -t all` (which keeps a finished job's state for the cluster's MinJobAge) and then
the outcome folder. A task that left Slurm's live states without an outcome died: killed (`scancel`,
`kill -9`), preempted, out of time or memory, or its node failed. It is resubmitted, up to `max_retries`
extra attempts per item; so is an exception, under the same rule as on Ray (`base.retryable`: never a
`StepFailed` or `UsageError`). Because outputs are committed by rename and markers written last, an attempt
run again from scratch cannot duplicate anything. Arrays longer than the cluster's MaxArraySize are split.

Every job id (arrays and a `--detach` driver) is appended to `work_dir/jobs.txt` before the job can start
(`submit_recorded`: submitted held, recorded, released), so `curate status` and `curate cancel` see it pending,
running or done; cancel also drops a `cancel` file that the waiting driver reads (it would otherwise resubmit
what was cancelled), and a driver that starts after it exits without work.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from curate.core.errors import Stopped, UsageError
from curate.io import fs
from curate.run.executors._slurm_task import element_items
from curate.run.executors.base import Executor, Progress

LIVE_STATES = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
               "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD"}
CANCEL_FILE = "cancel"  # dropped by `curate cancel`: the driver stops instead of resubmitting
JOBS_FILE = "jobs.txt"  # every job id this work folder submitted, one per line: what `curate cancel` stops
DEFAULT_MAX_ARRAY = 1001  # Slurm's own default MaxArraySize
DRIVER_JOB_NAME = "curate-driver"  # the job `--detach` submits
DRIVER_FILE = "driver.json"  # the detached driver's job id and submission time, written before it can start


class SlurmExecutor(Executor):
    """Runs each item as one element of a Slurm job array, retrying failures up to `max_retries` times.

    `workers` caps the array's concurrently running tasks (`--array=...%N`; 0: no cap, the cluster decides).
    `mem_per_task` is sbatch's `--mem` (e.g. "4G"), `time_limit` its `--time` (e.g. "2:00:00"); `setup` is a
    shell line each task runs first; `log_dir` (default `work_dir/logs`) gets one file per task named by
    stage and task. `sbatch_args` are passed as they are (e.g. `["--gres=gpu:1"]`).

    `tasks_per_element` packs that many items into each array element, run one after the other by one process:
    Slurm's own cost per element (scheduling, the job's start, a Python process and its imports, a stage's setup)
    is then paid once per `tasks_per_element` items. `time_limit` and `mem_per_task` are then an element's. Each
    item still writes its own outcome as it ends; items an element did not finish (killed, out of time) are
    resubmitted one an element, within `max_retries`.
    """

    def __init__(self, work_dir: str, workers: int = 0, progress: bool = True, partition: str | None = None,
                 time_limit: str | None = None, cpus_per_task: int = 1, mem_per_task: str | None = None,
                 account: str | None = None, qos: str | None = None, constraint: str | None = None,
                 sbatch_args: Sequence[str] = (), setup: str | None = None, log_dir: str | None = None,
                 max_retries: int = 3, retry_exceptions: bool | tuple = True, poll_s: float = 2.0,
                 python: str | None = None, job_name: str = "curate", tasks_per_element: int = 1):
        local = fs.local_path(work_dir)
        if local is None:
            raise UsageError(f"the Slurm work folder must be on a filesystem the nodes share, not a URL: {work_dir}")
        if workers < 0 or max_retries < 0 or cpus_per_task < 1 or tasks_per_element < 1:
            raise UsageError("workers and max_retries must be >= 0, cpus and tasks per task >= 1")
        self.work_dir = os.path.abspath(local)
        self.workers = workers
        self.progress = progress
        self.options = {"--partition": partition, "--time": time_limit, "--cpus-per-task": str(cpus_per_task),
                        "--mem": mem_per_task, "--account": account, "--qos": qos, "--constraint": constraint}
        self.sbatch_args = list(sbatch_args)
        self.setup = setup
        self.log_dir = os.path.abspath(log_dir) if log_dir else os.path.join(self.work_dir, "logs")
        self.max_retries = max_retries
        self.retry_exceptions = retry_exceptions
        self.poll_s = poll_s
        self.python = python or sys.executable
        self.job_name = job_name
        self.tasks_per_element = tasks_per_element
        self.started = time.time()  # a cancel file older than this driver is a past run's
        if os.environ.get("SLURM_JOB_NAME") == DRIVER_JOB_NAME:  # a detached driver: its run began at submission
            self.started = driver_submitted(self.work_dir) or self.started
            self._check_cancelled()  # cancelled while it was pending: it exits before any work (issue 42.3)
        self._max_array: int | None = None
        self._seq = 0

    def map(self, fn, items, desc="tasks", labels=(), resources=None):
        if not items:
            return []
        batch = _Batch(self, fn, items, desc, labels, self.placement(resources))
        bar = Progress(len(items), desc, self.progress)
        try:
            batch.submit(list(range(len(items))), self.tasks_per_element)
            wait = 0.1  # short tasks end in well under a second: poll fast, then back off to poll_s
            while not batch.finished():
                time.sleep(wait)
                self._check_cancelled()
                left = len(batch.in_flight)
                batch.poll(bar)
                wait = 0.1 if len(batch.in_flight) != left else min(self.poll_s, wait * 2)
        except BaseException:  # Ctrl-C, SIGTERM, a driver error: leave no array writing on the cluster
            batch.cancel()
            raise
        finally:
            bar.close()
        return self._collect(batch.outcomes, labels)

    def _check_cancelled(self) -> None:
        path = os.path.join(self.work_dir, CANCEL_FILE)
        try:
            if os.path.getmtime(path) >= self.started:
                raise Stopped(signal.SIGTERM)
        except FileNotFoundError:
            pass

    def max_array(self) -> int:
        """The cluster's MaxArraySize (array indices run 0 .. MaxArraySize-1), read once."""
        if self._max_array is None:
            text = _slurm(["scontrol", "show", "config"])
            m = re.search(r"^MaxArraySize\s*=\s*(\d+)", text, re.M)
            self._max_array = int(m.group(1)) if m else DEFAULT_MAX_ARRAY
        return self._max_array

    @staticmethod
    def placement(resources: dict[str, float] | None) -> list[str]:
        """The sbatch options a map's tasks need beyond the executor's own: `--gres=gpu:N` for tasks needing GPUs
        (Slurm then sets each task's CUDA_VISIBLE_DEVICES)."""
        gpus = (resources or {}).get("gpus")
        return [f"--gres=gpu:{int(-(-gpus // 1))}"] if gpus else []

    def sbatch_command(self, script: str, spec: str, offset: int, log: str, extra: Sequence[str] = (),
                       per: int = 1) -> list[str]:
        """The sbatch command line of one array (`per`: items an element runs)."""
        args = ["sbatch", "--parsable", f"--job-name={self.job_name}", f"--array={spec}",
                f"--output={log}", f"--error={log}"]
        args += [f"{k}={v}" for k, v in self.options.items() if v]
        return args + list(extra) + self.sbatch_args + [script, str(offset)] + ([str(per)] if per > 1 else [])

    def sbatch(self, script: str, spec: str, offset: int, log: str, extra: Sequence[str] = (), per: int = 1) -> str:
        """Submit one array, recorded before it can start (`submit_recorded`); its job id."""
        return submit_recorded(self.sbatch_command(script, spec, offset, log, extra, per), self.work_dir)

    def announce(self, bar: Progress, label: str, attempt: int, error: str) -> None:
        bar.bar.write(f"retrying {label} (attempt {attempt} of {self.max_retries + 1} failed: {error})", file=sys.stderr)


class _Batch:
    """One `map`: its folder, submissions, and each item's attempts and outcome."""

    def __init__(self, ex: SlurmExecutor, fn, items: Sequence[Any], desc: str, labels: Sequence[str],
                 placement: Sequence[str] = ()):
        import cloudpickle

        self.ex, self.n, self.labels, self.placement = ex, len(items), labels, list(placement)
        ex._seq += 1
        self.slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", desc).strip("-")[:60] or "tasks"
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{ex._seq:03d}-{self.slug}"
        self.dir = os.path.join(ex.work_dir, "batches", name)
        os.makedirs(os.path.join(self.dir, "out"), exist_ok=True)
        os.makedirs(ex.log_dir, exist_ok=True)
        with fs.atomic_open(os.path.join(self.dir, "tasks.pkl"), "wb", fsync=True) as f:
            f.write(cloudpickle.dumps((fn, list(items), ex.retry_exceptions)))
        self.script = os.path.join(self.dir, "task.sh")
        fs.atomic_write_text(self.script, _script(ex.setup, ex.python, self.dir))
        os.chmod(self.script, 0o755)
        if os.environ.get("SLURM_JOB_NAME") == DRIVER_JOB_NAME:  # recorded at submission; again, in case
            record_job(ex.work_dir, os.environ.get("SLURM_JOB_ID", ""))  # --overwrite cleared the record since
        self.outcomes: list[Any] = [None] * self.n
        self.attempts = [0] * self.n
        self.in_flight: dict[int, str] = {}  # item -> job id of its current attempt
        self.jobs: dict[str, tuple[int, int]] = {}  # job id -> (array offset, items per element)
        self.missing: set[int] = set()  # in flight, gone from squeue without an outcome at the last poll
        self._meta()

    def _meta(self) -> None:
        meta = {"desc": self.slug, "tasks": self.n, "jobs": list(self.jobs), "labels": list(self.labels)[:self.n]}
        fs.atomic_write_text(os.path.join(self.dir, "meta.json"), json.dumps(meta))

    def submit(self, indices: list[int], per: int = 1) -> None:
        """Submit `indices` as arrays, `per` items an element (per > 1: all the items, as element i runs items
        i*per .. i*per+per-1); arrays longer than the cluster's MaxArraySize are split."""
        per = min(per, len(indices)) or 1
        if per > 1 and indices != list(range(self.n)):
            raise ValueError("items are packed into elements only on their first submission, all of them")
        elements = sorted({i // per for i in indices})
        step = self.ex.max_array()
        cap = f"%{self.ex.workers}" if self.ex.workers else ""
        for offset in sorted({e // step * step for e in elements}):
            part = [e - offset for e in elements if offset <= e < offset + step]
            log = os.path.join(self.ex.log_dir, f"{self.slug}-{'' if not offset else f'o{offset}-'}%A_%a.log")
            job = self.ex.sbatch(self.script, _ranges(part) + cap, offset, log, self.placement, per)
            self.jobs[job] = (offset, per)
            for e in part:
                for i in element_items(e + offset, per, self.n):
                    self.attempts[i] += 1
                    self.in_flight[i] = job
        self._meta()

    def _element(self, job: str, i: int) -> int:
        """The array index of item `i` in array `job`."""
        offset, per = self.jobs[job]
        return i // per - offset

    def finished(self) -> bool:
        return not self.in_flight

    def poll(self, bar: Progress) -> None:
        """squeue first, then the outcome folder: a task absent from squeue's live states ended before the
        listing, so its outcome (written before it exited) is seen if it wrote one."""
        states = _states(list(self.jobs))
        retry: list[int] = []
        for name in os.listdir(os.path.join(self.dir, "out")):
            i = int(name[:-4]) if name.endswith(".pkl") and name[:-4].isdigit() else None
            if i is None or i not in self.in_flight:
                continue
            self._settle(i, self._read(i), bar, retry)
        if states is not None:
            for i, job in list(self.in_flight.items()):
                state = states.get(f"{job}_{self._element(job, i)}", "ENDED")
                if state in LIVE_STATES:
                    self.missing.discard(i)
                elif i not in self.missing:  # once more: a shared filesystem may show the outcome late
                    self.missing.add(i)
                else:
                    self.missing.discard(i)
                    error = f"the task ended without an outcome (Slurm state {state}){self._log_tail(job, i)}"
                    self._settle(i, (False, (error, ""), True), bar, retry)
        if retry:
            self.submit(retry)

    def _read(self, i: int) -> tuple[bool, Any, bool]:
        import pickle

        path = os.path.join(self.dir, "out", f"{i}.pkl")
        try:
            with open(path, "rb") as f:
                outcome = pickle.load(f)
        except (EOFError, pickle.UnpicklingError, ValueError, AttributeError, ImportError) as e:
            # written atomically, so a damaged one is the disk's doing: the task runs again, within the budget
            outcome = (False, (f"its outcome file {path} cannot be read ({type(e).__name__}: {e})", ""), True)
        os.remove(path)  # a retry's outcome lands at the same name
        return outcome

    def _settle(self, i: int, outcome: tuple[bool, Any, bool], bar: Progress, retry: list[int]) -> None:
        ok, out, again = outcome
        del self.in_flight[i]
        self.missing.discard(i)
        label = self.labels[i] if i < len(self.labels) else f"task {i}"
        if ok:
            self.outcomes[i] = (True, out)
            bar.done(out)
        elif again and self.attempts[i] <= self.ex.max_retries:
            self.ex.announce(bar, label, self.attempts[i], out[0])
            retry.append(i)
        else:
            tries = f" (after {self.attempts[i]} attempts)" if self.attempts[i] > 1 else ""
            self.outcomes[i] = (False, (out[0] + tries, *out[1:]))
            bar.done(None)

    def _log_tail(self, job: str, i: int) -> str:
        offset = self.jobs[job][0]
        log = os.path.join(self.ex.log_dir, f"{self.slug}-{'' if not offset else f'o{offset}-'}{job}_{self._element(job, i)}.log")
        try:
            with open(log, encoding="utf-8", errors="replace") as f:
                lines = [x.rstrip() for x in f.readlines()[-3:] if x.strip()]
        except OSError:
            return f"; log {log} absent"
        return f"; log {log}" + (": " + " | ".join(lines) if lines else "")

    def cancel(self) -> None:
        if self.jobs:
            subprocess.run(["scancel", *self.jobs], capture_output=True, check=False)


def submit_recorded(args: list[str], work_dir: str, driver: bool = False) -> str:
    """Submit `args` (an `sbatch --parsable …` command line) so that its job id is in `work_dir/jobs.txt` before
    the job can start (issue 42.3): submitted held (`--hold`), recorded (and, for a `--detach` driver, its
    submission time in `driver.json`), then released (`scontrol release`). A job that cannot be recorded is
    scancelled, never left to run unseen by `curate status` and `curate cancel`. Returns the job id."""
    job = _slurm([*args[:2], "--hold", *args[2:]]).strip().split(";")[0]  # --parsable: "id" or "id;cluster"
    if not job.isdigit():
        raise RuntimeError(f"sbatch answered {job!r}, not a job id")
    try:
        os.makedirs(work_dir, exist_ok=True)
        record_job(work_dir, job)
        if driver:
            fs.atomic_write_text(os.path.join(work_dir, DRIVER_FILE), json.dumps({"job": job, "submitted": time.time()}))
        _slurm(["scontrol", "release", job])
    except BaseException:  # not recorded, or held for good: never left in the queue
        subprocess.run(["scancel", job], capture_output=True, check=False)
        raise
    return job


def record_job(work_dir: str, job: str) -> None:
    """Append a job id to `jobs.txt`, flushed to disk before the job is released."""
    with open(os.path.join(work_dir, JOBS_FILE), "a", encoding="utf-8") as f:
        f.write(job + "\n")
        f.flush()
        os.fsync(f.fileno())


def driver_submitted(work_dir: str) -> float | None:
    """When this process's own detached driver job was submitted (`driver.json`), None if it is not recorded."""
    try:
        with open(os.path.join(work_dir, DRIVER_FILE), encoding="utf-8") as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or str(rec.get("job")) != os.environ.get("SLURM_JOB_ID"):
        return None
    return float(rec["submitted"])


def _script(setup: str | None, python: str, batch: str) -> str:
    """The array task: the set-up line, then this module's task runner for element OFFSET + SLURM_ARRAY_TASK_ID,
    of PER items (the script's second argument, default 1)."""
    import shlex

    return "\n".join([
        "#!/bin/bash",
        setup or "",
        'export RAYON_NUM_THREADS="${RAYON_NUM_THREADS:-${SLURM_CPUS_PER_TASK:-1}}"',
        'export POLARS_MAX_THREADS="${POLARS_MAX_THREADS:-${SLURM_CPUS_PER_TASK:-1}}"',
        f'exec {shlex.quote(python)} -m curate.run.executors._slurm_task {shlex.quote(batch)} '
        '"$(( $1 + SLURM_ARRAY_TASK_ID ))" "${2:-1}"',
        "",
    ])


def _ranges(indices: list[int]) -> str:
    """sbatch's array spec for sorted indices: "0-4,7,9-12"."""
    out, start, prev = [], None, None
    for i in sorted(indices):
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}-{prev}" if prev > start else str(start))
            start = prev = i
    out.append(f"{start}-{prev}" if prev > start else str(start))
    return ",".join(out)


def _states(jobs: list[str]) -> dict[str, str] | None:
    """Each array element's state ("JOB_INDEX" -> "RUNNING", "CANCELLED", …), ended ones while slurmctld keeps
    them; None when squeue cannot answer (the controller busy): nothing is decided on that poll."""
    try:
        # the user's jobs, not `-j IDS`: squeue refuses the whole query once one id has been purged
        text = _slurm(["squeue", "-h", "-r", "-t", "all", "-u", str(os.getuid()), "-o", "%i %T"])
    except RuntimeError:
        return None
    wanted, states = set(jobs), {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].split("_")[0] in wanted:
            states[parts[0]] = parts[1]
    return states


def _slurm(args: list[str], tries: int = 3) -> str:
    """Run a Slurm client command; a busy controller is retried a few times, then one clear error."""
    for attempt in range(tries):
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
        except FileNotFoundError:
            raise UsageError(f"{args[0]} not found: --executor slurm runs where Slurm's client commands are "
                             "installed (a login node); scripts/slurm-setup.sh sets up a one-node cluster") from None
        except subprocess.TimeoutExpired:
            p = None
        if p is not None and p.returncode == 0:
            return p.stdout
        if attempt + 1 < tries:
            time.sleep(2 * (attempt + 1))
    err = (p.stderr.strip() if p is not None else "timed out") or f"exit status {p.returncode}"
    raise RuntimeError(f"{' '.join(args[:2])}: {err}")
