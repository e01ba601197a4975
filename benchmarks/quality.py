"""Quality classifier speed: documents scored per second per core, and training time per million words.

Trains a model with the default (DCLM) recipe on the same real corpora as tests/test_quality.py,
then scores the 697 Common Crawl documents of shared/data/text/web_cc (web-length pages, mean 3.6k
characters), repeated `--reps` times, in one process, timed in CPU seconds (so docs/s is per core even on a busy machine):

* batched: `QualityModel.score` on batches of 64, the pipeline's batch size: shared normalisation,
  one multi-line fastText predict call per batch. This is what `quality.Classifier` runs.
* naive baseline: the same normalisation, then `model.predict(line, k=2)` one document at a time
  and a dict lookup for the high-quality label, as a per-document filter would do.

    .venv/bin/python benchmarks/quality.py --reps 5
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time

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


def main() -> None:
    from curate.quality import HQ, QualityModel, TrainConfig, load_corpus, normalize, train

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="passes over the 697 web documents")
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        pos, neg = corpora(tmp)
        t = time.process_time()
        p, n = load_corpus(pos), load_corpus(neg)
        t_load = time.process_time() - t
        t = time.process_time()
        model_path = os.path.join(tmp, "quality.bin")
        result = train(p, n, model_path, TrainConfig())
        t_train = time.process_time() - t  # CPU: includes writing the training file and model, held-out scoring
        mwords = result.train_words / 1e6
        print(f"train: {result.train_words:,} words in {result.train_docs} documents, {t_train:.2f} s "
              f"({t_train / mwords:.2f} s per million words, 1 thread, 5 epochs); reading the corpora {t_load:.2f} s")
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
            labels, probs = model.ft.predict(normalize(text), k=2)
            naive.append(float(dict(zip(labels, probs, strict=True)).get(HQ, 0.0)))
        t_naive = time.process_time() - t

        t = time.process_time()
        lines = [normalize(x) for x in texts]
        t_norm = time.process_time() - t

    worst = max(abs(a - b) for a, b in zip(batched, naive, strict=True))
    print(f"score: {len(texts):,} web documents (mean {chars:,.0f} chars), one process")
    print(f"  batched ({args.batch}/call)   {len(texts) / t_batch:8,.0f} docs/s per core")
    print(f"  naive (one per call)  {len(texts) / t_naive:8,.0f} docs/s per core")
    print(f"  ratio batched/naive   {t_naive / t_batch:8.2f}x   (largest score difference {worst:.1e})")
    print(f"  of which normalising  {len(lines) / t_norm:8,.0f} docs/s alone")


if __name__ == "__main__":
    main()
