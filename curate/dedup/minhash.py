"""MinHash near-duplicate removal in phases that each hold one partition in memory, parallel on the executor.

1. `signatures` (per shard): a MinHash signature per document (equal to datasketch's), kept as a
   `.npy` matrix in the work directory, plus one 64-bit hash per LSH band in a second `.npy`, sorted
   by (band, hash partition), with the row count of every (band, partition) in the task's result;
2. `buckets` (per band x partition): reads only its rows of every band file (one ranged read per
   shard at the offset the signatures results give, no footer to parse), groups the
   band hashes with polars and verifies members against centres (`verify_buckets`): a pair is kept
   only if the signatures' estimated Jaccard reaches `threshold` (read by row with pread from the .npy matrices);
3. `components-*` (rounds of per-partition tasks): connected components of the verified pairs by
   large-star / small-star (`curate.dedup.components`), never all edges in one process;
4. `members` (per shard) attaches each clustered document's id, length and score to its component;
   `keep` (per component partition) chooses one keeper per component by policy;
5. `filter` (per shard): drop the others by id, write `dedup_cluster` / `dedup_cluster_size`.

Nothing depends on the order or number of input files: candidates and keepers are chosen by
document id (or its hash), and clusters are named after the id of the document they keep. Documents
are addressed by (shard, row), so of copies that share an id (one shard given twice) exactly one is
kept; a document with no word meets its own copies only (`_band_rows`).
"""

from __future__ import annotations

import io
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
from curate.dedup import common, components
from curate.dedup.sketch import FAST_VERSION, SCHEMES, permutations, signatures_by_scheme
from curate.io import fs
from curate.io.batching import iter_batches
from curate.lang import units_version

BAND_ROW_BYTES = 24  # a band file row: bhash, idkey, doc as little-endian uint64
MAX_CENTRES = 32  # centres tried per bucket before its unmatched members are counted as unresolved
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
    scheme: str = "datasketch"
    default_lang: str = "en"


def signature_shard(task: SignatureTask) -> dict:
    """Phase 1 for one shard: signatures (.npy), document table (.parquet) and band hashes (.npy).

    Every file is written in order with `write`, its space reserved first where the filesystem can: a memory
    map opened for writing (as the signatures once were) takes no disk until a page is touched, and a full
    disk then kills the process with SIGBUS; here it is an OSError naming the file (`common.naming`)."""
    name = common.shard_name(task.shard)
    pf = fs.parquet_file(task.path)
    n = pf.metadata.num_rows
    sig_file = fs.Staged(fs.join(task.work, "sigs", f"{name}.npy"), tmp_name=f"{name}.npy.tmp.{os.getpid()}.npy")
    perms = permutations(task.num_perm, task.seed)
    columns = [c for c in ("id", "text", "quality_score", "lang") if c in pf.schema_arrow.names]
    ids, lengths, quality, texthash, shingles, band_parts = [], [], [], [], [], []
    row = 0
    try:
        with common.naming(sig_file.tmp), open(sig_file.tmp, "wb") as sig:  # written in order: no sparse map
            np.lib.format.write_array_header_1_0(sig, {"descr": np.lib.format.dtype_to_descr(np.dtype("<u4")),
                                                       "fortran_order": False, "shape": (n, task.num_perm)})
            common.reserve(sig, sig.tell() + 4 * n * task.num_perm, sig_file.tmp)  # a full disk: now, named
            for batch in iter_batches(pf, columns=columns, max_rows=task.batch_docs):
                rec = batch.to_pydict()
                s, counts = signatures_by_scheme(rec["text"], task.scheme, perms=perms, ngram=task.ngram,
                                                 langs=rec.get("lang"), default_lang=task.default_lang)
                sig.write(np.ascontiguousarray(s, dtype="<u4").data)
                texthash.append(common.text_hashes(rec["text"]))
                band_parts.extend(_band_rows(task, s, counts, rec["id"], texthash[-1], row))
                ids.extend(rec["id"])
                lengths.extend(len(t) for t in rec["text"])
                quality.extend(rec.get("quality_score") or [None] * len(s))
                shingles.append(counts)
                row += len(s)
            if row != n:
                raise RuntimeError(f"{task.path}: read {row} rows of the {n} its footer declares")
    except BaseException:
        sig_file.discard()
        raise
    sig_file.commit()  # a local temporary file: renamed, or uploaded whole to an object store
    counts = np.concatenate(shingles) if shingles else np.zeros(0, np.int64)
    common.write_table(pa.table({
        "id": pa.array(ids, pa.string()),
        "length": pa.array(lengths, pa.int64()),
        "quality": pa.array(quality, pa.float32()),
        "texthash": np.concatenate(texthash) if texthash else np.zeros(0, np.uint64),
        "shingles": counts,
    }), fs.join(task.work, "docs", f"{name}.parquet"))
    offset, segments = write_bands(band_parts, task.bands * task.parts, fs.join(task.work, "bands", f"{name}.npy"))
    return {"rows": n, "empty": int((counts == 0).sum()), "shingles": int(counts.sum()),
            "bands_offset": offset, "segments": segments}


