"""Semantic deduplication (SemDeDup, Abbas et al. 2023): documents whose embeddings are nearly parallel form a group;
one of each group is kept.

Phases on disk in the work directory, each a list of tasks through the executor (`common.run_phase`: markers,
resume), documents addressed by (shard, row):

1. `embed` (per shard, on a GPU where the model runs on one): every document's embedding from the inference layer
   (`curate.models.inference`: `embed`, mean-pooled last hidden states) or from a column of the shards
   (`embeddings_column`), L2-normalised, saved as one `.npy` per shard (float16 by default), with a table of
   (id, length, quality, texthash, sample key);
2. `kmeans` (one task): faiss k-means (spherical) trained on a seeded sample of at most `sample` embeddings, chosen
   by a hash of each document's text (so the same documents are sampled whatever the shards or workers), sorted by
   that key; the centroids saved;
3. `assign` (per shard): each embedding's nearest centroid (faiss, inner product) and its cosine to it, written
   with the embedding itself, sorted by pair task (`kpart`, a row group each);
4. `pairs` (per group of clusters): inside each cluster, the pairs with cosine >= 1 - eps, found block by block
   (`pairs_in`: a block of rows against the rows after it, never the whole similarity matrix of a big cluster), and
   their connected components; one document per component kept by `keep` (`common.choose_keepers`); decisions per
   task sorted by (shard, row);
5. `filter` (per shard): `common.run_filter`, which drops the others as `semantic:duplicate` and writes each
   document's group (named after the id of the document it keeps) in `semantic_cluster` / `semantic_cluster_size`.

Pairs across two k-means clusters are not looked for: that is SemDeDup's approximation, and what makes the step
scale (a pair task holds its clusters, never the corpus).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import polars as pl
import pyarrow as pa
import xxhash

from curate.core.stats import StepStats, Throughput, throughput
from curate.core.step import GlobalContext, GlobalStep
from curate.core.validate import check, config_error
from curate.dedup import common
from curate.io import fs
from curate.io.batching import iter_batches
from curate.models.spec import ModelSpec

DTYPES = ("float16", "float32")
COLUMNS = ("semantic_cluster", "semantic_cluster_size")
READ_ROWS = 1024  # rows read and embedded at a time
ASSIGN_ROWS = 65_536  # rows searched against the centroids at a time
ROWS_PER_PAIR_TASK = 100_000  # documents (with their embeddings) one pairs task reads
MAX_PAIR_TASKS = 4096
_M = np.uint64(0x9E3779B97F4A7C15)


def sample_keys(texthash: np.ndarray, seed: int) -> np.ndarray:
    """The order documents are sampled in for k-means: a seeded mix of the hash of their raw text (splitmix64), so the
    sample depends on the documents and the seed only, never on shards, rows or workers."""
    with np.errstate(over="ignore"):
        h = texthash.astype(np.uint64) ^ (np.uint64(seed) * _M)
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return h ^ (h >> np.uint64(31))


def normalise(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero: cosine 0 with everything, so never a duplicate)."""
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norm > 0, norm, 1)


# ---------------------------------------------------------------- phase 1: embed


@dataclass
class EmbedTask:
    shard: int
    path: str
    work: str
    spec: ModelSpec | None  # None: the embeddings are the shards' `column`
    column: str | None
    max_tokens: int | None
    token_budget: int
    dtype: str
    seed: int


def _column_vectors(batch: pa.RecordBatch, column: str, start: int, path: str) -> np.ndarray:
    col = batch.column(column)
    if col.null_count:
        raise ValueError(f"{path}: row {start + col.is_null().to_pylist().index(True)} has no {column!r} embedding")
    lengths = set(col.value_lengths().to_pylist()) if len(col) else set()
    if len(lengths) > 1:
        raise ValueError(f"{path}: the {column!r} embeddings have different lengths {sorted(lengths)[:4]}")
    width = lengths.pop() if lengths else 0
    return col.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(len(col), width)


