"""WARC and WET readers: warcio (`Warc`) and FastWARC (`FastWarc`), each record isolated from the next."""

from __future__ import annotations

import contextlib
import io
import zlib
from collections.abc import Callable, Generator, Iterator
from typing import Any

from curate.core.document import Document, make_id
from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.io import fs, kinds
from curate.io.members import CHUNK, BadMember, MemberStarts, Resyncing, Tracked, next_member
from curate.io.readers.base import Reader, figure, note, parse_date, repair_text
from curate.io.readers.charsets import decode_html
from curate.io.readers.framing import Framed, next_record
from curate.io.splits import Split

_HTML_TYPES = ("text/html", "application/xhtml+xml")
RAW_FACTOR = 4  # a record's content may be this many times `max_html_bytes` before decoding: no page shrinks 4x


class _FileState:
    """What one WARC file's read has seen: WARC records, and the stats as they were before it began."""

    def __init__(self, stats: StepStats, raw: Tracked, key: str):
        self.records, self.raw, self.key = 0, raw, key
        self.kind = kinds.Kind("warc", "")  # what `kinds.kind_of` decides once the file is open
        self.before = (stats.docs_in, stats.dropped.copy(), stats.dropped_chars.copy())

    def check_io(self) -> None:
        """Re-raise an error of the file itself, whatever a library turned it into: it is no bad data."""
        if self.raw.io_error is not None:
            raise self.raw.io_error

    def forget(self, stats: StepStats) -> None:
        stats.docs_in, stats.dropped, stats.dropped_chars = self.before[0], self.before[1], self.before[2]


