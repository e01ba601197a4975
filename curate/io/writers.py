"""Writers: Parquet shards in the text contract, written atomically (temp file, then rename or one upload)."""

from __future__ import annotations

import contextlib
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
