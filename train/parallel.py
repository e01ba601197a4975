"""How the model is spread over processes: DDP (a whole replica per rank) or FSDP2 (each rank holds a shard).

DDP is the default: every rank keeps all weights, gradients and optimiser state, and gradients are all-reduced.
Simple and fastest while the model fits (to ~1B parameters on an 80 GB GPU with AdamW: 16 bytes a parameter).
FSDP2 (`torch.distributed.fsdp.fully_shard`, as torchtitan uses it) shards weights, gradients and optimiser state
over the ranks by rows (DTensor `Shard(0)`): a block's weights are all-gathered just before its forward and
backward and freed after, gradients are reduce-scattered. Per rank that is 16/world bytes a parameter plus one
block's weights in flight. docs/training.md has the measured numbers and when to pick which.
"""

from __future__ import annotations

import inspect
from contextlib import nullcontext
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel as DDP

from curate.models.gpt import GPT

# DDP's switch for the per-forward buffer broadcast; newer torch renames it and deprecates the old name.
NO_BUFFER_SYNC = ({"forward_sync_buffers": False} if "forward_sync_buffers" in inspect.signature(DDP).parameters
                  else {"broadcast_buffers": False})


def parallelize(model: GPT, parallel: str, world: int, device: torch.device, bf16: bool, compile_blocks: bool,
                activation_checkpointing: bool) -> torch.nn.Module:
    """Activation checkpointing, then compile, then the wrapping, per block (torchtitan's order). Returns the module
    the loop calls; under FSDP that is `model` itself, changed in place (its parameters become DTensor shards)."""
    if activation_checkpointing:
        for block in model.blocks:
            block.checkpointed = True
    if compile_blocks:
        model.compile_blocks()
    if parallel == "fsdp" and dist.is_initialized():  # under torchrun, even with one process (a one-rank mesh)
        # bf16 weights in compute, gradients reduced in fp32: the sum over ranks is where bf16 rounding would add up
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 else None
        kw: dict[str, Any] = {"mp_policy": mp} if mp else {}
        for block in model.blocks:
            fully_shard(block, **kw)
        fully_shard(model, **kw)  # the embedding, the final norm and the head (tied or not) as one more group
        return model
    if world == 1:
        return model  # one process: nothing to spread (a sharded state still loads into it, and is saved alike)
    # No buffer sync: the RoPE tables are computed identically on every rank, and DDP would otherwise broadcast them
    # before every forward (older torch also all-reduced and synced the host first, to pick the source rank).
    return DDP(model, device_ids=[device.index] if device.type == "cuda" else None, **NO_BUFFER_SYNC)


def grad_sync(model: torch.nn.Module, sync: bool):
    """Whether this micro-step's backward reduces gradients across ranks (only the last of an accumulation does).
    DDP: a context (`no_sync`); FSDP: a switch, set here, and the returned context does nothing."""
    if isinstance(model, DDP):
        return nullcontext() if sync else model.no_sync()
    if isinstance(model, FSDPModule):
        model.set_requires_gradient_sync(sync)
    return nullcontext()


def full(t: torch.Tensor) -> torch.Tensor:
    """A DTensor's whole value on every rank (a collective); a plain tensor as it is."""
    return t.full_tensor() if isinstance(t, DTensor) else t


def local_bytes(model: torch.nn.Module, optimizer: Any) -> dict[str, int]:
    """Bytes this rank holds of the parameters and of the optimiser state (shards only, under FSDP): what sharding
    divides, read from the tensors themselves rather than from the process's memory."""
    def size(t: torch.Tensor) -> int:
        t = t.to_local() if isinstance(t, DTensor) else t
        return t.numel() * t.element_size()

    params = sum(size(p) for p in model.parameters())
    state = sum(size(v) for opt in optimizer.optimizers for s in opt.state.values() for v in s.values()
                if isinstance(v, torch.Tensor) and v.ndim > 0)  # not the step counters
    return {"params": params, "optimizer": state}
