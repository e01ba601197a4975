"""Held-out metrics for a binary scorer, in numpy only: precision, recall, F1, ROC AUC, PR curve, score histograms."""

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


HIST_BINS = 10


def score_histogram(scores: np.ndarray, labels: np.ndarray, bins: int = HIST_BINS) -> dict:
    """Counts of each class's scores in `bins` equal bins over [0, 1], with per-class quantiles.

    AUC says how often a positive outranks a negative, not by how much; the histogram shows whether
    the classes sit apart (a usable threshold exists) or pile up in one bin around 0.5.
    """
    scores, labels = _check(scores, labels)
    edges = np.linspace(0, 1, bins + 1)
    out: dict = {"edges": edges.round(4).tolist()}
    for name, mask in (("positive", labels), ("negative", ~labels)):
        s = scores[mask]
        out[name] = np.histogram(s, bins=edges)[0].tolist()
        out[f"{name}_quantiles"] = dict(zip(("p10", "p50", "p90"), np.quantile(s, [0.1, 0.5, 0.9]).round(4).tolist(),
                                            strict=True))
    return out


def format_histogram(hist: dict, width: int = 30) -> str:
    """The histogram as a text table: one row per bin, counts and bars for both classes."""
    edges, pos, neg = hist["edges"], hist["positive"], hist["negative"]
    top = max(max(pos), max(neg), 1)
    rows = [f"{'score':<11}{'positive':>9} {'':<{width}}{'negative':>9}"]
    for i, (p, n) in enumerate(zip(pos, neg, strict=True)):
        rows.append(f"{edges[i]:.1f}-{edges[i + 1]:.1f}  {p:>9} {'#' * round(width * p / top):<{width}}{n:>9} "
                    f"{'#' * round(width * n / top)}")
    q = {k: hist[f"{k}_quantiles"] for k in ("positive", "negative")}
    rows.append("median     " + "  ".join(f"{k} {v['p50']:.4f} (p10 {v['p10']:.4f}, p90 {v['p90']:.4f})"
                                        for k, v in q.items()))
    return "\n".join(rows)


def plot_pr(scores: np.ndarray, labels: np.ndarray, path: str, title: str = "quality classifier") -> None:
    """Write a PNG: the precision-recall curve (0.5 marked) and both classes' score histograms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    prec, rec, thr = pr_curve(scores, labels)
    m = evaluate(scores, labels)
    fig, (ax, hx) = plt.subplots(1, 2, figsize=(10, 4), dpi=120)
    ax.plot(rec, prec, drawstyle="steps-post", label=f"AP {m.average_precision:.3f}, ROC AUC {m.roc_auc:.3f}")
    ax.scatter([m.recall], [m.precision], color="C3", zorder=3, label=f"threshold 0.5 (F1 {m.f1:.3f})")
    ax.axhline(m.n_pos / (m.n_pos + m.n_neg), color="grey", lw=0.8, ls="--", label="chance")
    ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1.01), ylim=(0, 1.01), title=title)
    ax.legend(loc="lower left", fontsize=8)
    edges = np.linspace(0, 1, 41)
    labels = np.asarray(labels, bool)
    hx.hist(np.asarray(scores)[labels], bins=edges, alpha=0.6, color="C0", label=f"positive ({m.n_pos:,})")
    hx.hist(np.asarray(scores)[~labels], bins=edges, alpha=0.6, color="C3", label=f"negative ({m.n_neg:,})")
    hx.set(xlabel="score (probability of high quality)", ylabel="examples", xlim=(0, 1), title="score distributions")
    hx.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
