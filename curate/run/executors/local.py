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
import inspect
import math
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from curate.core.resources import visible_gpus
from curate.run.executors.base import LIVE_FIGURES, Executor, Progress, accepts_progress, call_captured

# Live counts (documents, bytes fetched, retries) from pool workers: each worker process gets the parent's shared counter once,
# through the pool initializer (a multiprocessing Value cannot travel with a task), and the task's
# `progress` callable adds to it; the parent polls the counter for the bar.
_WORKER_COUNTER: Any = None

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _init_pool_worker(counter: Any, parent: int | None = None, driver: Any = None, gpus: Any = None) -> None:
    global _WORKER_COUNTER
    _WORKER_COUNTER = counter
    if gpus is not None:  # a pool of GPU workers: this one's devices, before anything in it starts CUDA
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus.get(timeout=60)
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


def check_main_guard() -> None:
    """End, with one line, a script that would start a pool from its top level of a script that lacks `if __name__ == "__main__":`.

    Pool workers (forkserver, like spawn) import the driver's `__main__` module again before their first
    task; a script that calls `pipeline.run(...)` at its top level then starts the run again in every worker,
    which fails, and the driver saw ~100 lines of tracebacks ending in BrokenProcessPool (issue 35.4). The
    outermost frame of `__main__` is the line that led here: unless it sits under an `if` that tests
    `__name__`, the workers would run it too. Nothing is said when the source cannot be read (an
    interactive session, a frozen program): the check only speaks when it is sure."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name.split(".")[-1] == "__main__":  # `python -m pkg`: never imported again
        return
    frame, outer = inspect.currentframe(), None
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals is getattr(main, "__dict__", None):
            outer = frame
        frame = frame.f_back
    if outer is None or not path or not os.path.isfile(path) or _guarded(path, outer.f_lineno):
        return
    # The line that called us is the script's own top level: there is no caller to hand an exception to, only
    # a traceback through the run's internals, so the script ends here with the one line (as argparse does).
    raise SystemExit(f"error: {path}:{outer.f_lineno}: worker processes import this script again and would run this "
                     "line again: put the call under `if __name__ == \"__main__\":` (the Pipeline(...) may stay "
                     "above it), or run with one worker; see docs/pipelines.md")


def _guarded(path: str, line: int) -> bool:
    """Whether line `line` of the Python file `path` lies under an `if` whose test reads `__name__` (or the file
    cannot be parsed: then nothing is claimed)."""
    import ast

    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return True
    body = tree.body
    while body:
        stmt = next((s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        if stmt is None:
            return False
        if isinstance(stmt, ast.If) and any(isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(stmt.test)):
            return True
        body = [s for field in ("body", "orelse", "finalbody", "handlers") for s in getattr(stmt, field, [])
                if isinstance(s, ast.stmt | ast.excepthandler)]
    return False


def gpu_groups(resources: dict | None) -> list[str]:
    """The CUDA_VISIBLE_DEVICES of each GPU worker for tasks needing `resources["gpus"]` GPUs each: the visible
    GPUs (`visible_gpus`, PENEIRA_GPUS fakes them) cut into groups of that many; none when nothing is asked or
    visible (the tasks then run on the CPU pool). A task that asks for more GPUs than are visible gets them all."""
    need = int(math.ceil((resources or {}).get("gpus", 0) or 0))
    ids = visible_gpus() if need else []
    if not ids:
        return []
    need = min(need, len(ids))
    return [",".join(ids[k : k + need]) for k in range(0, len(ids) - need + 1, need)]


class _PoolProgress:
    """The `progress` callable a pool task gets: picklable, it adds to its worker's shared counter."""

    def __call__(self, docs: int, fetched: int = 0, retries: int = 0) -> None:
        with _WORKER_COUNTER.get_lock():
            for k, n in enumerate((docs, fetched, retries)):
                _WORKER_COUNTER[k] += n


