"""Fit the weights of extract.Main on the tuning split of the gold sets and write curate/extract/weights.py.

    .venv/bin/python benchmarks/extract_fit.py [--cache /tmp/peneira-extract-blocks.pkl] [--label 0.7]
        [--weight CleanPortalEval=2] [--folds 5]

Only pages in the tuning split (`_gold.is_tune`, 60% of each set by id hash) are read for fitting;
benchmarks/extract.py reports the other 40% separately. A block's label is whether at least `--label`
of its token bigrams occur in the page's gold text (a one-word block: whether its word does), so a
menu item whose word happens to occur somewhere in the article is not called content. Each block
weighs its share of the page's tokens, and each set weighs the same, so the 1,376 Dragnet pages do
not drown the 57 CleanEval ones. Both stages are L2-regularised logistic regressions fitted by
Newton's method. The threshold is the one of a grid that maximises the worst margin over the four
sets to the better of trafilatura and Resiliparse, scored by `--folds`-fold cross-validation over the
tuning pages (each page scored by weights fitted without it), so the choice is not flattered by the
fit having seen the pages. Parsed blocks are cached (about ten CPU seconds to rebuild; delete the
cache when blocks.py changes); features are recomputed on every run.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import re
import sys
from collections import Counter
from itertools import pairwise
from pathlib import Path

import numpy as np
from _data import ROOT
from _gold import SETS, bag, is_tune, pages, prf

try:
    from curate.extract import main as M
except KeyError:
    # A feature new in features.py has no weight yet and extract.main reads its weights strictly: start the
    # missing ones at 0 (the submodules stay imported), so this script can fit and write them all.
    _F, _W = sys.modules["curate.extract.features"], sys.modules["curate.extract.weights"]
    for _stage, _names in ((_W.STAGE1, _F.LOCAL), (_W.STAGE2, _F.LOCAL + _F.CONTEXT)):
        for _k in _names:
            _stage.setdefault(_k, 0.0)
    from curate.extract import main as M
from curate.extract import features as F

# The better of trafilatura and Resiliparse per set on the tuning split (benchmarks/extract.py, the
# "tune" column of docs/benchmarks.md): the threshold maximises the worst margin over these, not the
# mean F1, so no set is traded away for another.
TARGET = {"dragnet": 0.8367, "readability": 0.9331, "CleanPortalEval": 0.9408, "cleaneval-dev": 0.8615}
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85)
_WORD = re.compile(r"\w+")


def load(cache: Path) -> dict[str, list[dict]]:
    """Every tuning page's blocks and gold text (parsed once, cached) with its stage-1 features and the
    share of each block's bigrams found in the gold (computed anew each run: no re-parse after a change
    to features.py)."""
    if cache.exists():
        with open(cache, "rb") as f:
            data = pickle.load(f)
    else:
        data = {}
        for name in SETS:
            data[name] = [{"id": pid, "blocks": blocks, "gold_text": gold}
                          for pid, html, _, gold in pages(name) if is_tune(pid)
                          for blocks in [M.parse(html)[0]] if blocks]
            print(f"  parsed {name}: {len(data[name])} tuning pages", flush=True)
        with open(cache, "wb") as f:
            pickle.dump(data, f)
    for rows in data.values():
        for r in rows:
            r["x"], words = F.local(r["blocks"])
            r["words"] = words
            r["tokens"] = [_WORD.findall(b.text.lower()) for b in r["blocks"]]  # for the labels and the F1
            r["gold"] = bag(r["gold_text"])
            r["n"] = words.astype(np.float64)
            r["frac"] = in_gold(r["tokens"], _WORD.findall(r["gold_text"].lower()))
    return data


def in_gold(tokens: list[list[str]], gold: list[str]) -> np.ndarray:
    """Per block, the share of its token bigrams that occur in the gold text (one-word blocks: 1 when the
    word occurs). Bigrams, not words: "Sports" or "More" occur in many an article, "In Sports" does not."""
    words, pairs = set(gold), set(pairwise(gold))
    out = np.zeros(len(tokens))
    for i, ts in enumerate(tokens):
        if len(ts) == 1:
            out[i] = ts[0] in words
        elif ts:
            out[i] = sum(p in pairs for p in pairwise(ts)) / (len(ts) - 1)
    return out


def logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1.0, steps: int = 25) -> np.ndarray:
    beta = np.zeros(x.shape[1])
    for _ in range(steps):
        p = M.probability(x, beta)
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
                x = np.hstack([x, F.context(r["blocks"], M.probability(x, w1))])
            xs.append(x)
            ys.append((r["frac"] >= label).astype(np.float64))
            ws.append(1000.0 * set_weight.get(name, 1.0) * r["n"] / max(r["n"].sum(), 1.0) / len(rows))
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


def fit(data: dict, label: float, set_weight: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """Stage-1 weights, then stage-2 weights on the stage-1 scores they produce."""
    w1 = logistic(*design(data, label, None, set_weight))
    return w1, logistic(*design(data, label, w1, set_weight))


def page_f1(r: dict, w1: np.ndarray, w2: np.ndarray) -> list[float]:
    """The page's token F1 at every threshold of THRESHOLDS."""
    x = r["x"]
    p = M.probability(np.hstack([x, F.context(r["blocks"], M.probability(x, w1))]), w2)
    out = []
    for threshold in THRESHOLDS:
        keep = M.select(r["blocks"], p, r["words"], threshold, 10)
        out.append(prf(Counter(t for ts, k in zip(r["tokens"], keep, strict=True) if k for t in ts), r["gold"])[2])
    return out