def _band_rows(task: SignatureTask, s: np.ndarray, counts: np.ndarray, bid: list[str], texthash: np.ndarray,
               row: int) -> list:
    """(segment, (bhash, idkey, doc) rows) of a batch's documents, one pair per band.

    A document with no word has no signature to compare: it gets one row, in band 0, whose hash is its id's
    and raw text's, so it meets its own copies only (their empty signatures agree, and one of them is kept)."""
    docs = (np.uint64(task.shard) << np.uint64(32)) | (np.arange(len(s)) + row).astype(np.uint64)
    keys = id_hashes(bid)
    has = np.nonzero(counts > 0)[0]
    out = []
    if len(has):
        bh = band_hashes(s[has], task.bands, task.rows)
        out = [(b * task.parts + common.partition_of(bh[:, b], task.parts).astype(np.int64),
                np.column_stack([bh[:, b], keys[has], docs[has]])) for b in range(task.bands)]
    none = np.nonzero(counts == 0)[0]
    if len(none):
        with np.errstate(over="ignore"):
            copy = (keys[none] * _M1) ^ texthash[none]
        out.append((common.partition_of(copy, task.parts).astype(np.int64), np.column_stack([copy, keys[none], docs[none]])))
    return out


def write_bands(band_parts: list[tuple[np.ndarray, np.ndarray]], n_segments: int, path: str) -> tuple[int, list[int]]:
    """Write a shard's (bhash, idkey, doc) rows as one (rows, 3) uint64 .npy, sorted by segment (band x partition).

    Returns the byte offset of the data and the row count of every segment: the index a buckets task
    uses to read its slice of each shard with one ranged read, with no footer or header to parse
    (one Parquet file per shard with a row group per segment made every task parse every shard's
    footer, whose size grows with the segments: O(N^2) in the corpus). One file per shard keeps the
    file count that of the inputs, where a file per segment would be bands x partitions x shards.
    """
    seg = np.concatenate([s for s, _ in band_parts]) if band_parts else np.zeros(0, np.int64)
    rows = np.concatenate([r for _, r in band_parts]) if band_parts else np.zeros((0, 3), np.uint64)
    del band_parts[:]
    rows = rows[np.argsort(seg, kind="stable")].astype("<u8", copy=False)
    staged = fs.Staged(path, tmp_name=f"{fs.basename(path)}.tmp.{os.getpid()}")
    try:
        with common.naming(staged.tmp), open(staged.tmp, "wb") as f:  # np.save's header, then the rows reserved
            np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(rows.dtype),
                                                     "fortran_order": False, "shape": rows.shape})
            offset = f.tell()
            common.reserve(f, offset + rows.nbytes, staged.tmp)
            f.write(np.ascontiguousarray(rows).data)  # np.save's tofile reports a full disk with no errno
    except BaseException:
        staged.discard()
        raise
    staged.commit()
    return offset, np.bincount(seg, minlength=n_segments).tolist()


