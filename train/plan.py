"""`plan`: the compute-optimal model size and token count for a FLOP budget, and the curated data that needs.

Chinchilla (Hoffmann et al. 2022) found loss at fixed compute is lowest near D ≈ 20·N training tokens for N
parameters; training costs C ≈ 6·N·D FLOPs (2 for the forward matmuls, 4 for the backward). Solving both:
N = sqrt(C / (6·r)), D = r·N with r the tokens-per-parameter ratio. Repeating data up to ~4 epochs costs little
(Muennighoff et al. 2023), so the unique curated tokens needed are D / epochs.

Memory per GPU (`memory_per_gpu`) counts what sharding divides: fp32 weights (4 bytes a parameter; bf16 autocast
computes in bf16 but keeps fp32 weights), fp32 gradients (4) and the optimiser state (AdamW's two moments: 8; Muon's
momentum: 4, on the blocks' matrices only). DDP holds all of it on every GPU; FSDP holds 1/world of it plus the group
in flight (a block, or the embedding and head, all-gathered in bf16 while the next is prefetched, and its fp32
gradient before the reduce-scatter). Activations are left out: they scale with micro_batch x seq_len, and
--activation_checkpointing keeps a block's input instead of all its activations.
"""

from __future__ import annotations

import math
from typing import Any

from curate.models.gpt import GPT, PRESETS, GPTConfig

H100_BF16 = 989e12
GIB = 2**30


def preset_shapes(name: str, vocab_size: int = 50304) -> dict[str, int]:
    """Parameters of a preset, split by what the optimisers and FSDP see: block matrices (Muon's), other block
    parameters (norm gains), the rest (embedding, head, final norm) and one block (FSDP's unit of all-gather)."""
    import torch

    with torch.device("meta"):
        model = GPT(GPTConfig.preset(name, vocab_size))
    block = sum(p.numel() for p in model.blocks[0].parameters())
    matrices = sum(p.numel() for p in model.blocks.parameters() if p.ndim == 2)
    total = model.num_params(non_embedding=False)
    blocks = sum(p.numel() for p in model.blocks.parameters())
    return {"total": total, "matrices": matrices, "block": block, "outside": total - blocks}


def memory_per_gpu(shapes: dict[str, int], world: int, parallel: str, optimizer: str = "adamw") -> float:
    """Bytes per GPU of weights + gradients + optimiser state (module docstring), without activations."""
    total = shapes["total"]
    state = 8 * total if optimizer == "adamw" else 4 * shapes["matrices"] + 8 * (total - shapes["matrices"])
    whole = 8 * total + state  # fp32 weights and gradients, and the optimiser state
    if parallel == "ddp" or world == 1:
        return float(whole)
    in_flight = 2 * (2 * max(shapes["block"], shapes["outside"])) + 4 * max(shapes["block"], shapes["outside"])
    return whole / world + in_flight


def preset_params(name: str, vocab_size: int = 50304) -> int:
    """Total parameters of a preset (with an untied embedding and head), built on the meta device: no memory."""
    import torch

    with torch.device("meta"):
        return GPT(GPTConfig.preset(name, vocab_size)).num_params(non_embedding=False)


def plan(compute: float, tokens_per_param: float = 20.0, epochs: float = 1.0, batch_tokens: int = 524288,
         mfu: float = 0.4, peak_flops: float = H100_BF16, world: int = 8, optimizer: str = "adamw") -> dict[str, Any]:
    if compute <= 0 or tokens_per_param <= 0 or epochs <= 0:
        raise ValueError("compute, tokens_per_param and epochs must be positive")
    params = math.sqrt(compute / (6 * tokens_per_param))
    tokens = tokens_per_param * params
    sizes = {name: preset_params(name) for name in PRESETS}
    nearest = min(sizes, key=lambda n: abs(math.log(sizes[n] / params)))
    return {
        "compute": compute,
        "params": params,
        "tokens": tokens,
        "curated_tokens": tokens / epochs,
        "steps": math.ceil(tokens / batch_tokens),
        "batch_tokens": batch_tokens,
        "nearest_preset": nearest,
        "nearest_preset_params": sizes[nearest],
        "nearest_preset_tokens": tokens_per_param * sizes[nearest],
        "gpu_hours": compute / (mfu * peak_flops) / 3600,
        "mfu": mfu,
        "world": world,
        "optimizer": optimizer,
        "memory_gib": {par: memory_per_gpu(preset_shapes(nearest), world, par, optimizer) / GIB
                       for par in ("ddp", "fsdp")},
    }


def _si(x: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def format_plan(p: dict[str, Any], tokens_per_param: float, epochs: float) -> str:
    return "\n".join([
        f"compute budget      C = {p['compute']:.3g} FLOPs  (C ≈ 6·N·D, D ≈ {tokens_per_param:g}·N)",
        f"model size          N ≈ {_si(p['params'])} parameters",
        f"training tokens     D ≈ {_si(p['tokens'])} tokens = {p['steps']:,} steps of {_si(p['batch_tokens'])}",
        f"curated tokens        ≈ {_si(p['curated_tokens'])} unique tokens at {epochs:g} epoch(s)",
        f"nearest preset        {p['nearest_preset']} ({_si(p['nearest_preset_params'])} parameters -> "
        f"{_si(p['nearest_preset_tokens'])} tokens)",
        f"time                  ≈ {p['gpu_hours']:,.1f} H100-hours at {p['mfu']:.0%} MFU",
        f"memory per GPU        {p['nearest_preset']}, {p['optimizer']}, {p['world']} GPUs: "
        f"DDP {p['memory_gib']['ddp']:.1f} GiB, FSDP {p['memory_gib']['fsdp']:.1f} GiB "
        "(weights + grads + optimiser state; activations extra)",
    ])
