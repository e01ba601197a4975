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
| 4 | the paper: all but one copy of every three-sentence     | `dedup.Lines(unit="sentence", span=3,         |
|   | span removed (TFDS `remove_duplicate_text`: of lines);  | min_units=3)`                                 |
|   | pages then < 3 sentences go                             |                                               |
| 5 | `detect_english`: langdetect, English with p >= 0.99    | `filters.Language(["en"], threshold=0.99)`    |
| 6 | bad words: the LDNOOBW English list, whole words        | `filters.BadWords(["en"])`                    |

Where it cannot be the same: (4) follows the paper's three-sentence spans; TFDS's code removes repeated
*lines* (after cleaning, each line is one or more sentences) and keeps the copy of the URL with the
smallest hash, where `dedup.Lines` keeps the copy in the smallest document id; `unit="line"` gives
TFDS's unit. Sentences are split by spaCy's sentencizer rules (docs/dedup.md), not NLTK punkt. Language ID is fastText lid.176 instead of langdetect, with the paper's
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
        dedup.Lines(unit="sentence", span=3, min_units=3),
        filters.Language(["en"], threshold=0.99),
        filters.BadWords(["en"]),
    ],
    writer=writers.Parquet(),
)
