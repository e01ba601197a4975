"""The local executor: a forkserver process pool, or this process when there is one worker."""

from __future__ import annotations

import multiprocessing as mp
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from curate.run.executors.base import Executor, Progress, accepts_progress, call_captured

# Live document counts from pool workers: each worker process gets the parent's shared counter once,
# through the pool initializer (a multiprocessing Value cannot travel with a task), and the task's
# `progress` callable adds to it; the parent polls the counter for the bar.
_WORKER_COUNTER: Any = None


def _init_pool_worker(counter: Any) -> None:
    global _WORKER_COUNTER
    _WORKER_COUNTER = counter


class _PoolProgress:
    """The `progress` callable a pool task gets: picklable, it adds to its worker's shared counter."""

    def __call__(self, n: int) -> None:
        with _WORKER_COUNTER.get_lock():
            _WORKER_COUNTER.value += n


class LocalExecutor(Executor):
    """One process per worker (forkserver, so workers never inherit a parent's threads or locks).

    With `workers=1` tasks run in this process: easiest to debug, and no pickling at all. With more,
    every task runs in a pool process, even the only task of a phase: run here, a phase of one task
    (one hash partition) made the driver's peak memory grow with the corpus (issue 22.16).
    """

    def __init__(self, workers: int = 1, progress: bool = True):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.progress = progress

    def map(self, fn, items, desc="tasks", labels=()):
        live = accepts_progress(fn)
        bar = Progress(len(items), desc, self.progress, live=live)
        outcomes: list[tuple[bool, Any]] = [(False, ("not run", ""))] * len(items)
        try:
            if self.workers == 1 or not items:
                for i, item in enumerate(items):
                    outcomes[i] = call_captured(fn, item, bar.add_docs if live else None)
                    bar.done(outcomes[i][1] if outcomes[i][0] else None)
            else:
                self._pool_map(fn, items, outcomes, bar, live)
        finally:
            bar.close()
        return self._collect(outcomes, labels)

    def _pool_map(self, fn, items, outcomes, bar, live: bool) -> None:
        ctx = mp.get_context("forkserver")
        counter = ctx.Value("q", 0)
        workers = min(self.workers, len(items))
        with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_pool_worker, initargs=(counter,)) as pool:
            progress = _PoolProgress() if live else None
            futures = {pool.submit(call_captured, fn, item, progress): i for i, item in enumerate(items)}
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                if live:
                    bar.set_docs(counter.value)
                for fut in finished:
                    i = futures[fut]
                    try:
                        outcomes[i] = fut.result()
                    except Exception as e:  # a worker died (killed, out of memory): BrokenProcessPool
                        outcomes[i] = (False, (f"{type(e).__name__}: {e}", traceback.format_exc()))
                    bar.done(outcomes[i][1] if outcomes[i][0] else None)
