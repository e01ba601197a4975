"""The trainer's data loader: token shards (written by `curate tokenize`) in, (input, target) batches out.

Design (docs/tokens.md has the user-facing version):

* A split's documents, concatenated in shard order, form one flat token stream of N tokens. Each
  shard is a flat little-endian `.bin` of token ids plus an `.idx` of document ends and sources,
  which every rank memory-maps (nothing is read or copied at open). Batches copy their windows out
  with one `pread` per row, so a rank's resident memory stays at a batch however large the corpus
  (see `TokenDataset.windows` for why not through the map). Shards at a URL (`s3://…`) are
  downloaded once per node into a local cache, then mapped. Parquet shards (`peneira.tokens/1`) still load.
* Window i covers stream tokens [i*seq_len, i*seq_len + seq_len + 1): consecutive windows share one
  token, so every token but the first is a target exactly once per epoch, as in nanoGPT.
* The position is a GLOBAL sample count p (all ranks together). A step on rank r of W, with
  micro-batch B, takes samples [p + r*B, p + (r+1)*B) and advances p by W*B. Sample p maps to a
  window through a keyed pseudo-random permutation of the windows (a Feistel network, computed per
  sample: no per-window array) that depends only on (seed, epoch). So the sequence of global samples
  is the same whatever the split into ranks and micro-batches, and a state saved with one world
  size or batch size resumes under another.
* With `source_weights`, windows are grouped by the source of their first token; the source of
  sample p is drawn from the weights by a generator keyed by (seed, p // BLOCK), and each source
  walks its own per-epoch permutation. The per-source counters are functions of p alone.
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
import shutil
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from curate.io.token_format import (
    FORMAT,
    LEGACY_FORMAT,
    MANIFEST,
    MEGATRON_FORMAT,
    TokenDataError,
    check_contents,
    check_ids,
    check_index,
    check_manifest,
    decode_index,
    decode_megatron_index,
    index_size,
    member,
    parse_manifest,
    token_dtype,
)

ORDER = "feistel-1"  # names the sample -> window mapping; a state from another mapping is refused
BLOCK = 4096  # global samples per source-draw block
LOOKAHEAD = 4  # steps whose reads a loader requests ahead of time


def _fs():
    """`curate.io.fs`, imported only for URLs: importing `curate` costs ~60 MiB of resident memory (Arrow and
    the pipeline), which a rank reading a local directory never needs."""
    from curate.io import fs

    return fs


# ---------------------------------------------------------------------------------------------- files


def cache_root() -> Path:
    """Where shards at a URL are cached on this node: $PENEIRA_TOKEN_CACHE, else ~/.cache/peneira/tokens."""
    return Path(os.environ.get("PENEIRA_TOKEN_CACHE") or Path.home() / ".cache" / "peneira" / "tokens")


def fetch_once(url: str, local: Path, size: int | None = None) -> Path:
    """Download `url` to `local` unless it is already there whole; safe with many ranks on one node.

    The first process to take the file's lock downloads to a temporary name and renames it into place;
    the others wait on the lock and then find the file. A file is whole when it exists (it only ever
    appears by rename) and, where `size` is known, has that size.
    """
    local.parent.mkdir(parents=True, exist_ok=True)

    def whole() -> bool:
        return local.is_file() and (size is None or local.stat().st_size == size)

    if whole():
        return local
    with open(local.with_name(local.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not whole():
            tmp = local.with_name(f".{local.name}.{os.getpid()}.tmp")
            try:
                with _fs().open(url, "rb") as src, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 24)
                if size is not None and tmp.stat().st_size != size:
                    raise TokenDataError(f"{url}: {tmp.stat().st_size} bytes, the manifest implies {size}")
                os.replace(tmp, local)
            finally:
                tmp.unlink(missing_ok=True)
    return local


class _Mapped:
    """A read-only memory map of a file, as numpy arrays, plus a descriptor for `pread` (see `windows`)."""

    def __init__(self, path: Path):
        self.path = path
        self.size = path.stat().st_size
        self.fd: int | None = None  # opened on first `pread`
        self.mm = None
        if self.size:
            with open(path, "rb") as f:
                self.mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def array(self, dtype, offset: int, count: int) -> np.ndarray:
        if count == 0:
            return np.zeros(0, dtype)
        return np.frombuffer(self.mm, dtype=dtype, count=count, offset=offset)

    def _fd(self) -> int:
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY)
        return self.fd

    def advise(self, offset: int, nbytes: int) -> None:
        os.posix_fadvise(self._fd(), offset, nbytes, os.POSIX_FADV_WILLNEED)

    def pread(self, into: np.ndarray, offset: int) -> None:
        """Fill `into` (a contiguous array) from byte `offset`: one system call, no page mapped."""
        if os.preadv(self._fd(), [into], offset) != into.nbytes:
            raise TokenDataError(f"{self.path}: short read at byte {offset} (file changed under the loader?)")

    def __del__(self):
        if self.fd is not None:
            os.close(self.fd)


def _allow_open_files(n: int) -> None:
    """Raise the soft limit on open files when a split's shards need more than it (three descriptors a shard:
    two maps and one for reads); the default soft limit of 1,024 is far below the usual hard limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + 256
    if soft != resource.RLIM_INFINITY and soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            raise TokenDataError(f"{n} shard files need more open files than the hard limit ({hard}): raise it")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


