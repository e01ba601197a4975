"""CCNet-style selection (Wenzek et al. 2020; RedPajama-V1/V2's `ccnet_bucket`): extraction, language ID, exact
dedup, then every document's perplexity under a reference language model, bucketed per language into head /
middle / tail by percentiles of the whole run; head and middle kept.

    # the reference model: this project's trainer on clean text (docs/models.md has the commands)
    python -m train --data ref/tokens --config tiny --steps 200 --out ref/run
    curate models fetch lid
    PENEIRA_REFERENCE=ref/run curate run pipelines/ccnet.py --input 'crawl/*.warc.gz' --output out/ccnet --rejected

| # | CCNet                                                   | here                                                  |
|---|---------------------------------------------------------|-------------------------------------------------------|
| 1 | WET text (Common Crawl's extraction)                    | `extract.Trafilatura()` from the WARC                 |
| 2 | paragraph-level dedup by SHA-1 across shards            | `dedup.Exact()` (documents; `dedup.Lines` for lines)  |
| 3 | fastText lid.176, threshold 0.5                         | `filters.Language(threshold=0.5)`, every language     |
| 4 | 5-gram KenLM on each language's Wikipedia, perplexity   | bits per byte under `$PENEIRA_REFERENCE` (a checkpoint |
|   | per document                                            | of `python -m train`, or a Hugging Face causal LM)    |
| 5 | head / middle / tail: the 33rd and 66th percentiles per | `quality.PerplexityBuckets(percentiles=(33, 66))`,    |
|   | language of the shard's scores                          | per language over the whole run; tail dropped          |

Where it differs: one reference model for every language (CCNet has one per language: train one per language and
run this recipe per language, or give a multilingual Hugging Face model); the percentiles are the run's, not a
sample's. Device: `PENEIRA_DEVICE` (default auto: a GPU where the workers see one, placed by the executor).
"""

import os

from curate import Pipeline, dedup, extract, filters, quality, readers, writers

REFERENCE = os.environ.get("PENEIRA_REFERENCE", os.path.join("ref", "run"))
DEVICE = os.environ.get("PENEIRA_DEVICE", "auto")

pipeline = Pipeline(
    name="ccnet",
    reader=readers.Warc(source="web"),
    steps=[
        extract.Trafilatura(),
        filters.Language(languages=None, threshold=0.5),
        dedup.Exact(),
        quality.PerplexityBuckets(REFERENCE, percentiles=(33, 66), keep=("head", "middle"), device=DEVICE),
    ],
    writer=writers.Parquet(),
)