class Warc(Reader):
    """WARC/WET reader (warcio): HTML `response` records and WET `conversion` records.

    Request, metadata, revisit and warcinfo records and non-HTML responses are skipped with a count.
    A `.warc.gz` is read gzip member by member (`curate.io.members`): a damaged member costs its own
    record (`read:bad_gzip`), a record whose header does not parse costs itself (`read:bad_header`),
    an exception on one record costs that record (`read:bad_record`), and reading goes on with the
    next member. A file gzipped as one single stream is read whole (figure `read:single_gzip_stream`);
    if it breaks, the rest of it is one `read:corrupt_stream`. A document is only yielded once the
    gzip CRC of its member has checked out.

    warcio (FastWARC in `FastWarc`) only frames records, over `Framed`, which bounds each header block
    (`read:header_too_long`) and passes over bytes that start no record (`read:bad_header`, reading
    goes on at the next `WARC/` line); `_build` makes the document, the same for both readers: content
    over `RAW_FACTOR * max_html_bytes` is not read, HTTP heads are split by `_split_http`, and bodies
    decoded by `_http_payload` with an output cap of `max_html_bytes` (`read:too_large`).

    Ids are unique per run: `blake2b(source, file key, record position)` (see `Reader.read`); the
    WARC-Record-ID is kept in `metadata.warc_record_id`.
    """

    def __init__(self, source: str = "web", max_html_bytes: int = 5_000_000):
        super().__init__(source)
        self.max_html_bytes = max_html_bytes

    def read(self, path: str, stats: StepStats, key: str | None = None) -> Iterator[Document]:
        if self._empty(path, stats):
            return
        with self._open(path) as f:
            state = _FileState(stats, Tracked(f), key or path)
            try:
                state.kind = kinds.kind_of(path, state.raw)
                yield from self._stream(io.BufferedReader(state.raw, CHUNK), path, stats, state)
            except Exception:
                state.check_io()
                raise
        if state.records == 0:  # nothing in it was a WARC record: one count for the file, whatever it held
            state.forget(stats)
            self.skip(stats, "not_warc")
            note(stats, path, "not a WARC file (ARC is not supported)")

    def _open(self, path: str) -> Any:
        """The file's bytes (readers.CommonCrawl reads them by retried range requests instead)."""
        return fs.open(path, "rb")

    def read_split(self, split: Split, stats: StepStats) -> Iterator[Document]:
        """A byte range of a `.warc.gz`: the records of the gzip members that start in [start, end), found as
        `Resyncing` finds them (`members.next_member`: a member that decompresses to `WARC/`). Ids come from
        the member's offset in the file, so they do not depend on the split. An uncompressed WARC: the records
        that start in [start, end) (`_plain_range`)."""
        if split.whole or split.records:
            return super().read_split(split, stats)
        kind = kinds.kind_of(split.url)  # the planner's answer: content first, then the name
        if kind.gzip_stream:
            raise UsageError(f"{split.url}: its gzip members do not start WARC records (bgzip blocks, or one "
                             "stream cut into pieces): it is read whole; run it without --tasks / --task-bytes")
        if kind.compression != "gzip":
            return self._plain_range(split, stats)
        return self._range(split, stats)

    def _plain_range(self, split: Split, stats: StepStats) -> Iterator[Document]:
        """The records of an uncompressed WARC that start in [start, end): the range starts at the first record
        start at or after `start` (`framing.next_record`), reads records front to back by their Content-Length
        (as a whole file is read) and stops at the first that starts at or after `end`. A record start cannot be
        told from a WARC record stored inside a record's content, so the range then checks that a search from
        `end` finds that same record: if not, the task fails in one line instead of reading a record twice."""
        if split.start == 0 and self._empty(split.url, stats):
            return
        size = fs.size(split.url)
        with self._open(split.url) as f:
            state = _FileState(stats, Tracked(f), split.key)
            try:
                at = reached = 0 if split.start == 0 else next_record(state.raw, split.start, size)
                if at is not None and (split.end is None or at < split.end):
                    state.raw.seek(at)
                    reached = yield from self._member(io.BufferedReader(state.raw, CHUNK), 0, split.url, stats,
                                                      state, plain=True, base=at, end=split.end)
                if split.end is not None and (found := next_record(state.raw, split.end, size)) != reached:
                    raise UsageError(f"{split.url}: the records read before byte {split.end} reach the next one at "
                                     f"byte {reached}, but a search from byte {split.end} finds one at byte {found} "
                                     "(a WARC record stored inside a record): this file cannot be split there; run "
                                     "it without --tasks / --task-bytes")
            except UsageError:
                raise
            except Exception:
                state.check_io()
                raise
        if state.records == 0 and split.start == 0:
            state.forget(stats)
            self.skip(stats, "not_warc")
            note(stats, split.url, "not a WARC file (ARC is not supported)")

    def _range(self, split: Split, stats: StepStats) -> Iterator[Document]:
        if split.start == 0 and self._empty(split.url, stats):
            return
        with self._open(split.url) as f:
            state = _FileState(stats, Tracked(f), split.key)
            try:
                reach = None if split.end is None else split.end - split.start
                at = 0 if split.start == 0 else next_member(state.raw, split.start, limit=reach)
                if at is not None:
                    yield from self._from(at, split.end, split.url, stats, state)
            except Exception:
                state.check_io()
                raise
        if state.records == 0 and split.start == 0:  # as `read`: counted once, by the range that starts the file
            state.forget(stats)
            self.skip(stats, "not_warc")
            note(stats, split.url, "not a WARC file (ARC is not supported)")

    def _from(self, at: int, end: int | None, path: str, stats: StepStats, state: _FileState) -> Iterator[Document]:
        """The records of the gzip members from byte `at` (a member start) to the first at or after `end`."""
        state.raw.seek(at)
        yield from self._members(io.BufferedReader(state.raw, CHUNK), at, path, stats, state, end=end)

    def _stream(self, f: io.BufferedReader, path: str, stats: StepStats, state: _FileState) -> Iterator[Document]:
        """A whole file: by its content (`state.kind`), uncompressed, gzip members that start records (one
        by one), or gzip members that do not (bgzip blocks: one stream, as a single-member file is read)."""
        if state.kind.gzip_stream:
            yield from self._one_stream(f, path, stats, state)
            return
        if state.kind.compression != "gzip":
            yield from self._member(f, 0, path, stats, state, plain=True)
            return
        yield from self._members(f, 0, path, stats, state)

    def _one_stream(self, f: io.BufferedReader, path: str, stats: StepStats, state: _FileState) -> Iterator[Document]:
        """A gzip file whose members are blocks of one stream, read as one member: each record placed by its
        offset in the decoded stream, as a single-member file's are; damage ends it (`read:corrupt_stream`)."""
        import gzip

        with gzip.GzipFile(fileobj=f, mode="rb") as g:
            yield from self._member(io.BufferedReader(g, CHUNK), 0, path, stats, state, plain=True)
        figure(stats, "single_gzip_stream")

    def _members(self, f: Any, offset: int, path: str, stats: StepStats, state: _FileState,
                 end: int | None = None) -> Iterator[Document]:
        """The records of the gzip members of `f`, which stands at byte `offset` of the file, up to the first
        member that starts at or after byte `end`."""
        members = Resyncing(f, offset=offset)
        n_members = 0
        for m in members:
            if end is not None and m.start >= end:
                break
            n_members += 1
            try:
                yield from self._member(m, m.start, path, stats, state)
            except BadMember as e:
                note(stats, path, e)
                members.resync(m.start)
        if n_members == 1 and state.records > 1 and offset == 0:
            figure(stats, "single_gzip_stream")

    def _member(self, m: Any, start: int, path: str, stats: StepStats, state: _FileState,
                plain: bool = False, base: int = 0, end: int | None = None) -> Generator[Document, None, int | None]:
        """The records of one gzip member (or of an uncompressed file, from byte `base`, up to the first record
        that starts at or after `end`: its offset is returned), each counted once.

        The document of a record is held back until the next record parses or the member ends with a
        good CRC, so that no document from a damaged member gets out. A record of an uncompressed file is
        placed by where `Framed` found its header in the file (`0+offset`), so a range gives it the same id.
        """
        pending, n, counted, framed, reached = None, 0, stats.docs_in, Framed(m, base), None
        try:
            for rec, offset in self._records(framed):
                if pending is not None:
                    yield pending
                    pending = None
                if plain and n < len(framed.starts):
                    offset = (lambda at=framed.starts[n]: at)  # noqa: E731 - where its header is in the file
                    if end is not None and framed.starts[n] >= end:  # the next range's first record
                        reached = framed.starts[n]
                        break
                n += 1
                state.records += 1
                pending = self._guarded(lambda rec=rec: self._record(rec, stats), path, start, offset, stats, state)
            if not plain:
                m.drain()
                if m.truncated:  # the file ends inside this member: its CRC was never checked
                    self._lost(stats, pending, counted, "truncated_record")
                    pending = None
        except BadMember:
            self._lost(stats, pending, counted, "bad_gzip")
            raise
        except Exception as e:
            state.check_io()
            if plain and (base or end is not None):  # a range cannot know what a reading from the start would do
                raise UsageError(f"{path}: the WARC parser stopped inside a byte range ({type(e).__name__}: {e}): "
                                 "this file cannot be split; run it without --tasks / --task-bytes") from None
            if pending is not None:
                yield pending
            note(stats, path, e)
            if not plain:
                with contextlib.suppress(BadMember):
                    framed.drain()
            truncated = getattr(m, "truncated", False)
            if plain or n > 1 or framed.records > max(n, 1):  # more records: what follows the break is lost
                self.skip(stats, "truncated_record" if truncated else "corrupt_stream")
                figure(stats, "records_before_corrupt_stream", n)
            elif stats.docs_in == counted:
                self.skip(stats, "truncated_record" if truncated else "bad_header")
            self._passed_over(framed, stats, state)
            return None
        if pending is not None:
            yield pending
        self._passed_over(framed, stats, state, reached)
        if stats.docs_in == counted and not plain and m.pos:  # bytes that held no record FastWARC could frame
            self.skip(stats, "truncated_record" if m.truncated else "bad_header")
        return reached

    def _passed_over(self, framed: Framed, stats: StepStats, state: _FileState, before: int | None = None) -> None:
        """Count what `Framed` kept from the parser: an oversized header is a WARC record (a file of only
        those is no `read:not_warc`); other bytes that start no record are one `read:bad_header` a run. A range
        counts the runs before the next range's first record (`before`): Framed reads ahead of the parser."""
        for at, reason in framed.runs:
            if before is None or at < before:
                state.records += reason == "header_too_long"
                self.skip(stats, reason)

    def _lost(self, stats: StepStats, pending: Document | None, counted: int, rule: str) -> None:
        """A damaged member: its held-back document becomes a drop, or it is counted once if nothing was."""
        if pending is not None:
            stats.drop(f"read:{rule}")
        elif stats.docs_in == counted:
            self.skip(stats, rule)

    def _records(self, stream: Any) -> Iterator[tuple[Any, Callable[[], int]]]:
        """(record, its offset in the stream, to ask once its content is read: warcio's call consumes it)."""
        from warcio.archiveiterator import ArchiveIterator

        records = ArchiveIterator(stream, no_record_parse=True)  # HTTP heads are split by `_split_http`
        for rec in records:
            if rec.format != "warc":  # warcio falls back to ARC parsing on any text
                raise ValueError("not a WARC record (ARC is not supported)")
            yield rec, records.get_record_offset

    def _guarded(self, build: Callable[[], Document | None], path: str, start: int, offset: Callable[[], int],
                 stats: StepStats, state: _FileState) -> Document | None:
        """`build()` (the document of one record), with an exception on it counted as `read:bad_record`."""
        counted = stats.docs_in
        try:
            doc = build()
            if doc is not None:
                self._identify(doc, state.key, f"{start}+{offset()}", stats)
            return doc
        except BadMember:
            raise
        except Exception as e:
            state.check_io()
            note(stats, path, e)
            if stats.docs_in == counted:
                self.skip(stats, "bad_record")
            else:
                stats.drop("read:bad_record")
            return None

    def _identify(self, doc: Document, key: str, position: str, stats: StepStats) -> None:
        rid = doc.metadata.get("warc_record_id")
        doc.id = make_id(self.source, f"{key}\x00{position}")
        if doc.url is not None and (fixed := repair_text(doc.url)) is not None:
            doc.url = fixed
            figure(stats, "text_repaired")
        if rid is not None and repair_text(rid) is not None:
            doc.metadata["warc_record_id"] = repair_text(rid)

    def _empty(self, path: str, stats: StepStats) -> bool:
        if fs.size(path) == 0:
            self.skip(stats, "empty_file")
            note(stats, path, "empty file")
            return True
        return False

    def _record(self, rec: Any, stats: StepStats) -> Document | None:
        h = rec.rec_headers
        return self._build(h.get_header, rec.rec_type, rec.length or 0, rec.raw_stream.read, None, stats)

    def _build(self, header: Callable[[str], str | None], kind: str | None, length: int, read: Callable[[], bytes],
               block: bytes | None, stats: StepStats) -> Document | None:
        """The document of one record, the same for both readers: `header(name)` gives a WARC header,
        `length` is its Content-Length, `block` its content if already read, else `read()` reads it.

        The content is read only if it is at most `RAW_FACTOR * max_html_bytes`, and decoded (HTTP
        head split, chunked and Content-Encoding undone) with an output cap of `max_html_bytes`."""
        if header("Content-Length") is None:  # what `Framed` passes over, for FastWARC's native reading
            self.skip(stats, "bad_header")
            return None
        if kind not in ("response", "conversion"):
            self.skip(stats, kind or "unknown_record")
            return None
        if kind == "response" and (length == 0 or not _target_uri(header).startswith(("http:", "https:"))):
            self.skip(stats, "no_http_headers")  # warcio's rule for HTTP records
            return None
        if length > RAW_FACTOR * self.max_html_bytes:  # bound memory before reading
            self.skip(stats, "too_large")
            return None
        raw = read() if block is None else block
        if len(raw) < length:  # the file ends inside this record
            self.skip(stats, "truncated_record")
            return None
        if kind == "conversion":
            stats.docs_in += 1
            return self._doc(header, raw.decode("utf-8", errors="replace"))
        http = _split_http(raw)
        if http is None:
            self.skip(stats, "no_http_headers")
            return None
        status, h, payload = http
        ctype = h.get("content-type", "")
        if not any(t in ctype.lower() for t in _HTML_TYPES):
            self.skip(stats, "not_html")
            return None
        body = _http_payload(payload, h.get("transfer-encoding", ""), h.get("content-encoding", ""), self.max_html_bytes)
        if len(body) > self.max_html_bytes:
            self.skip(stats, "too_large")
            return None
        html, charset = decode_html(body, ctype, stats)
        stats.docs_in += 1
        doc = self._doc(header, "")
        doc.html = html
        doc.metadata.update({"http_status": status, "charset": charset})
        return doc

    def _doc(self, header: Callable[[str], str | None], text: str) -> Document:
        """The document of a record, its id set by `_identify` from where the record lies."""
        meta = {"warc_record_id": rid} if (rid := header("WARC-Record-ID")) else {}
        date = parse_date(header("WARC-Date"))
        return Document(id="", text=text, source=self.source, url=_target_uri(header) or None, date=date, metadata=meta)