class SignatureStore:
    """Signatures by document handle (shard << 32 | row), read from each shard's .npy without loading it.

    A local file is read row by row (`pread`), so a task holds only the rows it asked for: a memory map
    would leave every page the kernel maps around a row resident (about 300 MiB per bucket task at 5 M
    documents). A URL is read with one ranged GET per call and shard, spanning the rows asked for and
    dropped after use, so a task never holds a whole shard's matrix, let alone one per shard.
    """

    def __init__(self, work: str):
        self.work = work
        self.layout: dict[int, tuple[int, int]] = {}  # shard -> (byte offset of row 0, row width), from the header

    def get(self, docs: np.ndarray) -> np.ndarray:
        shards = (docs >> np.uint64(32)).astype(np.int64)
        rows = (docs & np.uint64(0xFFFFFFFF)).astype(np.int64)
        out = None
        for s in np.unique(shards).tolist():
            sel = np.flatnonzero(shards == s)
            got = self._rows(s, rows[sel])
            out = np.empty((len(docs), got.shape[1]), dtype=np.uint32) if out is None else out
            out[sel] = got
        return out if out is not None else np.zeros((0, 0), dtype=np.uint32)

    def _layout(self, shard: int, path: str) -> tuple[int, int]:
        if shard not in self.layout:
            head = common.read_range(path, 0, 12)  # magic, version, header length (2 bytes in v1, 4 after)
            at, hlen = (10, int.from_bytes(head[8:10], "little")) if head[6] == 1 else (12, int.from_bytes(head[8:12], "little"))
            f = io.BytesIO(common.read_range(path, 0, at + hlen))
            version = np.lib.format.read_magic(f)
            header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            (_, width), _, _ = header(f)
            self.layout[shard] = (f.tell(), width)
        return self.layout[shard]

    def _rows(self, shard: int, rows: np.ndarray) -> np.ndarray:
        path = fs.join(self.work, "sigs", f"{common.shard_name(shard)}.npy")
        start, width = self._layout(shard, path)
        size = 4 * width
        local = fs.local_path(path)
        if local is None:
            lo, hi = int(rows.min()), int(rows.max()) + 1
            span = np.frombuffer(common.read_range(path, start + lo * size, (hi - lo) * size), dtype=np.uint32)
            return span.reshape(hi - lo, width)[rows - lo]
        with open(local, "rb", buffering=0) as f:
            data = b"".join(os.pread(f.fileno(), size, start + r * size) for r in rows.tolist())
        return np.frombuffer(data, dtype=np.uint32).reshape(len(rows), width)


@dataclass
class BucketTask:
    band: int
    part: int
    parts: int
    bands_files: list[str]  # one per shard, the same list object in every task
    starts: np.ndarray  # (shards,) byte offset of this segment's rows in each band file
    counts: np.ndarray  # (shards,) its row count there
    work: str
    out: str
    threshold: float


def band_index(signed: list[dict], n_segments: int) -> tuple[np.ndarray, np.ndarray]:
    """(segments, shards) byte offsets and row counts of every segment in every band file.

    Built from the signatures results, whose per-segment lists it takes out of them, so the driver holds
    12 bytes per segment and shard; each task gets a row of each (a view), never a copy of the index.
    """
    counts = np.zeros((n_segments, len(signed)), dtype=np.uint32)
    offsets = np.zeros(len(signed), dtype=np.int64)
    for i, s in enumerate(signed):
        counts[:, i] = s.pop("segments")
        offsets[i] = s["bands_offset"]
    starts = offsets + BAND_ROW_BYTES * (np.cumsum(counts, axis=0, dtype=np.int64) - counts)
    return starts, counts


def bucket_band(task: BucketTask) -> dict:
    """Phase 2 for one band and partition: candidate pairs from equal band hashes, verified by signature.

    Reads only this (band, partition)'s rows of each band file: one ranged read per shard holding
    some, no footer. Writes the verified pairs in both directions, keyed by vertex partition, for `components`.
    """
    rows = [np.frombuffer(common.read_range(task.bands_files[i], int(task.starts[i]), BAND_ROW_BYTES * int(n)),
                          dtype="<u8").reshape(int(n), 3)
            for i, n in enumerate(task.counts.tolist()) if n]
    pairs, figures = np.zeros((0, 2), dtype=np.uint64), {"candidates": 0, "centres": 0, "unresolved": 0}
    if rows:
        both = np.concatenate(rows)
        df = (pl.DataFrame({"bhash": both[:, 0], "idkey": both[:, 1], "doc": both[:, 2]})
              .filter(pl.len().over("bhash") > 1).sort(["bhash", "idkey", "doc"]))
        if df.height:
            group = np.cumsum(np.r_[True, df["bhash"].to_numpy()[1:] != df["bhash"].to_numpy()[:-1]]) - 1
            pairs, figures = verify_buckets(group, df["doc"].to_numpy(), SignatureStore(task.work), task.threshold)
    components.write_edges(components.edge_table(pairs[:, 0], pairs[:, 1], task.parts, both=True), task.out)
    return {**figures, "verified": int(len(pairs))}


