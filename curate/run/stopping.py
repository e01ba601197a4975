"""Stopping a command by signal: SIGTERM (`kill PID`, `docker stop`) and SIGINT (Ctrl-C) end it the same way.

`stop_on_signals()` (the `curate` CLI holds it around every command) turns either signal into `Stopped`,
raised in the main thread: every `finally` on the way out runs (the output lock is released, temporary
files removed), and the local executor kills and reaps its worker processes (`executors.local`). The CLI
then prints one line, "stopped by SIGTERM: rerun the same command to resume", and exits 128 + the signal
(143, 130).

Python runs a signal handler only between bytecodes of the main thread, so a command inside one long C call
(fastText training, a big Arrow write) would not notice: a watcher thread, woken by the signal itself
(`signal.set_wakeup_fd`), gives the orderly exit `GRACE_SECONDS`, then prints the same line and ends the
process at once (`os._exit`). Its worker processes follow, since they die with their parent. A second
signal while stopping ends the process at once too.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Iterator

from curate.core.errors import Stopped

SIGNALS = (signal.SIGTERM, signal.SIGINT)
GRACE_SECONDS = float(os.environ.get("PENEIRA_STOP_GRACE_SECONDS", "5"))  # under `docker stop`'s 10 s


def message(signum: int) -> str:
    return f"stopped by {signal.Signals(signum).name}: rerun the same command to resume"


def exit_code(signum: int) -> int:
    return 128 + signum


_EXITING = threading.Lock()


def _exit_now(signum: int) -> None:
    if not _EXITING.acquire(blocking=False):  # the other of the handler and the watcher is already at it
        return
    with contextlib.suppress(Exception):
        sys.stderr.write(message(signum) + "\n")
        sys.stderr.flush()
    os._exit(exit_code(signum))


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Hold SIGTERM and SIGINT for the block: the first raises `Stopped` in the main thread; if the block has
    not ended `GRACE_SECONDS` later, or at a second signal, the process exits at once. Outside the main
    thread (where handlers cannot be set) the block runs with the handlers it has."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    state = {"signum": 0}
    done = threading.Event()

    def handler(signum, _frame):
        if state["signum"]:  # a second signal while stopping: no more waiting
            _exit_now(signum)
        state["signum"] = signum
        raise Stopped(signum)

    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)

    def watch() -> None:  # woken by the signal's byte even while the main thread is inside a C call
        first, deadline = 0, None
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                ready, _, _ = select.select([read_fd], [], [], wait)
                if not ready:  # the grace has passed and the block has not ended
                    _exit_now(state["signum"] or first)
                    return
                data = os.read(read_fd, 64)
            except OSError:
                return
            if not data or done.is_set():
                return
            ours = [b for b in data if b in SIGNALS]  # other handled signals (SIGALRM, …) write here too
            if not ours:
                continue
            if deadline is not None or len(ours) > 1:  # a second signal: no more waiting
                _exit_now(ours[-1])
                return
            first, deadline = ours[0], time.monotonic() + GRACE_SECONDS

    old = {s: signal.signal(s, handler) for s in SIGNALS}
    old_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    watcher = threading.Thread(target=watch, name="peneira-stop-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        signal.set_wakeup_fd(old_fd)
        for s, h in old.items():
            signal.signal(s, h)
        os.close(write_fd)  # the watcher reads EOF and ends
        watcher.join(timeout=1)
        os.close(read_fd)
