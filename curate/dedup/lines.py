"""Line, paragraph and sentence-span deduplication across the corpus: `Lines`, a global step.

`method="exact"` (C4, datatrove's `SentenceDedup`), in phases like `Exact` and `MinHash`, each one task
per item through the executor, resumable by markers:

1. `units` (per shard): cut every document into units (`curate.dedup.units`), take the match form of
   each, and write a 128-bit xxh3 hash per window of `span` consecutive units with its document's
   id, (shard, row) and the window's position, sorted by hash partition (row groups per partition);
2. `spans` (per hash partition): read only that partition's hashes, keep those seen more than once,
   read their rows, and keep the first occurrence of each by (id, position): every other occurrence
   is written as a removal (shard, row, position), sorted by shard;
3. `rewrite` (per shard): remove the units each removal covers (position .. position + span - 1),
   drop documents left too short, write the shard through the pipeline's writer.

Memory per task is one batch (phase 1), one partition's hashes (2) or one shard's removals (3), and
the number of partitions grows with the corpus. Nothing depends on the input order or the number of
workers: the kept copy is the one in the document with the smallest id (compared as strings),
first in it. Documents that share an id are told apart by a hash of their text, then by (shard, row),
so of two copies of one document exactly one keeps its units.

`method="bloom"` (DCLM's BFF, `curate.dedup.bloom`) is one task reading the shards in input order
with one Bloom filter of a size fixed up front; approximate (false positives at a set rate) and
order-dependent (the first copy read is kept), as BFF is.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from typing import ClassVar

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from curate.core.document import conform, rejected_schema
from curate.core.stats import StepStats
from curate.core.step import GlobalContext, GlobalStep
from curate.core.validate import check, config_error
from curate.dedup import common
from curate.dedup.bloom import Filter, bff_batch
from curate.dedup.text import match_form_batch
from curate.dedup.units import UNITS, cut, rewrite
from curate.io import fs
from curate.io.batching import iter_batches
from curate.io.writers import Parquet, together
from curate.lang import units_version, word_count

METHODS = ("exact", "bloom")
COPY = 0xFFFFFFFF  # the position of a document's own row among its windows' (`_with_copy_keys`)
WINDOWS_PER_PARTITION = 8_000_000  # hashes one `spans` task holds (16 bytes each, with polars' overhead ~0.3 GB)
BYTES_PER_WINDOW = 40  # text bytes per unit, to size the partitions before the units are counted
BYTES_PER_NGRAM = 5  # text bytes per word n-gram, to size a Bloom filter (guess high, as BFF advises)
_MASK64 = (1 << 64) - 1


def text_bytes(inputs: list[str]) -> int:
    """Uncompressed bytes of the `text` column of Parquet shards, from their footers (no data read)."""
    total = 0
    for path in inputs:
        md = fs.parquet_file(path).metadata
        col = md.schema.to_arrow_schema().get_field_index("text")
        total += sum(md.row_group(g).column(col).total_uncompressed_size for g in range(md.num_row_groups))
    return total


def partitions_for(inputs: list[str]) -> int:
    """Hash partitions for the `spans` phase: a power of two giving ~WINDOWS_PER_PARTITION windows each,
    estimated from the text's size (the windows are counted only once phase 1 has run)."""
    windows, parts = text_bytes(inputs) / BYTES_PER_WINDOW, 1
    while parts * WINDOWS_PER_PARTITION < windows and parts < 4096:
        parts *= 2
    return parts


def _doc_units(texts: list[str], langs: list[str | None], unit: str, language: str
               ) -> tuple[list[list[int]], list[str]]:
    """Cuts of every document and the flat list of all their units, in order."""
    cuts, flat = [], []
    for text, lang in zip(texts, langs, strict=True):
        c, _ = cut(text or "", unit, lang or language)
        cuts.append(c)
        flat.extend(text[a:b] for a, b in pairwise(c))
    return cuts, flat


