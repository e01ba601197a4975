"""Metrics: the JSONL log, model FLOPs utilisation against the device's peak, and PNG plots of loss and LR."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import torch

# Dense bf16 tensor-core peak FLOP/s from the vendors' data sheets (no sparsity). Matched as substrings of
# torch.cuda.get_device_name(), most specific first ("H100 PCIe" before "H100").
PEAK_BF16_FLOPS: list[tuple[str, float]] = [
    ("GH200", 989e12),
    ("H200", 989e12),
    ("H100 PCIe", 756e12),
    ("H100 NVL", 835e12),
    ("H100", 989e12),
    ("H800", 989e12),
    ("B200", 2250e12),
    ("A100", 312e12),
    ("A800", 312e12),
    ("L40S", 362e12),
    ("L4", 121e12),
    ("V100", 125e12),  # fp16: V100 has no bf16
    ("MI300X", 1307e12),
]


def peak_flops(device: torch.device) -> float | None:
    """Peak FLOP/s of one device, or None when unknown (CPUs, unlisted GPUs), in which case MFU is not reported."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((flops for key, flops in PEAK_BF16_FLOPS if key in name), None)


class MetricsLog:
    """Append-only metrics.jsonl, one object per logged step. On resume, records past the checkpoint are dropped
    so the file reads as one uninterrupted run."""

    def __init__(self, path: Path, resume_step: int | None = None):
        self.path = path
        if resume_step is None:
            _replace(path, "")
        elif path.exists():
            keep = [line for line in path.read_text().splitlines() if _step(line) <= resume_step]
            _replace(path, "".join(line + "\n" for line in keep))

    def write(self, record: dict[str, Any]) -> None:
        try:
            with open(self.path, "a") as f:
                f.write(json.dumps(record) + "\n")
        except OSError as e:  # a full disk: name the file (a write's error has no name of its own)
            raise OSError(e.errno, e.strerror, str(self.path)) from e


def _step(line: str) -> float:
    """A record's step; a line cut short by a kill mid-write (only ever the last) counts as past any checkpoint."""
    try:
        return json.loads(line)["step"]
    except (ValueError, KeyError, TypeError):
        return math.inf


def _replace(path: Path, text: str) -> None:
    """Rewrite `path` whole: written beside it and renamed over it, so a kill keeps the old records or the new."""
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_metrics(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line]


def plot_run(metrics_path: Path, out_dir: Path) -> None:
    """loss.png (train and validation loss against tokens seen) and lr.png (the schedule as it ran)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(metrics_path)
    train = [r for r in records if "loss" in r]
    val = [r for r in records if "val_loss" in r]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r["step"] for r in train], [r["loss"] for r in train], label="train", lw=1)
    if val:
        ax.plot([r["step"] for r in val], [r["val_loss"] for r in val], "o-", label="validation", ms=3)
    ax.set(xlabel="step", ylabel="loss (nats/token)", title="loss")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "loss.png", dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot([r["step"] for r in train], [r["lr"] for r in train])
    ax.set(xlabel="step", ylabel="learning rate", title="learning-rate schedule")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_dir / "lr.png", dpi=120)
    plt.close(fig)
