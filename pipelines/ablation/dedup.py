"""Ablation variant 3, extraction + heuristics + deduplication: exact duplicates, then MinHash near-duplicates
(5-grams, 14 bands x 8 rows, FineWeb's setting: pairs above about 0.75 Jaccard similarity are caught)."""

from curate import Pipeline, dedup, extract, filters, readers, writers

pipeline = Pipeline(
    name="dedup",
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
    ],
    writer=writers.Parquet(),
)
