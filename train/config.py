"""Training configuration: one flat dataclass, filled from a TOML file and then `--key value` overrides.

Flat on purpose (as nanoGPT's globals): every knob has one name, which is also its TOML key and its command-line
flag, so a run is reproduced from the `config` stored in its checkpoint or its metrics.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import torch

from curate.models.gpt import PRESETS

CONFIG_DIR = Path(__file__).parent / "configs"
MAX_SEED = 2**31 - 1


class ConfigError(ValueError):
    """A config value the trainer cannot run with (one line: the key, the value, what is allowed)."""


@dataclass
class Config:
    # data and output
    data: str = ""  # directory of token shards written by `curate tokenize`
    out: str = "runs/default"  # checkpoints, metrics.jsonl and plots
    source_weights: dict[str, float] = field(default_factory=dict)  # re-weight sources at train time; {} = as mixed
    # model
    model: str = "tiny"  # preset in curate.models.gpt.PRESETS
    n_layer: int = 0  # 0 = take from the preset
    n_head: int = 0
    n_embd: int = 0
    seq_len: int = 256
    qk_norm: bool = True
    tie_embeddings: bool = False
    # batch: the global batch is fixed in tokens; accumulation = batch_tokens / (micro_batch * seq_len * world)
    batch_tokens: int = 8192
    micro_batch: int = 16
    # optimisation
    steps: int = 500
    stop_at: int = 0  # end this invocation at this step (checkpointed; resume later); 0 = run to `steps`
    optimizer: str = "adamw"  # adamw | muon (Muon for 2-D hidden matrices, AdamW for the rest)
    lr: float = 3e-3  # AdamW peak learning rate (for embeddings, head and norms when optimizer = muon)
    muon_lr: float = 0.02
    muon_momentum: float = 0.95
    muon_weight_decay: float = 0.01  # Muon's own decay per unit lr (Keller Jordan's Muon: 0.01 or 0 at lr 0.02)
    weight_decay: float = 0.1  # AdamW's
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0  # max global grad norm; 0 = off
    divergence_factor: float = 1.5  # stop when the loss exceeds this multiple of the first step's (~ln vocab); 0 = off
    schedule: str = "cosine"  # cosine (warmup + cosine to min_lr_frac) | wsd (warmup, stable, linear decay)
    warmup_steps: int = 50
    decay_frac: float = 0.2  # wsd: fraction of steps spent decaying
    min_lr_frac: float = 0.1  # the schedule ends at lr * min_lr_frac
    # evaluation, logging, checkpoints
    eval_every: int = 100  # validation loss every N steps (and at the end); 0 = never
    eval_batches: int = 8  # validation loss over this many global batches of batch_tokens, whatever the world size
    log_every: int = 10
    ckpt_every: int = 200  # 0 = only at the end
    plots: bool = True
    progress: bool = True
    # runtime
    seed: int = 0
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: str = "auto"  # auto (bf16 autocast on CUDA, fp32 on CPU) | bfloat16 | float32
    compile: str = "auto"  # auto (on for CUDA, off for CPU) | on | off
    parallel: str = "ddp"  # ddp (a whole replica per rank) | fsdp (weights, grads, optimiser state sharded: FSDP2)
    activation_checkpointing: bool = False  # recompute each block's activations in backward (less memory, ~1/3 more compute)
    export: bool = True  # write OUT/ckpt.pt (full weights, one file) at checkpoints (DDP) or at the end (FSDP)

    def validate(self) -> Config:
        """Reject values that would fail later, and more obscurely, before any work is done: every error is one
        ConfigError naming the key, raised when the config is read (the command line's parse time)."""
        choices = {
            "model": sorted(PRESETS),
            "optimizer": ["adamw", "muon"],
            "schedule": ["cosine", "wsd"],
            "dtype": ["auto", "bfloat16", "float32"],
            "compile": ["auto", "on", "off"],
            "parallel": ["ddp", "fsdp"],
        }
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise ConfigError(f"{key} = {getattr(self, key)!r} is not one of {allowed}")
        for key, f in FIELDS.items():  # nan and inf pass every comparison below (nan < 0 is False): refused here
            if f.type in ("float", float) and not math.isfinite(getattr(self, key)):
                raise ConfigError(f"{key} must be a finite number, got {getattr(self, key)}")
        for key in ("seq_len", "batch_tokens", "micro_batch", "steps", "eval_batches", "log_every"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"{key} must be positive, got {getattr(self, key)}")
        for key in ("n_layer", "n_head", "n_embd", "stop_at", "warmup_steps", "eval_every", "ckpt_every"):
            if getattr(self, key) < 0:
                raise ConfigError(f"{key} must be >= 0, got {getattr(self, key)}")
        for key in ("lr", "muon_lr", "muon_weight_decay", "weight_decay", "grad_clip", "divergence_factor"):
            if getattr(self, key) < 0:
                raise ConfigError(f"{key} must be >= 0, got {getattr(self, key)}")
        for key in ("beta1", "beta2", "muon_momentum", "decay_frac", "min_lr_frac"):
            if not 0 <= getattr(self, key) <= 1:
                raise ConfigError(f"{key} must be in [0, 1], got {getattr(self, key)}")
        if not 0 <= self.seed <= MAX_SEED:  # NumPy seeds each rank with seed + 1 + rank, in [0, 2**32)
            raise ConfigError(f"seed must be in [0, {MAX_SEED}], got {self.seed}")
        if self.warmup_steps >= self.steps:
            raise ConfigError(f"warmup_steps ({self.warmup_steps}) must be below steps ({self.steps})")
        weights = self.source_weights
        if any(not math.isfinite(w) or w < 0 for w in weights.values()) or (weights and sum(weights.values()) <= 0):
            shown = ", ".join(f"{k}={v:g}" for k, v in weights.items())
            raise ConfigError(f"source_weights must be finite, >= 0 and not all 0, got {shown}")
        heads, width = (getattr(self, k) or PRESETS[self.model][k] for k in ("n_head", "n_embd"))
        if width % heads:
            preset = [k for k in ("n_head", "n_embd") if not getattr(self, k)]
            raise ConfigError(f"n_embd ({width}) must be a multiple of n_head ({heads})"
                              + (f" ({' and '.join(preset)} from model {self.model!r})" if preset else ""))
        if (width // heads) % 2:
            raise ConfigError(f"the head size n_embd / n_head = {width} / {heads} = {width // heads} must be even "
                              "(rotary embeddings turn pairs of dimensions)")
        if self.device != "auto":
            try:
                kind = torch.device(self.device).type
            except RuntimeError:
                kind = None
            if kind not in ("cpu", "cuda"):
                raise ConfigError(f"device = {self.device!r} is not one of auto, cpu, cuda, cuda:N")
        if not self.out:
            raise ConfigError("out must name a directory")
        self.grad_accum(1)  # the global batch is whole micro-batches (checked again for the world at launch)
        return self

    def grad_accum(self, world_size: int) -> int:
        """Micro-steps per optimizer step so that one step sees exactly `batch_tokens` tokens across all ranks."""
        per_micro = self.micro_batch * self.seq_len * world_size
        if self.batch_tokens % per_micro:
            raise ConfigError(
                f"batch_tokens ({self.batch_tokens}) must be a multiple of micro_batch * seq_len * world_size "
                f"({self.micro_batch} * {self.seq_len} * {world_size} = {per_micro}): change micro_batch or "
                "batch_tokens"
            )
        return self.batch_tokens // per_micro

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


FIELDS = {f.name: f for f in dataclasses.fields(Config)}


def _convert(key: str, value: Any) -> Any:
    """Coerce a TOML or command-line value to the field's type, with an error that names the key."""
    kind = type(getattr(Config(), key))
    if kind is dict:
        if isinstance(value, str):  # --source_weights web=0.7,wiki=0.3
            try:
                value = {k.strip(): float(v) for k, v in (item.split("=") for item in value.split(",") if item)}
            except ValueError as e:
                raise ValueError(f"{key}: expected name=weight,name=weight, got {value!r}") from e
        if not isinstance(value, dict):
            raise ValueError(f"{key}: expected a table of name = weight, got {value!r}")
        return {str(k): float(v) for k, v in value.items()}
    if kind is bool:
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("1", "true", "yes", "on"):
            return True
        if str(value).lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{key}: expected true or false, got {value!r}")
    if isinstance(value, bool) or (kind is not str and isinstance(value, (dict, list))):
        raise ValueError(f"{key}: expected {kind.__name__}, got {value!r}")
    try:
        if kind is int:
            f = float(value)  # accept 1e6 and 1_000_000 for counts, but not 2.5
            if f != int(f):
                raise ValueError
            return int(f)
        return kind(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{key}: expected {kind.__name__}, got {value!r}") from e


def _check_key(key: str) -> str:
    key = key.replace("-", "_")
    if key not in FIELDS:
        close = difflib.get_close_matches(key, FIELDS, n=1)
        raise ValueError(f"unknown config key {key!r}" + (f"; did you mean {close[0]!r}?" if close else ""))
    return key


def parse_overrides(args: list[str]) -> dict[str, str]:
    """`--key value` and `--key=value` pairs into a dict (a bare `--flag` means true)."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--"):
            raise ValueError(f"expected --key value, got {arg!r}")
        if "=" in arg:
            key, value = arg[2:].split("=", 1)
            i += 1
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            key, value = arg[2:], args[i + 1]
            i += 2
        else:
            key, value = arg[2:], "true"
            i += 1
        out[_check_key(key)] = value
    return out


def presets() -> list[str]:
    """The shipped configs `--config NAME` finds (train/configs/NAME.toml)."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.toml"))


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Defaults <- TOML file <- overrides, each value type-checked, then the whole validated."""
    values: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.exists() and (CONFIG_DIR / f"{path.name}.toml").exists():
            path = CONFIG_DIR / f"{path.name}.toml"  # `--config tiny` finds the shipped file
        if not path.exists():
            names = presets()
            close = difflib.get_close_matches(path.name, names, n=1)
            raise ValueError(f"--config {path}: no such file and no shipped config of that name"
                             + (f"; did you mean {close[0]!r}?" if close else "")
                             + f" (shipped: {', '.join(names)}, in {CONFIG_DIR})")
        with open(path, "rb") as f:
            values.update(tomllib.load(f))
    values.update(overrides or {})
    return Config(**{_check_key(k): _convert(_check_key(k), v) for k, v in values.items()}).validate()
