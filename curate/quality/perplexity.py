"""Perplexity under a reference language model: `Perplexity` keeps by a threshold (streaming), `PerplexityBuckets`
puts every document in a per-language head / middle / tail bucket by percentiles of the whole run (global), as
CCNet does (Wenzek et al. 2020; RedPajama's `ccnet_bucket`). See docs/models.md.

The score is bits per UTF-8 byte of the document under the model (`curate.models.inference`: the same measure as
`python -m train eval`'s held-out bits per byte), in the column `perplexity_bpb` (float32; lower is more like the
reference text). The reference model is a checkpoint of this project's trainer (`python -m train` on clean text)
or any Hugging Face causal LM (a local folder, or a hub id you name).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.core.document import Document
from curate.core.stats import StepStats, Throughput, throughput
from curate.core.step import GlobalContext, GlobalStep, Reject, Result, Step
from curate.core.validate import check, config_error
from curate.io import fs
from curate.io.batching import iter_batches
from curate.io.writers import together
from curate.models.spec import ModelSpec

COLUMN = "perplexity_bpb"
BUCKET_COLUMN = "perplexity_bucket"
BUCKETS = ("head", "middle", "tail")
MAX_TOKENS = 4096  # tokens of a document scored: its head, when longer (counted as truncated)
READ_ROWS = 256  # rows read and scored at once by the global step


def _spec(owner: str, model: str | os.PathLike, kind: str, device: str, dtype: str, revision: str | None,
          threads: int | None) -> ModelSpec:
    if not isinstance(model, (str, os.PathLike)) or not os.fspath(model):
        raise config_error(owner, f"model must be a checkpoint, a Hugging Face folder or a hub id, got {model!r}")
    return ModelSpec(os.fspath(model), task="causal", kind=kind, device=device, dtype=dtype, revision=revision,
                     threads=threads)


class _Scores:
    """What both steps share: the model's spec and its parameters, and placing tasks by its device."""

    file_params = ("model",)

    def _init_model(self, owner: str, model, max_tokens, kind, device, dtype, revision, threads, token_budget) -> None:
        self.model = os.fspath(model) if isinstance(model, (str, os.PathLike)) else model
        self.max_tokens = None if max_tokens is None else check(owner, "max_tokens", max_tokens, int, lo=1)
        self.kind, self.device, self.dtype, self.revision = kind, device, dtype, revision
        self.token_budget = check(owner, "token_budget", token_budget, int, lo=1, optional=True)
        self._spec = _spec(owner, model, kind, device, dtype, revision, threads)

    def resources(self) -> dict[str, float]:
        return self._spec.resources()

    def check_ready(self) -> None:
        self._spec.check_ready()


class Perplexity(_Scores, Step):
    """`Perplexity(model, threshold=None, max_tokens=4096)`: each document's bits per byte under a reference
    causal LM in `perplexity_bpb`; with `threshold`, documents scoring above it are dropped
    (`perplexity:above_threshold`; an empty text, which has no byte to score, `perplexity:empty`).

    `model`: this project's checkpoint (`RUN/ckpt.pt` or `RUN`) or a Hugging Face causal LM (folder or hub id).
    `device`: auto | cpu | cuda (the executor gives each worker its GPU); `dtype`: auto (bf16 on CUDA, fp32 on
    CPU). `max_tokens`: a longer document is scored by its first `max_tokens` tokens (counted as truncated).
    `threads`: torch's CPU threads per worker (None: torch's default); `token_budget`: padded tokens per batch
    (None: the layer's default for the device). The step's stats carry the model's
    throughput (`extra.throughput`: documents/s, tokens/s, truncated, padding share).
    """

    name = "perplexity"
    columns = {COLUMN: pa.float32()}

    def __init__(self, model: str | os.PathLike, *, threshold: float | None = None, max_tokens: int | None = MAX_TOKENS,
                 device: str = "auto", dtype: str = "auto", kind: str = "auto", revision: str | None = None,
                 threads: int | None = None, token_budget: int | None = None):
        self.threshold = None if threshold is None else check("Perplexity", "threshold", threshold, float, lo=0)
        self._init_model("Perplexity", model, max_tokens, kind, device, dtype, revision, threads, token_budget)
        self._model = None
        self._throughput = Throughput()

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_model": None}  # workers load their own, once per process (get_model)

    def setup(self) -> None:
        from curate.models.inference import get_model

        self._model = get_model(self._spec)

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        if self._model is None:
            self.setup()
        scores = self._model.bits_per_byte([d.text for d in docs], self.max_tokens, self._throughput,
                                           token_budget=self.token_budget)
        out: list[Result] = []
        for doc, s in zip(docs, scores.tolist(), strict=True):
            doc.extra[COLUMN] = None if math.isnan(s) else s
            if self.threshold is not None and math.isnan(s):
                out.append(Reject("empty"))
            elif self.threshold is not None and s > self.threshold:
                out.append(Reject("above_threshold", s, self.threshold))
            else:
                out.append(doc)
        return out

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def finish(self, stats: StepStats) -> None:
        stats.extra["throughput"] = self._throughput.record()
        self._throughput.clear()  # the step lives on in its worker for the next task
        if self.threshold is not None:
            stats.extra["cut"] = {"threshold": self.threshold}