def _split_http(block: bytes) -> tuple[str, dict[str, str], bytes] | None:
    """Split an HTTP response block into status code, headers (first value per lowercased name) and body.

    Accepts bare-LF line ends, which old crawlers (ClueWeb09's Nutch) wrote and FastWARC's own
    parser rejects; warcio accepts them, so we must too.
    """
    ends = [(i, len(sep)) for sep in (b"\r\n\r\n", b"\n\n") if (i := block.find(sep)) >= 0]
    if not ends:
        return None
    cut, width = min(ends)
    lines = block[:cut].decode("latin-1").splitlines()
    if not lines or not lines[0].startswith("HTTP/"):
        return None
    status = (lines[0].split(None, 2) + [""])[1]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers.setdefault(name.strip().lower(), value.strip())
    return status, headers, block[cut + width :]


def _dechunk(raw: bytes) -> bytes:
    """Undo HTTP chunked transfer encoding; raises ValueError on a malformed chunk header."""
    out, pos = bytearray(), 0
    while pos < len(raw):
        end = raw.index(b"\r\n", pos)
        size = int(raw[pos:end].split(b";")[0].strip() or b"x", 16)
        if size == 0:
            break
        out += raw[end + 2 : end + 2 + size]
        pos = end + 2 + size + 2
    return bytes(out)


