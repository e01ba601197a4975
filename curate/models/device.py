"""Which device a process uses: `auto` | `cpu` | `cuda` | `cuda:N`, and the dtype a model runs in there.

Shared by the trainer (`train.devices`, which adds the process group under `torchrun`) and the inference layer
(`curate.models.inference`). Under torchrun every process on a node gets its own GPU, numbered by LOCAL_RANK:
`cuda` (or `auto`) means `cuda:LOCAL_RANK`. An explicit `cuda:N` is honoured only when one process runs per node,
since with several it would put them all on GPU N.
"""

from __future__ import annotations

import torch


class DeviceError(ValueError):
    """A device this process cannot use."""


def resolve_device(name: str, local_rank: int = 0, local_world: int = 1) -> torch.device:
    """`auto` | `cpu` | `cuda` | `cuda:N` -> the torch.device this process should use (always indexed for CUDA)."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise DeviceError(f"device {name!r}: use auto, cpu, cuda or cuda:N") from None
    if dev.type != "cuda":
        return dev
    if dev.index is None:
        return torch.device("cuda", local_rank)
    if local_world > 1:
        raise DeviceError(f"--device {name} would put all {local_world} processes of this node on one GPU; "
                          "use --device cuda (each process takes cuda:LOCAL_RANK)")
    return dev


def check_available(dev: torch.device, asked: str) -> None:
    """A CUDA device where this PyTorch has no CUDA, or fewer GPUs than the index: one DeviceError."""
    if dev.type != "cuda":
        return
    if not torch.cuda.is_available():
        raise DeviceError(f"device {asked}: CUDA is not available to this PyTorch ({torch.__version__})")
    if dev.index is not None and dev.index >= torch.cuda.device_count():
        raise DeviceError(f"device {asked}: this process sees {torch.cuda.device_count()} GPU(s)")


def inference_dtype(dev: torch.device, dtype: str = "auto") -> torch.dtype:
    """`auto`: bfloat16 on a CUDA device that supports it, else float32 (CPU: always float32). Or a name:
    float32 | bfloat16 | float16."""
    if dtype == "auto":
        if dev.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
             "float16": torch.float16, "fp16": torch.float16}
    if dtype not in table:
        raise DeviceError(f"dtype {dtype!r}: use auto, float32, bfloat16 or float16")
    return table[dtype]