def window_hashes(texts: list[str], langs: list[str | None], unit: str, span: int, language: str
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(hi, lo, doc, pos): the 128-bit hash of each window of `span` units' match forms (joined by newlines),
    for windows with a word; `doc` indexes `texts`, `pos` is the window's first unit."""
    cuts, flat = _doc_units(texts, langs, unit, language)
    data, off = match_form_batch(flat)
    raw = data.tobytes()
    hi, lo, doc, pos = [], [], [], []
    u = 0
    for d, c in enumerate(cuts):
        n = len(c) - 1
        forms = [raw[off[j]:off[j + 1]] for j in range(u, u + n)]
        for i in range(n - span + 1):
            window = forms[i] if span == 1 else b"\n".join(forms[i:i + span])
            if len(window) >= span:  # not only separators: some unit has a word
                h = xxhash.xxh3_128_intdigest(window)
                hi.append(h >> 64)
                lo.append(h & _MASK64)
                doc.append(d)
                pos.append(i)
        u += n
    return (np.array(hi, dtype=np.uint64), np.array(lo, dtype=np.uint64), np.array(doc, dtype=np.int64),
            np.array(pos, dtype=np.uint32))


# ---------------------------------------------------------------- phase 1: units


@dataclass
class UnitTask:
    shard: int
    path: str
    out: str
    unit: str
    span: int
    language: str
    parts: int
    batch_docs: int


def unit_shard(task: UnitTask) -> dict:
    """Hash every window of one shard, one batch at a time, each batch's rows sorted by partition."""
    pf = fs.parquet_file(task.path)
    cols = [c for c in ("id", "text", "lang") if c in pf.schema_arrow.names]
    schema = pa.schema([("part", pa.uint16()), ("hi", pa.uint64()), ("lo", pa.uint64()), ("id", pa.string()),
                        ("texthash", pa.uint64()), ("shard", pa.int32()), ("row", pa.uint32()), ("pos", pa.uint32())])
    staged = fs.Staged(task.out, tmp_name=f"{os.path.basename(task.out)}.tmp.{os.getpid()}")
    row, windows = 0, 0
    try:
        with common.naming(staged.tmp), pq.ParquetWriter(staged.tmp, schema, compression="zstd",
                                                                       write_page_checksum=True) as writer:
            for batch in iter_batches(pf, columns=cols, max_rows=task.batch_docs):
                texts = batch.column("text").to_pylist()
                langs = batch.column("lang").to_pylist() if "lang" in cols else [None] * len(texts)
                hi, lo, doc, pos = window_hashes(texts, langs, task.unit, task.span, task.language)
                windows += len(hi)
                th = common.text_hashes(texts)
                hi, lo, doc, pos = _with_copy_keys(batch.column("id").to_pylist(), th, hi, lo, doc, pos)
                table = pa.table({
                    "part": common.partition_of(hi, task.parts), "hi": hi, "lo": lo,
                    "id": pc.take(batch.column("id"), pa.array(doc)),
                    "texthash": th[doc],
                    "shard": np.full(len(hi), task.shard, dtype=np.int32),
                    "row": (doc + row).astype(np.uint32), "pos": pos,
                }, schema=schema).sort_by("part")
                for a, b in common._runs(table, ["part"]):  # a row group per partition: tasks read only theirs
                    writer.write_table(table.slice(a, b - a))
                row += batch.num_rows
    except BaseException:
        staged.discard()
        raise
    staged.commit()
    return {"rows": row, "windows": windows}


def _with_copy_keys(ids: list[str], th: np.ndarray, hi: np.ndarray, lo: np.ndarray, doc: np.ndarray, pos: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The windows plus one row per document at position `COPY`, hashed from its id and raw text: copies of a
    document (one shard given twice, a split that reused its parent's id) repeat it, and every copy but the
    first is dropped whole in `rewrite`, wordless units and all (a copy's units with words go anyway)."""
    keys = [xxhash.xxh3_128_intdigest(b"\xffcopy\x00" + i.encode() + b"\x00" + int(h).to_bytes(8, "little"))
            for i, h in zip(ids, th.tolist(), strict=True)]
    return (np.concatenate([hi, np.array([k >> 64 for k in keys], dtype=np.uint64)]),
            np.concatenate([lo, np.array([k & _MASK64 for k in keys], dtype=np.uint64)]),
            np.concatenate([doc, np.arange(len(ids), dtype=np.int64)]),
            np.concatenate([pos, np.full(len(ids), COPY, dtype=np.uint32)]))


# ---------------------------------------------------------------- phase 2: spans


@dataclass
class SpanTask:
    part: int
    hashes: list[str]
    out: str


def span_part(task: SpanTask) -> dict:
    """The repeated hashes of one partition: every occurrence but the first is a removal.

    First by (id, hash of the document's text, shard, row, position): documents that share an id (copies
    of one shard given twice, a split that reused its parent's id) are told apart by their text, and true
    copies by where they are, so exactly one occurrence is kept, whatever the order of the tasks."""
    keys = common.read_where(task.hashes, {"part": task.part}, ["hi", "lo"])
    schema = {"shard": pl.Int32, "row": pl.UInt32, "pos": pl.UInt32}
    dup = pl.DataFrame()
    if keys.num_rows:
        dup = pl.from_arrow(keys).group_by(["hi", "lo"]).len().filter(pl.col("len") > 1).select(["hi", "lo"])
    del keys
    found = []
    if dup.height:
        for path in task.hashes:  # one file's rows of the partition at a time, kept only if repeated
            t = common.read_where([path], {"part": task.part}, ["hi", "lo", "id", "texthash", "shard", "row", "pos"])
            if t.num_rows:
                found.append(pl.from_arrow(t).join(dup, on=["hi", "lo"], how="semi"))
    if found:
        rows = pl.concat(found).sort(["hi", "lo", "id", "texthash", "shard", "row", "pos"])
        first = rows.select(pl.struct(["hi", "lo"]).is_first_distinct()).to_series()
        removals = rows.filter(~first).select(list(schema)).sort(list(schema))
        copies = rows.filter(pl.col("pos") == COPY).select(["hi", "lo"]).unique().height
    else:
        removals, copies = pl.DataFrame(schema=schema), 0
    common.write_table(removals.to_arrow(), task.out, segments=["shard"])
    n_copies = int((removals["pos"] == COPY).sum()) if removals.height else 0
    return {"repeated": dup.height - copies, "removed_windows": removals.height - n_copies, "copies": n_copies}


# ---------------------------------------------------------------- rewriting documents


@dataclass
class Emitter:
    """Writes a shard's rewritten documents and counts what was removed (shared by both methods)."""

    name: str
    min_chars: int
    min_words: int
    min_units: int
    out: object
    rej: object | None
    stats: Counter = field(default_factory=Counter)
    language: str = "en"  # `min_words` counts the words of a row's `lang`, else of this language (curate.lang)

    def emit(self, table: pa.Table, changes: dict[int, tuple[str, str, int, int]]) -> None:
        """Write a batch; `changes` maps a row to (kept text, removed text, units removed, units left)."""
        chars = pc.utf8_length(table["text"])
        self.stats["docs_in"] += table.num_rows
        self.stats["chars_in"] += pc.sum(chars).as_py() or 0
        keep = np.ones(table.num_rows, dtype=bool)
        if changes:
            texts = table["text"].to_pylist()
            langs = table["lang"].to_pylist() if "lang" in table.column_names else [None] * len(texts)
            cut_rows, cut_texts = [], []
            for i, (kept, removed, n_units, n_left) in sorted(changes.items()):
                self.stats["docs_changed"] += 1
                self.stats["units_removed"] += n_units
                self.stats["chars_removed"] += len(texts[i]) - len(kept)
                if (not kept.strip() or len(kept) < self.min_chars
                        or (self.min_words and word_count(kept, langs[i] or self.language) < self.min_words)
                        or n_left < self.min_units):
                    keep[i] = False
                    self.stats["dropped"] += 1
                    self.stats["dropped_chars"] += len(texts[i])
                cut_rows.append(i)
                cut_texts.append(removed)
                texts[i] = kept
            table = table.set_column(table.schema.get_field_index("text"), "text", pa.array(texts, pa.string()))
            if self.rej is not None:
                self._reject(table, cut_rows, cut_texts, keep)
        kept_table = table.filter(pa.array(keep))
        self.stats["docs_out"] += kept_table.num_rows
        self.stats["chars_out"] += pc.sum(pc.utf8_length(kept_table["text"])).as_py() or 0
        self.out.write_table(kept_table)

    def _reject(self, table: pa.Table, rows: list[int], removed: list[str], keep: np.ndarray) -> None:
        """What was cut, one row per changed document; a document dropped as too short, whole, after it."""
        cut_rows = table.take(pa.array(rows))
        cut_rows = cut_rows.set_column(cut_rows.schema.get_field_index("text"), "text", pa.array(removed, pa.string()))
        self.rej.write_table(cut_rows, drop_reason=pa.array([f"{self.name}:duplicate"] * len(rows), pa.string()))
        gone = table.filter(pa.array(~keep))
        if gone.num_rows:
            self.rej.write_table(gone, drop_reason=pa.array([f"{self.name}:emptied"] * gone.num_rows, pa.string()))


@dataclass
class RewriteTask:
    name: str
    shard: int
    path: str
    rows: int
    removals: list[str]
    output: str
    rejected: str | None
    writer: Parquet
    schema_bytes: bytes
    unit: str
    span: int
    language: str
    min_chars: int
    min_words: int
    min_units: int


def _left(text: str, cuts: list[int], gone: list[bool]) -> int:
    """Units kept that hold more than whitespace."""
    return sum(not g and not text[a:b].isspace() for g, a, b in zip(gone, cuts, cuts[1:], strict=False))


def _open(task_writer: Parquet, output: str, rejected: str | None, schema: pa.Schema):
    out = task_writer.open_file(output, schema)
    rej_schema = rejected_schema(schema)
    return out, (task_writer.open_file(rejected, rej_schema) if rejected else None)


def rewrite_shard(task: RewriteTask) -> dict:
    """Phase 3: each document without its removed windows' units; documents left too short dropped."""
    t0 = time.perf_counter()
    schema = pa.ipc.read_schema(pa.py_buffer(task.schema_bytes))
    pf = fs.parquet_file(task.path)
    if pf.metadata.num_rows != task.rows:
        raise RuntimeError(f"{task.path} has {pf.metadata.num_rows} rows but had {task.rows} when dedup read it: "
                           "the input changed during the run; delete the run's _work directory and start over")
    dec = common.read_where(task.removals, {"shard": task.shard}, ["row", "pos"])
    rows = dec["row"].to_numpy().astype(np.int64) if dec.num_rows else np.zeros(0, np.int64)
    pos = dec["pos"].to_numpy().astype(np.int64) if dec.num_rows else np.zeros(0, np.int64)
    order = np.lexsort((pos, rows))
    rows, pos = rows[order], pos[order]
    out, rej = _open(task.writer, task.output, task.rejected, schema)
    em = Emitter(task.name, task.min_chars, task.min_words, task.min_units, out, rej, language=task.language)
    with together(out, rej):
        start = 0
        for batch in iter_batches(pf):
            table = conform(batch, schema)
            lo, hi = np.searchsorted(rows, [start, start + table.num_rows])
            changes = {}
            if hi > lo:
                texts, langs = table["text"].to_pylist(), table["lang"].to_pylist()
                for r in np.unique(rows[lo:hi]).tolist():
                    i = r - start
                    c, _ = cut(texts[i], task.unit, langs[i] or task.language)
                    gone = [False] * (len(c) - 1)
                    here = pos[lo:hi][rows[lo:hi] == r].tolist()
                    if COPY in here:  # a copy of a document kept elsewhere: every unit goes
                        gone = [True] * (len(c) - 1)
                    for p in here:
                        gone[p:p + task.span] = [True] * len(gone[p:p + task.span])
                    kept, removed = rewrite(texts[i], c, gone)
                    changes[i] = (kept, removed, sum(gone), _left(texts[i], c, gone))
            em.emit(table, changes)
            start += table.num_rows
    return {**em.stats, "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------- the Bloom mode


@dataclass
class BloomTask:
    name: str
    inputs: list[str]
    outputs: list[str]
    rejected: list[str] | None
    writer: Parquet
    schema_bytes: bytes
    unit: str
    ngram: int
    min_ngram: int
    threshold: float
    fp_rate: float
    expected: int
    batch_docs: int
    min_chars: int
    min_words: int
    min_units: int


def bloom_all(task: BloomTask) -> dict:
    """The whole corpus through one filter, shard after shard in input order, documents in file order."""
    schema = pa.ipc.read_schema(pa.py_buffer(task.schema_bytes))
    filt = Filter.sized(task.expected, task.fp_rate)
    shards, seen, found = [], 0, 0
    for i, path in enumerate(task.inputs):
        out, rej = _open(task.writer, task.outputs[i], task.rejected[i] if task.rejected else None, schema)
        em = Emitter(task.name, task.min_chars, task.min_words, task.min_units, out, rej)
        with together(out, rej):
            for batch in iter_batches(fs.parquet_file(path), max_rows=task.batch_docs):
                table = conform(batch, schema)
                texts = table["text"].to_pylist()
                cuts, flat = _doc_units(texts, [None] * len(texts), task.unit, "en")
                data, off = match_form_batch(flat)
                doc_units = np.zeros(len(texts) + 1, dtype=np.int64)
                doc_units[1:] = np.cumsum([len(c) - 1 for c in cuts])
                removed = np.zeros(len(flat), dtype=np.bool_)
                whole = np.zeros(len(texts), dtype=np.bool_)
                s, f = bff_batch(data, off, doc_units, filt.words, filt.hashes, filt.part_bits, task.ngram,
                                 task.min_ngram, task.threshold, removed, whole)
                seen, found = seen + s, found + f
                changes = {}
                owner = np.repeat(np.arange(len(texts)), np.diff(doc_units))
                touched = whole | (np.bincount(owner[removed], minlength=len(texts)) > 0)
                for d in np.flatnonzero(touched).tolist():
                    gone = removed[doc_units[d]:doc_units[d + 1]] | whole[d]
                    kept, cut_text = rewrite(texts[d], cuts[d], gone.tolist())
                    changes[d] = (kept, cut_text, int(gone.sum()), _left(texts[d], cuts[d], gone.tolist()))
                em.emit(table, changes)
        shards.append(dict(em.stats))
    return {"shards": shards, "ngrams": seen, "ngrams_found": found, "bloom_bytes": filt.bytes,
            "bloom_hashes": filt.hashes, "fp_rate_end": filt.fp_rate()}


# ---------------------------------------------------------------- the step


class Lines(GlobalStep):
    """Remove units (lines, paragraphs or spans of sentences) repeated anywhere in the corpus, keeping one copy.

    `unit`: "line", "paragraph" (blank-line separated) or "sentence"; `span`: units per window (C4:
    three sentences). Exact (`method="exact"`): a window whose match form occurs earlier, by (document
    id, position), is removed with its units; every copy but one goes. Documents left with no text, or
    under `min_chars` characters, `min_words` words or `min_units` units, are dropped (`lines:emptied`); what was cut is in
    `rejected/` (`lines:duplicate`). `language` chooses the sentence rules (and `min_words`' words, `curate.lang`) when a document has no `lang`.

    `method="bloom"`: DCLM's BFF, one pass with a Bloom filter sized for `expected_ngrams` word
    `ngram`-grams at `fp_rate` (estimated from the text size when None): a unit whose n-grams are more
    than `threshold` already seen is removed, and a document that is, whole. See docs/dedup.md.
    """

    name: ClassVar[str] = "lines"
    repeated_ids: ClassVar[str] = "keep_one"  # rows by (shard, row): of copies sharing an id, one is kept

    def __init__(self, unit: str = "line", span: int = 1, method: str = "exact", language: str = "en",
                 min_chars: int = 0, min_words: int = 0, min_units: int = 0, ngram: int = 13, min_ngram: int | None = None,
                 threshold: float = 0.8, fp_rate: float = 0.01, expected_ngrams: int | None = None,
                 partitions: int | None = None, batch_docs: int = 4096):
        self.unit = check(self, "unit", unit, choices=UNITS)
        self.method = check(self, "method", method, choices=METHODS)
        self.span = check(self, "span", span, int, lo=1)
        self.language = check(self, "language", language, str)
        self.min_chars = check(self, "min_chars", min_chars, int, lo=0)
        self.min_words = check(self, "min_words", min_words, int, lo=0)
        self.min_units = check(self, "min_units", min_units, int, lo=0)
        self.ngram = check(self, "ngram", ngram, int, lo=1)
        self.min_ngram = check(self, "min_ngram", ngram if min_ngram is None else min_ngram, int, lo=1)
        self.threshold = check(self, "threshold", threshold, float, lo=0, hi=1)
        self.fp_rate = check(self, "fp_rate", fp_rate, float, lo=0, hi=1, lo_open=True)
        check(self, "expected_ngrams", expected_ngrams, int, lo=1, optional=True)
        self.expected_ngrams = expected_ngrams
        check(self, "partitions", partitions, int, lo=1, optional=True)
        if partitions and partitions & (partitions - 1):
            raise config_error(self, f"partitions must be a power of two or None, got {partitions}")
        self.partitions = partitions
        self.batch_docs = check(self, "batch_docs", batch_docs, int, lo=1)
        self.text_units = units_version()  # sentences and words per language (curate.lang): fingerprinted
        if method == "bloom" and (unit == "sentence" or span != 1):
            raise config_error(self, 'method="bloom" takes unit="line" or "paragraph" with span=1 '
                                     "(units are judged by their word n-grams, as BFF does)")

    @staticmethod
    def bloom_bytes(expected_ngrams: int, fp_rate: float = 0.01) -> int:
        """Memory of the Bloom mode's filter: known before the run (about 1.2 bytes per n-gram at 1%)."""
        return Filter.bytes_for(expected_ngrams, fp_rate)

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        common.check_work_dir(ctx.work_dir, ctx.inputs, {"step": repr(self), "rows": "keyed"})
        fs.makedirs(ctx.output_dir)
        if ctx.rejected_dir:
            fs.makedirs(ctx.rejected_dir)
        if self.method == "bloom":
            return self._bloom(ctx)
        return self._exact(ctx)

    def _rejected(self, ctx: GlobalContext, path: str) -> str | None:
        if not ctx.rejected_dir:
            return None
        return fs.join(ctx.rejected_dir, f"{fs.basename(ctx.work_dir)}-{self.name}-{fs.basename(path)}")

    def _exact(self, ctx: GlobalContext) -> list[StepStats]:
        names = [common.shard_name(i) for i in range(len(ctx.inputs))]
        parts = self.partitions or partitions_for(ctx.inputs)
        seconds: dict[str, float] = {}
        t = time.perf_counter()
        hashes = [fs.join(ctx.work_dir, "units", f"{n}.parquet") for n in names]
        hashed = common.run_phase(ctx, "units", unit_shard, [
            UnitTask(i, p, hashes[i], self.unit, self.span, self.language, parts, self.batch_docs)
            for i, p in enumerate(ctx.inputs)], names)
        seconds["units"] = time.perf_counter() - t
        t = time.perf_counter()
        labels = [f"{p:04d}" for p in range(parts)]
        removals = [fs.join(ctx.work_dir, "spans", f"{lab}.parquet") for lab in labels]
        spanned = common.run_phase(ctx, "spans", span_part, [
            SpanTask(p, hashes, removals[p]) for p in range(parts)], labels)
        seconds["spans"] = time.perf_counter() - t
        t = time.perf_counter()
        schema_bytes = ctx.schema.serialize().to_pybytes()
        written = common.run_phase(ctx, "rewrite", rewrite_shard, [
            RewriteTask(self.name, i, p, hashed[i]["rows"], removals, fs.join(ctx.output_dir, fs.basename(p)),
                        self._rejected(ctx, p), ctx.writer, schema_bytes, self.unit, self.span, self.language,
                        self.min_chars, self.min_words, self.min_units)
            for i, p in enumerate(ctx.inputs)], names)
        seconds["rewrite"] = time.perf_counter() - t
        return self._stats(written, {
            "method": "exact", "partitions": parts, "windows": sum(h["windows"] for h in hashed),
            "repeated_windows": sum(s["repeated"] for s in spanned),
            "removed_windows": sum(s["removed_windows"] for s in spanned),
            "same_id_copies": sum(s.get("copies", 0) for s in spanned),
        }, seconds)

    def _bloom(self, ctx: GlobalContext) -> list[StepStats]:
        expected = self.expected_ngrams or max(1, text_bytes(ctx.inputs) // BYTES_PER_NGRAM)
        size = self.bloom_bytes(expected, self.fp_rate)
        print(f"lines: Bloom filter of {size / 2**20:.1f} MiB for {expected:,} n-grams at a false-positive "
              f"rate of {self.fp_rate}", file=sys.stderr)
        t = time.perf_counter()
        task = BloomTask(self.name, ctx.inputs, [fs.join(ctx.output_dir, fs.basename(p)) for p in ctx.inputs],
                         [self._rejected(ctx, p) for p in ctx.inputs] if ctx.rejected_dir else None,
                         ctx.writer, ctx.schema.serialize().to_pybytes(), self.unit, self.ngram, self.min_ngram,
                         self.threshold, self.fp_rate, expected, self.batch_docs, self.min_chars, self.min_words,
                         self.min_units)
        [res] = common.run_phase(ctx, "bloom", bloom_all, [task], ["all"])
        return self._stats(res.pop("shards"), {"method": "bloom", "expected_ngrams": expected,
                                               "fp_rate_target": self.fp_rate, **res},
                           {"bloom": time.perf_counter() - t})

    def _stats(self, results: list[dict], extra: dict, seconds: dict[str, float]) -> list[StepStats]:
        st = StepStats(self.name)
        total = Counter()
        for r in results:
            total.update({k: v for k, v in r.items() if k != "seconds"})
        st.docs_in, st.docs_out = total["docs_in"], total["docs_out"]
        st.chars_in, st.chars_out = total["chars_in"], total["chars_out"]
        if total["dropped"]:
            st.dropped[f"{self.name}:emptied"] += total["dropped"]
            st.dropped_chars[f"{self.name}:emptied"] += total["dropped_chars"]
        st.extra = {**extra, "unit": self.unit, "span": self.span, "lines_removed": total["units_removed"],
                    "chars_removed": total["chars_removed"], "docs_changed": total["docs_changed"],
                    "docs_emptied": total["dropped"], "seconds": {k: round(v, 3) for k, v in seconds.items()}}
        st.seconds = sum(seconds.values())
        return [st]
