"""The ablation's results: what each variant kept, its mix, and its runs' scores, as JSON, Markdown and two plots.

Scores of a variant trained with several seeds are given as mean ± sample standard deviation, and the seed-to-seed
range is tabulated on its own: a difference between variants smaller than that range is not evidence of anything.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Any

from curate.io import fs
from train.ablate.spec import read_mark, seeds_of
from train.evaluate.icl import primary
from train.evaluate.report import task_label


def classifier_card(variant: dict) -> dict | None:
    """The held-out quality of the variant's quality classifier (the card `curate quality train` writes beside
    the model), so its effect on the model can be read next to how well it separates its own classes."""
    model = variant.get("env", {}).get("PENEIRA_QUALITY_MODEL")
    if not model or not fs.isfile(f"{model}.json"):  # a model may live on a store, and its card beside it
        return None
    c = json.loads(fs.read_bytes(f"{model}.json"))
    m = c.get("heldout_metrics", {})
    return {"model": model, "roc_auc": m.get("roc_auc"), "average_precision": m.get("average_precision"),
            "heldout_examples": c.get("heldout_examples"), "chunk_words": c.get("config", {}).get("chunk_words")}


def head_card(variant: dict) -> dict | None:
    """The held-out agreement of the variant's fitted head with its teacher's grades (`curate quality fit`'s
    metrics.json in the head folder at $PENEIRA_HEAD), read next to what the head did to the model."""
    head = variant.get("env", {}).get("PENEIRA_HEAD")
    if not head or not fs.isfile(f"{head}/metrics.json"):
        return None
    m = json.loads(fs.read_bytes(f"{head}/metrics.json"))
    keys = ("documents", "spearman", "keep_at", "precision", "recall", "f1", "mean_abs_error")
    return {"model": head, "graded": m.get("graded"), "heldout": {k: m.get("heldout", {}).get(k) for k in keys}}


def collect(spec) -> dict:
    """Everything measured so far (variants whose runs have not finished are listed without scores). Each variant's
    unique tokens, the tokens each run trained on and the epochs of its text that makes."""
    budget_file = spec.out / "budget.json"
    budget = json.loads(budget_file.read_text()) if budget_file.is_file() else {}
    variants = []
    for v in spec.variants:
        base = spec.out / "variants" / v["name"]
        unique = read_mark(base / "unique").get("tokens")
        runs = []
        for seed in seeds_of(spec, v):
            d = base / f"seed{seed}"
            if (d / "eval.json").is_file():
                curve = [json.loads(line) for line in (d / "curve.jsonl").read_text().splitlines()]
                e = json.loads((d / "eval.json").read_text())
                runs.append({"seed": seed, "eval": e, "curve": curve, "tokens_seen": e["tokens"],
                             "epochs": e["tokens"] / unique if unique else None,
                             "trainer_code": read_mark(d).get("trainer_code")})
        curated = {k: x for k, x in read_mark(base / "curated").items() if k != "key"}
        variants.append({"name": v["name"], "pipeline": v["pipeline"], "curated": curated, "unique_tokens": unique,
                         "mix": {k: x for k, x in read_mark(base / "mix").items() if k != "key"},
                         "languages": languages(base),
                         "classifier": classifier_card(v), "head": head_card(v), "runs": runs})
    return {"inputs": spec.inputs, "tokens": spec.tokens, "max_epochs": spec.max_epochs, "budget": budget,
            "vocab_size": spec.vocab_size, "train": spec.train, "eval": spec.eval, "variants": variants}


def languages(base: Path) -> dict[str, list[int]]:
    """Characters per language (the `lang` column) in the variant's curation and in its mix: {lang: [curated, mixed]}.
    Mixing to the shared budget leaves whole documents out of the larger variants, and by chance that can take one
    language's text more than another's: a held-out set in that language then measures the mix, not the step
    (issue 43's ablation found 15% of the baseline's Portuguese left out). Empty until the mix is done."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out: dict[str, list[int]] = {}
    folders = [base / "curated" / "data", base / "mix" / "data"]
    if not all(f.is_dir() for f in folders) or not read_mark(base / "mix").get("done"):
        return {}
    for k, folder in enumerate(folders):
        for f in sorted(folder.glob("*.parquet")):
            for batch in pq.ParquetFile(f).iter_batches(columns=["lang", "text"], batch_size=4096):
                chars = pc.utf8_length(batch.column("text")).to_pylist()
                for lang, n in zip(batch.column("lang").to_pylist(), chars, strict=True):
                    out.setdefault(lang or "?", [0, 0])[k] += n
    return dict(sorted(out.items(), key=lambda kv: -kv[1][0]))


