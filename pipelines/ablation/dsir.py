"""Selection variant: extraction + heuristics + dedup (pipelines/ablation/dedup.py), then importance resampling
(DSIR, `quality.Importance`) toward the same clean English text the perplexity reference and the fastText positives
come from ($PENEIRA_DSIR_TARGET, written by scripts/selection_models.py), resampled to 55,000 words and punctuation
(`tokens=`: about the text the perplexity variant's head and middle buckets keep, 45,000 whitespace words). Not a
share of the documents: DSIR's log weights are sums over a document's n-grams, not normalised by length (as in the
paper), so two thirds of the documents by weight kept the shortest ones, 19,000 words, and would have set every
variant's budget at a third of the others' text."""

import os

from curate import Pipeline, dedup, extract, filters, quality, readers, writers

TARGET = os.environ.get("PENEIRA_DSIR_TARGET", os.path.join("runs", "ablation-selection", "models", "clean.jsonl"))

pipeline = Pipeline(
    name="dsir",
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
        quality.Importance(TARGET, tokens=55_000, seed=0),
    ],
    writer=writers.Parquet(),
)
