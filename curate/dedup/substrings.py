"""Exact-substring deduplication by suffix array (Lee et al., "Deduplicating Training Data Makes Language Models
Better"): `Substrings`, a global step.

The unit is the **byte of UTF-8**, as in the paper's reference implementation (its 50 tokens are about 100+
bytes), because a suffix array over bytes is what a well-kept library builds (pydivsufsort's libdivsufsort) and
needs no segmenter; but a span is only ever a run of whole characters. A repeated span is a string of whole
characters of at least `min_length` bytes that occurs at least twice in the corpus (overlapping occurrences and
two in one document count). UTF-8 makes that exact with no extra work: a string that starts with a lead byte
can only occur at character boundaries, so the longest repeat starting at a character boundary is its longest
common prefix with a neighbouring suffix, cut back to the last character boundary. Documents are joined with
the byte 0xFF after each, which never occurs in UTF-8, and every repeat is cut at its own document's end: a
match running into the separator ends there in the other copy too, so no span crosses a document boundary.

Phases, each one task per item through the executor, resumable by markers (`common.run_phase`):

1. `text` (per shard): the shard's texts as UTF-8, each followed by 0xFF, and the offsets of its documents;
   the shard cut into pieces of at most `part_bytes` at document boundaries.
2. the driver packs consecutive pieces into *parts* of at most `part_bytes` (a single document longer than
   that is a part of its own, counted as `oversize_docs`).
3. `pairs` (one task per pair of parts, or one task for a single part): the suffix array and LCP array of the
   two parts' text together; for every position the longest repeat starting there (`keep="none"`: with any
   other position; `keep="first"`: with an earlier one, the longest previous factor), cut to character
   boundaries and the document's end; positions with at least `min_length` give intervals, merged, written as
   (shard, row, byte start, byte end). Every pair of positions of the corpus meets in some task, so the union
   over tasks is exactly the corpus-wide answer, whatever the number of parts or workers.
4. `rewrite` (per shard): the union of a document's intervals struck from its text, the characters struck in
   the column `substrings_struck`, documents left too short dropped (`substrings:emptied`); every struck
   region written with its hash for the report.
5. `top` (one task): the struck regions grouped by text, the most repeated kept for `curate dedup-report`.

That is `method="suffix"`; `method="hash"` (curate.dedup.windows) replaces phases 2-3 by `windows`, `repeats`
and `spans`, linear in the corpus, with the same `rewrite` and `top`; `"auto"` picks by the number of parts.

Memory per `pairs` task is about 14 (`keep="none"`) or 21 (`"first"`) bytes per byte of its two parts' text
(the text, 32-bit suffix and LCP arrays, the longest repeat per position), so `part_bytes` bounds it up front; the cost is P(P-1)/2 suffix
arrays of 2 x `part_bytes` for P parts (quadratic in the corpus over the budget): see docs/dedup.md.
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import polars as pl
import pyarrow as pa
import xxhash

from curate.core.document import conform
from curate.core.stats import StepStats
from curate.core.step import GlobalContext, GlobalStep
from curate.core.validate import check, config_error
from curate.dedup import common, windows
from curate.dedup.lines import Emitter, _open
from curate.io import fs
from curate.io.batching import iter_batches
from curate.io.writers import Parquet, together
from curate.lang import units_version

SEP = 0xFF  # after every document: never a byte of UTF-8, so no text matches it
KEEPS = ("none", "first")
METHODS = ("auto", "suffix", "hash")
AUTO_PARTS = 4  # "auto" sorts suffixes up to this many parts, hashes windows beyond (benchmarks/substrings.json)
TOP_SPANS = 200  # regions kept for the report
SAMPLE_CHARS = 400  # characters of a region's text the report file keeps


# ---------------------------------------------------------------- phase 1: text


@dataclass
class TextTask:
    shard: int
    path: str
    text: str  # the shard's UTF-8, each document followed by SEP
    offsets: str  # int64 little-endian: rows + 1 offsets into `text`
    part_bytes: int


def text_shard(task: TextTask) -> dict:
    """Write one shard's texts and offsets, a batch at a time; cut it into pieces of at most `part_bytes`."""
    cpu = time.process_time()
    pf = fs.parquet_file(task.path)
    pieces, piece_row, piece_byte, oversize = [], 0, 0, 0
    row = total = 0
    text_out, off_out = fs.Staged(task.text), fs.Staged(task.offsets)
    try:
        with common.naming(text_out.tmp), open(text_out.tmp, "wb") as tf, open(off_out.tmp, "wb") as of:
            of.write(np.zeros(1, "<i8").tobytes())
            for batch in iter_batches(pf, columns=["text"]):
                encoded = [(t or "").encode() + b"\xff" for t in batch.column("text").to_pylist()]
                ends = total + np.cumsum([len(e) for e in encoded], dtype=np.int64)
                for i, e in enumerate(encoded):  # pieces close before the document that would overflow them
                    start = int(ends[i]) - len(e)
                    if start > piece_byte and int(ends[i]) - piece_byte > task.part_bytes:
                        pieces.append([piece_row, row + i, piece_byte, start])
                        piece_row, piece_byte = row + i, start
                    oversize += len(e) > task.part_bytes
                tf.write(b"".join(encoded))
                of.write(ends.astype("<i8").tobytes())
                row += len(encoded)
                total = int(ends[-1]) if len(ends) else total
    except BaseException:
        text_out.discard()
        off_out.discard()
        raise
    if total > piece_byte:
        pieces.append([piece_row, row, piece_byte, total])
    text_out.commit()
    off_out.commit()
    return {"rows": row, "bytes": total, "pieces": pieces, "oversize": oversize, "cpu": time.process_time() - cpu}


