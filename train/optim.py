"""Optimisers and learning-rate schedules.

AdamW decays only matrices that multiply activations; norms' gains and the embedding table are exempt because
shrinking them toward zero fights what they represent (a scale, a lookup) rather than regularising.
Muon (orthogonalised momentum) is meant for the 2-D weight matrices inside the blocks only; the embedding, the
LM head and the norm gains stay with AdamW. The two are wrapped so the loop calls one `step`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
from torch.distributed.tensor import DTensor

from curate.models.gpt import FUSED_ROWS
from train.config import Config

# Keller Jordan's quintic Newton-Schulz coefficients (https://kellerjordan.github.io/posts/muon/).
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


class Optimizers:
    """Several optimisers driven as one: `step`, `zero_grad` and `param_groups` span all of them (their state is
    saved by parameter name through `checkpoint.OptimizerState`)."""

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



def newton_schulz(g: torch.Tensor, steps: int = 5, eps: float = 1e-7) -> torch.Tensor:
    """Approximately orthogonalise each matrix of a (k, m, n) stack: U·S'·Vᵀ with S' ≈ 1, in bf16, as Keller
    Jordan's Muon does (the quintic pushes singular values into about [0.7, 1.2], which trains as well as exact UVᵀ)."""
    a, b, c = NS_COEFFICIENTS
    x = g.bfloat16()
    tall = x.size(-2) > x.size(-1)
    if tall:  # iterate on the smaller Gram matrix
        x = x.mT
    x = x / x.norm(dim=(-2, -1), keepdim=True).clamp(min=eps)  # spectral norm <= Frobenius norm <= 1
    for _ in range(steps):
        gram = x @ x.mT
        x = torch.baddbmm(x, torch.baddbmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.mT if tall else x


class Muon(torch.optim.Optimizer):
    """Muon: SGD with Nesterov momentum whose update is orthogonalised by Newton-Schulz (Keller Jordan), for 2-D
    weights only. Two things torch.optim.Muon does not do:

    * A group's `blocks` splits each weight by rows into that many matrices (Q, K, V of a fused qkv), each
      orthogonalised and LR-scaled on its own, as separate weights would be (modded-nanogpt does the same).
    * Under DDP the Newton-Schulz work is shared out: every rank updates the momentum of every weight (cheap,
      and it keeps the full optimizer state on each rank), but applies the orthogonalised update only to its share
      of the weights and then broadcasts them. The result is the same, bit for bit, as one process doing all of it
      (`shard=False`).
    * Under FSDP a weight is a DTensor of row shards, and so are its gradient and momentum (the optimiser state is
      sharded too). Each weight has an owner rank (the same balanced share-out): the ranks send it their rows of the
      Nesterov momentum, it orthogonalises the whole matrix as above and sends each rank back its rows of the
      update (`_update_sharded`). Same numbers as one process, one Newton-Schulz per matrix in the whole job.
    """

    def __init__(self, params, lr: float = 0.02, weight_decay: float = 0.0, momentum: float = 0.95,
                 nesterov: bool = True, ns_steps: int = 5, shard: bool = True):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                                      ns_steps=ns_steps, blocks=1))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2 or p.size(0) % group["blocks"]:
                    raise ValueError(f"Muon: {tuple(p.shape)} is not a 2-D weight of {group['blocks']} row blocks")
        distributed = shard and dist.is_available() and dist.is_initialized()
        self.rank, self.world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)

    @torch.no_grad()
    def step(self, closure=None) -> None:  # `closure` for torch.distributed.checkpoint's state initialisation
        params = [(p, group) for group in self.param_groups for p in group["params"] if p.grad is not None]
        owner = share_out([p.numel() for p, _ in params], self.world)
        replicated = []  # (weight, owner) of the plain tensors: DDP's whole replicas
        for (p, group), rank in zip(params, owner, strict=True):
            buf = self.state[p].setdefault("momentum_buffer", torch.zeros_like(p))
            buf.lerp_(p.grad, 1 - group["momentum"])  # on every rank, of its whole weight or of its shard
            update = p.grad.lerp(buf, group["momentum"]) if group["nesterov"] else buf
            if isinstance(p, DTensor):
                self._update_sharded(p, update, group, rank)
            else:
                replicated.append((p, rank))
                if rank == self.rank:
                    self._update(p, update, group)
        for rank in range(self.world) if self.world > 1 else ():
            self._broadcast([p for p, r in replicated if r == rank], src=rank)

    @staticmethod
    def _orthogonalise(momentum: torch.Tensor, group: dict[str, Any]) -> torch.Tensor:
        """The bf16 Newton-Schulz image of a whole weight's momentum, each of the `blocks` row blocks on its own."""
        k = group["blocks"]
        return newton_schulz(momentum.view(k, momentum.size(0) // k, momentum.size(1)), group["ns_steps"]).reshape(
            momentum.shape)

    @staticmethod
    def _apply(p: torch.Tensor, ortho: torch.Tensor, shape: torch.Size, group: dict[str, Any]) -> None:
        """Decay `p` (a whole weight or its rows), then step along its rows of the orthogonalised momentum."""
        rows, cols = shape[0] // group["blocks"], shape[1]
        p.mul_(1 - group["lr"] * group["weight_decay"])
        p.add_(ortho, alpha=-group["lr"] * math.sqrt(max(1, rows / cols)))  # Keller's shape scaling, per block

    def _update(self, p: torch.Tensor, momentum: torch.Tensor, group: dict[str, Any]) -> None:
        self._apply(p, self._orthogonalise(momentum, group), p.shape, group)

    def _update_sharded(self, p: DTensor, momentum: DTensor, group: dict[str, Any], owner: int) -> None:
        """Gather the rows of `momentum` on the owner rank, orthogonalise there, scatter each rank its rows (bf16).
        FSDP2 shards by `torch.chunk` on rows: rank r holds rows [r*c, (r+1)*c) with c = ceil(rows / world), the
        last ranks fewer or none, so every piece is padded to c rows for the collectives."""
        mesh = p.device_mesh
        pg, world, me = mesh.get_group(), mesh.size(), mesh.get_local_rank()
        src = dist.get_global_rank(pg, owner)
        rows, cols = p.shape
        c = -(-rows // world)
        mine = momentum.to_local()
        piece = mine.new_zeros(c, cols)
        piece[: mine.size(0)] = mine
        pieces = [torch.empty_like(piece) for _ in range(world)] if me == owner else None
        dist.gather(piece, pieces, dst=src, group=pg)
        out = torch.empty(c, cols, dtype=torch.bfloat16, device=piece.device)
        if me == owner:
            ortho = self._orthogonalise(torch.cat(pieces)[:rows], group)
            pieces = list(torch.cat([ortho, ortho.new_zeros(c * world - rows, cols)]).split(c))
        dist.scatter(out, pieces, src=src, group=pg)
        local = p.to_local()
        self._apply(local, out[: local.size(0)], p.shape, group)

    @staticmethod
    def _broadcast(params: list[torch.Tensor], src: int) -> None:
        """The weights rank `src` updated, sent to all ranks in one flat message."""
        if params:
            flat = _flatten_dense_tensors(params)
            dist.broadcast(flat, src=src)
            for p, new in zip(params, _unflatten_dense_tensors(flat, params), strict=True):
                p.copy_(new)


def share_out(sizes: list[int], world: int) -> list[int]:
    """A rank for each item, balancing the total size per rank (largest first onto the least loaded rank); the
    same on every rank because it depends only on the sizes."""
    load, owner = [0] * world, [0] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        owner[i] = min(range(world), key=lambda r: (load[r], r))
        load[owner[i]] += sizes[i]
    return owner


def build_optimizer(model: nn.Module, cfg: Config, device: torch.device) -> Optimizers:
    """AdamW (fused on CUDA) alone, or Muon for the blocks' matrices plus AdamW for everything else."""
    embed = {id(model.get_submodule("embed").weight)}
    blocks = {id(p) for p in model.get_submodule("blocks").parameters()}
    hidden: dict[int, list[nn.Parameter]] = {}  # by number of stacked row blocks
    decay, no_decay = [], []
    for name, p in model.named_parameters():  # shared (tied) tensors are yielded once
        if p.ndim == 2 and id(p) in blocks:
            k = next((n for suffix, n in FUSED_ROWS.items() if name.endswith(suffix)), 1)
            hidden.setdefault(k, []).append(p)
        elif p.ndim == 2 and id(p) not in embed:
            decay.append(p)  # the untied LM head
        else:
            no_decay.append(p)  # norm gains, the embedding
    if cfg.optimizer == "adamw":
        decay, hidden = decay + [p for ps in hidden.values() for p in ps], {}
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
        optimizers.append(
            Muon(
                [{"params": ps, "blocks": k, "base_lr": cfg.muon_lr} for k, ps in sorted(hidden.items())],
                lr=cfg.muon_lr,
                weight_decay=cfg.muon_weight_decay,
                momentum=cfg.muon_momentum,
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