def verify_buckets(group: np.ndarray, docs: np.ndarray, store: SignatureStore, threshold: float,
                   max_centres: int = MAX_CENTRES) -> tuple[np.ndarray, dict]:
    """Verified pairs of buckets (rows sorted by bucket, then id hash): members joined to a centre they match.

    The first member of a bucket (smallest id hash) is its centre; each other member whose signature
    agrees with the centre's on at least `threshold` of the values is paired with it. Members that
    matched no centre yet get the next of them as their centre, and so on, up to `max_centres` centres
    per bucket. So a document unlike the others cannot hide the bucket's true pairs by having the
    smallest id hash: it is a centre nobody matches, and the bucket is verified against the next one.
    Every pair written was verified; when a bucket of many mutually unlike documents runs out of
    centres, its members left unverified are counted (`unresolved`).
    """
    rows = np.arange(len(docs))
    pairs, candidates, centres = [], 0, 0
    for _ in range(max_centres):
        first = np.r_[True, group[rows][1:] != group[rows][:-1]] if len(rows) else np.zeros(0, bool)
        centre = rows[first][np.cumsum(first) - 1]  # each remaining row's centre: its bucket's first
        members, their = rows[~first], centre[~first]
        centres += int(first.sum())
        candidates += len(members)
        ok = np.zeros(len(members), dtype=bool)
        for lo in range(0, len(members), 65_536):  # bounded memory however large the bucket
            hi = min(lo + 65_536, len(members))
            sim = (store.get(docs[their[lo:hi]]) == store.get(docs[members[lo:hi]])).mean(axis=1)
            ok[lo:hi] = sim >= threshold
        pairs.append(np.stack([docs[their[ok]], docs[members[ok]]], axis=1))
        rows = members[~ok]
        if not len(rows):
            break
    unresolved = 0
    if len(rows):
        g = group[rows]
        unresolved = int(len(rows) - (np.r_[True, g[1:] != g[:-1]] & np.r_[g[1:] != g[:-1], True]).sum())
    return np.concatenate(pairs), {"candidates": candidates, "centres": centres, "unresolved": unresolved}


@dataclass
class MembersTask:
    shard: int
    labels: list[str]  # (shard, vertex, label) files of `components`, sorted by shard
    work: str
    parts: int
    out: str


def member_shard(task: MembersTask) -> dict:
    """Phase 4, per shard: the shard's documents that have a near-duplicate, with their component and attributes."""
    lab = common.read_where(task.labels, {"shard": task.shard}, ["vertex", "label"])
    schema = pa.schema([("kpart", pa.uint16()), ("component", pa.uint64()), ("shard", pa.int32()), ("row", pa.uint32()),
                        ("id", pa.string()), ("length", pa.int64()), ("quality", pa.float32()),
                        ("texthash", pa.uint64())])
    if not lab.num_rows:
        common.write_table(schema.empty_table(), task.out)
        return {"members": 0}
    rows = (lab["vertex"].to_numpy() & np.uint64(0xFFFFFFFF)).astype(np.int64)
    info = fs.read_table(fs.join(task.work, "docs", f"{common.shard_name(task.shard)}.parquet"),
                         columns=["id", "length", "quality", "texthash"]).take(rows)
    label = lab["label"].to_numpy()
    table = pa.table({
        "kpart": components.vertex_part(label, task.parts), "component": label,
        "shard": np.full(len(rows), task.shard, dtype=np.int32), "row": rows.astype(np.uint32),
        "id": info["id"], "length": info["length"], "quality": info["quality"], "texthash": info["texthash"],
    }, schema=schema).sort_by("kpart")
    common.write_table(table, task.out, segments=["kpart"])
    return {"members": len(rows)}


