"""Ablation variant `dedup_lines`: the `dedup` variant (extraction, heuristics, exact and MinHash deduplication)
plus C4's cross-page span deduplication, the step under test (issue 25).

The unit is C4's (Raffel et al. 2020, section 2.2): of every three-sentence span that occurs more than once in the
corpus, all copies but one are removed, and a page left with under three sentences is dropped (`min_units=3`, C4's
own minimum, which `filters.C4` already applies before). Spans rather than lines because what `filters.C4` leaves is
already lines of whole sentences (it drops lines under 5 words or without terminal punctuation, where most one-line
boilerplate lives), so repeated text that survives it is sentence-level (notices, author boxes, legal paragraphs),
and because the three-sentence span is the unit `pipelines/c4.py` and the fidelity check against datatrove's
`SentenceDedup(n_sentences=3)` use: the measured step is the one the recipe runs.
"""

from curate import Pipeline, dedup, extract, filters, readers, writers

pipeline = Pipeline(
    name="dedup_lines",
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
        dedup.Lines(unit="sentence", span=3, min_units=3),
    ],
    writer=writers.Parquet(),
)
