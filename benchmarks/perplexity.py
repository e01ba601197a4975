"""Perplexity throughput: documents/s per core of quality.Perplexity's scoring (curate.models.inference) with a tiny
reference model on real shared web text, length-sorted token-budget batching against naive fixed-size batches in
input order, in the same run; peak RSS. Per core: documents per CPU second of the process, which runs one torch
thread on CPU (so a loaded machine slows the wall clock, not the figure); on a GPU, per wall second.

    .venv/bin/python benchmarks/perplexity.py [--model RUN_OR_HF_FOLDER] [--docs 400] [--device cpu] [--json]

Without --model, a tiny GPT of this project (the `tiny` preset's shape: 2 layers, 128 wide, 4 heads, seq_len 256,
vocabulary 2,048, as `python -m train --config tiny` makes it) is trained for a few steps on the shared clean English
text: speed does not depend on how well it has learnt. One torch thread (per core). The documents are the shared
Common Crawl samples (dolma web_cc), cut to paragraphs-sized pieces of 200-6,000 characters, so lengths vary as a
crawl's do; each document is scored up to 1,024 tokens. Naive: batches of 16 documents in input order, each padded to
its longest row. Rounds interleave the two, median of 3. On a GPU (`--device cuda`): the same, bf16 (benchmarks/gpu.sh).
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "tests"))  # the tests' tiny-model helpers (_models.py)


def documents(n: int) -> list[str]:
    out: list[str] = []
    for f in sorted((SHARED / "text" / "web_cc").glob("*.jsonl.gz")):
        with gzip.open(f, "rt") as fh:
            for line in fh:
                text = json.loads(line)["text"]
                for piece in text.split("\n\n"):
                    while len(piece) > 6000:
                        out.append(piece[:6000])
                        piece = piece[6000:]
                    if len(piece) >= 200:
                        out.append(piece)
    return out[:n]


def reference(work: Path) -> Path:
    from _models import bpe, clean_texts, train_gpt

    texts = clean_texts(SHARED)
    tok = bpe(texts, vocab=2048)
    return train_gpt(texts, tok, work / "ref", steps=20, seq_len=256, n_layer=2, n_head=4, n_embd=128)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="a checkpoint or Hugging Face folder (default: a tiny GPT trained here)")
    ap.add_argument("--docs", type=int, default=400)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-tokens", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--token-budget", type=int, default=None, help="padded tokens per batch (default: the layer's)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import numpy as np
    import torch

    from curate.core.stats import Throughput
    from curate.models import ModelSpec
    from curate.models.inference import TOKEN_BUDGET, get_model

    torch.set_num_threads(1)
    texts = documents(args.docs)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.model or str(reference(Path(tmp)))
        model = get_model(ModelSpec(path, device=args.device, threads=1))
        model.bits_per_byte(texts[:8], args.max_tokens)  # warm-up

        def sorted_run() -> tuple[np.ndarray, Throughput]:
            c = Throughput()
            kw = {"token_budget": args.token_budget} if args.token_budget else {}
            return model.bits_per_byte(texts, args.max_tokens, c, **kw), c

        def naive_run() -> tuple[np.ndarray, Throughput]:
            c, parts = Throughput(), []
            for i in range(0, len(texts), 16):  # one batch of 16 documents' rows, padded to the longest
                parts.append(model.bits_per_byte(texts[i : i + 16], args.max_tokens, c, token_budget=1 << 30, window=16))
            return np.concatenate(parts), c

        times: dict[str, list[float]] = {"sorted": [], "naive": []}  # CPU seconds of this process (one thread)
        walls: dict[str, list[float]] = {"sorted": [], "naive": []}
        counts: dict[str, Throughput] = {}
        scores = {}
        for _ in range(args.rounds):
            for name, fn in (("sorted", sorted_run), ("naive", naive_run)):
                t0, c0 = time.perf_counter(), time.process_time()
                scores[name], counts[name] = fn()
                times[name].append(time.process_time() - c0)
                walls[name].append(time.perf_counter() - t0)
        same = bool(np.allclose(scores["sorted"], scores["naive"], rtol=2e-5, equal_nan=True))
    if args.device != "cpu":
        times = walls
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = {}
    for name in ("sorted", "naive"):
        secs = statistics.median(times[name])
        c = counts[name]
        rows[name] = {"docs_per_s": round(len(texts) / secs, 1), "tokens_per_s": round(c["tokens"] / secs),
                      "padding_share": round(c["padding"] / (c["tokens"] + c["padding"]), 4), "cpu_seconds": round(secs, 3),
                      "wall_seconds": round(statistics.median(walls[name]), 3)}
    result = {"docs": len(texts), "tokens": int(counts["sorted"]["tokens"]), "truncated": int(counts["sorted"]["truncated"]),
              "device": args.device, "threads": 1, "model": args.model or "tiny GPT (2x128, seq 256, vocab 2048)",
              "same_scores": same, "peak_rss_mib": round(rss), **rows,
              "speedup": round(rows["sorted"]["docs_per_s"] / rows["naive"]["docs_per_s"], 2)}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{result['docs']} documents, {result['tokens']:,} tokens scored ({result['truncated']} truncated at "
          f"{args.max_tokens}), {args.device}, 1 thread, peak RSS {result['peak_rss_mib']} MiB, same scores: {same}")
    print("| batching | docs/s | tokens/s | padding |")
    print("|---|---|---|---|")
    budget = args.token_budget or TOKEN_BUDGET.get(args.device.split(":")[0], TOKEN_BUDGET["cuda"])
    result["token_budget"] = budget
    for name, label in (("sorted", f"length-sorted, token budget {budget:,}"), ("naive", "fixed 16 documents, input order")):
        r = rows[name]
        print(f"| {label} | {r['docs_per_s']:,} | {r['tokens_per_s']:,} | {r['padding_share']:.1%} |")
    print(f"speed-up: {result['speedup']}x")


if __name__ == "__main__":
    main()
