"""The recommended web pipeline for English and Portuguese: extract, identify the language, apply the
Gopher, C4 and FineWeb rules, and redact e-mail and IP addresses.

    curate models fetch lid            # once: the language-ID model into the user cache
    curate run pipelines/web.py --input 'crawl/*.warc.gz' --output out/web --rejected
    curate report out/web

Order matters for cost: language ID is cheap per document and removes most of a multilingual crawl
before the word-level rules run; C4 rewrites pages to their prose lines, so FineWeb's line rules judge
the cleaned text; PII runs last, on the text that is kept.
"""

from curate import Pipeline, extract, filters, readers, writers

pipeline = Pipeline(
    name="web",
    reader=readers.Warc(source="web"),
    steps=[
        extract.Trafilatura(),
        filters.Language(["en", "pt"], threshold=0.65),
        filters.GopherQuality(),
        filters.GopherRepetition(),
        filters.C4(),
        filters.FineWeb(),
        filters.Pii(),
    ],
    writer=writers.Parquet(),
)