class LocalExecutor(Executor):
    """One process per worker (forkserver, so workers never inherit a parent's threads or locks).

    With `workers=1` tasks run in this process: easiest to debug, and no pickling at all. With more,
    every task runs in a pool process, even the only task of a phase: run here, a phase of one task
    (one hash partition) made the driver's peak memory grow with the corpus (issue 22.16).

    A `map` whose tasks need GPUs (`resources={"gpus": n}`, from `Step.resources()`) runs on a pool of its own
    where GPUs are visible (`curate.core.resources.visible_gpus`): one worker per `n` visible GPUs, whatever
    `workers` (which sizes the CPU stages), each started with its own `CUDA_VISIBLE_DEVICES`, so every model
    is loaded once per worker on its own GPU (`gpu_groups`). With one GPU group and `workers=1` the tasks run
    in this process; with none visible, on the CPU pool as any other map.

    One pool serves every `map` of the executor (the stages of a run, the phases of dedup, mix's two
    passes): a pool per `map` started and imported its workers anew for each of MinHash's eight phases
    (issue 35.7). `close()` (or leaving `with executor:`) ends it; a `map` that is stopped or fails in the
    driver kills it first (`stop_pool`), and a pool that lost a worker is discarded; the next `map`, if
    any, starts a new one.
    """

    def __init__(self, workers: int = 1, progress: bool = True):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.progress = progress
        self._pool: ProcessPoolExecutor | None = None
        self._gpu_pool: tuple[tuple[str, ...], ProcessPoolExecutor] | None = None  # (its workers' devices, pool)
        self._counter: Any = None
        self._alive: tuple[Any, Any] | None = None

    def map(self, fn, items, desc="tasks", labels=(), resources=None):
        live = accepts_progress(fn)
        bar = Progress(len(items), desc, self.progress, live=live)
        outcomes: list[tuple[bool, Any]] = [(False, ("not run", ""))] * len(items)
        groups = gpu_groups(resources)
        try:
            if not items or (self.workers == 1 and len(groups) <= 1):
                for i, item in enumerate(items):
                    outcomes[i] = call_captured(fn, item, bar.add if live else None)
                    bar.done(outcomes[i][1] if outcomes[i][0] else None)
            else:
                self._pool_map(fn, items, outcomes, bar, live, tuple(groups) if groups else None)
        finally:
            bar.close()
        return self._collect(outcomes, labels)

    def close(self) -> None:
        """End the pools, if running: their workers finish (they are idle between maps) and are reaped."""
        for pool in self._take_pools():
            pool.shutdown(wait=True)
        self._release()

    def stop(self) -> None:
        """Kill the pools' workers now (`stop_pool`): what every error path of a run does."""
        for pool in self._take_pools():
            stop_pool(pool)
        self._release()

    def _take_pools(self) -> list[ProcessPoolExecutor]:
        pools = [p for p in (self._pool, self._gpu_pool[1] if self._gpu_pool else None) if p is not None]
        self._pool = self._gpu_pool = None
        return pools

    def _release(self) -> None:
        if self._alive is not None:
            for end in self._alive:
                end.close()
        self._alive = self._counter = None

    def _started_pool(self, gpus: tuple[str, ...] | None = None) -> ProcessPoolExecutor:
        """The running pool, started on first use: `self.workers` processes at most, forked as tasks need them;
        with `gpus`, the GPU pool: one process per entry, each with that entry as its CUDA_VISIBLE_DEVICES."""
        ctx = mp.get_context("forkserver")
        if self._counter is None:
            check_main_guard()
            self._counter = ctx.Array("q", len(LIVE_FIGURES))
            self._alive = ctx.Pipe(duplex=False)  # its write end stays here: its end of file is this process's death
        if gpus is None:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_init_pool_worker,
                                                 initargs=(self._counter, _forkserver_pid(), self._alive[0]))
            return self._pool
        if self._gpu_pool is not None and self._gpu_pool[0] != gpus:  # other devices asked: a pool for them
            stop_pool(self._gpu_pool[1])
            self._gpu_pool = None
        if self._gpu_pool is None:
            queue = ctx.Queue()
            for g in gpus:
                queue.put(g)
            pool = ProcessPoolExecutor(len(gpus), mp_context=ctx, initializer=_init_pool_worker,
                                       initargs=(self._counter, _forkserver_pid(), self._alive[0], queue))
            self._gpu_pool = (gpus, pool)
        return self._gpu_pool[1]

    def _pool_map(self, fn, items, outcomes, bar, live: bool, gpus: tuple[str, ...] | None = None) -> None:
        pool = self._started_pool(gpus)
        counter = self._counter
        with counter.get_lock():
            counter[:] = [0] * len(LIVE_FIGURES)  # every task of the previous map has finished: the pool is idle
        broken = False
        try:
            progress = _PoolProgress() if live else None
            futures = {pool.submit(call_captured, fn, item, progress): i for i, item in enumerate(items)}
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                if live:
                    bar.set(*counter[:])
                for fut in finished:
                    i = futures[fut]
                    try:
                        outcomes[i] = fut.result()
                    except Exception as e:  # a worker died (killed, out of memory): BrokenProcessPool
                        broken = broken or isinstance(e, BrokenProcessPool)
                        outcomes[i] = (False, (f"{type(e).__name__}: {e}", traceback.format_exc()))
                    bar.done(outcomes[i][1] if outcomes[i][0] else None)
        except BaseException:  # stopped (SIGTERM, Ctrl-C) or the driver failed: no worker goes on writing
            self.stop()
            raise
        if broken:  # a pool that lost a worker takes no more tasks: the next map starts a new one
            self.stop()
