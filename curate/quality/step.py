"""The quality step: score every document, then keep by a fixed threshold or a top fraction of the corpus."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.core.document import Document, conform
from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.core.step import GlobalContext, GlobalStep, Reject, Result, Step
from curate.core.validate import check, config_error
from curate.io import fs
from curate.quality.model import QualityModel, load_model

BELOW = "below_threshold"
READ_BATCH = 1024


class Classifier(Step):
    """`Classifier(model_path, threshold=0.5)` or `Classifier(model_path, top_fraction=0.1)`.

    Writes `doc.quality_score` (the model's probability of "high quality") and drops documents below
    the cut with reason `quality:below_threshold`. A threshold is known up front, so it streams; a
    top fraction depends on every score, so that form is a global step (`TopFractionClassifier`)
    that scores in one pass and cuts in a second. Constructing `Classifier` picks the right class.
    """

    name = "quality"

    def __new__(cls, *args, **kwargs):
        if cls is Classifier and kwargs.get("top_fraction") is not None:
            cls = TopFractionClassifier
        return super().__new__(cls)

    def __init__(self, model_path: str | os.PathLike, *, threshold: float | None = None, top_fraction: float | None = None):
        if (threshold is None) == (top_fraction is None):
            raise UsageError("quality.Classifier needs exactly one of threshold= (a score cut) or top_fraction= (a share to keep)")
        check("Classifier", "threshold", threshold, float, lo=0, hi=1, optional=True)
        check("Classifier", "top_fraction", top_fraction, float, lo=0, hi=1, lo_open=True, optional=True)
        if not isinstance(model_path, (str, os.PathLike)) or not os.fspath(model_path):
            raise config_error("Classifier", f"model_path must be a path, got {model_path!r}")
        self.model_path = os.fspath(model_path)
        self.threshold = threshold
        self.top_fraction = top_fraction
        self._model: QualityModel | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_model": None}  # workers load their own copy in setup

    def setup(self) -> None:
        self._model = load_model(self.model_path)

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        if self._model is None:
            self.setup()
        scores = self._model.score([d.text for d in docs])
        out: list[Result] = []
        for doc, score in zip(docs, scores.tolist(), strict=True):
            doc.quality_score = score
            out.append(doc if score >= self.threshold else Reject(BELOW))
        return out

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def finish(self, stats: StepStats) -> None:
        stats.extra["cut"] = {"threshold": self.threshold}


class TopFractionClassifier(Classifier, GlobalStep):
    """Keeps exactly round(top_fraction x N) documents of the N scored, the highest-scoring ones.

    Phase 1 scores each shard in parallel and saves the scores in the work directory, so an
    interrupted run does not score again. The driver then finds the cut: the k-th highest score;
    documents tied at the cut are kept in shard and row order until k is reached, so the count is
    exact whatever the ties. Phase 2 writes each shard's kept rows (and, with --rejected, the rest).
    """

    def apply(self, doc: Document) -> Result:
        return GlobalStep.apply(self, doc)

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        return GlobalStep.apply(self, docs[0])

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        score_dir = fs.join(ctx.work_dir, "scores")
        fs.makedirs(score_dir)
        if ctx.rejected_dir:
            fs.makedirs(ctx.rejected_dir)
        jobs = [ScoreJob(self.model_path, path, fs.join(score_dir, fs.basename(path) + ".npy")) for path in ctx.inputs]
        todo = [j for j in jobs if not fs.exists(j.scores_path)]
        if todo:
            ctx.executor.map(score_shard, todo, desc="quality: score", labels=[j.shard for j in todo])
        per_shard = [fs.load_npy(j.scores_path) for j in jobs]
        scores = np.concatenate(per_shard) if per_shard else np.empty(0, np.float32)
        n = len(scores)
        k = min(n, math.floor(self.top_fraction * n + 0.5))
        cut = float(np.partition(scores, n - k)[n - k]) if k else math.inf
        above = int((scores > cut).sum())
        ties_left = k - above
        cuts = []
        for job, s in zip(jobs, per_shard, strict=True):
            quota = min(ties_left, int((s == cut).sum()))
            ties_left -= quota
            rejected = fs.join(ctx.rejected_dir, f"{self.name}-{fs.basename(job.shard)}") if ctx.rejected_dir else None
            cuts.append(CutJob(job.shard, job.scores_path, fs.join(ctx.output_dir, fs.basename(job.shard)),
                               rejected, cut, quota, ctx.schema, f"{self.name}:{BELOW}"))
        results = ctx.executor.map(cut_shard, cuts, desc="quality: cut", labels=[c.shard for c in cuts]) if cuts else []
        stats = StepStats(self.name)
        for r in results:
            stats.merge(StepStats.from_dict(r))
        names = ["p10", "p25", "p50", "p75", "p90"]
        quantiles = dict(zip(names, np.quantile(scores, [0.1, 0.25, 0.5, 0.75, 0.9]).round(4).tolist(), strict=True)) if n else {}
        stats.extra["cut"] = {
            "top_fraction": self.top_fraction,
            "score": None if math.isinf(cut) else round(cut, 6),
            "scored": n,
            "kept": k,
            "kept_at_cut_score": k - above,
            "tied_at_cut_score": int((scores == cut).sum()),
            "score_quantiles": quantiles,
        }
        return [stats]


@dataclass(frozen=True)
class ScoreJob:
    model_path: str
    shard: str
    scores_path: str


def score_shard(job: ScoreJob) -> dict:
    """Phase 1: the score of every row of one shard, saved atomically as .npy (row order)."""
    model = load_model(job.model_path)
    pf = fs.parquet_file(job.shard)
    parts = [model.score(b.column("text").to_pylist()) for b in pf.iter_batches(batch_size=READ_BATCH, columns=["text"])]
    scores = np.concatenate(parts).astype(np.float32) if parts else np.empty(0, np.float32)
    with fs.atomic_open(job.scores_path, "wb", tmp_name=f"{fs.basename(job.scores_path)}.tmp.{os.getpid()}") as f:
        np.save(f, scores)
    return {"docs": len(scores)}


@dataclass(frozen=True)
class CutJob:
    shard: str
    scores_path: str
    output: str
    rejected: str | None
    cut: float
    ties_to_keep: int  # documents scoring exactly `cut` that this shard keeps, in row order
    schema: pa.Schema
    reason: str



def cut_shard(job: CutJob) -> dict:
    """Phase 2: write the kept rows of one shard to the output (and the dropped ones to rejected)."""
    t0 = time.perf_counter()
    scores = fs.load_npy(job.scores_path)
    keep = scores > job.cut
    tied = np.flatnonzero(scores == job.cut)
    keep[tied[: job.ties_to_keep]] = True
    stats = StepStats("quality")
    rej_schema = job.schema.append(pa.field("drop_reason", pa.string(), nullable=False))
    writers: dict[str, pq.ParquetWriter] = {}
    staged = {p: fs.Staged(p, tmp_name=f"{fs.basename(p)}.tmp") for p in filter(None, (job.output, job.rejected))}

    def write(path: str, schema: pa.Schema, table: pa.Table) -> None:
        if path not in writers:
            writers[path] = pq.ParquetWriter(staged[path].tmp, schema, compression="zstd", compression_level=3)
        writers[path].write_table(table)

    try:
        _cut_rows(job, scores, keep, stats, rej_schema, write)
    except BaseException:
        for w in writers.values():
            w.close()
        for st in staged.values():
            st.discard()
        raise
    for w in writers.values():
        w.close()
    for path, st in staged.items():
        if path in writers:
            st.commit()
        else:
            st.discard()
            fs.remove(path)  # a stale shard from an earlier attempt must not survive an empty result
    stats.seconds = time.perf_counter() - t0
    return stats.to_dict()


def _cut_rows(job: CutJob, scores: np.ndarray, keep: np.ndarray, stats: StepStats, rej_schema: pa.Schema, write) -> None:
    """Count and route the rows of one shard: kept ones to the output, dropped ones to rejected."""
    start = 0
    for batch in fs.parquet_file(job.shard).iter_batches(batch_size=READ_BATCH):
        s, k = scores[start : start + len(batch)], keep[start : start + len(batch)]
        start += len(batch)
        table = conform(batch, job.schema, quality_score=s)
        lengths = pc.utf8_length(table.column("text")).to_numpy()
        stats.docs_in += len(batch)
        stats.docs_out += int(k.sum())
        stats.chars_in += int(lengths.sum())
        stats.chars_out += int(lengths[k].sum())
        dropped = int((~k).sum())
        if dropped:
            stats.dropped[job.reason] += dropped
            stats.dropped_chars[job.reason] += int(lengths[~k].sum())
        if k.any():
            write(job.output, job.schema, table.filter(pa.array(k)))
        if job.rejected and dropped:
            rej = table.filter(pa.array(~k))
            reasons = pa.array([job.reason] * dropped, pa.string())
            write(job.rejected, rej_schema, pa.Table.from_arrays([*rej.columns, reasons], schema=rej_schema))
    if start != len(scores):
        raise RuntimeError(f"{job.shard} has {start} rows but {len(scores)} saved scores: delete {job.scores_path} and rerun")