class PerplexityBuckets(_Scores, GlobalStep):
    """`PerplexityBuckets(model, percentiles=(30, 60), keep=("head", "middle"))`: CCNet's head / middle / tail.

    Every document's bits per byte (as `Perplexity`), then per language (the `lang` column; documents without one
    form the group `und`; `per_language=False`: one group) the percentiles of the run's scores: a document at or
    below the first is `head`, at or below the second `middle`, else `tail` (an empty text, no score: `tail`).
    The bucket goes in `perplexity_bucket`, the score in `perplexity_bpb`; documents of the buckets not in `keep`
    are dropped as `perplexity:bucket_<name>`. Percentiles are numpy's (`linear`), over the run's scores.

    A global step in three phases, none of which holds documents in the driver:

    1. `score` (per shard, placed on GPUs where the model runs on one): every row's score and language, saved
       in the work directory (an interrupted run does not score a finished shard again);
    2. the driver reads the score files one at a time, keeps each group's scores (4 bytes a document: the
       score column, not the documents) and computes the percentiles;
    3. `cut` (per shard): the rows with their score and bucket to the output (or to rejected).

    `stats.extra["buckets"]` records per group the percentile values and the documents per bucket.
    """

    name = "perplexity"
    columns = {COLUMN: pa.float32(), BUCKET_COLUMN: pa.string()}

    def __init__(self, model: str | os.PathLike, *, percentiles: Sequence[float] = (30, 60),
                 keep: Sequence[str] = ("head", "middle"), per_language: bool = True,
                 max_tokens: int | None = MAX_TOKENS, device: str = "auto", dtype: str = "auto", kind: str = "auto",
                 revision: str | None = None, threads: int | None = None, token_budget: int | None = None):
        pts = [check("PerplexityBuckets", "percentiles", float(p), float, lo=0, hi=100) for p in percentiles]
        if len(pts) != 2 or pts[0] > pts[1]:
            raise config_error("PerplexityBuckets", f"percentiles must be two ascending values in [0, 100] "
                                                    f"(head/middle, middle/tail), got {percentiles!r}")
        bad = [k for k in keep if k not in BUCKETS]
        if bad or not keep:
            raise config_error("PerplexityBuckets", f"keep must name some of {BUCKETS}, got {keep!r}")
        self.percentiles = tuple(pts)
        self.keep = tuple(b for b in BUCKETS if b in keep)
        self.per_language = bool(per_language)
        self._init_model("PerplexityBuckets", model, max_tokens, kind, device, dtype, revision, threads, token_budget)

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        work = fs.join(ctx.work_dir, "scores")
        fs.makedirs(work)
        if ctx.rejected_dir:
            fs.makedirs(ctx.rejected_dir)
        jobs = [ScoreJob(self._spec, path, fs.join(work, fs.basename(path)), self.max_tokens, self.token_budget,
                         self.per_language) for path in ctx.inputs]
        done = set(fs.listdir(work))
        todo = [j for j in jobs if fs.basename(j.done_path) not in done]
        place = {"resources": self.resources()} if self.resources() else {}
        scored = ctx.executor.map(score_shard, todo, desc="perplexity: score", labels=[j.shard for j in todo],
                                  **place) if todo else []
        groups: dict[str, list[np.ndarray]] = {}
        for job in jobs:  # one shard's scores at a time
            scores, langs = _load_scores(job)
            for lang in np.unique(langs):
                s = scores[langs == lang]
                groups.setdefault(str(lang), []).append(s[~np.isnan(s)])
        cuts = {}
        for lang, parts in sorted(groups.items()):
            allv = np.concatenate(parts) if parts else np.empty(0, np.float32)
            cuts[lang] = [float(v) for v in np.percentile(allv.astype(np.float64), self.percentiles)] if len(allv) else [
                math.inf, math.inf]
        del groups
        cut_jobs = [CutJob(j.shard, j.stem, fs.join(ctx.output_dir, fs.basename(j.shard)),
                           fs.join(ctx.rejected_dir, f"{self.name}-{fs.basename(j.shard)}") if ctx.rejected_dir else None,
                           cuts, self.keep, ctx.schema, ctx.writer, self.name, self.per_language) for j in jobs]
        results = ctx.executor.map(cut_shard, cut_jobs, desc="perplexity: cut", labels=[c.shard for c in cut_jobs])
        stats = StepStats(self.name)
        per_bucket: dict[str, dict[str, int]] = {}
        for r in results:
            stats.merge(StepStats.from_dict(r["stats"]))
            for lang, counts in r["buckets"].items():
                mine = per_bucket.setdefault(lang, dict.fromkeys(BUCKETS, 0))
                for b, n in counts.items():
                    mine[b] += n
        counts = {}
        for r in scored:
            for k, v in r["throughput"].items():
                counts[k] = counts.get(k, 0) + v
        stats.extra["throughput"] = throughput(counts)  # this run's scoring (a resumed run: the shards it scored)
        stats.extra["buckets"] = {lang: {"percentiles": dict(zip(("head", "middle"), [round(c, 6) for c in cuts[lang]],
                                                                  strict=True)),
                                         "docs": per_bucket.get(lang, {})} for lang in sorted(cuts)}
        stats.extra["cut"] = {"percentiles": list(self.percentiles), "keep": list(self.keep)}
        return [stats]