def embed_shard(task: EmbedTask) -> dict:
    """Phase 1 for one shard: normalised embeddings (.npy, row order) and the documents' table.

    Memory: the shard's embeddings in `dtype` (rows x dim x 2 bytes in float16) plus one batch of READ_ROWS."""
    name = common.shard_name(task.shard)
    pf = fs.parquet_file(task.path)
    want = ["id", "text", "quality_score", *([task.column] if task.column else [])]
    cols = [c for c in want if c in pf.schema_arrow.names]
    if task.column and task.column not in cols:
        raise ValueError(f"{task.path} has no column {task.column!r} (embeddings_column)")
    model = counter = None
    if task.spec is not None:
        from curate.models.inference import get_model

        model, counter = get_model(task.spec), Throughput()
    vecs, ids, lengths, quality, texthash = [], [], [], [], []
    for batch in iter_batches(pf, columns=cols, max_rows=READ_ROWS):
        texts = batch.column("text").to_pylist()
        if model is not None:
            v = model.embed(texts, task.max_tokens, counter, token_budget=task.token_budget)
        else:
            v = _column_vectors(batch, task.column, len(ids), task.path)
        vecs.append(normalise(v).astype(task.dtype))
        ids += batch.column("id").to_pylist()
        lengths += [len(t) for t in texts]
        quality += batch.column("quality_score").to_pylist() if "quality_score" in cols else [None] * len(texts)
        texthash.append(common.text_hashes(texts))
    emb = np.concatenate(vecs) if vecs else np.zeros((0, 0), dtype=task.dtype)
    th = np.concatenate(texthash) if texthash else np.zeros(0, np.uint64)
    path = fs.join(task.work, "embeddings", f"{name}.npy")
    with common.naming(path), fs.atomic_open(path, "wb", tmp_name=f"{name}.npy.tmp.{os.getpid()}") as f:
        np.save(f, emb)
    common.write_table(pa.table({
        "id": pa.array(ids, pa.string()), "length": pa.array(lengths, pa.int64()),
        "quality": pa.array(quality, pa.float32()), "texthash": th, "skey": sample_keys(th, task.seed),
    }), fs.join(task.work, "docs", f"{name}.parquet"))
    return {"rows": len(ids), "dim": int(emb.shape[1]), "throughput": dict(counter) if counter is not None else {}}


# ---------------------------------------------------------------- phase 2: k-means


@dataclass
class KMeansTask:
    work: str
    shards: int
    rows: int
    clusters: int
    sample: int
    niter: int
    seed: int


def training_sample(work: str, shards: int, rows: int, sample: int) -> np.ndarray:
    """The `sample` embeddings with the smallest sample keys, in key order (ties: by the vector's bytes), float32.

    A shard contributes the rows under a key bound chosen so that about 1.25 x `sample` rows pass; memory is those
    rows as stored, the sample in float32 and one shard's embeddings. Should fewer pass (an unlucky hash), every row
    is taken."""
    bound = 2**64 if sample >= rows else int(min(2**64, 2**64 * 1.25 * sample / rows)) + 1
    for limit in (bound, 2**64):
        keys, vecs = [], []
        for i in range(shards):
            name = common.shard_name(i)
            skey = fs.parquet_file(fs.join(work, "docs", f"{name}.parquet")).read(columns=["skey"])["skey"].to_numpy()
            take = np.flatnonzero(skey < limit) if limit < 2**64 else np.arange(len(skey))
            if len(take):
                emb = fs.load_npy(fs.join(work, "embeddings", f"{name}.npy"), mmap=True)
                keys.append(skey[take])
                vecs.append(np.asarray(emb[take]))  # as stored (float16: half the memory) until chosen
        n = sum(len(k) for k in keys)
        if n >= min(sample, rows):
            break
    key, x = np.concatenate(keys), np.concatenate(vecs)
    tie = np.fromiter((xxhash.xxh3_64_intdigest(r.tobytes()) for r in x), dtype=np.uint64, count=len(x))
    order = np.lexsort((tie, key))[:sample]
    return np.ascontiguousarray(x[order], dtype=np.float32)


