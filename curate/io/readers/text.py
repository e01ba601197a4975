"""JSONL and Parquet readers: records of text, each bad line or row group counted, never the end of the file."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
from collections.abc import Iterator
from typing import Any

from curate.core.document import CORE_COLUMNS, SHARD_MARK, Document
from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.io import fs, kinds
from curate.io.batching import MAX_RECORD_BYTES, batch_rows
from curate.io.chain import Chain, Codec, all_zero, codec_for, next_start
from curate.io.members import CHUNK, Tracked
from curate.io.readers.base import Reader, figure, note, repair_deep, unique_id
from curate.io.readers.pages import largest_page
from curate.io.splits import Split, row_group_start

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_BOM = b"\xef\xbb\xbf"
ZSTD_SLICE = 256  # compressed bytes fed to zstd at once: at most 8 MiB out (zstd has no output cap)
STREAM_BUFFER = 1 << 20  # a Parquet column chunk is read 1 MiB at a time, never whole (pre-buffering reads it whole)
MAX_LINE_BYTES = 32 << 20  # a JSONL record: reading one costs ~25x its size in memory (bytes, str, objects)


@contextlib.contextmanager
def _open_bytes(raw: Tracked, compression: str) -> Iterator[io.BufferedIOBase]:
    """The decompressed bytes of an open plain, gzip or zstd file, closing every layer on exit: gzip and
    zstandard leave a file object they were handed open."""
    with contextlib.ExitStack() as stack:
        f: Any = io.BufferedReader(raw, CHUNK)
        if compression == "gzip":
            f = stack.enter_context(gzip.GzipFile(fileobj=f, mode="rb"))
        elif compression == "zstd":
            f = stack.enter_context(io.BufferedReader(_StrictZstd(f)))
        yield f


class _StrictZstd(io.RawIOBase):
    """Decompressed zstd frames that raise EOFError when the input ends inside a frame.

    zstandard's own reader returns a truncated file's prefix as if it were whole, which would turn a
    half-copied shard into silently missing documents instead of a counted `read:corrupt_stream`.
    Its `decompressobj` has no output cap, so it is fed `ZSTD_SLICE` compressed bytes at a time: one
    zstd block of at most 128 KiB can take 4 bytes (RLE), so a call gives at most 32768 x the slice.
    """

    def __init__(self, raw: Any):
        import zstandard

        self._new = zstandard.ZstdDecompressor().decompressobj
        self.raw, self.dec, self.pending, self.out = raw, self._new(), memoryview(b""), 0  # output, how far read
        self.chunk, self.at = memoryview(b""), 0  # compressed bytes read, and how far they were fed
        self.in_frame = False  # bytes of a frame were fed and its end not seen yet

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        while self.out >= len(self.pending):
            if self.at >= len(self.chunk):
                self.chunk, self.at = memoryview(self.raw.read(1 << 16)), 0
                if not self.chunk:
                    if self.in_frame:
                        raise EOFError("zstd input ends inside a frame (truncated file)")
                    return 0
            piece = self.chunk[self.at : self.at + ZSTD_SLICE]
            self.at += len(piece)
            self.pending, self.out = memoryview(self._feed(bytes(piece))), 0
        n = min(len(buf), len(self.pending) - self.out)
        buf[:n] = self.pending[self.out : self.out + n]
        self.out += n
        return n

    def _feed(self, chunk: bytes) -> bytes:
        out = []
        while chunk:
            out.append(self.dec.decompress(chunk))
            self.in_frame = not self.dec.eof
            chunk = b""
            if self.dec.eof:  # the frame is complete; more input is a concatenated frame
                chunk, self.dec = self.dec.unused_data, self._new()
        return b"".join(out)


class Jsonl(Reader):
    """JSON Lines (.jsonl, .jsonl.gz, .jsonl.zst), one record a line.

    Ids are unique per run: the record's own id + `#` + a digest of (source, file, byte offset of the line in
    the decompressed file) (`unique_id`), so they do not depend on how a run split the file (`read_split`);
    the own id field also stays in `metadata` under its own name, with every other field. A line that is not JSON (`read:bad_json`) or has no
    text (`read:no_text`) costs itself; a line that is not UTF-8 is decoded with U+FFFD and lone
    surrogates (`"\\ud800"`, which Arrow cannot write) are replaced by U+FFFD: figures
    `read:invalid_utf8` and `read:text_repaired`. A gzip member (zstd frame) that breaks, or is cut by
    the file's end, or junk between members, is one `read:corrupt_stream` (figure
    `read:records_before_corrupt_stream`) and reading resumes at the next member (`_read_chain`). A line over
    `max_line_bytes` is passed over without being held in memory (`read:too_large`). A UTF-8 byte-order
    mark at the start of the file is no part of the first record.
    """

    def __init__(self, source: str = "web", text_key: str = "text", id_key: str = "id", url_key: str = "url",
                 unique_ids: bool = True, max_line_bytes: int = MAX_LINE_BYTES):
        super().__init__(source)
        self.text_key, self.id_key, self.url_key = text_key, id_key, url_key
        self.unique_ids = unique_ids  # False: ids as given (a finished corpus read back, e.g. by `curate mix`)
        self.max_line_bytes = max_line_bytes

    def read(self, path: str, stats: StepStats, key: str | None = None) -> Iterator[Document]:
        return self._read(path, stats, key or path, 0, None)

    def read_split(self, split: Split, stats: StepStats) -> Iterator[Document]:
        """A byte range of the file. Uncompressed: the lines that begin in it, aligned to newlines (it starts after
        the first newline at or after byte `start - 1` and reads every line that begins before `end`), so the
        ranges of one file share out its lines exactly once. `.gz` / `.zst`: the lines of the members (frames)
        that start in it (`_read_chain`)."""
        if split.whole or split.records:
            return super().read_split(split, stats)
        return self._read(split.url, stats, split.key, split.start, split.end)

    def _read(self, path: str, stats: StepStats, key: str, start: int, end: int | None) -> Iterator[Document]:
        """The records of the lines that begin in [start, end) of the file; each document's id comes from the
        byte offset of its line, so it does not depend on where the file was cut."""
        with fs.open(path, "rb") as fh:  # one handle for the kind and the lines (an fsspec file for a URL)
            raw = Tracked(fh)
            kind = kinds.kind_of(path, raw)  # the planner's answer: content first, then the name
            codec = codec_for(kind)
            if codec is not None:
                yield from self._read_chain(raw, path, stats, key, codec, start, end)
            else:
                yield from self._read_plain(raw, kind.compression, path, stats, key, start, end)

    def _read_plain(self, raw: Tracked, compression: str, path: str, stats: StepStats, key: str, start: int,
                    end: int | None) -> Iterator[Document]:
        with _open_bytes(raw, compression) as f:
            pos, n, before = _align(f, start), 0, stats.docs_in
            try:
                for line, size in _lines(f, self.max_line_bytes):
                    if end is not None and pos >= end:
                        break
                    at, pos, n = pos, pos + size, n + 1
                    if line is None:
                        self.skip(stats, "too_large")
                        continue
                    if at == 0 and line.startswith(_BOM):
                        line = line[len(_BOM):]
                    if not line.strip():
                        continue
                    doc = self._parse(line, f"{key}@{at}", stats)
                    if doc is not None:
                        yield doc
            except Exception as e:  # the decompressor: truncated gzip or zstd, a bad CRC, not gzip at all
                if raw.io_error is not None:
                    raise raw.io_error from None
                figure(stats, "records_before_corrupt_stream", stats.docs_in - before)
                self.skip(stats, "corrupt_stream")
                note(stats, path, f"{type(e).__name__}: {e} (after {n} lines)")

    def _read_chain(self, f: Tracked, path: str, stats: StepStats, key: str, codec: Codec, start: int,
                    end: int | None) -> Iterator[Document]:
        """The lines of a `.gz` / `.zst` file that belong to [start, end): those that follow a newline decoded from
        a member (frame) that starts in the range (the file's first line: the range at byte 0). So a range starts
        at its first member start (`curate.io.chain.next_start`), passes over the line that runs into it, and
        reads on past `end` through the first newline of the next member to finish its last line.

        A line's id comes from (the compressed offset of the member its first byte was decoded from, the line's
        offset in that member's output), written `key@offset` in the first member (as for a file of one member)
        and `key@member+offset` after it: the same whatever the split. Damage ends the chain: a member that
        fails after its first 64 KiB, or is cut by the end of the file, is one `read:corrupt_stream` for the
        range it starts in; bytes that are no member (junk; zero padding is none) are one for the range of the
        member before them (at byte 0: the first range); the line they cut is lost, and reading resumes at the
        next member start, passing over its first line, as a range that starts there would. A range with an end
        checks that a search from it finds the member its own reading reached (`_check_next`)."""
        reached, searched = yield from self._chains(f, path, stats, key, codec, start, end)
        if end is not None and not searched:
            _check_next(f, path, codec, end, reached)

    def _chains(self, f: Tracked, path: str, stats: StepStats, key: str, codec: Codec, start: int,
                end: int | None) -> Iterator[Document]:
        """Read chain after chain (a new one after each damage) while they start in the range; returns the
        first member start at or after `end` the reading reached (None: the file's end) and whether it came
        from a search that began at or before `end` (then no check is needed)."""
        def owned(c: int) -> bool:
            return start <= c and (end is None or c < end)

        at, skip, searched = (0, False, True) if start == 0 else (next_start(f, start, codec), True, True)
        while at is not None and owned(at):
            chain = Chain(f, at, codec)
            before = stats.docs_in
            stopped = yield from self._segment(chain, stats, key, owned, skip)
            past = next((c for _, c in chain.starts if end is not None and c >= end), None)
            if stopped or past is not None:
                return past, False
            what, where = chain.ended
            if what == "eof":
                return None, False
            owner = where if what != "junk" else chain.starts[-1][1] if chain.starts else 0
            resume = None if what == "truncated" else next_start(f, where + 1, codec)  # junk at `where` is no start
            if owned(owner) and not (what == "junk" and all_zero(f, where, resume)):
                figure(stats, "records_before_corrupt_stream", stats.docs_in - before)
                self.skip(stats, "corrupt_stream")
                note(stats, path, f"{codec.name} at byte {where}: {what}")
            at, skip = resume, True
            searched = what != "truncated" and (end is None or where < end)  # then `resume` is what a search from `end` finds
        return at, searched

    def _segment(self, chain: Chain, stats: StepStats, key: str, owned: Any, skip: bool) -> Iterator[Document]:
        """The owned lines of one chain; returns True when it stopped at a line that is not the range's."""
        f = io.BufferedReader(chain, CHUNK)
        pos = _skip_line(f) if skip else 0
        lines = _lines(f, self.max_line_bytes)
        while pos is not None:
            if not owned(chain.member_at(pos - 1)[1] if pos else chain.start):
                return True
            chain.forget_before(max(pos - 1, 0))
            item = next(lines, None)
            if item is None:
                return False
            (line, size), at = item, pos
            pos += size
            if line is None:
                self.skip(stats, "too_large")
                continue
            if not line.endswith(b"\n") and chain.ended != ("eof", None):  # cut by damage: lost with it
                return False
            first, member = chain.member_at(at)
            if member == 0 and at == first and line.startswith(_BOM):
                line = line[len(_BOM):]
            if line.strip():
                position = f"{key}@{at - first}" if member == 0 else f"{key}@{member}+{at - first}"
                doc = self._parse(line, position, stats)
                if doc is not None:
                    yield doc
        return False

    def _parse(self, line: bytes, position: str, stats: StepStats) -> Document | None:
        try:
            text_line = line.decode("utf-8")
        except UnicodeDecodeError:
            text_line = line.decode("utf-8", errors="replace")
            figure(stats, "invalid_utf8")
        try:
            rec = json.loads(text_line)
        except (json.JSONDecodeError, RecursionError):
            self.skip(stats, "bad_json")
            return None
        text = rec.pop(self.text_key, None) if isinstance(rec, dict) else None
        if not isinstance(text, str):
            self.skip(stats, "no_text")
            return None
        if _SURROGATE_ESCAPE.search(text_line):
            (text, rec), changed = repair_deep([text, rec])
            if changed:
                figure(stats, "text_repaired")
        meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
        url = rec.pop(self.url_key, None) or meta.get("url")
        stats.docs_in += 1
        own = rec.get(self.id_key)
        doc_id = unique_id(self.source, own, position) if self.unique_ids or own is None else str(own)
        return Document(id=doc_id, text=text, source=self.source,
                        url=url if isinstance(url, str) else None, metadata=rec)


def _lines(f: Any, limit: int) -> Iterator[tuple[bytes | None, int]]:
    """The lines of `f` and their sizes in bytes, each read only up to `limit` bytes: a longer one is read on in
    chunks to its end, never held whole, and comes out as None."""
    while line := f.readline(limit + 1):
        if len(line) <= limit or line.endswith(b"\n"):
            yield line, len(line)
            continue
        size = len(line)
        while line and not line.endswith(b"\n"):
            line = f.readline(CHUNK)
            size += len(line)
        yield None, size


def _skip_line(f: Any) -> int | None:
    """Pass over `f`'s bytes through its first newline, in chunks; how many (None: it has no newline)."""
    n = 0
    while piece := f.readline(CHUNK):
        n += len(piece)
        if piece.endswith(b"\n"):
            return n
    return None


def _check_next(f: Any, path: str, codec: Codec, end: int, reached: int | None) -> None:
    """Fail loudly where the range after `end` would start elsewhere than this range's reading reached: a
    member start forged inside a member (or a false one) between them, which would make it read bytes twice."""
    found = next_start(f, end, codec)
    if found != reached:
        what = "the end of the file" if reached is None else f"byte {reached}"
        raise UsageError(f"{path}: reading the {codec.name}s before byte {end} reaches the next one at {what}, but a "
                         f"search from byte {end} finds one at byte {found}: this file cannot be split there "
                         "(a member start forged inside a member); run it without --tasks / --task-bytes")


def _align(f: Any, start: int) -> int:
    """Move `f` to the first line that begins at or after byte `start` (after the first newline at or after
    `start - 1`), reading the line cut by `start` in chunks; returns where `f` stands."""
    if start <= 0:
        return 0
    f.seek(start - 1)
    pos = start - 1
    while piece := f.readline(CHUNK):
        pos += len(piece)
        if piece.endswith(b"\n"):
            break
    return pos


class Parquet(Reader):
    """Parquet files. A shard this project wrote (`SHARD_MARK` in its schema's metadata) comes back whole,
    ids included (the run that wrote it made them unique). Every other file gets ids like JSONL's
    (`unique_id`, from the file and row), its own id staying in `metadata` under its own name: one with
    the contract's columns (`id`, `text`, `source`) keeps its other columns as a shard's are read, any
    other needs `text_key`. Only the mark is trusted: third-party files reuse ids, and trusting them
    lets a global step that drops one id drop a unique text that shares it.

    Row groups are read one by one, in batches of about `BATCH_BYTES` decoded bytes (by the group's mean
    row, from the metadata), each column streamed 1 MiB at a time: memory follows the batch and the
    largest page, not the row group. One that does not decode (a damaged page, a bad page checksum)
    costs its own rows (`read:bad_row_group`, one count per row), and reading goes on with the next.
    Strings that are not UTF-8 are decoded with U+FFFD (figure `read:invalid_utf8`).

    `max_record_bytes` bounds what is decoded at once. pyarrow decodes a page whole (one value can be
    all of it: a 2 GB text in 2 MB of zstd) and cannot skip one without decoding it, so a row group whose
    decoded size (by the metadata) is over the limit has its page headers read first (one seek each, no
    page decoded): it is read in batches like any other when every page is under the limit, and counted
    otherwise (`read:too_large`, one count per row; a row group of one row is exactly the record over the
    limit). Every row group `writers.Parquet` cuts is read: it is at most `row_group_bytes` or one record.
    (`max_row_group_bytes` is the old name of `max_record_bytes`.)
    """

    def __init__(self, source: str = "web", text_key: str = "text", id_key: str = "id", batch_size: int = 1024,
                 max_record_bytes: int = MAX_RECORD_BYTES, max_row_group_bytes: int | None = None):
        super().__init__(source)
        self.text_key, self.id_key, self.batch_size = text_key, id_key, batch_size
        self.max_record_bytes = max_record_bytes if max_row_group_bytes is None else max_row_group_bytes

    def read(self, path: str, stats: StepStats, key: str | None = None) -> Iterator[Document]:
        return self._read(path, stats, key or path, 0, None)

    def read_split(self, split: Split, stats: StepStats) -> Iterator[Document]:
        """A byte range of the file: the row groups whose first page begins in [start, end). Row numbers in
        ids count from the file's first row (by the metadata), so they do not depend on the split. A file that
        is not Parquet is counted once, by the range that starts at byte 0."""
        if split.whole or split.records:
            return super().read_split(split, stats)
        return self._read(split.url, stats, split.key, split.start, split.end)

    def _read(self, path: str, stats: StepStats, key: str, start: int, end: int | None) -> Iterator[Document]:
        import pyarrow.parquet as pq

        with fs.open(path, "rb") as f:
            raw = Tracked(f)
            try:
                pf = pq.ParquetFile(raw, page_checksum_verification=True, pre_buffer=False, buffer_size=STREAM_BUFFER)
            except Exception as e:
                if raw.io_error is not None:
                    raise raw.io_error from None
                if start == 0:
                    self.skip(stats, "not_parquet")
                    note(stats, path, e)
                return
            with pf:
                yield from self._rows(pf, raw, path, key, stats, start, end)

    def _over(self, pf: Any, raw: Tracked, path: str, g: int, stats: StepStats) -> str | None:
        """Why row group `g` cannot be decoded within `max_record_bytes` (None: it can)."""
        if pf.metadata.row_group(g).total_byte_size <= self.max_record_bytes:
            return None
        try:
            largest = largest_page(raw, pf.metadata, g)
        except ValueError as e:
            note(stats, path, f"row group {g}: page headers: {e}")
            return "bad_row_group"
        if largest > self.max_record_bytes:
            note(stats, path, f"row group {g}: a page of {largest} bytes decoded, over max_record_bytes")
            return "too_large"
        return None

    def _rows(self, pf: Any, raw: Tracked, path: str, key: str, stats: StepStats, start: int = 0,
              end: int | None = None) -> Iterator[Document]:
        names = pf.schema_arrow.names
        if self.text_key not in names:
            if start > 0:  # counted once, by the range that starts the file
                return
            self.skip(stats, "bad_schema")
            note(stats, path, f"no column {self.text_key!r} (columns: {names})")
            return
        shaped = self.text_key == "text" and all(c in names for c in ("id", "text", "source"))
        contract = "ours" if shaped and _ours(pf.schema_arrow) else "shaped" if shaped else None
        row = 0
        for g in range(pf.metadata.num_row_groups):
            meta = pf.metadata.row_group(g)
            size, done = meta.num_rows, 0
            if (start or end is not None) and not _owns(meta, start, end):
                row += size
                continue
            over = self._over(pf, raw, path, g, stats)  # an I/O error reading page headers is raised
            if over is not None:
                for _ in range(size):
                    self.skip(stats, over)
                row += size
                continue
            try:
                rows = batch_rows(meta.total_byte_size, size, cap=self.batch_size)
                for batch in pf.iter_batches(batch_size=rows, row_groups=[g]):
                    for rec in _pylist(batch, stats):
                        doc = self._doc(rec, contract, key, row + done, stats)
                        done += 1
                        if doc is not None:
                            yield doc
            except Exception as e:
                if raw.io_error is not None:
                    raise raw.io_error from None
                note(stats, path, f"row group {g}: {type(e).__name__}: {e}")
                for _ in range(size - done):
                    self.skip(stats, "bad_row_group")
            row += size

    def _shaped(self, rec: dict, key: str, row: int) -> Document | None:
        """A row of a file with the contract's columns that this project did not write, read as a shard
        but with its id made unique (`unique_id`); None where its columns do not read as a shard's."""
        try:
            doc = Document.from_record(rec)
        except ValueError:  # a `metadata` column that is not JSON
            return None
        if not isinstance(doc.source, str) or not isinstance(doc.metadata, dict):
            return None
        doc.metadata.setdefault(self.id_key, doc.id)
        doc.id = unique_id(doc.source, doc.id, f"{key}:{row}")
        return doc

    def _doc(self, rec: dict, contract: str | None, key: str, row: int, stats: StepStats) -> Document | None:
        text = rec.get(self.text_key)
        if not isinstance(text, str):
            self.skip(stats, "no_text")
            return None
        stats.docs_in += 1
        if contract == "ours":
            return Document.from_record(rec)
        if contract == "shaped" and (doc := self._shaped(rec, key, row)) is not None:
            return doc
        rec.pop(self.text_key)
        return Document(
            id=unique_id(self.source, rec.get(self.id_key), f"{key}:{row}"),
            text=text,
            source=self.source,
            url=rec.pop("url", None),
            metadata={k: v for k, v in rec.items() if k not in CORE_COLUMNS or k == self.id_key},
        )


def _owns(meta: Any, start: int, end: int | None) -> bool:
    """Whether a row group belongs to the byte range [start, end): its first page begins there."""
    at = row_group_start(meta) if meta.num_columns else 0
    return start <= at and (end is None or at < end)


def _ours(schema: Any) -> bool:
    """Whether a Parquet schema carries `SHARD_MARK` (a shard this project wrote)."""
    meta = schema.metadata or {}
    return all(meta.get(k) == v for k, v in SHARD_MARK.items())


def _pylist(batch: Any, stats: StepStats) -> list[dict]:
    """Rows of a record batch; string columns that are not UTF-8 are decoded with U+FFFD, and counted."""
    try:
        return batch.to_pylist()
    except UnicodeDecodeError:
        import pyarrow as pa

        cols = {}
        for name, col in zip(batch.schema.names, batch.columns, strict=True):
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                values = col.cast(pa.binary()).to_pylist()
                cols[name] = [None if v is None else v.decode("utf-8", errors="replace") for v in values]
            else:
                cols[name] = col.to_pylist()
        figure(stats, "invalid_utf8")
        return [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]