def plan_parts(shards: list[dict], part_bytes: int) -> list[list[list[int]]]:
    """Consecutive pieces packed into parts of at most `part_bytes`: each part a list of
    [shard, row_lo, row_hi, byte_lo, byte_hi] segments, in corpus order."""
    parts, current, size = [], [], 0
    for s, res in enumerate(shards):
        for row_lo, row_hi, lo, hi in res["pieces"]:
            if current and size + hi - lo > part_bytes:
                parts.append(current)
                current, size = [], 0
            current.append([s, row_lo, row_hi, lo, hi])
            size += hi - lo
    if current:
        parts.append(current)
    return parts


# ---------------------------------------------------------------- phase 2: pairs


@dataclass
class PairTask:
    segments: list[list[int]]  # the first part's segments, then the second's: corpus order
    texts: list[str]  # per shard
    offsets: list[str]  # per shard
    out: str
    keep: str
    min_length: int


def load_segments(task: PairTask) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(text, document starts, shard and row of each document) of the task's segments, joined in order."""
    chunks, starts, shard, row = [], [], [], []
    base = 0
    for s, row_lo, row_hi, lo, hi in task.segments:
        chunks.append(common.read_range(task.texts[s], lo, hi - lo))
        off = np.frombuffer(common.read_range(task.offsets[s], 8 * row_lo, 8 * (row_hi - row_lo + 1)), "<i8")
        starts.append(off[:-1] - lo + base)
        shard.append(np.full(row_hi - row_lo, s, dtype=np.int32))
        row.append(np.arange(row_lo, row_hi, dtype=np.uint32))
        base += hi - lo
    text = np.frombuffer(bytearray(b"".join(chunks)), dtype=np.uint8)  # writable: libdivsufsort takes no read-only
    return text, np.concatenate(starts), np.concatenate(shard), np.concatenate(row)


def longest_repeats(text: np.ndarray, keep: str) -> np.ndarray:
    """Per position, the longest prefix of its suffix that occurs at another position (`keep="none"`: the larger
    LCP with its two neighbours in suffix order) or at an earlier one (`"first"`: the longest previous factor).
    Memory (tracemalloc, tests/test_substrings.py): 13 bytes per byte of text for "none", 20 for "first" (the
    suffix and LCP arrays, pydivsufsort's work arrays, the result), besides the text; 32-bit below 2 GiB."""
    from pydivsufsort import divsufsort, kasai, longest_previous_factor

    sa = divsufsort(text)
    lcp = kasai(text, sa)  # lcp[r]: common prefix of the suffixes of ranks r and r + 1
    if keep == "first":
        return longest_previous_factor(text, sa, lcp)
    lcp[1:] = np.maximum(lcp[1:], lcp[:-1])
    best = np.empty_like(lcp)
    best[sa] = lcp
    return best


