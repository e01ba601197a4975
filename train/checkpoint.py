"""Checkpoints: everything a run needs to continue bit for bit, written so a crash never leaves a torn file.

Loaded with `torch.load(weights_only=True)` only: a checkpoint holds tensors and plain Python values (dicts, lists,
numbers, strings), never pickled objects, so a downloaded `ckpt.pt` cannot run code when `sample`, `surprise` or
`--resume` opens it. That is why the NumPy RNG state is stored as a tensor and numbers rather than NumPy's tuple.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.utils._pytree import tree_map

CKPT_NAME = "ckpt.pt"


def save_atomic(state: dict[str, Any], path: Path) -> None:
    """Write to a temporary file in the same directory, fsync, then rename over the old checkpoint: the rename is
    atomic, so a kill at any moment leaves either the previous checkpoint or the new one, never half of one."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk or a kill mid-write must not leave a half file behind
        raise


def rng_state() -> dict[str, Any]:
    """This process's RNG states as CPU tensors and plain numbers (loadable with weights_only=True)."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    version, mt, gauss_next = random.getstate()
    state = {
        "python": {"version": version, "state": torch.tensor(mt, dtype=torch.int64), "gauss_next": gauss_next},
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(gauss)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state()  # this process's own device only (each rank saves its own)
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore `rng_state()`. The generators take CPU ByteTensors only, so every tensor is brought to the CPU
    first, wherever the checkpoint was mapped (checkpoint.load keeps "rng" on the CPU anyway)."""
    py = state["python"]
    random.setstate((py["version"], tuple(py["state"].tolist()), py["gauss_next"]))
    npy = state["numpy"]
    keys = npy["keys"].cpu().numpy().astype(np.uint32)
    np.random.set_state((npy["kind"], keys, npy["pos"], npy["has_gauss"], npy["cached_gaussian"]))
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"].cpu())


def rng_states(world: int) -> list[dict[str, Any]]:
    """Every rank's `rng_state()`, in rank order (a collective under DDP: all ranks must call it)."""
    mine = rng_state()
    if world == 1:
        return [mine]
    states: list[Any] = [None] * world
    dist.all_gather_object(states, mine)
    return [tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, s) for s in states]


def restore_rng(states: list[dict[str, Any]], rank: int, world: int, seed: int) -> bool:
    """Give this rank the RNG state it saved. After a change of world size there is no saved state to match each
    rank, so every rank is reseeded from (seed, rank) instead; returns whether the saved state was restored."""
    if len(states) == world:
        set_rng_state(states[rank])
        return True
    seed_rank(seed, rank)
    return False


def seed_rank(seed: int, rank: int) -> None:
    """Seed Python's, NumPy's and torch's generators for this rank: a stream of its own, reproducible from the seed."""
    torch.manual_seed(seed + 1 + rank)
    np.random.seed(seed + 1 + rank)
    random.seed(seed + 1 + rank)


def load(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """A checkpoint's state with its tensors on `map_location`, except the RNG states, which stay on the CPU
    (the only place a generator accepts them). Refuses anything but tensors and plain values (weights_only)."""
    path = Path(path)
    if path.is_dir():
        path = path / CKPT_NAME
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if torch.device(map_location).type == "cpu":
        return state
    move = lambda t: t.to(map_location) if isinstance(t, torch.Tensor) else t  # noqa: E731
    return {k: v if k == "rng" else tree_map(move, v) for k, v in state.items()}


class ResumeError(ValueError):
    """A checkpoint that this run cannot continue (another global batch or sequence length)."""