@dataclass(frozen=True)
class ScoreJob:
    spec: ModelSpec
    shard: str
    stem: str  # the work files: stem + ".bpb.npy" (scores), ".lang.npy" (groups), ".done"
    max_tokens: int | None
    token_budget: int | None
    per_language: bool

    @property
    def done_path(self) -> str:
        return self.stem + ".done"


def _lang_keys(col: pa.ChunkedArray | pa.Array, per_language: bool) -> list[str]:
    if not per_language:
        return ["all"] * len(col)
    return [v or "und" for v in col.to_pylist()]


def score_shard(job: ScoreJob) -> dict:
    """Phase 1: the score and group of every row of one shard (row order), then the marker, each atomically."""
    from curate.models.inference import get_model

    model = get_model(job.spec)
    counter = Throughput()
    parts, langs = [], []
    pf = fs.parquet_file(job.shard)
    cols = ["text", "lang"] if "lang" in pf.schema_arrow.names else ["text"]
    for b in iter_batches(pf, columns=cols, max_rows=READ_ROWS):
        parts.append(model.bits_per_byte(b.column("text").to_pylist(), job.max_tokens, counter,
                                         token_budget=job.token_budget).astype(np.float32))
        lang = b.column("lang") if "lang" in cols else pa.nulls(b.num_rows, pa.string())
        langs += _lang_keys(lang, job.per_language)
    scores = np.concatenate(parts) if parts else np.empty(0, np.float32)
    for suffix, arr in ((".bpb.npy", scores), (".lang.npy", np.array(langs, dtype=str))):
        path = job.stem + suffix
        with fs.atomic_open(path, "wb", tmp_name=f"{fs.basename(path)}.tmp.{os.getpid()}") as f:
            np.save(f, arr)
    fs.atomic_write_text(job.done_path, "")
    return {"docs": len(scores), "throughput": dict(counter)}


