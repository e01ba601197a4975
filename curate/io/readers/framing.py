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

import io
import re
from collections import Counter
from typing import Any

MAX_HEADER_BYTES = 32 << 10  # blank lines + header block of one WARC record (FastWARC refuses more)
_CHUNK = 1 << 16
_START = b"\nWARC/"
_CONTENT_LENGTH = re.compile(rb"(?im)^content-length:[ \t]*(\d+)[ \t]*\r?$")
_BLOCK_END = re.compile(rb"\n\r?\n")


class Framed(io.RawIOBase):
    """The records of `raw` (decompressed WARC bytes), bytes that frame no record left out (see module).

    `starts` counts the lines that start a WARC record in everything read from `raw`, so that after a
    parser error the reader can tell whether the rest of the stream held more records.
    """

    def __init__(self, raw: Any):
        self.raw, self.pos, self.eof = raw, 0, False
        self.out = bytearray()  # framed bytes not yet read by the parser
        self.body = 0  # bytes of the current record's content still to pass
        self.head = bytearray()  # the blank lines and header block of the next record, read so far
        self.skipping = False  # passing over bytes up to the next line that starts with `WARC/`
        self.skipped: Counter = Counter()  # runs passed over, by reason
        self.starts = 0
        self.tail = b"\n"  # the last bytes of `raw` read, for a `_START` split between two reads

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Only a no-op seek (FastWARC asks for its position that way)."""
        target = offset if whence == io.SEEK_SET else self.pos + offset if whence == io.SEEK_CUR else -1
        if target != self.pos:
            raise io.UnsupportedOperation("a framed WARC stream cannot seek")
        return self.pos

    def readinto(self, buf: Any) -> int:
        while not self.out and not self.eof:
            self._feed(self._read())
        n = min(len(buf), len(self.out))
        buf[:n] = self.out[:n]
        del self.out[:n]
        self.pos += n
        return n

    def drain(self) -> None:
        """Read `raw` to its end (after a parser error), counting the record starts in it."""
        while self._read():
            pass

    def _read(self) -> bytes:
        data = self.raw.read(_CHUNK)
        if not data:
            self.eof = True
            return b""
        k = len(_START) - 1
        self.starts += (self.tail + data[:k]).count(_START) + data.count(_START)
        self.tail = (self.tail + data)[-k:]
        return data

    def _feed(self, data: bytes) -> None:
        """Frame `data`; at the end of `raw` (`data` empty) an unfinished header goes to the parser as it is."""
        if not data:
            if not self.skipping:
                self.out += self.head  # blank lines, or a header cut by the end of the file (the parser counts it)
            self.head = bytearray()
            return
        while data:
            if self.body:
                k = min(self.body, len(data))
                self.out += data[:k]
                self.body, data = self.body - k, data[k:]
            elif self.skipping:
                data = self._skip(data)
            else:
                data = self._header(data)

    def _skip(self, data: bytes) -> bytes:
        """`data` from the next line that starts with `WARC/` (b"" if none yet: the search goes on)."""
        seen = bytes(self.head) + data  # `head` holds the last bytes passed over
        i = seen.find(_START)
        if i < 0:
            self.head = bytearray(seen[-(len(_START) - 1):])
            return b""
        self.skipping, self.head = False, bytearray()
        return seen[i + 1:]

    def _header(self, data: bytes) -> bytes:
        """Gather the next header block; pass it on whole, or pass it over. Returns the bytes after it."""
        self.head += data
        start = len(self.head) - len(self.head.lstrip(b"\r\n"))  # blank lines between records
        lead = bytes(self.head[start:start + 5])
        if lead != b"WARC/"[: len(lead)]:
            return self._pass_over("bad_header", start)
        end = _BLOCK_END.search(self.head, start)
        if end is None or end.end() > MAX_HEADER_BYTES:
            if end is None and len(self.head) <= MAX_HEADER_BYTES:
                return b""  # wait for more
            return self._pass_over("header_too_long", start)
        length = _CONTENT_LENGTH.search(self.head, start, end.end())
        if length is None:  # no way to find the record's end
            return self._pass_over("bad_header", start)
        if start == 0 and self.pos + len(self.out):  # warcio takes a line right after a record for its tail
            self.out += b"\r\n\r\n"
        self.out += self.head[: end.end()]
        self.body, rest, self.head = int(length.group(1)), bytes(self.head[end.end():]), bytearray()
        return rest

    def _pass_over(self, reason: str, start: int) -> bytes:
        self.skipped[reason] += 1
        self.skipping, rest, self.head = True, bytes(self.head[start + 1:]), bytearray()
        return rest
