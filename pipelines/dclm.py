"""DCLM-Baseline (Li et al. 2024, "DataComp-LM"): RefinedWeb heuristics, deduplication, fastText top 10%.

    curate models fetch lid
    curate quality train --positive 'good/*' --negative 'raw/*' --out models/quality.bin
    PENEIRA_QUALITY_MODEL=models/quality.bin \
        curate run pipelines/dclm.py --input 'crawl/*.warc.gz' --output out/dclm --rejected

Source: the DCLM repository's `baselines/baselines_configs/dclm_baseline_refinedweb.yaml` (the
heuristics), the paper's section 4 and appendix (extraction, dedup, classifier). Order and parameters:

| # | DCLM-Baseline                                             | here                                       |
|---|-----------------------------------------------------------|--------------------------------------------|
| 1 | resiliparse text extraction (main content)                | `extract.Resiliparse(main_content=True)`   |
| 2 | `url_substring_filter` x 4: RefinedWeb's curated domain   | `filters.Url()`: banned URL words (LDNOOBW)|
|   | list, strict/hard banned URL words, >= 2 soft words       | and `min_soft_banned_words=2`; the lists   |
|   |                                                           | are RefinedWeb's only if passed in         |
| 3 | fastText lid.176 on the whole page: English, >= 0.65      | `filters.Language(["en"], threshold=0.65)` |
| 4 | page length 50-100,000 words (punctuation not counted),   | `filters.GopherQuality(min_stop_words=2,   |
|   | mean word length 3-10, # and ellipsis <= 0.1 per word,    | stop_words_counted="occurrences")`: the    |
|   | bullet starts <= 0.9, ellipsis ends <= 0.3, non-alphabetic| same thresholds; DCLM counts stop-word     |
|   | words <= 0.2, >= 2 stop words counted with repeats        | occurrences (`count_unique: False`)        |
| 5 | `massive_web_repetition_filters` (Gopher repetition)      | `filters.GopherRepetition()`               |
| 6 | line modifiers: uppercase share > 0.5, numeric lines,     | `filters.RefinedWebLines()`: the same line |
|   | counter lines ("12 likes"), lines < 2 words, "items in    | rules, and the page dropped when they      |
|   | cart" / "Read more..." / "Sign-in" snippets; page dropped | remove > 5% of its words                   |
|   | when they remove > 5% of its words                        |                                            |
| 7 | BFF Bloom-filter dedup (`--remove-type old-both`):        | `dedup.Lines(method="bloom", ngram=13,     |
|   | 13-grams, paragraphs (newline-separated) and documents,   | threshold=0.8, fp_rate=0.01)`: the same    |
|   | threshold 0.8, false-positive rate 0.01                   | rule, one pass, filter sized up front      |
| 8 | fastText OH-2.5 + ELI5 classifier (bigrams, dim 100,      | `quality.TopFraction(model, fraction=0.1)` |
|   | lr 0.1, 5 epochs), keep the top 10% by score              | with the model at $PENEIRA_QUALITY_MODEL   |

Where it cannot be the same: DCLM's classifier was trained on 200k OpenHermes-2.5 and ELI5 examples
against RefinedWeb pages, which are not available offline; `curate quality train` uses the same recipe
on examples you give it (docs/quality.md). BFF's words are Unicode word segments with
punctuation, case-sensitive; `dedup.Lines` counts the words of the match form (docs/dedup.md), so case,
punctuation and digits do not hide a repeat. The filter's size comes from an estimate of the n-grams
(text bytes / 5) unless `expected_ngrams=` is given, and is printed before the run. The top 10% is of this run's corpus, as DCLM's
0.018112 threshold was the 90th percentile of its pool.
"""

import os

from curate import Pipeline, dedup, extract, filters, quality, readers, writers

MODEL = os.environ.get("PENEIRA_QUALITY_MODEL", os.path.join("models", "quality.bin"))

pipeline = Pipeline(
    name="dclm",
    reader=readers.Warc(source="web"),
    steps=[
        extract.Resiliparse(main_content=True),
        filters.Url(min_soft_banned_words=2),
        filters.Language(["en"], threshold=0.65),
        filters.GopherQuality(min_stop_words=2, stop_words_counted="occurrences"),
        filters.GopherRepetition(),
        filters.RefinedWebLines(max_removed_word_ratio=0.05),
        dedup.Lines(method="bloom", unit="line", ngram=13, threshold=0.8, fp_rate=0.01),
        quality.TopFraction(MODEL, fraction=0.1),
    ],
    writer=writers.Parquet(),
)
