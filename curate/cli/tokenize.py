"""curate tokenize CORPUS --tokenizer tok.json --out DIR: token shards and their manifest."""

from __future__ import annotations

import sys

from curate.cli.common import add_executor, add_overwrite, add_progress, detach, executor_from_args


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
    add_executor(p)
    add_progress(p)
    add_overwrite(p)
    p.add_argument("--format", default="peneira",
                   choices=["peneira", "megatron", "nanotron", "mds", "litdata", "hf"],
                   help="the trainer's format: peneira (python -m train), megatron (Megatron-LM/NeMo .bin+.idx), "
                        "nanotron (datatrove .ds), mds (MosaicML streaming, LLM Foundry), litdata (LitGPT), "
                        "hf (Parquet input_ids); "
                        "see docs/tokens.md")
    p.add_argument("--allow-partial", action="store_true",
                   help="read an unfinished run or mix (no manifest.json) as it is; recorded in the manifest")
    return p


def main(args) -> int:
    from curate.tokens.tokenize import format_shares, tokenize

    executor = executor_from_args(args, args.out)  # checks --workers and the engine's options
    if args.detach:
        return detach(args, args.out)
    m = tokenize(
        args.inputs,
        args.tokenizer,
        args.out,
        val_fraction=args.val_fraction,
        dtype=args.dtype,
        executor=executor,
        overwrite=args.overwrite,
        allow_partial=args.allow_partial,
        format=args.format,
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
    if args.format == "megatron":
        from curate.tokens.formats.megatron import megatron_args

        print(f"Megatron-LM: {megatron_args(args.out)}  (every shard, weighted by its tokens; eod = id {m['eos_id']})")
    return 0
