"""Ablation variant 2, extraction + heuristic filters: the language and rule-based filters of pipelines/web.py in its
order (language ID; Gopher repetition on the page as crawled; C4 line cleaning; Gopher quality and FineWeb on the
cleaned text). PII redaction is left out: it rewrites text instead of choosing it, which this ablation does not
measure. Needs the language-ID model (`curate models fetch lid`, or $PENEIRA_LID_MODEL)."""

from curate import Pipeline, extract, filters, readers, writers

pipeline = Pipeline(
    name="heuristics",
    reader=readers.Warc(source="web"),
    steps=[
        extract.Trafilatura(),
        filters.Language(["en", "pt"], threshold=0.65),
        filters.GopherRepetition(),
        filters.C4(),
        filters.GopherQuality(),
        filters.FineWeb(),
    ],
    writer=writers.Parquet(),
)
