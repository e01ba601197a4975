"""curate quality train|eval: learn a fastText quality model from example documents, and measure it."""

from __future__ import annotations

import json
import os

from curate.core.errors import UsageError

_INPUTS_HELP = "glob of text (.txt, .gz, .zip of .txt), JSONL or Parquet files; repeatable"


def _add_inputs(p) -> None:
    p.add_argument("--positive", action="append", required=True, metavar="GLOB", help=f"high-quality examples: {_INPUTS_HELP}")
    p.add_argument("--negative", action="append", required=True, metavar="GLOB", help=f"low-quality examples: {_INPUTS_HELP}")
    p.add_argument("--text-key", default="text", help="text field of JSONL records and Parquet columns (default: text)")
    p.add_argument("--chunk-words", type=int, default=None,
                   help="cut plain-text files into documents of about this many words (default: 400)")
    p.add_argument("--plot", metavar="PNG", help="write the held-out precision-recall curve here")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def add_parser(sub):
    p = sub.add_parser("quality", help="train and evaluate the fastText quality classifier")
    qsub = p.add_subparsers(dest="quality_command", required=True, parser_class=type(p))

    t = qsub.add_parser("train", help="train a model; prints held-out precision, recall, F1 and ROC AUC")
    _add_inputs(t)
    t.add_argument("--out", required=True, help="model file to write (a <out>.json card is written beside it)")
    t.add_argument("--holdout", type=float, default=0.1, help="share of each class held out by document (default 0.1)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--no-balance", action="store_true", help="keep all documents of the larger class")
    t.add_argument("--epoch", type=int, default=5)
    t.add_argument("--lr", type=float, default=0.1)
    t.add_argument("--dim", type=int, default=100)
    t.add_argument("--word-ngrams", type=int, default=2)
    t.add_argument("--bucket", type=int, default=200_000, help="hash buckets for word n-grams (model size)")
    t.add_argument("--threads", type=int, default=1, help="training threads; >1 is faster but not reproducible")

    e = qsub.add_parser("eval", help="score labelled documents with a model: metrics and a PR curve")
    e.add_argument("model", help="a model written by `curate quality train`")
    _add_inputs(e)
    e.add_argument("--threshold", type=float, default=0.5, help="decision threshold for precision/recall/F1")
    return p


def _print(title: str, metrics, corpora: dict, extra: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps({**extra, "metrics": metrics.to_dict() if metrics else None}, indent=1))
        return
    print(title)
    for name, corpus in corpora.items():
        print(f"  {name:<9} {corpus.summary()}")
    for k, v in extra.items():
        print(f"  {k}: {v}")
    if metrics:
        print(metrics.format())


def main(args) -> int:
    from curate.quality import TrainConfig, evaluate_model, load_corpus, plot_pr, train
    from curate.quality.text import CHUNK_WORDS

    chunk = args.chunk_words or CHUNK_WORDS
    if chunk < 1:
        raise UsageError(f"--chunk-words must be >= 1, got {chunk}")
    pos = load_corpus(args.positive, args.text_key, chunk)
    neg = load_corpus(args.negative, args.text_key, chunk)
    corpora = {"positive": pos, "negative": neg}
    if args.quality_command == "train":
        if args.threads < 1:
            raise UsageError(f"--threads must be >= 1, got {args.threads}")
        if args.plot and args.holdout == 0:
            raise UsageError("--plot needs a held-out split (--holdout > 0)")
        cfg = TrainConfig(lr=args.lr, dim=args.dim, epoch=args.epoch, word_ngrams=args.word_ngrams, bucket=args.bucket,
                          threads=args.threads, seed=args.seed, holdout=args.holdout, balance=not args.no_balance,
                          chunk_words=chunk, text_key=args.text_key)
        r = train(pos, neg, args.out, cfg)
        metrics, scores, labels = r.metrics, r.heldout_scores, r.heldout_labels
        title = f"trained {r.model_path} ({os.path.getsize(r.model_path) / 2**20:.1f} MiB)"
        extra = {"model": r.model_path, "train documents": r.train_docs, "held-out documents": r.heldout_docs,
                 "train words": r.train_words, "seconds": round(r.seconds, 1)}
    else:
        metrics, scores, labels, _ = evaluate_model(args.model, pos, neg, threshold=args.threshold)
        title, extra = f"evaluated {args.model}", {"model": args.model}
    if args.plot:
        plot_pr(scores, labels, args.plot, title=os.path.basename(extra["model"]))
        extra["PR curve"] = args.plot
    _print(title, metrics, corpora, extra, args.json)
    return 0
