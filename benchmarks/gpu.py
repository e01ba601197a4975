"""Helpers of benchmarks/gpu.sh: a preflight that fails loudly, synthetic tokens, and the tokens/s + MFU summary.

    python benchmarks/gpu.py preflight --nproc N      # exit 1, saying why, unless N CUDA GPUs can train compiled
    python benchmarks/gpu.py synthetic OUT [--tokens 4000000] [--vocab 50257]
    python benchmarks/gpu.py summary METRICS_JSONL LABEL [--skip 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def fail(why: str) -> None:
    print(f"gpu.sh preflight FAILED: {why}", file=sys.stderr)
    sys.exit(1)


def preflight(nproc: int) -> None:
    """Everything the compiled bf16 run needs, checked in seconds instead of failing (or silently running on the
    CPU) minutes into the benchmark: CUDA usable, enough GPUs, bf16, a C compiler and Triton for torch.compile."""
    try:
        import torch
    except ImportError as e:
        fail(f"PyTorch is not importable by {sys.executable} ({e}); rerun with --install or set PYTHON")
    try:
        import train.loop  # noqa: F401  (the trainer's own dependencies: numpy, tqdm, tokenizers, ...)
    except ImportError as e:
        fail(f"the trainer does not import ({e}); rerun with --install")
    if torch.version.cuda is None:
        fail(f"torch {torch.__version__} is built without CUDA; install a CUDA build of PyTorch")
    if not torch.cuda.is_available():
        fail(f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no usable GPU: check the driver "
             f"(nvidia-smi) and CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}")
    if torch.cuda.device_count() < nproc:
        fail(f"--nproc {nproc} but only {torch.cuda.device_count()} GPU(s) are visible")
    from train.metrics import peak_flops

    for i in range(nproc):
        dev = torch.device("cuda", i)
        if not torch.cuda.is_bf16_supported():
            fail(f"{torch.cuda.get_device_name(dev)} has no bf16 support")
        a = torch.randn(1024, 1024, device=dev, dtype=torch.bfloat16)
        ok = torch.allclose((a @ a).float(), a.float() @ a.float(), rtol=0.05, atol=1.0)
        torch.cuda.synchronize(dev)
        if not ok:
            fail(f"a bf16 matmul on {dev} gives wrong results")
        free, total = torch.cuda.mem_get_info(dev)
        peak = peak_flops(dev)
        print(f"{dev}: {torch.cuda.get_device_name(dev)}, {total / 2**30:.0f} GiB ({free / 2**30:.0f} free), "
              + (f"peak bf16 {peak / 1e12:.0f} TFLOP/s" if peak else "peak FLOP/s unknown: MFU will not be reported"))
    cc = os.environ.get("CC") or next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if cc is None:
        fail("no C compiler (cc, gcc or clang; or $CC): Triton needs one to build its launchers for torch.compile")
    try:
        import triton
    except ImportError as e:
        fail(f"triton is not importable ({e}): torch.compile cannot generate GPU kernels")
    try:
        f = torch.compile(lambda x: torch.nn.functional.silu(x) * 2 + 1)
        x = torch.randn(4096, device="cuda")
        if not torch.allclose(f(x), torch.nn.functional.silu(x) * 2 + 1, atol=1e-5):
            fail("a torch.compile'd kernel gives wrong results")
    except Exception as e:  # any toolchain failure, reported in one place
        fail(f"torch.compile does not work here ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
    print(f"preflight ok: torch {torch.__version__}, CUDA {torch.version.cuda}, triton {triton.__version__}, "
          f"compiler {shutil.which(cc) or cc}")


def synthetic(out: Path, tokens: int, vocab: int) -> None:
    """Token shards of uniformly random ids over a `vocab`-token vocabulary (GPT-2's by default, so the LM head has
    the shape speed is usually quoted for). Written by `curate tokenize` itself, through a word-level tokenizer
    with one word per id, so the shards are in whatever format the trainer reads."""
    import numpy as np
    from tokenizers import Tokenizer, models, pre_tokenizers

    from curate.tokens.tokenize import SPECIAL_TOKENS, tokenize

    words = {t: i for i, t in enumerate(SPECIAL_TOKENS)} | {f"w{i}": i for i in range(len(SPECIAL_TOKENS), vocab)}
    tok = Tokenizer(models.WordLevel(words, unk_token=SPECIAL_TOKENS[0]))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens(SPECIAL_TOKENS)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        tok_path, docs = Path(tmp) / "tokenizer.json", Path(tmp) / "docs.jsonl"
        tok.save(str(tok_path))
        doc_len = 4096
        with open(docs, "w") as f:
            for d in range(max(1, tokens // doc_len)):
                ids = rng.integers(len(SPECIAL_TOKENS), vocab, doc_len)
                f.write(json.dumps({"id": f"synthetic-{d}", "text": " ".join(f"w{i}" for i in ids)}) + "\n")
        manifest = tokenize(str(docs), tok_path, out, val_fraction=0.0)
    print(f"synthetic tokens: {manifest['splits']['train']['tokens']:,} uniform ids over {vocab:,} in {out}")


def summary(metrics: Path, label: str, skip: int) -> None:
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line][skip:]
    if not rows:
        fail(f"{metrics} has no steps after the first {skip}: raise --steps")
    tps = statistics.median(r["tokens_per_s"] for r in rows)
    mfu = statistics.median(r["mfu"] for r in rows) if rows[0]["mfu"] is not None else None
    peak = max((r.get("peak_mem_gib") or 0) for r in rows)
    print(f"{label}: {tps:,.0f} tokens/s, "
          + (f"MFU {mfu:.1%}" if mfu is not None else "MFU unknown (GPU not in train/metrics.py PEAK_BF16_FLOPS)")
          + (f", peak memory {peak:.1f} GiB per GPU" if peak else "")
          + f" (median of steps {skip + 1}-{skip + len(rows)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("preflight")
    p.add_argument("--nproc", type=int, default=1)
    p = sub.add_parser("synthetic")
    p.add_argument("out", type=Path)
    p.add_argument("--tokens", type=int, default=4_000_000)
    p.add_argument("--vocab", type=int, default=50257)
    p = sub.add_parser("summary")
    p.add_argument("metrics", type=Path)
    p.add_argument("label")
    p.add_argument("--skip", type=int, default=10)
    args = parser.parse_args()
    if args.command == "preflight":
        preflight(args.nproc)
    elif args.command == "synthetic":
        synthetic(args.out, args.tokens, args.vocab)
    else:
        summary(args.metrics, args.label, args.skip)


if __name__ == "__main__":
    main()
