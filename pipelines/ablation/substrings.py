"""Ablation variant `substrings` (issue 43): the `dedup` variant (extraction, heuristics, exact and MinHash
deduplication: pipelines/ablation/dedup.py) plus exact-substring deduplication, the step under test.

The paper's setting (Lee et al. 2022, "Deduplicating Training Data Makes Language Models Better": ExactSubstr, as
RefinedWeb ran it): every span of at least 50 GPT-2 tokens that occurs more than once anywhere in the corpus is struck,
every copy of it (`keep="none"`). `dedup.Substrings` counts bytes of UTF-8, not tokens (docs/dedup.md says why), and
100 bytes is the reference implementation's reading of 50 tokens, so `min_length=100`. A document left blank by the
strikes is dropped (`substrings:emptied`); one that lost nothing is never judged by length.
"""

from curate import Pipeline, dedup, extract, filters, readers, writers

pipeline = Pipeline(
    name="substrings",
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
        dedup.Substrings(min_length=100, keep="none"),
    ],
    writer=writers.Parquet(),
)
