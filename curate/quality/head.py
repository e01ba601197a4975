"""The fitted classifier's folder: a linear head on a frozen encoder's pooled embeddings, as `curate quality fit`
writes it and `quality.NeuralClassifier` reads it.

    MODEL_DIR/head.json   {"format": "peneira-head", "version": 1, "encoder": "<hub id or absolute path>",
                           "encoder_revision": null, "kind": "ridge" | "logistic", "labels": ["0", …],
                           "low": 0, "high": 5, "keep_at": 3, "metrics": {…}, "trained_on": {…}}
    MODEL_DIR/head.npz    weight (outputs x hidden, float32), bias (outputs,)

A folder rather than one file so the encoder is referenced, not copied: FineWeb-Edu's head is 769 numbers on a
110M-parameter encoder. `head.outputs(embeddings)` gives what a Hugging Face sequence-classification head gives
(one regression value per text, or one logit per label), so the step treats both alike.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np

from curate.core.errors import UsageError
from curate.io import fs

HEAD_JSON, HEAD_NPZ = "head.json", "head.npz"
FORMAT = "peneira-head"


@dataclass
class Head:
    encoder: str
    kind: str  # "ridge": one regression output; "logistic": one logit per label
    weight: np.ndarray
    bias: np.ndarray
    labels: list[str]
    low: float = 0
    high: float = 5
    keep_at: float | None = None
    encoder_revision: str | None = None
    extra: dict = field(default_factory=dict)

    def outputs(self, embeddings: np.ndarray) -> np.ndarray:
        """float32 (N, outputs): the regression value, or the logits of each label."""
        return (embeddings.astype(np.float32) @ self.weight.T + self.bias).astype(np.float32)

    def save(self, folder: str) -> None:
        fs.makedirs(folder)
        with fs.atomic_open(fs.join(folder, HEAD_NPZ), "wb") as f:
            np.savez(f, weight=self.weight.astype(np.float32), bias=self.bias.astype(np.float32))
        info = {"format": FORMAT, "version": 1, "encoder": self.encoder, "encoder_revision": self.encoder_revision,
                "kind": self.kind, "labels": self.labels, "low": self.low, "high": self.high,
                "keep_at": self.keep_at, **self.extra}
        fs.atomic_write_text(fs.join(folder, HEAD_JSON), json.dumps(info, indent=1))


def is_head(path: str) -> bool:
    return os.path.isfile(os.path.join(os.path.expanduser(path), HEAD_JSON))


def load_head(folder: str) -> Head:
    folder = os.path.expanduser(folder)
    info = json.loads(fs.read_bytes(os.path.join(folder, HEAD_JSON)))
    if info.get("format") != FORMAT or info.get("version") != 1:
        raise UsageError(f"{folder}/{HEAD_JSON}: not a head written by `curate quality fit` (format "
                         f"{info.get('format')!r}, version {info.get('version')!r})")
    with fs.open(os.path.join(folder, HEAD_NPZ), "rb") as f:
        z = np.load(f)
        weight, bias = z["weight"], z["bias"]
    known = {"format", "version", "encoder", "encoder_revision", "kind", "labels", "low", "high", "keep_at"}
    return Head(info["encoder"], info["kind"], weight, bias, list(info["labels"]), info["low"], info["high"],
                info.get("keep_at"), info.get("encoder_revision"), {k: v for k, v in info.items() if k not in known})
