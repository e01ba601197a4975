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


# Live document counts. Tasks call `count_docs` as they read; in this process it feeds the bar
# directly, in pool workers it adds to a shared counter that the parent polls. Where nothing listens
# (Ray workers) it does nothing, and the bar counts documents as tasks finish instead.
_ON_DOCS: Callable[[int], None] | None = None
_SHARED_DOCS: Any = None


def count_docs(n: int) -> None:
    if _ON_DOCS is not None:
        _ON_DOCS(n)
    elif _SHARED_DOCS is not None:
        with _SHARED_DOCS.get_lock():
            _SHARED_DOCS.value += n


def _init_pool_worker(counter: Any) -> None:
    global _SHARED_DOCS
    _SHARED_DOCS = counter


class Progress:
    """A progress bar over tasks with documents per second, live when tasks report as they go."""

    def __init__(self, total: int, desc: str, enabled: bool, live: bool = False):
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc=desc, unit="task", disable=not enabled, file=sys.stderr, dynamic_ncols=True)
        self.docs = 0
        self.live = live  # documents come from count_docs, not from finished results
        self.start = time.perf_counter()

    def set_docs(self, docs: int) -> None:
        self.docs = docs
        rate = docs / max(time.perf_counter() - self.start, 1e-9)
        self.bar.set_postfix_str(f"{docs:,} docs, {rate:,.0f} docs/s")

    def add_docs(self, n: int) -> None:
        self.set_docs(self.docs + n)

    def done(self, result: Any) -> None:
        if not self.live and isinstance(result, dict):
            self.add_docs(int(result.get("docs", 0)))
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
        global _ON_DOCS
        bar = Progress(len(items), desc, self.progress, live=True)
        outcomes: list[tuple[bool, Any]] = [(False, ("not run", ""))] * len(items)
        try:
            if self.workers == 1 or len(items) <= 1:
                _ON_DOCS = bar.add_docs
                for i, item in enumerate(items):
                    outcomes[i] = call_captured(fn, item)
                    bar.done(outcomes[i][1] if outcomes[i][0] else None)
            else:
                self._pool_map(fn, items, outcomes, bar)
        finally:
            _ON_DOCS = None
            bar.close()
        return self._collect(outcomes, labels)

    def _pool_map(self, fn, items, outcomes, bar) -> None:
        ctx = mp.get_context("forkserver")
        counter = ctx.Value("q", 0)
        workers = min(self.workers, len(items))
        with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_pool_worker, initargs=(counter,)) as pool:
            futures = {pool.submit(call_captured, fn, item): i for i, item in enumerate(items)}
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                bar.set_docs(counter.value)
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
