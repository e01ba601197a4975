"""Loader benchmark: tokens/s and peak RSS per rank of train.data.Loader, against the Parquet loader it replaced
(`git show BASELINE:train/data.py`, measured in the same run) and against the trainer.

Two parts:

* real text (default): token shards from web_cc + Bosque (2,048-token BPE). The memory-mapped loader and the
  baseline on the same shards (converted to the old Parquet layout), and the tokens/s of a forward+backward+AdamW
  step of the tiny model (train/configs/tiny.toml shapes): the loader must be >= 20x faster than the trainer.
* `--big`: a synthetic corpus of `--tokens` (default 2.1 B) uint16 ids in 8 shards under /tmp (deleted at the end),
  2 sources. Each configuration runs as 2 concurrent rank processes (world size 2) for `--seconds`; each prints
  its tokens/s and peak RSS (ru_maxrss, which includes the 200-300 MiB peak of `import torch`; "torch only" is
  that alone; "RSS growth" is resident memory at the end minus right after `import torch`). The baseline
  decodes every shard into RAM, so it is measured on a `--small-tokens` corpus (50 M).

    .venv/bin/python benchmarks/loader.py --seconds 5
    .venv/bin/python benchmarks/loader.py --big --seconds 15
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _data import ROOT, WEB_AND_PT  # puts the repository first on sys.path (benchmarks/train.py would shadow `train`)

BASELINE = "9df717a"  # the last commit with the Parquet (peneira.tokens/1) loader


def rate(fn, seconds: float) -> float:
    """Calls of fn per second, after one warm-up call."""
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - t0)


def baseline_module(tmp: Path, rev: str):
    """train/data.py as of `rev`, imported under another name."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:train/data.py"], check=True,
                         capture_output=True, text=True).stdout
    path = tmp / "baseline_data.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("baseline_data", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------------------------------------- corpora


def write_manifest(out: Path, shards: list[dict], fmt: str = "peneira.tokens/2") -> None:
    per_source: dict[str, int] = {}
    for s in shards:
        for k, v in s["tokens_per_source"].items():
            per_source[k] = per_source.get(k, 0) + v
    split = {"docs": sum(s["docs"] for s in shards), "tokens": sum(s["tokens"] for s in shards),
             "tokens_per_source": per_source, "shards": shards}
    manifest = {"format": fmt, "tokenizer": {"sha256": "synthetic"}, "vocab_size": 50_304, "dtype": "uint16",
                "eos_id": 0, "splits": {"train": split}}
    (out / "manifest.json").write_text(json.dumps(manifest))


