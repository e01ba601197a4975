"""Tokenize throughput and output size per `curate tokenize --format`, and the reading speed of each trainer's own
loader on our output (issue 33). One worker (one core); the corpus is the shared web_cc shard plus Bosque, copied
`--copies` times (new ids) into Parquet files in a temporary folder.

    .venv/bin/python benchmarks/token_formats.py [--repeat 3] [--vocab 8192] [--copies 8]

Prints one Markdown table (docs/benchmarks.md, "Token formats"). Read speeds are for a full pass over the train split
with the library's documented reader: Megatron-Core `IndexedDataset[i]` per document, datatrove
`DatatroveFolderDataset[i]` per 2,049-token window, `datasets.load_dataset("parquet")` then one pass over
`input_ids` (numpy format), MosaicML `streaming.StreamingDataset[i]` per document, litdata
`StreamingDataset(TokensLoader(2049))[i]` per block, and ours, `train.data.TokenDataset.windows` over 2,049-token
windows.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("PENEIRA_SHARED_DATA", ROOT.parent / "shared" / "data"))
INPUTS = [SHARED / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz",
          SHARED / "text/pt/bosque_docs.jsonl"]
FORMATS = ["peneira", "megatron", "nanotron", "mds", "litdata", "hf"]
SEQ = 2048


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and "_done" not in f.parts
               and f.name not in ("manifest.json", "tokenizer.json"))


def _stub_torchvision() -> None:
    """`import streaming` imports torchvision, which does not load beside this CPU build of torch; the text reader
    never uses it (the same stand-in as tests/test_token_formats.py)."""
    import importlib.machinery
    import types

    try:
        import torchvision  # noqa: F401
        return
    except Exception:
        pass
    mods = {n: types.ModuleType(n) for n in ("torchvision", "torchvision.datasets", "torchvision.transforms",
                                             "torchvision.transforms.functional")}
    mods["torchvision.datasets"].VisionDataset = type("VisionDataset", (), {})
    mods["torchvision.transforms.functional"].to_tensor = None
    for n, m in mods.items():
        m.__spec__ = importlib.machinery.ModuleSpec(n, None)
        sys.modules[n] = m


def _corpus(tmp: Path, copies: int) -> list[str]:
    """The shared web and Portuguese documents, `copies` times over with new ids, as Parquet inputs (one per copy)."""
    import gzip
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = []
    for path in INPUTS:
        with (gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")) as f:
            src = "web" if "web_cc" in str(path) else "pt"
            docs += [(json.loads(line)["text"], src) for line in f]
    files = []
    for c in range(copies):
        f = tmp / f"in-{c}.parquet"
        pq.write_table(pa.table({"id": [f"{c}-{i}" for i in range(len(docs))], "text": [d[0] for d in docs],
                                 "source": [d[1] for d in docs]}), f)
        files.append(str(f))
    return files


def _read(fmt: str, out: Path, m: dict) -> float:
    """Seconds for one pass of the trainer's own reader over the train split."""
    import numpy as np

    t = time.perf_counter()
    shards = m["splits"]["train"]["shards"]
    if fmt == "peneira":
        from train.data import TokenDataset

        ds = TokenDataset(out, verify=False)
        starts = np.arange(0, ds.num_tokens - SEQ - 1, SEQ)
        for i in range(0, len(starts), 64):
            ds.windows(starts[i : i + 64], SEQ + 1)
    elif fmt == "megatron":
        from megatron.core.datasets.indexed_dataset import IndexedDataset

        for s in shards:
            ds = IndexedDataset(str(out / s["file"]).removesuffix(".bin"))
            for i in range(len(ds)):
                ds[i]
    elif fmt == "nanotron":
        from datatrove.utils.dataset import DatatroveFolderDataset

        ds = DatatroveFolderDataset(str(out / "train"), seq_len=SEQ, token_size=2 if m["dtype"] == "uint16" else 4)
        for i in range(len(ds)):
            ds[i]
    elif fmt == "mds":
        _stub_torchvision()
        from streaming import StreamingDataset

        ds = StreamingDataset(local=str(out / "train"), shuffle=False, batch_size=1)
        for i in range(ds.num_samples):
            ds[i]
    elif fmt == "litdata":
        from litdata import StreamingDataset
        from litdata.streaming.item_loader import TokensLoader

        ds = StreamingDataset(str(out / "train"), item_loader=TokensLoader(block_size=SEQ + 1), shuffle=False)
        for i in range(len(ds)):
            ds[i]
    elif fmt == "hf":
        import datasets

        datasets.disable_progress_bars()
        ds = datasets.load_dataset("parquet", data_files=str(out / "train" / "*.parquet"), split="train",
                                   cache_dir=str(out.parent / f"hf-cache-{time.time_ns()}")).with_format("numpy")
        for _ in ds.iter(batch_size=1000):
            pass
    return time.perf_counter() - t


def main() -> None:
    warnings.simplefilter("ignore")
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--copies", type=int, default=8)
    args = ap.parse_args()
    from curate.run.executors.local import LocalExecutor
    from curate.tokens.tokenize import tokenize, train_tokenizer

    tmp = Path(tempfile.mkdtemp(prefix="fmt-bench-"))
    try:
        inputs = _corpus(tmp, args.copies)
        train_tokenizer(inputs[:1], args.vocab, tmp / "tok.json", sample_chars=5_000_000)
        rows = {}
        for rep in range(args.repeat):
            for fmt in FORMATS:  # alternating formats, so a busy moment of the shared VM hits them all
                out = tmp / f"{fmt}-{rep}"
                t = time.perf_counter()
                m = tokenize(inputs, tmp / "tok.json", out, val_fraction=0.005,
                             executor=LocalExecutor(1, progress=False), format=fmt)
                secs = time.perf_counter() - t
                r = rows.setdefault(fmt, {"tok": [], "read": [], "tokens": m["splits"]["train"]["tokens"]
                                          + m["splits"]["val"]["tokens"], "size": _size(out)})
                r["tok"].append(secs)
                r["read"].append(_read(fmt, out, m))
                shutil.rmtree(out) if rep else None
        base = rows["peneira"]["size"]
        print(f"{rows['peneira']['tokens']:,} tokens in {len(inputs)} files (vocab {args.vocab}), median of "
              f"{args.repeat}, one worker\n")
        print("| format | tokenize tokens/s | output bytes | vs peneira | trainer's reader, train split | reader tokens/s |")
        print("|---|---|---|---|---|---|")
        for fmt, r in rows.items():
            tok_s, read_s = statistics.median(r["tok"]), statistics.median(r["read"])
            print(f"| {fmt} | {r['tokens'] / tok_s:,.0f} | {r['size']:,} | {r['size'] / base:.2f}x | "
                  f"{read_s:.3f} s | {r['tokens'] / read_s:,.0f} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
