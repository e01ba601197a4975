"""WARC framing under the record parsers: header blocks bounded, bytes that start no record passed over.

warcio reads a header line by concatenating 16 KiB blocks until it sees a newline, so its time is
quadratic in the line's length and its memory linear: a 16 MB header line took 6.6 s, a 2 GB one in
a 2 MB gzip file had not finished after 280 s. FastWARC refuses a header block over 32 KiB and then
stops reading the stream. And after a record whose Content-Length is wrong, warcio skips one line
and FastWARC stops, so a single-stream `.warc.gz` lost every later record.

`Framed` sits between the decompressed bytes and either parser and follows the records by their
Content-Length. Where a record must begin, it passes on only a header block that starts with
`WARC/`, has a Content-Length and (with the blank lines before it) fits in `MAX_HEADER_BYTES`
(FastWARC's own limit); anything else is passed over up to the next line that starts with `WARC/`,
and noted in `skipped` (`header_too_long` or `bad_header`), which the reader counts. So both parsers
see the same well-framed records, and one bad record costs itself, not the rest of the stream.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from curate.io.members import ForwardOnly

MAX_HEADER_BYTES = 32 << 10  # blank lines + header block of one WARC record (FastWARC refuses more)
_CHUNK = 1 << 16
_START = b"\nWARC/"
_CONTENT_LENGTH = re.compile(rb"(?im)^content-length:[ \t]*(\d+)[ \t]*\r?$")
_BLOCK_END = re.compile(rb"\n\r?\n")
_BLANKS = re.compile(rb"[\r\n]*")


class Framed(ForwardOnly):
    """The records of `raw` (decompressed WARC bytes), bytes that frame no record left out (see module).

    `records` counts the header blocks passed on; `drain()` frames the rest after a parser error, so
    that the reader can tell whether the stream held more records than the parser read. `starts` holds the
    offset in `raw` (plus `base`, where `raw` stands in its file) of every header block passed on, and `runs`
    the offset and reason of every run passed over: what an uncompressed WARC's ids and byte ranges use.
    """

    def __init__(self, raw: Any, base: int = 0):
        self.raw, self.pos, self.eof = raw, 0, False
        self.fed = base  # offset in the file of the next byte read from `raw`
        self.starts: list[int] = []
        self.runs: list[tuple[int, str]] = []
        self.out = bytearray()  # framed bytes being gathered
        self.ready, self.at = memoryview(b""), 0  # framed bytes the parser reads, and how far it has
        self.body = 0  # bytes of the current record's content still to pass
        self.head = b""  # the start of the next header block (or of a `_START` searched for), split by a read
        self.skipping = False  # passing over bytes up to the next line that starts with `WARC/`
        self.skipped: Counter = Counter()  # runs passed over, by reason
        self.records = 0

    def readinto(self, buf: Any) -> int:
        if self.at >= len(self.ready):  # served by offset: a parser's small reads copy only what they take
            while not self.out and not self.eof:
                self._feed(self.raw.read(_CHUNK))
            self.ready, self.at, self.out = memoryview(bytes(self.out)), 0, bytearray()
        n = min(len(buf), len(self.ready) - self.at)
        buf[:n] = self.ready[self.at : self.at + n]
        self.at += n
        self.pos += n
        return n

    def drain(self) -> None:
        """Frame the rest of `raw` without a parser (after a parser error), counting its records."""
        while not self.eof:
            self._feed(self.raw.read(_CHUNK))
            self.out = bytearray()

    def _feed(self, chunk: bytes) -> None:
        """Frame `chunk`; at the end of `raw` (`chunk` empty) an unfinished header goes to the parser as it is."""
        base = self.fed
        self.fed += len(chunk)
        if not chunk:
            self.eof = True
            if not self.skipping:
                self.out += self.head  # blank lines, or a header cut by the end of the file (the parser counts it)
            self.head = b""
            return
        data = memoryview(chunk)
        while data:
            if self.body:
                k = min(self.body, len(data))
                self.out += data[:k]
                self.body, data = self.body - k, data[k:]
            elif self.skipping:
                data = self._skip(data)
            else:
                data = self._header(data, base + len(chunk) - len(data) - len(self.head))

    def _skip(self, data: memoryview) -> memoryview:
        """`data` from the next line that starts with `WARC/` (empty if none yet: the search goes on)."""
        seen = self.head + bytes(data)  # `head`: the last bytes passed over, for a start split by a read
        i = seen.find(_START)
        if i < 0:
            self.head = seen[-(len(_START) - 1):]
            return memoryview(b"")
        self.skipping, self.head = False, b""
        return memoryview(seen)[i + 1:]

    def _header(self, data: memoryview, offset: int) -> memoryview:
        """Gather the next header block; pass it on whole, or pass it over. Returns the bytes after it.
        `offset`: where the block's gathered bytes (`head`, then `data`) begin in the file."""
        buf = memoryview(self.head + bytes(data)) if self.head else data
        start = _BLANKS.match(buf).end()  # blank lines between records
        lead = bytes(buf[start : start + 5])
        if lead != b"WARC/"[: len(lead)]:
            return self._pass_over("bad_header", buf, start, offset)
        end = _BLOCK_END.search(buf, start, MAX_HEADER_BYTES)
        if end is None:
            if len(buf) <= MAX_HEADER_BYTES:
                self.head = bytes(buf)  # wait for more
                return memoryview(b"")
            return self._pass_over("header_too_long", buf, start, offset)
        length = _CONTENT_LENGTH.search(buf, start, end.end())
        if length is None:  # no way to find the record's end
            return self._pass_over("bad_header", buf, start, offset)
        if start == 0 and self.pos + len(self.out) + len(self.ready) - self.at:  # warcio takes a line
            self.out += b"\r\n\r\n"  # right after a record for that record's tail
        self.out += buf[: end.end()]
        self.records += 1
        self.starts.append(offset + start)
        self.body, self.head = int(length.group(1)), b""
        return buf[end.end():]

    def _pass_over(self, reason: str, buf: memoryview, start: int, offset: int) -> memoryview:
        self.skipped[reason] += 1
        self.runs.append((offset + start, reason))
        self.skipping, self.head = True, b""
        return buf[start + 1:]


