"""The process group under `torchrun`, and the device each of its processes uses (`curate.models.device`).

Under torchrun every process on a node gets its own GPU, numbered by LOCAL_RANK: `--device cuda` (or `auto`)
means `cuda:LOCAL_RANK`. An explicit `cuda:N` is honoured only when one process runs per node, since with several
it would put them all on GPU N.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from curate.models.device import check_available, resolve_device


def init_distributed(device: str) -> tuple[int, int, torch.device]:
    """(rank, world_size, device). Under torchrun the environment names the rank; otherwise a single process."""
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local_rank, local_world = int(os.environ.get("LOCAL_RANK", 0)), int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    dev = resolve_device(device, local_rank, local_world)
    if dev.type == "cuda":
        check_available(dev, f"--device {device}")
        torch.cuda.set_device(dev)
    # torchrun sets TORCHELASTIC_RUN_ID: a group even for one process, so `--parallel fsdp` runs on a one-rank mesh
    if (world > 1 or "TORCHELASTIC_RUN_ID" in os.environ) and not dist.is_initialized():
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo", device_id=dev if dev.type == "cuda" else None)
    return rank, world, dev
