"""Sizes in bytes: the row groups the writers cut and the record batches every Parquet reader decodes.

Counts of documents alone do not bound memory: 8,192 documents are 8 MB of tweets or 1.2 GB of 150 KB
pages. So a batch is cut at `BATCH_BYTES` of decoded data (and a row cap), a row group at
`ROW_GROUP_BYTES` (and `writers.Parquet(row_group_docs=)`); a single record bigger than either is a
batch or row group of its own. Whatever a writer of this project cuts, `readers.Parquet` reads: its
limit (`max_record_bytes`, 1 GiB) is on what pyarrow decodes at once (a page), never on a row group.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BATCH_BYTES = 32 << 20  # decoded bytes of one record batch read from Parquet (by the row group's mean row)
ROW_GROUP_BYTES = 64 << 20  # bytes of one row group written (exact, by the rows' own sizes)
MAX_BATCH_ROWS = 8192  # rows of one batch, however small
MAX_RECORD_BYTES = 1 << 30  # what readers.Parquet decodes at once (a page): the most a row group written may hold


def group_bytes(metadata: Any, group: int, columns: Sequence[str] | None = None) -> int:
    """Decoded bytes of row group `group` (of `columns` only, when given), from the file's metadata."""
    rg = metadata.row_group(group)
    if columns is None:
        return rg.total_byte_size
    wanted = set(columns)
    return sum(rg.column(c).total_uncompressed_size for c in range(rg.num_columns)
               if rg.column(c).path_in_schema.split(".")[0] in wanted)


def batch_rows(size: int, rows: int, budget: int | None = None, cap: int = MAX_BATCH_ROWS) -> int:
    """Rows per batch for a row group of `rows` rows and `size` decoded bytes: about `budget` bytes each
    (default `BATCH_BYTES`)."""
    if rows <= 0:
        return 1
    budget = BATCH_BYTES if budget is None else budget
    return int(max(1, min(cap, rows, budget * rows // max(size, 1))))


def iter_batches(pf: Any, columns: Sequence[str] | None = None, budget: int | None = None,
                 max_rows: int = MAX_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """`pf.iter_batches` in batches of about `budget` decoded bytes (at most `max_rows` rows), row group
    by row group: each group's batch size comes from its mean row (its metadata), so 150 KB documents
    come 200 at a time where tweets come 8,192 at a time."""
    md = pf.metadata
    cols = list(columns) if columns is not None else None
    for g in range(md.num_row_groups):
        n = md.row_group(g).num_rows
        if n:
            size = batch_rows(group_bytes(md, g, cols), n, budget, max_rows)
            yield from pf.iter_batches(batch_size=size, row_groups=[g], columns=cols)


def row_bytes(table: pa.Table | pa.RecordBatch) -> np.ndarray:
    """Bytes of each row as Arrow holds it: the values of string and binary columns plus their offsets,
    the width of fixed-size ones, an even share of the others (nested columns)."""
    n = table.num_rows
    sizes = np.zeros(n, dtype=np.int64)
    if not n:
        return sizes
    for col in table.columns:
        t = col.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
            lengths = pc.binary_length(col).fill_null(0)
            sizes += np.asarray(lengths.to_numpy(zero_copy_only=False), dtype=np.int64) + (8 if "large" in str(t) else 4)
            continue
        try:
            sizes += max(t.bit_width // 8, 1)
        except ValueError:  # not fixed-width
            sizes += col.nbytes // n + 1
    return sizes


class RowGroups:
    """Rows gathered into row groups of at most `max_bytes` (by `row_bytes`) and `max_rows` rows; a row
    over `max_bytes` alone is a row group of its own. `add` returns the groups it completed; memory is at
    most one group (slices of the tables added, which keep their buffers alive until written)."""

    def __init__(self, max_bytes: int, max_rows: int):
        self.max_bytes, self.max_rows = max_bytes, max_rows
        self.parts: list[pa.Table] = []
        self.bytes = self.rows = 0

    def add(self, table: pa.Table) -> list[pa.Table]:
        done = []
        cum = np.cumsum(row_bytes(table))
        start, n = 0, table.num_rows
        while start < n:
            base = int(cum[start - 1]) if start else 0
            fit = int(np.searchsorted(cum, base + self.max_bytes - self.bytes, side="right")) - start
            k = min(max(fit, 0 if self.rows else 1), self.max_rows - self.rows, n - start)
            if k > 0:
                self.parts.append(table.slice(start, k))
                self.bytes += int(cum[start + k - 1]) - base
                self.rows += k
                start += k
            if k == 0 or self.rows >= self.max_rows:
                done.append(self.take())
        return done

    def take(self) -> pa.Table | None:
        """The rows gathered so far as one table (None: none), and start a new group."""
        if not self.parts:
            return None
        table = self.parts[0] if len(self.parts) == 1 else pa.concat_tables(self.parts)
        self.parts, self.bytes, self.rows = [], 0, 0
        return table
