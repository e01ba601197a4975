"""Shared tools of the chaos lane (issue 29): a disk that fills up, and a command killed at a chosen moment.

`small_disk` mounts a real tmpfs of a given size (root only, as in CI); where mounting is not allowed the test
is skipped with the reason, never passed. `kill_after` starts a command, waits until a condition holds (a file
appears, a time passes) and sends it a signal, so a test can rerun the command and compare the outputs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (e.g. "2m", "300k") mounted at `where` for the block; skips the test if it cannot."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("a small disk needs root (tmpfs mount); CI runs as root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def kill_after(cmd: list[str], ready: Callable[[], bool], sig: int = signal.SIGKILL, timeout: float = 120,
               group: bool = False, **popen) -> subprocess.CompletedProcess:
    """Run `cmd`, send `sig` once `ready()` is true (polled every 20 ms), wait for it to end; its result.

    `group=True` signals the whole process group (a shell's Ctrl-C, `docker stop`); otherwise only the process
    itself, as `kill PID` does. If the command ends before `ready()` holds, the result is returned unsignalled."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=group, **popen)
    deadline = time.monotonic() + timeout
    while proc.poll() is None and not ready():
        if time.monotonic() > deadline:
            proc.kill()
            raise TimeoutError(f"{cmd[:3]} never reached the kill point")
        time.sleep(0.02)
    if proc.poll() is None:
        os.killpg(proc.pid, sig) if group else proc.send_signal(sig)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
