"""Fit the weights of extract.Main on the tuning split of the gold sets and write curate/extract/weights.py.

    .venv/bin/python benchmarks/extract_fit.py [--cache /tmp/peneira-extract-blocks.pkl] [--label 0.6]

Only pages in the tuning split (`_gold.is_tune`, 60% of each set by id hash) are read for fitting;
benchmarks/extract.py reports the other 40% separately. A block's label is whether at least `--label`
of its tokens occur in the page's gold text; each block weighs its share of the page's tokens, and each
set weighs the same, so the 1,376 Dragnet pages do not drown the 57 CleanEval ones. Both stages are
L2-regularised logistic regressions fitted by Newton's method; the threshold is the one of a grid that
maximises the worst margin over the four sets' tuning pages to the better of trafilatura and Resiliparse. Parsed blocks are cached, so a rerun with
another `--label` only refits (the parse of ~1,000 pages takes a minute on one core).
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np
from _data import ROOT
from _gold import SETS, bag, is_tune, pages, prf

from curate.extract import features as F
from curate.extract import main as M

# The better of trafilatura and Resiliparse per set (docs/benchmarks.md): the threshold is chosen to
# maximise the worst margin over these, not the mean F1, so no set is traded away for another.
TARGET = {"dragnet": 0.842, "readability": 0.934, "CleanPortalEval": 0.948, "cleaneval-dev": 0.882}


def load(cache: Path) -> dict[str, list[dict]]:
    if cache.exists():
        with open(cache, "rb") as f:
            return pickle.load(f)
    data: dict[str, list[dict]] = {}
    for name in SETS:
        rows = []
        for pid, html, _, gold in pages(name):
            if not is_tune(pid):
                continue
            blocks, _ = M.parse(html)
            if blocks:
                x, tokens = F.local(blocks)
                rows.append({"blocks": blocks, "x": x, "tokens": tokens, "gold": bag(gold)})
        data[name] = rows
        print(f"  parsed {name}: {len(rows)} tuning pages", flush=True)
    with open(cache, "wb") as f:
        pickle.dump(data, f)
    return data


def logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1.0, steps: int = 25) -> np.ndarray:
    beta = np.zeros(x.shape[1])
    for _ in range(steps):
        p = M._sigmoid(x @ beta)
        grad = x.T @ (w * (p - y)) + l2 * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + l2 * np.eye(x.shape[1])
        beta -= np.linalg.solve(hess, grad)
    return beta


def design(data: dict, label: float, w1: np.ndarray | None, set_weight: dict[str, float]
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, labels and weights of every tuning block; with stage-1 weights, the stage-2 rows."""
    xs, ys, ws = [], [], []
    for name, rows in data.items():
        for r in rows:
            x = r["x"]
            if w1 is not None:
                x = np.hstack([x, F.context(r["blocks"], M._sigmoid(x @ w1))])
            gold = r["gold"]
            n = np.array([len(t) for t in r["tokens"]], dtype=np.float64)
            frac = np.array([sum(t in gold for t in ts) / len(ts) if ts else 0.0 for ts in r["tokens"]])
            xs.append(x)
            ys.append((frac >= label).astype(np.float64))
            ws.append(1000.0 * set_weight.get(name, 1.0) * n / max(n.sum(), 1.0) / len(rows))
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


def tune_f1(data: dict, w1: np.ndarray, w2: np.ndarray, threshold: float) -> dict[str, float]:
    out = {}
    for name, rows in data.items():
        f1s = []
        for r in rows:
            x = r["x"]
            p = M._sigmoid(np.hstack([x, F.context(r["blocks"], M._sigmoid(x @ w1))]) @ w2)
            keep = M.select(r["blocks"], p, r["tokens"], threshold, 10)
            pred = bag(" ".join(" ".join(t) for t, k in zip(r["tokens"], keep, strict=True) if k))
            f1s.append(prf(pred, r["gold"])[2])
        out[name] = float(np.mean(f1s))
    return out


def write(path: Path, w1: np.ndarray, w2: np.ndarray, threshold: float, options: str) -> None:
    def dump(names, w):
        return "".join(f"    {k!r}: {v:.4f},\n" for k, v in zip(names, w, strict=True))

    path.write_text(
        '"""Weights of extract.Main\'s two block classifiers, written by benchmarks/extract_fit.py '
        f'({options}); do not edit by hand."""\n\n'
        f"THRESHOLD = {threshold}\n\nSTAGE1 = {{\n{dump(F.LOCAL, w1)}}}\n\n"
        f"STAGE2 = {{\n{dump(F.LOCAL + F.CONTEXT, w2)}}}\n"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="/tmp/peneira-extract-blocks.pkl")
    ap.add_argument("--label", type=float, default=0.6, help="share of a block's tokens in gold to call it content")
    ap.add_argument("--weight", action="append", default=[], metavar="SET=W",
                    help="weight of one set's pages in the fit (default 1 each)")
    ap.add_argument("--out", default=str(ROOT / "curate" / "extract" / "weights.py"))
    args = ap.parse_args()
    data = load(Path(args.cache))
    set_weight = {k: float(v) for k, v in (w.split("=") for w in args.weight)}
    w1 = logistic(*design(data, args.label, None, set_weight))
    w2 = logistic(*design(data, args.label, w1, set_weight))
    best = None
    for threshold in (0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85):
        f1 = tune_f1(data, w1, w2, threshold)
        margin = min(v - TARGET[k] for k, v in f1.items())
        print(f"  threshold {threshold}: " + "  ".join(f"{k} {v:.3f}" for k, v in f1.items())
              + f"  worst margin {margin:+.4f}")
        if best is None or margin > best[0]:
            best = (margin, threshold)
    write(Path(args.out), w1, w2, best[1], " ".join([f"--label {args.label}", *(f"--weight {w}" for w in args.weight)]))
    print(f"wrote {args.out} (threshold {best[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
