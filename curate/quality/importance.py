"""Importance resampling (DSIR, Xie et al. 2023): keep the documents of the pool that look most like a target
corpus, sampled without replacement in proportion to their importance weights, up to a budget.

Features. A document is a bag of hashed n-grams: the unigrams and bigrams of its words (`curate.lang.words` of the
lower-cased text in the document's language, punctuation tokens included, as DSIR's WordPunct tokens are), each hashed
into one of `buckets` (10,000 as in the paper). A unigram's bucket is `xxh3_64(word) % buckets`; a bigram's is
`splitmix64(h1 * GOLDEN + h2) % buckets` of its two words' xxh3 hashes (uint64 arithmetic), so a bigram costs no
second string hash. A document without a language (`lang` null) is cut by the spaced-language rules
(`curate.lang.language(None)` is English), and counted as `no_lang`.

Weights. The target and the pool each give a distribution over buckets, add-`smoothing` (Laplace) smoothed:
`p[b] = (count[b] + smoothing) / (total + smoothing * buckets)`. A document with bucket counts `c` has
`log w = sum_b c[b] * (log p_target[b] - log p_pool[b])` (the multinomial coefficient cancels), written as the
column `importance_log_weight`.

Resampling. Gumbel-top-k (the paper's sampler): each document's key is `log w + G`, where `G` is Gumbel noise
drawn from `xxh3_64(id, seed)`, so a document's key depends on the seed and the document only, never on the
number of workers or shards. The documents are taken in decreasing key order until the budget is reached: the
shortest such prefix (tokens kept exceed the budget by less than the last document's tokens). Ties at the cut
key (two documents with the same float64 key) are all kept. Documents with no word are never candidates
(`importance:no_words`); the others left out are `importance:not_sampled`.

Phases (one task per item through the executor, markers and resume from `curate.dedup.common`):
`target` (per target file: bucket counts), `count` (per shard: bucket counts of the pool), `weigh` (per shard:
each document's log weight, key and tokens, saved as .npz), `select0..3` (per shard: a histogram of 16 bits of
the keys, weighted by tokens, among the keys whose higher bits match the cut found so far; the driver adds them,
so the cut is found in at most four passes holding 65,536 bins, never a list of keys), `filter` (per shard).
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.core.document import rejected_schema
from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.core.step import GlobalContext, GlobalStep
from curate.core.validate import check, config_error
from curate.dedup import common
from curate.io import fs
from curate.io.batching import iter_batches
from curate.io.readers import Jsonl, Parquet
from curate.io.writers import Parquet as ParquetWriter
from curate.io.writers import together
from curate.lang import units_version, words

COLUMN = "importance_log_weight"
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
DIGIT_BITS = 16  # bits of the key resolved per selection pass: 4 passes at most, 65,536 bins each
READ_BATCH = 1024
_JSONL = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".json", ".ndjson")
_TEXT = (".txt", ".txt.gz", ".txt.zst")


# ---------------------------------------------------------------- features


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: every bit of the result depends on every bit of `x` (bigram hashes)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def doc_buckets(text: str, lang: str | None, buckets: int) -> np.ndarray:
    """The hashed unigram and bigram buckets of one text (int64, one entry per n-gram occurrence)."""
    ws = words(text.lower(), lang)  # lower-cased first, then cut, as DSIR's featurizer does
    if not ws:
        return np.empty(0, np.int64)
    h = np.fromiter((xxhash.xxh3_64_intdigest(w.encode("utf-8", "surrogatepass")) for w in ws),
                    dtype=np.uint64, count=len(ws))
    with np.errstate(over="ignore"):
        bi = _splitmix64(h[:-1] * GOLDEN + h[1:])
    return (np.concatenate([h, bi]) % np.uint64(buckets)).astype(np.int64)


def featurize(texts: list[str], langs: list[str | None], buckets: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Buckets of many texts at once: (flat buckets, the index of the text each came from, words per text)."""
    parts = [doc_buckets(t or "", lang, buckets) for t, lang in zip(texts, langs, strict=True)]
    sizes = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    flat = np.concatenate(parts) if parts else np.empty(0, np.int64)
    owner = np.repeat(np.arange(len(parts)), sizes)
    tokens = (sizes + 1) // 2  # n words give n unigrams and n - 1 bigrams
    return flat, owner, tokens