LANGUAGE_SHARE = 0.01  # languages under 1% of every variant's curated characters are summed as "other"


def language_table(results: dict) -> str:
    """Per variant and language: characters curated, characters in the mix, the share the mix kept."""
    variants = [v for v in results["variants"] if v.get("languages")]
    shown = {lang for v in variants for lang, (c, _) in v["languages"].items()
             if c >= LANGUAGE_SHARE * sum(x for x, _ in v["languages"].values())}
    rows = ["| variant | language | chars curated | chars in the mix | share mixed |", "|---|---|---|---|---|"]
    for v in variants:
        merged: dict[str, list[int]] = {}
        for lang, (c, m) in v["languages"].items():
            pair = merged.setdefault(lang if lang in shown else "other", [0, 0])
            pair[0], pair[1] = pair[0] + c, pair[1] + m
        for lang, (c, m) in merged.items():
            rows.append(f"| {v['name']} | {lang} | {c:,} | {m:,} | {m / c:.1%} |" if c else
                        f"| {v['name']} | {lang} | 0 | {m:,} | - |")
    return "\n".join(rows)


def metrics(run: dict) -> dict[str, float]:
    """The figures a run is compared on: bits per byte of each held-out set, each task's centred score, their mean."""
    e = run["eval"]
    out = {f"{h['set']} bpb": h["bits_per_byte"] for h in e["heldout"]}
    out.update({task_label(t): primary(t) for t in e["tasks"]})
    if e["tasks"]:
        out["tasks (centred mean)"] = e["aggregate"]["centred"]
    return out


