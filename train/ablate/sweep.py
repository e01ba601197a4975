"""`sweep-lr`: the same model trained at four learning rates, to see the regimes rather than to tune a number.

Too low: the loss creeps down and stagnates. Good: it falls fast and smoothly. High: it falls, but noisily and
less far. Too high: it blows up; the trainer's divergence guard stops that run and the plot marks where.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from train.config import Config
from train.loop import RunResult, train

REGIMES = ("too low", "good", "high", "too high")
MULTIPLIERS = (1 / 100, 1.0, 10.0, 300.0)  # relative to the config's learning rate


def sweep_lr(cfg: Config, lrs: list[float] | None = None) -> dict[float, RunResult]:
    """Train at each learning rate (default: the config's lr times MULTIPLIERS) and plot all curves in one PNG."""
    key = "muon_lr" if cfg.optimizer == "muon" else "lr"
    base = getattr(cfg, key)
    lrs = lrs or [base * m for m in MULTIPLIERS]
    out = Path(cfg.out)
    results: dict[float, RunResult] = {}
    for lr in lrs:
        run_cfg = dataclasses.replace(cfg, out=str(out / f"lr_{lr:g}"), eval_every=0, ckpt_every=0, plots=False,
                                      **{key: lr}).validate()
        print(f"--- {key} = {lr:g}")
        results[lr] = train(run_cfg, overwrite=True)  # its own lr_* directories, redone on a rerun
        if results[lr].stopped:  # SIGTERM: no further runs (the plot shows those done)
            break
    plot_sweep(results, out / "sweep_lr.png", key)
    print(f"plot: {out / 'sweep_lr.png'}")
    return results


def plot_sweep(results: dict[float, RunResult], path: Path, key: str = "lr") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    names = REGIMES if len(results) == len(REGIMES) else [""] * len(results)
    start = max((r.losses[0] for r in results.values() if r.losses), default=10.0)
    top = 1.3 * start  # a diverging curve would otherwise squash the others flat
    for (lr, r), name in zip(sorted(results.items()), names, strict=True):
        steps = range(1, len(r.losses) + 1)
        label = f"{key} {lr:g}" + (f" ({name})" if name else "") + (" — diverged, stopped" if r.diverged else "")
        (line,) = ax.plot(steps, [min(x, top) for x in r.losses], lw=1, label=label)
        if r.diverged and r.losses:
            ax.plot(len(r.losses), min(r.losses[-1], top), "x", color=line.get_color(), ms=10, mew=2, clip_on=False)
    ax.set_ylim(top=top)
    ax.set(xlabel="step", ylabel="training loss (nats/token)", title="learning-rate sweep")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
