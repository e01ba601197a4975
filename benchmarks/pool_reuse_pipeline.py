"""The pipeline of docs/benchmarks.md's "One process pool per run" (issue 35.7): the demo crawl, extracted, then both
dedup steps, whose phases are many short maps. Timed with `--workers 1` and `--workers 2`:

    make demo
    for w in 1 2; do rm -rf /tmp/pool$w; /usr/bin/time -f "workers=$w wall=%e" .venv/bin/curate run \
        benchmarks/pool_reuse_pipeline.py --input 'demo/warc/*.warc.gz' --output /tmp/pool$w --workers $w --no-progress; done
"""

from curate import Pipeline, dedup, extract, readers

pipeline = Pipeline(name="mh", reader=readers.Warc(),
                    steps=[extract.Main(), dedup.Exact(), dedup.MinHash(bands=14, rows=8)])