def kmeans_train(task: KMeansTask) -> dict:
    """Phase 2: faiss spherical k-means on the training sample; the centroids saved as float32 .npy.

    faiss's k-means is deterministic for a given sample, order and seed (its own subsampling is switched off: the
    sample here is already the bound). Memory: the sample (sample x dim x 4 bytes) and the centroids."""
    import faiss

    x = training_sample(task.work, task.shards, task.rows, task.sample)
    k = max(1, min(task.clusters, len(x)))
    if k == 1:
        centroids = normalise(x.mean(axis=0, keepdims=True))
    else:
        km = faiss.Kmeans(x.shape[1], k, niter=task.niter, seed=task.seed, spherical=True, verbose=False,
                          max_points_per_centroid=len(x) + 1, min_points_per_centroid=1)
        km.train(x)
        centroids = np.asarray(km.centroids, dtype=np.float32)
    path = fs.join(task.work, "centroids.npy")
    with fs.atomic_open(path, "wb", tmp_name=f"centroids.npy.tmp.{os.getpid()}") as f:
        np.save(f, centroids)
    return {"sample": len(x), "clusters": k, "dim": int(x.shape[1])}


# ---------------------------------------------------------------- phase 3: assign


@dataclass
class AssignTask:
    shard: int
    work: str
    parts: int
    out: str


def nearest(x: np.ndarray, centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's nearest centroid by inner product (faiss flat search) and the cosine to it."""
    import faiss

    index = faiss.IndexFlatIP(centroids.shape[1])
    index.add(centroids)
    sims, labels = [], []
    for lo in range(0, len(x), ASSIGN_ROWS):
        s, lab = index.search(np.ascontiguousarray(x[lo:lo + ASSIGN_ROWS], dtype=np.float32), 1)
        sims.append(s[:, 0])
        labels.append(lab[:, 0])
    if not labels:
        return np.zeros(0, np.int32), np.zeros(0, np.float32)
    return np.concatenate(labels).astype(np.int32), np.concatenate(sims).astype(np.float32)


def assign_shard(task: AssignTask) -> dict:
    """Phase 3 for one shard: cluster, cosine to its centroid and the embedding of every row, sorted by pair task.

    Memory: the shard's embeddings twice (stored dtype, and ASSIGN_ROWS of them in float32) and its table."""
    name = common.shard_name(task.shard)
    emb = fs.load_npy(fs.join(task.work, "embeddings", f"{name}.npy"))
    docs = fs.parquet_file(fs.join(task.work, "docs", f"{name}.parquet")).read(
        columns=["id", "length", "quality", "texthash"])
    cluster, csim = nearest(emb, fs.load_npy(fs.join(task.work, "centroids.npy")))
    width = emb.dtype.itemsize * (emb.shape[1] if emb.ndim == 2 else 0)
    vec = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(emb), [None, pa.py_buffer(emb.tobytes())])
    table = pa.table({
        "kpart": (cluster % task.parts).astype(np.uint16), "cluster": cluster, "csim": csim,
        "shard": np.full(len(emb), task.shard, dtype=np.int32), "row": np.arange(len(emb), dtype=np.uint32),
        **{c: docs[c] for c in docs.column_names}, "vec": vec,
    }).sort_by([("kpart", "ascending"), ("cluster", "ascending"), ("row", "ascending")])
    common.write_table(table, task.out, segments=["kpart"])
    return {"rows": len(emb)}


# ---------------------------------------------------------------- phase 4: pairs and groups


