"""Held-out bits per byte by classifier-score decile: which of a variant's kept text a quality classifier prefers.

`python -m train ablate --spec FILE --deciles TEXT:CLASSIFIER:MODELS` scores every document TEXT kept (e.g. dedup)
with the quality model of variant CLASSIFIER (its PENEIRA_QUALITY_MODEL), cuts the documents into ten deciles by
score, and measures each decile's bits per byte under the final checkpoints of every seed of each variant in MODELS
(comma-separated). A classifier that keeps the text a model finds easy, or the text of one language, shows here.
Two passes over the text (scores, then one JSONL file per decile): memory holds the scores, not the text.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import tempfile
from pathlib import Path

import numpy as np

from train.ablate.spec import Spec, seeds_of

DECILES = 10


def _docs(curated: Path):
    import pyarrow.parquet as pq

    from curate.io.corpus import resolve_inputs

    for f in resolve_inputs(str(curated)):
        for batch in pq.ParquetFile(f).iter_batches(columns=["text", "lang"], batch_size=1024):
            yield from zip(batch.column("text").to_pylist(), batch.column("lang").to_pylist(), strict=True)


def deciles(spec: Spec, text: str, classifier: str, models: list[str]) -> dict:
    from curate.models.checkpoint import load_checkpoint
    from curate.quality.model import QualityModel
    from train.evaluate.heldout import HeldoutSet, bits_per_byte

    variants = {v["name"]: v for v in spec.variants}
    unknown = [n for n in [text, classifier, *models] if n not in variants]
    if unknown:
        raise ValueError(f"--deciles: no variant {unknown} in the spec")
    model_path = variants[classifier].get("env", {}).get("PENEIRA_QUALITY_MODEL")
    if not model_path:
        raise ValueError(f"--deciles: variant {classifier!r} names no PENEIRA_QUALITY_MODEL")
    qm = QualityModel(model_path)
    curated = spec.out / "variants" / text / "curated"
    scores = np.concatenate([qm.score([t]) for t, _ in _docs(curated)])
    edges = np.quantile(scores, np.linspace(0, 1, DECILES + 1))
    which = np.clip(np.searchsorted(edges[1:-1], scores, side="right"), 0, DECILES - 1)
    rows = [{"decile": d + 1, "docs": 0, "bytes": 0, "lang": {}, "score_min": None, "score_max": None}
            for d in range(DECILES)]
    with tempfile.TemporaryDirectory() as tmp:
        _split(curated, scores, which, rows, Path(tmp))
        for m in models:
            for seed in seeds_of(spec, variants[m]):
                run = load_checkpoint(spec.out / "variants" / m / f"seed{seed}", "cpu")
                for d, r in enumerate(rows):
                    if r["docs"]:
                        bpb = bits_per_byte(run, HeldoutSet(f"d{d}", str(Path(tmp) / f"d{d}.jsonl")))["bits_per_byte"]
                        r.setdefault("bpb", {}).setdefault(m, []).append(bpb)
    return {"text": text, "classifier": classifier, "model": model_path, "models": models, "deciles": rows}


def _split(curated: Path, scores: np.ndarray, which: np.ndarray, rows: list[dict], tmp: Path) -> None:
    """Each document to its decile's JSONL file, counted (documents, bytes, languages, score range) in `rows`."""
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(open(tmp / f"d{d}.jsonl", "w")) for d in range(DECILES)]
        for (t, lang), d, s in zip(_docs(curated), which, scores, strict=True):
            files[d].write(json.dumps({"text": t}) + "\n")
            r = rows[d]
            r["docs"] += 1
            r["bytes"] += len(t.encode())
            r["lang"][lang or "?"] = r["lang"].get(lang or "?", 0) + 1
            r["score_min"] = float(s) if r["score_min"] is None else min(r["score_min"], float(s))
            r["score_max"] = float(s) if r["score_max"] is None else max(r["score_max"], float(s))


def markdown(result: dict) -> str:
    models = result["models"]
    head = ["decile", "score range", "docs", "bytes", "languages"] + [f"bpb under {m}" for m in models]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in result["deciles"]:
        if not r["docs"]:
            continue
        cells = [str(r["decile"]), f"{r['score_min']:.3f}-{r['score_max']:.3f}", str(r["docs"]), f"{r['bytes']:,}",
                 ", ".join(f"{k} {v}" for k, v in sorted(r["lang"].items(), key=lambda kv: -kv[1]))]
        for m in models:
            xs = r.get("bpb", {}).get(m, [])
            cells.append(f"{statistics.mean(xs):.3f} ± {statistics.stdev(xs):.3f}" if len(xs) > 1
                         else f"{xs[0]:.3f}" if xs else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
