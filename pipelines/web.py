"""The recommended web pipeline for English and Portuguese: extract, identify the language, apply the
Gopher, C4 and FineWeb rules, and redact e-mail and IP addresses.

    curate models fetch lid            # once: the language-ID model into the user cache
    curate run pipelines/web.py --input 'crawl/*.warc.gz' --output out/web --rejected
    curate report out/web

Extraction is `extract.Main` (docs/extract.md): on the four gold sets of ../shared/data/extraction it
recovers more of the main text than trafilatura and Resiliparse, many times faster than trafilatura (the
figures, per gold set, are the extraction table of docs/benchmarks.md); `extract.Trafilatura()` is the choice where its output must be matched.

Order matters. Error pages go first, by the status the server sent (a 404 page is fluent prose that every
text rule keeps: 2 of the 35 pages this pipeline kept from the shared Internet Archive WARC). Language ID is cheap and removes most of a multilingual crawl before the word-level
rules run. Gopher repetition looks at the page as crawled (repeated navigation lines are evidence of a
template page, and C4 would remove them). C4 then rewrites pages to their prose lines, and Gopher
quality and FineWeb judge that cleaned text, so a page that is navigation plus two sentences is dropped
for having too few words rather than kept as two sentences. PII runs last, on the text that is kept.

Where it departs from the published recipes (pipelines/fineweb.py, c4.py, dclm.py), and why:

* Portuguese as well as English, at FineWeb's 0.65: the project serves both. Gopher's stop words and
  bad-word lists follow `doc.lang` (NLTK's Portuguese list), where the recipes are English-only.
* C4 runs with its own (TFDS) settings, 5 words a line, 3 sentences and the terminal-punctuation rule
  on, and *before* Gopher quality and FineWeb. FineWeb runs C4 after Gopher quality with the line rule
  off (datatrove's 3 words, 5 sentences) because its ablations found the rule removed too much; here
  the rewrite is the point: menus and captions go before the word-level rules judge the page. On the
  697 web_cc pages C4 with the line rule keeps 380 of them (54%).
* No URL blocklist (none ships; pass `filters.Url(blocked_domains=...)`), no deduplication and no
  quality classifier: add `dedup.MinHash()` and `quality.Classifier(...)` as pipelines/demo.py does
  (they are global or need a trained model, so they are opt-in).
* No RefinedWeb line corrections (DCLM's `filters.RefinedWebLines`): C4's line rules, which run here
  first, already remove short, unpunctuated and counter lines, the lines those corrections target.
"""

from curate import Pipeline, extract, filters, readers, writers

pipeline = Pipeline(
    name="web",
    reader=readers.fastest_warc(source="web"),  # FastWarc where FastWARC is installed (extra `fast`), else Warc
    steps=[
        filters.HttpStatus(),
        extract.Main(),
        filters.Language(["en", "pt"], threshold=0.65),
        filters.GopherRepetition(),
        filters.C4(),
        filters.GopherQuality(),
        filters.FineWeb(),
        filters.Pii(),
    ],
    writer=writers.Parquet(),
)
