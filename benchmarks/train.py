"""Trainer overhead: tokens/s of `train.loop.train` against a bare PyTorch loop over the same model, same run.

    .venv/bin/python benchmarks/train.py [--steps 20] [--rounds 3] [--threads 1]
    .venv/bin/python benchmarks/train.py --muon [--steps 300] [--seeds 0,1,2]

`--muon` compares instead the validation loss at a fixed budget of the trainer's Muon (each block of the fused qkv
and gate_up orthogonalised on its own, weight decay `muon_weight_decay`) with what it replaced (torch.optim.Muon on
each fused matrix whole, sharing AdamW's weight decay of 0.1), on the test suite's small model and real tokens.

Both sides train the tiny config (train/configs/tiny.toml) on real token shards built from ../shared/data: same
model, batch, accumulation and AdamW. The bare loop is what one would write by hand — random windows from an
in-memory token tensor, forward, backward, clip, step — so the difference is what the trainer adds: the loader,
schedule, loss/grad-norm sync, NaN guard, metrics, and (charged against it) its setup and final checkpoint.
Speed is counted in tokens per CPU-second of this process (with one thread, wall time on a shared machine
measures the neighbours, CPU time measures the code); wall-clock numbers are printed too. Rounds alternate A/B
and the median of the per-round ratios is reported. Target: overhead <= 5%.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import train.loop as loop_module  # noqa: E402
from curate.models.gpt import GPT  # noqa: E402
from train.config import load_config  # noqa: E402
from train.data import TokenDataset  # noqa: E402
from train.loop import model_config, train  # noqa: E402
from train.optim import Optimizers, build_optimizer  # noqa: E402

WEB = ROOT.parent / "shared/data/text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"


def bare_loop(cfg, tokens: torch.Tensor, vocab_size: int, steps: int) -> tuple[float, float]:
    """(tokens per CPU-second, tokens per wall-second) of a hand-written loop: the baseline."""
    c0, t0 = time.process_time(), time.perf_counter()
    torch.manual_seed(cfg.seed)
    model = GPT(model_config(cfg, vocab_size))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), weight_decay=cfg.weight_decay)
    accum = cfg.grad_accum(1)
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        for _ in range(accum):
            starts = torch.randint(0, len(tokens) - cfg.seq_len - 1, (cfg.micro_batch,), generator=gen)
            window = torch.stack([tokens[s : s + cfg.seq_len + 1] for s in starts.tolist()])
            loss = model(window[:, :-1], window[:, 1:]) / accum
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
    loss.item()
    n = steps * cfg.batch_tokens
    return n / (time.process_time() - c0), n / (time.perf_counter() - t0)


def trainer(cfg) -> tuple[float, float]:
    """(tokens per CPU-second, tokens per wall-second) of the whole `train()` call, setup and checkpoint included."""
    c0, t0 = time.process_time(), time.perf_counter()
    result = train(cfg, overwrite=True)  # each round into the same directory
    n = result.step * cfg.batch_tokens
    return n / (time.process_time() - c0), n / (time.perf_counter() - t0)


def legacy_muon(model, cfg, device) -> Optimizers:
    """The optimizer before issue 17: torch.optim.Muon on whole fused matrices, with AdamW's weight decay."""
    adamw = build_optimizer(model, dataclasses.replace(cfg, optimizer="adamw"), device).optimizers[0]
    hidden = [p for p in model.get_submodule("blocks").parameters() if p.ndim == 2]
    adamw.param_groups[0]["params"] = [p for p in adamw.param_groups[0]["params"] if all(p is not h for h in hidden)]
    muon = torch.optim.Muon([{"params": hidden, "base_lr": cfg.muon_lr}], lr=cfg.muon_lr,
                            weight_decay=cfg.weight_decay, momentum=cfg.muon_momentum, nesterov=True, ns_steps=5)
    return Optimizers(adamw, muon)


def compare_muon(data: Path, tmp: str, steps: int, seeds: list[int]) -> None:
    """Validation loss after `steps` steps, per seed, of the legacy and the current Muon (two decay settings)."""
    small = {"n_layer": 2, "n_head": 4, "n_embd": 64, "seq_len": 64, "micro_batch": 16, "batch_tokens": 1024}
    variants = {"legacy: fused, wd 0.1": (legacy_muon, 0.01), "per-block, muon wd 0.01": (build_optimizer, 0.01),
                "per-block, muon wd 0": (build_optimizer, 0.0)}
    print(f"small model {small}, {steps} steps, muon_lr 0.02, lr 1e-2, warmup 10, val over 8 batches")
    for name, (build, wd) in variants.items():
        loop_module.build_optimizer = build
        vals = []
        for seed in seeds:
            cfg = load_config("tiny", {**small, "data": str(data), "out": f"{tmp}/muon", "optimizer": "muon",
                                       "steps": steps, "warmup_steps": 10, "lr": 1e-2, "muon_weight_decay": wd,
                                       "seed": seed, "eval_every": steps, "eval_batches": 8, "ckpt_every": 0,
                                       "progress": False, "plots": False, "log_every": steps})
            vals.append(train(cfg, overwrite=True).val_loss)
        print(f"{name:>26}: val loss {' '.join(f'{v:.4f}' for v in vals)}; mean {statistics.mean(vals):.4f}")
    loop_module.build_optimizer = build_optimizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1 is stable on a shared box)")
    parser.add_argument("--muon", action="store_true", help="compare Muon variants' validation loss instead")
    parser.add_argument("--seeds", default="0,1,2", help="--muon: seeds to train each variant with")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from curate.tokens.tokenize import build_token_shards

    with tempfile.TemporaryDirectory() as tmp:
        data = build_token_shards(WEB, Path(tmp) / "tokens", vocab_size=2048)
        if args.muon:
            return compare_muon(data, tmp, args.steps, [int(s) for s in args.seeds.split(",")])
        ds = TokenDataset(data, "train")
        tokens = torch.from_numpy(np.concatenate(ds.chunks).astype(np.int64))
        cfg = load_config("tiny", {"data": str(data), "out": f"{tmp}/run", "steps": args.steps, "warmup_steps": 2,
                                   "eval_every": 0, "ckpt_every": 0, "progress": False, "plots": False})
        print(f"tiny config: {cfg.batch_tokens} tokens/step (micro_batch {cfg.micro_batch} x seq_len {cfg.seq_len} x "
              f"accum {cfg.grad_accum(1)}), {args.steps} steps x {args.rounds} rounds, {args.threads} thread(s)")
        bare_loop(cfg, tokens, ds.vocab_size, 2)  # warm up allocator and kernels
        ratios = []
        for r in range(args.rounds):
            bare_cpu, bare_wall = bare_loop(cfg, tokens, ds.vocab_size, args.steps)
            ours_cpu, ours_wall = trainer(cfg)
            ratios.append(ours_cpu / bare_cpu)
            print(f"round {r + 1}: tokens per CPU-second: bare {bare_cpu:,.0f}, trainer {ours_cpu:,.0f} "
                  f"(ratio {ratios[-1]:.3f}); wall tok/s: bare {bare_wall:,.0f}, trainer {ours_wall:,.0f}")
    ratio = statistics.median(ratios)
    print(f"trainer/bare = {ratio:.3f} (median of {args.rounds} rounds): overhead {100 * (1 - ratio):+.1f}%")


if __name__ == "__main__":
    main()
