"""Executors: where tasks run. `local` (a process pool), `ray` and `slurm` (clusters) implement `base.Executor`."""

from __future__ import annotations

from typing import Any

from curate.run.executors.base import Executor, TaskError, TaskFailures
from curate.run.executors.local import LocalExecutor

__all__ = ["Executor", "LocalExecutor", "TaskError", "TaskFailures", "make_executor"]


def make_executor(name: str, workers: int = 1, progress: bool = True, **kw: Any) -> Executor:
    if name == "local":
        return LocalExecutor(workers, progress=progress)
    if name == "ray":
        from curate.run.executors.ray import RayExecutor  # the extra `ray`: imported only when chosen

        return RayExecutor(workers=workers, progress=progress, **kw)
    if name == "slurm":
        from curate.run.executors.slurm import SlurmExecutor

        return SlurmExecutor(workers=workers, progress=progress, **kw)
    raise ValueError(f"unknown executor {name!r}: choose local, ray or slurm")
