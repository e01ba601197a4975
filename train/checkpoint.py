"""Checkpoints: everything a run needs to continue bit for bit, written so a crash never leaves a torn file."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

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
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def load(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    path = Path(path)
    if path.is_dir():
        path = path / CKPT_NAME
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    # weights_only=False: the state holds numpy RNG state and plain config dicts, and we wrote it ourselves.
    return torch.load(path, map_location=map_location, weights_only=False)
