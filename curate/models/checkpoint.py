"""Reading this project's checkpoints: the single-file export (`RUN/ckpt.pt`) and the model and tokenizer it names.

The one reader both curation (the inference layer, `curate.models.inference`) and the trainer (`train.checkpoint`,
which writes checkpoints and resumes training states; `train.generate`, `train.evaluate`) use.

An export is the full model weights and what is needed to use them, one file, loaded with
`torch.load(weights_only=True)` only (tensors and plain values, never pickled objects, so a downloaded `ckpt.pt`
cannot run code), with a checksum: a bit flipped on disk is a `CheckpointError` naming the file, never weights
silently different. `load_checkpoint(path, device)` gives the model in eval mode and the tokenizer it was trained
with (refusing one whose sha256 is not the checkpoint's).
"""

from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer

from curate.models.device import resolve_device
from curate.models.gpt import GPT, GPTConfig

CKPT_NAME = "ckpt.pt"  # the export, in a run folder


class CheckpointError(ValueError):
    """A checkpoint that cannot be read: truncated, bit-flipped, or with a shard missing."""


def digest(state: dict[str, Any]) -> str:
    """sha256 of an export's contents: every tensor's name, dtype, shape and bytes, and the other values as JSON."""
    h = hashlib.sha256()
    for name in sorted(state["model"]):
        t = state["model"][name].detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    rest = {k: v for k, v in state.items() if k not in ("model", "sha256")}
    h.update(json.dumps(rest, sort_keys=True, default=str).encode())
    return h.hexdigest()


def load(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """An exported checkpoint's state with its tensors on `map_location`, its checksum verified. Refuses anything
    but tensors and plain values (weights_only); a truncated or corrupt file is one CheckpointError."""
    path = Path(path)
    if path.is_dir():
        path = path / CKPT_NAME
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise  # weights_only refused an object: a refusal, not damage
    except (RuntimeError, EOFError, ValueError, KeyError, OSError) as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"{path} is not a readable checkpoint (truncated or corrupt: {reason})") from e
    if "sha256" in state and digest(state) != state["sha256"]:
        raise CheckpointError(f"{path} does not match its checksum: the file is corrupt")
    if torch.device(map_location).type == "cpu" or "model" not in state:
        return state
    return {**state, "model": {k: v.to(map_location) for k, v in state["model"].items()}}


def matching_tokenizer(found: list[Path], recorded: dict[str, Any] | None, what: Path | str) -> Path:
    """Of the tokenizer files `found`, the first that is the one `recorded` (the checkpoint's `tokenizer` entry)
    names by sha256; without a recorded sha256 (an older checkpoint), the first. None matching: one CheckpointError
    naming both."""
    want = (recorded or {}).get("sha256")
    if not want:
        return found[0]
    for path in found:
        if file_sha256(path) == want:
            return path
    got = file_sha256(found[0])
    raise CheckpointError(f"{what} was trained with the tokenizer of sha256 {want[:16]}…, but {found[0]} is "
                          f"sha256 {got[:16]}…" + (f" (and {len(found) - 1} other candidate(s) differ too)"
                                                   if len(found) > 1 else "")
                          + ": its ids would decode into other text; put the run's own tokenizer.json beside it")


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes: a tokenizer's identity, as `curate tokenize` records it in the token manifest; the
    checksums of a training state's files."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class Loaded:
    model: GPT
    tokenizer: Tokenizer
    eos_id: int
    step: int

    @property
    def device(self) -> torch.device:
        return self.model.embed.weight.device

    def ids(self, ids: list[int]) -> torch.Tensor:
        """A batch of one sequence, on the model's device."""
        return torch.tensor([ids], device=self.device)


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu", dtype: torch.dtype | None = None) -> Loaded:
    """The model of a checkpoint (an export file, or a run folder holding one), in eval mode, and its tokenizer: the
    copy the trainer put beside it, else the token directory's; the first whose sha256 is the one the checkpoint was
    trained with. A tokenizer that is not that one is refused (CheckpointError), since its ids would decode the
    model's predictions into other text. `dtype`: the weights' dtype (None: as saved, float32)."""
    path = Path(path)
    dev = device if isinstance(device, torch.device) else resolve_device(device)
    state = load(path, map_location=dev)
    with dev:
        model = GPT(GPTConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    if dtype is not None:
        model.to(dtype)
    model.eval()
    run_dir = path if path.is_dir() else path.parent
    candidates = [run_dir / "tokenizer.json"]
    data = state["config"].get("data")
    if data and state.get("tokenizer"):
        candidates.append(Path(data) / state["tokenizer"].get("file", "tokenizer.json"))
    found = [p for p in candidates if p.is_file()]
    if not found:
        raise FileNotFoundError(f"no tokenizer found for {path} (looked at {', '.join(map(str, candidates))})")
    tok_path = matching_tokenizer(found, state.get("tokenizer"), path)
    return Loaded(model, Tokenizer.from_file(str(tok_path)), state["eos_id"], state["step"])
