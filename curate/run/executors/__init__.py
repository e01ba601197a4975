"""Executors: where tasks run. `local` (a process pool), `ray` and `slurm` (clusters) implement `base.Executor`.

`LocalExecutor` is imported on first use (PEP 562): a Slurm array element (`_slurm_task`) needs `base` alone, not
the process pool's modules (multiprocessing, concurrent.futures: ~25 CPU ms a process, issue 45)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from curate.run.executors.base import Executor, TaskError, TaskFailures

if TYPE_CHECKING:
    from curate.run.executors.local import LocalExecutor

__all__ = ["Executor", "LocalExecutor", "TaskError", "TaskFailures", "make_executor"]


def __getattr__(name: str) -> Any:
    if name == "LocalExecutor":
        from curate.run.executors.local import LocalExecutor

        return LocalExecutor
    raise AttributeError(f"module 'curate.run.executors' has no attribute {name!r}")


def make_executor(name: str, workers: int = 1, progress: bool = True, **kw: Any) -> Executor:
    if name == "local":
        from curate.run.executors.local import LocalExecutor

        return LocalExecutor(workers, progress=progress)
    if name == "ray":
        from curate.run.executors.ray import RayExecutor  # the extra `ray`: imported only when chosen

        return RayExecutor(workers=workers, progress=progress, **kw)
    if name == "slurm":
        from curate.run.executors.slurm import SlurmExecutor

        return SlurmExecutor(workers=workers, progress=progress, **kw)
    raise ValueError(f"unknown executor {name!r}: choose local, ray or slurm")