@dataclass
class _Shard:
    """One stretch of the stream: its tokens and, per document, the end offset and source (dataset code)."""

    tokens: np.ndarray
    ends: np.ndarray  # int64, exclusive end of each document within the shard
    codes: np.ndarray  # per-document source code, into `lut`
    lut: np.ndarray  # shard code -> index into TokenDataset.sources
    mapped: _Mapped | None = None  # the .bin map (None for in-memory legacy shards)

    def doc_sources(self, lo: int, hi: int) -> np.ndarray:
        return self.lut[self.codes[lo:hi]]


def _read_index(mapped: _Mapped, file: str) -> tuple[np.ndarray, np.ndarray]:
    return decode_index(mapped.mm if mapped.size else b"", mapped.size, file)


def _read_megatron(ds: TokenDataset, shard: dict, idx_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A `curate tokenize --format megatron` shard's document ends (from Megatron's `.idx`: its sequence lengths
    and pointers) and source codes (its `.sources`), so the trainer reads the very files Megatron trains on."""
    mapped = _Mapped(idx_path)
    ends = decode_megatron_index(mapped.mm if mapped.size else b"", mapped.size, ds.dtype, str(idx_path))
    n_doc = int(shard["docs"])
    codes_path = ds._local_file(member(shard["source_codes"], f"{ds.location}/{MANIFEST}"), 2 * n_doc)
    codes = np.fromfile(codes_path, "<u2")
    if len(codes) != n_doc:
        raise TokenDataError(f"{codes_path}: {len(codes)} source codes, manifest says {n_doc} documents")
    return ends, codes


# ---------------------------------------------------------------------------------------------- dataset


def _not_tokens(location: str, manifest: dict) -> str:
    """What a manifest that is not a token-shard directory's is, and the command that makes token shards of it."""
    if isinstance(manifest.get("token_format"), str):  # `curate tokenize --format` for another trainer
        fmt = manifest["token_format"]
        return (f"{location} holds token shards for another trainer (--format {fmt}): python -m train reads the "
                f"peneira and megatron formats; run `curate tokenize` again with --format peneira")
    made_by = "a `curate mix` output" if manifest.get("kind") == "mix" else (
        "a `curate run` output" if "pipeline" in manifest else None)
    if made_by is None:
        return f"{location}: format {manifest.get('format')!r}, expected {FORMAT!r}"
    return (f"{location} is {made_by} (text shards), not token shards: run `curate tokenize {location} "
            f"--tokenizer TOKENIZER.json --out TOKENS` and pass --data TOKENS")


