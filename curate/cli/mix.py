"""curate mix --source NAME=PATH:WEIGHT ... --tokens 50M --out DIR: mix sources by weight to a token budget."""

from __future__ import annotations

from curate.cli.common import add_executor, add_overwrite, add_progress, detach, executor_from_args
from curate.core.errors import UsageError
from curate.io import fs


def add_parser(sub):
    p = sub.add_parser("mix", help="mix curated sources by weight (fractions of final tokens) to a token budget")
    p.add_argument(
        "--source",
        action="append",
        required=True,
        metavar="NAME=PATH:WEIGHT",
        help="a source: run output, shard directory, file or glob (local or URL), and its weight (repeatable)",
    )
    p.add_argument("--tokens", required=True, help="total tokens of the mix, e.g. 50M, 1.5B")
    p.add_argument("--max-epochs", type=float, default=4.0, help="most passes over a small source (default 4)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tokenizer", default=None, help="count tokens exactly with this tokenizer.json")
    p.add_argument(
        "--calibration-vocab",
        type=int,
        default=32_000,
        help="without --tokenizer: vocabulary of the reference BPE that measures each source's characters per token "
        "(use the size you will train; default 32000)",
    )
    p.add_argument(
        "--calibration-chars", type=float, default=2e7, help="characters sampled for that measurement (default 2e7)"
    )
    p.add_argument(
        "--chars-per-token",
        type=float,
        default=None,
        help="skip the measurement: count every source as characters / this (the shares then drift by source)",
    )
    p.add_argument("--out", required=True, help="output directory (text shards in data/, manifest.json; or a URL)")
    add_executor(p)
    add_progress(p)
    add_overwrite(p)
    p.add_argument("--allow-partial", action="store_true",
                   help="read an unfinished run or mix (no manifest.json) as it is; recorded in the manifest")
    return p


def main(args) -> int:
    from curate.tokens.mix import format_plan, mix, parse_count, parse_source

    sources = [parse_source(s) for s in args.source]  # every spec is checked before any work
    tokens = parse_count(args.tokens)
    if args.tokenizer and not fs.isfile(args.tokenizer):
        raise UsageError(f"--tokenizer {args.tokenizer}: no such file")
    executor = executor_from_args(args, args.out)  # checks --workers and the engine's options
    if args.detach:
        return detach(args, args.out)
    manifest = mix(
        sources,
        tokens,
        args.out,
        max_epochs=args.max_epochs,
        seed=args.seed,
        chars_per_token=args.chars_per_token,
        tokenizer=args.tokenizer,
        calibration_vocab=args.calibration_vocab,
        calibration_chars=int(args.calibration_chars),
        executor=executor,
        overwrite=args.overwrite,
        allow_partial=args.allow_partial,
    )
    print(format_plan(manifest))
    print(f"wrote {len(manifest['outputs'])} shard(s) to {fs.join(args.out, 'data')}")
    return 0
