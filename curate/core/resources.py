"""What a step asks of the machine it runs on (`Step.resources()`), and the GPUs a driver can hand out.

A step that runs a model on a GPU returns `{"gpus": 1}` from `resources()`; every other step returns `{}` and
nothing changes for it. A streaming stage asks for the most any of its steps asks (`stage_resources`), and the
executor places its tasks accordingly: the local executor runs one worker process per visible GPU, each with its
own `CUDA_VISIBLE_DEVICES`; Ray gets `num_gpus`; Slurm `--gres=gpu:N`.

`visible_gpus()` is what the local executor (and a step set to `device="auto"`) sees: `PENEIRA_GPUS` when set
(a count, or a comma-separated list of device ids: how tests and CPU-only machines fake GPUs, and how a user
keeps a run off some of them), else `CUDA_VISIBLE_DEVICES`, else the GPUs the NVIDIA driver lists
(`/proc/driver/nvidia/gpus`). No torch import: the driver decides placement without loading CUDA.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

GPUS_ENV = "PENEIRA_GPUS"


def _ids(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip() and p.strip() != "-1"]


def visible_gpus() -> list[str]:
    """The ids of the GPUs this process may give to workers (as CUDA_VISIBLE_DEVICES names them)."""
    cuda = os.environ.get("CUDA_VISIBLE_DEVICES")
    fake = os.environ.get(GPUS_ENV)
    if fake is not None and fake.strip():
        if fake.strip().isdigit():
            n = int(fake)
            base = _ids(cuda) if cuda is not None else [str(i) for i in range(n)]
            return (base + [str(i) for i in range(len(base), n)])[:n]
        return _ids(fake)
    if cuda is not None:
        return _ids(cuda)
    try:
        return [str(i) for i in range(len(os.listdir("/proc/driver/nvidia/gpus")))]
    except OSError:
        return []


def stage_resources(steps: Iterable[Any]) -> dict[str, float]:
    """What a stage's tasks need: per resource, the most any of its steps asks for (`Step.resources()`)."""
    out: dict[str, float] = {}
    for s in steps:
        for k, v in (s.resources() or {}).items():
            if v:
                out[k] = max(out.get(k, 0), v)
    return out
