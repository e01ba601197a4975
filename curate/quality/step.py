"""The quality steps: `Classifier` keeps by a fixed score threshold (streaming), `TopFraction` keeps a share of
the corpus (global: the cut depends on every score)."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.core.document import Document, rejected_schema
from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.core.step import GlobalContext, GlobalStep, Reject, Result, Step
from curate.core.validate import check, config_error
from curate.io import fs
from curate.io.batching import iter_batches
from curate.io.writers import Parquet, together
from curate.quality.model import QualityModel, load_model

BELOW = "below_threshold"
READ_BATCH = 1024


class Classifier(Step):
    """`Classifier(model_path, threshold=0.5)`: a streaming step that scores and cuts at a fixed score.

    Writes `doc.quality_score` (the model's probability of "high quality") and drops documents below
    `threshold` with reason `quality:below_threshold`. To keep a share of the corpus instead (a cut
    that depends on every score), use the global step `TopFraction(model_path, fraction=0.1)`.
    """

    name = "quality"
    file_params = ("model_path",)

    def __init__(self, model_path: str | os.PathLike, *, threshold: float | None = None, top_fraction: float | None = None):
        if top_fraction is not None:
            raise config_error("Classifier", f"top_fraction= is its own global step: quality.TopFraction(model_path, "
                                             f"fraction={top_fraction!r}); Classifier takes threshold= only")
        if threshold is None:
            raise UsageError("quality.Classifier needs threshold= (a score cut); "
                             "to keep a share of the corpus, use quality.TopFraction(model_path, fraction=...)")
        self.threshold = check("Classifier", "threshold", threshold, float, lo=0, hi=1)
        self.model_path = _model_path("Classifier", model_path)
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
            out.append(doc if score >= self.threshold else Reject(BELOW, score, self.threshold))
        return out

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def finish(self, stats: StepStats) -> None:
        stats.extra["cut"] = {"threshold": self.threshold}


def _model_path(owner: str, model_path: str | os.PathLike) -> str:
    if not isinstance(model_path, (str, os.PathLike)) or not os.fspath(model_path):
        raise config_error(owner, f"model_path must be a path, got {model_path!r}")
    return os.fspath(model_path)


class TopFraction(GlobalStep):
    """Keep exactly round(fraction x N) of the N documents scored: the highest-scoring ones.

    A global step in three phases, none of which holds a list of scores in the driver:

    1. `score` (per shard): every row's score, saved as .npy in the work directory (an interrupted run
       does not score again), and the shard's histogram of the scores' top 20 bits (`_key`);
    2. the driver adds the histograms (2^20 counts) and finds the bin holding the k-th highest score;
       `select` (per shard) counts that bin's scores by their last 12 bits, so the cut is exact: the
       k-th highest score itself. Documents tied at the cut are kept in shard and row order until k
       is reached, so the count is exact whatever the ties;
    3. `cut` (per shard): the kept rows to the output, the others (with --rejected) to rejected,
       through the pipeline's writer.

    `stats.extra["cut"]` records the fraction, the cut score, how many were scored and kept, and how
    many were kept and tied at the cut score; `score_quantiles` come from the histogram (to 2^-11 of
    the score, about 0.0005 at 1).
    """

    name = "quality"
    file_params = ("model_path",)

    def __init__(self, model_path: str | os.PathLike, *, fraction: float):
        self.fraction = check("TopFraction", "fraction", fraction, float, lo=0, hi=1, lo_open=True)
        self.model_path = _model_path("TopFraction", model_path)

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        score_dir = fs.join(ctx.work_dir, "scores")
        fs.makedirs(score_dir)
        if ctx.rejected_dir:
            fs.makedirs(ctx.rejected_dir)
        jobs = [ScoreJob(self.model_path, path, fs.join(score_dir, fs.basename(path))) for path in ctx.inputs]
        scored = set(fs.listdir(score_dir))  # one listing, not one existence check per shard
        todo = [j for j in jobs if fs.basename(j.hist_path) not in scored]
        if todo:
            ctx.executor.map(score_shard, todo, desc="quality: score", labels=[j.shard for j in todo])
        counts = np.zeros(1 << HIGH_BITS, dtype=np.int64)
        for job in jobs:  # one small file at a time: the driver holds 2^20 counts, never the scores
            bins, c = _load_hist(job.hist_path)
            np.add.at(counts, bins, c)
        n = int(counts.sum())
        k = min(n, math.floor(self.fraction * n + 0.5))
        cut, quotas, above, tied = self._find_cut(ctx, jobs, counts, k)
        cuts = [CutJob(j.shard, j.scores_path, fs.join(ctx.output_dir, fs.basename(j.shard)),
                       fs.join(ctx.rejected_dir, f"{self.name}-{fs.basename(j.shard)}") if ctx.rejected_dir else None,
                       cut, q, ctx.schema, ctx.writer, f"{self.name}:{BELOW}") for j, q in zip(jobs, quotas, strict=True)]
        results = ctx.executor.map(cut_shard, cuts, desc="quality: cut", labels=[c.shard for c in cuts]) if cuts else []
        stats = StepStats(self.name)
        for r in results:
            stats.merge(StepStats.from_dict(r))
        stats.extra["cut"] = {
            "top_fraction": self.fraction,
            "score": None if math.isinf(cut) else round(cut, 6),
            "scored": n,
            "kept": k,
            "kept_at_cut_score": k - above,
            "tied_at_cut_score": tied,
            "score_quantiles": _quantiles(counts),
        }
        return [stats]

    def _find_cut(self, ctx: GlobalContext, jobs: list[ScoreJob], counts: np.ndarray,
                  k: int) -> tuple[float, list[int], int, int]:
        """The k-th highest score, each shard's quota of documents tied at it, and the counts above and at it."""
        if k == 0:
            return math.inf, [0] * len(jobs), 0, 0
        from_top = np.cumsum(counts[::-1])
        high = len(counts) - 1 - int(np.searchsorted(from_top, k))  # the bin holding the k-th highest
        above = int(counts[high + 1:].sum())
        sel = [SelectJob(j.scores_path, j.stem + ".select.npz", high) for j in jobs]
        ctx.executor.map(select_shard, sel, desc="quality: select", labels=[j.shard for j in jobs])
        low = np.zeros(1 << LOW_BITS, dtype=np.int64)
        for s in sel:
            bins, c = _load_hist(s.out)
            np.add.at(low, bins, c)
        from_top = np.cumsum(low[::-1])
        lo = len(low) - 1 - int(np.searchsorted(from_top, k - above))
        above += int(low[lo + 1:].sum())
        cut = float(_score((high << LOW_BITS) | lo))
        ties_left, quotas = k - above, []
        for s in sel:  # ties kept in shard order, then row order (in cut_shard)
            bins, c = _load_hist(s.out)
            quota = min(ties_left, int(c[bins == lo].sum()))
            quotas.append(quota)
            ties_left -= quota
        return cut, quotas, above, int(low[lo])