def _load_scores(job: ScoreJob) -> tuple[np.ndarray, np.ndarray]:
    return fs.load_npy(job.stem + ".bpb.npy"), fs.load_npy(job.stem + ".lang.npy")


def bucket_of(scores: np.ndarray, cut: Sequence[float]) -> np.ndarray:
    """head (<= first percentile), middle (<= second), tail (above, or no score) for each score."""
    out = np.full(len(scores), "tail", dtype=object)
    with np.errstate(invalid="ignore"):
        out[scores <= cut[1]] = "middle"
        out[scores <= cut[0]] = "head"
    return out


@dataclass(frozen=True)
class CutJob:
    shard: str
    stem: str
    output: str
    rejected: str | None
    cuts: dict  # group -> [head/middle percentile, middle/tail percentile]
    keep: tuple[str, ...]
    schema: pa.Schema
    writer: object  # the pipeline's writer
    step: str
    per_language: bool


def cut_shard(job: CutJob) -> dict:
    """Phase 3: every row of one shard with its score and bucket, to the output or (with --rejected) rejected."""
    t0 = time.perf_counter()
    scores = fs.load_npy(job.stem + ".bpb.npy")
    langs = fs.load_npy(job.stem + ".lang.npy")
    buckets = np.full(len(scores), "tail", dtype=object)
    for lang in np.unique(langs):
        sel = langs == lang
        buckets[sel] = bucket_of(scores[sel], job.cuts[str(lang)])
    keep = np.isin(buckets, list(job.keep))
    stats = StepStats(job.step)
    counts: dict[str, dict[str, int]] = {}
    for lang, b in zip(langs.tolist(), buckets.tolist(), strict=True):
        d = counts.setdefault(lang, dict.fromkeys(BUCKETS, 0))
        d[b] += 1
    out = job.writer.open_file(job.output, job.schema)
    rej_schema = job.schema.append(pa.field("drop_reason", pa.string(), nullable=False))
    rej = job.writer.open_file(job.rejected, rej_schema) if job.rejected else None
    start = 0
    with together(out, rej):
        for batch in iter_batches(fs.parquet_file(job.shard), max_rows=1024):
            n = len(batch)
            s, k, bk = scores[start : start + n], keep[start : start + n], buckets[start : start + n]
            start += n
            col_s = pa.array(np.where(np.isnan(s), None, s).tolist(), pa.float32())
            col_b = pa.array(bk.tolist(), pa.string())
            lengths = pc.utf8_length(batch.column("text")).to_numpy(zero_copy_only=False)
            stats.docs_in += n
            stats.docs_out += int(k.sum())
            stats.chars_in += int(lengths.sum())
            stats.chars_out += int(lengths[k].sum())
            for name in BUCKETS:
                drop = (~k) & (bk == name)
                if drop.any():
                    stats.dropped[f"{job.step}:bucket_{name}"] += int(drop.sum())
                    stats.dropped_chars[f"{job.step}:bucket_{name}"] += int(lengths[drop].sum())
            mask = pa.array(k)
            if k.any():
                out.write_table(batch.filter(mask), **{COLUMN: col_s.filter(mask), BUCKET_COLUMN: col_b.filter(mask)})
            if rej is not None and (~k).any():
                inv = pa.array(~k)
                reasons = pa.array([f"{job.step}:bucket_{b}" for b in bk[~k]], pa.string())
                rej.write_table(batch.filter(inv), drop_reason=reasons,
                                **{COLUMN: col_s.filter(inv), BUCKET_COLUMN: col_b.filter(inv)})
    if start != len(scores):
        raise RuntimeError(f"{job.shard} has {start} rows but {len(scores)} saved scores: delete {job.stem}.* and rerun")
    stats.seconds = time.perf_counter() - t0
    return {"stats": stats.to_dict(), "buckets": counts}
