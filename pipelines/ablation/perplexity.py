"""Selection variant: extraction + heuristics + dedup (pipelines/ablation/dedup.py), then CCNet's perplexity buckets:
each document's bits per byte under a reference model trained by this project's trainer on clean English text
(books and speeches, none of them a held-out set: scripts/selection_models.py), head and middle thirds kept per
language (`quality.PerplexityBuckets`, percentiles 33 and 66 of the run's scores). The reference model is the one at
$PENEIRA_REFERENCE (docs/ablation/selection-spec.toml sets it)."""

import os

from curate import Pipeline, dedup, extract, filters, quality, readers, writers

REFERENCE = os.environ.get("PENEIRA_REFERENCE", os.path.join("runs", "ablation-selection", "models", "reference"))

pipeline = Pipeline(
    name="perplexity",
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
        quality.PerplexityBuckets(REFERENCE, percentiles=(33, 66), keep=("head", "middle"), device="cpu", threads=1),
    ],
    writer=writers.Parquet(),
)