def synthetic_corpus(out: Path, total: int, n_shards: int, seed: int = 0) -> Path:
    """`total` random token ids in `n_shards` shards, documents of ~1,000 tokens ending in EOS (id 0), sources
    alternating by shard; generated and written 16 M tokens at a time."""
    rng = np.random.default_rng(seed)
    shards = []
    for i in range(n_shards):
        n = total // n_shards
        lengths = rng.integers(50, 1950, size=n // 1000 + 2)
        ends = np.cumsum(lengths)
        ends = np.concatenate([ends[ends < n], [n]])
        path = out / "train" / f"part-{i:05d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            for lo in range(0, n, 1 << 24):
                block = rng.integers(1, 50_304, size=min(1 << 24, n - lo), dtype=np.uint16)
                e = ends[(ends > lo) & (ends <= lo + len(block))] - 1 - lo
                block[e] = 0
                block.astype("<u2").tofile(f)
        source = ("web", "books")[i % 2]
        with open(out / "train" / f"part-{i:05d}.idx", "wb") as f:
            f.write(b"PNRIDX01" + np.array([len(ends)], "<u8").tobytes())
            f.write(ends.astype("<i8").tobytes() + np.zeros(len(ends), "<u2").tobytes())
        shards.append({"file": f"train/part-{i:05d}.bin", "index": f"train/part-{i:05d}.idx", "docs": len(ends),
                       "tokens": n, "sources": [source], "tokens_per_source": {source: n}})
    write_manifest(out, shards)
    return out


def legacy_corpus(src: Path, out: Path) -> Path:
    """The same shards as Parquet `tokens: list<uint16>` (the old layout), for the baseline loader."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    m = json.loads((src / "manifest.json").read_text())
    shards = []
    for s in m["splits"]["train"]["shards"]:
        flat = np.fromfile(src / s["file"], dtype="<u2")
        raw = (src / s["index"]).read_bytes()
        n = int.from_bytes(raw[8:16], "little")
        offsets = np.concatenate([[0], np.frombuffer(raw, "<i8", n, 16)]).astype(np.int32)
        src_name = s["sources"][0]
        table = pa.table({"tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat)),
                          "source": pa.array([src_name] * n)})
        (out / "train").mkdir(parents=True, exist_ok=True)
        name = s["file"].replace(".bin", ".parquet")
        pq.write_table(table, out / name, compression="zstd", row_group_size=10_000)
        shards.append({"file": name, "docs": n, "tokens": len(flat), "tokens_per_source": {src_name: len(flat)}})
    write_manifest(out, shards, "peneira.tokens/1")
    return out


# ---------------------------------------------------------------------------------------------- ranks


def vm_rss() -> float:
    """Resident memory now (MiB), from /proc."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def child(args) -> None:
    """One rank: build the dataset and loader, run for --seconds, print tokens/s and peak RSS as JSON."""
    import torch  # noqa: F401 (the trainer has it loaded; its memory is part of every rank's)

    torch_rss, torch_now = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, vm_rss()
    if args.child == "baseline":
        mod = baseline_module(Path(tempfile.mkdtemp()), args.baseline)
    else:
        import train.data as mod
    t0 = time.perf_counter()
    ds = mod.TokenDataset(args.path)
    weights = {s: 1.0 for s in ds.sources} if args.weights else None
    loader = mod.Loader(ds, args.seq_len, args.batch_size, seed=0, rank=args.rank, world_size=2,
                        source_weights=weights)
    setup = time.perf_counter() - t0
    r = rate(loader.next_batch, args.seconds) * loader.tokens_per_batch
    print(json.dumps({"tokens_per_s": r, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "torch_rss_mib": torch_rss, "growth_mib": vm_rss() - torch_now, "setup_s": setup}))


def two_ranks(kind: str, path: Path, args, weights: bool = False) -> list[dict]:
    cmd = [sys.executable, __file__, "--child", kind, "--path", str(path), "--seconds", str(args.seconds),
           "--big-seq-len", str(args.big_seq_len), "--big-batch-size", str(args.big_batch_size),
           "--baseline", args.baseline]
    cmd += ["--weights"] if weights else []
    procs = [subprocess.Popen([*cmd, "--rank", str(r)], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}) for r in (0, 1)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"{kind} rank failed: {outs}")
    return [json.loads(o.strip().splitlines()[-1]) for o in outs]


