"""The trainer's data loader: token shards (written by `curate tokenize`) in, (input, target) batches out.

Design (docs/tokens.md has the user-facing version):

* A split's documents, concatenated in shard order, form one flat token stream of N tokens. Each
  shard's `tokens` column is decoded once by Arrow and viewed as numpy without a further copy.
* Window i covers stream tokens [i*seq_len, i*seq_len + seq_len + 1): consecutive windows share one
  token, so every token but the first is a target exactly once per epoch, as in nanoGPT.
* Global sample position p = (step * world_size + rank) * batch_size + j. Positions are drawn from a
  permutation of the windows that depends only on (seed, epoch), so the batch at a step is a pure
  function of (seed, step, rank), ranks read disjoint windows, and the whole resumable state is the
  step counter (plus per-source counters when sources are re-weighted).
* With `source_weights`, windows are grouped by the source of their first token; each position's
  source is drawn from the weights with a generator keyed by (seed, step), and each source walks its
  own per-epoch permutation. The counters are global (all ranks advance them identically), so one
  saved state resumes every rank.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

MANIFEST = "manifest.json"
FORMAT = "peneira.tokens/1"


class TokenDataError(ValueError):
    """A token-shard directory that does not match its manifest, or a tokenizer that does not match."""


class TokenDataset:
    """One split ("train" or "val") of a token-shard directory, as flat token arrays.

    `expect_tokenizer_hash` guards against training on shards from another tokenizer: the model's
    embedding table means nothing for ids from a different vocabulary, and nothing else would notice.
    """

    def __init__(self, path: str | os.PathLike, split: str = "train", expect_tokenizer_hash: str | None = None):
        self.path = Path(path)
        mpath = self.path / MANIFEST
        if not mpath.is_file():
            raise FileNotFoundError(f"{self.path} has no {MANIFEST} (not a `curate tokenize` output?)")
        self.manifest: dict[str, Any] = json.loads(mpath.read_text())
        if self.manifest.get("format") != FORMAT:
            raise TokenDataError(f"{mpath}: format {self.manifest.get('format')!r}, expected {FORMAT!r}")
        tok = self.manifest["tokenizer"]
        if expect_tokenizer_hash is not None and tok["sha256"] != expect_tokenizer_hash:
            raise TokenDataError(
                f"{self.path} was tokenized with tokenizer sha256 {tok['sha256'][:16]}…, "
                f"expected {expect_tokenizer_hash[:16]}…: retokenize or use the matching tokenizer"
            )
        if split not in self.manifest["splits"]:
            raise TokenDataError(f"{self.path} has no split {split!r} (splits: {sorted(self.manifest['splits'])})")
        self.split = split
        self.vocab_size: int = int(self.manifest["vocab_size"])
        self.eos_id: int = int(self.manifest["eos_id"])
        self.dtype: np.dtype = np.dtype(self.manifest["dtype"])
        if self.vocab_size - 1 > np.iinfo(self.dtype).max:
            raise TokenDataError(f"vocab size {self.vocab_size} does not fit the manifest's dtype {self.dtype}")
        info = self.manifest["splits"][split]
        self.sources: list[str] = sorted(info["tokens_per_source"])
        self.chunks: list[np.ndarray] = []  # flat token views, one per Arrow chunk
        doc_lengths: list[np.ndarray] = []
        doc_sources: list[np.ndarray] = []
        for shard in info["shards"]:
            self._load_shard(self.path / shard["file"], shard, doc_lengths, doc_sources)
        self.chunk_starts = np.cumsum([0] + [len(c) for c in self.chunks], dtype=np.int64)
        self.num_tokens: int = int(self.chunk_starts[-1])
        if self.num_tokens != int(info["tokens"]):
            raise TokenDataError(
                f"{self.path}/{split}: shards hold {self.num_tokens} tokens, manifest says {info['tokens']}"
            )
        lengths = np.concatenate(doc_lengths) if doc_lengths else np.zeros(0, np.int64)
        self.doc_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(lengths) else lengths
        self.doc_source = np.concatenate(doc_sources) if doc_sources else np.zeros(0, np.int32)
        self.num_docs = len(lengths)

    def _load_shard(self, file: Path, shard: dict, doc_lengths: list, doc_sources: list) -> None:
        table = pq.read_table(file, columns=["tokens", "source"], memory_map=True)
        value_type = table.schema.field("tokens").type.value_type
        if value_type != pa.from_numpy_dtype(self.dtype):
            raise TokenDataError(f"{file}: tokens are {value_type}, manifest says {self.dtype}")
        codes = {s: i for i, s in enumerate(self.sources)}
        shard_tokens = 0
        for chunk, src in zip(
            table.column("tokens").chunks, _aligned(table.column("source"), table.column("tokens")), strict=True
        ):
            offsets = chunk.offsets.to_numpy()
            values = chunk.values.slice(offsets[0], offsets[-1] - offsets[0])
            self.chunks.append(values.to_numpy(zero_copy_only=True))
            doc_lengths.append(np.diff(offsets).astype(np.int64))
            names = src.dictionary_encode()
            lut = np.array([codes.get(s, -1) for s in names.dictionary.to_pylist()], dtype=np.int32)
            doc_sources.append(lut[names.indices.to_numpy(zero_copy_only=False)])
            shard_tokens += int(offsets[-1] - offsets[0])
        if shard_tokens != int(shard["tokens"]):
            raise TokenDataError(f"{file}: holds {shard_tokens} tokens, manifest says {shard['tokens']}")

    def read(self, start: int, length: int) -> np.ndarray:
        """Tokens [start, start+length) of the flat stream (a view when inside one chunk)."""
        c = int(np.searchsorted(self.chunk_starts, start, side="right")) - 1
        off = start - int(self.chunk_starts[c])
        chunk = self.chunks[c]
        if off + length <= len(chunk):
            return chunk[off : off + length]
        parts, need = [], length
        while need > 0:
            piece = self.chunks[c][off : off + need]
            parts.append(piece)
            need -= len(piece)
            c, off = c + 1, 0
        return np.concatenate(parts)

    def source_at(self, positions: np.ndarray) -> np.ndarray:
        """Source index (into `sources`) of the document holding each stream position."""
        return self.doc_source[np.searchsorted(self.doc_starts, positions, side="right") - 1]

    def __repr__(self) -> str:
        return (
            f"TokenDataset({str(self.path)!r}, split={self.split!r}, tokens={self.num_tokens:,}, "
            f"docs={self.num_docs:,}, vocab={self.vocab_size}, dtype={self.dtype})"
        )


def _aligned(source: pa.ChunkedArray, tokens: pa.ChunkedArray) -> list[pa.Array]:
    """The `source` column cut into the same chunks as `tokens` (Parquet reads usually agree already)."""
    if [len(c) for c in source.chunks] == [len(c) for c in tokens.chunks]:
        return list(source.chunks)
    out, pos = [], 0
    for c in tokens.chunks:
        out.append(source.slice(pos, len(c)).combine_chunks())
        pos += len(c)
    return out


class Loader:
    """Deterministic, resumable, rank-disjoint batches of `batch_size` windows of `seq_len + 1` tokens.

    `next_batch()` returns int64 CPU tensors (inputs, targets), each (batch_size, seq_len), targets
    shifted by one. `state_dict()` is a few integers; loading it into a fresh loader (any rank) makes
    the following batches identical to those of an uninterrupted run.
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
        n_windows = (dataset.num_tokens - 1) // seq_len
        if n_windows < 1:
            raise TokenDataError(f"{dataset!r} has fewer than seq_len + 1 = {seq_len + 1} tokens")
        starts = np.arange(n_windows, dtype=np.int64) * seq_len
        self.source_weights = None
        if source_weights is None:
            self.groups = [starts]
            self.group_names = ["*"]
            self.weights = np.ones(1)
        else:
            unknown = sorted(set(source_weights) - set(dataset.sources))
            if unknown:
                raise TokenDataError(f"source_weights name {unknown}, not in the data (sources: {dataset.sources})")
            if any(not np.isfinite(w) or w < 0 for w in source_weights.values()) or sum(source_weights.values()) <= 0:
                raise ValueError(f"source_weights must be non-negative with a positive sum: {source_weights}")
            labels = dataset.source_at(starts)
            self.group_names = [s for s in dataset.sources if source_weights.get(s, 0) > 0]
            self.groups = [starts[labels == dataset.sources.index(s)] for s in self.group_names]
            empty = [s for s, g in zip(self.group_names, self.groups, strict=True) if len(g) == 0]
            if empty:
                raise TokenDataError(
                    f"sources {empty} have a weight but no window of {seq_len + 1} tokens starts in them"
                )
            w = np.array([source_weights[s] for s in self.group_names], dtype=np.float64)
            self.weights = w / w.sum()
            self.source_weights = dict(zip(self.group_names, self.weights.tolist(), strict=True))
        self.step = 0
        self.counts = np.zeros(len(self.groups), dtype=np.int64)  # windows consumed per group, all ranks
        self._perm_cache: dict[tuple[int, int], np.ndarray] = {}
        self.last_window_starts = np.zeros(0, dtype=np.int64)

    @property
    def tokens_per_batch(self) -> int:
        """Target tokens this rank delivers per `next_batch()` (multiply by world_size for the global batch)."""
        return self.batch_size * self.seq_len

    @property
    def num_windows(self) -> int:
        return sum(len(g) for g in self.groups)

    @property
    def epoch(self) -> float:
        """Epochs of the (largest-weight) data consumed so far, for logging."""
        return float(np.max(self.counts / np.array([len(g) for g in self.groups])))

    def _perm(self, group: int, epoch: int) -> np.ndarray:
        key = (group, epoch)
        if key not in self._perm_cache:
            if len(self._perm_cache) > 2 * len(self.groups):
                self._perm_cache.clear()
            rng = np.random.default_rng([self.seed, group, epoch])
            self._perm_cache[key] = rng.permutation(len(self.groups[group]))
        return self._perm_cache[key]

    def _window_starts(self) -> np.ndarray:
        """Stream offsets of this rank's windows for the current step; advances the global counters."""
        per_step = self.world_size * self.batch_size
        if len(self.groups) == 1:
            group_of = np.zeros(per_step, dtype=np.int64)
        else:
            u = np.random.default_rng([self.seed, 1 << 20, self.step]).random(per_step)
            group_of = np.minimum(np.searchsorted(np.cumsum(self.weights), u, side="right"), len(self.groups) - 1)
        mine = slice(self.rank * self.batch_size, (self.rank + 1) * self.batch_size)
        out = np.empty(self.batch_size, dtype=np.int64)
        for g in range(len(self.groups)):
            sel = group_of == g
            k = self.counts[g] + np.cumsum(sel)[sel] - 1  # per-group sample index of each position
            n = len(self.groups[g])
            idx = np.empty(len(k), dtype=np.int64)
            for epoch in np.unique(k // n):
                at = k // n == epoch
                idx[at] = self._perm(g, int(epoch))[k[at] % n]
            where = np.flatnonzero(sel)
            take = (where >= mine.start) & (where < mine.stop)
            out[where[take] - mine.start] = self.groups[g][idx[take]]
            self.counts[g] += int(sel.sum())
        self.step += 1
        return out

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        starts = self._window_starts()
        self.last_window_starts = starts  # stream offsets of this batch's rows, for checks and debugging
        span = self.seq_len + 1
        buf = np.empty((self.batch_size, span), dtype=np.int64)
        for i, s in enumerate(starts):
            buf[i] = self.dataset.read(int(s), span)
        t = torch.from_numpy(buf)
        return t[:, :-1].contiguous(), t[:, 1:].contiguous()

    def __iter__(self):
        while True:
            yield self.next_batch()

    def state_dict(self) -> dict:
        """The position in the stream; identical on every rank, so rank 0's copy resumes all of them."""
        return {
            "step": self.step,
            "counts": self.counts.tolist(),
            "seed": self.seed,
            "seq_len": self.seq_len,
            "batch_size": self.batch_size,
            "world_size": self.world_size,
            "groups": self.group_names,
            "num_windows": [len(g) for g in self.groups],
        }

    def load_state_dict(self, state: dict) -> None:
        mine = self.state_dict()
        for key in ("seed", "seq_len", "batch_size", "world_size", "groups", "num_windows"):
            if state.get(key) != mine[key]:
                raise ValueError(
                    f"loader state has {key}={state.get(key)!r} but this loader has {mine[key]!r}: "
                    "resume needs the same data, seed, shapes and world size"
                )
        self.step = int(state["step"])
        self.counts = np.array(state["counts"], dtype=np.int64)
