"""Ablation variant 4b, extraction + heuristics + dedup + a milder use of the same quality classifier: keep the
top 90% of the documents by score (`quality.TopFraction`) instead of cutting at 0.5. The model is the one at
$PENEIRA_QUALITY_MODEL (default models/quality.bin); docs/ablation.md has the command that trains it."""

import os

from curate import Pipeline, dedup, extract, filters, quality, readers, writers

MODEL = os.environ.get("PENEIRA_QUALITY_MODEL", os.path.join("models", "quality.bin"))

pipeline = Pipeline(
    name="quality_top",
    reader=readers.Warc(source="web"),
    steps=[
        extract.Trafilatura(),
        filters.Language(["en", "pt"], threshold=0.65),
        filters.GopherRepetition(),
        filters.C4(),
        filters.GopherQuality(),
        filters.FineWeb(),
        dedup.Exact(),
        dedup.MinHash(bands=14, rows=8),
        quality.TopFraction(MODEL, fraction=0.9),
    ],
    writer=writers.Parquet(),
)
