"""RayExecutor: the Executor interface on a Ray cluster, one Ray task per item (input file, shard, phase part).

Nothing about a task changes on Ray: the task function writes its own outputs, stats and completion
marker, exactly as under LocalExecutor, so a run is resumable across executors and its outputs are
the same bytes. What Ray adds is placement (CPUs and memory declared per task), and what this module
adds is a retry policy and the same progress bar and failure summary as the local pool.

Retry policy (one budget per item, `max_retries` extra attempts, whatever the cause):

* A worker or node that dies mid-task (killed, out of memory, preempted) is always retried: the
  task never finished, and because outputs are committed by rename and the marker is written last,
  a rerun from scratch cannot duplicate anything.
* An exception raised by the task is retried too (`retry_exceptions=True`, as Ray's own option of
  that name), because on a cluster most of them are accidents of the place: a network filesystem
  hiccup, an object-store timeout, a MemoryError on a crowded node. Exceptions that are verdicts on
  the data or the pipeline (`StepFailed`: a step raised on every document; `UsageError`) are never
  retried: a rerun would burn the same time and print the same traceback. Pass
  `retry_exceptions=False` to report every exception at once, or a tuple of exception types to retry
  only those.

Retries are done here rather than by Ray's task `max_retries`, so that one counter covers both
causes, each retry is announced as it happens, and the final report says how many attempts failed.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from curate.run.executors.base import NEVER_RETRY, Executor, Progress, portable_cause, retryable

__all__ = ["NEVER_RETRY", "RayExecutor"]

WINDOW_REFRESH_S = 10.0  # how often a cluster-sized window is re-read

# Thread pools that size themselves from the machine's cores, not from the task's share of them; Ray
# caps OMP_NUM_THREADS itself. Read when a pool starts, so setting them before the task runs is enough.
THREAD_ENV = ("RAYON_NUM_THREADS", "POLARS_MAX_THREADS")


def _attempt(fn: Callable[[Any], Any], item: Any, retry_exceptions: bool | tuple, cpus: float) -> tuple[bool, Any, bool]:
    """Run one attempt inside a Ray worker: (ok, result or (error, traceback), worth retrying)."""
    for var in THREAD_ENV:
        os.environ.setdefault(var, str(max(1, int(cpus))))
    try:
        return True, fn(item), False
    except Exception as e:
        retry = retryable(e, retry_exceptions)
        return False, (f"{type(e).__name__}: {e}", traceback.format_exc(), portable_cause(e)), retry


class RayExecutor(Executor):
    """Runs each item as a Ray task with declared resources, retrying failures up to `max_retries` times.

    `workers` caps the tasks in flight; `None` or 0 sizes the window to the cluster (twice its CPUs
    over `num_cpus_per_task`, re-read every few seconds, so an autoscaler sees pending work). Ray
    starts lazily on the first `map`: it joins `address` (`"auto"`, `"ray://head:10001"`, …), else an already initialised Ray,
    else `RAY_ADDRESS`, else a local instance sized to `workers`.
    """

    def __init__(
        self,
        workers: int | None = None,
        progress: bool = True,
        address: str | None = None,
        num_cpus_per_task: float = 1,
        memory_per_task: int | None = None,
        max_retries: int = 3,
        retry_exceptions: bool | tuple[type[BaseException], ...] = True,
        **init_kwargs: Any,
    ):
        if workers is not None and workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.workers = workers or 0  # an int, as LocalExecutor's: callers compare it
        self.progress = progress
        self.address = address
        self.num_cpus_per_task = num_cpus_per_task
        self.memory_per_task = memory_per_task  # bytes, a scheduling reservation (Ray's `memory` resource)
        self.max_retries = max_retries
        self.retry_exceptions = retry_exceptions
        self.init_kwargs = init_kwargs  # passed to ray.init: runtime_env, namespace, …

    def _ray(self):
        import ray

        if not ray.is_initialized():
            kw = dict(self.init_kwargs)
            if self.address is None and self.workers:
                kw.setdefault("num_cpus", self.workers)  # only used if this starts a local instance
            ray.init(address=self.address, **kw)
        return ray

    def _window(self, ray) -> int:
        if self.workers:
            return self.workers
        cpus = ray.cluster_resources().get("CPU", 0)  # changes as an autoscaler adds or removes nodes
        return max(2, 2 * int(cpus / max(self.num_cpus_per_task, 1e-3)))

    def task_options(self, resources: dict[str, float] | None = None) -> dict[str, Any]:
        """The Ray task options of a map: CPUs (and memory) per task, and `num_gpus` where its tasks need GPUs
        (Ray then sets each task's CUDA_VISIBLE_DEVICES to the GPUs it reserved)."""
        options: dict[str, Any] = {"num_cpus": self.num_cpus_per_task, "max_retries": 0}
        if self.memory_per_task:
            options["memory"] = self.memory_per_task
        if (resources or {}).get("gpus"):
            options["num_gpus"] = resources["gpus"]
        return options

    def map(self, fn, items, desc="tasks", labels=(), resources=None):
        if not items:
            return []
        ray = self._ray()
        remote = ray.remote(_attempt).options(**self.task_options(resources))
        fn_ref = ray.put(fn)  # shipped once, not once per task
        window, window_at = self._window(ray), time.monotonic()
        outcomes: list[tuple[bool, Any]] = [(False, ("not run", ""))] * len(items)
        attempts = [0] * len(items)
        queue, running = deque(range(len(items))), {}
        bar = Progress(len(items), desc, self.progress)
        try:
            while queue or running:
                if time.monotonic() - window_at > WINDOW_REFRESH_S:
                    window, window_at = self._window(ray), time.monotonic()
                while queue and len(running) < window:
                    i = queue.popleft()
                    attempts[i] += 1
                    running[remote.remote(fn_ref, items[i], self.retry_exceptions, self.num_cpus_per_task)] = i
                ready, _ = ray.wait(list(running), num_returns=1, timeout=WINDOW_REFRESH_S)
                for ref in ready:
                    i = running.pop(ref)
                    ok, out, retry = self._result(ray, ref)
                    if ok:
                        outcomes[i] = (True, out)
                        bar.done(out)
                    elif retry and attempts[i] <= self.max_retries:
                        self._announce(bar, _label(labels, i), attempts[i], out[0])
                        queue.append(i)
                    else:
                        tries = f" (after {attempts[i]} attempts)" if attempts[i] > 1 else ""
                        outcomes[i] = (False, (out[0] + tries, *out[1:]))  # the cause (a full disk, …) kept
                        bar.done(None)
        except BaseException:  # Ctrl-C or a driver error: don't leave orphan tasks writing on the cluster
            for ref in running:
                ray.cancel(ref, force=True)
            raise
        finally:
            bar.close()
        return self._collect(outcomes, labels)

    @staticmethod
    def _result(ray, ref) -> tuple[bool, Any, bool]:
        """The attempt's outcome; a Ray-level failure (dead worker, lost node, OOM kill) is retryable."""
        try:
            return ray.get(ref)
        except ray.exceptions.TaskCancelledError as e:
            return False, (f"{type(e).__name__}: {e}", ""), False
        except ray.exceptions.RayTaskError as e:  # raised outside the task function: unpickling its arguments, …
            cause = e.cause if e.cause is not None else e
            return False, (f"{type(cause).__name__}: {cause}", str(e)), True
        except ray.exceptions.RayError as e:
            first_line = str(e).strip().splitlines()[0] if str(e).strip() else ""
            return False, (f"{type(e).__name__}: {first_line}", traceback.format_exc()), True

    def _announce(self, bar: Progress, label: str, attempt: int, error: str) -> None:
        msg = f"retrying {label} (attempt {attempt} of {self.max_retries + 1} failed: {error})"
        bar.bar.write(msg, file=sys.stderr)


def _label(labels: Sequence[str], i: int) -> str:
    return labels[i] if i < len(labels) else f"task {i}"