class TokenDataset:
    """One split ("train" or "val") of a token-shard directory (local path or URL), as mapped token arrays.

    `expect_tokenizer_hash` guards against training on shards from another tokenizer: the model's
    embedding table means nothing for ids from a different vocabulary, and nothing else would notice.
    `path` is the local directory (the node cache for a URL); `location` is what was given.

    Validated at open (`curate.io.token_format`, docs/tokens.md "Validation"): the manifest's keys, each shard's
    sizes and index, and, with `verify` (default: on, unless PENEIRA_VERIFY_TOKENS=0), the checksums and largest
    id of every shard of the split, read once. Every batch's ids are checked against the vocabulary.
    """

    def __init__(self, path: str | os.PathLike, split: str = "train", expect_tokenizer_hash: str | None = None,
                 verify: bool | None = None):
        self.location = os.fspath(path)
        local = _fs().local_path(self.location) if "://" in self.location else self.location
        self.remote = local is None
        self.manifest, self.path = self._open_manifest(local)
        if self.manifest.get("format") not in (FORMAT, LEGACY_FORMAT, MEGATRON_FORMAT):
            raise TokenDataError(_not_tokens(self.location, self.manifest))
        check_manifest(self.manifest, f"{self.location}/{MANIFEST}")
        tok = self.manifest["tokenizer"]
        if expect_tokenizer_hash is not None and tok["sha256"] != expect_tokenizer_hash:
            raise TokenDataError(
                f"{self.location} was tokenized with tokenizer sha256 {tok['sha256'][:16]}…, "
                f"expected {expect_tokenizer_hash[:16]}…: retokenize or use the matching tokenizer"
            )
        if split not in self.manifest["splits"]:
            raise TokenDataError(f"{self.location} has no split {split!r} (splits: {sorted(self.manifest['splits'])})")
        self.split = split
        self.vocab_size: int = int(self.manifest["vocab_size"])
        self.eos_id: int = int(self.manifest["eos_id"])
        self.dtype: np.dtype = token_dtype(self.manifest["dtype"])
        if self.vocab_size - 1 > np.iinfo(self.dtype).max:
            raise TokenDataError(f"vocab size {self.vocab_size} does not fit the manifest's dtype {self.dtype}")
        info = self.manifest["splits"][split]
        self.sources: list[str] = sorted(info["tokens_per_source"])
        self.shards: list[_Shard] = []
        self.shard_files: list[str] = []  # the file of each of `shards`, for messages
        self._verify: list[tuple[Path, Path, dict]] = []
        if self.remote and tok.get("file"):
            name = member(tok["file"], f"{self.location}/{MANIFEST}")
            fetch_once(f"{self.location.rstrip('/')}/{name}", self.path / name)
        _allow_open_files(3 * len(info["shards"]))
        for shard in info["shards"]:
            if self.manifest["format"] == LEGACY_FORMAT:
                file = self.path / member(shard["file"], f"{self.location}/{MANIFEST}")
                self.shards += _legacy_shards(file, shard, self.dtype, self.sources)
            else:
                self.shards.append(self._open_shard(shard))
            self.shard_files += [shard["file"]] * (len(self.shards) - len(self.shard_files))
        check_contents(self.manifest, self.location, self._verify, verify)
        self.chunks: list[np.ndarray] = [s.tokens for s in self.shards]  # flat token arrays, in stream order
        self.chunk_starts = np.cumsum([0] + [len(c) for c in self.chunks], dtype=np.int64)
        self.num_tokens: int = int(self.chunk_starts[-1])
        if self.num_tokens != int(info["tokens"]):
            raise TokenDataError(
                f"{self.location}/{split}: shards hold {self.num_tokens} tokens, manifest says {info['tokens']}"
            )
        self.num_docs = sum(len(s.ends) for s in self.shards)

    def _open_manifest(self, local: str | None) -> tuple[dict[str, Any], Path]:
        """The manifest, and the local directory the shards are read from (the node cache for a URL)."""
        if local is not None:
            mpath = Path(local) / MANIFEST
            if not mpath.is_file():
                raise FileNotFoundError(f"{self.location} has no {MANIFEST} (not a `curate tokenize` output?)")
            return parse_manifest(mpath.read_bytes(), str(mpath)), Path(local)
        fs = _fs()
        mpath = fs.join(self.location, MANIFEST)
        if not fs.isfile(mpath):
            raise FileNotFoundError(f"{self.location} has no {MANIFEST} (not a `curate tokenize` output?)")
        with fs.open(mpath, "rb") as f:
            raw = f.read()
        # One cache directory per (URL, manifest): shards rewritten under a new manifest are fetched anew.
        key = hashlib.sha256(self.location.encode() + b"\0" + raw).hexdigest()[:20]
        cache = cache_root() / key
        cache.mkdir(parents=True, exist_ok=True)
        if not (cache / MANIFEST).is_file():
            # unique per process and thread: ranks and loader threads may publish the same manifest at once
            tmp = cache / f".{MANIFEST}.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_bytes(raw)
            os.replace(tmp, cache / MANIFEST)
        return parse_manifest(raw, mpath), cache

    def _local_file(self, name: str, size: int) -> Path:
        name = member(name, f"{self.location}/{MANIFEST}")
        if self.remote:
            return fetch_once(f"{self.location.rstrip('/')}/{name}", self.path / name, size)
        return self.path / name

    def _open_shard(self, shard: dict) -> _Shard:
        n_tok, n_doc = int(shard["tokens"]), int(shard["docs"])
        bin_path = self._local_file(shard["file"], n_tok * self.dtype.itemsize)
        megatron = self.manifest["format"] == MEGATRON_FORMAT
        idx_path = self._local_file(shard["index"], None if megatron else index_size(n_doc))
        tokens_map = _Mapped(bin_path)
        if tokens_map.size != n_tok * self.dtype.itemsize:
            raise TokenDataError(
                f"{bin_path}: {tokens_map.size} bytes = {tokens_map.size / self.dtype.itemsize:g} {self.dtype} "
                f"tokens, manifest says {n_tok}"
            )
        ends, codes = _read_megatron(self, shard, idx_path) if megatron else _read_index(_Mapped(idx_path),
                                                                                          str(idx_path))
        if len(ends) != n_doc or (n_doc and int(ends[-1]) != n_tok):
            raise TokenDataError(f"{idx_path}: {len(ends)} documents ending at token "
                                 f"{int(ends[-1]) if n_doc else 0}, manifest says {n_doc} and {n_tok}")
        check_index(ends, codes, len(shard["sources"]), str(idx_path))
        self._verify.append((bin_path, idx_path, shard))
        lut = np.array([self.sources.index(s) if s in self.sources else -1 for s in shard["sources"]] or [-1], np.int32)
        return _Shard(tokens_map.array(self.dtype, 0, n_tok), ends, codes, lut, tokens_map)

    def read(self, start: int, length: int) -> np.ndarray:
        """Tokens [start, start+length) of the flat stream (a view of the map when inside one shard)."""
        c = int(np.searchsorted(self.chunk_starts, start, side="right")) - 1
        off = start - int(self.chunk_starts[c])
        parts, need = [], length
        while need > 0:
            shard = self.shards[c]
            piece = shard.tokens[off : off + need]
            parts.append(piece)
            need -= len(piece)
            c, off = c + 1, 0
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def prefetch(self, starts: np.ndarray, span: int) -> None:
        """Ask the kernel to start reading the stretches [start, start+span) into the page cache, without waiting
        (POSIX_FADV_WILLNEED): on a cold cache the reads of a batch then overlap instead of queueing one by one
        (5x on this machine's virtual disk)."""
        shard_of = np.searchsorted(self.chunk_starts, starts, side="right") - 1
        offsets = (np.asarray(starts) - self.chunk_starts[shard_of]).tolist()
        size = self.dtype.itemsize
        for c, off in zip(shard_of.tolist(), offsets, strict=True):
            mapped = self.shards[c].mapped
            if mapped is not None:
                mapped.advise(off * size, span * size)

    def windows(self, starts: np.ndarray, span: int) -> np.ndarray:
        """An int64 (len(starts), span) array of the stream stretches [start, start+span).

        Mapped shards are read with one `pread` per row, not through the map: a mapped page a window
        touched stays counted in the process's resident memory, and the kernel maps whole page-cache folios
        around each fault (measured: +300 MiB in 30 batches on a 0.4 GB corpus), so reading through the map
        would grow every rank toward the corpus size. A read leaves the pages in the shared page cache only.
        """
        starts = np.asarray(starts, dtype=np.int64)
        raw = np.empty((len(starts), span), dtype=self.dtype)
        shard_of = np.searchsorted(self.chunk_starts, starts, side="right") - 1
        offsets = (starts - self.chunk_starts[shard_of]).tolist()
        for i, (c, off) in enumerate(zip(shard_of.tolist(), offsets, strict=True)):
            done = 0
            while done < span:  # more than one pass only for a row that crosses into the next shard
                shard = self.shards[c]
                n = min(span - done, len(shard.tokens) - off)
                if shard.mapped is not None:
                    shard.mapped.pread(raw[i, done : done + n], off * self.dtype.itemsize)
                else:
                    raw[i, done : done + n] = shard.tokens[off : off + n]
                done, c, off = done + n, c + 1, 0
        check_ids(raw, self.vocab_size, lambda row: self._where(int(starts[row])))
        return raw.astype(np.int64)

    def _where(self, start: int) -> str:
        """The shard file holding stream position `start` and the position within it, for messages."""
        c = int(np.searchsorted(self.chunk_starts, start, side="right")) - 1
        return f"{self.location}/{self.shard_files[c]} (a window from token {start - int(self.chunk_starts[c])})"

    def source_at(self, positions: np.ndarray) -> np.ndarray:
        """Source index (into `sources`) of the document holding each stream position."""
        positions = np.asarray(positions, dtype=np.int64)
        shard_of = np.searchsorted(self.chunk_starts, positions, side="right") - 1
        out = np.empty(len(positions), dtype=np.int32)
        for c in np.unique(shard_of):
            at = shard_of == c
            s = self.shards[int(c)]
            doc = np.searchsorted(s.ends, positions[at] - self.chunk_starts[c], side="right")
            out[at] = s.lut[s.codes[doc]]
        return out

    def source_runs(self, chunk_docs: int = 1 << 20) -> list[tuple[int, int, int]]:
        """(start, end, source) stretches of the stream whose documents share a source, merged across shards.

        As many entries as the stream changes source (one per shard for single-source shards), computed a
        slice of the index at a time so that no per-document array is ever whole in memory.
        """
        runs: list[list[int]] = []
        for c, s in enumerate(self.shards):
            base = int(self.chunk_starts[c])
            for lo in range(0, len(s.ends), chunk_docs):
                hi = min(lo + chunk_docs, len(s.ends))
                src = s.doc_sources(lo, hi)
                cut = np.flatnonzero(np.diff(src)) + 1  # first document of each new source within the slice
                firsts = np.concatenate([[0], cut])
                starts = np.where(firsts + lo > 0, s.ends[np.maximum(firsts + lo - 1, 0)], 0) + base
                for st, code in zip(starts.tolist(), src[firsts].tolist(), strict=True):
                    if runs and runs[-1][2] == code:
                        continue
                    if runs:
                        runs[-1][1] = st
                    runs.append([st, -1, code])
        if runs:
            runs[-1][1] = self.num_tokens
        return [tuple(r) for r in runs]

    def __repr__(self) -> str:
        return (
            f"TokenDataset({self.location!r}, split={self.split!r}, tokens={self.num_tokens:,}, "
            f"docs={self.num_docs:,}, vocab={self.vocab_size}, dtype={self.dtype.name})"
        )