HIGH_BITS, LOW_BITS = 20, 12  # a score's 32-bit order key = 20 histogram bits + 12 selection bits


def _key(scores: np.ndarray) -> np.ndarray:
    """uint32 keys in the order of the float32 scores (sign flipped for positives, all bits for negatives)."""
    bits = np.ascontiguousarray(scores, dtype=np.float32).view(np.uint32)
    return np.where(bits & np.uint32(0x80000000), ~bits, bits | np.uint32(0x80000000))


def _score(key: int) -> np.float32:
    bits = key & 0x7FFFFFFF if key & 0x80000000 else ~key & 0xFFFFFFFF
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


def _save_hist(path: str, values: np.ndarray) -> None:
    bins, counts = np.unique(values, return_counts=True)
    with fs.atomic_open(path, "wb", tmp_name=f"{fs.basename(path)}.tmp.{os.getpid()}") as f:
        np.savez(f, bins=bins.astype(np.uint32), counts=counts.astype(np.int64))


def _load_hist(path: str) -> tuple[np.ndarray, np.ndarray]:
    with fs.open(path, "rb") as f:
        z = np.load(f)
        return z["bins"].astype(np.int64), z["counts"]


def _quantiles(counts: np.ndarray) -> dict[str, float]:
    """p10...p90 of the scores from the histogram: the lower edge of the bin where each is reached."""
    n = int(counts.sum())
    if not n:
        return {}
    cum = np.cumsum(counts)
    out = {}
    for name, q in (("p10", 0.1), ("p25", 0.25), ("p50", 0.5), ("p75", 0.75), ("p90", 0.9)):
        b = int(np.searchsorted(cum, max(1, math.ceil(q * n))))
        out[name] = round(float(_score(b << LOW_BITS)), 4)
    return out


