"""Quality classifier: does training separate real quality, and how fast does it score.

`--separation` (the issue 15 measurement): train on books and speeches (positives; one JSONL record per
book or speech) against SMS messages and web chat (negatives; a text file of one message a line, and
NLTK's webtext zip), then score real news articles (the CleanPortalEval and Dragnet gold texts) against
the web_cc pages that GopherQuality rejects, none of which any model saw. Three trainings on the same
inputs:

* before: the previous `curate quality train`, rebuilt here in a few lines: a JSONL record is one
  example (cut to its first 10,000 characters), text files are 400-word chunks, and both classes are
  cut to the same number of examples (125: the books and speeches are 125 records);
* plain: fastText (DCLM settings, 5 epochs) on every text cut into 400-word chunks, unbalanced;
* now: `quality.train` with its defaults (every input chunked, classes balanced by words, epochs
  raised on small sets).

Printed: ROC AUC on the news-vs-rejected-web set and both classes' score quantiles there.

Trains a model with the default (DCLM) recipe on the same real corpora as tests/test_quality.py,
then scores the 697 Common Crawl documents of shared/data/text/web_cc (web-length pages, mean 3.6k
characters), repeated `--reps` times, in one process, timed in CPU seconds (so docs/s is per core even on a busy machine):

* batched: `QualityModel.score` on batches of 64, the pipeline's batch size: shared normalisation,
  one multi-line fastText predict call per batch. This is what `quality.Classifier` runs.
* naive baseline: the same normalisation, then `model.predict(line, k=2)` one document at a time
  and a dict lookup for the high-quality label, as a per-document filter would do.

    .venv/bin/python benchmarks/quality.py --reps 5
    .venv/bin/python benchmarks/quality.py --separation
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("PENEIRA_SHARED_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
TEXT = os.path.join(DATA, "text")
WEB_CC = os.path.join(TEXT, "web_cc", "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz")
sys.path.insert(0, ROOT)


def corpora(tmp: str) -> tuple[list[str], list[str]]:
    """The test's class globs; WikiText's tokeniser marks undone and the SMS label column dropped."""
    with open(os.path.join(TEXT, "clean_en", "wikitext-2-test.txt"), encoding="utf-8") as f:
        wiki = f.read()
    for mark, char in ((" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", ".")):
        wiki = wiki.replace(mark, char)
    with open(os.path.join(tmp, "wikitext.txt"), "w", encoding="utf-8") as f:
        f.write(wiki)
    with open(os.path.join(TEXT, "low_quality", "SMSSpamCollection.tsv"), encoding="utf-8") as f:
        sms = [row.split("\t", 1)[1] for row in f.read().splitlines()[1:]]
    with open(os.path.join(tmp, "sms.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(sms))
    pos = [os.path.join(tmp, "wikitext.txt"), os.path.join(TEXT, "clean_en", "botchan_gutenberg8868.txt"),
           os.path.join(TEXT, "clean_en", "nltk_*.zip"), os.path.join(TEXT, "pt", "bosque_docs.jsonl")]
    neg = [WEB_CC, os.path.join(TEXT, "low_quality", "nltk_webtext.zip"), os.path.join(tmp, "sms.txt")]
    return pos, neg


def _zip_texts(path: str) -> list[str]:
    with zipfile.ZipFile(path) as z:
        return [z.read(n).decode("utf-8", "replace") for n in z.namelist() if n.endswith(".txt")]


def separation_inputs(tmp: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """(positive files, negative files, news texts, Gopher-rejected web texts)."""
    from curate import Document, Reject, filters

    with open(os.path.join(TEXT, "clean_en", "botchan_gutenberg8868.txt"), encoding="utf-8") as f:
        books = [f.read()]
    speeches = [t for z in ("nltk_inaugural.zip", "nltk_state_union.zip") for t in _zip_texts(os.path.join(TEXT, "clean_en", z))]
    pos = os.path.join(tmp, "books_speeches.jsonl")
    with open(pos, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": t}) + "\n" for t in books + speeches)
    with open(os.path.join(TEXT, "low_quality", "SMSSpamCollection.tsv"), encoding="utf-8") as f:
        sms = [row.split("\t", 1)[1] for row in f.read().splitlines()[1:]]
    sms_path = os.path.join(tmp, "sms.txt")
    with open(sms_path, "w", encoding="utf-8") as f:
        f.write("\n".join(sms))
    neg = [sms_path, os.path.join(TEXT, "low_quality", "nltk_webtext.zip")]
    news = []
    for name in ("CleanPortalEval", "dragnet"):
        with open(os.path.join(DATA, "extraction", name, "gold.jsonl"), encoding="utf-8") as f:
            news += [json.loads(line)["text"] for line in f]
    with gzip.open(WEB_CC, "rt", encoding="utf-8") as f:
        web = [json.loads(line)["text"] for line in f]
    gopher = filters.GopherQuality()
    rejected = [t for t in web if isinstance(gopher.apply(Document(id="w", text=t, source="web")), Reject)]
    return [pos], neg, news, rejected


def _fit(lines: list[str], path: str, seed: int) -> None:
    import fasttext

    data = path + ".txt"
    with open(data, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    fasttext.train_supervised(input=data, lr=0.1, dim=100, epoch=5, wordNgrams=2, bucket=200_000, minCount=1,
                              thread=1, seed=seed, loss="softmax", verbose=0).save_model(path)


def _before_and_plain(docs: dict[str, list[str]], seed: int) -> tuple[list[str], list[str]]:
    """Training lines of the previous `quality train` and of the plain chunked baseline."""
    import random

    from curate.quality import HQ, LQ, chunk_text, classifier_text

    rng = random.Random(seed)
    p = list(dict.fromkeys(classifier_text(t) for t in docs["pos"]))  # a record is one example
    n = list(dict.fromkeys(classifier_text(c) for t in docs["neg"] for c in chunk_text(t, 400)))
    rng.shuffle(p)
    rng.shuffle(n)
    k = min(len(p), len(n))  # both classes cut to one count
    held = round(0.1 * k)
    before = [f"{HQ} {x}" for x in p[held:k]] + [f"{LQ} {x}" for x in n[held:k]]
    rng.shuffle(before)
    plain = ([f"{HQ} {classifier_text(c)}" for t in docs["pos"] for c in chunk_text(t, 400)]
             + [f"{LQ} {classifier_text(c)}" for t in docs["neg"] for c in chunk_text(t, 400)])
    rng.shuffle(plain)
    return before, plain


def separation(seeds: int) -> None:
    from collections import Counter

    import numpy as np

    from curate.quality import QualityModel, TrainConfig, roc_auc, score_histogram, train
    from curate.quality.text import _iter_file

    with tempfile.TemporaryDirectory() as tmp:
        pos, neg, news, rejected = separation_inputs(tmp)
        labels = np.r_[np.ones(len(news), bool), np.zeros(len(rejected), bool)]
        print(f"eval: {len(news):,} news articles vs {len(rejected):,} web_cc pages GopherQuality rejects, "
              f"seeds 0..{seeds - 1}\n")
        docs = {name: [t for path in files for chunks in _iter_file(path, "text", 10**9, Counter()) for t in chunks]
                for name, files in (("pos", pos), ("neg", neg))}  # documents whole, as the files hold them
        rows: dict[str, list] = {"before": [], "plain": [], "now": []}
        for seed in range(seeds):
            before, plain = _before_and_plain(docs, seed)
            paths = {name: os.path.join(tmp, f"{name}{seed}.bin") for name in rows}
            _fit(before, paths["before"], seed)
            _fit(plain, paths["plain"], seed)
            result = train(pos, neg, paths["now"], TrainConfig(seed=seed))
            sizes = {"before": len(before), "plain": len(plain), "now": sum(result.train_docs.values())}
            for name, path in paths.items():
                scores = QualityModel(path).score(news + rejected)
                rows[name].append((roc_auc(scores, labels), score_histogram(scores, labels), sizes[name]))
        print(f"{'training':<8} {'ROC AUC (per seed)':<26} {'news p10/p50/p90':>18}  {'rejected p10/p50/p90':>21}"
              "  examples")
        for name, runs in rows.items():
            h = runs[0][1]
            q = {c: "/".join(f"{h[f'{c}_quantiles'][x]:.2f}" for x in ("p10", "p50", "p90")) for c in ("positive", "negative")}
            aucs = " ".join(f"{r[0]:.3f}" for r in runs)
            print(f"{name:<8} {aucs:<26} {q['positive']:>18}  {q['negative']:>21}  {runs[0][2]:,}")
        print("(quantiles of seed 0; 'now' ran", result.epochs, "epochs)")
        for w in result.warnings:
            print(f"warning (now): {w}")


def main() -> None:
    from curate.quality import HQ, QualityModel, TrainConfig, classifier_text, load_examples, train

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="passes over the 697 web documents")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--separation", action="store_true", help="the issue 15 measurement instead of the speed one")
    ap.add_argument("--seeds", type=int, default=3, help="--separation: trainings per method")
    args = ap.parse_args()
    if args.separation:
        separation(args.seeds)
        return

    with tempfile.TemporaryDirectory() as tmp:
        pos, neg = corpora(tmp)
        t = time.process_time()
        p, n = load_examples(pos), load_examples(neg)
        t_load = time.process_time() - t
        t = time.process_time()
        model_path = os.path.join(tmp, "quality.bin")
        result = train(p, n, model_path, TrainConfig())
        t_train = time.process_time() - t  # CPU: includes writing the training file and model, held-out scoring
        words = sum(result.train_words.values())
        print(f"train: {words:,} words in {result.train_docs} examples, {t_train:.2f} s "
              f"({t_train / (words / 1e6):.2f} s per million words, 1 thread, {result.epochs} epochs); "
              f"reading the corpora {t_load:.2f} s")
        print(f"held-out ROC AUC {result.metrics.roc_auc:.4f}, F1 {result.metrics.f1:.4f}")

        model = QualityModel(model_path)
        with gzip.open(WEB_CC, "rt", encoding="utf-8") as f:
            texts = [json.loads(line)["text"] for line in f] * args.reps
        chars = sum(map(len, texts)) / len(texts)
        model.score(texts[:64])  # warm up

        t = time.process_time()
        batched = [s for i in range(0, len(texts), args.batch) for s in model.score(texts[i : i + args.batch])]
        t_batch = time.process_time() - t

        t = time.process_time()
        naive = []
        for text in texts:
            labels, probs = model.ft.predict(classifier_text(text), k=2)
            naive.append(float(dict(zip(labels, probs, strict=True)).get(HQ, 0.0)))
        t_naive = time.process_time() - t

        t = time.process_time()
        lines = [classifier_text(x) for x in texts]
        t_norm = time.process_time() - t

    worst = max(abs(a - b) for a, b in zip(batched, naive, strict=True))
    print(f"score: {len(texts):,} web documents (mean {chars:,.0f} chars), one process")
    print(f"  batched ({args.batch}/call)   {len(texts) / t_batch:8,.0f} docs/s per core")
    print(f"  naive (one per call)  {len(texts) / t_naive:8,.0f} docs/s per core")
    print(f"  ratio batched/naive   {t_naive / t_batch:8.2f}x   (largest score difference {worst:.1e})")
    print(f"  of which normalising  {len(lines) / t_norm:8,.0f} docs/s alone")


if __name__ == "__main__":
    main()
