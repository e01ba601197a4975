"""curate quality train|eval: learn a fastText quality model from example documents, and measure it;
curate quality annotate: grade a sample of documents by a served teacher model; curate quality fit: a head on
frozen embeddings trained on those grades, for quality.NeuralClassifier (docs/quality.md)."""

from __future__ import annotations

import json
import os
import sys

from curate.cli.common import add_overwrite, add_progress
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
    p = sub.add_parser("quality", help="train and evaluate the fastText quality classifier; annotate a sample by a "
                                       "teacher model and fit a neural classifier's head on the grades")
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
    _add_annotate(qsub)
    _add_fit(qsub)
    return p


def _add_fit(qsub) -> None:
    f = qsub.add_parser("fit", help="fit a head on frozen embeddings to the grades of `curate quality annotate`; "
                                    "prints held-out metrics; the folder is a model for quality.NeuralClassifier")
    f.add_argument("inputs", nargs="+", help="annotate output folders (or their annotations.parquet)")
    f.add_argument("--encoder", required=True,
                   help="a Hugging Face encoder (folder or hub id) or this project's checkpoint (ckpt.pt or its run)")
    f.add_argument("--out", required=True, help="the model folder to write (head.json, head.npz, metrics.json)")
    f.add_argument("--head", choices=["ridge", "logistic"], default="ridge",
                   help="ridge: a regression head (FineWeb-Edu's shape); logistic: one class per integer score")
    f.add_argument("--holdout", type=float, default=0.2, help="share of the graded documents held out (by id)")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--keep-at", type=float, default=3, help="the integer score kept at or above, for F1 (default 3)")
    f.add_argument("--min-score", type=float, default=0)
    f.add_argument("--max-score", type=float, default=5)
    f.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    f.add_argument("--max-tokens", type=int, default=None, help="tokens of each document read (default: the context)")
    f.add_argument("--revision", default=None, help="a hub encoder's revision")
    f.add_argument("--json", action="store_true", help="print the metrics as JSON")
    add_overwrite(f)
    add_progress(f)


def _fit(args) -> int:
    from curate.quality.fit import fit

    if args.min_score > args.max_score or args.keep_at < args.min_score or args.keep_at > args.max_score:
        raise UsageError("--keep-at must lie in [--min-score, --max-score]")
    bar = _bar(None, "fit: embed") if args.progress else None
    try:
        report = fit(args.inputs, args.encoder, args.out, head=args.head, holdout=args.holdout, seed=args.seed,
                     keep_at=args.keep_at, low=args.min_score, high=args.max_score, device=args.device,
                     max_tokens=args.max_tokens, revision=args.revision, overwrite=args.overwrite,
                     progress=bar.update if bar else None)
    finally:
        if bar:
            bar.close()
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"fitted a {args.head} head on {report['encoder']} ({report['embedding_dim']} dimensions) into {args.out}")
    print(f"  graded documents: {report['graded']} ({report['unscored_left_out']} without a score left out)")
    for split in ("heldout", "train"):
        m = report[split]
        print(f"  {split:<8} {m['documents']} documents: Spearman {m['spearman']}, keep at >= {m['keep_at']}: "
              f"precision {m['precision']}, recall {m['recall']}, F1 {m['f1']}, mean abs error {m['mean_abs_error']}")
    cm = report["heldout"]["confusion"]
    print("  held-out confusion by integer score (rows: teacher, columns: head)")
    print("        " + "".join(f"{s:>6}" for s in cm["scores"]))
    for s, row in zip(cm["scores"], cm["rows_teacher_columns_head"], strict=True):
        print(f"  {s:>6}" + "".join(f"{v:>6}" for v in row))
    return 0


