"""Held-out metrics for a binary scorer, in numpy only: precision, recall, F1, ROC AUC, PR curve."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass
class Metrics:
    """Metrics at one decision threshold, plus the threshold-free ROC AUC and average precision."""

    n_pos: int
    n_neg: int
    threshold: float
    precision: float
    recall: float
    f1: float
    roc_auc: float
    average_precision: float

    def to_dict(self) -> dict:
        return asdict(self)

    def format(self) -> str:
        return (
            f"documents    {self.n_pos:,} positive, {self.n_neg:,} negative\n"
            f"at {self.threshold:g}       precision {self.precision:.4f}  recall {self.recall:.4f}  F1 {self.f1:.4f}\n"
            f"ROC AUC      {self.roc_auc:.4f}\n"
            f"average prec {self.average_precision:.4f}"
        )


def _check(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=bool)
    if scores.shape != labels.shape or scores.ndim != 1:
        raise ValueError(f"scores {scores.shape} and labels {labels.shape} must be 1-D and of one length")
    if labels.all() or not labels.any():
        raise ValueError("metrics need both positive and negative documents")
    return scores, labels


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC AUC as the Mann-Whitney statistic: the chance a random positive outscores a random negative.

    Tied scores get their average rank, so a tie between a positive and a negative counts one half.
    """
    scores, labels = _check(scores, labels)
    order = np.argsort(scores, kind="mergesort")
    _, first, counts = np.unique(scores[order], return_index=True, return_counts=True)
    ranks = np.empty(len(scores))
    ranks[order] = np.repeat(first + (counts + 1) / 2, counts)  # 1-based average rank of each tie group
    n_pos = int(labels.sum())
    n_neg = len(labels) - n_pos
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def pr_curve(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision and recall when keeping every document scoring >= each distinct threshold (descending)."""
    scores, labels = _check(scores, labels)
    order = np.argsort(-scores, kind="mergesort")
    s, y = scores[order], labels[order]
    last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]  # last index of each group of equal scores
    tp = np.cumsum(y)[last]
    fp = (last + 1) - tp
    return tp / (tp + fp), tp / labels.sum(), s[last]


def evaluate(scores: np.ndarray, labels: np.ndarray, threshold: float = 0.5) -> Metrics:
    scores, labels = _check(scores, labels)
    pred = scores >= threshold
    tp = int((pred & labels).sum())
    precision = tp / max(int(pred.sum()), 1)
    recall = tp / int(labels.sum())
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    prec, rec, _ = pr_curve(scores, labels)
    ap = float(np.sum(np.diff(np.r_[0.0, rec]) * prec))
    return Metrics(
        n_pos=int(labels.sum()),
        n_neg=int((~labels).sum()),
        threshold=threshold,
        precision=precision,
        recall=recall,
        f1=f1,
        roc_auc=roc_auc(scores, labels),
        average_precision=ap,
    )


def plot_pr(scores: np.ndarray, labels: np.ndarray, path: str, title: str = "quality classifier") -> None:
    """Write the precision-recall curve as a PNG, marking the 0.5 operating point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    prec, rec, thr = pr_curve(scores, labels)
    m = evaluate(scores, labels)
    fig, ax = plt.subplots(figsize=(5, 4), dpi=120)
    ax.plot(rec, prec, drawstyle="steps-post", label=f"AP {m.average_precision:.3f}, ROC AUC {m.roc_auc:.3f}")
    ax.scatter([m.recall], [m.precision], color="C3", zorder=3, label=f"threshold 0.5 (F1 {m.f1:.3f})")
    ax.axhline(m.n_pos / (m.n_pos + m.n_neg), color="grey", lw=0.8, ls="--", label="chance")
    ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1.01), ylim=(0, 1.01), title=title)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
