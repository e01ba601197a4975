"""Optimisers and learning-rate schedules.

AdamW decays only matrices that multiply activations; norms' gains and the embedding table are exempt because
shrinking them toward zero fights what they represent (a scale, a lookup) rather than regularising.
Muon (orthogonalised momentum, torch.optim.Muon) is meant for the 2-D weight matrices inside the blocks only;
the embedding, the LM head and the norm gains stay with AdamW. The two are wrapped so the loop calls one `step`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from train.config import Config


class Optimizers:
    """Several optimisers driven as one: `step`, `zero_grad`, `param_groups` and state dicts span all of them."""

    def __init__(self, *optimizers: torch.optim.Optimizer):
        self.optimizers = optimizers

    @property
    def param_groups(self) -> Iterator[dict[str, Any]]:
        for opt in self.optimizers:
            yield from opt.param_groups

    def step(self) -> None:
        for opt in self.optimizers:
            opt.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> list[dict[str, Any]]:
        return [opt.state_dict() for opt in self.optimizers]

    def load_state_dict(self, states: list[dict[str, Any]]) -> None:
        if len(states) != len(self.optimizers):
            raise ValueError("checkpoint was written with a different optimizer setting")
        for opt, state in zip(self.optimizers, states, strict=True):
            opt.load_state_dict(state)


def build_optimizer(model: nn.Module, cfg: Config, device: torch.device) -> Optimizers:
    """AdamW (fused on CUDA) alone, or Muon for the blocks' matrices plus AdamW for everything else."""
    embed = {id(model.get_submodule("embed").weight)}
    blocks = {id(p) for p in model.get_submodule("blocks").parameters()}
    hidden, decay, no_decay = [], [], []
    for p in model.parameters():  # shared (tied) tensors are yielded once
        if p.ndim == 2 and id(p) in blocks:
            hidden.append(p)
        elif p.ndim == 2 and id(p) not in embed:
            decay.append(p)  # the untied LM head
        else:
            no_decay.append(p)  # norm gains, the embedding
    if cfg.optimizer == "adamw":
        decay, hidden = decay + hidden, []
    adam_groups = [
        {"params": decay, "weight_decay": cfg.weight_decay, "base_lr": cfg.lr},
        {"params": no_decay, "weight_decay": 0.0, "base_lr": cfg.lr},
    ]
    optimizers: list[torch.optim.Optimizer] = [
        torch.optim.AdamW(
            [g for g in adam_groups if g["params"]],
            lr=cfg.lr,
            betas=(cfg.beta1, cfg.beta2),
            eps=1e-8,
            fused=device.type == "cuda",
        )
    ]
    if hidden:
        if not hasattr(torch.optim, "Muon"):
            raise ValueError(f"optimizer = 'muon' needs torch >= 2.9 (torch.optim.Muon); this is torch {torch.__version__}")
        optimizers.append(
            torch.optim.Muon(
                [{"params": hidden, "base_lr": cfg.muon_lr}],
                lr=cfg.muon_lr,
                weight_decay=cfg.weight_decay,
                momentum=cfg.muon_momentum,
                nesterov=True,
                ns_steps=5,
            )
        )
    return Optimizers(*optimizers)


def lr_factor(step: int, cfg: Config) -> float:
    """Multiplier on each group's base learning rate at `step` (0-based), a pure function so resume is exact.

    cosine: linear warmup, then half a cosine from 1 down to `min_lr_frac` at the last step.
    wsd: linear warmup, constant, then linear decay to `min_lr_frac` over the last `decay_frac` of the run;
    the stable phase means one run can be branched into several lengths, decaying only at the end of each.
    """
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.schedule == "cosine":
        progress = (step - cfg.warmup_steps) / max(1, cfg.steps - 1 - cfg.warmup_steps)
        return cfg.min_lr_frac + (1 - cfg.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))
    decay_steps = max(1, round(cfg.decay_frac * cfg.steps))
    decay_start = cfg.steps - decay_steps
    if step < decay_start:
        return 1.0
    progress = (step - decay_start + 1) / decay_steps
    return 1.0 - (1 - cfg.min_lr_frac) * min(progress, 1.0)


def set_lr(optimizer: Optimizers, factor: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = group["base_lr"] * factor