def is_record(f: Any, at: int, size: int) -> bool:
    """Whether an uncompressed WARC record starts at byte `at` of the seekable file `f` (of `size` bytes), as a
    range that starts mid-file decides it: a header block that starts with `WARC/`, ends within
    `MAX_HEADER_BYTES` and has a Content-Length, whose content is followed by blank lines and the next `WARC/`
    (or the file's end, or the file ends inside it). A line `WARC/1.0` in a page passes only if a whole record
    header with a Content-Length that lands on the next record follows it: a WARC record stored inside one."""
    f.seek(at)
    head = f.read(MAX_HEADER_BYTES)
    end = _BLOCK_END.search(head) if head.startswith(b"WARC/") else None
    length = _CONTENT_LENGTH.search(head, 0, end.end()) if end else None
    if length is None:
        return False
    after = at + end.end() + int(length.group(1))
    if after >= size:
        return True
    f.seek(after)
    tail = f.read(64)
    rest = tail.lstrip(b"\r\n")
    return rest.startswith(b"WARC/"[: len(rest)]) if after + len(tail) >= size else rest.startswith(b"WARC/")


def next_record(f: Any, pos: int, size: int, limit: int | None = None) -> int | None:
    """The first record start (`is_record`) at or after byte `pos` (> 0) that begins a line, searching at most
    `limit` bytes (None: to the end); None if none."""
    base, carry = pos - 1, b""
    while limit is None or base - pos < limit:
        f.seek(base + len(carry))
        chunk = f.read(_CHUNK)
        buf = carry + chunk
        i = buf.find(_START)
        while i >= 0:
            if limit is not None and base + i + 1 - pos >= limit:
                return None
            if is_record(f, base + i + 1, size):
                return base + i + 1
            i = buf.find(_START, i + 1)
        if not chunk:
            return None
        cut = max(0, len(buf) - (len(_START) - 1))
        base, carry = base + cut, buf[cut:]
    return None
