"""Gzip members as separate streams, so that one damaged member costs its own record(s), not the file.

A `.warc.gz` holds one gzip member per record (the WARC standard's recommendation, which Common Crawl
follows). Reading member by member gives three things a plain gzip stream cannot: a bit flip or a bad
CRC is caught inside the member it damages (zlib checks the CRC at the member's end), reading resumes
at the next member start, and a file gzipped as one single stream is still read, as one big member.

`Tracked` wraps the raw file so that an error of the file itself (network, object store, permission)
is told apart from bad data: the readers re-raise it instead of counting it, and the task fails.
"""

from __future__ import annotations

import io
import zlib
from collections import deque
from collections.abc import Iterator
from typing import Any

GZIP_MAGIC = b"\x1f\x8b\x08"
CHUNK = 1 << 16
MAX_RESCAN = 16 << 20  # compressed bytes of one member kept to rescan after damage (bounds memory)


class BadMember(Exception):
    """A gzip member (or bytes between members) that does not decompress: data error, CRC, junk."""


class ForwardOnly(io.RawIOBase):
    """A stream read front to back, `pos` bytes delivered so far: it tells its position and accepts only a seek
    that goes nowhere (FastWARC asks for its position that way); anything else is UnsupportedOperation."""

    pos = 0

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        target = offset if whence == io.SEEK_SET else self.pos + offset if whence == io.SEEK_CUR else -1
        if target != self.pos:
            raise io.UnsupportedOperation(f"{type(self).__name__}: a stream read front to back cannot seek")
        return self.pos


class Tracked(io.RawIOBase):
    """A file wrapper that remembers the first error its `read` raised (an I/O error, never bad data)."""

    def __init__(self, raw: Any):
        self.raw, self.io_error = raw, None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self.raw.seekable()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._call(self.raw.seek, offset, whence)

    def tell(self) -> int:
        return self._call(self.raw.tell)

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except BaseException as e:
            self.io_error = self.io_error or e
            raise

    def read(self, n: int = -1) -> bytes:
        try:
            return self.raw.read(n)
        except BaseException as e:
            self.io_error = self.io_error or e
            raise

    def readinto(self, buf: Any) -> int:
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)


class _Compressed:
    """The compressed bytes with a look-ahead buffer and the absolute offset of its first byte."""

    def __init__(self, raw: Any, offset: int = 0):
        self.raw, self.buf, self.offset, self.eof = raw, b"", offset, False

    def fill(self, n: int) -> bool:
        """Make at least `n` bytes available if the file has them; False at end of file."""
        while len(self.buf) < n and not self.eof:
            chunk = self.raw.read(CHUNK)
            self.eof = not chunk
            self.buf += chunk
        return len(self.buf) >= n

    def take(self, n: int) -> bytes:
        out, self.buf, self.offset = self.buf[:n], self.buf[n:], self.offset + min(n, len(self.buf))
        return out

    def push_back(self, data: bytes) -> None:
        self.buf, self.offset = data + self.buf, self.offset - len(data)


class Member(ForwardOnly):
    """The decompressed bytes of one gzip member; raises `BadMember` where it is damaged.

    At the end of the file inside the member it ends quietly and sets `truncated`: the record cut
    there is then counted as `read:truncated_record` by the reader, as for any cut download.
    """

    def __init__(self, src: _Compressed, junk: bool = False):
        self.src, self.start, self.junk = src, src.offset, junk
        self.dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self.pending, self.done, self.truncated = b"", False, False
        self.pos = 0  # decompressed bytes delivered
        self.history: list[bytes] | None = []  # compressed bytes consumed, to rescan after damage
        self.history_bytes = 0

    def readinto(self, buf: Any) -> int:
        if self.junk:
            raise BadMember(f"no gzip member at byte {self.start}")
        while not self.pending and not self.done:
            self._step()
        n = min(len(buf), len(self.pending))
        buf[:n], self.pending = self.pending[:n], self.pending[n:]
        self.pos += n
        return n

    def _step(self) -> None:
        if not self.src.fill(1):
            self.done = self.truncated = True
            return
        chunk = self.src.take(len(self.src.buf))
        try:
            self.pending = self.dec.decompress(chunk, CHUNK)
        except zlib.error as e:
            self.done = True
            self._rewind(chunk)
            raise BadMember(f"gzip member at byte {self.start}: {e}") from None
        rest = self.dec.unused_data if self.dec.eof else self.dec.unconsumed_tail  # zlib keeps a stale tail at eof
        self.src.push_back(rest)
        if self.history is not None:
            self.history.append(chunk[: len(chunk) - len(rest)])
            self.history_bytes += len(chunk) - len(rest)  # a running total: summing the list was quadratic
            if self.history_bytes > MAX_RESCAN:
                self.history = None
        if self.dec.eof:
            self.done = True

    def _rewind(self, chunk: bytes) -> None:
        """Give back what this damaged member consumed, but its first byte, so that `resync` finds the next
        member even where zlib read past it (a flipped header flag makes it skip a name that is not there).
        A member over MAX_RESCAN bytes gives back only the chunk that failed."""
        back = b"".join(self.history) + chunk if self.history is not None else chunk
        self.src.push_back(back[1:] if self.history is not None else back)
        self.history = None

    def drain(self) -> None:
        """Read to the member's end, so that its CRC is checked (raises `BadMember` if it fails)."""
        if self.junk:
            raise BadMember(f"no gzip member at byte {self.start}")
        while not self.done:
            self.pending = b""
            self._step()