def _http_payload(raw: bytes, transfer: str, encoding: str, limit: int) -> bytes:
    """Decode an HTTP body the way warcio's content_stream did, falling back to the raw bytes on error.

    Crawlers often record `Transfer-Encoding: chunked` over a body that was stored de-chunked, or a
    `Content-Encoding` the stored body no longer has; warcio then quietly keeps the raw bytes, and
    so must we for both readers to yield the same documents. Decompression stops at `limit + 1`
    bytes, so a compression bomb costs at most that much memory.
    """
    if transfer == "chunked":
        with contextlib.suppress(ValueError):
            raw = _dechunk(raw)
    enc = encoding.lower()
    if enc in ("gzip", "x-gzip", "deflate"):
        for wbits in ((16 + zlib.MAX_WBITS,) if "gzip" in enc else (zlib.MAX_WBITS, -zlib.MAX_WBITS)):
            try:
                return zlib.decompressobj(wbits).decompress(raw, limit + 1)
            except zlib.error:
                continue
    elif enc == "br" and (decoded := _unbrotli(raw, limit)) is not None:
        return decoded
    return raw


def _unbrotli(raw: bytes, limit: int) -> bytes | None:
    """Brotli-decoded `raw`, stopping past `limit` bytes (a 657-byte bomb decodes to 4 GB), with brotli's
    streaming `Decompressor.process(data, output_buffer_limit=)` (brotli >= 1.2); None where it does not
    decode (a damaged or cut stream, as `brotli.decompress` would raise) or brotli is not installed."""
    try:
        import brotli
    except ImportError:
        return None
    dec = brotli.Decompressor()
    try:
        out = dec.process(raw, output_buffer_limit=limit + 1)
    except brotli.error:
        return None
    return out if len(out) > limit or dec.is_finished() else None


