"""`plan`: the compute-optimal model size and token count for a FLOP budget, and the curated data that needs.

Chinchilla (Hoffmann et al. 2022) found loss at fixed compute is lowest near D ≈ 20·N training tokens for N
parameters; training costs C ≈ 6·N·D FLOPs (2 for the forward matmuls, 4 for the backward). Solving both:
N = sqrt(C / (6·r)), D = r·N with r the tokens-per-parameter ratio. Repeating data up to ~4 epochs costs little
(Muennighoff et al. 2023), so the unique curated tokens needed are D / epochs.
"""

from __future__ import annotations

import math
from typing import Any

from train.model import GPT, PRESETS, GPTConfig

H100_BF16 = 989e12


def preset_params(name: str, vocab_size: int = 50304) -> int:
    """Total parameters of a preset (with an untied embedding and head), built on the meta device: no memory."""
    import torch

    with torch.device("meta"):
        return GPT(GPTConfig.preset(name, vocab_size)).num_params(non_embedding=False)


def plan(compute: float, tokens_per_param: float = 20.0, epochs: float = 1.0, batch_tokens: int = 524288,
         mfu: float = 0.4, peak_flops: float = H100_BF16) -> dict[str, Any]:
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
    ])
