"""Evaluation results as Markdown tables, a JSON file and a comparison plot."""

from __future__ import annotations

import json
from pathlib import Path

from train.evaluate.icl import primary


def _f(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def task_label(t: dict) -> str:
    return f"{t['task']} {t['shots']}-shot"


SMALL_TASK = 100  # fewer examples than this and a task's accuracy moves by more than ±5 points (one standard error)


def _raw_acc(t: dict) -> float:
    """The accuracy the centred score is computed from (per character where the task has it, as `primary`)."""
    return t.get("acc_per_char", t["acc"])


def summary_table(results: list[dict], names: list[str] | None = None) -> str:
    """One row per checkpoint: bits per byte of each held-out set, each task's score, their mean.

    A task's cell is its score centred on chance ((acc - chance) / (1 - chance): 0 is chance, 1 perfect) with the raw
    accuracy beside it, since a centred 0.240 reads as bad where the accuracy is 0.570 on a two-way choice. Tasks with
    fewer than SMALL_TASK examples are marked: they weigh as much as a large one in the mean, so it says so below."""
    names = names or [r["checkpoint"] for r in results]
    first = results[0]
    small = {task_label(t) for r in results for t in r["tasks"] if t["examples"] < SMALL_TASK}
    head = (["model", "step", "tokens"] + [f"{h['set']} bpb" for h in first["heldout"]]
            + [f"{task_label(t)}{' †' if task_label(t) in small else ''} centred (acc)" for t in first["tasks"]]
            + (["tasks (centred, unweighted mean)"] if first["tasks"] else []))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in zip(names, results, strict=True):
        cells = [name, str(r["step"]), f"{r['tokens']:,}"] + [_f(h["bits_per_byte"]) for h in r["heldout"]]
        cells += [f"{_f(primary(t), 3)} ({_f(_raw_acc(t), 3)})" for t in r["tasks"]]
        if r["tasks"]:
            cells.append(_f(r["aggregate"]["centred"], 3))
        lines.append("| " + " | ".join(cells) + " |")
    if small:
        worst = min((t for t in first["tasks"] if task_label(t) in small), key=lambda t: t["examples"])
        se = (0.25 / worst["examples"]) ** 0.5
        lines += ["", f"† fewer than {SMALL_TASK} examples ({', '.join(sorted(small))}): one standard error of an "
                      f"accuracy is up to ±{se:.3f} ({worst['examples']} examples), yet each weighs as much as a large "
                      "task in the mean; read its score as noise unless the gap is several times that."]
    return "\n".join(lines)


def task_table(results: list[dict], names: list[str] | None = None) -> str:
    """Every task score of every checkpoint (accuracy raw, per token, per character, and centred on chance)."""
    names = names or [r["checkpoint"] for r in results]
    head = ["model", "task", "n", "chance", "acc", "acc/token", "acc/char", "centred (acc)", "centred (acc/char)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in zip(names, results, strict=True):
        for t in r["tasks"]:
            lines.append("| " + " | ".join([
                name, task_label(t), str(t["examples"]), _f(t["chance"], 3), _f(t["acc"], 3),
                _f(t.get("acc_per_token"), 3), _f(t.get("acc_per_char"), 3), _f(t["acc_centred"], 3),
                _f(t.get("acc_per_char_centred"), 3)]) + " |")
    return "\n".join(lines)


def source_table(results: list[dict], names: list[str] | None = None) -> str:
    """Bits per byte per held-out set and source, with the bytes and tokens behind each figure."""
    names = names or [r["checkpoint"] for r in results]
    lines = ["| model | set | source | docs | bytes | tokens | bytes/token | bpb |", "|---|---|---|---|---|---|---|---|"]
    for name, r in zip(names, results, strict=True):
        for h in r["heldout"]:
            for src, s in h["sources"].items():
                lines.append(f"| {name} | {h['set']} | {src} | {s['docs']} | {s['bytes']:,} | {s['tokens']:,} | "
                             f"{_f(s['bytes_per_token'], 2)} | {_f(s['bits_per_byte'])} |")
    return "\n".join(lines)


def markdown(results: list[dict], names: list[str] | None = None) -> str:
    parts = ["## Summary", "", summary_table(results, names)]
    if results[0]["tasks"]:
        parts += ["", "## Tasks", "", task_table(results, names)]
    if results[0]["heldout"]:
        parts += ["", "## Held-out sets by source", "", source_table(results, names)]
    return "\n".join(parts) + "\n"


def plot(results: list[dict], path: Path, names: list[str] | None = None) -> None:
    """Bars per checkpoint: bits per byte of each held-out set (left), centred task scores (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = names or [Path(r["checkpoint"]).name or r["checkpoint"] for r in results]
    panels = [(p, lab) for p, lab in (("heldout", "bits per byte (lower is better)"),
                                       ("tasks", "centred accuracy (0 = chance)")) if results[0][p]]
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    for ax, (part, label) in zip(axes[0], panels, strict=True):
        groups = [h["set"] for h in results[0]["heldout"]] if part == "heldout" else [task_label(t) for t in results[0]["tasks"]]
        width = 0.8 / len(results)
        for i, (name, r) in enumerate(zip(names, results, strict=True)):
            vals = [h["bits_per_byte"] for h in r["heldout"]] if part == "heldout" else [primary(t) for t in r["tasks"]]
            ax.bar(np.arange(len(groups)) + i * width, vals, width, label=name)
        ax.set_xticks(np.arange(len(groups)) + width * (len(results) - 1) / 2, groups, rotation=30, ha="right")
        ax.set(ylabel=label)
        ax.axhline(0, color="k", lw=0.5)
        ax.grid(alpha=0.3, axis="y")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(results: list[dict], out: Path, names: list[str] | None = None) -> list[Path]:
    """eval.json and eval.md in `out`, and eval.png when there are several checkpoints to compare."""
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "eval.json", out / "eval.md"]
    files[0].write_text(json.dumps({"results": results}, indent=1) + "\n")
    files[1].write_text(markdown(results, names))
    if len(results) > 1:
        files.append(out / "eval.png")
        plot(results, files[-1], names)
    return files
