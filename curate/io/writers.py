"""Writers: Parquet (or JSON Lines) shards in the text contract, written atomically (temp file, then rename or one upload)."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.core.document import Document, conform
from curate.core.validate import check, config_error
from curate.io import fs
from curate.io.batching import MAX_RECORD_BYTES, ROW_GROUP_BYTES, RowGroups

CHUNK_DOCS = 256  # records turned into Arrow at once by a shard writer (the Python objects live only that long)
CHUNK_CHARS = 4 << 20  # ... or records of this many characters of text, whichever comes first

COMPRESSIONS = ("zstd", "snappy", "gzip", "brotli", "lz4", "none")


@dataclass
class Parquet:
    """zstd Parquet shards. A task rolls to a new shard past `max_shard_chars` characters of text.

    A row group holds at most `row_group_bytes` bytes (the rows as Arrow holds them) and at most
    `row_group_docs` documents, whichever comes first; a document over `row_group_bytes` is a row group
    of its own. Bytes bound what a writer buffers and what every reader decodes at once, whatever the
    documents' size (10,000 documents of 120 KB are 1.2 GB); the count keeps row groups of small
    documents from growing long. `readers.Parquet` reads every row group this writer cuts.
    """

    compression: str = "zstd"
    compression_level: int = 3
    max_shard_chars: int = 512 * 1024 * 1024
    row_group_docs: int = 10_000
    row_group_bytes: int = ROW_GROUP_BYTES

    def __post_init__(self) -> None:
        codec = self.compression.lower() if isinstance(self.compression, str) else self.compression
        check(self, "compression", codec, choices=COMPRESSIONS)
        check(self, "compression_level", self.compression_level, int, optional=True)
        if codec in ("snappy", "none") and self.compression_level is not None:
            raise config_error(self, f"compression_level must be None with compression={self.compression!r}")
        check(self, "max_shard_chars", self.max_shard_chars, int, lo=1)
        check(self, "row_group_docs", self.row_group_docs, int, lo=1)
        check(self, "row_group_bytes", self.row_group_bytes, int, lo=1, hi=MAX_RECORD_BYTES)  # what readers decode

    def open(self, directory: str, stem: str, schema: pa.Schema) -> ShardWriter:
        """Shards `<stem>-NNN.parquet` in `directory`, rolling over past `max_shard_chars` (streaming tasks)."""
        return ShardWriter(self, directory, stem, schema)

    def open_file(self, path: str, schema: pa.Schema) -> TableWriter:
        """One shard under exactly this name, written from Arrow tables (global steps: one output per input)."""
        return TableWriter(self, path, schema)

    def _parquet_writer(self, path: str, schema: pa.Schema) -> pq.ParquetWriter:
        return pq.ParquetWriter(path, schema, compression=self.compression, compression_level=self.compression_level,
                                write_page_checksum=True)  # a damaged page is then an error when read, never other data

    def _row_groups(self) -> RowGroups:
        return RowGroups(self.row_group_bytes, self.row_group_docs)


class ShardWriter:
    """Writes `<stem>-NNN.parquet` files under temporary names; `commit` renames them into place.

    Nothing is visible under the final names until commit, so a task killed midway leaves only
    temp files. Temp names carry the writer's pid, so a worker orphaned by a killed run can never
    write into the file of the rerun's task. Commit first deletes older shards and temp files of the
    same stem (found by a prefix listing, never by listing the directory), so a rerun leaves nothing stale.

    `directory` may be a URL (see `curate.io.fs`): shards are then written in the local spool directory
    and uploaded whole at commit, so an object store never holds a partial shard either.
    """

    def __init__(self, cfg: Parquet, directory: str, stem: str, schema: pa.Schema):
        self.cfg, self.dir, self.stem, self.schema = cfg, directory, stem, schema
        self.buffer: list[dict] = []  # records not yet in Arrow: at most CHUNK_DOCS / CHUNK_CHARS
        self.buffer_chars = 0
        self.groups = cfg._row_groups()
        self.shard_chars = 0
        self.files: list[fs.Staged] = []
        self.writer: pq.ParquetWriter | None = None
        self.rows = 0
        self.chunk_docs = min(CHUNK_DOCS, cfg.row_group_docs)
        fs.makedirs(directory)

    def _stage(self, i: int) -> fs.Staged:
        return fs.Staged(fs.join(self.dir, f"{self.stem}-{i:03d}.parquet"),
                         tmp_name=f".{self.stem}-{i:03d}.{os.getpid()}.parquet.tmp")

    def write(self, doc: Document, **columns) -> None:
        rec = doc.to_record()
        rec.update(columns)
        self.buffer.append(rec)
        self.buffer_chars += len(doc.text)
        if len(self.buffer) >= self.chunk_docs or self.buffer_chars >= CHUNK_CHARS:
            self._convert()

    def _convert(self) -> None:
        """Buffered records into Arrow, and every row group they complete to the file."""
        if self.buffer:
            table = pa.Table.from_pylist(self.buffer, schema=self.schema)
            self.buffer, self.buffer_chars = [], 0
            for group in self.groups.add(table):
                self._write_group(group)

    def _flush(self) -> None:
        self._convert()
        group = self.groups.take()
        if group is not None:
            self._write_group(group)

    def _write_group(self, table: pa.Table) -> None:
        if self.writer is None:
            staged = self._stage(len(self.files))
            self.writer = self.cfg._parquet_writer(staged.tmp, self.schema)
            self.files.append(staged)
        self.writer.write_table(table, row_group_size=table.num_rows)  # one row group
        self.rows += table.num_rows
        self.shard_chars += pc.sum(pc.utf8_length(table["text"])).as_py() or 0
        if self.shard_chars >= self.cfg.max_shard_chars:
            self.writer.close()
            self.writer, self.shard_chars = None, 0

    def commit(self) -> list[str]:
        """Close, then move the shards into place. Returns the final paths (none if no document)."""
        self._flush()
        if self.writer is not None:
            self.writer.close()
        for name in self._stale():
            fs.remove(fs.join(self.dir, name))
        return [staged.commit() for staged in self.files]

    def _stale(self) -> list[str]:
        """Shards and temp files of this stem left by an earlier attempt, found by prefix listings only.

        On an object store each is one LIST request filtered by the server to this stem's names, so a
        commit costs the same however many other tasks' shards share the directory (a full listing per
        commit made a run O(tasks²) requests). Temp files only ever exist on local disks (object-store
        temp files live in the spool directory), so that listing is a local scandir.
        """
        own = re.compile(re.escape(self.stem) + r"-\d{3,}\.parquet")
        stale = [n for n in fs.listdir_prefix(self.dir, f"{self.stem}-") if own.fullmatch(n)]
        if fs.local_path(self.dir) is not None:
            mine = {os.path.basename(f.tmp) for f in self.files}
            tmp = re.compile(r"\." + re.escape(self.stem) + r"-\d{3,}\.\d+\.parquet\.tmp")
            stale += [n for n in fs.listdir_prefix(self.dir, f".{self.stem}-") if tmp.fullmatch(n) and n not in mine]
        return stale

    def abort(self) -> None:
        """Drop the temporary shards (the task failed): nothing appears under a final name."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        for staged in self.files:
            staged.discard()