def log_probs(counts: np.ndarray, smoothing: float) -> np.ndarray:
    """Add-`smoothing` (Laplace) smoothed log probabilities of a bucket-count vector."""
    counts = counts.astype(np.float64)
    return np.log(counts + smoothing) - math.log(counts.sum() + smoothing * len(counts))


def gumbel(ids: list[str], seed: int) -> np.ndarray:
    """Standard Gumbel noise per document id: `-log(-log u)`, u uniform in (0, 1) from 53 bits of xxh3_64(id, seed)."""
    h = np.fromiter((xxhash.xxh3_64_intdigest(i.encode("utf-8", "surrogatepass"), seed=seed) for i in ids),
                    dtype=np.uint64, count=len(ids))
    u = ((h >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)
    return -np.log(-np.log(u))


def order_key(x: np.ndarray) -> np.ndarray:
    """uint64 keys in the order of the float64 values (sign bit flipped for positives, all bits for negatives)."""
    bits = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
    sign = np.uint64(1 << 63)
    return np.where(bits & sign, ~bits, bits | sign)


def key_value(key: int) -> float:
    """The float64 whose `order_key` is `key`."""
    bits = key & ~(1 << 63) if key & (1 << 63) else ~key & 0xFFFFFFFFFFFFFFFF
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


# ---------------------------------------------------------------- the target corpus


def _text_lines(path: str, bad: Counter):
    """The lines of a plain-text file (.txt, .gz, .zst; local or URL), undecodable bytes replaced and counted."""
    import contextlib
    import gzip
    import io

    with contextlib.ExitStack() as stack:
        stream = stack.enter_context(fs.open(path, "rb"))
        if path.lower().endswith(".gz"):
            stream = stack.enter_context(gzip.GzipFile(fileobj=stream, mode="rb"))
        elif path.lower().endswith(".zst"):
            import zstandard

            raw = zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True)
            stream = stack.enter_context(io.BufferedReader(raw))
        for line in stream:
            try:
                yield line.decode("utf-8")
            except UnicodeDecodeError:
                bad["invalid_utf8"] += 1
                yield line.decode("utf-8", errors="replace")


def target_records(path: str, text_key: str, bad: Counter):
    """(text, lang) of every record of a target file: a JSONL or Parquet record (a run's shards carry `lang`), or
    a line of a plain-text file; unreadable records are counted in `bad` by the readers' own reasons."""
    lower = path.lower()
    if lower.endswith(".parquet") or lower.endswith(_JSONL):
        reader = Parquet(text_key=text_key) if lower.endswith(".parquet") else Jsonl(text_key=text_key)
        stats = StepStats("read")
        for doc in reader.read(path, stats):
            lang = doc.lang or (doc.metadata.get("lang") if isinstance(doc.metadata, dict) else None)
            yield doc.text, lang if isinstance(lang, str) else None
        bad.update(stats.dropped)
        return
    if not lower.endswith(_TEXT):
        raise UsageError(f"importance: target file {path!r} is not .txt(.gz/.zst), JSONL or Parquet")
    for line in _text_lines(path, bad):
        if line.strip():
            yield line, None


@dataclass(frozen=True)
class TargetTask:
    path: str
    out: str  # .npy of bucket counts
    text_key: str
    lang: str | None  # the target's language where a record carries none
    buckets: int


