"""The token-shard format `peneira.tokens/2`, in one place: written by `curate tokenize`, read by `train/data.py`.

A token directory holds `manifest.json` and, per split, shards of two files (layout in docs/data-contract.md):

* `SPLIT/part-NNNNN.bin`: the token ids of the shard's documents end to end, little-endian `uint16` or `uint32`
  (the manifest's `dtype`: the smallest that holds every id of the vocabulary);
* `SPLIT/part-NNNNN.idx`: `INDEX_MAGIC`, the document count (uint64), then per document its end offset in tokens
  (int64, cumulative within the shard) and its source (uint16, an index into the shard entry's `sources`).

The manifest's shard entry `{file, index, docs, tokens, sources, tokens_per_source, max_id, xxh3_64}` fixes both
sizes, the largest token id and a checksum of each file. Its file names are relative to the token directory and
must stay inside it: a manifest naming `../x.bin` or `/etc/x` is refused (`member`), so a downloaded token directory
cannot make the trainer read (or fetch over) other files.

Validation (issue 29, mechanism 5), all of it raising `TokenDataError` with one line that names the file and says
what to do:

* `parse_manifest` / `check_manifest`: a manifest that is not JSON (cut short, damaged) or lacks a key the loader
  needs, instead of a bare `JSONDecodeError` or `KeyError`;
* `check_index`: a shard's source codes point into its `sources`, its document ends never go back;
* `ShardDigest` (written by `curate tokenize`) / `verify_shard` (at open): the xxh3-64 of the `.bin` and the
  `.idx` and the `.bin`'s largest id, which must be below the vocabulary;
* `check_ids`: the ids of a batch are below the vocabulary (every batch: a cheap max over ids already in memory).

Imports only numpy (and xxhash, a C extension, when checksums are verified): `train/data.py` loads it in every rank,
where the rest of `curate` is not wanted.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

MANIFEST = "manifest.json"
FORMAT = "peneira.tokens/2"  # .bin + .idx shards
LEGACY_FORMAT = "peneira.tokens/1"  # Parquet `tokens: list<uint>` + `source` shards, still read by the trainer
INDEX_MAGIC = b"PNRIDX01"
INDEX_HEADER = 16  # magic + uint64 document count
INDEX_BYTES_PER_DOC = 10  # int64 end + uint16 source
DTYPES = {"uint16": np.uint16, "uint32": np.uint32, "int32": np.int32}  # int32: Megatron's for >= 65,500 ids
MAX_SOURCES = np.iinfo(np.uint16).max + 1  # a shard's source codes are uint16
CHECKSUM = "xxh3_64"  # the shard entry's key for {"file": hex digest of the .bin, "index": hex digest of the .idx}
VERIFY_BLOCK = 1 << 24  # bytes read at a time when a shard is verified


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


MEGATRON_FORMAT = "megatron.indexed/1"  # `curate tokenize --format megatron`: Megatron-Core's .bin + .idx
MEGATRON_INDEX_HEADER = b"MMIDIDX\x00\x00"
MEGATRON_DTYPE_CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float64": 6, "float32": 7,
                        "uint16": 8}


def decode_megatron_index(buf: Any, size: int, dtype: np.dtype, name: str) -> np.ndarray:
    """The document ends (tokens, cumulative) of a Megatron-Core `.idx` held in `buf`, checked the way Megatron's
    `_IndexReader` reads it (header, version 1, dtype code, counts) and beyond it: the sizes add up, each
    sequence pointer is where the previous sequence ends, and there is one document per sequence (what
    `curate tokenize` writes). One `TokenDataError` naming the file otherwise."""
    head = len(MEGATRON_INDEX_HEADER) + 8 + 1 + 16
    if size < head or bytes(buf[:9]) != MEGATRON_INDEX_HEADER:
        raise TokenDataError(f"{name}: not a Megatron index (no {MEGATRON_INDEX_HEADER!r} header)")
    version = int(np.frombuffer(buf, "<u8", 1, 9)[0])
    code = int(np.frombuffer(buf, "<u1", 1, 17)[0])
    n, docs = (int(x) for x in np.frombuffer(buf, "<u8", 2, 18))
    if version != 1 or MEGATRON_DTYPE_CODES.get(dtype.name) != code:
        raise TokenDataError(f"{name}: Megatron index version {version}, dtype code {code}; expected 1 and "
                             f"{MEGATRON_DTYPE_CODES.get(dtype.name)} ({dtype.name}); {RETOKENIZE}")
    if docs != n + 1 or size != head + 4 * n + 8 * n + 8 * docs:
        raise TokenDataError(f"{name}: {size} bytes for {n} sequences and {docs} document indices: the index is "
                             f"damaged or cut short; {RETOKENIZE}")
    lengths = np.frombuffer(buf, "<i4", n, head).astype(np.int64)
    pointers = np.frombuffer(buf, "<i8", n, head + 4 * n)
    doc_index = np.frombuffer(buf, "<i8", docs, head + 12 * n)
    ends = np.cumsum(lengths)
    if (lengths < 0).any() or (n and (pointers[0] != 0 or (pointers[1:] != ends[:-1] * dtype.itemsize).any())):
        raise TokenDataError(f"{name}: sequence lengths and pointers disagree: the index is damaged; {RETOKENIZE}")
    if (doc_index != np.arange(docs)).any():
        raise TokenDataError(f"{name}: documents of several sequences: not written by `curate tokenize`")
    return ends


def shard_entry(split: str, name: str, docs: int, tokens: int, sources: list[str],
                tokens_per_source: dict[str, int], max_id: int, checksums: dict[str, str]) -> dict[str, Any]:
    """The manifest's entry for shard `name` of `split`; `checksums` {"file": …, "index": …} (`ShardDigest`)."""
    return {"file": f"{split}/{name}.bin", "index": f"{split}/{name}.idx", "docs": docs, "tokens": tokens,
            "sources": sources, "tokens_per_source": tokens_per_source, "max_id": max_id, CHECKSUM: checksums}