class FastWarc(Warc):
    """WARC/WET reader on FastWARC (extra `fast`): the same documents, ids and skip reasons as `Warc`.

    FastWARC only frames records here; documents are made by `Warc._build`, whose `_split_http` and
    `_http_payload` keep warcio's leniency (bare-LF headers, mislabelled chunked bodies) that FastWARC's
    own HTTP parsing lacks. Tested for equality with `Warc` on the real crawls and in the fuzz test.

    A seekable `.warc.gz` is read natively (FastWARC's own gzip; members in Python take ~1.6x the CPU
    time, docs/benchmarks.md) while every record has a gzip member of its own; from the first sign of trouble (an error, a record
    that does not start the next member, the file's last member) it is read member by member from the
    first member not yet passed on (`_native`), so the same records come out with the same counts.
    """

    def _stream(self, f: io.BufferedReader, path: str, stats: StepStats, state: _FileState) -> Iterator[Document]:
        if state.kind.compression != "gzip" or state.kind.gzip_stream or not state.raw.seekable():
            yield from super()._stream(f, path, stats, state)
            return
        state.raw.seek(0)
        resume = yield from self._native(MemberStarts(state.raw), path, stats, state)
        state.raw.seek(resume)
        yield from self._members(io.BufferedReader(state.raw, CHUNK), resume, path, stats, state)

    def _from(self, at: int, end: int | None, path: str, stats: StepStats, state: _FileState) -> Iterator[Document]:
        """A range's members from byte `at` (a member start): natively, as `_stream` reads a whole file, the
        member reader taking over from the first member not passed on."""
        if not state.raw.seekable():
            yield from super()._from(at, end, path, stats, state)
            return
        state.raw.seek(at)
        src = MemberStarts(state.raw)
        src.pos = at  # offsets in the file, as the member reader gives them
        resume = yield from self._native(src, path, stats, state, base=at, end=end)
        if resume is not None:
            state.raw.seek(resume)
            yield from self._members(io.BufferedReader(state.raw, CHUNK), resume, path, stats, state, end=end)

    def _native(self, src: MemberStarts, path: str, stats: StepStats, state: _FileState, base: int = 0,
                end: int | None = None) -> Generator[Document, None, int | None]:
        """Records read natively, each passed on once FastWARC has begun the next member: its gzip has then
        checked the CRC and length of the one before (it raises on a bad one; tests/test_bad_input.py). Returns the offset of the first member
        not passed on, where the member reader takes over: the native reader cannot tell a file cut inside
        its last member from a whole one, and stops for good at the first damaged member. `src` stands at
        byte `base` of the file; a range (`end`) ends at the first member at or after `end` (None returned:
        every record of the range was passed on)."""
        from fastwarc.warc import ArchiveIterator

        held, start = None, base  # the last record read, not passed on yet, and the offset of its member
        with contextlib.suppress(Exception):  # a damaged member (FastWARC's OSError), a header it rejects
            for rec in ArchiveIterator(src, parse_http=False, auto_decode="none"):
                pos = rec.stream_pos  # FastWARC counts from the stream's tell(): `base` for a range (`_from`)
                if not src.follows(start if held else base - 1, pos):  # not the next member: a skip, or shared members
                    break
                block = self._block(rec) if end is None or pos < end else b""  # read now: gone once the next is read
                if held is not None:
                    state.records += 1
                    doc = self._guarded(lambda h=held: self._fast_record(*h, stats), path, start, lambda: 0, stats, state)
                    if doc is not None:
                        yield doc
                if end is not None and pos >= end:  # the next range's first member: its CRC checked the last one
                    state.check_io()
                    return None
                held, start = (rec, block), pos
        state.check_io()  # an error of the file itself, whether FastWARC raised it or ended quietly on it
        return start

    def _block(self, rec: Any) -> bytes:
        """The content `_fast_record` will need of a record (b"" where it reads none, as for a page too large)."""
        kind = rec.headers.get("WARC-Type")
        if kind in ("conversion", "response") and rec.content_length <= RAW_FACTOR * self.max_html_bytes:
            return rec.reader.read()
        return b""

    def _records(self, stream: Any) -> Iterator[tuple[Any, int]]:
        from fastwarc.warc import ArchiveIterator

        for rec in ArchiveIterator(stream, parse_http=False, auto_decode="none"):
            pos = rec.stream_pos
            yield rec, lambda pos=pos: pos

    def _record(self, rec: Any, stats: StepStats) -> Document | None:
        return self._fast_record(rec, None, stats)

    def _fast_record(self, rec: Any, block: bytes | None, stats: StepStats) -> Document | None:
        """The document of a FastWARC record; `block`: its content, if already read (else read here)."""
        h = rec.headers
        return self._build(h.get, h.get("WARC-Type"), rec.content_length, lambda: rec.reader.read(), block, stats)


def _target_uri(header: Callable[[str], str | None]) -> str:
    """WARC-Target-URI without the angle brackets that wget 1.19 wrapped it in (warcio strips them too)."""
    uri = header("WARC-Target-URI") or ""
    return uri[1:-1] if uri.startswith("<") and uri.endswith(">") else uri


def fastest_warc(**kwargs: Any) -> Warc:
    """`FastWarc` where FastWARC is installed (extra `fast`), else `Warc`: the two give the same documents, ids
    and counts (tests/test_fastwarc_default.py), and FastWARC reads about 2x faster (benchmarks/pipeline.py),
    so the default web pipeline reads with the faster one without making FastWARC a requirement."""
    import importlib.util

    cls = FastWarc if importlib.util.find_spec("fastwarc") is not None else Warc
    return cls(**kwargs)