def _block(x: np.ndarray, lo: int, hi: int, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """(a, b), a < b, of rows a in [lo, hi) and b >= lo whose inner product is >= threshold: one block's pairs."""
    a, b = np.nonzero(x[lo:hi] @ x[lo:].T >= threshold)
    a, b = a + lo, b + lo
    above = b > a
    return a[above], b[above]


def block_rows(m: int, block_floats: int) -> int:
    """Rows per block so that a block's similarities (rows x m floats) stay within `block_floats` (at least one)."""
    return max(1, block_floats // max(m, 1))


def pairs_in(x: np.ndarray, threshold: float, block_floats: int) -> np.ndarray:
    """(a, b) with a < b of the rows of `x` (unit rows, float32) whose inner product is >= threshold, found block by
    block (rows [lo, hi) against rows [lo, m)): at most `block_floats` similarities at a time, never m x m."""
    step = block_rows(len(x), block_floats)
    out = [np.zeros((0, 2), dtype=np.int64)]
    for lo in range(0, len(x), step):
        a, b = _block(x, lo, min(len(x), lo + step), threshold)
        out.append(np.column_stack([a, b]))
    return np.concatenate(out)


def groups_in(x: np.ndarray, threshold: float, block_floats: int) -> tuple[np.ndarray, int]:
    """Connected components of the rows of `x` joined by pairs over `threshold` (scipy), and the number of pairs.

    The components are updated after each block from that block's pairs plus one edge from every row to its
    component's first row, so the pairs of a cluster of near-copies (m^2 / 2 of them) are never all held at once:
    memory is one block's similarities and pairs (<= `block_floats` each) and a few arrays of m."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    m = len(x)
    labels = np.arange(m)
    step = block_rows(m, block_floats)
    pairs = 0
    for lo in range(0, m, step):
        a, b = _block(x, lo, min(m, lo + step), threshold)
        if not len(a):
            continue
        pairs += len(a)
        _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
        rep = first[inverse]  # each row's component, named by its first row
        u, v = np.concatenate([a, np.arange(m)]), np.concatenate([b, rep])
        graph = coo_matrix((np.ones(len(u), dtype=np.int8), (u, v)), shape=(m, m))
        _, labels = connected_components(graph, directed=False)
    return labels, pairs


@dataclass
class PairsTask:
    part: int
    assigned: list[str]  # every shard's assign file; this task reads the rows with kpart == part
    centroids: str
    out: str
    threshold: float
    keep: str
    block_floats: int


def _members(df: pl.DataFrame, labels: np.ndarray) -> pl.DataFrame | None:
    """The rows of one cluster that share a component with another, with the component."""
    sizes = np.bincount(labels)
    grouped = sizes[labels] > 1
    if not grouped.any():
        return None
    return df.filter(pl.Series(grouped)).with_columns(pl.Series("comp", labels[grouped].astype(np.int32)))


def _vectors(table: pa.Table, dim: int) -> np.ndarray:
    """The `vec` column (fixed-size binary) as an (n, dim) array over its buffer, without a copy per row."""
    vec = table.column("vec").combine_chunks()
    width = vec.type.byte_width
    raw = np.frombuffer(vec.buffers()[1], dtype=np.uint8)[vec.offset * width:(vec.offset + len(vec)) * width]
    return raw.view(np.float16 if width == 2 * dim else np.float32).reshape(len(vec), dim)


def pairs_part(task: PairsTask) -> dict:
    """Phase 4 for one group of clusters: groups of near-parallel embeddings inside each cluster, one kept per group.

    Memory: this task's rows (ROWS_PER_PAIR_TASK documents on average, with their stored embeddings), one cluster in
    float32 (members x dim x 4 bytes) and one block of similarities (`block_floats` x 4 bytes)."""
    cols = ["cluster", "csim", "shard", "row", "id", "length", "quality", "texthash", "vec"]
    table = common.read_where(task.assigned, {"kpart": task.part}, cols)
    found, pairs, largest = [], 0, 0
    if table.num_rows:
        table = table.sort_by([("cluster", "ascending"), ("shard", "ascending"), ("row", "ascending")])
        x = _vectors(table, fs.load_npy(task.centroids, mmap=True).shape[1])
        df = pl.from_arrow(table.drop_columns(["vec"]))
        cluster = df["cluster"].to_numpy()
        starts = np.flatnonzero(np.r_[True, cluster[1:] != cluster[:-1]]).tolist()
        for lo, hi in zip(starts, [*starts[1:], len(cluster)], strict=True):
            largest = max(largest, hi - lo)
            if hi - lo < 2:
                continue
            # normalised again after float16 storage: a text's copies then meet at cosine 1 (to float32 rounding)
            labels, n = groups_in(normalise(x[lo:hi]), task.threshold, task.block_floats)
            pairs += n
            got = _members(df.slice(lo, hi - lo), labels)
            if got is not None:
                found.append(got)
    ranked = None
    if found:
        members = pl.concat(found)
        if task.keep in ("centroid", "farthest"):  # ranked by choose_keepers' quality order on the centroid cosine
            score = pl.col("csim") if task.keep == "centroid" else -pl.col("csim")
            members = members.with_columns(score.cast(pl.Float32).alias("quality"))
        keep = "quality" if task.keep in ("centroid", "farthest") else task.keep
        ranked = common.choose_keepers(members, ["cluster", "comp"], keep)
    out = common.decisions(ranked)
    common.write_table(out.to_arrow(), task.out)
    return {"rows": table.num_rows, "pairs": pairs, "groups": int(out["keep"].sum()),
            "duplicates": int((~out["keep"]).sum()), "largest": largest,
            "same_id_copies": int(ranked["copies"].sum()) if ranked is not None else 0}


# ---------------------------------------------------------------- the step


class Semantic(GlobalStep):
    """Drop semantic duplicates: documents whose embeddings have cosine similarity >= 1 - `eps` to another's in the
    same k-means cluster (SemDeDup), keeping one per group (connected component of such pairs).

    Embeddings: `model` (this project's checkpoint, or a Hugging Face encoder folder or hub id, through
    `curate.models.inference`: mean-pooled last hidden states, `max_tokens` first tokens; `model_task="causal"` for a
    Hugging Face decoder), or `embeddings_column` (a list-of-floats column the documents already carry, e.g. from
    another tool). `keep`: "farthest" (default: the member least similar to its cluster's centroid, SemDeDup's
    choice), "centroid" (the most similar), "smallest_id", "longest" or "quality" (highest quality_score); ties fall
    back to the id, then the text's hash, then (shard, row).

    `clusters`: k of k-means (None: one per `cluster_docs` documents); trained on at most `sample` embeddings (a
    seeded sample by text hash), `niter` iterations, `seed`. `block_floats`: similarities computed at a time inside
    a cluster. `dtype`: how embeddings are kept on disk (float16 or float32). `partitions`: pair tasks (None: about
    ROWS_PER_PAIR_TASK documents each).
    """

    name: ClassVar[str] = "semantic"
    repeated_ids: ClassVar[str] = "keep_one"  # rows by (shard, row): of copies sharing an id, one is kept

    def __init__(self, model: str | os.PathLike | None = None, *, embeddings_column: str | None = None,
                 eps: float = 0.01, keep: str = "farthest", clusters: int | None = None, cluster_docs: int = 10_000,
                 sample: int = 100_000, niter: int = 20, seed: int = 1, block_floats: int = 1 << 24,
                 dtype: str = "float16", partitions: int | None = None, max_tokens: int | None = 512,
                 token_budget: int = 16384, device: str = "auto", model_dtype: str = "auto", kind: str = "auto",
                 model_task: str = "embed", revision: str | None = None, threads: int | None = None):
        if (model is None) == (embeddings_column is None):
            raise config_error(self, "give exactly one of model (an encoder or checkpoint) and embeddings_column")
        self.model = os.fspath(model) if model is not None else None
        self.embeddings_column = None if embeddings_column is None else check(self, "embeddings_column",
                                                                               embeddings_column, str)
        self.eps = check(self, "eps", eps, float, lo=0, hi=2)
        if keep == "first":
            common.check_keep(self, keep)  # its rename, said as the other steps say it
        self.keep = check(self, "keep", keep, choices=("farthest", "centroid", *common.KEEP_POLICIES))
        self.clusters = check(self, "clusters", clusters, int, lo=1, optional=True)
        self.cluster_docs = check(self, "cluster_docs", cluster_docs, int, lo=1)
        self.sample = check(self, "sample", sample, int, lo=1)
        self.niter = check(self, "niter", niter, int, lo=1)
        self.seed = check(self, "seed", seed, int, lo=0, hi=2**31 - 1)
        self.block_floats = check(self, "block_floats", block_floats, int, lo=1)
        self.dtype = check(self, "dtype", dtype, choices=DTYPES)
        self.partitions = check(self, "partitions", partitions, int, lo=1, hi=MAX_PAIR_TASKS, optional=True)
        self.max_tokens = check(self, "max_tokens", max_tokens, int, lo=1, optional=True)
        self.token_budget = check(self, "token_budget", token_budget, int, lo=1)
        self._spec = None
        if self.model is not None:
            self._spec = ModelSpec(self.model, task=model_task, kind=kind, device=device, dtype=model_dtype,
                                   revision=revision, threads=threads)
            self.kind, self.device, self.model_dtype, self.model_task = kind, device, model_dtype, model_task
            self.revision = revision

    @property
    def columns(self) -> dict[str, pa.DataType]:  # type: ignore[override]
        """The group columns, and `embeddings_column` (a column reaches the shards only if a step declares it)."""
        given = {self.embeddings_column: pa.list_(pa.float32())} if self.embeddings_column else {}
        return {COLUMNS[0]: pa.string(), COLUMNS[1]: pa.int32(), **given}

    def resources(self) -> dict[str, float]:
        return self._spec.resources() if self._spec is not None else {}

    def check_ready(self) -> None:
        if self._spec is not None:
            self._spec.check_ready()

    def _k(self, rows: int) -> int:
        return self.clusters if self.clusters is not None else max(1, math.ceil(rows / self.cluster_docs))

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        common.check_work_dir(ctx.work_dir, ctx.inputs, {"step": repr(self)})
        names = [common.shard_name(i) for i in range(len(ctx.inputs))]
        seconds: dict[str, float] = {}

        t = time.perf_counter()
        embedded = common.run_phase(ctx, "embed", embed_shard, [
            EmbedTask(i, p, ctx.work_dir, self._spec, self.embeddings_column, self.max_tokens, self.token_budget,
                      self.dtype, self.seed) for i, p in enumerate(ctx.inputs)], names, resources=self.resources())
        seconds["embed"] = time.perf_counter() - t
        rows = sum(e["rows"] for e in embedded)
        dims = {e["dim"] for e in embedded if e["rows"]}
        if len(dims) > 1:
            raise ValueError(f"{self.name}: embeddings of different sizes across shards: {sorted(dims)}")

        t = time.perf_counter()
        k = min(self._k(rows), max(1, min(rows, self.sample)))
        trained = common.run_phase(ctx, "kmeans", kmeans_train, [
            KMeansTask(ctx.work_dir, len(names), rows, k, self.sample, self.niter, self.seed)], ["centroids"])[0] \
            if rows else {"sample": 0, "clusters": 0, "dim": 0}
        seconds["kmeans"] = time.perf_counter() - t

        parts = self.partitions or min(max(1, trained["clusters"]), MAX_PAIR_TASKS,
                                       max(1, math.ceil(rows / ROWS_PER_PAIR_TASK)))
        decisions = [fs.join(ctx.work_dir, "groups", f"{p:04d}.parquet") for p in range(parts)]
        paired = self._groups(ctx, names, parts, decisions, seconds) if rows else []

        t = time.perf_counter()
        filtered = common.run_filter(ctx, self.name, decisions if rows else [], [e["rows"] for e in embedded],
                                     cluster_columns=True, columns=COLUMNS)
        seconds["filter"] = time.perf_counter() - t
        counts: dict[str, float] = {}
        for e in embedded:
            for key, v in e["throughput"].items():
                counts[key] = counts.get(key, 0) + v
        extra = {
            "eps": self.eps, "keep": self.keep, "clusters": trained["clusters"], "sample": trained["sample"],
            "dim": trained["dim"], "pair_tasks": parts,
            "pairs": sum(p["pairs"] for p in paired), "groups": sum(p["groups"] for p in paired),
            "largest_cluster": max((p["largest"] for p in paired), default=0),
            "same_id_copies": sum(p["same_id_copies"] for p in paired),
            **({"throughput": throughput(counts)} if counts else {}),
            "seconds": {key: round(v, 3) for key, v in seconds.items()},
        }
        return common.step_stats(self.name, filtered, extra)

    def _groups(self, ctx: GlobalContext, names: list[str], parts: int, decisions: list[str],
                seconds: dict[str, float]) -> list[dict]:
        """Phases 3 and 4: every embedding to its nearest centroid, then the groups inside each cluster."""
        t = time.perf_counter()
        assigned = [fs.join(ctx.work_dir, "assigned", f"{n}.parquet") for n in names]
        common.run_phase(ctx, "assign", assign_shard, [
            AssignTask(i, ctx.work_dir, parts, out) for i, out in enumerate(assigned)], names)
        seconds["assign"] = time.perf_counter() - t
        t = time.perf_counter()
        paired = common.run_phase(ctx, "pairs", pairs_part, [
            PairsTask(p, assigned, fs.join(ctx.work_dir, "centroids.npy"), decisions[p], 1 - self.eps, self.keep,
                      self.block_floats) for p in range(parts)], [f"{p:04d}" for p in range(parts)])
        seconds["pairs"] = time.perf_counter() - t
        return paired
