"""What a file is: its format (WARC, JSONL, Parquet, other text) and compression, decided in one place from
its name *and* its first bytes, for the planner (`curate.io.plan`) and every reader alike.

Two places answering this differently lost data silently (issue 42): the planner lowercased a name before
choosing how to cut a file, the WARC reader tested `.gz` case-sensitively, so a gzip WARC named `.WARC.GZ`
or `.warc.gzip` read whole but, split, had every range read as uncompressed WARC. Here the content decides
(gzip, zstd, bz2 and xz have magic bytes; WARC, Parquet and JSON show in their first decoded bytes); the
name is the fallback where the content says nothing (an empty file, text). A name and content that
disagree get one line on stderr, once per file and process.

A gzip WARC is also told apart by how its members frame the records (`records_in_members`): one member per
record (the WARC standard's recommendation; read and split member by member), or members that do not follow
records (bgzip's blocks of at most 64 KiB with the BGZF extra field, any `cat` of pieces): those are one
stream, read whole (`curate.io.readers.warc`) and never cut (`curate.io.plan`).
"""

from __future__ import annotations

import re
import sys
import zlib
from dataclasses import dataclass
from typing import Any

HEAD = 1 << 16  # bytes read from the start of a file to decide its kind (a bgzip block is at most 64 KiB)
DECODED = 1 << 20  # at most this much of the head is decoded: a first member larger is taken to start records

COMPRESSIONS = {".gz": "gzip", ".gzip": "gzip", ".bgz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2",
                ".xz": "xz"}
FORMATS = {".warc": "warc", ".wet": "warc", ".wat": "warc", ".jsonl": "jsonl", ".json": "jsonl",
           ".ndjson": "jsonl", ".parquet": "parquet", ".txt": "text"}
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"))
_warned: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Kind:
    """`format`: "warc", "jsonl", "parquet", "text" or "" (unknown); `compression`: "gzip", "zstd", "bz2", "xz"
    or "" (none); `records_in_members`: for a gzip WARC, whether each gzip member starts a record (False: the
    members are blocks of one stream, as bgzip writes them); `bgzf`: the first member has BGZF's extra field."""

    format: str
    compression: str
    records_in_members: bool = True
    bgzf: bool = False

    @property
    def gzip_stream(self) -> bool:
        """A gzip WARC whose members do not start records: read as one stream, never cut."""
        return self.format == "warc" and self.compression == "gzip" and not self.records_in_members


def name_kind(url: str) -> Kind:
    """The kind a name says, case-insensitively, a URL's query and fragment aside: `X.WARC.GZ` is gzip WARC."""
    name = url.split("?", 1)[0].split("#", 1)[0].rsplit("/", 1)[-1].lower()
    stem, _, last = name.rpartition(".")
    compression = COMPRESSIONS.get(f".{last}", "") if stem else ""
    if compression:
        name = stem
    stem, _, last = name.rpartition(".")
    return Kind(FORMATS.get(f".{last}", "") if stem else "", compression)


def kind_of(url: str, f: Any = None) -> Kind:
    """The kind of the file at `url`, from its first `HEAD` bytes (read from `f` where given, a seekable file at
    any position, which is left where it was; else opened here) and its name; disagreements said once."""
    head = _head(url, f)
    named = name_kind(url)
    if not head:
        return named
    kind = content_kind(head, named)
    if (named.format or named.compression) and named.compression != kind.compression:
        _warn(url, "compression", named.compression or "none", kind.compression or "none")
    if named.format not in ("", "text") and named.format != kind.format:
        _warn(url, "format", named.format, kind.format)
    return kind


def content_kind(head: bytes, named: Kind = Kind("", "")) -> Kind:
    """The kind the first bytes of a file show: a compression's magic bytes, or a format's first bytes (an
    uncompressed file); the name's answer where the content shows neither (damage before the first member)."""
    compression = next((c for magic, c in _MAGIC if head.startswith(magic)), "")
    text, aligned, bgzf = head, True, False
    if compression == "gzip":
        text, aligned, bgzf = _gzip_head(head)
    elif compression:
        text = b""
    shown = _format(text)
    if not compression and not shown:  # bytes that show nothing (junk before the first member): the name says
        compression = named.compression
    fmt = shown or named.format
    return Kind(fmt, compression, aligned if fmt == "warc" else True, bgzf)


