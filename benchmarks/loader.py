"""Loader throughput vs the trainer's: tokens/s delivered by train.data.Loader against the tokens/s of
a forward+backward+AdamW step of the default tiny model (train/configs/tiny.toml: `tiny` preset,
seq_len 128, micro-batch 16) on the same machine, in the same run. The loader must be >= 20x faster.

Token shards are built from real text (web_cc + Bosque) with a 2,048-token tokenizer.

    .venv/bin/python benchmarks/loader.py --seconds 5
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from _data import WEB_AND_PT as FILES


def rate(fn, seconds: float) -> float:
    """Calls of fn per second, after one warm-up call."""
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - t0)


def main() -> None:
    from curate.tokens.tokenize import build_token_shards
    from train.data import Loader, TokenDataset
    from train.model import GPT, GPTConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1, help="torch threads for the model (the loader uses one)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        path = build_token_shards([str(f) for f in FILES], Path(tmp, "tokens"), vocab_size=2048)
        ds = TokenDataset(path)
        for weights in (None, {s: 1.0 for s in ds.sources}):
            loader = Loader(ds, args.seq_len, args.batch_size, seed=0, source_weights=weights)
            r = rate(loader.next_batch, args.seconds) * loader.tokens_per_batch
            label = "loader" if weights is None else "loader (source weights)"
            print(f"{label:<26} {r:>14,.0f} tokens/s")
            if weights is None:
                loader_rate = r

        model = GPT(GPTConfig.preset("tiny", vocab_size=ds.vocab_size, seq_len=args.seq_len))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x, y = Loader(ds, args.seq_len, args.batch_size).next_batch()

        def train_step():
            loss = model(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        train_rate = rate(train_step, args.seconds) * args.batch_size * args.seq_len
    print(f"{'trainer (tiny, fwd+bwd+opt)':<26} {train_rate:>14,.0f} tokens/s  ({args.threads} torch thread(s))")
    print(f"ratio loader/trainer {loader_rate / train_rate:,.1f}x (must be >= 20x)")


if __name__ == "__main__":
    main()
