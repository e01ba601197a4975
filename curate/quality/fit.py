"""`curate quality fit`: distil a teacher's grades (`curate quality annotate`) into a linear head on a frozen
encoder's pooled embeddings, FineWeb-Edu's recipe (a regression head on a frozen encoder, kept at 3 or more).

* **Embeddings** come from the inference layer (`curate.models.inference`, `embed`: mean-pooled last hidden
  states): a Hugging Face encoder (a folder or a hub id) or this project's own checkpoint.
* **The head** is scikit-learn's: `ridge` (RidgeCV, its penalty chosen by efficient leave-one-out on the
  training split; one regression output) or `logistic` (multinomial LogisticRegression over the integer
  scores; the step reads its expected score).
* **Held out** by document: a seeded hash of the id puts `holdout` of the graded documents aside before anything
  is fitted. On them: Spearman's rank correlation between predicted and teacher scores, precision / recall / F1
  of "keep" (integer score >= `keep_at`) against the teacher's own keep, and the confusion matrix by integer
  score (rows: teacher, columns: head).
* **Saved** as a head folder (`curate.quality.head`) that `quality.NeuralClassifier(model=folder)` loads, with the
  metrics in `metrics.json` beside it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable

import numpy as np

from curate.core.errors import UsageError
from curate.io import fs
from curate.quality.annotate import RESULT
from curate.quality.head import HEAD_JSON, HEAD_NPZ, Head
from curate.quality.neural import int_scores, reduce_outputs

HEADS = ("ridge", "logistic")
METRICS = "metrics.json"
LAYOUT = (HEAD_JSON, HEAD_NPZ, METRICS)
EMBED_CHUNK = 512  # texts handed to the inference layer at a time (it batches them by tokens)


def _only_ours(out: str) -> bool:
    """Whether `out` holds nothing but what `fit` writes (a whole head, or the part of one a killed fit wrote):
    a fit into it replaces them."""
    names = [n for n in fs.listdir(out) if not n.startswith(".")]
    return all(n in LAYOUT or any(n.startswith(f"{x}.tmp.") for x in LAYOUT) for n in names)


def load_annotations(inputs: list[str]) -> tuple[list[str], list[str], np.ndarray, int]:
    """(ids, texts, scores, unscored) of annotate outputs (folders or their Parquet files); rows without a score
    (answers the teacher gave no readable score in) are left out and counted."""
    import pyarrow.parquet as pq

    ids, texts, scores, unscored = [], [], [], 0
    for spec in inputs:
        path = fs.join(spec, RESULT) if fs.isdir(spec) else spec
        if not fs.isfile(path):
            raise UsageError(f"{spec}: no {RESULT} (the output of `curate quality annotate`)")
        with fs.open(path, "rb") as f:
            table = pq.read_table(f, columns=["id", "text", "score"])
        for i, t, s in zip(*(table.column(c).to_pylist() for c in ("id", "text", "score")), strict=True):
            if s is None or t is None:
                unscored += 1
                continue
            ids.append(i)
            texts.append(t)
            scores.append(s)
    return ids, texts, np.array(scores, dtype=np.float64), unscored


def heldout_mask(ids: list[str], fraction: float, seed: int) -> np.ndarray:
    """True for the documents held out: a seeded hash of the id below `fraction`, so the split does not depend
    on the order of the rows and a document is on one side however often it is listed."""
    def u(i: str) -> float:
        h = hashlib.blake2b(f"{seed}\0{i}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
        return int.from_bytes(h, "big") / 2**64

    return np.array([u(i) < fraction for i in ids], dtype=bool)


def embed(encoder: str, texts: list[str], device: str = "auto", max_tokens: int | None = None,
          revision: str | None = None, progress: Callable[[int], None] | None = None) -> np.ndarray:
    """float32 (N, hidden): pooled embeddings of `texts` by the inference layer, `EMBED_CHUNK` texts at a time."""
    from curate.models import ModelSpec
    from curate.models.inference import get_model

    model = get_model(ModelSpec(encoder, task="embed", device=device, revision=revision))
    parts = []
    for start in range(0, len(texts), EMBED_CHUNK):
        parts.append(model.embed(texts[start : start + EMBED_CHUNK], max_tokens=max_tokens))
        if progress:
            progress(len(parts[-1]))
    return np.concatenate(parts) if parts else np.zeros((0, model.hidden_size), np.float32)


def fit_head(x: np.ndarray, y: np.ndarray, kind: str, seed: int) -> tuple[np.ndarray, np.ndarray, list[str], dict]:
    """(weight, bias, labels, chosen settings) of a `kind` head fitted on embeddings `x` and scores `y`."""
    if kind == "ridge":
        from sklearn.linear_model import RidgeCV

        m = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(x, y)
        return m.coef_.reshape(1, -1), np.array([m.intercept_]), ["score"], {"alpha": float(m.alpha_)}
    from sklearn.linear_model import LogisticRegression

    classes = np.rint(y).astype(int)
    if len(set(classes.tolist())) < 2:
        raise UsageError("--head logistic needs at least two integer scores among the graded documents")
    m = LogisticRegression(max_iter=2000, random_state=seed).fit(x, classes)
    w, b = m.coef_, m.intercept_
    if len(m.classes_) == 2:  # scikit-learn keeps one row for two classes: logits (0, z)
        w, b = np.vstack([np.zeros_like(w), w]), np.concatenate([[0.0], b])
    return w, b, [str(c) for c in m.classes_], {"C": 1.0}


def metrics(true: np.ndarray, pred: np.ndarray, keep_at: float, low: float, high: float) -> dict:
    """Held-out figures: Spearman, keep precision / recall / F1, confusion by integer score."""
    from scipy.stats import spearmanr
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    t_int, p_int = int_scores(true, low, high), int_scores(pred, low, high)
    keep_t, keep_p = t_int >= keep_at, p_int >= keep_at
    p, r, f1, _ = precision_recall_fscore_support(keep_t, keep_p, average="binary", zero_division=0)
    rho = spearmanr(true, pred).statistic if len(true) > 1 and np.ptp(true) > 0 and np.ptp(pred) > 0 else None
    scale = list(range(int(low), int(high) + 1))
    cm = confusion_matrix(t_int, p_int, labels=scale)
    return {"documents": len(true), "spearman": None if rho is None else round(float(rho), 4), "keep_at": keep_at,
            "precision": round(float(p), 4), "recall": round(float(r), 4), "f1": round(float(f1), 4),
            "teacher_kept": int(keep_t.sum()), "head_kept": int(keep_p.sum()),
            "confusion": {"scores": scale, "rows_teacher_columns_head": cm.tolist()},
            "mean_abs_error": round(float(np.abs(true - pred).mean()), 4) if len(true) else None}


def fit(inputs: list[str], encoder: str, out: str, *, head: str = "ridge", holdout: float = 0.2, seed: int = 0,
        keep_at: float = 3, low: float = 0, high: float = 5, device: str = "auto", max_tokens: int | None = None,
        revision: str | None = None, overwrite: bool = False,
        progress: Callable[[int], None] | None = None) -> dict:
    """Fit a head on the annotations and save it into `out`; returns what `metrics.json` records."""
    from curate.io.outputs import claim, locked

    if head not in HEADS:
        raise UsageError(f"--head {head!r}: choose one of {', '.join(HEADS)}")
    if not 0 < holdout < 1:
        raise UsageError(f"--holdout must be in (0, 1), got {holdout}")
    t0 = time.monotonic()
    ids, texts, y, unscored = load_annotations(inputs)
    held = heldout_mask(ids, holdout, seed)
    if held.sum() < 2 or (~held).sum() < 2:
        raise UsageError(f"{len(ids)} graded documents: too few to fit a head and hold out {holdout:.0%} of them")
    local = fs.local_path(encoder)
    ref = os.path.abspath(os.path.expanduser(encoder)) if local and os.path.exists(os.path.expanduser(local)) else encoder
    with locked(out, what="`curate quality fit`"):
        claim(out, what="`curate quality fit`", option="--out", own=lambda: _only_ours(out),
              layout=LAYOUT, overwrite=overwrite, marker=HEAD_JSON)
        x = embed(ref, texts, device, max_tokens, revision, progress)
        w, b, labels, chosen = fit_head(x[~held], y[~held], head, seed)
        h = Head(ref, head, w.astype(np.float32), b.astype(np.float32), labels, low, high, keep_at, revision)
        pred = reduce_outputs(h.outputs(x), labels, "expected")
        report = {"heldout": metrics(y[held], pred[held], keep_at, low, high),
                  "train": metrics(y[~held], pred[~held], keep_at, low, high),
                  "head": head, **chosen, "encoder": ref, "embedding_dim": int(x.shape[1]),
                  "inputs": [str(i) for i in inputs], "graded": len(ids), "unscored_left_out": unscored,
                  "holdout": holdout, "seed": seed, "seconds": round(time.monotonic() - t0, 1)}
        h.extra = {"metrics": report["heldout"], "trained_on": {k: report[k] for k in ("inputs", "graded", "seed")}}
        fs.atomic_write_text(fs.join(out, METRICS), json.dumps(report, indent=1))
        h.save(out)  # head.json last: its presence says the folder is a whole head
    return report