def _format(text: bytes) -> str:
    if text.startswith(b"WARC/"):
        return "warc"
    if text.startswith(b"PAR1"):
        return "parquet"
    if text.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return "jsonl"
    return ""


def _gzip_head(head: bytes) -> tuple[bytes, bool, bool]:
    """(the first decoded bytes, whether gzip members start WARC records, whether the first member has BGZF's
    `BC` extra subfield). Members do not start records when the first member carries BGZF's field, or when it
    ends (within `head`) inside a record by the records' own Content-Lengths and the next member goes on with
    it; damage or a member larger than `head` leaves the answer at "they do" (read member by member, as
    before: damage costs its own records)."""
    bgzf = _has_bgzf(head)
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        text = d.decompress(head, DECODED)  # a bomb is never decoded past DECODED
    except zlib.error:
        return b"", True, bgzf
    if not text.startswith(b"WARC/"):
        return text[:4096], True, bgzf
    cut = d.eof and d.unused_data and _ends_inside_record(text) and _continues(d.unused_data)
    return text[:4096], not (bgzf or cut), bgzf


def _continues(rest: bytes) -> bool:
    """Whether the member that follows (its bytes from `rest`) goes on with a record rather than starting one:
    its first decoded bytes are not `WARC/`. A first record with a wrong Content-Length is no proof that members
    do not start records; the next member starting one is proof that they do. Damage: not known (False)."""
    try:
        nxt = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(rest, 5)
    except zlib.error:
        return False
    return len(nxt) == 5 and nxt != b"WARC/"


def _ends_inside_record(out: bytes) -> bool:
    """Whether decoded WARC bytes end inside a record, walking the records by their Content-Length (False where
    the bytes do not parse as records: not this function's to judge)."""
    pos = 0
    while pos < len(out):
        if not out.startswith(b"WARC/", pos):
            return False
        ends = [i for i in (out.find(b"\r\n\r\n", pos), out.find(b"\n\n", pos)) if i >= 0]
        if not ends:
            return True  # the header block runs past the member's end
        stop = min(ends)
        m = re.search(rb"(?im)^content-length:[ \t]*(\d+)", out[pos:stop])
        if not m:
            return False
        pos = stop + (4 if out.startswith(b"\r\n\r\n", stop) else 2) + int(m.group(1))
        if pos > len(out):
            return True
        while pos < len(out) and out[pos] in b"\r\n":
            pos += 1
    return False


def _has_bgzf(head: bytes) -> bool:
    """Whether a gzip header carries the BGZF extra subfield (`BC`, length 2), as the SAM/BAM spec sets it."""
    if len(head) < 12 or not head[3] & 4:
        return False
    xlen = int.from_bytes(head[10:12], "little")
    extra, at = head[12:12 + xlen], 0
    while at + 4 <= len(extra):
        sub, n = extra[at:at + 2], int.from_bytes(extra[at + 2:at + 4], "little")
        if sub == b"BC" and n == 2:
            return True
        at += 4 + n
    return False


def _head(url: str, f: Any) -> bytes:
    if f is not None and f.seekable():
        at = f.tell()
        try:
            f.seek(0)
            return _read_full(f, HEAD)
        finally:
            f.seek(at)
    from curate.io import fs

    with fs.open(url, "rb") as g:
        return _read_full(g, HEAD)


def _read_full(f: Any, n: int) -> bytes:
    out = b""
    while len(out) < n:
        piece = f.read(n - len(out))
        if not piece:
            break
        out += piece
    return out


def _warn(url: str, what: str, said: str, found: str) -> None:
    if (url, what) in _warned:
        return
    _warned.add((url, what))
    sys.stderr.write(f"warning: {url}: the name says {what} {said}, the content is {found}: read as {found}\n")