def count_target(task: TargetTask) -> dict:
    """Phase `target`: the bucket counts of one target file, in batches (a file of any size in bounded memory)."""
    counts = np.zeros(task.buckets, np.int64)
    bad: Counter = Counter()
    docs = tokens = no_words = no_lang = 0
    batch: list[tuple[str, str | None]] = []

    def flush() -> None:
        nonlocal tokens, no_words
        flat, _, toks = featurize([t for t, _ in batch], [lang for _, lang in batch], task.buckets)
        counts[:] += np.bincount(flat, minlength=task.buckets)
        tokens += int(toks.sum())
        no_words += int((toks == 0).sum())
        batch.clear()

    for text, lang in target_records(task.path, task.text_key, bad):
        docs += 1
        no_lang += lang is None and task.lang is None
        batch.append((text, lang or task.lang))
        if len(batch) >= READ_BATCH:
            flush()
    flush()
    with fs.atomic_open(task.out, "wb", tmp_name=f"{fs.basename(task.out)}.tmp.{os.getpid()}") as f:
        np.save(f, counts)
    bad["no_words"] += no_words
    return {"docs_in": docs, "tokens": tokens, "no_lang": no_lang, "skipped": {k: v for k, v in bad.items() if v}}


# ---------------------------------------------------------------- the pool


def _pool_batches(path: str):
    """(ids, texts, langs) of a shard of this run, batch by batch."""
    pf = fs.parquet_file(path)
    cols = [c for c in ("id", "text", "lang") if c in pf.schema_arrow.names]
    for batch in iter_batches(pf, columns=cols, max_rows=READ_BATCH):
        langs = batch.column("lang").to_pylist() if "lang" in cols else [None] * batch.num_rows
        yield batch.column("id").to_pylist(), batch.column("text").to_pylist(), langs


@dataclass(frozen=True)
class CountTask:
    path: str
    out: str  # .npy of bucket counts
    buckets: int


def count_pool(task: CountTask) -> dict:
    """Phase `count`: the bucket counts of one shard of the pool."""
    counts = np.zeros(task.buckets, np.int64)
    rows = no_lang = 0
    for _, texts, langs in _pool_batches(task.path):
        flat, _, _ = featurize(texts, langs, task.buckets)
        counts += np.bincount(flat, minlength=task.buckets)
        rows += len(texts)
        no_lang += sum(lang is None for lang in langs)
    with fs.atomic_open(task.out, "wb", tmp_name=f"{fs.basename(task.out)}.tmp.{os.getpid()}") as f:
        np.save(f, counts)
    return {"rows": rows, "no_lang": no_lang}


@dataclass(frozen=True)
class WeighTask:
    path: str
    out: str  # .npz: log_weight (float64), key (uint64 order key), tokens (int64; 0: no word, never a candidate)
    diff: np.ndarray  # log p_target - log p_pool per bucket
    seed: int


def weigh_shard(task: WeighTask) -> dict:
    """Phase `weigh`: every document's log importance weight, its Gumbel-perturbed key and its tokens (words)."""
    buckets = len(task.diff)
    lw, keys, toks = [], [], []
    for ids, texts, langs in _pool_batches(task.path):
        flat, owner, tokens = featurize(texts, langs, buckets)
        w = np.bincount(owner, weights=task.diff[flat], minlength=len(texts))
        lw.append(w)
        keys.append(order_key(w + gumbel(ids, task.seed)))
        toks.append(tokens)
    log_weight = np.concatenate(lw) if lw else np.empty(0, np.float64)
    tokens = np.concatenate(toks) if toks else np.empty(0, np.int64)
    key = np.concatenate(keys) if keys else np.empty(0, np.uint64)
    with fs.atomic_open(task.out, "wb", tmp_name=f"{fs.basename(task.out)}.tmp.{os.getpid()}") as f:
        np.savez(f, log_weight=log_weight, key=key, tokens=tokens)
    return {"rows": len(tokens), "tokens": int(tokens.sum()), "no_words": int((tokens == 0).sum())}


