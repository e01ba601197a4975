"""FineWeb-2 (Penedo et al. 2025, "FineWeb2: One Pipeline to Scale Them All"), step for step, every language.

    curate models fetch lid                                  # or any fastText LID model, e.g. GlotLID:
    curate models fetch glotlid --from model.bin             #   then PENEIRA_FINEWEB2_LID=glotlid
    curate run pipelines/fineweb2.py --input 'crawl/*.warc.gz' --output out/fineweb2 --rejected
    curate report out/fineweb2                               # the funnel per language

Source: `fineweb-2-pipeline.py` in github.com/huggingface/fineweb-2 (the code that built the dataset) and
its per-language `configs/<lang>_<Script>.yml`, with datatrove's filters. Order and parameters:

| # | FineWeb-2 (datatrove)                                 | here                                          |
|---|-------------------------------------------------------|-----------------------------------------------|
| 1 | `URLFilter()` (FineWeb's lists)                       | `filters.Url(...)`, as pipelines/fineweb.py   |
| 2 | `Trafilatura(favour_precision=True)`                  | `extract.Trafilatura(favor_precision=True,    |
|   |                                                       | deduplicate=True, max_tags=50_000)`           |
| 3 | `LanguageFilter(backend="glotlid", label_only=True)`, | `filters.Language(LANGUAGES, model=LID,       |
|   | then per language `language_score >= config`          | threshold=THRESHOLD)`: lid.176 by default,    |
|   | (GlotLID's scores, one threshold per language)        | any fetched fastText model by name            |
| 4 | MinHash per language: 5-grams of the language's words,| `dedup.MinHash(bands=14, rows=8, ngram=5)`    |
|   | 14 buckets x 8 hashes, 64-bit                         | over all languages at once (below)            |
| 5 | `GopherRepetitionFilter(language=, dup_para_frac=0,   | `filters.ByLanguage(filters.GopherRepetition, |
|   | dup_line_char_frac=0, dup_para_char_frac=0)`: those   | max_dup_para_frac=1, max_dup_para_char_frac=1,|
|   | three off; dup_line_frac, top_n_grams, dup_n_grams    | max_dup_line_char_frac=1)`: 1 is "off" here;  |
|   | from the language's config                            | n-gram limits from curate.lang.config         |
| 6 | `FineWebQualityFilter(language=, short_line_thr=999,  | `filters.ByLanguage(filters.FineWeb,          |
|   | char_duplicates_ratio=0.1)`: line_punct_thr and       | max_short_line_ratio=1,                       |
|   | new_line_ratio from the language's config             | max_dup_line_char_ratio=0.1)`                 |
| 7 | `GopherQualityFilter(language=, min_stop_words=2)`:   | `filters.ByLanguage(filters.GopherQuality)`:  |
|   | mean word length bounds, non-alpha ratio, stop words  | the same four from curate.lang.config, plus   |
|   | from the language's config; 50-100,000 words         | min/max words scaled per language             |
| 8 | no C4 filters                                         | none                                          |
| 9 | `FTFYFormatter()`, `PIIFormatter()`,                  | `filters.Pii(...)` as pipelines/fineweb.py;   |
|   | `SymbolLinesFormatter(symbols_to_remove=["|"],        | `table_rule_lines` below; no ftfy (not a      |
|   | replace_char="\n")`                                   | dependency: `curate.io` decodes as it reads)  |

Where it cannot be the same, and why:

* Thresholds. FineWeb-2 derived each language's from the distribution of each statistic over large
  reference corpora (its configs, ODC-By/Apache); these are curate.lang.config's, derived offline by
  scripts/derive_languages.py from the UDHR (docs/languages.md, "Filter configurations"), for the 120
  lid.176 languages with a usable translation; every other language gets its script's fallback, counted
  in the stats as `lang_config:fallback:<lang>`. FineWeb-2 keeps 50-100,000 words in every language;
  here the bounds scale with how many words the language needs for the same text (zh 45, fi 40, th 68).
* Language ID. FineWeb-2 ran GlotLID (2,000+ labels) with per-language score thresholds fit to GlotLID's
  scores. lid.176 is the default here (its 176 labels; `THRESHOLD` for all, 0.5); with GlotLID fetched,
  set $PENEIRA_FINEWEB2_LID=glotlid and $PENEIRA_FINEWEB2_LANGS to its labels (`por_Latn,swh_Latn`),
  which curate.lang.config maps to the same configurations.
* Deduplication. FineWeb-2 deduplicates each language separately with its own word tokenizer. Here one
  MinHash runs over every language, shingling each page from its language's words (`lang` set by step 3:
  ICU's words through curate.lang for zh, ja, th, lo, km, my; tests/test_minhash_languages.py shows their
  near-duplicates found as in English); pages in two languages almost never share 5-gram shingles, so the
  clusters are the same up to the rare cross-language page pair.
* Order. FineWeb-2 deduplicates before filtering; so does this recipe. `Language` here drops what is
  below its threshold in the same pass as labelling (FineWeb-2 labels in one job and thresholds in the next).
"""

import os

from curate import Pipeline, dedup, extract, filters, readers, writers
from curate.filters.language import LID176_LANGUAGES

LISTS = os.environ.get("PENEIRA_URL_LISTS")
LID = os.environ.get("PENEIRA_FINEWEB2_LID", "lid")
LANGUAGES = sorted(os.environ["PENEIRA_FINEWEB2_LANGS"].split(",")) if os.environ.get(
    "PENEIRA_FINEWEB2_LANGS") else sorted(LID176_LANGUAGES)
THRESHOLD = 0.5


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


def table_rule_lines(doc):
    """datatrove's SymbolLinesFormatter(symbols_to_remove=["|"], replace_char="\\n"): each run of lines made
    only of "|" and spaces (trafilatura's table rules) becomes one blank line."""
    out, in_run = [], False
    for line in doc.text.splitlines():
        rule = line.strip() != "" and all(c in "| " for c in line)
        if rule and not in_run:
            out.append("\n")
        if not rule:
            out.append(line)
        in_run = rule
    doc.text = "\n".join(out)
    return doc


pipeline = Pipeline(
    name="fineweb2",
    reader=readers.Warc(source="web"),
    steps=[
        url_filter(),
        extract.Trafilatura(favor_precision=True, deduplicate=True, max_tags=50_000),
        filters.Language(LANGUAGES, threshold=THRESHOLD, model=LID),
        dedup.MinHash(bands=14, rows=8, ngram=5),
        filters.ByLanguage(filters.GopherRepetition, max_dup_para_frac=1.0, max_dup_para_char_frac=1.0,
                           max_dup_line_char_frac=1.0),
        filters.ByLanguage(filters.FineWeb, max_short_line_ratio=1.0, max_dup_line_char_ratio=0.1),
        filters.ByLanguage(filters.GopherQuality),
        filters.Pii(email_placeholder="email@example.com", ip_placeholder="22.214.171.124"),
        table_rule_lines,
    ],
    writer=writers.Parquet(),
)
