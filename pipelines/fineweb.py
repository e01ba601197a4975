"""FineWeb (Penedo et al. 2024, "The FineWeb Datasets"), step for step and threshold for threshold.

    curate models fetch lid
    curate run pipelines/fineweb.py --input 'crawl/*.warc.gz' --output out/fineweb --rejected

Source: datatrove's `examples/fineweb.py` (the code that built the dataset) and the filters' defaults
in datatrove 0.10.1, plus the dataset card's last stage (PII). Order and parameters:

| # | FineWeb (datatrove)                                   | here                                          |
|---|-------------------------------------------------------|-----------------------------------------------|
| 1 | `URLFilter()`: UT1 adult blocklist (domains, URLs),   | `filters.Url(...)`: the same rules; the lists |
|   | banned URL words, >= 2 soft-banned words, banned      | are datatrove's when $PENEIRA_URL_LISTS names |
|   | subwords (substrings of the letters-and-digits URL)   | a folder holding them (below), else LDNOOBW   |
| 2 | `Trafilatura(favour_precision=True)`: deduplicate=True| `extract.Trafilatura(favor_precision=True,    |
|   | timeout 1 s, no comments, no images                   | deduplicate=True, max_tags=50_000)`: a budget |
|   |                                                       | of tags for the 1 s (below)                   |
| 3 | `LanguageFilter()`: fastText lid.176, English, >= 0.65| `filters.Language(["en"], threshold=0.65)`    |
|   |                                                       | (lid.176.ftz, the quantised copy)             |
| 4 | `GopherRepetitionFilter()`: dup line/para 0.3 (share) | `filters.GopherRepetition()`: the same        |
|   | and 0.2 (chars), top 2/3/4-gram 0.20/0.18/0.16, dup   | defaults                                      |
|   | 5..10-gram 0.15..0.10                                 |                                               |
| 5 | `GopherQualityFilter()`: 50-100,000 words, mean word  | `filters.GopherQuality()`: the same defaults  |
|   | length 3-10, # and ellipsis <= 0.1 per word, bullet   |                                               |
|   | lines <= 0.9, ellipsis lines <= 0.3, >= 80% words with|                                               |
|   | a letter, >= 2 of the 8 stop words                    |                                               |
| 6 | `C4QualityFilter(filter_no_terminal_punct=False)`:    | `filters.C4(min_words_per_line=3,             |
|   | 3 words a line, 5 sentences, words <= 1000 chars,     | min_sentences=5, require_terminal_punct=False,|
|   | citations, javascript, policy lines, lorem ipsum, {   | bad_words_languages=())`                      |
|   | (no bad-word rule)                                    |                                               |
| 7 | `FineWebQualityFilter()`: >= 12% lines end in punct., | `filters.FineWeb()`: the same defaults        |
|   | <= 67% lines <= 30 chars, dup line chars <= 1%,       |                                               |
|   | newlines per word <= 0.3                              |                                               |
| 8 | MinHash: 5-grams, 14 buckets x 8 hashes, 64-bit, per  | `dedup.MinHash(bands=14, rows=8, ngram=5)`    |
|   | dump; one document kept per cluster                   |                                               |
| 9 | `PIIFormatter()`: e-mails and public IPv4 replaced    | `filters.Pii(email_placeholder=, ip_...=)`    |
|   | with example.com addresses and unused IPs             | with the first of datatrove's replacements    |

Where it cannot be the same: the URL blocklist (4.6M domains, CC BY-SA) is not shipped; unpack it from
datatrove's package (`datatrove/assets/url_filterblacklistsv0_3_0.tar.gz`: `domains`, `urls`; and
`banned_words.txt`, `banned_subwords.txt`, `soft_banned_words.txt` beside it) into one folder and set
$PENEIRA_URL_LISTS. MinHash here also checks each candidate pair's estimated Jaccard against 0.72 (the
14 x 8 curve's midpoint) before clustering; datatrove clusters every bucket collision. PII also
replaces public IPv6 addresses (datatrove: IPv4 only). Extraction's 1-second limit is wall-clock time in
datatrove, so which pages it drops depends on the machine and its load (runs of this recipe here dropped
1 to 3 pages for it); here it is a budget of 50,000 tags a page (`max_tags`, counted as '<';
over it: `extract:too_large`), about a second of trafilatura on one core (20-30 us a tag), the same on
any machine. How closely each filter decides like datatrove's is measured by benchmarks/filters.py
(docs/filters.md, "Fidelity").
"""

import os

from curate import Pipeline, dedup, extract, filters, readers, writers

LISTS = os.environ.get("PENEIRA_URL_LISTS")


def url_filter() -> filters.Url:
    """datatrove's lists when $PENEIRA_URL_LISTS is set, else the shipped LDNOOBW words (no blocklist)."""
    if not LISTS:
        return filters.Url()
    return filters.Url(
        blocked_domains=os.path.join(LISTS, "domains"),
        blocked_urls=os.path.join(LISTS, "urls"),
        banned_words=os.path.join(LISTS, "banned_words.txt"),
        banned_subwords=os.path.join(LISTS, "banned_subwords.txt"),
        soft_banned_words=os.path.join(LISTS, "soft_banned_words.txt"),
        min_soft_banned_words=2,
    )


pipeline = Pipeline(
    name="fineweb",
    reader=readers.Warc(source="web"),
    steps=[
        url_filter(),
        extract.Trafilatura(favor_precision=True, deduplicate=True, max_tags=50_000),
        filters.Language(["en"], threshold=0.65),
        filters.GopherRepetition(),
        filters.GopherQuality(),
        filters.C4(min_words_per_line=3, min_sentences=5, require_terminal_punct=False, bad_words_languages=()),
        filters.FineWeb(),
        dedup.MinHash(bands=14, rows=8, ngram=5),
        filters.Pii(email_placeholder="email@example.com", ip_placeholder="22.214.171.124"),
    ],
    writer=writers.Parquet(),
)
