"""The ablation's results: what each variant kept, its mix, and its runs' scores, as JSON, Markdown and two plots.

Scores of a variant trained with several seeds are given as mean ± sample standard deviation, and the seed-to-seed
range is tabulated on its own: a difference between variants smaller than that range is not evidence of anything.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from train.evaluate.icl import primary
from train.evaluate.report import task_label


def _mark(path: Path) -> dict:
    from train.ablate import mark_file

    f = mark_file(path)
    return json.loads(f.read_text()) if f.is_file() else {}


def collect(spec) -> dict:
    """Everything measured so far (variants whose runs have not finished are listed without scores)."""
    from train.ablate import seeds_of

    variants = []
    for v in spec.variants:
        base = spec.out / "variants" / v["name"]
        runs = []
        for seed in seeds_of(spec, v):
            d = base / f"seed{seed}"
            if (d / "eval.json").is_file():
                curve = [json.loads(line) for line in (d / "curve.jsonl").read_text().splitlines()]
                runs.append({"seed": seed, "eval": json.loads((d / "eval.json").read_text()), "curve": curve})
        variants.append({"name": v["name"], "pipeline": v["pipeline"], "curated": _mark(base / "curated"),
                         "mix": _mark(base / "mix"), "runs": runs})
    return {"inputs": spec.inputs, "tokens": spec.tokens, "vocab_size": spec.vocab_size, "train": spec.train,
            "eval": spec.eval, "variants": variants}


def metrics(run: dict) -> dict[str, float]:
    """The figures a run is compared on: bits per byte of each held-out set, each task's centred score, their mean."""
    e = run["eval"]
    out = {f"{h['set']} bpb": h["bits_per_byte"] for h in e["heldout"]}
    out.update({task_label(t): primary(t) for t in e["tasks"]})
    if e["tasks"]:
        out["tasks (centred mean)"] = e["aggregate"]["centred"]
    return out


def _cell(values: list[float], digits: int) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def _columns(results: dict) -> list[str]:
    for v in results["variants"]:
        if v["runs"]:
            return list(metrics(v["runs"][0]))
    return []


def markdown(results: dict) -> str:
    cols = _columns(results)
    head = ["variant", "docs kept / read", "chars kept", "mix tokens", "epochs", "seeds"] + cols
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in results["variants"]:
        c, m = v["curated"], v["mix"]
        per_run = [metrics(r) for r in v["runs"]]
        cells = [v["name"], f"{c.get('docs_written', 0):,} / {c.get('docs_read', 0):,}", f"{c.get('chars_written', 0):,}",
                 f"{m.get('tokens', 0):,}" + (" (capped)" if m.get("limited") else ""), f"{m.get('epochs', 0):.2f}",
                 str(len(v["runs"]))]
        cells += [_cell([r[k] for r in per_run if k in r], 4 if k.endswith("bpb") else 3) for k in cols]
        lines.append("| " + " | ".join(cells) + " |")
    parts = ["## Results", "", "\n".join(lines), ""]
    spread = [(v, [metrics(r) for r in v["runs"]]) for v in results["variants"] if len(v["runs"]) > 1]
    if spread:
        head = ["variant (seeds)"] + cols
        rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for v, per_run in spread:
            rng = [max(r[k] for r in per_run) - min(r[k] for r in per_run) for k in cols]
            rows.append("| " + " | ".join([f"{v['name']} ({len(per_run)})"] + [f"{x:.4f}" for x in rng]) + " |")
        parts += ["## Seed-to-seed range (max - min over seeds)", "", "\n".join(rows), ""]
    run_rows = ["| variant | seed | step | tokens | " + " | ".join(cols) + " |", "|" + "---|" * (4 + len(cols))]
    for v in results["variants"]:
        for r in v["runs"]:
            m = metrics(r)
            run_rows.append(f"| {v['name']} | {r['seed']} | {r['eval']['step']} | {r['eval']['tokens']:,} | "
                            + " | ".join(f"{m[k]:.4f}" for k in cols) + " |")
    parts += ["## Every run", "", "\n".join(run_rows), ""]
    return "\n".join(parts)


def plot_curves(results: dict, path: Path) -> None:
    """Held-out bits per byte against training tokens: one panel per set, one line per variant (seeds faint)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = [c.removesuffix(" bpb") for c in _columns(results) if c.endswith(" bpb")]
    fig, axes = plt.subplots(1, len(sets), figsize=(4.5 * len(sets), 3.6), squeeze=False)
    for ax, name in zip(axes[0], sets, strict=True):
        for i, v in enumerate(results["variants"]):
            color = f"C{i}"
            for j, r in enumerate(v["runs"]):
                pts = [(c["tokens"], c["heldout"][name]) for c in r["curve"] if name in c["heldout"]]
                ax.plot([t / 1e6 for t, _ in pts], [b for _, b in pts], "o-", color=color, ms=3, lw=1.2 if j == 0 else 0.8, alpha=1 if j == 0 else 0.5,
                        label=v["name"] if j == 0 else None)
        ax.set(title=name, xlabel="training tokens (millions)", ylabel="bits per byte")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_tasks(results: dict, path: Path) -> None:
    """Centred task scores per variant (mean over seeds; the bar's line spans the seeds' range)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    cols = [c for c in _columns(results) if not c.endswith(" bpb")]
    done = [v for v in results["variants"] if v["runs"]]
    fig, ax = plt.subplots(figsize=(max(7, 0.18 * len(cols) * max(1, len(done)) + 2), 4.5))
    width = 0.8 / max(1, len(done))
    for i, v in enumerate(done):
        per_run = [metrics(r) for r in v["runs"]]
        mean = [statistics.mean(r[k] for r in per_run) for k in cols]
        lo = [mean[j] - min(r[k] for r in per_run) for j, k in enumerate(cols)]
        hi = [max(r[k] for r in per_run) - mean[j] for j, k in enumerate(cols)]
        ax.bar(np.arange(len(cols)) + i * width, mean, width, yerr=[lo, hi], capsize=2, label=v["name"])
    ax.set_xticks(np.arange(len(cols)) + width * (len(done) - 1) / 2, cols, rotation=30, ha="right")
    ax.axhline(0, color="k", lw=0.6)
    ax.set(ylabel="centred accuracy (0 = chance)", title="tasks")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(spec, results: dict[str, Any]) -> None:
    out = spec.out
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    (out / "results.md").write_text(markdown(results))
    if _columns(results):
        plot_curves(results, out / "curves.png")
        if any(not c.endswith(" bpb") for c in _columns(results)):
            plot_tasks(results, out / "tasks.png")
