"""MosaicML streaming's MDS shards, which LLM Foundry trains on (`StreamingTextDataset`, `streaming.StreamingDataset`):
one sample per document, columns `tokens` (`ndarray:int32`, the convention of LLM Foundry's own
`convert_dataset_hf.py --concat_tokens` and of its readers) and `source` (`str`).

* `SPLIT/part-NNNNN.KKKKK.mds`: a shard as `streaming.MDSWriter` lays it out (format version 2): the sample count
  (uint32), the sample offsets (uint32, n + 1), the writer's configuration as JSON, then per sample the sizes of its
  variable columns (uint32 each, in column-name order) and the columns' bytes (`str`: UTF-8; `ndarray:int32`: one
  byte `ndim << 2 | shape dtype`, the shape, then the values). A shard is cut before it passes `SIZE_LIMIT` bytes
  (MDSWriter's default, 64 MiB), so a task holds at most one shard's samples.
* `SPLIT/index.json`: every shard's entry, in shard order, written once every task has finished (`finish`).

Written here rather than through `streaming.MDSWriter` because mosaicml-streaming 0.10 requires xxhash<4 and
transformers (which moves tokenizers back), so curate cannot depend on it; the tests read our output with
`streaming.StreamingDataset` wherever it is installed, which is what checks this layout.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from curate.io import fs
from curate.io.writers import atomic_write_text
from curate.tokens.common import naming
from curate.tokens.formats.base import Accounting

SIZE_LIMIT = 1 << 26
COLUMNS = {"source": "str", "tokens": "ndarray:int32"}  # sorted by name, as MDSWriter orders them
CONFIG = {"version": 2, "format": "mds", "compression": None, "hashes": [], "size_limit": SIZE_LIMIT,
          "column_names": list(COLUMNS), "column_encodings": list(COLUMNS.values()), "column_sizes": [None, None]}
CONFIG_BYTES = json.dumps(CONFIG, sort_keys=True).encode()
_SHAPE_DTYPES = ((1 << 8, "<u1", 0), (1 << 16, "<u2", 1), (1 << 32, "<u4", 2))


def encode_sample(ids: np.ndarray, source: bytes) -> bytes:
    """One document as MDS sample bytes: the column sizes, then `source` and `tokens` (int32, dynamic shape)."""
    n = len(ids)
    shape_dtype, code = next((d, c) for limit, d, c in _SHAPE_DTYPES if n < limit) if n < 1 << 32 else ("<u8", 3)
    tokens = bytes([(1 << 2) | code]) + np.array([n], shape_dtype).tobytes() + ids.astype("<i4").tobytes()
    return np.array([len(source), len(tokens)], "<u4").tobytes() + source + tokens


class MdsWriter(Accounting):
    format = "mds"
    dtypes = ("uint16", "uint32")  # what the manifest records; the `tokens` column is int32 whatever it is

    @classmethod
    def choose_dtype(cls, vocab_size: int, dtype: str | None) -> str:
        if vocab_size > 2**31:
            from curate.core.errors import UsageError

            raise UsageError(f"vocab size {vocab_size} does not fit LLM Foundry's int32 tokens")
        return super().choose_dtype(vocab_size, dtype)

    def open(self) -> None:
        self.samples: list[bytes] = []
        self.size = 0
        self.shards: list[dict[str, Any]] = []

    def write(self, ids: np.ndarray, lengths: np.ndarray, codes: np.ndarray) -> None:
        names = [s.encode() for s in self.sources]
        start = 0
        for n, c in zip(lengths.tolist(), codes.tolist(), strict=True):
            sample = encode_sample(ids[start : start + n], names[c])
            start += n
            if self.samples and self.size + len(sample) + 4 > SIZE_LIMIT - 8 - len(CONFIG_BYTES):
                self.flush()
            self.samples.append(sample)
            self.size += len(sample) + 4

    def flush(self) -> None:
        if not self.samples:
            return
        n = len(self.samples)
        sizes = np.array([0] + [len(s) for s in self.samples], np.int64)
        offsets = (np.cumsum(sizes) + 4 + 4 * (n + 1) + len(CONFIG_BYTES)).astype("<u4")
        data = np.array([n], "<u4").tobytes() + offsets.tobytes() + CONFIG_BYTES + b"".join(self.samples)
        basename = f"{self.name}.{len(self.shards):05d}.mds"
        self.write_small(basename.removeprefix(self.name), data)
        self.shards.append({"samples": n, "raw_data": {"basename": basename, "bytes": len(data), "hashes": {}},
                            "zip_data": None, **CONFIG})
        self.samples, self.size = [], 0

    def close(self) -> None:
        self.flush()

    def entry(self) -> dict[str, Any]:
        return {**super().entry(), "mds_shards": self.shards}


def finish(out: str, manifest: dict[str, Any]) -> None:
    """`SPLIT/index.json` of every split: the shard entries of all tasks, in shard order (MDS version 2)."""
    for split, info in manifest["splits"].items():
        shards = [s for entry in info["shards"] for s in entry["mds_shards"]]
        path = fs.join(out, split, "index.json")
        with naming(path):
            atomic_write_text(path, json.dumps({"version": 2, "shards": shards}, sort_keys=True))
