"""Per-language filters against datatrove's, language by language: the same keep/drop decision, and speed.

For every language with a configuration (curate/lang/data/filters.json), the documents are made of the
UDHR paragraphs the configuration was *not* derived from (the odd ones): windows of 6 paragraphs
(clean), the same windows with their first paragraph repeated 5 times (near the repetition limits),
and four kinds of boilerplate from the same words (a menu of two-word lines, the first three tokens of
each paragraph, a bullet list, one paragraph repeated 12 times). Each of GopherQuality, GopherRepetition
and FineWeb runs here as `filters.ByLanguage(X)` and in datatrove (the version in the project's venv)
with the same thresholds and stop words, and with the same words: datatrove's filters take a word
tokenizer, and are given one that returns `curate.lang.words(text, lang)`, so what is compared is the
rules and thresholds, language by language. Printed: per filter, the documents with the same decision
overall, the languages at >= 99%, the lowest languages; then CPU seconds here and in datatrove, and the
per-language chain against the English chain (the published defaults) on the same documents.

    .venv/bin/python benchmarks/lang_filters.py [--reps 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import zipfile
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DATA = os.environ.get("PENEIRA_SHARED_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
UDHR = os.path.join(DATA, "text", "multilingual", "nltk_udhr2.zip")

from curate import Document, filters  # noqa: E402
from curate.lang import config as lang_config  # noqa: E402
from curate.lang import words  # noqa: E402

_spec = importlib.util.spec_from_file_location("derive_languages", os.path.join(ROOT, "scripts", "derive_languages.py"))
derive = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(derive)


def documents(paragraphs: list[str], lang: str) -> list[str]:
    """Clean windows, windows with a repeated paragraph, and four kinds of boilerplate (module doc)."""
    wins = ["\n".join(paragraphs[i:i + 6]) for i in range(0, max(len(paragraphs) - 5, 1), 2)]
    reps = ["\n".join([paragraphs[i]] * 5 + paragraphs[i + 1:i + 6]) for i in range(0, max(len(paragraphs) - 5, 1), 2)]
    ws = [w for w in words(" ".join(paragraphs), lang) if any(c.isalnum() for c in w)]
    spam = [
        "\n".join(" ".join(ws[i:i + 2]) for i in range(0, min(len(ws), 300), 2)),
        "\n".join(" ".join(words(p, lang)[:3]) for p in paragraphs),
        "\n".join("• " + " ".join(ws[i:i + 4]) for i in range(0, min(len(ws), 400), 4)),
        "\n".join([max(paragraphs, key=len)] * 12 + paragraphs[:2]),
    ]
    return wins + reps + spam


def datatrove_filters(lang: str):
    """datatrove's three filters with `lang`'s configuration and curate's words for `lang`."""
    from datatrove.pipeline.filters import FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter
    from datatrove.utils.word_tokenizers import WordTokenizer

    class Words(WordTokenizer):
        def word_tokenize(self, text: str) -> list[str]:
            return words(text, lang)

        def sent_tokenize(self, text: str) -> list[str]:
            raise NotImplementedError

        def span_tokenize(self, text: str) -> list[tuple[int, int]]:
            raise NotImplementedError

    tok = Words(lang)
    cfg = lang_config.config(lang)
    q, r, f = cfg.kwargs("gopher_quality"), cfg.kwargs("gopher_repetition"), cfg.kwargs("fineweb")
    stop = (q.get("stop_words") or {}).get(cfg.lang, [])
    return {
        "gopher_quality": GopherQualityFilter(
            min_doc_words=q["min_words"], max_doc_words=q["max_words"],
            min_avg_word_length=q["min_mean_word_length"], max_avg_word_length=q["max_mean_word_length"],
            max_non_alpha_words_ratio=q["min_alpha_words_ratio"], stop_words=stop,
            min_stop_words=q.get("min_stop_words", 2), language=tok),
        "gopher_repetition": GopherRepetitionFilter(
            top_n_grams=tuple(r["max_top_ngram_char_frac"].items()), dup_n_grams=tuple(r["max_dup_ngram_char_frac"].items()),
            language=tok),
        "fineweb": FineWebQualityFilter(line_punct_thr=f["min_punct_line_ratio"],
                                        new_line_ratio=f["max_newline_word_ratio"], language=tok),
    }


