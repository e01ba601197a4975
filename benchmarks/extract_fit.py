"""Fit the weights of extract.Main on the tuning split of the gold sets and write curate/extract/weights.py.

    .venv/bin/python benchmarks/extract_fit.py [--cache /tmp/peneira-extract-blocks.pkl] [--label 0.7]
        [--l2 10] [--weight SET=W]

Only pages in the tuning split (`_gold.is_tune`, 60% of each set by id hash) are read for fitting;
benchmarks/extract.py reports the other 40% separately. A block's label is whether at least `--label`
of its token bigrams occur in the page's gold text (a one-word block: whether its word does), so a
menu item whose word happens to occur somewhere in the article is not called content. Each block
weighs its share of the page's tokens, and each set weighs the same, so the 1,376 Dragnet pages do
not drown the 57 CleanEval ones. Both stages are L2-regularised logistic regressions fitted by
Newton's method. Comment-section blocks (features.comments) never enter the fit: keeping them is the
user's option (`keep_comments`), and each set is scored under the option its gold asks for
(`_gold.KEEP_COMMENTS`: Dragnet keeps them).

Model selection is by leave-one-set-out: each set's tuning pages are scored by weights fitted on the
other three sets only, so a choice is rewarded for what carries over to a set whose conventions the
fit never saw, not for fitting them (a cross-validation that splits pages within sets cannot see that).
The threshold is the one of a grid that maximises the worst left-out margin over the four sets to the
better of trafilatura and Resiliparse on the same pages (their per-page scores are computed once and
cached beside the blocks). The final weights are fitted on every tuning page; the four left-out models
(each with the threshold chosen on the other three sets' left-out scores, never its own) are written to
benchmarks/extract_left_out.json, which benchmarks/extract.py scores each left-out set with. Parsed
blocks are cached (delete the cache when blocks.py changes); features are recomputed on every run.
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
from collections import Counter
from itertools import pairwise
from pathlib import Path

import numpy as np
from _data import ROOT
from _gold import KEEP_COMMENTS, SETS, bag, is_tune, pages, prf

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

THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85)
_WORD = re.compile(r"\w+")


def load(cache: Path) -> dict[str, list[dict]]:
    """Every tuning page's blocks, gold text and the baselines' F1 (parsed and run once, cached) with its stage-1
    features and the share of each block's bigrams found in the gold (computed anew each run: no re-parse after
    a change to features.py)."""
    data = None
    if cache.exists():
        with open(cache, "rb") as f:
            data = pickle.load(f)
        if not all("base_all" in r for rows in data.values() for r in rows[:1]):
            data = None  # a cache from before the baselines' scores were kept: rebuilt
    if data is None:
        from curate import Document, extract

        data = {}
        for name in SETS:
            keep = KEEP_COMMENTS.get(name, False)
            base = [extract.Trafilatura(keep_comments=keep), extract.Resiliparse(keep_comments=keep)]
            for ex in base:
                ex.setup()
            data[name] = []
            for pid, html, url, gold in pages(name):
                blocks = M.parse(html)[0] if is_tune(pid) else None
                if not blocks:
                    continue
                outs = [ex.apply(Document(id=pid, text="", source="gold", url=url, html=html)) for ex in base]
                f1 = max(prf(bag(o.text if isinstance(o, Document) else ""), bag(gold))[2] for o in outs)
                data[name].append({"id": pid, "blocks": blocks, "gold_text": gold, "base_f1": f1,
                                   "base_all": [prf(bag(o.text if isinstance(o, Document) else ""), bag(gold))[2]
                                                for o in outs]})
            print(f"  parsed {name}: {len(data[name])} tuning pages", flush=True)
        with open(cache, "wb") as f:
            pickle.dump(data, f)
    for name, rows in data.items():
        keep = KEEP_COMMENTS.get(name, False)
        for r in rows:
            r["keep"] = keep
            r["x"], words = F.local(r["blocks"], keep)
            r["words"] = words
            r["tokens"] = [_WORD.findall(b.text.lower()) for b in r["blocks"]]  # for the labels and the F1
            r["gold"] = bag(r["gold_text"])
            r["n"] = words.astype(np.float64) * ~F.comments(r["blocks"])  # comment blocks weigh nothing
            r["frac"] = in_gold(r["tokens"], _WORD.findall(r["gold_text"].lower()))
    return data


def targets(data: dict) -> dict[str, float]:
    """Per set, the better of trafilatura's and Resiliparse's mean F1 over its tuning pages."""
    return {name: max(np.mean([r["base_all"][k] for r in rows]) for k in range(2)) for name, rows in data.items()}


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
                x = np.hstack([x, F.context(r["blocks"], M.probability(x, w1), r["keep"])])
            xs.append(x)
            ys.append((r["frac"] >= label).astype(np.float64))
            ws.append(1000.0 * set_weight.get(name, 1.0) * r["n"] / max(r["n"].sum(), 1.0) / len(rows))
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


def fit(data: dict, label: float, set_weight: dict[str, float], l2: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Stage-1 weights, then stage-2 weights on the stage-1 scores they produce."""
    w1 = logistic(*design(data, label, None, set_weight), l2=l2)
    return w1, logistic(*design(data, label, w1, set_weight), l2=l2)


