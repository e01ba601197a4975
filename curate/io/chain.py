"""Compressed files as chains of independently decodable members (gzip members, zstd frames), so that a byte
range of a `.jsonl.gz` / `.jsonl.zst` can be read on its own and agree with a reading of the whole file.

bgzip, `pigz --independent`, `pzstd` and `cat a.gz b.gz` write files of many members; a member can be decoded
from its first byte, but nothing in the file says where members start (gzip stores no compressed lengths), so
a reading that starts mid-file must search for one. Two readings agree on where members are because one
predicate decides it for both:

* **A member start** is an offset where a member decodes `VALID_OUT` bytes (or to its end, or to the file's
  end) before any error, its input fed in fixed slices counted from its own first byte (so the outcome is a
  function of the bytes alone). `next_start` searches for the first such offset at or after a position.
* **Read front to back** (`Chain`), the bytes after a member's end are the next member only if they pass the
  same test; a member that fails it is junk (its output is held back until it passes, so junk yields
  nothing), and the reader resyncs with `next_start`, exactly as a range that starts there would.

A stretch that fools the test (a complete gzip member forged inside a stored deflate block) can make a
search land inside a member; the reader of the range before checks that a search from its end finds the
member its own front-to-back reading reached, and fails loudly if not (`curate.io.readers.text`).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from typing import Any

from curate.io.members import CHUNK, ForwardOnly, _Compressed

VALID_OUT = 1 << 16  # decoded bytes a member start must yield without an error (or reach its end first)


class DecodeError(Exception):
    """The bytes fed to a member's decoder are not a valid member (a data error, a bad check)."""


class _Gzip:
    """One gzip member's decoder: output in pieces of at most CHUNK bytes (a bomb is never held whole)."""

    def __init__(self):
        self.d, self.eof, self.left = zlib.decompressobj(16 + zlib.MAX_WBITS), False, b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data:
            try:
                piece = self.d.decompress(data, CHUNK)
            except zlib.error as e:
                raise DecodeError(str(e)) from None
            if piece:
                yield piece
            if self.d.eof:
                self.eof, self.left = True, self.d.unused_data
                return
            data = self.d.unconsumed_tail


class _Zstd:
    """One zstd frame's decoder (a skippable frame decodes to nothing). zstd's decoder has no output cap, so
    it is fed `Codec.slice` (256) bytes at a time: at most 8 MiB out per call."""

    def __init__(self):
        import zstandard

        self.d, self.error = zstandard.ZstdDecompressor().decompressobj(), zstandard.ZstdError
        self.eof, self.left = False, b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            piece = self.d.decompress(data)
        except self.error as e:
            raise DecodeError(str(e)) from None
        if piece:
            yield piece
        if self.d.eof:
            self.eof, self.left = True, self.d.unused_data


class Codec:
    """How members of one format begin (`pattern`, `width` bytes long) and are decoded (`decoder`, fed
    `slice` compressed bytes at a time)."""

    def __init__(self, name: str, pattern: bytes, width: int, decoder: type, slice_: int):
        self.name, self.pattern, self.width = name, re.compile(pattern), width
        self.decoder, self.slice = decoder, slice_


GZIP = Codec("gzip member", rb"\x1f\x8b\x08", 3, _Gzip, 8 << 10)
ZSTD = Codec("zstd frame", rb"\x28\xb5\x2f\xfd|[\x50-\x5f]\x2a\x4d\x18", 4, _Zstd, 256)


def codec_for(kind: Any) -> Codec | None:
    """The codec of a file of `kind` (`curate.io.kinds.Kind`: content first, then the name), None for a file
    that is neither gzip nor zstd."""
    return {"gzip": GZIP, "zstd": ZSTD}.get(kind.compression)


def is_start(f: Any, at: int, codec: Codec) -> bool:
    """Whether a member starts at byte `at` of the seekable file `f` (see the module: `VALID_OUT` bytes decoded,
    or the member's end or the file's end reached, without an error)."""
    f.seek(at)
    dec, out = codec.decoder(), 0
    while out < VALID_OUT and not dec.eof:
        data = _read_full(f, codec.slice)
        if not data:
            return True  # the file ends inside it: a truncated member is still one (counted as such when read)
        try:
            for piece in dec.feed(data):
                out += len(piece)
                if out >= VALID_OUT:
                    return True
        except DecodeError:
            return False
    return True


def _read_full(f: Any, n: int) -> bytes:
    """`n` bytes of `f` (fewer only at its end): the slices fed to a decoder must not depend on how reads fall."""
    data = f.read(n)
    while len(data) < n and (more := f.read(n - len(data))):
        data += more
    return data