def _add_annotate(qsub) -> None:
    a = qsub.add_parser("annotate", help="grade a seeded sample of documents by a teacher model served over the "
                                         "OpenAI-compatible chat-completions protocol (resumable)")
    a.add_argument("inputs", nargs="+", help="run folders, folders of shards, JSONL or Parquet files, or globs")
    a.add_argument("--out", required=True, help="output folder (annotations.parquet, journal/, annotate.json)")
    a.add_argument("--endpoint", required=True, help="the server's base URL, e.g. http://localhost:8000/v1")
    a.add_argument("--model", required=True, help="the model name the server knows")
    a.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key (never the key)")
    a.add_argument("--template", required=True, metavar="FILE",
                   help="the prompt: {text} (the document) and {id} are replaced; docs/quality.md has FineWeb-Edu's")
    a.add_argument("--system", metavar="FILE", help="a system prompt, sent before the template")
    a.add_argument("-n", type=int, required=True, help="documents to grade (a seeded sample)")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--max-chars", type=int, default=10_000, help="document characters put in the prompt")
    a.add_argument("--max-tokens", type=int, default=512, help="longest answer; a longer one counts as truncated")
    a.add_argument("--temperature", type=float, default=0.0)
    a.add_argument("--min-score", type=float, default=0, help="lowest valid score (default 0)")
    a.add_argument("--max-score", type=float, default=5, help="highest valid score (default 5)")
    a.add_argument("--score-regex", default=None,
                   help="where the score is in a free-text answer: the last match's group 1 (case-insensitive; "
                        "default: 'score: N' as in FineWeb-Edu's 'Educational score: N')")
    a.add_argument("--concurrency", type=int, default=8, help="requests in flight at once")
    a.add_argument("--rate", type=float, default=0, help="at most this many requests a second (0: no limit)")
    a.add_argument("--timeout", type=float, default=120, help="seconds to wait for an answer before trying again")
    add_overwrite(a)
    add_progress(a)


def _annotate(args) -> int:
    """Settings checked, the client made, the annotation run (or resumed); its summary printed."""
    import re

    from curate.io.chat import ChatClient, Refused
    from curate.io.retry import Exhausted
    from curate.quality.annotate import SCORE_PATTERN, ScoreRule, Settings, Template, annotate

    for name in ("n", "concurrency", "max_chars", "max_tokens"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.rate < 0 or args.timeout <= 0 or args.min_score > args.max_score:
        raise UsageError("--rate must be >= 0, --timeout > 0 and --min-score <= --max-score")
    pattern = args.score_regex or SCORE_PATTERN
    try:
        if re.compile(pattern).groups != 1:
            raise UsageError(f"--score-regex {pattern!r}: needs exactly one group (the score)")
    except re.error as e:
        raise UsageError(f"--score-regex {pattern!r}: {e}") from None
    key = None
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            raise UsageError(f"--api-key-env {args.api_key_env}: that environment variable is not set")
    template = Template.load(args.template, args.system, args.max_chars)
    rule = ScoreRule(args.min_score, args.max_score, pattern)
    params = {"max_tokens": args.max_tokens, "temperature": args.temperature}
    settings = Settings(args.model, _sha(template.user + "\0" + (template.system or "")), rule.__dict__.copy(),
                        {**params, "max_chars": args.max_chars}, args.n, args.seed)
    client = ChatClient(args.endpoint, args.model, api_key=key, params=params, timeout=args.timeout,
                        concurrency=args.concurrency, rate=args.rate)
    bar = _bar(args.n, "annotate") if args.progress else None
    try:
        summary = annotate(args.inputs, args.out, client, template, rule, settings, concurrency=args.concurrency,
                           overwrite=args.overwrite, progress=bar.update if bar else None)
    except Refused as e:
        raise UsageError(f"the server refused a request ({e}): check --endpoint, --model and the API key") from None
    except Exhausted as e:  # every answer received so far is journaled: the rerun asks only for the rest
        print(f"curate quality annotate: {e}; the answers received are kept: rerun the same command to resume",
              file=sys.stderr)
        return 1
    finally:
        if bar:
            bar.close()
    print(f"annotated {summary['documents']} documents into {args.out}/annotations.parquet")
    for k, v in summary.items():
        print(f"  {k}: {_plain(v) if v != {} else 'none'}")
    return 0


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def _bar(total: int | None, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, unit="doc", desc=desc, file=sys.stderr)


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
    if args.quality_command == "annotate":
        return _annotate(args)
    if args.quality_command == "fit":
        return _fit(args)
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