@dataclass
class KeepTask:
    part: int
    members: list[str]
    out: str
    keep: str


def keep_part(task: KeepTask) -> dict:
    """Phase 5, per component partition: exactly one keeper per cluster by policy; decisions sorted by (shard, row)."""
    table = common.read_where(task.members, {"kpart": task.part},
                              ["component", "shard", "row", "id", "length", "quality", "texthash"])
    ranked = common.choose_keepers(pl.from_arrow(table), "component", task.keep) if table.num_rows else None
    out = common.decisions(ranked)
    common.write_table(out.to_arrow(), task.out)
    return {"clusters": int(out["keep"].sum()), "duplicates": int((~out["keep"]).sum()),
            "largest": int(out["size"].max() or 0) if out.height else 0,
            "same_id_copies": int(ranked["copies"].sum()) if ranked is not None else 0}


class MinHash(GlobalStep):
    """Drop near-duplicates: documents whose word n-gram sets have estimated Jaccard >= `threshold`.

    Defaults follow FineWeb: 5-grams, 14 bands x 8 rows (112 permutations); `threshold` defaults
    to the LSH curve's midpoint (1/bands)^(1/rows), about 0.72. `MinHash.for_threshold(0.8)` picks
    bands and rows with datasketch's optimal-parameter search instead. `keep` chooses the document
    kept per cluster: "smallest_id" (default), "longest" or "quality" (highest quality_score).
    `scheme` "datasketch" (default) makes every signature bit for bit datasketch's (SHA-1 per shingle);
    "fast" hashes each word once and a shingle from its words' hashes (`sketch.fast_signatures`, ngram <= 8):
    other values, the same Jaccard estimate, about half the CPU of the signatures phase from raw text.
    Words are those of each document's language (its `lang`, else `default_lang`): Chinese, Japanese, Thai, Lao,
    Khmer and Burmese documents are shingled from `curate.lang.words` (ICU), as FineWeb-2 does per language;
    every other language from the match form's runs of letters and digits, which are its words.
    """

    name: ClassVar[str] = "minhash"
    repeated_ids: ClassVar[str] = "keep_one"  # rows by (shard, row): of copies sharing an id, one is kept
    columns: ClassVar[dict[str, pa.DataType]] = {"dedup_cluster": pa.string(), "dedup_cluster_size": pa.int32()}

    def __init__(self, bands: int = 14, rows: int = 8, threshold: float | None = None, ngram: int = 5,
                 seed: int = 1, keep: str = "smallest_id", partitions: int | None = None, batch_docs: int = 4096,
                 scheme: str = "datasketch", default_lang: str = "en"):
        check(self, "bands", bands, int, lo=1, hi=256)  # band numbers are stored as uint8
        check(self, "rows", rows, int, lo=1)
        check(self, "ngram", ngram, int, lo=1)
        check(self, "seed", seed, int, lo=0, hi=2**32 - 1)  # numpy RandomState seeds
        check(self, "threshold", threshold, float, lo=0, hi=1, lo_open=True, optional=True)
        self.bands, self.rows, self.ngram, self.seed = bands, rows, ngram, seed
        self.threshold = threshold if threshold is not None else round((1 / bands) ** (1 / rows), 4)
        self.keep = common.check_keep(self, keep)
        check(self, "partitions", partitions, int, lo=1, optional=True)
        if partitions and partitions & (partitions - 1):
            raise config_error(self, f"partitions must be a power of two or None, got {partitions}")
        self.partitions = partitions
        self.batch_docs = check(self, "batch_docs", batch_docs, int, lo=1)
        if scheme not in SCHEMES:
            raise config_error(self, f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
        if scheme == "fast" and ngram > 8:
            raise config_error(self, f"scheme 'fast' takes ngram up to 8, got {ngram}")
        self.scheme = scheme
        if scheme == "fast":  # its values changed once: fingerprinted, so a resume never mixes two versions
            self.fast_version = FAST_VERSION
        self.default_lang = check(self, "default_lang", default_lang, str)
        self.text_units = units_version()  # the words of zh, ja, th, lo, km, my (curate.lang): fingerprinted

    @classmethod
    def for_threshold(cls, threshold: float, num_perm: int = 112, **kw) -> MinHash:
        """Bands x rows <= num_perm minimising false positives plus false negatives at `threshold`."""
        from datasketch.lsh import _optimal_param

        bands, rows = _optimal_param(threshold, num_perm, 0.5, 0.5)
        return cls(bands=bands, rows=rows, threshold=threshold, **kw)

    @property
    def num_perm(self) -> int:
        return self.bands * self.rows

    def _cluster(self, ctx: GlobalContext, edges: list[str], parts: int, names: list[str]) -> tuple[list[str], dict]:
        """Components of the verified pairs, then one keeper per component: decisions files, sorted by shard."""
        labels, figures = components.components(ctx, edges, parts, ctx.work_dir)
        member_files = [fs.join(ctx.work_dir, "members", f"{n}.parquet") for n in names]
        common.run_phase(ctx, "members", member_shard, [
            MembersTask(i, labels, ctx.work_dir, parts, out) for i, out in enumerate(member_files)], names)
        decisions = [fs.join(ctx.work_dir, "clusters", f"{p:04d}.parquet") for p in range(parts)]
        kept = common.run_phase(ctx, "keep", keep_part, [
            KeepTask(p, member_files, out, self.keep) for p, out in enumerate(decisions)],
            [f"{p:04d}" for p in range(parts)])
        return decisions, {
            "clusters": sum(k["clusters"] for k in kept),
            "same_id_copies": sum(k.get("same_id_copies", 0) for k in kept),
            "largest_cluster": max((k["largest"] for k in kept), default=0),
            "component_rounds": figures["rounds"],
        }

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        common.check_work_dir(ctx.work_dir, ctx.inputs, {"step": repr(self), "bands": "npy", "rows": "keyed"})
        parts = common.partitions_for(ctx.inputs, self.partitions)
        names = [common.shard_name(i) for i in range(len(ctx.inputs))]
        seconds: dict[str, float] = {}

        t = time.perf_counter()
        signed = common.run_phase(ctx, "signatures", signature_shard, [
            SignatureTask(i, p, ctx.work_dir, self.num_perm, self.seed, self.ngram, self.bands, self.rows, parts,
                          self.batch_docs, self.scheme, self.default_lang)
            for i, p in enumerate(ctx.inputs)], names)
        seconds["signatures"] = time.perf_counter() - t

        t = time.perf_counter()
        bands_files = [fs.join(ctx.work_dir, "bands", f"{n}.npy") for n in names]
        jobs = [(b, p) for b in range(self.bands) for p in range(parts)]
        edges = [fs.join(ctx.work_dir, "edges", f"{b:03d}-{p:04d}.parquet") for b, p in jobs]
        starts, counts = band_index(signed, len(jobs))
        bucketed = common.run_phase(ctx, "buckets", bucket_band, [
            BucketTask(b, p, parts, bands_files, starts[b * parts + p], counts[b * parts + p], ctx.work_dir, out,
                       self.threshold)
            for (b, p), out in zip(jobs, edges, strict=True)], [f"{b:03d}-{p:04d}" for b, p in jobs])
        seconds["buckets"] = time.perf_counter() - t

        t = time.perf_counter()
        decisions, clustered = self._cluster(ctx, edges, parts, names)
        seconds["cluster"] = time.perf_counter() - t

        t = time.perf_counter()
        filtered = common.run_filter(ctx, self.name, decisions, [s["rows"] for s in signed], cluster_columns=True)
        seconds["filter"] = time.perf_counter() - t
        extra = {
            "bands": self.bands, "rows": self.rows, "threshold": self.threshold, "ngram": self.ngram,
            "partitions": parts,
            "no_words": sum(s["empty"] for s in signed),
            "shingles": sum(s["shingles"] for s in signed),
            "candidate_pairs": sum(b["candidates"] for b in bucketed),
            "verified_pairs": sum(b["verified"] for b in bucketed),
            "bucket_centres": sum(b["centres"] for b in bucketed),
            "unresolved_members": sum(b["unresolved"] for b in bucketed),
            **clustered,
            "seconds": {k: round(v, 3) for k, v in seconds.items()},
        }
        return common.step_stats(self.name, filtered, extra)
