"""C4 (Raffel et al. 2020, "Exploring the Limits of Transfer Learning", section 2.2), the `c4/en` config.

    curate models fetch lid
    curate run pipelines/c4.py --input 'crawl/*.warc.wet.gz' --output out/c4 --rejected

Source: the paper and its reference implementation, TensorFlow Datasets' `text/c4.py` and `c4_utils.py`,
whose `_get_page_content` runs, in order: split the WET files, dedupe by normalised URL, clean pages,
remove duplicate text, detect English, bad words. Here:

| # | C4 (TFDS)                                               | here                                          |
|---|---------------------------------------------------------|-----------------------------------------------|
| 1 | WET text (Common Crawl's own extraction)                | `readers.Warc` reads WET `conversion` records;|
|   |                                                         | `extract.Trafilatura()` passes them unchanged |
|   |                                                         | and extracts WARC pages when given those      |
| 2 | `dedupe_urls`: one page per normalised URL              | `dedup.Exact(key="url")`                      |
| 3 | `clean_page`: lines ending in . ? ! " (not "..."),      | `filters.C4(bad_words_languages=())`: its     |
|   | >= 5 words a line, no word > 1000 chars, citations      | defaults are TFDS's (5 words, 3 sentences,    |
|   | stripped, javascript and policy lines removed; a page   | 1000 chars, . ? ! ")                          |
|   | with "lorem ipsum" or "{" dropped; >= 3 sentences       |                                               |
| 4 | `remove_duplicate_text`: each line kept only in the     | `dedup.Exact()`: whole documents only (see    |
|   | first page it occurs in; pages then < 3 sentences go    | below)                                        |
| 5 | `detect_english`: langdetect, English with p >= 0.99    | `filters.Language(["en"], threshold=0.99)`    |
| 6 | bad words: the LDNOOBW English list, whole words        | `filters.BadWords(["en"])`                    |

Where it cannot be the same: C4's cross-document line deduplication (4) has no counterpart in
`curate.dedup` yet, so only exact repeats of whole cleaned pages are removed, and boilerplate lines that
recur across a site survive. Language ID is fastText lid.176 instead of langdetect, with the paper's
0.99 kept: on lid.176 that is stricter than on langdetect for short pages. C4's page-length cap on WET
records is not applied (the reader's `max_html_bytes` bounds WARC pages). C4's sentence count uses
NLTK punkt; `filters.C4` counts sentence breaks with a regex (docs/filters.md).
"""

from curate import Pipeline, dedup, extract, filters, readers, writers

pipeline = Pipeline(
    name="c4",
    reader=readers.Warc(source="web"),
    steps=[
        extract.Trafilatura(),
        dedup.Exact(key="url"),
        filters.C4(min_words_per_line=5, min_sentences=3, max_word_length=1000, bad_words_languages=()),
        dedup.Exact(key="text"),
        filters.Language(["en"], threshold=0.99),
        filters.BadWords(["en"]),
    ],
    writer=writers.Parquet(),
)