def _examples(counts: dict | None) -> str:
    return ", ".join(f"{n} {k}" for k, n in (counts or {}).items()) or "-"


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
    head = ["variant", "docs kept / read", "chars kept", "unique tokens", "mix tokens", "tokens seen", "epochs",
            "seeds"] + cols
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in results["variants"]:
        c, m = v["curated"], v["mix"]
        per_run = [metrics(r) for r in v["runs"]]
        seen = sorted({r["tokens_seen"] for r in v["runs"]})
        epochs = sorted({round(r["epochs"], 2) for r in v["runs"] if r.get("epochs") is not None})
        cells = [v["name"], f"{c.get('docs_written', 0):,} / {c.get('docs_read', 0):,}", f"{c.get('chars_written', 0):,}",
                 f"{v.get('unique_tokens') or 0:,}", f"{m.get('tokens', 0):,}" + (" (capped)" if m.get("limited") else ""),
                 ", ".join(f"{t:,}" for t in seen) or "-", ", ".join(f"{e:.2f}" for e in epochs) or "-",
                 str(len(v["runs"]))]
        cells += [_cell([r[k] for r in per_run if k in r], 4 if k.endswith("bpb") else 3) for k in cols]
        lines.append("| " + " | ".join(cells) + " |")
    b = results.get("budget", {})
    rule = (f"Budget: {b['tokens']:,} tokens (`tokens = {b['rule']}`, `max_epochs = {b['max_epochs']}`); epochs = "
            "tokens seen / the variant's unique tokens." if b else "")
    parts = ["## Results", "", rule, "", "\n".join(lines), ""]
    cards = [(v["name"], v["classifier"]) for v in results["variants"] if v.get("classifier")]
    if cards:
        rows = ["| variant | classifier | held-out ROC AUC | average precision | held-out examples |",
                "|---|---|---|---|---|"]
        rows += [f"| {n} | {c['model']} (chunks of {c['chunk_words']} words) | {c['roc_auc']} | "
                 f"{c['average_precision']} | {_examples(c['heldout_examples'])} |" for n, c in cards]
        parts += ["## The quality classifiers on their own held-out examples", "", "\n".join(rows), ""]
    heads = [(v["name"], v["head"]) for v in results["variants"] if v.get("head")]
    if heads:
        rows = ["| variant | head | graded | held out | Spearman | keep at | precision | recall | F1 | mean abs error |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        rows += [f"| {n} | {h['model']} | {h['graded']} | " + " | ".join(str(h["heldout"][k]) for k in
                 ("documents", "spearman", "keep_at", "precision", "recall", "f1", "mean_abs_error")) + " |"
                 for n, h in heads]
        parts += ["## The fitted heads on their teacher's held-out grades", "", "\n".join(rows), ""]
    spread = [(v, [metrics(r) for r in v["runs"]]) for v in results["variants"] if len(v["runs"]) > 1]
    if spread:
        head = ["variant (seeds)"] + cols
        rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for v, per_run in spread:
            rng = [max(r[k] for r in per_run) - min(r[k] for r in per_run) for k in cols]
            rows.append("| " + " | ".join([f"{v['name']} ({len(per_run)})"] + [f"{x:.4f}" for x in rng]) + " |")
        parts += ["## Seed-to-seed range (max - min over seeds)", "", "\n".join(rows), ""]
    if any(v.get("languages") for v in results["variants"]):  # after the seed ranges: not in the docs' results table
        parts += ["## Characters per language, curated and mixed", "", language_table(results), ""]
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
    ncols = min(3, len(sets))
    nrows = -(-len(sets) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, 2.8 * nrows), squeeze=False)
    for ax in axes.flat[len(sets):]:
        ax.axis("off")
    for ax, name in zip(axes.flat[: len(sets)], sets, strict=True):
        for i, v in enumerate(results["variants"]):
            color = f"C{i}"
            for j, r in enumerate(v["runs"]):
                pts = [(c["tokens"], c["heldout"][name]) for c in r["curve"] if name in c["heldout"]]
                ax.plot([t / 1e6 for t, _ in pts], [b for _, b in pts], "o-", color=color, ms=3, lw=1.2 if j == 0 else 0.8, alpha=1 if j == 0 else 0.5,
                        label=v["name"] if j == 0 else None)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("training tokens (millions)", fontsize=8)
        ax.set_ylabel("bits per byte", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
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


PLOTS = ("curves.png", "tasks.png")


def outputs(results: dict) -> list[str]:
    """The files `write` makes of these results: the plots only when there is something to plot (curves once a run
    finished, tasks when the spec evaluates tasks)."""
    cols = _columns(results)
    return (["results.json", "results.md"] + (["curves.png"] if cols else [])
            + (["tasks.png"] if any(not c.endswith(" bpb") for c in cols) else []))


def write(spec, results: dict[str, Any]) -> list[str]:
    """results.json, results.md and the plots in OUT; a plot these results do not make is removed (one left by an
    earlier spec in the same folder would pass for theirs). Returns the names written."""
    out = spec.out
    names = outputs(results)
    for name, text in (("results.json", json.dumps(results, indent=1, default=str) + "\n"),
                       ("results.md", markdown(results))):
        tmp = out / f".{name}.{os.getpid()}.tmp"  # atomic, and several processes may write the report at once
        tmp.write_text(text)
        tmp.replace(out / name)
    if "curves.png" in names:
        plot_curves(results, out / "curves.png")
    if "tasks.png" in names:
        plot_tasks(results, out / "tasks.png")
    for name in set(PLOTS) - set(names):
        (out / name).unlink(missing_ok=True)
    return names


# ---------------------------------------------------------------------------------------------- docs

GAPS = [("extract", "heuristics"), ("heuristics", "dedup"), ("dedup", "quality"), ("dedup", "quality_top"),
        ("dedup", "quality_chunk100"), ("extract", "dedup"), ("extract", "quality"),
        ("dedup", "dedup_lines"), ("extract", "fineweb"), ("dedup", "fineweb"),
        ("dedup", "fasttext"), ("dedup", "perplexity"), ("dedup", "dsir"), ("dedup", "head"),
        ("dedup", "substrings"), ("dedup", "semantic")]
# (before, after) pairs shown when both variants ran (dedup_lines: docs/dedup.md; fineweb: docs/ablation-recipes.md;
# fasttext, perplexity, dsir: docs/selection.md; substrings, semantic: docs/dedup-family.md)


def gap_table(results: dict, pairs: list[tuple[str, str]] | None = None) -> str:
    """Each step's gap in held-out bits per byte (before - after: positive = the step helps), next to the seed
    spread: the larger of the two variants' standard deviations over seeds, the standard error of the gap
    (sqrt(sd_a^2/n_a + sd_b^2/n_b)) and whether the two variants' ranges of seeds overlap."""
    by = {v["name"]: [metrics(r) for r in v["runs"]] for v in results["variants"] if v["runs"]}
    sets = [c for c in _columns(results) if c.endswith(" bpb")]
    rows = ["| step | seeds | set | gap (bpb) | seed sd (larger) | gap / sd | gap / its standard error | seeds overlap |",
            "|---|---|---|---|---|---|---|---|"]
    for a, b in pairs or GAPS:
        if a not in by or b not in by:
            continue
        for k in sets:
            xa, xb = [r[k] for r in by[a]], [r[k] for r in by[b]]
            gap = statistics.mean(xa) - statistics.mean(xb)
            sds = [statistics.stdev(x) if len(x) > 1 else 0.0 for x in (xa, xb)]
            se = (sds[0] ** 2 / len(xa) + sds[1] ** 2 / len(xb)) ** 0.5
            overlap = max(min(xa), min(xb)) <= min(max(xa), max(xb))
            rows.append(f"| {a} → {b} | {len(xa)}, {len(xb)} | {k.removesuffix(' bpb')} | {gap:+.4f} | {max(sds):.4f} | "
                        f"{_ratio(gap, max(sds))} | {_ratio(gap, se)} | {'yes' if overlap else 'no'} |")
    return "\n".join(rows)


def _ratio(x: float, y: float) -> str:
    return f"{x / y:+.1f}" if y else "-"


def write_docs(spec, results: dict, doc: Path) -> list[Path]:
    """The docs' numbers from results.json, never retyped: every `<!-- ablate:NAME -->` ... `<!-- /ablate:NAME -->`
    block of `doc` is replaced by the generated table NAME (results, gaps, deciles), and results.json, results.md and the
    plots are copied beside it (DOC's stem as a folder: docs/ablation/ for docs/ablation.md)."""
    import re
    import shutil

    tables = {"results": markdown(results).split("## Seed-to-seed")[0].strip(), "gaps": gap_table(results),
              "languages": language_table(results)}
    if (spec.out / "deciles.json").is_file():  # written by --deciles
        from train.ablate.deciles import markdown as decile_markdown

        tables["deciles"] = decile_markdown(json.loads((spec.out / "deciles.json").read_text()))
    text = doc.read_text()
    for name, table in tables.items():
        text = re.sub(rf"(<!-- ablate:{name} -->\n)(?:.*?\n)?(<!-- /ablate:{name} -->)",
                      lambda m, t=table: m.group(1) + t + "\n" + m.group(2), text, flags=re.S)
    tmp = doc.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(doc)
    folder = doc.parent / doc.stem
    folder.mkdir(exist_ok=True)
    written = [doc]
    for f in [*outputs(results), "deciles.json"]:
        if (spec.out / f).is_file():
            shutil.copyfile(spec.out / f, folder / f)
            written.append(folder / f)
    return written
