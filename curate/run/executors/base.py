"""The executor interface: `map` a module-level function over picklable items, results in item order.

A new engine only has to say how to run tasks, never what a task does. Failures are collected, not
raised mid-run: every other task still finishes (and is marked done), then `TaskFailures` says
which failed and why.
"""

from __future__ import annotations

import errno
import inspect
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class TaskError:
    label: str
    error: str  # the exception's type and message
    detail: str  # the traceback
    cause: BaseException | None = None  # the exception itself when the CLI words it (`portable_cause`), else None

    def __str__(self) -> str:
        return f"{self.label}: {self.error}"


class TaskFailures(RuntimeError):
    def __init__(self, errors: list[TaskError], total: int):
        self.errors = errors
        lines = [f"{len(errors)} of {total} task(s) failed:"] + [f"  {e}" for e in errors[:10]]
        if len(errors) > 10:
            lines.append(f"  … and {len(errors) - 10} more")
        lines.append(f"first traceback:\n{errors[0].detail}")
        super().__init__("\n".join(lines))

    @property
    def causes(self) -> list[BaseException | None]:
        """Each failed task's exception where it is one the CLI words (`portable_cause`), else None."""
        return [e.cause for e in self.errors]


# A task calls it with the documents it just read and, from a reader that fetches (Common Crawl), the bytes
# fetched and the retries since its last call: `progress(docs, fetched=0, retries=0)`.
ProgressFn = Callable[..., None]
LIVE_FIGURES = ("docs", "fetched", "retries")  # what a live counter carries, in this order
READ_FIGURES = {"fetched": "read:bytes_fetched", "retries": "read:retries"}  # where a finished task's stats hold them


def accepts_progress(fn: Callable[..., Any]) -> bool:
    """Whether a task function declares a `progress` keyword: executors then pass it a live document counter."""
    try:
        return "progress" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins and some C callables have no signature
        return False


def call_captured(fn: Callable[..., Any], item: Any, progress: ProgressFn | None = None) -> tuple[bool, Any]:
    """Run one task, turning an exception into data so that it crosses process boundaries intact."""
    try:
        return True, (fn(item) if progress is None else fn(item, progress=progress))
    except Exception as e:
        return False, (f"{type(e).__name__}: {e}", traceback.format_exc(), portable_cause(e))


def portable_cause(e: BaseException) -> BaseException | None:
    """The exceptions the CLI turns into one line, rebuilt from plain values so that they always pickle: a full
    disk (an OSError with its errno and file), a step that failed, a corrupt state file. None for the rest,
    whose type, message and traceback travel as text."""
    from curate.core.errors import CorruptState, StepFailed, UsageError, disk_full

    full = disk_full(e)
    if full is not None:
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), full.filename)
    if isinstance(e, CorruptState):
        return CorruptState(str(e), e.path)
    if isinstance(e, (StepFailed, UsageError)):
        return type(e)(str(e)) if type(e) in (StepFailed, UsageError) else UsageError(str(e))
    return None


# Errors that say something about the data or the pipeline, not about the machine: retrying cannot help.
NEVER_RETRY = ("StepFailed", "UsageError")


def retryable(e: BaseException, retry_exceptions: bool | tuple = True) -> bool:
    """The retry rule shared by the cluster executors (Ray, Slurm): an exception raised by a task is retried
    (on a cluster most are accidents of the place: a network filesystem hiccup, a MemoryError on a crowded
    node) unless it is a verdict on the data or the pipeline (`StepFailed`, `UsageError`), which a rerun would
    only repeat; `retry_exceptions=False` retries none, a tuple of types only those. A task that died without
    raising (killed, preempted, out of memory) is always retried: that is the executor's own decision."""
    if type(e).__name__ in NEVER_RETRY:
        return False
    if isinstance(retry_exceptions, tuple):
        return isinstance(e, retry_exceptions)
    return bool(retry_exceptions)


class Progress:
    """A progress bar over tasks with documents per second, and bytes per second and retries where the reader
    fetches; live when tasks report as they go, else from each finished task's result."""

    def __init__(self, total: int, desc: str, enabled: bool, live: bool = False):
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc=desc, unit="task", disable=not enabled, file=sys.stderr, dynamic_ncols=True)
        self.counts = dict.fromkeys(LIVE_FIGURES, 0)
        self.live = live  # the figures come from the tasks' `progress` calls, not from finished results
        self.start = time.perf_counter()

    @property
    def docs(self) -> int:
        return self.counts["docs"]

    def set(self, docs: int, fetched: int = 0, retries: int = 0) -> None:
        if not (docs or fetched) and not self.docs:  # tasks that count no documents (dedup's pair phases)
            return
        self.counts = {"docs": docs, "fetched": fetched, "retries": retries}
        self.bar.set_postfix_str(self.postfix(time.perf_counter() - self.start))

    def postfix(self, seconds: float) -> str:
        """`1,234 docs, 56 docs/s` and, where a reader fetched, `, 12.3 MB/s, 4 retries`."""
        seconds = max(seconds, 1e-9)
        c = self.counts
        text = f"{c['docs']:,} docs, {c['docs'] / seconds:,.0f} docs/s"
        if c["fetched"]:
            text += f", {c['fetched'] / seconds / 1e6:,.1f} MB/s"
        if c["retries"]:
            text += f", {c['retries']:,} retries"
        return text

    def add(self, docs: int, fetched: int = 0, retries: int = 0) -> None:
        c = self.counts
        self.set(c["docs"] + docs, c["fetched"] + fetched, c["retries"] + retries)

    def done(self, result: Any) -> None:
        if not self.live and isinstance(result, dict):
            steps = result.get("steps")
            read = (steps[0].get("extra") if steps and isinstance(steps[0], dict) else None) or {}
            self.add(int(result.get("docs", 0)), **{k: int(read.get(v, 0)) for k, v in READ_FIGURES.items()})
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


class Executor:
    """Runs `fn(item)` for every item and returns the results in item order.

    `resources` (given only when a task needs more than a CPU: `{"gpus": n}`, from `Step.resources()`, see
    `curate.core.resources`) says what each task needs; each executor places tasks by it: the local one on a pool
    of one worker per visible GPU, Ray with `num_gpus`, Slurm with `--gres=gpu:n`."""

    progress: bool = True

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], desc: str = "tasks", labels: Sequence[str] = (),
            resources: dict[str, float] | None = None) -> list:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the executor keeps between `map` calls (the local executor's pool); it may be used again."""

    def stop(self) -> None:
        """Like `close`, on an error path: an executor whose workers could go on writing kills them."""
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is None:
            self.close()
        else:
            self.stop()

    @staticmethod
    def _collect(outcomes: list[tuple[bool, Any]], labels: Sequence[str]) -> list:
        errors = [
            TaskError(labels[i] if i < len(labels) else f"task {i}", *out)
            for i, (ok, out) in enumerate(outcomes)
            if not ok
        ]
        if errors:
            raise TaskFailures(errors, len(outcomes))
        return [out for _, out in outcomes]
