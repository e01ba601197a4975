"""`PercentileBuckets`: Nemotron-CC's ensemble. Each classifier's score becomes an integer by its percentile over
the whole run (`bins` of them: 20 gives 0..19, each 5% of the documents), and a document's bucket is the largest
of those integers across classifiers: a page any one classifier ranks in its top 5% is in bucket 19.

Percentiles need every score of the run, so this is a global step, in two phases that never hold a list of scores:

1. `count` (per shard): the score columns of the shard (only those columns are read), each as a histogram of
   its scores' top 20 order bits (`step._key`, as `TopFraction` counts) saved in the work folder; an interrupted
   run does not count a shard twice;
2. the driver adds the histograms (2^20 counts a column) and turns them into a table bin -> integer score: a
   score's percentile is the share of the run's scores in lower bins (scores within 2^-11 of each other, in
   relative terms, share a bin and so a percentile); `assign` (per shard) writes the bucket column, and the
   per-column integers when asked, dropping buckets below `threshold`.

A missing score (a null in a column) is an error naming the column: the classifier step did not score that row.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.core.stats import StepStats
from curate.core.step import GlobalContext, GlobalStep
from curate.core.validate import check, config_error
from curate.io import fs
from curate.io.batching import iter_batches
from curate.io.writers import Parquet, together
from curate.quality.step import HIGH_BITS, LOW_BITS, READ_BATCH, _key, _load_hist, _save_hist

BELOW = "below_threshold"


class PercentileBuckets(GlobalStep):
    """`PercentileBuckets(["edu_score", "dclm_score"], bins=20, column="quality_bucket", threshold=None)`: the
    bucket of each document (0 .. bins-1), the max over `inputs` of its percentile bin in each; `keep_ints`
    also writes `<input>_pct` per input."""

    def __init__(self, inputs: list[str], *, bins: int = 20, column: str = "quality_bucket",
                 threshold: int | None = None, keep_ints: bool = False, name: str | None = None):
        if not inputs or not all(isinstance(c, str) and c for c in inputs):
            raise config_error("PercentileBuckets", f"inputs must be a non-empty list of score columns, got {inputs!r}")
        self.inputs, self.column, self.keep_ints = list(inputs), column, keep_ints
        self.bins = check("PercentileBuckets", "bins", bins, int, lo=2, hi=1000)
        self.threshold = check("PercentileBuckets", "threshold", threshold, int, lo=0, hi=bins, optional=True)
        self.name = name or column
        self.columns = {column: pa.int32(), **({f"{c}_pct": pa.int32() for c in inputs} if keep_ints else {})}

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        work = fs.join(ctx.work_dir, "percentiles")
        fs.makedirs(work)
        jobs = [CountJob(path, self.inputs, fs.join(work, fs.basename(path))) for path in ctx.inputs]
        have = set(fs.listdir(work))
        todo = [j for j in jobs if not all(fs.basename(j.hist(c)) in have for c in self.inputs)]
        if todo:
            ctx.executor.map(count_shard, todo, desc=f"{self.name}: count", labels=[j.shard for j in todo])
        tables = {}
        for c in self.inputs:
            counts = np.zeros(1 << HIGH_BITS, dtype=np.int64)
            for job in jobs:  # one small file at a time
                b, n = _load_hist(job.hist(c))
                np.add.at(counts, b, n)
            tables[c] = percentile_table(counts, self.bins)
        table_path = fs.join(work, "tables.npz")
        with fs.atomic_open(table_path, "wb", tmp_name=f"tables.npz.tmp.{os.getpid()}") as f:
            np.savez(f, **tables)
        if ctx.rejected_dir:
            fs.makedirs(ctx.rejected_dir)
        assigns = [AssignJob(j.shard, fs.join(ctx.output_dir, fs.basename(j.shard)),
                             fs.join(ctx.rejected_dir, f"{self.name}-{fs.basename(j.shard)}") if ctx.rejected_dir else None,
                             self.inputs, table_path, self.column, self.keep_ints, self.threshold, ctx.schema,
                             ctx.writer, f"{self.name}:{BELOW}") for j in jobs]
        results = ctx.executor.map(assign_shard, assigns, desc=f"{self.name}: assign", labels=[a.shard for a in assigns])
        stats = StepStats(self.name)
        for r in results:
            stats.merge(StepStats.from_dict(r))
        stats.extra["buckets"] = {"inputs": self.inputs, "bins": self.bins, "threshold": self.threshold}
        return [stats]


def percentile_table(counts: np.ndarray, bins: int) -> np.ndarray:
    """int16 per histogram bin: floor(bins x share of the scores in lower bins), at most bins - 1."""
    n = max(1, int(counts.sum()))
    below = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return np.minimum(bins - 1, np.floor(bins * below / n)).astype(np.int16)


@dataclass(frozen=True)
class CountJob:
    shard: str
    inputs: list[str]
    stem: str

    def hist(self, column: str) -> str:
        return f"{self.stem}.{column}.hist.npz"


def _scores(batch: pa.RecordBatch, column: str, shard: str) -> np.ndarray:
    if column not in batch.schema.names:
        raise KeyError(f"{shard} has no column {column!r}: put the classifier that writes it before PercentileBuckets")
    col = batch.column(column)
    if col.null_count:
        raise ValueError(f"{shard}: {col.null_count} rows without a {column!r} score")
    return col.to_numpy(zero_copy_only=False).astype(np.float32)


def count_shard(job: CountJob) -> dict:
    """Phase 1: each score column's histogram of order-key bins, for one shard."""
    pf = fs.parquet_file(job.shard)
    missing = [c for c in job.inputs if c not in pf.schema_arrow.names]
    if missing:
        raise KeyError(f"{job.shard} has no column {missing[0]!r}: put the classifier that writes it before "
                       "PercentileBuckets")
    parts: dict[str, list[np.ndarray]] = {c: [] for c in job.inputs}
    for b in iter_batches(pf, columns=job.inputs, max_rows=READ_BATCH):
        for c in job.inputs:
            parts[c].append(_key(_scores(b, c, job.shard)) >> np.uint32(LOW_BITS))
    for c in job.inputs:
        _save_hist(job.hist(c), np.concatenate(parts[c]) if parts[c] else np.empty(0, np.uint32))
    return {"docs": 0}


