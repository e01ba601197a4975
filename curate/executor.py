"""Executors run a list of independent tasks. Local is a process pool; Ray (curate.ray_executor) is the other.

The interface is one method, `map`, over picklable items and a module-level function, so that a
new engine only has to say how to run tasks, never what a task does. Failures are collected, not
raised mid-run: every other task still finishes (and is marked done), then `TaskFailures` says
which failed and why.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any


@dataclass
class TaskError:
    label: str
    error: str  # the exception's type and message
    detail: str  # the traceback

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


def call_captured(fn: Callable[[Any], Any], item: Any) -> tuple[bool, Any]:
    """Run one task, turning an exception into data so that it crosses process boundaries intact."""
    try:
        return True, fn(item)
    except Exception as e:
        return False, (f"{type(e).__name__}: {e}", traceback.format_exc())


class Progress:
    """A progress bar over tasks that also shows documents per second from finished task results."""

    def __init__(self, total: int, desc: str, enabled: bool):
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc=desc, unit="task", disable=not enabled, file=sys.stderr, dynamic_ncols=True)
        self.docs = 0
        self.start = time.perf_counter()

    def done(self, result: Any) -> None:
        if isinstance(result, dict):
            self.docs += int(result.get("docs", 0))
        rate = self.docs / max(time.perf_counter() - self.start, 1e-9)
        self.bar.set_postfix_str(f"{self.docs:,} docs, {rate:,.0f} docs/s")
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


class Executor:
    """Runs `fn(item)` for every item and returns the results in item order."""

    progress: bool = True

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], desc: str = "tasks", labels: Sequence[str] = ()) -> list:
        raise NotImplementedError

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


class LocalExecutor(Executor):
    """One process per worker (forkserver, so workers never inherit a parent's threads or locks).

    With `workers=1` tasks run in this process: easiest to debug, and no pickling at all.
    """

    def __init__(self, workers: int = 1, progress: bool = True):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.progress = progress

    def map(self, fn, items, desc="tasks", labels=()):
        bar = Progress(len(items), desc, self.progress)
        outcomes: list[tuple[bool, Any]] = [(False, ("not run", ""))] * len(items)
        try:
            if self.workers == 1 or len(items) <= 1:
                for i, item in enumerate(items):
                    outcomes[i] = call_captured(fn, item)
                    bar.done(outcomes[i][1] if outcomes[i][0] else None)
            else:
                self._pool_map(fn, items, outcomes, bar)
        finally:
            bar.close()
        return self._collect(outcomes, labels)

    def _pool_map(self, fn, items, outcomes, bar) -> None:
        ctx = mp.get_context("forkserver")
        with ProcessPoolExecutor(max_workers=min(self.workers, len(items)), mp_context=ctx) as pool:
            futures = {pool.submit(call_captured, fn, item): i for i, item in enumerate(items)}
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    i = futures[fut]
                    try:
                        outcomes[i] = fut.result()
                    except Exception as e:  # a worker died (killed, out of memory): BrokenProcessPool
                        outcomes[i] = (False, (f"{type(e).__name__}: {e}", traceback.format_exc()))
                    bar.done(outcomes[i][1] if outcomes[i][0] else None)


def make_executor(name: str, workers: int = 1, progress: bool = True, **kw: Any) -> Executor:
    if name == "local":
        return LocalExecutor(workers, progress=progress)
    if name == "ray":
        from curate.ray_executor import RayExecutor

        return RayExecutor(workers=workers, progress=progress, **kw)
    raise ValueError(f"unknown executor {name!r}: choose local or ray")