def load_keys(path: str) -> dict[str, np.ndarray]:
    with fs.open(path, "rb") as f:
        z = np.load(f)
        return {k: z[k] for k in z.files}


# ---------------------------------------------------------------- the cut: bounded-memory selection over the keys


@dataclass(frozen=True)
class SelectTask:
    keys: str  # a shard's .npz from `weigh`
    out: str  # .npz of (bins, counts, weights)
    level: int  # which 16 bits of the key, from the top
    prefix: int  # the higher bits already resolved (level x 16 of them)
    by_tokens: bool  # weigh each document by its tokens (a token budget) or by 1 (a document count)


def select_shard(task: SelectTask) -> dict:
    """Phase `select<level>`: a histogram of the next 16 bits of the keys that match the cut's prefix so far."""
    z = load_keys(task.keys)
    ok = z["tokens"] > 0
    key, tokens = z["key"][ok], z["tokens"][ok]
    if task.level:
        inside = (key >> np.uint64(64 - DIGIT_BITS * task.level)) == np.uint64(task.prefix)
        key, tokens = key[inside], tokens[inside]
    digits = ((key >> np.uint64(64 - DIGIT_BITS * (task.level + 1))) & np.uint64((1 << DIGIT_BITS) - 1)).astype(np.int64)
    bins, first, counts = np.unique(digits, return_index=True, return_counts=True)
    weights = np.zeros(len(bins), np.int64)
    np.add.at(weights, np.searchsorted(bins, digits), tokens if task.by_tokens else 1)
    with fs.atomic_open(task.out, "wb", tmp_name=f"{fs.basename(task.out)}.tmp.{os.getpid()}") as f:
        np.savez(f, bins=bins, counts=counts.astype(np.int64), weights=weights)
    return {"rows": int(len(digits))}


def find_cut(ctx: GlobalContext, keys: list[str], budget: int, by_tokens: bool) -> tuple[int, int]:
    """The smallest key L such that the documents with key >= L reach `budget` (in tokens or documents) and those
    with key > L do not, found 16 bits at a time; returns (L, passes). Only 2^16 bins are ever held."""
    sel_dir = fs.join(ctx.work_dir, "select")
    fs.makedirs(sel_dir)
    prefix, remaining = 0, budget
    names = [common.shard_name(i) for i in range(len(keys))]
    levels = 64 // DIGIT_BITS
    for level in range(levels):
        outs = [fs.join(sel_dir, f"{level}-{n}.npz") for n in names]
        common.run_phase(ctx, f"select{level}", select_shard,
                         [SelectTask(k, o, level, prefix, by_tokens) for k, o in zip(keys, outs, strict=True)], names)
        weights = np.zeros(1 << DIGIT_BITS, np.int64)
        counts = np.zeros(1 << DIGIT_BITS, np.int64)
        for o in outs:  # one small file at a time
            with fs.open(o, "rb") as f:
                z = np.load(f)
                np.add.at(weights, z["bins"], z["weights"])
                np.add.at(counts, z["bins"], z["counts"])
        from_top = np.cumsum(weights[::-1])
        i = int(np.searchsorted(from_top, remaining))  # the first bin, from the top, where the budget is reached
        b = len(weights) - 1 - i
        remaining -= int(from_top[i] - weights[b])
        prefix = (prefix << DIGIT_BITS) | b
        if counts[b] == 1 or level == levels - 1:
            return prefix << (DIGIT_BITS * (levels - 1 - level)), level + 1
    raise AssertionError("unreachable")


# ---------------------------------------------------------------- the filter


@dataclass(frozen=True)
class FilterTask:
    name: str
    path: str
    keys: str
    output: str
    rejected: str | None
    cut: int | None  # keep documents whose key >= cut (and that have a word); None: keep none
    schema: pa.Schema
    writer: ParquetWriter  # the pipeline's writer