class ShardDigest:
    """The checksum and largest id of a `.bin` as it is written, block by block (`update`), so that the writer
    never reads its shard back."""

    def __init__(self):
        import xxhash

        self.hash = xxhash.xxh3_64()
        self.max_id = -1

    def update(self, ids: np.ndarray) -> None:
        """Ids about to be appended to the `.bin`, in the file's dtype and byte order."""
        if len(ids):
            self.hash.update(memoryview(np.ascontiguousarray(ids)).cast("B"))
            self.max_id = max(self.max_id, int(ids.max()))

    def hexdigest(self) -> str:
        return self.hash.hexdigest()


def digest_bytes(data: bytes) -> str:
    """The checksum of a small file held in memory (an `.idx`)."""
    import xxhash

    return xxhash.xxh3_64_hexdigest(data)


# ---------------------------------------------------------------------------------------------- validation

RETOKENIZE = "re-run `curate tokenize` (with --overwrite, or into a new --out) to write it again"


def parse_manifest(raw: bytes, where: str) -> dict[str, Any]:
    """A manifest's JSON, or one line naming the file when it is not JSON (cut short, damaged)."""
    try:
        m = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as e:
        raise TokenDataError(f"{where}: not valid JSON ({e}): the file is damaged or was cut short; "
                             f"{RETOKENIZE}") from None
    if not isinstance(m, dict):
        raise TokenDataError(f"{where}: a JSON {type(m).__name__}, not a manifest object; {RETOKENIZE}")
    return m


