"""WARC framing checks under the record parsers: a bound on header blocks, and a count of record starts.

warcio reads a header line by concatenating 16 KiB blocks until it sees a newline, so its time is
quadratic in the line's length and its memory linear: a 16 MB header line took 6.6 s, a 2 GB one in
a 2 MB gzip file had not finished after 280 s. FastWARC refuses a header block over 32 KiB. `Framed`
sits between the decompressed bytes and either parser and follows the records by their
Content-Length: the blank lines and header block before each record's content may not pass
`MAX_HEADER_BYTES` (FastWARC's own limit, so both readers refuse the same records), else it raises
`HeaderTooLong`, and the reader counts the record as `read:header_too_long`.

It also counts the lines that start a WARC record (`WARC/1.`) in everything that passes through it,
so that when a stream breaks the reader can tell whether records were lost after the break (a
single-stream `.warc.gz` whose first record's Content-Length is wrong) and count the loss.
"""

from __future__ import annotations

import io
import re
from typing import Any

MAX_HEADER_BYTES = 32 << 10  # blank lines + header block of one WARC record (FastWARC refuses more)
_START = b"\nWARC/1."
_CONTENT_LENGTH = re.compile(rb"(?im)^content-length:[ \t]*(\d+)[ \t]*\r?$")
_BLOCK_END = re.compile(rb"\n\r?\n")


class HeaderTooLong(ValueError):
    """A WARC header block (with the blank lines before it) over `MAX_HEADER_BYTES`."""


class Framed(io.RawIOBase):
    """`raw` (decompressed WARC bytes) as a parser reads it, raising `HeaderTooLong` on an oversized header.

    After the first error (its own or the parser's), `broken()` turns the checks off, so that the rest
    can be drained to count the record starts in it.
    """

    def __init__(self, raw: Any):
        self.raw = raw
        self.body = 0  # bytes of the current record's content still to pass
        self.head = bytearray()  # the blank lines and header block read so far of the next record
        self.starts = 0  # lines starting a WARC record seen (`_START`, or the stream's first bytes)
        self.tail = b"\n"  # the last bytes seen, for a start split between two reads
        self.checking = True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.raw.tell()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self.raw.seek(offset, whence)

    def readinto(self, buf: Any) -> int:
        n = self.raw.readinto(buf)
        if n:
            data = bytes(memoryview(buf)[:n])
            seen = self.tail + data
            self.starts += seen.count(_START)
            self.tail = seen[-(len(_START) - 1):]
            if self.checking:
                self._follow(data)
        return n

    def broken(self) -> None:
        self.checking, self.head = False, bytearray()

    def drain(self) -> None:
        """Read to the end, counting record starts (an error of the stream itself is left to the caller)."""
        self.broken()
        buf = bytearray(1 << 16)
        while self.readinto(buf):
            pass

    def _follow(self, data: bytes) -> None:
        """Pass `data` through the content of the current record and the header block of the next."""
        while data:
            if self.body:
                k = min(self.body, len(data))
                self.body -= k
                data = data[k:]
                continue
            self.head += data
            start = len(self.head) - len(self.head.lstrip(b"\r\n"))  # blank lines between records
            end = _BLOCK_END.search(self.head, start)
            if end is None:
                if len(self.head) > MAX_HEADER_BYTES:
                    raise HeaderTooLong(f"a WARC header block over {MAX_HEADER_BYTES} bytes")
                return
            if end.end() > MAX_HEADER_BYTES:
                raise HeaderTooLong(f"a WARC header block of {end.end()} bytes (over {MAX_HEADER_BYTES})")
            m = _CONTENT_LENGTH.search(self.head, start, end.end())
            self.body = int(m.group(1)) if m else 0
            data, self.head = bytes(self.head[end.end():]), bytearray()
