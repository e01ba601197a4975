"""What verifying token shards at open costs (issue 29, mechanism 5): `TokenDataset(path)` with and without
`verify`, on a page cache that holds the shards ("warm") and on one that was told to drop them ("cold":
`posix_fadvise(DONTNEED)` on every shard file first, which needs no privileges).

Writes `--tokens` random uint16 ids (documents of 50-1,950 tokens) in `--shards` shards, with the manifest
`curate tokenize` writes (checksums and largest id per shard), under --dir (default: a temporary folder on the
same disk as /tmp), then times each way of opening `--rounds` times and prints the median.

    .venv/bin/python benchmarks/token_verify.py --tokens 1e9 --shards 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _data import ROOT

sys.path.insert(0, str(ROOT))


def corpus(out: Path, total: int, n_shards: int, seed: int = 0) -> list[Path]:
    from curate.io.token_format import ShardDigest, digest_bytes, encode_index, shard_entry

    rng = np.random.default_rng(seed)
    shards, files = [], []
    for i in range(n_shards):
        n = total // n_shards
        lengths = rng.integers(50, 1950, size=n // 1000 + 2)
        ends = np.cumsum(lengths)
        ends = np.concatenate([ends[ends < n], [n]])
        path = out / "train" / f"part-{i:05d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        digest = ShardDigest()
        with open(path, "wb") as f:
            for lo in range(0, n, 1 << 24):
                block = rng.integers(1, 50_304, size=min(1 << 24, n - lo), dtype=np.uint16)
                block[ends[(ends > lo) & (ends <= lo + len(block))] - 1 - lo] = 0
                block = block.astype("<u2")
                digest.update(block)
                block.tofile(f)
        index = encode_index(ends, np.zeros(len(ends), np.uint16))
        (out / "train" / f"part-{i:05d}.idx").write_bytes(index)
        shards.append(shard_entry("train", f"part-{i:05d}", len(ends), n, ["web"], {"web": n}, digest.max_id,
                                  {"file": digest.hexdigest(), "index": digest_bytes(index)}))
        files += [path, out / "train" / f"part-{i:05d}.idx"]
    split = {"docs": sum(s["docs"] for s in shards), "tokens": sum(s["tokens"] for s in shards),
             "tokens_per_source": {"web": sum(s["tokens"] for s in shards)}, "shards": shards}
    manifest = {"format": "peneira.tokens/2", "tokenizer": {"sha256": "synthetic"}, "vocab_size": 50_304,
                "dtype": "uint16", "eos_id": 0, "splits": {"train": split}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    return files


def drop_cache(files: list[Path]) -> None:
    for p in files:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=float, default=2.5e8)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    from train.data import TokenDataset

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        out = Path(tmp)
        t = time.perf_counter()
        files = corpus(out, int(args.tokens), args.shards)
        size = sum(p.stat().st_size for p in files)
        print(f"{int(args.tokens):,} tokens, {args.shards} shards, {size / 2**30:.2f} GiB, written in "
              f"{time.perf_counter() - t:.0f} s")
        for cache in ("warm", "cold"):
            for verify in (False, True):
                times = []
                for _ in range(args.rounds):
                    if cache == "cold":
                        drop_cache(files)
                    else:
                        TokenDataset(out, verify=True)  # reads every file: in the page cache now
                    t = time.perf_counter()
                    TokenDataset(out, verify=verify)
                    times.append(time.perf_counter() - t)
                med = statistics.median(times)
                rate = f"{size / med / 2**30:.2f} GiB/s" if verify else ""
                print(f"{cache:>4} cache, verify={verify!s:5}: {med:8.3f} s  {rate}")


if __name__ == "__main__":
    main()
