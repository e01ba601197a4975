"""The `head` variant's classifier, made as FineWeb-Edu makes one: a teacher grades a sample of the raw pool, a small
head on a frozen encoder learns the grades (docs/selection.md). Run after scripts/selection_models.py (which calls
it with --head), from the repository root:

    python scripts/selection_head.py --models runs/ablation-selection/models

1. The teacher: a language model of this project's trainer, larger than the reference model (4 layers of 192
   against 2 of 128), trained on the clean English text of scripts/selection_models.py without every tenth
   document; those held-out clean documents, cut to the 10,000 characters `annotate` puts in a prompt, fix the
   grade cut points from the teacher's bits per byte of them (`cut_points`; MODELS/teacher/grades.json).
2. The pool: the spec's `dedup` variant (pipelines/ablation/dedup.py) curated over the ablation's raw input,
   as the ablation curates it, into MODELS/pool.
3. `curate quality annotate` of the whole pool against scripts/teacher_server.py (started on a free port, stopped
   after) with docs/prompts/resemblance.txt, into MODELS/grades.
4. `curate quality fit` of a ridge head on the reference model's mean-pooled hidden states (the frozen encoder),
   a quarter of the graded pages held out, into MODELS/head (metrics.json: held-out Spearman, F1 at grade 3).
5. MODELS/head-summary.json: the two models' sizes and losses, the grade histogram, and the Spearman correlation
   of the teacher's and the reference model's bits per byte over the pool.

Each step is skipped when its output is there (delete it to redo it; the teacher: when it finished its steps).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from selection_models import clean_documents, run

HELD_EVERY = 10  # every tenth clean document is kept out of the teacher's training: the cut points come from them
MAX_CHARS = 10_000  # what `curate quality annotate` puts of a page in the prompt (its --max-chars default)
TEMPLATE = "docs/prompts/resemblance.txt"


def train_teacher(text_dir: Path, out: Path, steps: int) -> None:
    """The clean documents but every HELD_EVERY-th, tokenized with the reference model's tokenizer, and a
    4 x 192 GPT trained on them (the reference model: 2 x 128)."""
    docs = clean_documents(text_dir)
    train = [d for i, d in enumerate(docs) if i % HELD_EVERY]
    with open(out / "teacher-clean.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"id": f"clean-{i}", "text": d}) + "\n" for i, d in enumerate(train))
    curate, py = str(Path(sys.executable).parent / "curate"), sys.executable
    run(curate, "tokenize", str(out / "teacher-clean.jsonl"), "--tokenizer", str(out / "tokenizer.json"),
        "--val-fraction", "0.02", "--out", str(out / "teacher-tokens"), "--overwrite", "--no-progress")
    run(py, "-m", "train", "--data", str(out / "teacher-tokens"), "--config", "tiny", "--n_layer", "4", "--n_embd",
        "192", "--n_head", "6", "--seq_len", "256", "--batch_tokens", "2048", "--micro_batch", "8", "--steps",
        str(steps), "--warmup_steps", "30", "--lr", "3e-3", "--eval_every", "0", "--out", str(out / "teacher"),
        "--overwrite", "--no-progress", "--no-plots")


def cut_points(text_dir: Path, out: Path) -> dict:
    """The teacher's bits per byte of the held-out clean documents (their first MAX_CHARS characters), and the five
    cut points from them: the median, the 90th percentile and the largest (the worst clean document), then one and
    two more of the clean spread (largest - median) above the largest. Grade 5: at or below the clean median; 4:
    below nine in ten clean documents; 3: no worse than the worst of them; 2 and 1: within one and two spreads
    beyond it; 0: further off (pages in another language: the teacher knows only English)."""
    import numpy as np

    from curate.models import ModelSpec
    from curate.models.inference import get_model

    held = [d[:MAX_CHARS] for i, d in enumerate(clean_documents(text_dir)) if i % HELD_EVERY == 0]
    model = get_model(ModelSpec(str(out / "teacher"), task="causal", device="cpu", threads=1))
    bpb = model.bits_per_byte(held)
    median, q90, top = (float(np.quantile(bpb, q)) for q in (0.5, 0.9, 1.0))
    cuts = [median, q90, top, top + (top - median), top + 2 * (top - median)]
    return {"cuts": [round(c, 4) for c in cuts], "rule": "median, 90th percentile, largest, largest + 1 and + 2 "
            "spreads (largest - median) of the held-out clean documents' bits per byte", "documents": len(held),
            "max_chars": MAX_CHARS, "bpb_mean": round(float(bpb.mean()), 4), "model": str(out / "teacher"),
            "held_out": f"every {HELD_EVERY}th clean document (index % {HELD_EVERY} == 0)"}


def trained(run: Path, steps: int) -> bool:
    """Whether the run in `run` finished its `steps` (a checkpoint is written on the way too)."""
    import torch

    f = run / "ckpt.pt"
    return f.is_file() and torch.load(f, map_location="cpu", weights_only=False).get("step") == steps


def curate_pool(spec_file: str, out: Path) -> None:
    """The spec's `dedup` variant curated over its raw input, as `train ablate` curates it."""
    from train.ablate.spec import load_spec
    from train.ablate.stages import curate_into, input_routes

    spec = load_spec(spec_file)
    (variant,) = [v for v in spec.variants if v["name"] == "dedup"]
    print(f"curating the pool with {variant['pipeline']} into {out}", flush=True)
    info = curate_into(spec, variant, input_routes(spec), out)
    print(f"pool: {info['docs_written']} of {info['docs_read']} documents kept", flush=True)


