"""LocalExecutor: where tasks run (issue 22.16: a phase of one task ran in the driver, whose memory then grew
with the corpus)."""

from __future__ import annotations

import os
import resource

from curate.run.executors.local import LocalExecutor


def _pid_and_peak(n: int) -> tuple[int, int]:
    """A task that holds `n` MiB for a moment: its process id and that process's peak RSS (KiB)."""
    block = bytearray(n << 20)
    block[::4096] = b"x" * len(block[::4096])  # touch every page, so it counts as resident
    return os.getpid(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_a_one_task_phase_runs_in_a_worker_when_there_are_workers():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    (pid, peak), = LocalExecutor(2, progress=False).map(_pid_and_peak, [256])
    assert pid != os.getpid() and peak > 256 << 10  # a pool process held the 256 MiB, not this one
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < before + (128 << 10)
    assert LocalExecutor(2, progress=False).map(_pid_and_peak, []) == []
    (pid, _), = LocalExecutor(1, progress=False).map(_pid_and_peak, [1])
    assert pid == os.getpid()  # one worker: tasks run here, as documented (debuggable, no pickling)
