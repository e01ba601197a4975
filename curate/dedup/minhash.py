"""MinHash near-duplicate removal in four phases that stay within memory, each parallel on the executor.

1. `signatures` (per shard): a MinHash signature per document (equal to datasketch's), kept as a
   `.npy` matrix in the work directory, plus one 64-bit hash per LSH band in Parquet, sorted by
   (band, hash partition);
2. `buckets` (per band x partition): polars groups the band hashes; each document of a bucket is a
   candidate of the bucket's first document (smallest id hash), and the pair is kept only if the
   signatures' estimated Jaccard reaches `threshold` (read by row from memory-mapped matrices);
3. `cluster` (one task): connected components of the verified pairs with a vectorised union-find
   over only the documents that have a pair, then one keeper per cluster by policy;
4. `filter` (per shard): drop the others by id, write `dedup_cluster` / `dedup_cluster_size`.

Nothing depends on the order or number of input files: candidates and keepers are chosen by
document id (or its hash), and clusters are named after the id of the document they keep.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import polars as pl
import pyarrow as pa
import xxhash

from curate.core.stats import StepStats
from curate.core.step import GlobalContext, GlobalStep
from curate.core.validate import check, config_error
from curate.dedup import common
from curate.dedup.signatures import permutations, signatures
from curate.io import fs

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)


def band_hashes(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(n, bands) uint64: a mixing hash of each band's `rows` values (a collision only adds a candidate)."""
    n = sig.shape[0]
    out = np.empty((n, bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for b in range(bands):
            h = np.full(n, b + 1, dtype=np.uint64) * _M1
            for v in sig[:, b * rows:(b + 1) * rows].T:
                h = (h ^ v.astype(np.uint64)) * _M2
                h ^= h >> np.uint64(31)
            out[:, b] = h
    return out


def id_hashes(ids: list[str]) -> np.ndarray:
    """A 64-bit hash of each id: the order-independent tie-break for candidates inside a bucket."""
    return np.fromiter((xxhash.xxh3_64_intdigest(i.encode()) for i in ids), dtype=np.uint64, count=len(ids))


@dataclass
class SignatureTask:
    shard: int
    path: str
    work: str
    num_perm: int
    seed: int
    ngram: int
    bands: int
    rows: int
    parts: int
    batch_docs: int


def signature_shard(task: SignatureTask) -> dict:
    """Phase 1 for one shard: signatures (.npy), document table (.parquet) and band hashes (.parquet)."""
    name = common.shard_name(task.shard)
    pf = fs.parquet_file(task.path)
    n = pf.metadata.num_rows
    sig_file = fs.Staged(fs.join(task.work, "sigs", f"{name}.npy"), tmp_name=f"{name}.npy.tmp.{os.getpid()}.npy")
    sig = np.lib.format.open_memmap(sig_file.tmp, mode="w+", dtype=np.uint32, shape=(n, task.num_perm))
    perms = permutations(task.num_perm, task.seed)
    columns = [c for c in ("id", "text", "quality_score") if c in pf.schema_arrow.names]
    ids, lengths, quality, shingles, band_parts = [], [], [], [], []
    row = 0
    for batch in pf.iter_batches(batch_size=task.batch_docs, columns=columns):
        rec = batch.to_pydict()
        s, counts = signatures(rec["text"], perms=perms, ngram=task.ngram)
        sig[row:row + len(s)] = s
        bid = rec["id"]
        ids.extend(bid)
        lengths.extend(len(t) for t in rec["text"])
        quality.extend(rec.get("quality_score") or [None] * len(bid))
        shingles.append(counts)
        has = np.nonzero(counts > 0)[0]  # a document with no word has no signature to compare
        if len(has):
            bh = band_hashes(s[has], task.bands, task.rows)
            docs = (np.uint64(task.shard) << np.uint64(32)) | (has + row).astype(np.uint64)
            keys = id_hashes([bid[i] for i in has])
            for b in range(task.bands):
                band_parts.append(pa.table({
                    "band": np.full(len(has), b, dtype=np.uint8),
                    "part": common.partition_of(bh[:, b], task.parts),
                    "bhash": bh[:, b], "idkey": keys, "doc": docs,
                }))
        row += len(s)
    sig.flush()
    del sig
    sig_file.commit()  # a local temporary file: renamed, or uploaded whole to an object store
    counts = np.concatenate(shingles) if shingles else np.zeros(0, np.int64)
    common.write_table(pa.table({
        "id": pa.array(ids, pa.string()),
        "length": pa.array(lengths, pa.int64()),
        "quality": pa.array(quality, pa.float32()),
        "shingles": counts,
    }), fs.join(task.work, "docs", f"{name}.parquet"))
    schema = pa.schema([("band", pa.uint8()), ("part", pa.uint16()), ("bhash", pa.uint64()),
                        ("idkey", pa.uint64()), ("doc", pa.uint64())])
    bands = pa.concat_tables(band_parts) if band_parts else schema.empty_table()
    common.write_table(bands.sort_by([("band", "ascending"), ("part", "ascending")]),
                       fs.join(task.work, "bands", f"{name}.parquet"))
    return {"rows": n, "empty": int((counts == 0).sum()), "shingles": int(counts.sum())}


class SignatureStore:
    """Random access to signatures by document handle (shard << 32 | row), through memory maps."""

    def __init__(self, work: str):
        self.work = work
        self.maps: dict[int, np.ndarray] = {}

    def get(self, docs: np.ndarray) -> np.ndarray:
        shards = (docs >> np.uint64(32)).astype(np.int64)
        rows = (docs & np.uint64(0xFFFFFFFF)).astype(np.int64)
        out = None
        for s in np.unique(shards):
            if s not in self.maps:
                path = fs.join(self.work, "sigs", f"{common.shard_name(int(s))}.npy")
                self.maps[s] = fs.load_npy(path, mmap=True)  # mapped on a local disk, read whole from a URL
            m = self.maps[s]
            out = np.empty((len(docs), m.shape[1]), dtype=np.uint32) if out is None else out
            sel = shards == s
            out[sel] = m[rows[sel]]
        return out if out is not None else np.zeros((0, 0), dtype=np.uint32)


@dataclass
class BucketTask:
    band: int
    part: int
    bands_files: list[str]
    work: str
    out: str
    threshold: float


def bucket_band(task: BucketTask) -> dict:
    """Phase 2 for one band and partition: candidate pairs from equal band hashes, verified by signature."""
    table = common.read_where(task.bands_files, "band", task.band, ["part", "bhash", "idkey", "doc"])
    df = pl.from_arrow(table).filter(pl.col("part") == task.part) if table.num_rows else pl.DataFrame()
    pairs = np.zeros((0, 2), dtype=np.uint64)
    candidates = 0
    if df.height:
        df = (df.with_columns(pl.len().over("bhash").alias("n")).filter(pl.col("n") > 1)
                .sort(["bhash", "idkey", "doc"])
                .with_columns(pl.col("doc").first().over("bhash").alias("center"))
                .filter(pl.col("doc") != pl.col("center")))
        candidates = df.height
        if candidates:
            a = df["center"].to_numpy()
            b = df["doc"].to_numpy()
            store = SignatureStore(task.work)
            sim = np.empty(candidates, dtype=np.float64)
            for lo in range(0, candidates, 65_536):  # bounded memory however large the bucket
                hi = min(lo + 65_536, candidates)
                sim[lo:hi] = (store.get(a[lo:hi]) == store.get(b[lo:hi])).mean(axis=1)
            ok = sim >= task.threshold
            pairs = np.stack([a[ok], b[ok]], axis=1)
    common.write_table(pa.table({"a": pairs[:, 0], "b": pairs[:, 1]}), task.out)
    return {"candidates": candidates, "verified": int(len(pairs))}


def connected_components(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Component label (its smallest vertex) of each of `n` vertices joined by edges a[i]-b[i].

    Min-label propagation with pointer jumping, all in numpy: each round hooks every vertex to the
    smallest label across its edges, then jumps labels to their roots; it ends in a few rounds on
    the shallow, star-like graphs that near-duplicates form.
    """
    label = np.arange(n, dtype=np.int64)
    while True:
        m = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, m)
        np.minimum.at(new, b, m)
        np.minimum.at(new, label, new)  # hook roots too, so that whole trees merge
        while True:
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, label):
            return label
        label = new


@dataclass
class ClusterTask:
    edges: list[str]
    work: str
    out: str
    keep: str


def cluster(task: ClusterTask) -> dict:
    """Phase 3: clusters of the verified pairs, one keeper each; decisions sorted by shard."""
    tables = [fs.read_table(p) for p in task.edges if fs.exists(p)]
    edges = pa.concat_tables(tables) if tables else pa.table({"a": pa.array([], pa.uint64()), "b": pa.array([], pa.uint64())})
    e = pl.from_arrow(edges).unique() if edges.num_rows else None
    schema = {"shard": pl.Int32, "id": pl.String, "cluster": pl.String, "size": pl.Int32, "keep": pl.Boolean}
    if e is None or not e.height:
        common.write_table(pl.DataFrame(schema=schema).to_arrow(), task.out)
        return {"clusters": 0, "duplicates": 0, "edges": 0, "largest": 0}
    a, b = e["a"].to_numpy(), e["b"].to_numpy()
    docs, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
    label = connected_components(inverse[: len(a)], inverse[len(a):], len(docs))
    shards = (docs >> np.uint64(32)).astype(np.int64)
    rows = (docs & np.uint64(0xFFFFFFFF)).astype(np.int64)
    parts = []
    for s in np.unique(shards):  # the members' ids and attributes, one document table at a time
        sel = np.nonzero(shards == s)[0]
        info = fs.read_table(fs.join(task.work, "docs", f"{common.shard_name(int(s))}.parquet"),
                             columns=["id", "length", "quality"]).take(rows[sel])
        parts.append(pl.from_arrow(info).with_columns(
            pl.Series("shard", np.full(len(sel), s, dtype=np.int32)),
            pl.Series("component", label[sel]),
        ))
    members = common.choose_keepers(pl.concat(parts), "component", task.keep)
    out = members.select(["shard", "id", "cluster", "size", "keep"]).sort(["shard", "id"])
    common.write_table(out.to_arrow(), task.out)
    return {
        "clusters": int(out["keep"].sum()),
        "duplicates": int((~out["keep"]).sum()),
        "edges": e.height,
        "largest": int(out["size"].max()),
    }


class MinHash(GlobalStep):
    """Drop near-duplicates: documents whose word n-gram sets have estimated Jaccard >= `threshold`.

    Defaults follow FineWeb: 5-grams, 14 bands x 8 rows (112 permutations); `threshold` defaults
    to the LSH curve's midpoint (1/bands)^(1/rows), about 0.72. `MinHash.for_threshold(0.8)` picks
    bands and rows with datasketch's optimal-parameter search instead. `keep` chooses the document
    kept per cluster: "first" (smallest id), "longest" or "quality" (highest quality_score).
    """

    name: ClassVar[str] = "minhash"
    columns: ClassVar[dict[str, pa.DataType]] = {"dedup_cluster": pa.string(), "dedup_cluster_size": pa.int32()}

    def __init__(self, bands: int = 14, rows: int = 8, threshold: float | None = None, ngram: int = 5,
                 seed: int = 1, keep: str = "first", partitions: int | None = None, batch_docs: int = 4096):
        check(self, "bands", bands, int, lo=1, hi=256)  # band numbers are stored as uint8
        check(self, "rows", rows, int, lo=1)
        check(self, "ngram", ngram, int, lo=1)
        check(self, "seed", seed, int, lo=0, hi=2**32 - 1)  # numpy RandomState seeds
        check(self, "threshold", threshold, float, lo=0, hi=1, lo_open=True, optional=True)
        self.bands, self.rows, self.ngram, self.seed = bands, rows, ngram, seed
        self.threshold = threshold if threshold is not None else round((1 / bands) ** (1 / rows), 4)
        self.keep = check(self, "keep", keep, choices=common.KEEP_POLICIES)
        check(self, "partitions", partitions, int, lo=1, optional=True)
        if partitions and partitions & (partitions - 1):
            raise config_error(self, f"partitions must be a power of two or None, got {partitions}")
        self.partitions = partitions
        self.batch_docs = check(self, "batch_docs", batch_docs, int, lo=1)

    @classmethod
    def for_threshold(cls, threshold: float, num_perm: int = 112, **kw) -> MinHash:
        """Bands x rows <= num_perm minimising false positives plus false negatives at `threshold`."""
        from datasketch.lsh import _optimal_param

        bands, rows = _optimal_param(threshold, num_perm, 0.5, 0.5)
        return cls(bands=bands, rows=rows, threshold=threshold, **kw)

    @property
    def num_perm(self) -> int:
        return self.bands * self.rows

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        common.check_work_dir(ctx.work_dir, ctx.inputs, {"step": repr(self)})
        parts = common.partitions_for(ctx.inputs, self.partitions)
        names = [common.shard_name(i) for i in range(len(ctx.inputs))]
        seconds: dict[str, float] = {}

        t = time.perf_counter()
        signed = common.run_phase(ctx, "signatures", signature_shard, [
            SignatureTask(i, p, ctx.work_dir, self.num_perm, self.seed, self.ngram, self.bands, self.rows, parts,
                          self.batch_docs)
            for i, p in enumerate(ctx.inputs)], names)
        seconds["signatures"] = time.perf_counter() - t

        t = time.perf_counter()
        bands_files = [fs.join(ctx.work_dir, "bands", f"{n}.parquet") for n in names]
        jobs = [(b, p) for b in range(self.bands) for p in range(parts)]
        edges = [fs.join(ctx.work_dir, "edges", f"{b:03d}-{p:04d}.parquet") for b, p in jobs]
        bucketed = common.run_phase(ctx, "buckets", bucket_band, [
            BucketTask(b, p, bands_files, ctx.work_dir, out, self.threshold) for (b, p), out in zip(jobs, edges, strict=True)],
            [f"{b:03d}-{p:04d}" for b, p in jobs])
        seconds["buckets"] = time.perf_counter() - t

        t = time.perf_counter()
        decisions = fs.join(ctx.work_dir, "clusters.parquet")
        clustered = common.run_phase(ctx, "cluster", cluster, [ClusterTask(edges, ctx.work_dir, decisions, self.keep)],
                                     ["all"])[0]
        seconds["cluster"] = time.perf_counter() - t

        t = time.perf_counter()
        filtered = common.run_filter(ctx, self.name, [decisions], [s["rows"] for s in signed], cluster_columns=True)
        seconds["filter"] = time.perf_counter() - t
        extra = {
            "bands": self.bands, "rows": self.rows, "threshold": self.threshold, "ngram": self.ngram,
            "partitions": parts,
            "no_words": sum(s["empty"] for s in signed),
            "shingles": sum(s["shingles"] for s in signed),
            "candidate_pairs": sum(b["candidates"] for b in bucketed),
            "verified_pairs": sum(b["verified"] for b in bucketed),
            "clusters": clustered["clusters"],
            "largest_cluster": clustered["largest"],
            "seconds": {k: round(v, 3) for k, v in seconds.items()},
        }
        return common.step_stats(self.name, filtered, extra)