def next_start(f: Any, pos: int, codec: Codec, limit: int | None = None) -> int | None:
    """The first member start at or after byte `pos` of the seekable file `f`, searching at most `limit` bytes
    (None: to the end); None if there is none."""
    base, carry = pos, b""
    while limit is None or base - pos < limit:
        f.seek(base + len(carry))
        chunk = f.read(CHUNK)
        buf = carry + chunk
        for m in codec.pattern.finditer(buf):
            at = base + m.start()
            if limit is not None and at - pos >= limit:
                return None
            if is_start(f, at, codec):
                return at
        if not chunk:
            return None
        cut = max(0, len(buf) - (codec.width - 1))
        base, carry = base + cut, buf[cut:]
    return None


class Chain(ForwardOnly):
    """The decoded bytes of the members read front to back from a member start `start` of the seekable file
    `f`, up to the first damage: `ended` then says why it stopped, as (what, compressed offset):

    * ("eof", None): the file ended after a whole member;
    * ("damage", m): member `m` failed after its first `VALID_OUT` bytes (they and what followed were given);
    * ("truncated", m): the file ended inside member `m` (everything it decoded was given);
    * ("junk", j): the bytes at `j` (after a member, or at `start`) are no member start; nothing of them given.

    `starts` lists every member given, as (decoded offset, compressed offset), for `member_at`.
    """

    def __init__(self, f: Any, start: int, codec: Codec):
        if start:  # a whole file is read front to back: a stream that cannot seek reads too
            f.seek(start)
        self.src, self.codec, self.start = _Compressed(f, start), codec, start
        self.starts: list[tuple[int, int]] = []
        self.ended: tuple[str, int | None] | None = None
        self.given = 0  # decoded bytes given so far
        self.pending, self.pieces = b"", self._decode()

    def readinto(self, buf: Any) -> int:
        while not self.pending:
            piece = next(self.pieces, None)
            if piece is None:
                return 0
            self.pending = piece
        n = min(len(buf), len(self.pending))
        buf[:n], self.pending = self.pending[:n], self.pending[n:]
        self.pos += n
        return n

    def member_at(self, q: int) -> tuple[int, int]:
        """The member that gave decoded byte `q` (counted from `start`): (its decoded offset, its compressed
        offset). A member that gave nothing is never the answer: the one after it gave the byte."""
        lo, hi = 0, len(self.starts)
        while lo < hi:  # the last member whose decoded offset is <= q
            mid = (lo + hi) // 2
            if self.starts[mid][0] <= q:
                lo = mid + 1
            else:
                hi = mid
        return self.starts[max(lo - 1, 0)]

    def forget_before(self, q: int) -> None:
        """Drop the members before the one that gave byte `q` (bounds memory over a file of many members)."""
        if len(self.starts) > 1024:
            keep = self.member_at(q)
            self.starts = self.starts[self.starts.index(keep):]

    def _decode(self) -> Iterator[bytes]:
        while self.src.fill(1):
            at = self.src.offset
            self.starts.append((self.given, at))
            outcome = yield from self._member(at)
            if outcome is not None:
                self.ended = outcome
                return
        self.ended = ("eof", None)

    def _member(self, at: int) -> Iterator[bytes]:
        """Give one member's bytes (the first `VALID_OUT` held back until it proves a member); None when it
        ended cleanly, else why the chain stops."""
        dec, out, held = self.codec.decoder(), 0, []
        while not dec.eof:
            self.src.fill(self.codec.slice)
            data = self.src.take(self.codec.slice)
            if not data:
                yield from self._give(held)
                return ("truncated", at)
            try:
                for piece in dec.feed(data):
                    out += len(piece)
                    if held is None:
                        self.given += len(piece)
                        yield piece
                        continue
                    held.append(piece)
                    if out >= VALID_OUT:  # proved a member (as `is_start` stops here): give what was held
                        yield from self._give(held)
                        held = None
            except DecodeError:
                if held is not None:
                    self.starts.pop()  # not a member: junk, counted by the reader (never a member's bytes)
                    return ("junk", at)
                return ("damage", at)
        yield from self._give(held)  # a member shorter than VALID_OUT, ended without an error
        self.src.push_back(dec.left)
        return None

    def _give(self, held: list[bytes] | None) -> Iterator[bytes]:
        for piece in held or ():
            self.given += len(piece)
            yield piece


def all_zero(f: Any, a: int, b: int | None) -> bool:
    """Whether bytes [a, b) of `f` (b None: to the end) are all zero: gzip's padding after the last member,
    which is no damage."""
    f.seek(a)
    while b is None or a < b:
        chunk = f.read(CHUNK if b is None else min(CHUNK, b - a))
        if not chunk:
            return True
        if chunk.count(0) != len(chunk):
            return False
        a += len(chunk)
    return True