def ours():
    """The three filters here, each with every language's configuration."""
    return {s.name: s for s in (filters.ByLanguage(c) for c in (filters.GopherQuality, filters.GopherRepetition,
                                                                   filters.FineWeb))}


def keep_ours(step, text: str, lang: str) -> bool:
    return isinstance(step.apply(Document(id="d", text=text, source="b", lang=lang)), Document)


def keep_theirs(f, text: str) -> bool:
    from datatrove.data import Document as DtDocument

    out = f.filter(DtDocument(text=text, id="d"))
    return out is True or (isinstance(out, tuple) and out[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=1, help="passes for the speed figures")
    args = ap.parse_args()
    with zipfile.ZipFile(UDHR) as z:
        corpus = {lang: documents(derive.halves(derive.udhr_paragraphs(z, derive.UDHR_FILE[lang]))[1], lang)
                  for lang in lang_config.configured_languages()}
    n_docs = sum(map(len, corpus.values()))
    print(f"{len(corpus)} languages, {n_docs} documents ({n_docs // len(corpus)} a language on average)")
    here = ours()
    same: dict[str, Counter] = {name: Counter() for name in here}
    total: Counter = Counter()
    kept_here: Counter = Counter()
    kept_there: Counter = Counter()
    cpu_here = cpu_there = 0.0
    for lang, docs in corpus.items():
        theirs = datatrove_filters(lang)
        for name, step in here.items():
            t0 = time.process_time()
            for _ in range(args.reps):  # every pass decides the same; the last one's decisions are compared
                a = [keep_ours(step, d, lang) for d in docs]
            t1 = time.process_time()
            for _ in range(args.reps):
                b = [keep_theirs(theirs[name], d) for d in docs]
            t2 = time.process_time()
            cpu_here, cpu_there = cpu_here + t1 - t0, cpu_there + t2 - t1
            same[name][lang] = sum(x == y for x, y in zip(a, b, strict=True))
            kept_here[name] += sum(a)
            kept_there[name] += sum(b)
        total[lang] = len(docs)
    print("\n| filter | kept here / datatrove | same decision | languages at >= 99% | lowest |")
    print("|---|---:|---:|---:|---|")
    for name, by_lang in same.items():
        share = {lang: by_lang[lang] / total[lang] for lang in total}
        low = ", ".join(f"{lang} {100 * s:.1f}%" for lang, s in sorted(share.items(), key=lambda kv: kv[1])[:3])
        print(f"| {name} | {kept_here[name]:,} / {kept_there[name]:,} | {100 * sum(by_lang.values()) / n_docs:.2f}% "
              f"| {sum(s >= 0.99 for s in share.values())} of {len(share)} | {low} |")
    print(f"\nCPU seconds, the three filters over every document x {args.reps}: here {cpu_here:.2f}, "
          f"datatrove {cpu_there:.2f} ({cpu_there / cpu_here:.1f}x)")
    chain_speed(corpus, args.reps)
    return 0


def chain_speed(corpus: dict[str, list[str]], reps: int) -> None:
    """The per-language chain (ByLanguage) against the English chain (defaults) on the same documents."""
    per_lang = [filters.ByLanguage(c) for c in (filters.GopherRepetition, filters.GopherQuality, filters.FineWeb)]
    english = [filters.GopherRepetition(), filters.GopherQuality(), filters.FineWeb()]
    docs = [(lang, d) for lang, ds in corpus.items() for d in ds]
    for chain in (per_lang, english):  # warm: steps built, stop-word lists loaded
        for lang, d in docs[:: max(len(docs) // 200, 1)]:
            _run(chain, d, lang)
    times = {}
    for label, chain in (("per-language", per_lang), ("English", english)):
        t0 = time.process_time()
        for _ in range(reps):
            for lang, d in docs:
                _run(chain, d, lang)
        times[label] = time.process_time() - t0
    chars = sum(len(d) for _, d in docs) * reps
    print(f"chain GopherRepetition > GopherQuality > FineWeb on the same {chars:,} characters: per-language "
          f"{times['per-language']:.2f} s, English {times['English']:.2f} s "
          f"(ratio {times['per-language'] / times['English']:.2f})")


def _run(chain, text: str, lang: str) -> None:
    doc = Document(id="d", text=text, source="b", lang=lang)
    for step in chain:
        if not isinstance(step.apply(doc), Document):
            return


if __name__ == "__main__":
    raise SystemExit(main())
