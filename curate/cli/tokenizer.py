"""curate tokenizer train CORPUS --vocab-size N --out tok.json: train a byte-level BPE tokenizer."""

from __future__ import annotations

import sys

from curate.cli.common import add_progress


def add_parser(sub):
    p = sub.add_parser("tokenizer", help="train a byte-level BPE tokenizer on a corpus")
    tsub = p.add_subparsers(dest="tokenizer_command", required=True)
    t = tsub.add_parser("train", help="train on a sample of a corpus (a mix, a run output, shards or JSONL)")
    t.add_argument("inputs", nargs="+", help="corpus: run output, shard directory, file or glob (local or URL)")
    t.add_argument("--vocab-size", type=int, required=True, help="vocabulary size, special tokens included")
    t.add_argument("--out", required=True, help="where to write tokenizer.json (local or URL)")
    t.add_argument("--sample-chars", type=float, default=5e8, help="characters to train on (default 5e8)")
    t.add_argument("--min-frequency", type=int, default=2, help="fewest occurrences for a merge (default 2)")
    t.add_argument("--seed", type=int, default=0, help="picks the sample")
    add_progress(t)
    return p


def main(args) -> int:
    from curate.tokens.tokenize import train_tokenizer

    info = train_tokenizer(
        args.inputs,
        args.vocab_size,
        args.out,
        sample_chars=int(args.sample_chars),
        min_frequency=args.min_frequency,
        seed=args.seed,
        progress=args.progress,
    )
    print(f"trained on {info['docs']:,} documents ({info['chars']:,} characters): vocab {info['vocab_size']:,}")
    short = smaller_vocab(args.vocab_size, info, args.min_frequency)
    if short:
        sys.stderr.write(f"curate tokenizer train: {short}\n")
    print(f"wrote {info['path']} (sha256 {info['sha256']})")
    return 0


def smaller_vocab(asked: int, info: dict, min_frequency: int) -> str | None:
    """One line when the vocabulary came out smaller than asked: BPE stops merging when no pair of tokens occurs
    `min_frequency` times in the sample (merges never cross the pre-tokenizer's word boundaries), which a small
    corpus reaches early; the tokenizer is still written, with the size it has."""
    got = info["vocab_size"]
    if got >= asked:
        return None
    return (f"asked for a vocabulary of {asked:,}, the sample gave {got:,}: no pair of tokens is left that occurs "
            f"--min-frequency ({min_frequency}) times in its {info['chars']:,} characters; train on more text "
            "(a larger corpus or --sample-chars) or lower --min-frequency for more, or ask for the size it has")