@dataclass(frozen=True)
class AssignJob:
    shard: str
    output: str
    rejected: str | None
    inputs: list[str]
    tables: str
    column: str
    keep_ints: bool
    threshold: int | None
    schema: pa.Schema
    writer: Parquet
    reason: str


def assign_shard(job: AssignJob) -> dict:
    """Phase 2: the bucket of every row of one shard; kept rows to the output, the others to rejected."""
    t0 = time.perf_counter()
    with fs.open(job.tables, "rb") as f:
        z = np.load(f)
        tables = {c: z[c] for c in job.inputs}
    stats = StepStats(job.reason.split(":")[0])
    out = job.writer.open_file(job.output, job.schema)
    rej_schema = job.schema.append(pa.field("drop_reason", pa.string(), nullable=False))
    rej = job.writer.open_file(job.rejected, rej_schema) if job.rejected else None
    with together(out, rej):
        for batch in iter_batches(fs.parquet_file(job.shard), max_rows=READ_BATCH):
            ints = {c: tables[c][_key(_scores(batch, c, job.shard)) >> np.uint32(LOW_BITS)].astype(np.int32)
                    for c in job.inputs}
            bucket = np.max(np.stack(list(ints.values())), axis=0)
            keep = bucket >= job.threshold if job.threshold is not None else np.ones(len(bucket), bool)
            cols = {job.column: bucket, **({f"{c}_pct": v for c, v in ints.items()} if job.keep_ints else {})}
            _route(job, batch, keep, cols, stats, out, rej)
    stats.seconds = time.perf_counter() - t0
    return stats.to_dict()


def _route(job: AssignJob, batch: pa.RecordBatch, keep: np.ndarray, cols: dict, stats: StepStats, out, rej) -> None:
    lengths = pc.utf8_length(batch.column("text")).to_numpy(zero_copy_only=False)
    stats.docs_in += len(batch)
    stats.docs_out += int(keep.sum())
    stats.chars_in += int(lengths.sum())
    stats.chars_out += int(lengths[keep].sum())
    dropped = int((~keep).sum())
    if dropped:
        stats.dropped[job.reason] += dropped
        stats.dropped_chars[job.reason] += int(lengths[~keep].sum())
    if keep.any():
        out.write_table(batch.filter(pa.array(keep)), **{k: pa.array(v[keep], pa.int32()) for k, v in cols.items()})
    if rej is not None and dropped:
        rej.write_table(batch.filter(pa.array(~keep)), **{k: pa.array(v[~keep], pa.int32()) for k, v in cols.items()},
                        drop_reason=pa.array([job.reason] * dropped, pa.string()))

