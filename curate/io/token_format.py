"""The token-shard format `peneira.tokens/2`, in one place: written by `curate tokenize`, read by `train/data.py`.

A token directory holds `manifest.json` and, per split, shards of two files (layout in docs/data-contract.md):

* `SPLIT/part-NNNNN.bin`: the token ids of the shard's documents end to end, little-endian `uint16` or `uint32`
  (the manifest's `dtype`: the smallest that holds every id of the vocabulary);
* `SPLIT/part-NNNNN.idx`: `INDEX_MAGIC`, the document count (uint64), then per document its end offset in tokens
  (int64, cumulative within the shard) and its source (uint16, an index into the shard entry's `sources`).

The manifest's shard entry `{file, index, docs, tokens, sources, tokens_per_source}` fixes both sizes. Its file
names are relative to the token directory and must stay inside it: a manifest naming `../x.bin` or `/etc/x` is
refused (`member`), so a downloaded token directory cannot make the trainer read (or fetch over) other files.

Imports only numpy: `train/data.py` loads it in every rank, where the rest of `curate` is not wanted.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

import numpy as np

MANIFEST = "manifest.json"
FORMAT = "peneira.tokens/2"  # .bin + .idx shards
LEGACY_FORMAT = "peneira.tokens/1"  # Parquet `tokens: list<uint>` + `source` shards, still read by the trainer
INDEX_MAGIC = b"PNRIDX01"
INDEX_HEADER = 16  # magic + uint64 document count
INDEX_BYTES_PER_DOC = 10  # int64 end + uint16 source
DTYPES = {"uint16": np.uint16, "uint32": np.uint32}
MAX_SOURCES = np.iinfo(np.uint16).max + 1  # a shard's source codes are uint16


class TokenDataError(ValueError):
    """A token-shard directory that does not match its manifest or this format (or a tokenizer that does not match)."""


def token_dtype(name: str) -> np.dtype:
    """The little-endian numpy dtype of the manifest's `dtype` name."""
    if name not in DTYPES:
        raise TokenDataError(f"token dtype {name!r} is not one of {sorted(DTYPES)}")
    return np.dtype(DTYPES[name]).newbyteorder("<")


def dtype_for(vocab_size: int) -> str:
    """The smallest token dtype that holds every id below `vocab_size`."""
    return "uint16" if vocab_size <= 2**16 else "uint32"


def fits(vocab_size: int, dtype: str) -> bool:
    return vocab_size - 1 <= np.iinfo(DTYPES[dtype]).max


def index_size(docs: int) -> int:
    """Bytes of the `.idx` file of a shard of `docs` documents."""
    return INDEX_HEADER + INDEX_BYTES_PER_DOC * docs


def encode_index(ends: np.ndarray, codes: np.ndarray) -> bytes:
    """The `.idx` file's bytes for documents ending at `ends` (tokens, cumulative) with source codes `codes`."""
    return (INDEX_MAGIC + np.array([len(ends)], "<u8").tobytes() + np.asarray(ends).astype("<i8").tobytes()
            + np.asarray(codes).astype("<u2").tobytes())


def decode_index(buf: Any, size: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(ends, codes) of an `.idx` file held in `buf` (bytes or a memory map) of `size` bytes, as views of it."""
    if size < INDEX_HEADER or bytes(buf[:8]) != INDEX_MAGIC:
        raise TokenDataError(f"{name}: not a token index (no {INDEX_MAGIC!r} header)")
    n = int(np.frombuffer(buf, "<u8", 1, 8)[0])
    if size != index_size(n):
        raise TokenDataError(f"{name}: {size} bytes, expected {index_size(n)} for {n} documents")
    if n == 0:
        return np.zeros(0, "<i8"), np.zeros(0, "<u2")
    return np.frombuffer(buf, "<i8", n, INDEX_HEADER), np.frombuffer(buf, "<u2", n, INDEX_HEADER + 8 * n)


def shard_entry(split: str, name: str, docs: int, tokens: int, sources: list[str],
                tokens_per_source: dict[str, int]) -> dict[str, Any]:
    """The manifest's entry for shard `name` of `split`."""
    return {"file": f"{split}/{name}.bin", "index": f"{split}/{name}.idx", "docs": docs, "tokens": tokens,
            "sources": sources, "tokens_per_source": tokens_per_source}


def member(name: str, where: str = "manifest") -> str:
    """A file name from a manifest, checked to be a relative path inside the token directory: absolute paths, drive
    letters, backslashes and `..` steps are refused, so the name can be joined to a local directory or a URL alike."""
    if not isinstance(name, str) or not name:
        raise TokenDataError(f"{where}: file name {name!r} is not a non-empty string")
    norm = posixpath.normpath(name)
    if (name.startswith(("/", "\\")) or "\\" in name or ":" in name or Path(name).is_absolute()
            or norm == ".." or norm.startswith("../") or "\0" in name):
        raise TokenDataError(f"{where}: file name {name!r} points outside the token directory; "
                             "a manifest names its files relative to it (e.g. train/part-00000.bin)")
    return norm