def _legacy_shards(file: Path, shard: dict, dtype: np.dtype, sources: list[str]) -> list[_Shard]:
    """A `peneira.tokens/1` Parquet shard, decoded into memory (that format cannot be mapped), one _Shard per
    Arrow chunk."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(file, columns=["tokens", "source"], memory_map=True)
    value_type = table.schema.field("tokens").type.value_type
    if value_type != pa.from_numpy_dtype(dtype.newbyteorder("=")):
        raise TokenDataError(f"{file}: tokens are {value_type}, manifest says {dtype.name}")
    out, total, pos = [], 0, 0
    source = table.column("source")
    for chunk in table.column("tokens").chunks:
        offsets = chunk.offsets.to_numpy()
        values = chunk.values.slice(offsets[0], offsets[-1] - offsets[0]).to_numpy(zero_copy_only=True)
        names = source.slice(pos, len(chunk)).combine_chunks().dictionary_encode()
        pos += len(chunk)
        lut = np.array([sources.index(s) if s in sources else -1 for s in names.dictionary.to_pylist()] or [-1],
                       np.int32)
        ends = (offsets[1:] - offsets[0]).astype(np.int64)
        out.append(_Shard(values, ends, names.indices.to_numpy(zero_copy_only=False), lut))
        total += len(values)
    if total != int(shard["tokens"]):
        raise TokenDataError(f"{file}: holds {total} tokens, manifest says {shard['tokens']}")
    return out


# ---------------------------------------------------------------------------------------------- order


_M1, _M2, _M3 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijective, well-mixed hash of uint64 values (wrapping arithmetic)."""
    z = z * _M1
    z = (z ^ (z >> np.uint64(30))) * _M2
    z = (z ^ (z >> np.uint64(27))) * _M3
    return z ^ (z >> np.uint64(31))


