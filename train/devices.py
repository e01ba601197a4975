"""Which device a process uses, and the process group under `torchrun`.

Under torchrun every process on a node gets its own GPU, numbered by LOCAL_RANK: `--device cuda` (or `auto`)
means `cuda:LOCAL_RANK`. An explicit `cuda:N` is honoured only when one process runs per node, since with several
it would put them all on GPU N.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


class DeviceError(ValueError):
    """A --device this process cannot use."""


def resolve_device(name: str, local_rank: int = 0, local_world: int = 1) -> torch.device:
    """`auto` | `cpu` | `cuda` | `cuda:N` -> the torch.device this process should use (always indexed for CUDA)."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(name)
    if dev.type != "cuda":
        return dev
    if dev.index is None:
        return torch.device("cuda", local_rank)
    if local_world > 1:
        raise DeviceError(f"--device {name} would put all {local_world} processes of this node on one GPU; "
                         "use --device cuda (each process takes cuda:LOCAL_RANK)")
    return dev


def init_distributed(device: str) -> tuple[int, int, torch.device]:
    """(rank, world_size, device). Under torchrun the environment names the rank; otherwise a single process."""
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local_rank, local_world = int(os.environ.get("LOCAL_RANK", 0)), int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    dev = resolve_device(device, local_rank, local_world)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError(f"--device {device}: CUDA is not available to this PyTorch ({torch.__version__})")
        torch.cuda.set_device(dev)
    # torchrun sets TORCHELASTIC_RUN_ID: a group even for one process, so `--parallel fsdp` runs on a one-rank mesh
    if (world > 1 or "TORCHELASTIC_RUN_ID" in os.environ) and not dist.is_initialized():
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo", device_id=dev if dev.type == "cuda" else None)
    return rank, world, dev
