"""litdata's optimized chunks, which LitGPT trains on (`litdata.StreamingDataset(..., item_loader=TokensLoader(block_size))`):
every document's ids (int32 arrays, the end-of-document token last) appended as one item each, so `TokensLoader`
serves the split as one flat stream cut into blocks, as `litdata.optimize` writes a pretraining corpus.

Written with litdata's own `BinaryWriter` (the library writing its format: chunk headers, the `no_header_tensor`
serializer, the config), one per task into a private local folder; at `commit` each chunk is published as
`SPLIT/part-NNNNN-chunk-K.bin` (staged, as every format's files) and the task's chunk entries go to the manifest;
`finish` writes `SPLIT/index.json` from them once every task has finished, in shard order. Needs `litdata`
(`pip install -e '.[litdata]'`): one line says so when it is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any

import numpy as np

from curate.core.errors import UsageError
from curate.io import fs
from curate.io.token_format import digest_bytes
from curate.io.writers import atomic_write_text
from curate.tokens.common import naming
from curate.tokens.formats.base import Accounting

CHUNK_BYTES = 1 << 26  # litdata.optimize's usual chunk size for token data (64 MiB)


def _litdata():
    try:
        from litdata.streaming.item_loader import TokensLoader
        from litdata.streaming.writer import BinaryWriter
    except ImportError as e:
        raise UsageError(f"--format litdata needs litdata ({e}): pip install litdata") from None
    return BinaryWriter, TokensLoader


class LitdataWriter(Accounting):
    format = "litdata"

    @classmethod
    def choose_dtype(cls, vocab_size: int, dtype: str | None) -> str:
        _litdata()
        if vocab_size > 2**31:
            raise UsageError(f"vocab size {vocab_size} does not fit LitGPT's int32 tokens")
        return super().choose_dtype(vocab_size, dtype)

    def open(self) -> None:
        BinaryWriter, TokensLoader = _litdata()
        self.tmpdir = tempfile.mkdtemp(prefix=f"{self.name}-litdata-", dir=fs.spool_dir())
        self.writer = BinaryWriter(self.tmpdir, chunk_bytes=CHUNK_BYTES, item_loader=TokensLoader())
        self.items = 0
        self.chunks: list[dict[str, Any]] = []
        self.config: dict[str, Any] | None = None

    def write(self, ids: np.ndarray, lengths: np.ndarray, codes: np.ndarray) -> None:
        start = 0
        for n in lengths.tolist():  # numpy items (`no_header_numpy`): TokensLoader reads them; curate never imports torch
            self.writer.add_item(self.items, ids[start : start + n].astype(np.int32))
            self.items += 1
            start += n

    def close(self) -> None:
        self.writer.done()
        index = [f for f in os.listdir(self.tmpdir) if f.endswith("index.json")]
        if index:
            with open(os.path.join(self.tmpdir, index[0]), encoding="utf-8") as f:
                written = json.load(f)
            self.config = written["config"]
            for k, chunk in enumerate(written["chunks"]):
                suffix = f"-chunk-{k}.bin"
                staged = self.stage(suffix)
                with naming(staged.path):
                    shutil.move(os.path.join(self.tmpdir, chunk["filename"]), staged.tmp)
                with open(staged.tmp, "rb") as f:
                    self.digests[f"{self.split}/{self.name}{suffix}"] = digest_bytes(f.read())
                self.chunks.append({**chunk, "filename": f"{self.name}{suffix}"})
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def abort(self) -> None:
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def entry(self) -> dict[str, Any]:
        return {**super().entry(), "litdata_chunks": self.chunks, "litdata_config": self.config}


def finish(out: str, manifest: dict[str, Any]) -> None:
    """`SPLIT/index.json`: every task's chunks in shard order, with the writers' common config."""
    for split, info in manifest["splits"].items():
        entries = [e for e in info["shards"] if e["litdata_chunks"]]
        if not entries:
            continue
        chunks = [c for e in entries for c in e["litdata_chunks"]]
        path = fs.join(out, split, "index.json")
        with naming(path):
            atomic_write_text(path, json.dumps({"chunks": chunks, "config": entries[0]["litdata_config"]},
                                               sort_keys=True))