class TableWriter:
    """One Parquet file written atomically from Arrow tables conformed to `schema`, with the pipeline's settings.

    Nothing exists under `path` until `commit`; a commit with no row written removes `path` (a stale shard
    from an earlier attempt must not survive an empty result) and returns None.
    """

    def __init__(self, cfg: Parquet, path: str, schema: pa.Schema):
        self.cfg, self.path, self.schema = cfg, path, schema
        self.staged = fs.Staged(path, tmp_name=f".{fs.basename(path)}.{os.getpid()}.tmp")
        self.writer: pq.ParquetWriter | None = None
        self.groups = cfg._row_groups()
        self.rows = 0

    def write_table(self, table: pa.Table | pa.RecordBatch, **columns: pa.Array) -> None:
        """Add rows; row groups are cut by `row_group_bytes` / `row_group_docs`, whatever the tables' sizes."""
        if table.num_rows == 0:
            return
        for group in self.groups.add(conform(table, self.schema, **columns)):
            self._write_group(group)
        self.rows += table.num_rows

    def _write_group(self, table: pa.Table) -> None:
        if self.writer is None:
            self.writer = self.cfg._parquet_writer(self.staged.tmp, self.schema)
        self.writer.write_table(table, row_group_size=table.num_rows)  # one row group

    def commit(self) -> str | None:
        last = self.groups.take()
        if last is not None:
            self._write_group(last)
        if self.writer is None:
            self.staged.discard()
            fs.remove(self.path)
            return None
        self.writer.close()
        return self.staged.commit()

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.staged.discard()


JSONL_COMPRESSIONS = {"gzip": ".jsonl.gz", "zstd": ".jsonl.zst", "none": ".jsonl"}


