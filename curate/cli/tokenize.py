"""curate tokenize CORPUS --tokenizer tok.json --out DIR: token shards and their manifest."""

from __future__ import annotations

import os
import sys

from curate.cli.common import add_overwrite, add_progress
from curate.core.errors import UsageError


def add_parser(sub):
    p = sub.add_parser("tokenize", help="tokenize a corpus into token shards for training")
    p.add_argument("inputs", nargs="+", help="corpus: run output, shard directory, file or glob (local or URL)")
    p.add_argument("--tokenizer", required=True, help="tokenizer.json (from `curate tokenizer train`)")
    p.add_argument("--out", required=True, help="output directory (local or URL, e.g. s3://bucket/tokens)")
    p.add_argument("--val-fraction", type=float, default=0.005, help="documents held out for validation")
    p.add_argument(
        "--dtype",
        choices=["uint16", "uint32"],
        default=None,
        help="token dtype (default: uint16 when the vocabulary fits)",
    )
    p.add_argument("--workers", type=int, default=None, help="parallel processes (default: all CPUs)")
    add_progress(p)
    add_overwrite(p)
    p.add_argument("--allow-partial", action="store_true",
                   help="read an unfinished run or mix (no manifest.json) as it is; recorded in the manifest")
    return p


def main(args) -> int:
    from curate.run.executors.local import LocalExecutor
    from curate.tokens.tokenize import format_shares, tokenize

    if args.workers is not None and args.workers < 1:  # checked before `or`: 0 would silently mean all CPUs
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    workers = args.workers or os.cpu_count() or 1
    m = tokenize(
        args.inputs,
        args.tokenizer,
        args.out,
        val_fraction=args.val_fraction,
        dtype=args.dtype,
        executor=LocalExecutor(workers, progress=args.progress),
        overwrite=args.overwrite,
        allow_partial=args.allow_partial,
    )
    for split in ("train", "val"):
        s = m["splits"][split]
        print(f"{split}: {s['docs']:,} documents, {s['tokens']:,} tokens in {len(s['shards'])} shard(s)")
        for src, n in s["tokens_per_source"].items():
            print(f"  {src:<12} {n:>14,}")
    if m["mix_plan"]:
        lines, warnings = format_shares(m)
        print("token shares, planned by the mix vs realized in the shards:")
        print("\n".join("  " + line for line in lines))
        for w in warnings:
            print(w, file=sys.stderr)
    print(f"vocab {m['vocab_size']:,}, {m['dtype']}, eos id {m['eos_id']}; wrote {args.out}/manifest.json")
    return 0
