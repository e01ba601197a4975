"""The demo pipeline: the generated demo crawl through every curation step.

Run by `make demo` after `curate demo generate` and `curate decontam index` (see the Makefile);
paths default to the `demo/` folder and follow $PENEIRA_DEMO when set.
"""

import os

from curate import Pipeline, decontam, dedup, extract, filters, readers, writers

DEMO = os.environ.get("PENEIRA_DEMO", "demo")

pipeline = Pipeline(
    name="demo",
    reader=readers.Warc(source="web"),
    steps=[
        extract.Trafilatura(),
        filters.Language(["en", "pt"], threshold=0.65),
        filters.Url(),
        filters.GopherQuality(),
        filters.GopherRepetition(),
        filters.C4(),
        filters.FineWeb(),
        filters.BadWords(),
        filters.Pii(),
        decontam.Decontaminate(os.path.join(DEMO, "decontam"), mode="drop"),
        dedup.Exact(),
        dedup.MinHash(bands=14, rows=8),
    ],
    writer=writers.Parquet(),
)
