"""Ablation variant 1, extraction only: the raw text every other variant starts from (and the text the shared
tokenizer is trained on). Pages read from WARC files are extracted with trafilatura; text inputs (JSONL) pass through
unchanged. `python -m train ablate` gives each input kind its own reader; the reader here serves `curate run`.
Each variant file lists all its steps, so it reads on its own: the next variant adds to this list."""

from curate import Pipeline, extract, readers, writers

pipeline = Pipeline(
    name="extract",
    reader=readers.Warc(source="web"),
    steps=[extract.Trafilatura()],
    writer=writers.Parquet(),
)
