"""What every format's shard writer shares: the per-source accounting, the checksums and the staged files."""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

import numpy as np

from curate.core.errors import UsageError
from curate.io import fs
from curate.io.token_format import CHECKSUM, ShardDigest, digest_bytes, dtype_for, fits
from curate.tokens.common import naming, unique_tmp


class Accounting:
    """One split's shard of one input file in some format: documents come in by `add`, the format's files are
    written by `write` (tokens) and `close` (index files), all under temporary names, and published by `commit`
    in the order they were staged (the index last, so a reader that finds it finds its tokens whole).

    Held per shard: the document ends and source codes (10 bytes a document, bounded by the input file) and what
    the format buffers (at most a batch, or a row group for Parquet).
    """

    format = ""  # the name `--format` takes
    dtypes = ("uint16", "uint32")  # the token dtypes the format can record

    def __init__(self, out: str, split: str, name: str, dtype: str):
        self.out, self.split, self.name = out, split, name
        self.dtype = np.dtype(dtype).newbyteorder("<")
        self.staged: list[tuple[str, fs.Staged]] = []  # (name relative to out, staged file), in publishing order
        self.digests: dict[str, str] = {}
        self.digest = ShardDigest()
        self.ends: list[np.ndarray] = []
        self.codes: list[np.ndarray] = []
        self.sources: dict[str, int] = {}
        self.tokens = 0
        self.per_source: Counter = Counter()
        self.open()

    @classmethod
    def choose_dtype(cls, vocab_size: int, dtype: str | None) -> str:
        """The dtype this format records for `vocab_size` ids: `dtype` when given (refused when the format cannot
        hold it or the vocabulary does not fit it), else the smallest that fits."""
        dtype = dtype or dtype_for(vocab_size)
        if dtype not in cls.dtypes:
            raise UsageError(f"--dtype {dtype!r}: --format {cls.format} writes {' or '.join(cls.dtypes)}")
        if not fits(vocab_size, dtype):
            raise UsageError(f"vocab size {vocab_size} does not fit {dtype} (max id {np.iinfo(dtype).max})")
        return dtype

    def stage(self, suffix: str) -> fs.Staged:
        """A new file `SPLIT/NAME{suffix}`, written under a temporary name unique to this writer."""
        rel = f"{self.split}/{self.name}{suffix}"
        staged = fs.Staged(fs.join(self.out, rel), tmp_name=unique_tmp(f"{self.name}{suffix}"))
        self.staged.append((rel, staged))
        return staged

    def add(self, flat: np.ndarray, lengths: np.ndarray, sources: list[str]) -> None:
        """Documents whose tokens are `flat`, cut into `lengths` (EOS included), with their source names."""
        ids = np.ascontiguousarray(flat, dtype=self.dtype)
        self.digest.update(ids)
        ends = self.tokens + np.cumsum(lengths, dtype=np.int64)
        codes = np.array([self.sources.setdefault(s, len(self.sources)) for s in sources], np.uint16)
        self.write(ids, np.asarray(lengths, np.int64), codes)
        self.ends.append(ends)
        self.codes.append(codes)
        self.tokens += int(lengths.sum())
        for s, n in zip(sources, lengths.tolist(), strict=True):
            self.per_source[s] += n

    @property
    def docs(self) -> int:
        return sum(len(e) for e in self.ends)

    def all_ends(self) -> np.ndarray:
        return np.concatenate(self.ends) if self.ends else np.zeros(0, np.int64)

    def all_codes(self) -> np.ndarray:
        return np.concatenate(self.codes) if self.codes else np.zeros(0, np.uint16)

    def write_small(self, suffix: str, data: bytes, staged: fs.Staged | None = None) -> None:
        """A small file held in memory (an index), staged (unless it already was) and checksummed."""
        staged = staged or self.stage(suffix)
        with naming(staged.path), open(staged.tmp, "wb") as f:
            f.write(data)
        self.digests[f"{self.split}/{self.name}{suffix}"] = digest_bytes(data)

    def commit(self) -> dict[str, Any]:
        self.close()
        for _, staged in self.staged:
            with naming(staged.path):
                staged.commit()
        return self.entry()

    def entry(self) -> dict[str, Any]:
        """The manifest's entry: the files in publishing order, the counts, the largest id and the checksums."""
        files = [rel for rel, _ in self.staged]
        return {"files": files, "docs": self.docs, "tokens": self.tokens, "sources": list(self.sources),
                "tokens_per_source": dict(sorted(self.per_source.items())), "max_id": self.digest.max_id,
                CHECKSUM: self.digests}

    def discard(self) -> None:
        with contextlib.suppress(OSError):  # a full disk may refuse to flush: the files go anyway
            self.abort()
        for _, staged in self.staged:
            staged.discard()

    # the format's part
    def open(self) -> None:
        """Open the format's files (called once, by the constructor)."""

    def write(self, ids: np.ndarray, lengths: np.ndarray, codes: np.ndarray) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Finish the format's files (flush, write the index) before they are published."""

    def abort(self) -> None:
        """Close what is open without finishing it (the task failed)."""


class StreamWriter(Accounting):
    """A format whose tokens are one flat file of ids (`SUFFIX`), appended batch by batch, plus index files."""

    suffix = ".bin"

    def open(self) -> None:
        self.bin = self.stage(self.suffix)
        with naming(self.bin.path):
            self.file = open(self.bin.tmp, "wb")  # noqa: SIM115 (closed in close/abort)

    def write(self, ids: np.ndarray, lengths: np.ndarray, codes: np.ndarray) -> None:
        with naming(self.bin.path):
            self.file.write(ids.tobytes())

    def close(self) -> None:
        with naming(self.bin.path):
            self.file.close()
        self.digests[f"{self.split}/{self.name}{self.suffix}"] = self.digest.hexdigest()
        self.write_index()

    def abort(self) -> None:
        self.file.close()

    def write_index(self) -> None:
        raise NotImplementedError