def filter_shard(task: FilterTask) -> dict:
    """Phase `filter`: the sampled rows to the output with their log weight, the others (with --rejected) to
    rejected with their reason."""
    t0 = time.perf_counter()
    z = load_keys(task.keys)
    cand = z["tokens"] > 0
    keep = cand & (z["key"] >= np.uint64(task.cut)) if task.cut is not None else np.zeros(len(cand), bool)
    stats = StepStats(task.name)
    out = task.writer.open_file(task.output, task.schema)
    rej_schema = rejected_schema(task.schema)
    rej = task.writer.open_file(task.rejected, rej_schema) if task.rejected else None
    with together(out, rej):
        rows = _route(task, z["log_weight"], keep, cand, stats, out, rej)
    if rows != len(keep):
        raise RuntimeError(f"{task.path} has {rows} rows but {len(keep)} weighed: the input changed during the run; "
                           "delete the run's _work directory and start over")
    stats.seconds = time.perf_counter() - t0
    st = stats.to_dict()
    st["kept_tokens"] = int(z["tokens"][keep].sum())
    st["kept_log_weight_sum"] = float(z["log_weight"][keep].sum())
    st["pool_log_weight_sum"] = float(z["log_weight"][cand].sum())
    st["kept_key_min"] = int(z["key"][keep].min()) if keep.any() else None  # the exact cut: the last key taken
    return st


def _route(task: FilterTask, log_weight: np.ndarray, keep: np.ndarray, cand: np.ndarray, stats: StepStats,
           out, rej) -> int:
    """Count and write the rows of one shard, batch by batch; returns the rows read."""
    start = 0
    for batch in iter_batches(fs.parquet_file(task.path), max_rows=READ_BATCH):
        n = batch.num_rows
        k, c, w = keep[start:start + n], cand[start:start + n], log_weight[start:start + n]
        start += n
        if start > len(keep):
            break
        chars = pc.utf8_length(batch.column("text")).to_numpy(zero_copy_only=False)
        stats.docs_in += n
        stats.chars_in += int(chars.sum())
        stats.docs_out += int(k.sum())
        stats.chars_out += int(chars[k].sum())
        reasons = np.where(c, f"{task.name}:not_sampled", f"{task.name}:no_words")[~k]
        for reason, m in zip(*np.unique(reasons, return_counts=True), strict=True):
            stats.dropped[str(reason)] += int(m)
            stats.dropped_chars[str(reason)] += int(chars[~k][reasons == reason].sum())
        if k.any():
            out.write_table(batch.filter(pa.array(k)), **{COLUMN: pa.array(w[k])})
        if rej is not None and (~k).any():
            rej.write_table(batch.filter(pa.array(~k)), **{COLUMN: pa.array(w[~k], mask=~c[~k])},  # no word: null
                            drop_reason=pa.array(reasons.tolist(), pa.string()))
    return start


# ---------------------------------------------------------------- the step