def page_f1(r: dict, w1: np.ndarray, w2: np.ndarray) -> list[float]:
    """The page's token F1 at every threshold of THRESHOLDS."""
    p, _ = M.scores(r["blocks"], r["keep"], (w1, w2))
    out = []
    for threshold in THRESHOLDS:
        keep = M.select(r["blocks"], p, r["words"], threshold, 10, r["keep"])
        out.append(prf(Counter(t for ts, k in zip(r["tokens"], keep, strict=True) if k for t in ts), r["gold"])[2])
    return out


def leave_one_set_out(data: dict, label: float, set_weight: dict[str, float], l2: float
                      ) -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Per set, every tuning page's F1 at every threshold (pages x thresholds) under the weights fitted on the
    other sets, and those weights."""
    scores, models = {}, {}
    for name, rows in data.items():
        models[name] = fit({n: r for n, r in data.items() if n != name}, label, set_weight, l2)
        scores[name] = np.array([page_f1(r, *models[name]) for r in rows])
    return scores, models


def choose(scores: dict[str, np.ndarray], target: dict[str, float], sets) -> int:
    """The threshold index that maximises the worst margin over `sets` of mean left-out F1 to the target."""
    margins = np.min([scores[name].mean(axis=0) - target[name] for name in sets], axis=0)
    return int(np.argmax(margins))


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
    ap.add_argument("--l2", type=float, default=10.0, help="L2 penalty of both logistic regressions (each set weighs 1000)")
    ap.add_argument("--out", default=str(ROOT / "curate" / "extract" / "weights.py"))
    ap.add_argument("--left-out", default=str(ROOT / "benchmarks" / "extract_left_out.json"))
    args = ap.parse_args()
    data = load(Path(args.cache))
    target = targets(data)
    set_weight = {k: float(v) for k, v in (w.split("=") for w in args.weight)}
    scores, models = leave_one_set_out(data, args.label, set_weight, args.l2)
    for i, threshold in enumerate(THRESHOLDS):
        print(f"  threshold {threshold}: " + "  ".join(
            f"{k} {v[:, i].mean():.4f} ({v[:, i].mean() - target[k]:+.4f}, {int((v[:, i] < 0.5).sum())} < 0.5)"
            for k, v in scores.items()) + "  (left out; margin to the better baseline)")
    print("  baselines: " + "  ".join(
        f"{k} {target[k]:.4f} ({min(sum(r['base_all'][j] < 0.5 for r in rows) for j in range(2))} < 0.5)"
        for k, rows in data.items()))
    best = choose(scores, target, list(data))
    left_out = {}
    for name, (w1, w2) in models.items():
        t = THRESHOLDS[choose(scores, target, [n for n in data if n != name])]
        left_out[name] = {"threshold": t, "stage1": dict(zip(F.LOCAL, w1.round(4).tolist(), strict=True)),
                          "stage2": dict(zip(F.LOCAL + F.CONTEXT, w2.round(4).tolist(), strict=True))}
    w1, w2 = fit(data, args.label, set_weight, args.l2)
    options = " ".join([f"--label {args.label}", f"--l2 {args.l2}", *(f"--weight {w}" for w in args.weight)])
    write(Path(args.out), w1, w2, THRESHOLDS[best], options)
    Path(args.left_out).write_text(json.dumps(left_out, indent=1) + "\n")
    print(f"wrote {args.out} (threshold {THRESHOLDS[best]}) and {args.left_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