def annotate(out: Path) -> None:
    """The teacher served on a free port for the one `curate quality annotate` run, then stopped."""
    curate = str(Path(sys.executable).parent / "curate")
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("teacher_server.py")), "--model",
                               str(out / "teacher"), "--grades", str(out / "teacher" / "grades.json"), "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().split()[-1]  # "serving on http://127.0.0.1:PORT/v1"
        run(curate, "quality", "annotate", str(out / "pool"), "--out", str(out / "grades"), "--endpoint", url,
            "--model", "peneira-teacher", "--template", TEMPLATE, "-n", "100000", "--concurrency", "2",
            "--no-progress", "--overwrite")
    finally:
        server.terminate()
        server.wait()


def fit(out: Path) -> None:
    curate = str(Path(sys.executable).parent / "curate")
    run(curate, "quality", "fit", str(out / "grades"), "--encoder", str(out / "reference" / "ckpt.pt"), "--out",
        str(out / "head"), "--holdout", "0.25", "--device", "cpu", "--no-progress", "--overwrite")


def summary(out: Path) -> dict:
    """What docs/selection.md says of the teacher and its grades: both models' size, tokens and last training loss,
    the grade histogram, and how far the teacher's judgment is the reference model's own (Spearman of the two
    models' bits per byte over the pool: the perplexity variant ranks pages by the reference's)."""
    import re

    import numpy as np
    import pyarrow.parquet as pq
    from scipy.stats import spearmanr

    from curate.models import ModelSpec
    from curate.models.inference import get_model

    def model(run: Path) -> dict:
        import torch

        ck = torch.load(run / "ckpt.pt", map_location="cpu", weights_only=False)
        last = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
        c = ck["model_config"]
        return {"layers": c["n_layer"], "width": c["n_embd"], "parameters": sum(v.numel() for v in ck["model"].values()),
                "steps": last["step"], "tokens": last["tokens"], "last_loss": round(last["loss"], 4)}

    rows = pq.read_table(out / "grades" / "annotations.parquet").to_pylist()
    teacher_bpb = np.array([float(re.search(r"teacher: ([0-9.]+)", r["raw"]).group(1)) for r in rows])
    ref = get_model(ModelSpec(str(out / "reference"), task="causal", device="cpu", threads=1))
    ref_bpb = ref.bits_per_byte([r["text"][:MAX_CHARS] for r in rows])
    grades = [int(r["score"]) for r in rows]
    return {"teacher": model(out / "teacher"), "reference": model(out / "reference"), "pages": len(rows),
            "grades": {str(g): grades.count(g) for g in range(6)}, "graded_3_or_more": sum(g >= 3 for g in grades),
            "spearman_teacher_reference_bpb": round(float(spearmanr(teacher_bpb, ref_bpb)[0]), 4)}


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--models", default="runs/ablation-selection/models",
                    help="scripts/selection_models.py's --out (its tokenizer and reference model are used)")
    ap.add_argument("--spec", default="docs/ablation/selection-spec.toml")
    ap.add_argument("--teacher-steps", type=int, default=300)
    args = ap.parse_args(argv)
    text_dir, out = Path(args.shared) / "text", Path(args.models)
    if not trained(out / "teacher", args.teacher_steps):
        train_teacher(text_dir, out, args.teacher_steps)
    if not (out / "teacher" / "grades.json").is_file():
        grades = cut_points(text_dir, out)
        (out / "teacher" / "grades.json").write_text(json.dumps(grades, indent=1) + "\n")
        print(f"grade cut points: {grades['cuts']} bits per byte", flush=True)
    if not (out / "pool" / "stats.json").is_file():
        curate_pool(args.spec, out / "pool")
    if not (out / "grades" / "annotations.parquet").is_file():
        annotate(out)
    if not (out / "head" / "head.json").is_file():
        fit(out)
    if not (out / "head-summary.json").is_file():
        (out / "head-summary.json").write_text(json.dumps(summary(out), indent=1) + "\n")
    print((out / "head-summary.json").read_text(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