class Importance(GlobalStep):
    """`Importance(target, tokens=N | docs=N | fraction=F, seed=0)`: DSIR importance resampling toward a target.

    `target`: globs or files of the target corpus: plain text (.txt, .gz, .zst: one record a line), JSONL with a
    `text_key` field, or Parquet (a run's shards: their `lang` column is used), local or URLs. `target_lang`: the
    language of target records that carry none (None: cut as a spaced language). Exactly one budget: `tokens`
    (words of `curate.lang`, punctuation included: the same units the features are made of, known without a
    tokenizer and in every language), `docs`, or `fraction` of the documents that have a word. `buckets`
    (10,000) and `smoothing` (add-1) as in the paper. Writes `importance_log_weight` on every kept document.
    """

    name: ClassVar[str] = "importance"
    columns: ClassVar[dict[str, pa.DataType]] = {COLUMN: pa.float64()}

    def __init__(self, target: str | list[str], *, tokens: int | None = None, docs: int | None = None,
                 fraction: float | None = None, seed: int = 0, target_lang: str | None = None,
                 text_key: str = "text", buckets: int = 10_000, smoothing: float = 1.0):
        targets = [target] if isinstance(target, (str, os.PathLike)) else target
        if not isinstance(targets, list) or not targets or not all(isinstance(t, (str, os.PathLike)) for t in targets):
            raise config_error(self, f"target must be a path, a glob or a list of them, got {target!r}")
        self.target = [os.fspath(t) for t in targets]
        if sum(x is not None for x in (tokens, docs, fraction)) != 1:
            raise config_error(self, "give exactly one budget: tokens=, docs= or fraction=")
        self.tokens = check(self, "tokens", tokens, int, lo=1, optional=True)
        self.docs = check(self, "docs", docs, int, lo=1, optional=True)
        self.fraction = check(self, "fraction", fraction, float, lo=0, hi=1, lo_open=True, optional=True)
        self.seed = check(self, "seed", seed, int, lo=0, hi=(1 << 64) - 1)
        self.target_lang = check(self, "target_lang", target_lang, str, optional=True)
        self.text_key = check(self, "text_key", text_key, str)
        self.buckets = check(self, "buckets", buckets, int, lo=2, hi=1 << 31)
        self.smoothing = check(self, "smoothing", smoothing, float, lo=0, lo_open=True)
        self.text_units = units_version()  # words per language (curate.lang): fingerprinted

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        files = fs.expand_inputs(self.target, suffixes=(".parquet", *_JSONL, *_TEXT))
        other = [f for f in files if not f.lower().endswith((".parquet", *_JSONL, *_TEXT))]
        if other:
            raise UsageError(f"importance: target file {other[0]!r} is not .txt(.gz/.zst), JSONL or Parquet")
        common.check_work_dir(ctx.work_dir, ctx.inputs, {"step": repr(self),
                                                         "target": [[f, fs.size(f)] for f in files]})
        seconds: dict[str, float] = {}
        t = time.perf_counter()
        target_counts, target = self._target(ctx, files)
        pool_counts, pool = self._pool(ctx)
        seconds["count"] = time.perf_counter() - t
        diff = log_probs(target_counts, self.smoothing) - log_probs(pool_counts, self.smoothing)
        names = [common.shard_name(i) for i in range(len(ctx.inputs))]
        keys = [fs.join(ctx.work_dir, "keys", f"{n}.npz") for n in names]
        fs.makedirs(fs.join(ctx.work_dir, "keys"))
        t = time.perf_counter()
        weighed = common.run_phase(ctx, "weigh", weigh_shard,
                                   [WeighTask(p, k, diff, self.seed) for p, k in zip(ctx.inputs, keys, strict=True)],
                                   names)
        seconds["weigh"] = time.perf_counter() - t
        t = time.perf_counter()
        budget, by_tokens, total = self._budget(weighed)
        cut, passes = (0, 0) if budget >= total else find_cut(ctx, keys, budget, by_tokens) if budget else (None, 0)
        seconds["select"] = time.perf_counter() - t
        t = time.perf_counter()
        filtered = self._filter(ctx, keys, cut)
        seconds["filter"] = time.perf_counter() - t
        return [self._stats(filtered, target, pool, weighed, budget, by_tokens, cut, passes, seconds)]

    def _target(self, ctx: GlobalContext, files: list[str]) -> tuple[np.ndarray, dict]:
        """Phase `target`: the target's bucket counts, summed; what was read and skipped."""
        out = fs.join(ctx.work_dir, "target")
        fs.makedirs(out)
        names = [f"{i:05d}" for i in range(len(files))]
        npys = [fs.join(out, f"{n}.npy") for n in names]
        res = common.run_phase(ctx, "target", count_target, [
            TargetTask(f, o, self.text_key, self.target_lang, self.buckets) for f, o in zip(files, npys, strict=True)],
            names)
        counts = sum((fs.load_npy(p) for p in npys), np.zeros(self.buckets, np.int64))
        skipped: Counter = Counter()
        for r in res:
            skipped.update(r["skipped"])
        info = {"files": len(files), "records": sum(r["docs_in"] for r in res), "tokens": sum(r["tokens"] for r in res),
                "no_lang": sum(r["no_lang"] for r in res), "skipped": dict(sorted(skipped.items()))}
        if not info["tokens"]:
            raise UsageError(f"importance: the target ({', '.join(self.target)}) holds no word in {len(files)} "
                             f"file(s); skipped: {info['skipped']}")
        return counts, info

    def _pool(self, ctx: GlobalContext) -> tuple[np.ndarray, dict]:
        """Phase `count`: the pool's bucket counts, summed."""
        out = fs.join(ctx.work_dir, "pool")
        fs.makedirs(out)
        names = [common.shard_name(i) for i in range(len(ctx.inputs))]
        npys = [fs.join(out, f"{n}.npy") for n in names]
        res = common.run_phase(ctx, "count", count_pool,
                               [CountTask(p, o, self.buckets) for p, o in zip(ctx.inputs, npys, strict=True)], names)
        counts = sum((fs.load_npy(p) for p in npys), np.zeros(self.buckets, np.int64))
        return counts, {"docs": sum(r["rows"] for r in res), "no_lang": sum(r["no_lang"] for r in res)}

    def _budget(self, weighed: list[dict]) -> tuple[int, bool, int]:
        """(budget, counted in tokens?, what the candidates hold in that unit)."""
        if self.tokens is not None:
            return self.tokens, True, sum(w["tokens"] for w in weighed)
        candidates = sum(w["rows"] - w["no_words"] for w in weighed)
        k = self.docs if self.docs is not None else math.floor(self.fraction * candidates + 0.5)
        return k, False, candidates

    def _filter(self, ctx: GlobalContext, keys: list[str], cut: int | None) -> list[dict]:
        if ctx.rejected_dir:
            fs.makedirs(ctx.rejected_dir)
        fs.makedirs(ctx.output_dir)
        stem = fs.basename(ctx.work_dir)
        tasks = [FilterTask(self.name, p, k, fs.join(ctx.output_dir, fs.basename(p)),
                            fs.join(ctx.rejected_dir, f"{stem}-{self.name}-{fs.basename(p)}") if ctx.rejected_dir else None,
                            cut, ctx.schema, ctx.writer) for p, k in zip(ctx.inputs, keys, strict=True)]
        return common.run_phase(ctx, "filter", filter_shard, tasks, [common.shard_name(i) for i in range(len(tasks))])

    def _stats(self, filtered: list[dict], target: dict, pool: dict, weighed: list[dict], budget: int,
               by_tokens: bool, cut: int | None, passes: int, seconds: dict) -> StepStats:
        stats = StepStats(self.name)
        for r in filtered:
            stats.merge(StepStats.from_dict({k: v for k, v in r.items() if not k.startswith(("kept_", "pool_"))}))
        kept = stats.docs_out
        lows = [r["kept_key_min"] for r in filtered if r["kept_key_min"] is not None]
        candidates = sum(w["rows"] - w["no_words"] for w in weighed)
        stats.extra = {
            "target": target,
            "pool": {**pool, "tokens": sum(w["tokens"] for w in weighed), "candidates": candidates},
            "budget": {"tokens" if by_tokens else "docs": budget},
            "tokens_are": "curate.lang words, punctuation included",
            "threshold": {"key": key_value(min(lows)) if lows else None, "all_kept": cut == 0, "passes": passes},
            "kept": {"docs": kept, "tokens": sum(r["kept_tokens"] for r in filtered)},
            "log_weight_mean": {
                "kept": sum(r["kept_log_weight_sum"] for r in filtered) / kept if kept else None,
                "pool": sum(r["pool_log_weight_sum"] for r in filtered) / candidates if candidates else None},
            "seconds": {k: round(v, 3) for k, v in seconds.items()},
        }
        stats.seconds = sum(seconds.values())
        return stats