@dataclass(frozen=True)
class ScoreJob:
    model_path: str
    shard: str
    stem: str  # the score and histogram files: stem + ".npy" / ".hist.npz"

    @property
    def scores_path(self) -> str:
        return self.stem + ".npy"

    @property
    def hist_path(self) -> str:
        return self.stem + ".hist.npz"


def score_shard(job: ScoreJob) -> dict:
    """Phase 1: the score of every row of one shard (.npy, row order), then its histogram, both atomically.

    The histogram is written last: its presence says the shard is scored.
    """
    model = load_model(job.model_path)
    pf = fs.parquet_file(job.shard)
    parts = [model.score(b.column("text").to_pylist()) for b in iter_batches(pf, columns=["text"], max_rows=READ_BATCH)]
    scores = np.concatenate(parts).astype(np.float32) if parts else np.empty(0, np.float32)
    with fs.atomic_open(job.scores_path, "wb", tmp_name=f"{fs.basename(job.scores_path)}.tmp.{os.getpid()}") as f:
        np.save(f, scores)
    _save_hist(job.hist_path, _key(scores) >> np.uint32(LOW_BITS))
    return {"docs": len(scores)}


@dataclass(frozen=True)
class SelectJob:
    scores_path: str
    out: str
    high: int  # the histogram bin holding the cut


def select_shard(job: SelectJob) -> dict:
    """Phase 2: how many of the shard's scores fall in bin `high`, by their last 12 bits."""
    keys = _key(fs.load_npy(job.scores_path))
    inside = keys[(keys >> np.uint32(LOW_BITS)) == job.high]
    _save_hist(job.out, inside & np.uint32((1 << LOW_BITS) - 1))
    return {"docs": 0}


@dataclass(frozen=True)
class CutJob:
    shard: str
    scores_path: str
    output: str
    rejected: str | None
    cut: float
    ties_to_keep: int  # documents scoring exactly `cut` that this shard keeps, in row order
    schema: pa.Schema
    writer: Parquet  # the pipeline's writer
    reason: str


def cut_shard(job: CutJob) -> dict:
    """Phase 3: write the kept rows of one shard to the output (and the dropped ones to rejected)."""
    t0 = time.perf_counter()
    scores = fs.load_npy(job.scores_path)
    keep = scores > job.cut
    tied = np.flatnonzero(scores == job.cut)
    keep[tied[: job.ties_to_keep]] = True
    stats = StepStats("quality")
    out = job.writer.open_file(job.output, job.schema)
    rej_schema = rejected_schema(job.schema)
    rej = job.writer.open_file(job.rejected, rej_schema) if job.rejected else None
    with together(out, rej):
        _cut_rows(job, scores, keep, stats, out, rej)
    stats.seconds = time.perf_counter() - t0
    return stats.to_dict()


def _cut_rows(job: CutJob, scores: np.ndarray, keep: np.ndarray, stats: StepStats, out, rej) -> None:
    """Count and route the rows of one shard: kept ones to the output, dropped ones to rejected."""
    start = 0
    for batch in iter_batches(fs.parquet_file(job.shard), max_rows=READ_BATCH):
        s, k = scores[start : start + len(batch)], keep[start : start + len(batch)]
        start += len(batch)
        lengths = pc.utf8_length(batch.column("text")).to_numpy(zero_copy_only=False)
        stats.docs_in += len(batch)
        stats.docs_out += int(k.sum())
        stats.chars_in += int(lengths.sum())
        stats.chars_out += int(lengths[k].sum())
        dropped = int((~k).sum())
        if dropped:
            stats.dropped[job.reason] += dropped
            stats.dropped_chars[job.reason] += int(lengths[~k].sum())
        if k.any():
            out.write_table(batch.filter(pa.array(k)), quality_score=s[k])
        if rej is not None and dropped:
            rej.write_table(batch.filter(pa.array(~k)), quality_score=s[~k],
                            drop_reason=pa.array([job.reason] * dropped, pa.string()))
    if start != len(scores):
        raise RuntimeError(f"{job.shard} has {start} rows but {len(scores)} saved scores: delete {job.scores_path} and rerun")