def permute(x: np.ndarray, n: int, keys: np.ndarray) -> np.ndarray:
    """The image of indices `x` (< n) under a keyed pseudo-random permutation of range(n).

    A balanced Feistel network on 2*h bits (2**(2h) >= n), one round per key, with cycle walking: an
    output >= n is permuted again until it lands in range, which keeps the map a bijection of range(n).
    Memory is O(len(x)), whatever n is.
    """
    half = max(1, ((n - 1).bit_length() + 1) // 2)
    h, mask = np.uint64(half), np.uint64((1 << half) - 1)

    def rounds(y: np.ndarray) -> np.ndarray:
        left, right = y >> h, y & mask
        for k in keys:
            left, right = right, left ^ (_mix64(right ^ k) & mask)
        return (left << h) | right

    y = rounds(np.asarray(x, dtype=np.uint64))
    out_of_range = y >= np.uint64(n)
    while out_of_range.any():
        y[out_of_range] = rounds(y[out_of_range])
        out_of_range = y >= np.uint64(n)
    return y.astype(np.int64)


@dataclass
class _Group:
    """The windows of one source as stretches of consecutive window indices: window k of the group is
    `first[r] + k - before[r]` for the stretch r holding k."""

    name: str
    first: np.ndarray  # first window index of each stretch
    before: np.ndarray  # windows of the group in earlier stretches (cumulative), one more entry at the end

    @property
    def size(self) -> int:
        return int(self.before[-1])

    def window(self, k: np.ndarray) -> np.ndarray:
        r = np.searchsorted(self.before, k, side="right") - 1
        return self.first[r] + (k - self.before[r])


def _groups(dataset: TokenDataset, seq_len: int, n_windows: int, names: list[str]) -> list[_Group]:
    """Per source, the windows whose first token lies in that source's documents."""
    parts: dict[int, tuple[list[int], list[int]]] = {dataset.sources.index(s): ([], []) for s in names}
    for start, end, code in dataset.source_runs():
        lo, hi = -(-start // seq_len), min(-(-end // seq_len), n_windows)  # windows starting in [start, end)
        if code in parts and hi > lo:
            parts[code][0].append(lo)
            parts[code][1].append(hi - lo)
    out = []
    for s in names:
        first, count = parts[dataset.sources.index(s)]
        out.append(_Group(s, np.array(first, np.int64), np.cumsum([0, *count], dtype=np.int64)))
    return out


# ---------------------------------------------------------------------------------------------- loader


class Loader:
    """Deterministic, resumable, rank-disjoint batches of `batch_size` windows of `seq_len + 1` tokens.

    `next_batch()` returns int64 CPU tensors (inputs, targets), each (batch_size, seq_len), targets
    shifted by one. `state_dict()` holds the global sample count; loading it into a fresh loader (any
    rank, any world size or batch size) continues the same sequence of global samples.
    """

    def __init__(
        self,
        dataset: TokenDataset,
        seq_len: int,
        batch_size: int,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        source_weights: dict[str, float] | None = None,
    ):
        if seq_len < 1 or batch_size < 1:
            raise ValueError(f"seq_len and batch_size must be positive (got {seq_len}, {batch_size})")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside world_size {world_size}")
        self.dataset, self.seq_len, self.batch_size = dataset, seq_len, batch_size
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.n_windows = (dataset.num_tokens - 1) // seq_len
        if self.n_windows < 1:
            raise TokenDataError(f"{dataset!r} has fewer than seq_len + 1 = {seq_len + 1} tokens")
        self.source_weights = None
        if source_weights is None:
            self.groups = [_Group("*", np.zeros(1, np.int64), np.array([0, self.n_windows], np.int64))]
            self.weights = np.ones(1)
        else:
            unknown = sorted(set(source_weights) - set(dataset.sources))
            if unknown:
                raise TokenDataError(f"source_weights name {unknown}, not in the data (sources: {dataset.sources})")
            if any(not np.isfinite(w) or w < 0 for w in source_weights.values()) or sum(source_weights.values()) <= 0:
                raise ValueError(f"source_weights must be non-negative with a positive sum: {source_weights}")
            names = [s for s in dataset.sources if source_weights.get(s, 0) > 0]
            self.groups = _groups(dataset, seq_len, self.n_windows, names)
            empty = [g.name for g in self.groups if g.size == 0]
            if empty:
                raise TokenDataError(
                    f"sources {empty} have a weight but no window of {seq_len + 1} tokens starts in them"
                )
            w = np.array([source_weights[s] for s in names], dtype=np.float64)
            self.weights = w / w.sum()
            self.source_weights = dict(zip(names, self.weights.tolist(), strict=True))
        self.group_names = [g.name for g in self.groups]
        self.samples = 0  # global samples consumed, all ranks together
        self.counts = np.zeros(len(self.groups), dtype=np.int64)  # of those, per group
        self._blocks: dict[tuple[int, int], np.ndarray] = {}  # (group, k // BLOCK) -> window indices
        self._block: tuple[int, np.ndarray] = (-1, np.zeros(0))
        self._ahead: deque[tuple[np.ndarray, np.ndarray]] = deque()  # planned steps: (starts, counts after)
        self.last_window_starts = np.zeros(0, dtype=np.int64)

    @property
    def tokens_per_batch(self) -> int:
        """Target tokens this rank delivers per `next_batch()` (multiply by world_size for the global batch)."""
        return self.batch_size * self.seq_len

    @property
    def num_windows(self) -> int:
        return sum(g.size for g in self.groups)

    @property
    def step(self) -> int:
        """`next_batch()` calls at this loader's shape that the global sample count amounts to."""
        return self.samples // (self.world_size * self.batch_size)

    @property
    def epoch(self) -> float:
        """Epochs of the (largest-weight) data consumed so far, for logging."""
        return float(np.max(self.counts / np.array([g.size for g in self.groups])))

    def _windows(self, g: int, k: np.ndarray) -> np.ndarray:
        """Window indices of the group's k-th samples: entry k % n of the permutation of epoch k // n.

        Computed BLOCK consecutive samples at a time and cached: samples are consumed in order, so one
        vectorised pass serves many batches.
        """
        out = np.empty(len(k), dtype=np.int64)
        blocks = k // BLOCK
        for b in np.unique(blocks).tolist():
            at = blocks == b
            out[at] = self._window_block(g, b)[k[at] - b * BLOCK]
        return out

    def _window_block(self, g: int, b: int) -> np.ndarray:
        if (g, b) not in self._blocks:
            if len(self._blocks) >= 2 * len(self.groups):
                self._blocks.clear()
            group = self.groups[g]
            n = group.size
            k = np.arange(b * BLOCK, (b + 1) * BLOCK, dtype=np.int64)
            idx = np.empty(BLOCK, dtype=np.int64)
            for epoch in np.unique(k // n).tolist():
                at = k // n == epoch
                keys = np.random.default_rng([self.seed, g, epoch]).bit_generator.random_raw(6)
                idx[at] = permute(k[at] % n, n, keys)
            self._blocks[(g, b)] = group.window(idx)
        return self._blocks[(g, b)]

    def _group_of(self, lo: int, hi: int) -> np.ndarray:
        """The source group of global samples [lo, hi): uniform draws keyed by (seed, p // BLOCK)."""
        out = np.empty(hi - lo, dtype=np.int64)
        bounds = np.cumsum(self.weights)
        p = lo
        while p < hi:
            b = p // BLOCK
            if self._block[0] != b:
                u = np.random.default_rng([self.seed, 1 << 20, b]).random(BLOCK)
                self._block = (b, np.minimum(np.searchsorted(bounds, u, side="right"), len(self.groups) - 1))
            end = min(hi, (b + 1) * BLOCK)
            out[p - lo : end - lo] = self._block[1][p - b * BLOCK : end - b * BLOCK]
            p = end
        return out

    def _plan(self, samples: int, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """This rank's window starts for the step at global sample `samples`, and the per-group counts after it:
        a pure function of its arguments, so the next step can be planned (and prefetched) ahead."""
        per_step = self.world_size * self.batch_size
        mine_lo = self.rank * self.batch_size
        if len(self.groups) == 1:
            k = samples + mine_lo + np.arange(self.batch_size, dtype=np.int64)
            return self._windows(0, k) * self.seq_len, counts + per_step
        group_of = self._group_of(samples, samples + per_step)
        out = np.empty(self.batch_size, dtype=np.int64)
        counts = counts.copy()
        for g in range(len(self.groups)):
            sel = group_of == g
            k = counts[g] + np.cumsum(sel)[sel] - 1  # per-group sample index of each position
            where = np.flatnonzero(sel)
            take = (where >= mine_lo) & (where < mine_lo + self.batch_size)
            if take.any():
                out[where[take] - mine_lo] = self._windows(g, k[take])
            counts[g] += int(sel.sum())
        return out * self.seq_len, counts

    def _next_starts(self) -> np.ndarray:
        """This step's window starts, keeping LOOKAHEAD further steps planned with their reads already requested
        (`TokenDataset.prefetch`), so a cold disk's latency overlaps the steps in between."""
        span = self.seq_len + 1
        if not self._ahead:
            starts, counts = self._plan(self.samples, self.counts)
            self.dataset.prefetch(starts, span)
            self._ahead.append((starts, counts))
        while len(self._ahead) <= LOOKAHEAD:
            done = self.samples + len(self._ahead) * self.world_size * self.batch_size
            starts, counts = self._plan(done, self._ahead[-1][1])
            self.dataset.prefetch(starts, span)
            self._ahead.append((starts, counts))
        starts, self.counts = self._ahead.popleft()
        self.samples += self.world_size * self.batch_size
        return starts

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        starts = self._next_starts()
        self.last_window_starts = starts  # stream offsets of this batch's rows, for checks and debugging
        t = torch.from_numpy(self.dataset.windows(starts, self.seq_len + 1))
        return t[:, :-1].contiguous(), t[:, 1:].contiguous()

    def __iter__(self):
        while True:
            yield self.next_batch()

    def state_dict(self) -> dict:
        """The global position; identical on every rank, so rank 0's copy resumes all of them, at any shape."""
        return {
            "samples": self.samples,
            "counts": self.counts.tolist(),
            "order": ORDER,
            "seed": self.seed,
            "seq_len": self.seq_len,
            "groups": self.group_names,
            "num_windows": [g.size for g in self.groups],
            "batch_size": self.batch_size,  # of the run that saved it: informative, not required to match
            "world_size": self.world_size,
            "step": self.step,
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue at the saved global sample. Seed, seq_len, data and source groups must match; world size and
        micro-batch may differ (the next samples are the same global ones, split anew)."""
        if "samples" not in state:
            raise ValueError(
                "loader state has no global sample count (it was saved by the loader before peneira.tokens/2, whose "
                "sample order differs): resume it with that version, or start the data order afresh"
            )
        mine = self.state_dict()
        for key in ("order", "seed", "seq_len", "groups", "num_windows"):
            if state.get(key) != mine[key]:
                raise ValueError(
                    f"loader state has {key}={state.get(key)!r} but this loader has {mine[key]!r}: "
                    "resume needs the same data, seed and seq_len"
                )
        self.samples = int(state["samples"])
        self.counts = np.array(state["counts"], dtype=np.int64)
        self._ahead.clear()
