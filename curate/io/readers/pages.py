"""The largest page of a Parquet row group, read from its page headers without decoding any page.

pyarrow decompresses and decodes a page whole (and cannot skip one without doing so), so what one read
costs is bounded by the largest page, not by the batch asked for: a row group over a size limit can be read
in small batches exactly when every page in it is under the limit. A page header is a Thrift
compact-protocol `PageHeader` ahead of each page (field 2 its uncompressed size, 3 its compressed size);
only the headers are read, one seek each.
"""

from __future__ import annotations

from typing import Any

HEADER_READ = 1 << 12  # bytes read for one page header (a header with long statistics is read again, longer)
MAX_HEADER = 1 << 24  # a longer header is no header


class _Short(Exception):
    """The header runs past the bytes read."""


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf):
            raise _Short
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
        if shift > 70:
            raise ValueError("varint too long")


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _skip(buf: bytes, i: int, kind: int, depth: int = 0) -> int:
    """Past one value of compact type `kind` starting at `i`."""
    if depth > 32:
        raise ValueError("nested too deep")
    if kind in (1, 2):  # booleans inside a struct: the value is the type
        return i
    if kind == 3:
        return i + 1
    if kind in (4, 5, 6):
        return _varint(buf, i)[1]
    if kind == 7:
        return i + 8
    if kind == 8:
        n, i = _varint(buf, i)
        return i + n
    if kind in (9, 10):
        if i >= len(buf):
            raise _Short
        head, i = buf[i], i + 1
        n, elem = head >> 4, head & 0x0F
        if n == 15:
            n, i = _varint(buf, i)
        for _ in range(n):
            i = i + 1 if elem in (1, 2) else _skip(buf, i, elem, depth + 1)
        return i
    if kind == 11:
        n, i = _varint(buf, i)
        if n:
            if i >= len(buf):
                raise _Short
            kv, i = buf[i], i + 1
            for _ in range(n):
                i = _skip(buf, i, kv >> 4, depth + 1)
                i = _skip(buf, i, kv & 0x0F, depth + 1)
        return i
    if kind == 12:
        return _struct(buf, i, {}, depth + 1)[1]
    raise ValueError(f"unknown compact type {kind}")


def _struct(buf: bytes, i: int, want: dict[int, int], depth: int = 0) -> tuple[dict[int, int], int]:
    """Parse a struct from `i`: the i32 fields whose ids are in `want`, and where it ends."""
    got, fid = dict(want), 0
    while True:
        if i >= len(buf):
            raise _Short
        head, i = buf[i], i + 1
        if head == 0:
            return got, i
        kind, delta = head & 0x0F, head >> 4
        if delta:
            fid += delta
        else:
            raw, i = _varint(buf, i)
            fid = _zigzag(raw)
        if fid in want and kind == 5:
            raw, i = _varint(buf, i)
            got[fid] = _zigzag(raw)
        else:
            i = _skip(buf, i, kind, depth)


def page_sizes(f: Any, start: int, length: int) -> list[tuple[int, int]]:
    """(uncompressed, compressed) size of every page of the column chunk at [start, start + length) of `f`.

    Raises ValueError where the headers do not parse or do not tile the chunk (a damaged file)."""
    out, pos, end = [], start, start + length
    while pos < end:
        size = HEADER_READ
        while True:
            f.seek(pos)
            buf = f.read(size)
            try:
                fields, used = _struct(buf, 0, {2: -1, 3: -1})
                break
            except _Short:
                if len(buf) < size or size >= MAX_HEADER:
                    raise ValueError(f"page header at {pos} runs past the column chunk") from None
                size *= 8
        uncompressed, compressed = fields[2], fields[3]
        if uncompressed < 0 or compressed < 0:
            raise ValueError(f"page header at {pos} has no page sizes")
        out.append((uncompressed, compressed))
        pos += used + compressed
    if pos != end:
        raise ValueError(f"pages end at {pos}, the column chunk at {end}")
    return out


def largest_page(f: Any, metadata: Any, group: int) -> int:
    """The largest uncompressed page of any column of row group `group` (`metadata`: the file's FileMetaData)."""
    rg = metadata.row_group(group)
    largest = 0
    for c in range(rg.num_columns):
        col = rg.column(c)
        start = col.data_page_offset
        if col.has_dictionary_page and 0 < col.dictionary_page_offset < start:
            start = col.dictionary_page_offset
        for uncompressed, _ in page_sizes(f, start, col.total_compressed_size):
            largest = max(largest, uncompressed)
    return largest