@dataclass
class Jsonl:
    """JSON Lines shards `<stem>-NNN.jsonl.gz` (or `.jsonl.zst`, `.jsonl`), one document a line with the columns of
    the Parquet contract (`Document.to_record`; dates as ISO strings), written and committed as `Parquet` writes
    its shards: temp names carrying the pid, renamed (or uploaded whole) at commit, older shards of the stem
    removed then, nothing under a final name before. For handing a run's output to tools that read JSONL.

    It writes the last stage only: a run's stages after a global step (dedup, `quality.TopFraction`) read and
    write Parquet, so a pipeline with one is refused when it is built, and `curate mix`, `tokenize`, `report`,
    `stats`, `inspect`, `dedup-report` and `decontam report`, which read a run's Parquet shards, refuse a JSONL
    run in one line (see docs/pipelines.md).
    """

    compression: str = "gzip"
    compression_level: int | None = None
    max_shard_chars: int = 512 * 1024 * 1024

    final_only = True  # what `Pipeline` checks: no global step may follow the reader

    def __post_init__(self) -> None:
        check(self, "compression", self.compression, choices=tuple(JSONL_COMPRESSIONS))
        check(self, "compression_level", self.compression_level, int, optional=True)
        check(self, "max_shard_chars", self.max_shard_chars, int, lo=1)

    @property
    def suffix(self) -> str:
        return JSONL_COMPRESSIONS[self.compression]

    def open(self, directory: str, stem: str, schema: pa.Schema) -> JsonlShardWriter:
        return JsonlShardWriter(self, directory, stem)

    def open_file(self, path: str, schema: pa.Schema):
        raise config_error(self, "writes the last stage of a pipeline without global steps; a global step writes "
                                 "Parquet between stages: keep writers.Parquet for this pipeline")


class JsonlShardWriter:
    """`<stem>-NNN<suffix>` files under temporary names; `commit` renames (or uploads) them into place."""

    def __init__(self, cfg: Jsonl, directory: str, stem: str):
        self.cfg, self.dir, self.stem = cfg, directory, stem
        self.files: list[fs.Staged] = []
        self.out = None  # the open (compressing) stream of the current shard
        self.shard_chars = 0
        self.rows = 0
        fs.makedirs(directory)

    def _open_next(self) -> None:
        i = len(self.files)
        staged = fs.Staged(fs.join(self.dir, f"{self.stem}-{i:03d}{self.cfg.suffix}"),
                           tmp_name=f".{self.stem}-{i:03d}.{os.getpid()}.tmp")
        self.files.append(staged)
        raw = open(staged.tmp, "wb")  # noqa: SIM115 (closed in _close_current)
        if self.cfg.compression == "gzip":
            import gzip

            self.out = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=self.cfg.compression_level or 6, mtime=0)
        elif self.cfg.compression == "zstd":
            import zstandard

            level = self.cfg.compression_level if self.cfg.compression_level is not None else 3
            self.out = zstandard.ZstdCompressor(level=level).stream_writer(raw, closefd=True)
        else:
            self.out = raw
        self._raw = raw

    def write(self, doc: Document, **columns) -> None:
        rec = doc.to_record()
        rec.update(columns)
        if self.out is None:
            self._open_next()
        self.out.write(json.dumps(rec, ensure_ascii=False, default=_json_value).encode("utf-8") + b"\n")
        self.rows += 1
        self.shard_chars += len(doc.text)
        if self.shard_chars >= self.cfg.max_shard_chars:
            self._close_current()

    def _close_current(self) -> None:
        if self.out is not None:
            self.out.close()
            if not self._raw.closed:
                self._raw.close()
            self.out, self.shard_chars = None, 0

    def commit(self) -> list[str]:
        self._close_current()
        own = re.compile(re.escape(self.stem) + r"-\d{3,}\.jsonl(\.gz|\.zst)?")
        for name in fs.listdir_prefix(self.dir, f"{self.stem}-"):
            if own.fullmatch(name):
                fs.remove(fs.join(self.dir, name))
        return [staged.commit() for staged in self.files]

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            self._close_current()
        for staged in self.files:
            staged.discard()


def parquet_shards(folder: str, command: str) -> list[str]:
    """The Parquet shards of a run's `data/` or `rejected/` folder, for the commands that read them as Parquet.
    A folder of JSON Lines shards (`writers.Jsonl`) is refused in one line that says so, rather than read as
    "no shards" or as an empty corpus."""
    files = fs.glob(fs.join(folder, "*.parquet"))
    if not files and any(n.endswith(tuple(JSONL_COMPRESSIONS.values())) for n in fs.listdir(folder)):
        from curate.core.errors import UsageError

        raise UsageError(f"{folder} holds JSON Lines shards (a pipeline with writers.Jsonl): {command} reads the "
                         "Parquet shards of writers.Parquet; curate mix and curate tokenize read JSONL runs")
    return files


def _json_value(v):
    """Values JSON has no type for: dates as ISO 8601 strings, anything else as its text."""
    return v.isoformat() if hasattr(v, "isoformat") else str(v)


@contextlib.contextmanager
def together(*writers: TableWriter | ShardWriter | None) -> Iterator[None]:
    """Commit every writer (None: not asked for) when the block ends, or abort them all if it (or a commit)
    raises: a task's output and its rejected rows appear together or not at all."""
    live = [w for w in writers if w is not None]
    try:
        yield
        for w in live:
            w.commit()
    except BaseException:
        for w in live:
            w.abort()
        raise


atomic_write_text = fs.atomic_write_text  # kept here: callers import it from curate.io.writers
