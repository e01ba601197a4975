"""Read WARC files and extract text: the smallest useful pipeline."""

from curate import Pipeline, extract, readers, writers

pipeline = Pipeline(
    name="extract_only",
    reader=readers.Warc(source="web"),
    steps=[extract.Trafilatura()],
    writer=writers.Parquet(),
)
