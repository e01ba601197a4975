"""The local executor: a forkserver process pool, or this process when there is one worker."""

from __future__ import annotations

import multiprocessing as mp
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from curate.run.executors.base import Executor, Progress, call_captured

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