def big(args) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="peneira-loader-", dir="/tmp"))
    try:
        t0 = time.perf_counter()
        corpus = synthetic_corpus(tmp / "big", int(args.tokens), 8)
        size = sum(f.stat().st_size for f in (tmp / "big").rglob("*"))
        print(f"wrote {int(args.tokens):,} tokens ({size / 2**30:.2f} GiB) in {time.perf_counter() - t0:.0f} s")
        small = synthetic_corpus(tmp / "small", int(args.small_tokens), 4, seed=1)
        legacy = legacy_corpus(small, tmp / "small-v1")
        print(f"seq_len {args.big_seq_len}, micro-batch {args.big_batch_size}, 2 concurrent ranks, "
              f"{args.seconds:g} s each, median of {args.rounds} interleaved rounds")
        runs = [("baseline (Parquet, in RAM)", "baseline", legacy, False, args.small_tokens),
                ("baseline + source weights", "baseline", legacy, True, args.small_tokens),
                ("mmap", "new", small, False, args.small_tokens),
                ("mmap", "new", corpus, False, args.tokens),
                ("mmap + source weights", "new", corpus, True, args.tokens)]
        results: list[list[dict]] = [[] for _ in runs]
        for _ in range(args.rounds):  # interleaved: a busy shared machine slows every configuration alike
            for i, (_, kind, path, weights, _) in enumerate(runs):
                results[i] += two_ranks(kind, path, args, weights)
        print(f"{'loader':<30} {'corpus':>8} {'tokens/s per rank':>18} {'peak RSS per rank':>18} {'torch only':>11} "
              f"{'RSS growth':>11}")
        for (label, _, _, _, n), res in zip(runs, results, strict=True):
            tps = np.median([r["tokens_per_s"] for r in res])
            rss = max(r["rss_mib"] for r in res)
            torch_rss = max(r["torch_rss_mib"] for r in res)
            growth = max(r["growth_mib"] for r in res)
            print(f"{label:<30} {n / 1e9:>7.2f}B {tps / 1e6:>17.2f}M {rss:>14.0f} MiB {torch_rss:>7.0f} MiB "
                  f"{growth:>7.0f} MiB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- real text


def real_text(args) -> None:
    import torch

    from curate.models.gpt import GPT, GPTConfig
    from curate.tokens.tokenize import build_token_shards
    from train.data import Loader, TokenDataset

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        path = build_token_shards([str(f) for f in WEB_AND_PT], Path(tmp, "tokens"), vocab_size=2048)
        legacy = legacy_from(path, Path(tmp, "v1"))
        old = baseline_module(Path(tmp), args.baseline)
        ds, old_ds = TokenDataset(path), old.TokenDataset(legacy)
        for weights in (None, {s: 1.0 for s in ds.sources}):
            label = "" if weights is None else " (source weights)"
            r_old, r_new = [], []
            for _ in range(3):  # interleaved rounds: a busy shared machine slows both alike
                r_old.append(rate(old.Loader(old_ds, args.seq_len, args.batch_size, source_weights=weights).next_batch,
                                  args.seconds / 3))
                r_new.append(rate(Loader(ds, args.seq_len, args.batch_size, source_weights=weights).next_batch,
                                  args.seconds / 3))
            tpb = args.seq_len * args.batch_size
            print(f"{'baseline loader' + label:<40} {np.median(r_old) * tpb:>14,.0f} tokens/s")
            print(f"{'mmap loader' + label:<40} {np.median(r_new) * tpb:>14,.0f} tokens/s  "
                  f"({np.median(r_new) / np.median(r_old):.2f}x)")
            if weights is None:
                loader_rate = np.median(r_new) * tpb

        model = GPT(GPTConfig.preset("tiny", vocab_size=ds.vocab_size, seq_len=args.seq_len))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x, y = Loader(ds, args.seq_len, args.batch_size).next_batch()

        def train_step():
            loss = model(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        train_rate = rate(train_step, args.seconds) * args.batch_size * args.seq_len
    print(f"{'trainer (tiny, fwd+bwd+opt)':<40} {train_rate:>14,.0f} tokens/s  ({args.threads} torch thread(s))")
    print(f"ratio loader/trainer {loader_rate / train_rate:,.1f}x (must be >= 20x)")


def legacy_from(path: Path, out: Path) -> Path:
    """Real token shards in the old Parquet layout (a source per document, as the index says)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    m = json.loads((path / "manifest.json").read_text())
    for info in m["splits"].values():
        for s in info["shards"]:
            flat = np.fromfile(path / s["file"], dtype="<u2")
            raw = (path / s["index"]).read_bytes()
            n = int.from_bytes(raw[8:16], "little")
            offsets = np.concatenate([[0], np.frombuffer(raw, "<i8", n, 16)]).astype(np.int32)
            names = [s["sources"][c] for c in np.frombuffer(raw, "<u2", n, 16 + 8 * n)]
            table = pa.table({"tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat)),
                              "source": pa.array(names)})
            s["file"] = s["file"].replace(".bin", ".parquet")
            (out / s["file"]).parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, out / s["file"], compression="zstd")
    m["format"] = "peneira.tokens/1"
    (out / "manifest.json").write_text(json.dumps(m))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1, help="torch threads for the model (the loader uses one)")
    ap.add_argument("--baseline", default=BASELINE, help="git revision whose train/data.py is the baseline")
    ap.add_argument("--big", action="store_true", help="the synthetic >= 2 B-token corpus instead of real text")
    ap.add_argument("--tokens", type=float, default=2.1e9)
    ap.add_argument("--small-tokens", type=float, default=5e7)
    ap.add_argument("--big-seq-len", type=int, default=1024)
    ap.add_argument("--big-batch-size", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", choices=["baseline", "new"], help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    ap.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--weights", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.seq_len, args.batch_size = args.big_seq_len, args.big_batch_size
        child(args)
    elif args.big:
        big(args)
    else:
        real_text(args)


if __name__ == "__main__":
    main()
