"""What the two dedup steps share: resumable phases, hash partitions, keep policies and the filter phase.

Every phase is a list of tasks run through `ctx.executor.map`, so it scales out with the executor.
A task writes its files under temporary names, renames them into place and then writes a marker
holding its result; a rerun skips tasks that have a marker. Documents are addressed by `(shard, row)`,
never by id alone: ids repeat when one shard is given twice, when two runs over one crawl are unioned
or when a split reused its parent's id, and a decision made for an id would then keep (or drop) every
copy of it. The shards are ones this run wrote itself; the filter phase checks that each still has the
rows it had when the first phase read it, and the id at every decided row.

The work directory and the outputs may be URLs (`curate.io.fs`): files are written locally under a
temporary name and published whole (rename on a local disk, one upload on an object store).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from curate.core.document import conform, rejected_schema
from curate.core.errors import CorruptState
from curate.core.step import GlobalContext
from curate.core.validate import check, config_error
from curate.io import fs
from curate.io import state as run_state
from curate.io.batching import iter_batches
from curate.io.writers import Parquet, atomic_write_text, together

KEEP_POLICIES = ("smallest_id", "longest", "quality")
ROWS_PER_PARTITION = 16_000_000  # rows one grouping task holds in memory (about 0.5 GB with polars)


def check_keep(step: object, keep: str) -> str:
    """The keep policy, checked; the old name "first" (it never meant input order) names its successor."""
    if keep == "first":
        raise config_error(step, 'keep="first" is now keep="smallest_id": the document with the smallest id '
                                 "(compared as strings) is kept, whatever the input order")
    return check(step, "keep", keep, choices=KEEP_POLICIES)


def keep_order(keep: str) -> tuple[list[str], list[bool]]:
    """Sort columns and directions that put the document to keep first in its group.

    Ties always fall back to the id, so the choice depends on the documents only, never on the
    order or number of input files.
    """
    if keep == "longest":
        return ["length", "id"], [True, False]
    if keep == "quality":
        return ["quality", "length", "id"], [True, True, False]
    return ["id"], [False]


def partitions_for(inputs: Sequence[str], requested: int | None) -> int:
    """Hash partitions for the grouping phases: a power of two giving ~ROWS_PER_PARTITION rows each."""
    if requested:
        if requested & (requested - 1):
            raise ValueError(f"partitions must be a power of two, got {requested}")
        return requested
    rows = sum(fs.parquet_file(p).metadata.num_rows for p in inputs)
    parts = 1
    while parts * ROWS_PER_PARTITION < rows and parts < 4096:
        parts *= 2
    return parts


def partition_of(hashes: np.ndarray, parts: int) -> np.ndarray:
    """Top bits of a uint64 hash: which grouping task sees it."""
    if parts == 1:
        return np.zeros(len(hashes), dtype=np.uint16)
    return (hashes >> np.uint64(64 - parts.bit_length() + 1)).astype(np.uint16)


def shard_name(i: int) -> str:
    return f"{i:05d}"


# ---------------------------------------------------------------- resumable phases


@dataclass
class Marked:
    """One task of a phase: `fn(arg)`, whose JSON result is stored at `marker` once its files are in place."""

    fn: Callable[[Any], dict]
    arg: Any
    marker: str


def run_marked(task: Marked, progress: Callable[[int], None] | None = None) -> dict:
    """Run one phase task and mark it done; `progress` (the executor's live counter) gets the documents it
    handled, so a phase's bar counts documents like a stage's (`docs_of`)."""
    result = task.fn(task.arg)
    atomic_write_text(task.marker, json.dumps(result))
    if progress is not None:
        progress(docs_of(result))
    return result


def docs_of(result: dict) -> int:
    """The documents a phase task handled, as its result says: the rows it read or decided on. 0 for phases over
    pairs or edges (buckets, components), whose bars then count tasks only."""
    if not isinstance(result, dict):
        return 0
    for key in ("docs_in", "rows", "members"):
        if isinstance(result.get(key), int):
            return result[key]
    kept = result.get("groups", result.get("clusters"))
    if isinstance(kept, int) and isinstance(result.get("duplicates"), int):
        return kept + result["duplicates"]
    return 0


def run_phase(ctx: GlobalContext, phase: str, fn: Callable[[Any], dict], args: list, labels: list[str],
              resources: dict[str, float] | None = None) -> list[dict]:
    """Run the tasks of one phase that have no marker yet; return every task's result, in order. `resources`: what
    each task needs beyond a CPU (`Step.resources()`: a GPU for a phase that runs a model on one)."""
    mdir = fs.join(ctx.work_dir, "_phases", phase)
    fs.makedirs(mdir)
    tasks = [Marked(fn, a, fs.join(mdir, f"{lab}.json")) for a, lab in zip(args, labels, strict=True)]
    done = set(fs.listdir(mdir))  # one listing per phase, not one existence check per task
    results = {}
    for t in tasks:
        if fs.basename(t.marker) in done:
            try:
                results[t.marker] = run_state.read_json(t.marker, "")
            except CorruptState as e:  # its task runs again (curate.io.state)
                print(f"note: {str(e).rstrip(': ')}; its task runs again", file=sys.stderr)
                fs.remove(t.marker)
    todo = [t for t in tasks if t.marker not in results]
    if todo:
        ctx.executor.map(run_marked, todo, desc=f"{phase}", labels=[f"{phase} {fs.basename(t.marker)}" for t in todo],
                         **({"resources": resources} if resources else {}))
    # every task ran: a missing marker is an error
    return [results[t.marker] if t.marker in results else run_state.read_json(t.marker, "") for t in tasks]


def check_work_dir(work_dir: str, inputs: list[str], params: dict) -> None:
    """Refuse to resume phases computed for other inputs or parameters: their files would not match."""
    path = fs.join(work_dir, "dedup.json")
    state = {"inputs": inputs, "params": params}
    if fs.exists(path):
        if run_state.read_json(path, "") != state:  # unreadable: CorruptState, and the run recomputes the folder
            raise RuntimeError(f"{work_dir} holds dedup phases of other inputs or parameters; delete it to start over")
    else:
        fs.makedirs(work_dir)
        atomic_write_text(path, json.dumps(state))


@contextlib.contextmanager
def naming(path: str) -> Iterator[None]:
    """Re-raise an OSError that names no file (a full disk in `write`, pyarrow's "Error writing bytes")
    as one that names `path`, the file being written: `OSError: [Errno 28] No space left on device: 'PATH'`."""
    try:
        yield
    except OSError as e:
        if e.filename is not None:
            raise
        code = e.errno or (errno.ENOSPC if "No space left on device" in str(e) else None)
        if not code:
            raise
        raise OSError(code, os.strerror(code), path) from e


def reserve(f: Any, size: int, path: str) -> None:
    """Take `size` bytes of disk for the open file `f` before writing it (`posix_fallocate`), so a full disk
    is an OSError naming `path` at once, not after the work that fills the file. A filesystem that cannot
    reserve space is left to report a full disk on the writes themselves."""
    if size <= 0 or not hasattr(os, "posix_fallocate"):
        return
    try:
        os.posix_fallocate(f.fileno(), 0, size)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            raise OSError(e.errno, os.strerror(e.errno), path) from None
        # EOPNOTSUPP, EINVAL, ...: no reservation; the writes still raise ENOSPC with the path (`naming`)


def write_table(table: pa.Table, path: str, row_group_size: int = 65_536, segments: Sequence[str] = ()) -> None:
    """Write a Parquet file atomically (temporary name, then rename or one upload).

    With `segments` (columns the table is sorted by), every run of equal values gets row groups of its
    own, so a reader filtering on those columns (`read_where`) skips every other row by the row-group
    statistics and reads exactly its rows.
    """
    staged = fs.Staged(path, tmp_name=f"{os.path.basename(path)}.tmp.{os.getpid()}")
    try:
        with naming(staged.tmp), pq.ParquetWriter(staged.tmp, table.schema, compression="zstd",
                                                                 write_page_checksum=True) as writer:
            for lo, hi in _runs(table, segments):
                writer.write_table(table.slice(lo, hi - lo), row_group_size=row_group_size)
    except BaseException:
        staged.discard()
        raise
    staged.commit()


def _runs(table: pa.Table, columns: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of the runs of equal values of `columns` in a table sorted by them (one run without)."""
    n = table.num_rows
    if not columns or n == 0:
        return [(0, n)]
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for c in columns:
        v = table[c].to_numpy()
        change[1:] |= v[1:] != v[:-1]
    starts = np.flatnonzero(change)
    return list(zip(starts.tolist(), [*starts[1:].tolist(), n], strict=True))


def read_where(paths: list[str], where: dict[str, int], columns: list[str] | None = None) -> pa.Table:
    """Rows of many Parquet files whose columns equal `where`.

    A row group whose statistics exclude the values is never read, and one file is open at a time, so
    memory is the result plus one file's matching row groups, whatever the number of files (pyarrow's
    dataset scanner, which this replaced, held about 3 MiB per file in flight).

    Every file must exist (every task of a phase writes its file, empty or not): a missing one is an
    error, never "no rows", and a transient read fault is retried per file, then raised (issue 22.2).
    """
    parts = []
    for path in paths:
        try:
            part = fs.retrying(_read_matching, path, where, columns)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"{path}: a finished phase's output is missing (deleted or not yet visible); "
                                    "rerun to redo the phase, or delete the run's _work folder") from e
        if part is not None:
            parts.append(part)
    return pa.concat_tables(parts) if parts else pa.table({})


def _read_matching(path: str, where: dict[str, int], columns: list[str] | None) -> pa.Table | None:
    """The rows of one file that `read_where` wants; None when no row group can hold them. The files are the
    phases' own: one that cannot be read is `CorruptState` naming it, and the run recomputes the step."""
    with run_state.reading(path):
        pf = fs.parquet_file(path)
        groups = _row_groups_with(pf, where)
        if not groups:
            return None
        wanted = columns or pf.schema_arrow.names
        table = pf.read_row_groups(groups, columns=list(dict.fromkeys([*wanted, *where])))
    mask = None
    for col, value in where.items():
        eq = pc.equal(table[col], pa.scalar(value, table.schema.field(col).type))
        mask = eq if mask is None else pc.and_(mask, eq)
    return table.filter(mask).select(wanted)


def read_range(path: str, start: int, length: int) -> bytes:
    """`length` bytes of a file from byte `start`: one `pread` locally, one ranged GET on an object store.

    No read-ahead: a buckets task reads one small slice of every shard's band file, so a block cache
    (fsspec's default, MiBs per open) would read far more than the slice.
    """
    if length == 0:
        return b""
    local = fs.local_path(path)
    if local is not None:
        with open(local, "rb", buffering=0) as f:
            data = os.pread(f.fileno(), length, start)
    else:
        filesystem, inner = fs.url_to_fs(path)
        data = fs.retrying(lambda: filesystem.cat_file(inner, start=start, end=start + length))
    if len(data) != length:
        raise OSError(f"{path}: expected {length} bytes at {start}, got {len(data)} (file truncated?)")
    return data


def _row_groups_with(pf: pq.ParquetFile, where: dict[str, int]) -> list[int]:
    """Row groups of a file whose min/max statistics admit every value of `where` (all of them without statistics)."""
    index = {col: pf.schema_arrow.get_field_index(col) for col in where}
    groups = []
    for i in range(pf.metadata.num_row_groups):
        rg = pf.metadata.row_group(i)
        ok = True
        for col, value in where.items():
            st = rg.column(index[col]).statistics
            if st is not None and st.has_min_max and not st.min <= value <= st.max:
                ok = False
                break
        if ok:
            groups.append(i)
    return groups


def choose_keepers(members: pl.DataFrame, group: str | list[str], keep: str) -> pl.DataFrame:
    """Per group of `members` (columns: group's, id, length, quality, texthash, shard, row): cluster, size, kept.

    Exactly one row of each group is kept, addressed by (shard, row), never by id: copies that share an
    id (one shard given twice, two runs over one crawl unioned, a split that reused its parent's id) are
    two rows, and only one of them survives. Ties of the policy fall back to the id, then to a hash of
    the raw text (`texthash`), so the choice depends on the documents, not on the order or number of
    input files; only rows equal in all of these (true copies) are told apart by (shard, row).
    The cluster is named after the id of the document it keeps, so names are stable across runs.
    `copies` marks a dropped row that carries its keeper's id (counted as `same_id_copies`).
    """
    cols, desc = keep_order(keep)
    group = [group] if isinstance(group, str) else list(group)
    members = members.with_columns(pl.col("quality").fill_null(float("-inf")))
    order = [*group, *cols, "texthash", "shard", "row"]
    ranked = members.sort(order, descending=[False] * len(group) + [*desc, False, False, False], nulls_last=True)
    return ranked.with_columns(
        pl.col("id").first().over(group).alias("cluster"),
        pl.len().over(group).cast(pl.Int32).alias("size"),
        (pl.int_range(pl.len()).over(group) == 0).alias("keep"),
    ).with_columns(((~pl.col("keep")) & (pl.col("id") == pl.col("cluster"))).alias("copies"))


def text_hashes(texts: Sequence[str | None]) -> np.ndarray:
    """A 64-bit hash of each raw text: the tie-break between documents that share an id and a match form."""
    return np.fromiter((xxhash.xxh3_64_intdigest((t or "").encode()) for t in texts),
                       dtype=np.uint64, count=len(texts))


DECISION_SCHEMA = {"shard": pl.Int32, "row": pl.UInt32, "id": pl.String, "cluster": pl.String, "size": pl.Int32,
                   "keep": pl.Boolean}


def decisions(ranked: pl.DataFrame | None) -> pl.DataFrame:
    """The decisions file's rows (one per clustered document, by (shard, row)), sorted by shard and row."""
    if ranked is None or not ranked.height:
        return pl.DataFrame(schema=DECISION_SCHEMA)
    return ranked.select(list(DECISION_SCHEMA)).cast(DECISION_SCHEMA).sort(["shard", "row"])


# ---------------------------------------------------------------- the filter phase


@dataclass
class FilterTask:
    """Filter one input shard by the per-document decisions of the grouping phases."""

    step: str  # the step's name: drop reasons are f"{step}:duplicate"
    shard: int
    path: str
    rows: int | None  # rows the first phase read; None: not checked
    decisions: list[str]  # Parquet files of (shard, row, id, cluster, size, keep), sorted by shard and row
    output: str
    rejected: str | None
    writer: Parquet  # the pipeline's writer: its compression and row groups
    schema_bytes: bytes  # the pipeline's shard schema, serialised
    cluster_columns: bool  # write the group and its size into `columns`
    columns: tuple[str, str] = ("dedup_cluster", "dedup_cluster_size")  # dedup.Semantic: semantic_cluster, ..._size


def filter_shard(task: FilterTask) -> dict:
    t0 = time.perf_counter()
    schema = pa.ipc.read_schema(pa.py_buffer(task.schema_bytes))
    pf = fs.parquet_file(task.path)
    if task.rows is not None and pf.metadata.num_rows != task.rows:
        raise RuntimeError(
            f"{task.path} has {pf.metadata.num_rows} rows but had {task.rows} when dedup read it: "
            "the input changed during the run; delete the run's _work directory and start over"
        )
    dec = read_where(task.decisions, {"shard": task.shard}, ["row", "id", "cluster", "size", "keep"])
    out = task.writer.open_file(task.output, schema)
    rej_schema = rejected_schema(schema)
    rej = task.writer.open_file(task.rejected, rej_schema) if task.rejected else None
    with together(out, rej):
        stats = _filter_rows(task, pf, schema, dec, out, rej)
    stats["seconds"] = time.perf_counter() - t0
    return stats


def _filter_rows(task: FilterTask, pf: pq.ParquetFile, schema: pa.Schema, dec: pa.Table, out, rej) -> dict:
    """Route each row of the shard to the output or to rejected by its decision; count both.

    Decisions address rows by position (this run wrote the shard, and its row count was checked); the
    id at that position must be the decision's, or the shard changed since the first phase read it.
    Two rows sharing an id get their own decisions: of copies, exactly the one chosen is kept."""
    reason = f"{task.step}:duplicate"
    stats = {"docs_in": 0, "docs_out": 0, "chars_in": 0, "chars_out": 0, "dropped": 0, "dropped_chars": 0}
    at = np.full(pf.metadata.num_rows, -1, dtype=np.int64)  # row -> index of its decision, -1: none
    if dec.num_rows:
        at[dec["row"].to_numpy().astype(np.int64)] = np.arange(dec.num_rows)
    start = 0
    for batch in iter_batches(pf):
        table = conform(batch, schema)
        chars = pc.utf8_length(table["text"])
        here = at[start:start + table.num_rows]
        start += table.num_rows
        decided = here >= 0
        if decided.any():
            idx = pa.array(here, mask=~decided)
            if not pc.all(pc.equal(pc.take(dec["id"], idx), table["id"]).fill_null(True)).as_py():
                raise RuntimeError(f"{task.path}: rows are not where dedup's first phase read them: the input changed "
                                   "during the run; delete the run's _work directory and start over")
            keep = pc.take(dec["keep"], idx).fill_null(True)
            cluster = pc.coalesce(pc.take(dec["cluster"], idx), table["id"])
            size = pc.coalesce(pc.take(dec["size"], idx), pa.scalar(1, pa.int32()))
        else:
            keep = pa.array(np.ones(table.num_rows, dtype=bool))
            cluster, size = table["id"], pa.array(np.ones(table.num_rows, dtype=np.int32))
        if task.cluster_columns:
            name, sized = task.columns
            table = table.set_column(table.schema.get_field_index(name), name, cluster)
            table = table.set_column(table.schema.get_field_index(sized), sized, pc.cast(size, pa.int32()))
        drop = pc.invert(keep)
        kept, dropped = table.filter(keep), table.filter(drop)
        stats["docs_in"] += table.num_rows
        stats["chars_in"] += pc.sum(chars).as_py() or 0
        stats["docs_out"] += kept.num_rows
        stats["chars_out"] += pc.sum(chars.filter(keep)).as_py() or 0
        stats["dropped"] += dropped.num_rows
        stats["dropped_chars"] += pc.sum(chars.filter(drop)).as_py() or 0
        out.write_table(kept)
        if rej is not None and dropped.num_rows:
            rej.write_table(dropped, drop_reason=pa.array([reason] * dropped.num_rows, pa.string()))
    return stats


def run_filter(ctx: GlobalContext, step: str, decisions: list[str], rows: list[int | None], cluster_columns: bool,
               phase: str = "filter", columns: tuple[str, str] = ("dedup_cluster", "dedup_cluster_size")) -> list[dict]:
    """The last phase of both steps: one task per input shard."""
    stem = fs.basename(ctx.work_dir)
    tasks = [
        FilterTask(
            step=step,
            shard=i,
            path=path,
            rows=rows[i],
            decisions=decisions,
            output=fs.join(ctx.output_dir, fs.basename(path)),
            rejected=fs.join(ctx.rejected_dir, f"{stem}-{step}-{fs.basename(path)}") if ctx.rejected_dir else None,
            writer=ctx.writer,
            schema_bytes=ctx.schema.serialize().to_pybytes(),
            cluster_columns=cluster_columns,
            columns=columns,
        )
        for i, path in enumerate(ctx.inputs)
    ]
    if ctx.rejected_dir:
        fs.makedirs(ctx.rejected_dir)
    fs.makedirs(ctx.output_dir)
    return run_phase(ctx, phase, filter_shard, tasks, [shard_name(i) for i in range(len(tasks))])


def step_stats(name: str, results: list[dict], extra: dict) -> list:
    """Sum the filter tasks' counters into the step's StepStats."""
    from curate.core.stats import StepStats

    st = StepStats(name)
    for r in results:
        st.docs_in += r["docs_in"]
        st.docs_out += r["docs_out"]
        st.chars_in += r["chars_in"]
        st.chars_out += r["chars_out"]
        if r["dropped"]:
            st.dropped[f"{name}:duplicate"] += r["dropped"]
            st.dropped_chars[f"{name}:duplicate"] += r["dropped_chars"]
    st.extra = extra
    st.seconds = sum(extra.get("seconds", {}).values()) if isinstance(extra.get("seconds"), dict) else 0.0
    return [st]
