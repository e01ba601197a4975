"""Ablation variant `semantic` (issue 43): the `dedup` variant (extraction, heuristics, exact and MinHash
deduplication: pipelines/ablation/dedup.py) plus semantic deduplication (SemDeDup), the step under test.

Embeddings: the mean-pooled last hidden states (128 wide, the first 256 tokens of a document: its context) of the
reference model that scripts/selection_models.py trains with this project's trainer on the shared clean English text
(books and speeches, none of them a held-out set), at $PENEIRA_REFERENCE (docs/ablation/dedup-family-spec.toml sets
it), on CPU with one thread. k-means as the step sets it (one cluster per 10,000 documents: one cluster for this
input, so every pair is compared). Of each group of documents with cosine >= 1 - eps, the one farthest from its
centroid is kept (SemDeDup's choice).

`eps = 0.01` (the step's default, NeMo Curator's example) was checked on this input before the run, and is stated as
such (docs/dedup-family.md): on the `dedup` variant's 151 documents this model's pooled states are anisotropic
(every document's nearest neighbour is at cosine 0.895 to 1, unrelated pages of one language at 0.97-0.98), and the
only pair above 0.982 is a real duplicate (two category pages of one blog opening with the same 4,000-character post,
cosine 1.0), so any eps up to 0.018 drops that one page and nothing else; 0.02 adds an unrelated Portuguese page,
0.03 sixteen pages, 0.05 a hundred and twenty.
"""

import os

from curate import Pipeline, dedup, extract, filters, readers, writers

REFERENCE = os.environ.get("PENEIRA_REFERENCE", os.path.join("runs", "ablation-dedup-family", "models", "reference"))

pipeline = Pipeline(
    name="semantic",
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
        dedup.Semantic(REFERENCE, eps=0.01, kind="gpt", device="cpu", threads=1),
    ],
    writer=writers.Parquet(),
)