CHUNK = 1 << 20  # positions whose candidate repeats are handled at once: bounds `intervals`' temporaries (~50 MiB)


def intervals(text: np.ndarray, starts: np.ndarray, best: np.ndarray, min_length: int) -> tuple[np.ndarray, np.ndarray]:
    """Merged [start, stop) byte intervals of the text covered by repeats of at least `min_length` bytes, each
    repeat cut at its document's end (the SEP after it) and back to a character boundary. `CHUNK` positions at a
    time, so a corpus where most positions repeat needs no per-position arrays beyond `best`."""
    ends = np.append(starts[1:], len(text)) - 1  # each document's SEP
    found = [_chunk(text, starts, ends, best, min_length, c, min(c + CHUNK, len(text)))
             for c in range(0, len(text), CHUNK)]
    lo = np.concatenate([f[0] for f in found]) if found else np.zeros(0, np.int64)
    hi = np.concatenate([f[1] for f in found]) if found else np.zeros(0, np.int64)
    return windows.merge(lo, hi)


def _chunk(text: np.ndarray, starts: np.ndarray, ends: np.ndarray, best: np.ndarray, min_length: int, c0: int,
           c1: int) -> tuple[np.ndarray, np.ndarray]:
    """The intervals of repeats starting in positions c0..c1, merged."""
    cand = np.flatnonzero(best[c0:c1] >= min_length) + c0
    lead = text[cand]
    cand = cand[(lead < 0x80) | ((lead >= 0xC0) & (lead != SEP))]  # a character starts here
    end = ends[np.searchsorted(starts, cand, side="right") - 1]
    length = np.minimum(best[cand].astype(np.int64), end - cand)
    for _ in range(3):  # a UTF-8 character has at most 3 continuation bytes
        at = cand + length
        inside = at < end
        cont = np.zeros(len(cand), dtype=bool)
        cont[inside] = (text[at[inside]] & 0xC0) == 0x80
        length -= cont
    ok = length >= min_length
    return windows.merge(cand[ok], cand[ok] + length[ok])


def pair_task(task: PairTask) -> dict:
    """Phase 2: the repeated intervals of two parts' text (or one part's), as (shard, row, start, end) in bytes."""
    t0, cpu = time.perf_counter(), time.process_time()
    text, starts, shard, row = load_segments(task)
    best = longest_repeats(text, task.keep)
    lo, hi = intervals(text, starts, best, task.min_length)
    del best
    doc = np.searchsorted(starts, lo, side="right") - 1
    table = pa.table({"shard": shard[doc], "row": row[doc], "start": (lo - starts[doc]).astype(np.int64),
                      "end": (hi - starts[doc]).astype(np.int64)})
    common.write_table(table, task.out, segments=["shard"])
    return {"bytes": len(text), "intervals": len(lo), "covered": int((hi - lo).sum()),
            "seconds": time.perf_counter() - t0, "cpu": time.process_time() - cpu}


# ---------------------------------------------------------------- phase 3: rewrite


@dataclass
class RewriteTask:
    name: str
    shard: int
    path: str
    rows: int
    intervals: list[str]
    output: str
    struck: str
    rejected: str | None
    writer: Parquet
    schema_bytes: bytes
    language: str
    min_chars: int
    min_words: int


def merged(table: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, start, end) of the union of one shard's intervals from every pair task, sorted."""
    if not table.num_rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    row = table["row"].to_numpy().astype(np.int64)
    lo, hi = table["start"].to_numpy(), table["end"].to_numpy()
    order = np.lexsort((lo, row))
    return _reduce(row[order], lo[order], hi[order])


