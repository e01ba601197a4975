"""The demo pipeline: the generated demo crawl through every curation step.

`make demo` prepares what it needs (see the Makefile): the crawl (`curate demo generate`), the
language-ID model (`curate models fetch lid`), the decontamination index over the demo's benchmark
(`curate decontam index`) and the quality classifier (`curate quality train`). Paths default to the
`demo/` folder and follow $PENEIRA_DEMO when set. The filter order is the one of pipelines/web.py;
decontamination and deduplication come last, so they only spend time on documents worth keeping.

Every step removes something from the demo crawl, and the report says why: the generator plants pages for
each (`curate.demo.crawl.FLAWS`: a leftover "lorem ipsum" paragraph for C4, hashtags for Gopher quality, a
repeated call to action for FineWeb, a blocklisted host name for Url, a listed word for BadWords, a contact
e-mail for Pii, which redacts it and keeps the page; error pages carry their HTTP status).
"""

import os

from curate import Pipeline, decontam, dedup, extract, filters, quality, readers, writers

DEMO = os.environ.get("PENEIRA_DEMO", "demo")

pipeline = Pipeline(
    name="demo",
    reader=readers.Warc(source="web"),
    steps=[
        filters.HttpStatus(),
        extract.Main(),
        filters.Language(["en", "pt"], threshold=0.65),
        filters.Url(),
        filters.GopherRepetition(),
        filters.C4(bad_words_languages=()),  # BadWords below checks listed words, per language, with a tally
        filters.GopherQuality(),
        filters.FineWeb(),
        filters.BadWords(),
        filters.Pii(),
        quality.Classifier(os.path.join(DEMO, "quality.bin"), threshold=0.5),
        decontam.Decontaminate(os.path.join(DEMO, "decontam"), mode="drop"),
        dedup.Exact(),
        dedup.MinHash(bands=14, rows=8),
    ],
    writer=writers.Parquet(),
)
