"""The recommended web pipeline for English and Portuguese: extract, identify the language, apply the
Gopher, C4 and FineWeb rules, and redact e-mail and IP addresses.

    curate models fetch lid            # once: the language-ID model into the user cache
    curate run pipelines/web.py --input 'crawl/*.warc.gz' --output out/web --rejected
    curate report out/web

Order matters. Language ID is cheap and removes most of a multilingual crawl before the word-level
rules run. Gopher repetition looks at the page as crawled (repeated navigation lines are evidence of a
template page, and C4 would remove them). C4 then rewrites pages to their prose lines, and Gopher
quality and FineWeb judge that cleaned text, so a page that is navigation plus two sentences is dropped
for having too few words rather than kept as two sentences. PII runs last, on the text that is kept.
"""

from curate import Pipeline, extract, filters, readers, writers

pipeline = Pipeline(
    name="web",
    reader=readers.Warc(source="web"),
    steps=[
        extract.Trafilatura(),
        filters.Language(["en", "pt"], threshold=0.65),
        filters.GopherRepetition(),
        filters.C4(),
        filters.GopherQuality(),
        filters.FineWeb(),
        filters.Pii(),
    ],
    writer=writers.Parquet(),
)