def _need(obj: Any, key: str, kind: type, where: str, path: str) -> Any:
    """`obj[key]`, which must be a `kind` (a bool is no int here); else one line naming the key and the file."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        got = "missing" if not isinstance(obj, dict) or key not in obj else f"a {type(value).__name__}, {value!r:.40}"
        raise TokenDataError(f"{where}: {path}{key} is {got}; the manifest is incomplete or was not written by "
                             f"`curate tokenize`: {RETOKENIZE}")
    return value


def check_manifest(m: dict[str, Any], where: str) -> None:
    """Every key the loader reads, with its type, present in a token manifest (`format` already checked): one line
    naming the first that is not, never a `KeyError` mid-way."""
    _need(m, "tokenizer", dict, where, "")
    _need(m["tokenizer"], "sha256", str, where, "tokenizer.")
    for key in ("vocab_size", "eos_id"):
        _need(m, key, int, where, "")
    _need(m, "dtype", str, where, "")
    token_dtype(m["dtype"])
    if not 0 <= m["eos_id"] < m["vocab_size"]:
        raise TokenDataError(f"{where}: eos_id {m['eos_id']} is outside the vocabulary of {m['vocab_size']}; "
                             f"{RETOKENIZE}")
    splits = _need(m, "splits", dict, where, "")
    legacy = m.get("format") == LEGACY_FORMAT
    for name, split in splits.items():
        at = f"splits.{name}."
        _need(split, "tokens", int, where, at)
        _need(split, "tokens_per_source", dict, where, at)
        for i, shard in enumerate(_need(split, "shards", list, where, at)):
            sat = f"{at}shards[{i}]."
            _need(shard, "file", str, where, sat)
            _need(shard, "tokens", int, where, sat)
            if legacy:
                continue
            _need(shard, "index", str, where, sat)
            _need(shard, "docs", int, where, sat)
            sources = _need(shard, "sources", list, where, sat)
            if not all(isinstance(s, str) for s in sources):
                raise TokenDataError(f"{where}: {sat}sources holds a non-string; {RETOKENIZE}")
            if "max_id" in shard and (not isinstance(shard["max_id"], int) or shard["max_id"] >= m["vocab_size"]):
                raise TokenDataError(f"{where}: {sat}max_id {shard['max_id']!r} is not an id below the vocabulary "
                                     f"of {m['vocab_size']}: the shard {shard['file']} holds ids the model has no "
                                     f"embedding for; {RETOKENIZE}")


def has_checksums(m: dict[str, Any]) -> bool:
    """Whether every shard of a `peneira.tokens/2` manifest carries its checksums and largest id (written since
    issue 29); older manifests load without them (see `train.data.TokenDataset`)."""
    return all(CHECKSUM in s and "max_id" in s for split in m["splits"].values() for s in split["shards"])


def check_index(ends: np.ndarray, codes: np.ndarray, n_sources: int, where: str) -> None:
    """A shard's index read from disk: its source codes point into the shard's `sources` and its document ends
    never go back (each document is a non-negative number of tokens). O(documents): the index is 10 bytes a
    document against thousands of bytes of tokens."""
    if len(codes) and int(codes.max()) >= n_sources:
        i = int(np.argmax(codes >= n_sources))
        raise TokenDataError(f"{where}: document {i} has source code {int(codes[i])}, but the shard lists "
                             f"{n_sources} source(s): the index is damaged; {RETOKENIZE}")
    if len(ends) and (int(ends[0]) < 0 or (len(ends) > 1 and bool((np.diff(ends) < 0).any()))):
        raise TokenDataError(f"{where}: document ends go backwards: the index is damaged; {RETOKENIZE}")


def verify_shard(bin_path: str | Path, idx_path: str | Path, entry: dict[str, Any], vocab_size: int,
                 dtype: np.dtype) -> None:
    """Read a shard's two files once: their xxh3-64 must equal the manifest's and the `.bin`'s largest id must be
    below the vocabulary. I/O bound (xxh3 and max run at ~20 GB/s a core; benchmarks in docs/tokens.md)."""
    import xxhash

    sums = entry[CHECKSUM]
    for key, path in (("file", bin_path), ("index", idx_path)):
        h = xxhash.xxh3_64()
        top = -1
        buf = np.empty(VERIFY_BLOCK, np.uint8)
        with open(path, "rb", buffering=0) as f:
            while n := f.readinto(buf):
                block = buf[:n]
                h.update(block)
                if key == "file" and n >= dtype.itemsize:
                    top = max(top, int(block[: n - n % dtype.itemsize].view(dtype).max()))
        if h.hexdigest() != sums.get(key):
            raise TokenDataError(f"{path}: checksum {h.hexdigest()} is not the manifest's {sums.get(key)}: the file "
                                 f"was changed or damaged after `curate tokenize` wrote it; {RETOKENIZE}")
        if key == "file" and top >= vocab_size:
            raise TokenDataError(f"{path}: holds token id {top}, outside the vocabulary of {vocab_size}; {RETOKENIZE}")


def verify_shards(files: list[tuple[Any, Any, dict[str, Any]]], vocab_size: int, dtype: np.dtype,
                  threads: int = 4) -> None:
    """`verify_shard` for every (bin path, idx path, manifest entry), a few at a time (the reads overlap; the
    first failure is raised)."""
    if len(files) <= 1 or threads <= 1:
        for b, i, e in files:
            verify_shard(b, i, e, vocab_size, dtype)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(threads, len(files))) as pool:
        for f in [pool.submit(verify_shard, b, i, e, vocab_size, dtype) for b, i, e in files]:
            f.result()


_WARNED: set[str] = set()


def check_contents(m: dict[str, Any], location: str, files: list[tuple[Any, Any, dict[str, Any]]],
                   verify: bool | None = None) -> None:
    """At open: the (bin, idx, entry) `files` of a split read once against the manifest's checksums and largest ids
    (`verify`; default: on unless the environment says PENEIRA_VERIFY_TOKENS=0). A `peneira.tokens/2` manifest
    written before shards carried them is loaded as before, with one warning on stderr."""
    import os
    import sys

    if m.get("format") not in (FORMAT, MEGATRON_FORMAT):
        return
    if not has_checksums(m):
        message = (f"{location}: token shards written before they carried checksums (issue 29): loaded without "
                   "verifying them; re-run `curate tokenize` to add them")
        if message not in _WARNED:
            _WARNED.add(message)
            print(f"warning: {message}", file=sys.stderr)
        return
    if verify is None:
        verify = os.environ.get("PENEIRA_VERIFY_TOKENS", "1") != "0"
    if verify:
        verify_shards(files, m["vocab_size"], token_dtype(m["dtype"]))


def check_ids(raw: np.ndarray, vocab_size: int, where: Callable[[int], str]) -> None:
    """The ids of a batch (rows of windows) are below the vocabulary; else one line naming where the first bad id
    lies (`where(row)`), before it reaches an embedding (an `IndexError`, or a device-side assert on CUDA)."""
    if raw.size and int(raw.max()) >= vocab_size:
        row = int(np.argmax((raw >= vocab_size).any(axis=-1))) if raw.ndim > 1 else 0
        bad = int(raw.reshape(raw.shape[0], -1)[row].max()) if raw.ndim > 1 else int(raw.max())
        raise TokenDataError(f"{where(row)}: token id {bad} is outside the vocabulary of {vocab_size}: the shard is "
                             f"damaged; {RETOKENIZE}")


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