def _reduce(row: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Overlapping or touching intervals of one row merged (the input sorted by row, then start)."""
    out_row, out_lo, out_hi = [], [], []
    for r, a, b in zip(row.tolist(), lo.tolist(), hi.tolist(), strict=True):
        if out_row and out_row[-1] == r and a <= out_hi[-1]:
            out_hi[-1] = max(out_hi[-1], b)
        else:
            out_row.append(r)
            out_lo.append(a)
            out_hi.append(b)
    return np.array(out_row, np.int64), np.array(out_lo, np.int64), np.array(out_hi, np.int64)


def strike(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[str]]:
    """(text without the byte spans, the struck pieces): spans lie on character boundaries (a split sequence
    would be a UnicodeDecodeError here, never a silently mangled text)."""
    data, kept, gone, at = text.encode(), [], [], 0
    for a, b in spans:
        kept.append(data[at:a])
        gone.append(data[a:b].decode())
        at = b
    kept.append(data[at:])
    return b"".join(kept).decode(), gone


def rewrite_shard(task: RewriteTask) -> dict:
    """Phase 3: strike each document's repeated spans; count them per document and write them for the report."""
    t0, cpu = time.perf_counter(), time.process_time()
    schema = pa.ipc.read_schema(pa.py_buffer(task.schema_bytes))
    pf = fs.parquet_file(task.path)
    if pf.metadata.num_rows != task.rows:
        raise RuntimeError(f"{task.path} has {pf.metadata.num_rows} rows but had {task.rows} when dedup read it: "
                           "the input changed during the run; delete the run's _work directory and start over")
    rows, lo, hi = merged(common.read_where(task.intervals, {"shard": task.shard}, ["row", "start", "end"]))
    out, rej = _open(task.writer, task.output, task.rejected, schema)
    em = Emitter(task.name, task.min_chars, task.min_words, 0, out, rej, language=task.language)
    found = {"hash": [], "bytes": [], "text": []}
    col = schema.get_field_index("substrings_struck")
    with together(out, rej):
        start = 0
        for batch in iter_batches(pf):
            table = conform(batch, schema)
            a, b = np.searchsorted(rows, [start, start + table.num_rows])
            changes, struck = {}, np.zeros(table.num_rows, dtype=np.int32)
            texts = table["text"].to_pylist() if b > a else []
            for r in np.unique(rows[a:b]).tolist():
                i, (u, v) = r - start, np.searchsorted(rows, [r, r + 1])
                kept, gone = strike(texts[i], list(zip(lo[u:v].tolist(), hi[u:v].tolist(), strict=True)))
                struck[i] = len(texts[i]) - len(kept)
                changes[i] = (kept, "\n".join(gone), len(gone), 1)
                for g in gone:
                    raw = g.encode()
                    found["hash"].append(xxhash.xxh3_64_intdigest(raw))
                    found["bytes"].append(len(raw))
                    found["text"].append(g[:SAMPLE_CHARS])
            table = table.set_column(col, "substrings_struck", pa.array(struck, pa.int32()))
            em.emit(table, changes)
            start += table.num_rows
    common.write_table(pa.table({"hash": pa.array(found["hash"], pa.uint64()), "bytes": pa.array(found["bytes"], pa.int64()),
                                 "text": pa.array(found["text"], pa.string())}), task.struck)
    return {**em.stats, "seconds": time.perf_counter() - t0, "cpu": time.process_time() - cpu}


# ---------------------------------------------------------------- phase 4: the most repeated regions


@dataclass
class TopTask:
    struck: list[str]
    out: str


def top_task(task: TopTask) -> dict:
    """The struck regions grouped by their text's hash, the `TOP_SPANS` most repeated with a sample of their text.
    One shard's regions read at a time; memory is one row (about 24 bytes) per distinct region."""
    counts = pl.DataFrame(schema={"hash": pl.UInt64, "count": pl.UInt32, "bytes": pl.Int64})
    for path in task.struck:
        part = pl.from_arrow(fs.retrying(lambda p=path: fs.parquet_file(p).read(columns=["hash", "bytes"])))
        part = part.group_by("hash").agg(pl.len().alias("count"), pl.col("bytes").first())
        counts = pl.concat([counts, part.cast(counts.schema)]).group_by("hash").agg(pl.col("count").sum(),
                                                                                   pl.col("bytes").first())
    top = counts.sort(["count", "bytes", "hash"], descending=[True, True, False]).head(TOP_SPANS)
    texts: dict[int, str] = {}
    wanted = set(top["hash"].to_list())
    for path in task.struck:
        t = fs.retrying(lambda p=path: fs.parquet_file(p).read(columns=["hash", "text"]))
        for h, text in zip(t["hash"].to_pylist(), t["text"].to_pylist(), strict=True):
            if h in wanted:
                texts.setdefault(h, text)
    top = top.with_columns(pl.Series("text", [texts[h] for h in top["hash"].to_list()], pl.String))
    common.write_table(top.to_arrow(), task.out)
    return {"regions": int(counts.height)}


def top_spans(output: str) -> pl.DataFrame | None:
    """The most repeated struck regions of a finished run (`curate dedup-report`), or None when it has none."""
    paths = sorted(fs.glob(fs.join(output, "_work", "global*", "substrings-top.parquet")))
    if not paths:
        return None
    return pl.concat([pl.from_arrow(fs.parquet_file(p).read()) for p in paths]).sort("count", descending=True)


# ---------------------------------------------------------------- the step


class Substrings(GlobalStep):
    """Strike every span of at least `min_length` UTF-8 bytes (whole characters) that occurs more than once in
    the corpus, found by suffix arrays of parts of at most `part_bytes` and of every pair of parts
    (`method="suffix"`: quadratic in corpus / `part_bytes`) or by hashing every window of `min_length` bytes and
    grouping the hashes in partitions on disk (`"hash"`, curate.dedup.windows: linear, about 2.5x the CPU of one
    suffix array per byte). The output is the same (a false repeat by hash collision aside: below 1e-9 for a
    terabyte); `"auto"` sorts suffixes up to `AUTO_PARTS` parts and hashes beyond, where it is the cheaper.

    `keep="none"` strikes every copy (the paper's ExactSubstr); `keep="first"` keeps the first occurrence in
    corpus order (input shard, then row, then position) and strikes the later ones. A document that lost text
    and is left blank, under `min_chars` characters or `min_words` words (`curate.lang`, its `lang` or
    `language`) is dropped (`substrings:emptied`); the characters struck from each document are in the column
    `substrings_struck`, what was cut in `rejected/` (`substrings:duplicate`). See docs/dedup.md.
    """

    name: ClassVar[str] = "substrings"
    repeated_ids: ClassVar[str] = "keep_one"  # documents are (shard, row): copies sharing an id are repeats like any
    columns: ClassVar[dict[str, pa.DataType]] = {"substrings_struck": pa.int32()}

    def __init__(self, min_length: int = 100, keep: str = "none", part_bytes: int = 64 << 20, min_chars: int = 0,
                 min_words: int = 0, language: str = "en", method: str = "auto", partitions: int | None = None):
        self.min_length = check(self, "min_length", min_length, int, lo=1)
        self.keep = check(self, "keep", keep, choices=KEEPS)
        self.part_bytes = check(self, "part_bytes", part_bytes, int, lo=1)
        self.method = check(self, "method", method, choices=METHODS)
        if partitions is not None and (partitions < 1 or partitions & (partitions - 1)):
            raise config_error(self, f"partitions must be a power of two, got {partitions}")
        self.partitions = partitions
        self.min_chars = check(self, "min_chars", min_chars, int, lo=0)
        self.min_words = check(self, "min_words", min_words, int, lo=0)
        self.language = check(self, "language", language, str)
        self.text_units = units_version()  # min_words' words (curate.lang): fingerprinted
        if method == "suffix" and not _has_suffix_arrays():  # said when the pipeline is built, not in a worker
            raise config_error(self, "needs pydivsufsort for its suffix arrays: pip install 'peneira[substrings]'")

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        # parts change nothing in the output, but the work files are cut by them: a new part size starts over
        common.check_work_dir(ctx.work_dir, ctx.inputs, {"step": repr(self), "rows": "keyed"})
        fs.makedirs(ctx.output_dir)
        if ctx.rejected_dir:
            fs.makedirs(ctx.rejected_dir)
        names = [common.shard_name(i) for i in range(len(ctx.inputs))]
        seconds: dict[str, float] = {}
        t = time.perf_counter()
        texts = [fs.join(ctx.work_dir, "text", f"{n}.bin") for n in names]
        offsets = [fs.join(ctx.work_dir, "text", f"{n}.offsets") for n in names]
        shards = common.run_phase(ctx, "text", text_shard, [
            TextTask(i, p, texts[i], offsets[i], self.part_bytes) for i, p in enumerate(ctx.inputs)], names)
        seconds["text"] = time.perf_counter() - t
        parts = plan_parts(shards, self.part_bytes)
        if self.method == "hash" or (self.method == "auto" and (len(parts) > AUTO_PARTS or not _has_suffix_arrays())):
            return self._hash(ctx, names, shards, texts, offsets, seconds)
        t = time.perf_counter()
        pairs = [(i, j) for i in range(len(parts)) for j in range(i + 1, len(parts))] or [(0, 0)] * bool(parts)
        labels = [f"{i:04d}-{j:04d}" for i, j in pairs]
        found = [fs.join(ctx.work_dir, "pairs", f"{lab}.parquet") for lab in labels]
        paired = common.run_phase(ctx, "pairs", pair_task, [
            PairTask(parts[i] + (parts[j] if j != i else []), texts, offsets, found[k], self.keep, self.min_length)
            for k, (i, j) in enumerate(pairs)], labels)
        seconds["pairs"] = time.perf_counter() - t
        return self._rewrite(ctx, names, shards, [found] * len(names), seconds, {
            "method": "suffix", "parts": len(parts), "pair_tasks": len(paired), "max_pair_bytes": max((p["bytes"] for p in paired), default=0),
            "cpu_seconds": {"text": _cpu(shards), "pairs": _cpu(paired)}})

    def _hash(self, ctx: GlobalContext, names: list[str], shards: list[dict], texts: list[str], offsets: list[str],
              seconds: dict[str, float]) -> list[StepStats]:
        """`method="hash"`: windows hashed per shard, repeats found per hash partition, spans per shard
        (curate.dedup.windows)."""
        total = sum(s["bytes"] for s in shards)
        per = max(1, self.part_bytes // windows.SHARE)  # records per partition, about one per byte
        parts = self.partitions or min(4096, 1 << max(0, -(-total // per) - 1).bit_length())
        records = [fs.join(ctx.work_dir, "windows", f"{n}.bin") for n in names]
        local = [fs.join(ctx.work_dir, "windows", f"{n}.local") for n in names]
        t = time.perf_counter()
        hashed = common.run_phase(ctx, "windows", windows.window_shard, [
            windows.WindowTask(i, texts[i], s["pieces"], offsets[i], max(1, self.part_bytes // windows.SHARE), records[i],
                               local[i], self.keep, self.min_length, parts)
            for i, s in enumerate(shards)], names)
        seconds["windows"] = time.perf_counter() - t
        t = time.perf_counter()
        reads: list[list[tuple[str, int, int]]] = [[] for _ in range(parts)]
        for i, h in enumerate(hashed):
            base = 0
            for counts in h["counts"]:
                for p, at in enumerate(np.cumsum([0, *counts[:-1]]).tolist()):
                    if counts[p]:
                        reads[p].append((records[i], base + at, counts[p]))
                base += sum(counts)
        labels = [f"{p:04d}" for p in range(parts)]
        repeats = [fs.join(ctx.work_dir, "repeats", f"{lab}.parquet") for lab in labels]
        found = common.run_phase(ctx, "repeats", windows.repeat_partition, [
            windows.RepeatTask(reads[p], repeats[p], self.keep) for p in range(parts)], labels)
        seconds["repeats"] = time.perf_counter() - t
        t = time.perf_counter()
        spans = [fs.join(ctx.work_dir, "spans", f"{n}.parquet") for n in names]
        spanned = common.run_phase(ctx, "spans", windows.span_shard, [
            windows.SpanTask(i, local[i], repeats, offsets[i], spans[i], self.min_length)
            for i in range(len(names))], names)
        seconds["spans"] = time.perf_counter() - t
        return self._rewrite(ctx, names, shards, [[s] for s in spans], seconds, {
            "method": "hash", "partitions": parts, "windows": sum(h["windows"] for h in hashed),
            "max_partition_records": max((f["records"] for f in found), default=0),
            "cpu_seconds": {"text": _cpu(shards), "windows": _cpu(hashed), "repeats": _cpu(found),
                            "spans": _cpu(spanned)}})

    def _rewrite(self, ctx: GlobalContext, names: list[str], shards: list[dict], found: list[list[str]],
                 seconds: dict[str, float], extra: dict) -> list[StepStats]:
        t = time.perf_counter()
        stem = fs.basename(ctx.work_dir)
        struck = [fs.join(ctx.work_dir, "struck", f"{n}.parquet") for n in names]
        schema_bytes = ctx.schema.serialize().to_pybytes()
        written = common.run_phase(ctx, "rewrite", rewrite_shard, [
            RewriteTask(self.name, i, p, shards[i]["rows"], found[i], fs.join(ctx.output_dir, fs.basename(p)), struck[i],
                        fs.join(ctx.rejected_dir, f"{stem}-{self.name}-{fs.basename(p)}") if ctx.rejected_dir else None,
                        ctx.writer, schema_bytes, self.language, self.min_chars, self.min_words)
            for i, p in enumerate(ctx.inputs)], names)
        seconds["rewrite"] = time.perf_counter() - t
        t = time.perf_counter()
        [top] = common.run_phase(ctx, "top", top_task, [TopTask(struck, fs.join(ctx.work_dir, "substrings-top.parquet"))],
                                 ["all"]) if struck else [{"regions": 0}]
        seconds["top"] = time.perf_counter() - t
        return self._stats(written, seconds, {
            "keep": self.keep, "min_length": self.min_length, "part_bytes": self.part_bytes,
            **{k: v for k, v in extra.items() if k != "cpu_seconds"}, "bytes": sum(s["bytes"] for s in shards),
            "oversize_docs": sum(s["oversize"] for s in shards), "regions": top["regions"],
            "cpu_seconds": {**extra["cpu_seconds"], "rewrite": _cpu(written)}})  # CPU of the tasks, on any worker

    def _stats(self, results: list[dict], seconds: dict[str, float], extra: dict) -> list[StepStats]:
        st = StepStats(self.name)
        total: dict[str, int] = {}
        for r in results:
            for k, v in r.items():
                if k not in ("seconds", "cpu"):
                    total[k] = total.get(k, 0) + v
        st.docs_in, st.docs_out = total.get("docs_in", 0), total.get("docs_out", 0)
        st.chars_in, st.chars_out = total.get("chars_in", 0), total.get("chars_out", 0)
        if total.get("dropped"):
            st.dropped[f"{self.name}:emptied"] += total["dropped"]
            st.dropped_chars[f"{self.name}:emptied"] += total["dropped_chars"]
        st.extra = {**extra, "spans_struck": total.get("units_removed", 0), "chars_struck": total.get("chars_removed", 0),
                    "docs_changed": total.get("docs_changed", 0), "docs_emptied": total.get("dropped", 0),
                    "seconds": {k: round(v, 3) for k, v in seconds.items()}}
        st.seconds = sum(seconds.values())
        return [st]


def _has_suffix_arrays() -> bool:
    return importlib.util.find_spec("pydivsufsort") is not None


def _cpu(results: list[dict]) -> float:
    """CPU seconds of a phase's tasks, on whichever workers ran them."""
    return round(sum(r.get("cpu", 0.0) for r in results), 3)
