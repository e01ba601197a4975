"""curate quality train|eval: learn a fastText quality model from example documents, and measure it."""

from __future__ import annotations

import json
import os
import sys

from curate.cli.common import add_progress
from curate.core.errors import UsageError

_INPUTS_HELP = "glob of text (.txt, .gz, .zip of .txt), JSONL or Parquet files; repeatable"


def _add_inputs(p) -> None:
    p.add_argument("--positive", action="append", required=True, metavar="GLOB", help=f"high-quality examples: {_INPUTS_HELP}")
    p.add_argument("--negative", action="append", required=True, metavar="GLOB", help=f"low-quality examples: {_INPUTS_HELP}")
    p.add_argument("--text-key", default="text", help="text field of JSONL records and Parquet columns (default: text)")
    p.add_argument("--chunk-words", type=int, default=None,
                   help="cut every document (text file, record, zip member) into examples of about this many words "
                        "(default: 400)")
    p.add_argument("--plot", metavar="PNG", help="write the precision-recall curve and both classes' score histograms")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def add_parser(sub):
    p = sub.add_parser("quality", help="train and evaluate the fastText quality classifier")
    qsub = p.add_subparsers(dest="quality_command", required=True, parser_class=type(p))

    t = qsub.add_parser("train", help="train a model; prints held-out metrics, score histograms and confound warnings")
    _add_inputs(t)
    t.add_argument("--out", required=True, help="model file to write (a <out>.json card is written beside it)")
    t.add_argument("--holdout", type=float, default=0.1, help="share of each class held out by document (default 0.1)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--no-balance", action="store_true", help="keep all the text of the class with more words")
    t.add_argument("--epoch", type=int, default=None,
                   help="epochs (default: 5, more on small sets: at least 30,000 example updates, at most 100 epochs)")
    t.add_argument("--lr", type=float, default=0.1)
    t.add_argument("--dim", type=int, default=100)
    t.add_argument("--word-ngrams", type=int, default=2)
    t.add_argument("--bucket", type=int, default=200_000, help="hash buckets for word n-grams (model size)")
    t.add_argument("--threads", type=int, default=1, help="training threads; >1 is faster but not reproducible")
    add_progress(t)

    e = qsub.add_parser("eval", help="score labelled documents with a model: metrics and a PR curve")
    e.add_argument("model", help="a model written by `curate quality train`")
    _add_inputs(e)
    e.add_argument("--threshold", type=float, default=0.5, help="decision threshold for precision/recall/F1")
    return p


def _print(title: str, metrics, examples: dict, extra: dict, hist: dict | None, warnings: list[str],
           as_json: bool) -> None:
    if as_json:
        print(json.dumps({**extra, "metrics": metrics.to_dict() if metrics else None, "histogram": hist,
                          "warnings": warnings}, indent=1))
        return
    print(title)
    for name, ex in examples.items():
        print(f"  {name:<9} {ex.summary()}")
    for k, v in extra.items():
        if k == "confounds":
            for line in _confound_lines(v):
                print(f"  {line}")
        else:
            print(f"  {k}: {_plain(v)}")
    if metrics:
        print(metrics.format())
    if hist:
        from curate.quality import format_histogram

        print("score distributions (held-out)" if "train examples" in extra else "score distributions")
        print(format_histogram(hist))
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


def _plain(value) -> str:
    """A figure as a person reads it: `{'positive': 156, 'negative': 226}` -> `positive 156, negative 226`."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_plain(v)}" for k, v in value.items())
    return str(value)


def _confound_lines(figures: dict) -> list[str]:
    """The confound figures (`curate.quality.confounds`), one labelled line each."""
    names = {"language_share_of_words": "language (share of words)", "median_example_words": "median example words",
             "positive_sources": "positive sources", "negative_sources": "negative sources"}
    out = []
    for key, value in figures.items():
        if key == "language_share_of_words":
            value = "; ".join(f"{cls}: " + ", ".join(f"{lang} {share:.0%}" for lang, share in shares.items())
                              for cls, shares in value.items())
        elif key.endswith("_sources"):
            value = ", ".join(f"{name} {share:.0%}" for name, share in value.items())
        out.append(f"{names.get(key, key)}: {value if isinstance(value, str) else _plain(value)}")
    return out


def _check_plot(path: str) -> None:
    """The plot is written last: a path it cannot be written to is refused before the work, not after it."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--plot {path}: cannot write a PNG there (is {folder} an existing, writable folder?)")


def main(args) -> int:
    from curate.quality import TrainConfig, evaluate_model, load_examples, plot_pr, score_histogram, train
    from curate.quality.text import CHUNK_WORDS

    chunk = args.chunk_words or CHUNK_WORDS
    if chunk < 1:
        raise UsageError(f"--chunk-words must be >= 1, got {chunk}")
    if args.quality_command == "train":  # every option checked before the examples are read and the model trained
        from curate.quality.model import check_out

        if args.threads < 1:
            raise UsageError(f"--threads must be >= 1, got {args.threads}")
        if args.epoch is not None and args.epoch < 1:
            raise UsageError(f"--epoch must be >= 1, got {args.epoch}")
        if args.plot and args.holdout == 0:
            raise UsageError("--plot needs a held-out split (--holdout > 0)")
        check_out(args.out)
    if args.plot:
        _check_plot(args.plot)
    pos = load_examples(args.positive, args.text_key, chunk)
    neg = load_examples(args.negative, args.text_key, chunk)
    examples = {"positive": pos, "negative": neg}
    if args.quality_command == "train":
        cfg = TrainConfig(lr=args.lr, dim=args.dim, epoch=args.epoch, word_ngrams=args.word_ngrams, bucket=args.bucket,
                          threads=args.threads, seed=args.seed, holdout=args.holdout, balance=not args.no_balance,
                          chunk_words=chunk, text_key=args.text_key)
        r = train(pos, neg, args.out, cfg, progress=args.progress)
        metrics, scores, labels, hist, warnings = r.metrics, r.heldout_scores, r.heldout_labels, r.histogram, r.warnings
        title = f"trained {r.model_path} ({os.path.getsize(r.model_path) / 2**20:.1f} MiB)"
        extra = {"model": r.model_path, "train examples": r.train_docs, "held-out examples": r.heldout_docs,
                 "train words": r.train_words, "epochs": r.epochs, "confounds": r.confounds,
                 "seconds": round(r.seconds, 1)}
    else:
        metrics, scores, labels, _ = evaluate_model(args.model, pos, neg, threshold=args.threshold)
        title, extra, warnings = f"evaluated {args.model}", {"model": args.model}, []
        hist = score_histogram(scores, labels)
    if args.plot:
        plot_pr(scores, labels, args.plot, title=os.path.basename(extra["model"]))
        extra["plot"] = args.plot
    _print(title, metrics, examples, extra, hist, warnings, args.json)
    return 0
