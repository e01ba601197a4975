"""The local executor: a forkserver process pool, or this process when there is one worker.

Worker processes never outlive the run (docs/signals.md). Interrupted (SIGTERM, Ctrl-C: `Stopped` or
KeyboardInterrupt raised in the driver), the pool's workers are killed and reaped before the exception goes
on, so no task of the run writes after the command has returned. Killed outright (SIGKILL, out of memory),
the driver can do nothing, so the processes watch for it themselves, two ways:

* the kernel's chain: the forkserver (the workers' parent, not the driver) asks at its start to be killed
  when the driver dies (`_forkserver`, a preload module: `prctl(PR_SET_PDEATHSIG)`), and each worker asks to
  be killed when the forkserver dies. Without it the forkserver would live on, since every worker holds its
  "clients alive" pipe open, and the workers with it, taking tasks never sent and publishing shards;
* a pipe from the driver whose end of file a thread in each worker waits for (every platform, and a
  forkserver started by someone else without the preload): the worker then kills itself.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from curate.run.executors.base import Executor, Progress, accepts_progress, call_captured

# Live document counts from pool workers: each worker process gets the parent's shared counter once,
# through the pool initializer (a multiprocessing Value cannot travel with a task), and the task's
# `progress` callable adds to it; the parent polls the counter for the bar.
_WORKER_COUNTER: Any = None

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _init_pool_worker(counter: Any, parent: int | None = None, driver: Any = None) -> None:
    global _WORKER_COUNTER
    _WORKER_COUNTER = counter
    die_with_parent(parent)
    if driver is not None:
        threading.Thread(target=_die_with_driver, args=(driver,), name="peneira-driver-watch", daemon=True).start()
    # Ctrl-C in a terminal reaches the whole foreground group: the driver stops the pool, so a worker must
    # not turn it into a KeyboardInterrupt of its task (reported as a failed task, then the next task taken).
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def die_with_parent(parent: int | None = None, watch: bool = True) -> None:
    """Make this process die (SIGKILL) as soon as its parent does. `parent`: the pid it must have now, if
    known (the parent may have died before this call: then this process exits at once). Where the kernel
    cannot do it (not Linux), a thread watches `os.getppid()` if `watch`."""
    parent = parent or os.getppid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # it died before the request took effect
                    os._exit(1)
                return

    def watcher() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGKILL)

    if os.getppid() != parent:
        os._exit(1)
    if watch:
        threading.Thread(target=watcher, name="peneira-parent-watch", daemon=True).start()


def _die_with_driver(conn: Any) -> None:
    """Wait for the end of file of the driver's pipe (it never writes): the driver is gone, so is this process."""
    with contextlib.suppress(EOFError, OSError):
        conn.recv_bytes()
    os.kill(os.getpid(), signal.SIGKILL)


def _forkserver_pid() -> int | None:
    """The forkserver's pid (the pool workers' parent), started if it was not (from this thread, which it dies
    with on Linux: `_forkserver`); None if it cannot be known."""
    try:
        from multiprocessing import forkserver

        server = forkserver._forkserver
        preload = list(getattr(server, "_preload_modules", None) or ["__main__"])
        if _FORKSERVER_MODULE not in preload:
            forkserver.set_forkserver_preload([*preload, _FORKSERVER_MODULE])
        forkserver.ensure_running()
        return getattr(server, "_forkserver_pid", None)
    except Exception:  # private attributes of multiprocessing: without them, the driver's pipe still works
        return None


_FORKSERVER_MODULE = "curate.run.executors._forkserver"


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Kill a pool's worker processes now and reap them: no task of theirs writes after this returns."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(Exception):
            p.kill()
    _stop_forkserver()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(timeout=10)


def _stop_forkserver() -> None:
    """Kill the forkserver and every child it has forked, the pool does not know of yet: a stop that lands while
    the pool is starting a worker leaves a child that reads its start-up data after this process has released
    the shared counter, and prints a traceback of its own. The forkserver is stopped first (it forks no more),
    then its children are killed, then it is; `multiprocessing` starts a new one when one is needed. Linux only
    (it finds the children in /proc); elsewhere the workers' own watch of the driver still ends them."""
    try:
        from multiprocessing import forkserver

        pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    except Exception:  # a private attribute: without it, nothing to do here
        return
    if not pid or not os.path.isdir("/proc"):
        return
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGSTOP)
        for child in _children(pid):
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and _state(pid) not in ("Z", "X", None):
            time.sleep(0.01)


def _children(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(name))
    return out


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return None


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
        alive_r, alive_w = ctx.Pipe(duplex=False)  # alive_w stays here: its end of file is this process's death
        pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_pool_worker,
                                   initargs=(counter, _forkserver_pid(), alive_r))
        try:
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
        except BaseException:  # stopped (SIGTERM, Ctrl-C) or the driver failed: no worker goes on writing
            stop_pool(pool)
            raise
        else:
            pool.shutdown(wait=True)
        finally:
            alive_r.close()
            alive_w.close()