class Resyncing:
    """Members of a file; after a damaged one (`BadMember`), `resync` skips to the next member that
    starts a WARC record, and iteration goes on from there."""

    def __init__(self, raw: Any, first_bytes: bytes = b"WARC/", offset: int = 0):
        self.src, self.first = _Compressed(raw, offset), first_bytes  # `offset`: where `raw` stands in its file

    def __iter__(self) -> Iterator[Member]:
        while self.src.fill(1):
            junk = not (self.src.fill(len(GZIP_MAGIC)) and self.src.buf.startswith(GZIP_MAGIC))
            m = Member(self.src, junk=junk)  # junk raises `BadMember` on its first read
            yield m
            if (m.junk or not m.done) and self.src.offset <= m.start + 1:  # left where it was: move on
                self.resync(m.start)

    def resync(self, after: int) -> None:
        """Skip to the first byte after offset `after` where a gzip member decompresses to a WARC record."""
        skip = max(0, after + 1 - self.src.offset)
        while skip > 0 and self.src.fill(1):
            skip -= len(self.src.take(min(skip, len(self.src.buf))))
        while self.src.fill(len(GZIP_MAGIC)):
            i = self.src.buf.find(GZIP_MAGIC)
            if i < 0:
                self.src.take(len(self.src.buf) - len(GZIP_MAGIC) + 1)
                continue
            self.src.take(i)
            if self._starts_record():
                return
            self.src.take(1)
        self.src.take(len(self.src.buf))

    def _starts_record(self) -> bool:
        self.src.fill(CHUNK)
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(self.src.buf[:CHUNK], len(self.first))
        except zlib.error:
            return False
        cut_short = self.src.eof and len(self.src.buf) < CHUNK and self.first.startswith(head)  # a truncated member
        return head.startswith(self.first) or cut_short


class MemberStarts(ForwardOnly):
    """The raw file as a native reader (FastWARC) reads it, noting every offset where gzip's magic bytes
    stand: a record that a native reader yields at offset `pos` began a member of its own, right after the
    member before, only if `pos` is the first such offset after the one before (`follows`). A member the
    native reader skipped would leave its magic bytes in between. A false hit (magic inside deflate data,
    about one per 16 MiB) only sends that stretch to the member reader."""

    def __init__(self, raw: Any):
        self.raw, self.pos, self.tail, self.hits = raw, 0, b"", deque()

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        buf, base = self.tail + data, self.pos - len(self.tail)
        i = buf.find(GZIP_MAGIC)
        while i >= 0:
            self.hits.append(base + i)
            i = buf.find(GZIP_MAGIC, i + 1)
        self.tail, self.pos = buf[-(len(GZIP_MAGIC) - 1):], self.pos + len(data)
        return data

    def readinto(self, buf: Any) -> int:
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)

    def follows(self, prev: int, pos: int) -> bool:
        """Whether the first member start after offset `prev` (-1: the file's start) is `pos`."""
        while self.hits and self.hits[0] <= prev:
            self.hits.popleft()
        return bool(self.hits) and self.hits[0] == pos


def next_member(f: Any, pos: int, limit: int | None = None, first_bytes: bytes = b"WARC/") -> int | None:
    """The offset of the first gzip member at or after byte `pos` of the seekable file `f` that decompresses to
    `first_bytes` (a WARC record's start), searching at most `limit` bytes (None: to the end); None if there is
    none. The same rule as `Resyncing.resync`, so a range read and a reading from the start agree on where the
    members are: magic bytes inside deflate data (about one per 16 MiB) do not decompress to a record."""
    f.seek(pos)
    buf, base = b"", pos
    while limit is None or base - pos < limit:
        chunk = f.read(CHUNK)
        buf += chunk
        i = buf.find(GZIP_MAGIC)
        while i >= 0 and (limit is None or base + i - pos < limit):
            while len(buf) - i < CHUNK and chunk:  # enough bytes after the candidate to decompress a header
                chunk = f.read(CHUNK)
                buf += chunk
            try:
                head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(buf[i : i + CHUNK], len(first_bytes))
            except zlib.error:
                head = b""
            if head.startswith(first_bytes):
                return base + i
            i = buf.find(GZIP_MAGIC, i + 1)
        if not chunk:
            return None
        keep = len(GZIP_MAGIC) - 1
        base, buf = base + len(buf) - keep, buf[-keep:]
    return None