def fold(page_id: str, k: int) -> int:
    """The cross-validation fold of a page, by a hash of its id (another hash than the tuning split's)."""
    return int.from_bytes(hashlib.blake2b(b"cv" + page_id.encode(), digest_size=8).digest(), "big") % k


def cross_validate(data: dict, label: float, set_weight: dict[str, float], k: int) -> dict[str, np.ndarray]:
    """Per set, the mean F1 at every threshold, each page scored by weights fitted on the other folds."""
    scores: dict[str, list] = {name: [] for name in data}
    for f in range(k):
        w1, w2 = fit({n: [r for r in rows if fold(r["id"], k) != f] for n, rows in data.items()}, label, set_weight)
        for name, rows in data.items():
            scores[name] += [page_f1(r, w1, w2) for r in rows if fold(r["id"], k) == f]
    return {name: np.mean(s, axis=0) for name, s in scores.items()}


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
    ap.add_argument("--label", type=float, default=0.7, help="share of a block's bigrams in gold to call it content")
    ap.add_argument("--weight", action="append", default=[], metavar="SET=W",
                    help="weight of one set's pages in the fit (default 1 each)")
    ap.add_argument("--folds", type=int, default=5, help="cross-validation folds for choosing the threshold")
    ap.add_argument("--out", default=str(ROOT / "curate" / "extract" / "weights.py"))
    args = ap.parse_args()
    data = load(Path(args.cache))
    set_weight = {k: float(v) for k, v in (w.split("=") for w in args.weight)}
    cv = cross_validate(data, args.label, set_weight, args.folds)
    margins = np.min([cv[name] - TARGET[name] for name in data], axis=0)
    for i, threshold in enumerate(THRESHOLDS):
        print(f"  threshold {threshold}: " + "  ".join(f"{k} {v[i]:.4f}" for k, v in cv.items())
              + f"  worst margin {margins[i]:+.4f}  (cross-validated)")
    threshold = THRESHOLDS[int(np.argmax(margins))]
    w1, w2 = fit(data, args.label, set_weight)
    options = " ".join([f"--label {args.label}", *(f"--weight {w}" for w in args.weight)])
    write(Path(args.out), w1, w2, threshold, options)
    print(f"wrote {args.out} (threshold {threshold})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
