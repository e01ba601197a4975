"""Readers turn one input file into a stream of documents, counting every record they skip and why.

An input is a local path (opened directly) or a URL (`file://`, `s3://`, …), opened through fsspec
(`curate.io.fs`).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
import zlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any, ClassVar

from curate.core.document import CORE_COLUMNS, Document, make_id
from curate.core.stats import StepStats
from curate.core.validate import describe
from curate.io import fs

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_HTML_TYPES = ("text/html", "application/xhtml+xml")


class Reader:
    """Base reader. `read` yields documents and records skips in `stats` (reasons `read:<rule>`)."""

    name: ClassVar[str] = "read"

    def __init__(self, source: str = "web"):
        self.source = source

    def read(self, path: str, stats: StepStats) -> Iterator[Document]:
        raise NotImplementedError

    def skip(self, stats: StepStats, rule: str, chars: int = 0) -> None:
        stats.docs_in += 1
        stats.drop(f"read:{rule}", chars)

    def __repr__(self) -> str:
        return describe(self)


def parse_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def decode_html(body: bytes, content_type: str | None) -> tuple[str, str]:
    """Decode HTML bytes: charset from the HTTP header, then from <meta>, then by detection.

    Undecodable bytes become U+FFFD rather than failing the page; the chosen charset is returned so
    that it can be recorded in the document's metadata.
    """
    candidates = []
    if content_type and "charset=" in content_type.lower():
        candidates.append(content_type.lower().split("charset=")[-1].split(";")[0].strip(" \"'"))
    m = _META_CHARSET.search(body[:4096])
    if m:
        candidates.append(m.group(1).decode("ascii", "ignore").lower())
    for enc in candidates:
        try:
            return body.decode(enc, errors="replace"), enc
        except LookupError:
            continue
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(body[:65536]).best()
    enc = best.encoding if best else "utf-8"
    return body.decode(enc, errors="replace"), enc


class Warc(Reader):
    """WARC/WET reader (warcio): HTML `response` records and WET `conversion` records.

    Request, metadata, revisit and warcinfo records and non-HTML responses are skipped with a count.
    A broken stream (truncated gzip, not a WARC) ends the file with a counted `read:corrupt_stream`
    instead of failing the task: the records before the break are kept.
    """

    def __init__(self, source: str = "web", max_html_bytes: int = 5_000_000):
        super().__init__(source)
        self.max_html_bytes = max_html_bytes

    def read(self, path: str, stats: StepStats) -> Iterator[Document]:
        from warcio.archiveiterator import ArchiveIterator

        if self._empty(path, stats):
            return
        with fs.open(path, "rb") as f:
            try:
                records = ArchiveIterator(f)
                for rec in records:
                    if rec.format != "warc":  # warcio falls back to ARC parsing on any text file
                        self.skip(stats, "not_warc")
                        stats.error_sample = stats.error_sample or f"{path}: not a WARC file (ARC is not supported)"
                        return
                    doc = self._record(rec, records, stats)
                    if doc is not None:
                        yield doc
            except (EOFError, OSError, zlib.error, ValueError, KeyError, IndexError) as e:
                self.skip(stats, "corrupt_stream")
                stats.error_sample = stats.error_sample or f"{path}: {type(e).__name__}: {e}"
            except Exception as e:  # warcio's ArchiveLoadFailed and friends
                if type(e).__name__ not in ("ArchiveLoadFailed", "StatusAndHeadersParserException"):
                    raise
                self.skip(stats, "not_warc" if stats.docs_in == 0 else "corrupt_stream")
                stats.error_sample = stats.error_sample or f"{path}: {type(e).__name__}: {e}"

    def _empty(self, path: str, stats: StepStats) -> bool:
        if fs.size(path) == 0:
            self.skip(stats, "empty_file")
            stats.error_sample = stats.error_sample or f"{path}: empty file"
            return True
        return False

    def _record(self, rec: Any, records: Any, stats: StepStats) -> Document | None:
        kind = rec.rec_type
        if kind not in ("response", "conversion"):
            self.skip(stats, kind or "unknown_record")
            return None
        if kind == "conversion":
            raw = rec.content_stream().read()
            if rec.raw_stream.limit > 0:
                self.skip(stats, "truncated_record")
                return None
            stats.docs_in += 1
            return self._doc(rec, records, text=raw.decode("utf-8", errors="replace"))
        if rec.http_headers is None or not rec.http_headers.protocol.startswith("HTTP/"):  # warcio is lenient
            self.skip(stats, "no_http_headers")
            return None
        ctype = rec.http_headers.get_header("Content-Type") or ""
        if not any(t in ctype.lower() for t in _HTML_TYPES):
            self.skip(stats, "not_html")
            return None
        body = rec.content_stream().read(self.max_html_bytes + 1)
        if len(body) > self.max_html_bytes:
            self.skip(stats, "too_large")
            return None
        if rec.raw_stream.limit > 0:  # the file ends inside this record (truncated download or gzip)
            self.skip(stats, "truncated_record")
            return None
        html, charset = decode_html(body, ctype)
        stats.docs_in += 1
        doc = self._doc(rec, records, text="")
        doc.html = html
        doc.metadata = {"http_status": rec.http_headers.get_statuscode(), "charset": charset}
        return doc

    def _doc(self, rec: Any, records: Any, text: str) -> Document:
        """Build the document after its content is read (warcio's offset call consumes the record)."""
        h = rec.rec_headers
        url = h.get_header("WARC-Target-URI")
        rid = h.get_header("WARC-Record-ID") or f"{url}@{records.get_record_offset()}"
        date = parse_date(h.get_header("WARC-Date"))
        return Document(id=make_id(self.source, rid), text=text, source=self.source, url=url, date=date)


@contextlib.contextmanager
def _open_text(path: str) -> Iterator[io.TextIOBase]:
    """Text lines of a plain, .gz or .zst file (local or URL), closing every layer on exit: gzip and zstandard
    leave a file object they were handed open, which would leak one fsspec handle per URL input."""
    with contextlib.ExitStack() as stack:
        f = stack.enter_context(fs.open(path, "rb"))
        if path.endswith(".gz"):
            f = stack.enter_context(gzip.GzipFile(fileobj=f, mode="rb"))
        elif path.endswith(".zst"):
            f = stack.enter_context(io.BufferedReader(_StrictZstd(f)))
        yield stack.enter_context(io.TextIOWrapper(f, encoding="utf-8", errors="replace"))


class _StrictZstd(io.RawIOBase):
    """Decompressed zstd frames that raise EOFError when the input ends inside a frame.

    zstandard's own reader returns a truncated file's prefix as if it were whole, which would turn a
    half-copied shard into silently missing documents instead of a counted `read:corrupt_stream`.
    """

    def __init__(self, raw: Any):
        import zstandard

        self._new = zstandard.ZstdDecompressor().decompressobj
        self.raw, self.dec, self.pending = raw, self._new(), b""
        self.in_frame = False  # bytes of a frame were fed and its end not seen yet

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        while not self.pending:
            chunk = self.raw.read(1 << 16)
            if not chunk:
                if self.in_frame:
                    raise EOFError("zstd input ends inside a frame (truncated file)")
                return 0
            self.pending = self._feed(chunk)
        n = min(len(buf), len(self.pending))
        buf[:n], self.pending = self.pending[:n], self.pending[n:]
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
    """JSON Lines (.jsonl, .jsonl.gz, .jsonl.zst). An existing id field is kept as the document id."""

    def __init__(self, source: str = "web", text_key: str = "text", id_key: str = "id", url_key: str = "url"):
        super().__init__(source)
        self.text_key, self.id_key, self.url_key = text_key, id_key, url_key

    def read(self, path: str, stats: StepStats) -> Iterator[Document]:
        with _open_text(path) as f:
            try:
                for lineno, line in enumerate(f):
                    if not line.strip():
                        continue
                    doc = self._parse(line, path, lineno, stats)
                    if doc is not None:
                        yield doc
            except (EOFError, OSError, zlib.error) as e:
                self.skip(stats, "corrupt_stream")
                stats.error_sample = stats.error_sample or f"{path}: {type(e).__name__}: {e}"

    def _parse(self, line: str, path: str, lineno: int, stats: StepStats) -> Document | None:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            self.skip(stats, "bad_json")
            return None
        text = rec.pop(self.text_key, None) if isinstance(rec, dict) else None
        if not isinstance(text, str):
            self.skip(stats, "no_text")
            return None
        rid = rec.pop(self.id_key, None)
        doc_id = str(rid) if rid is not None else make_id(self.source, f"{path}:{lineno}")
        meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
        url = rec.pop(self.url_key, None) or meta.get("url")
        stats.docs_in += 1
        return Document(id=doc_id, text=text, source=self.source, url=url, metadata=rec)


class Parquet(Reader):
    """Parquet files. Shards in the text contract come back whole; other files need `text_key`."""

    def __init__(self, source: str = "web", text_key: str = "text", id_key: str = "id", batch_size: int = 1024):
        super().__init__(source)
        self.text_key, self.id_key, self.batch_size = text_key, id_key, batch_size

    def read(self, path: str, stats: StepStats) -> Iterator[Document]:
        try:
            pf = fs.parquet_file(path)
        except Exception as e:
            self.skip(stats, "not_parquet")
            stats.error_sample = stats.error_sample or f"{path}: {type(e).__name__}: {e}"
            return
        with pf:  # ParquetFile keeps its file open until closed
            yield from self._rows(pf, path, stats)

    def _rows(self, pf: Any, path: str, stats: StepStats) -> Iterator[Document]:
        names = pf.schema_arrow.names
        if self.text_key not in names:
            self.skip(stats, "bad_schema")
            stats.error_sample = stats.error_sample or f"{path}: no column {self.text_key!r} (columns: {names})"
            return
        contract = all(c in names for c in ("id", "text", "source"))
        for batch in pf.iter_batches(batch_size=self.batch_size):
            for rec in batch.to_pylist():
                text = rec.get(self.text_key)
                if not isinstance(text, str):
                    self.skip(stats, "no_text")
                    continue
                stats.docs_in += 1
                if contract:
                    yield Document.from_record(rec)
                    continue
                rid = rec.pop(self.id_key, None)
                rec.pop(self.text_key)
                yield Document(
                    id=str(rid) if rid is not None else make_id(self.source, f"{path}:{stats.docs_in}"),
                    text=text,
                    source=self.source,
                    url=rec.pop("url", None),
                    metadata={k: v for k, v in rec.items() if k not in CORE_COLUMNS},
                )


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
    """Decode an HTTP body the way warcio's content_stream does, falling back to the raw bytes on error.

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
    elif enc == "br":
        try:
            import brotli

            return brotli.decompress(raw)
        except Exception:
            pass
    return raw


class FastWarc(Warc):
    """WARC/WET reader on FastWARC (extra `fast`): the same documents, ids and skip reasons as `Warc`.

    FastWARC only frames records here; HTTP heads and bodies are decoded by `_split_http` and
    `_http_payload`, which keep warcio's leniency (bare-LF headers, mislabelled chunked bodies) that
    FastWARC's own HTTP parsing lacks. Tested for equality with `Warc` on the real crawls.
    """

    def read(self, path: str, stats: StepStats) -> Iterator[Document]:
        from fastwarc.warc import ArchiveIterator

        if self._empty(path, stats):
            return
        with fs.open(path, "rb") as f:
            try:
                for rec in ArchiveIterator(f, parse_http=False, auto_decode="none"):
                    doc = self._fast_record(rec, stats)
                    if doc is not None:
                        yield doc
            except (EOFError, OSError, zlib.error, ValueError) as e:
                # FastWARC raises OSError both for a stream that is no WARC at all and for one cut short.
                self.skip(stats, "not_warc" if stats.docs_in == 0 else "corrupt_stream")
                stats.error_sample = stats.error_sample or f"{path}: {type(e).__name__}: {e}"

    def _fast_record(self, rec: Any, stats: StepStats) -> Document | None:
        kind = rec.headers.get("WARC-Type") or ""
        if kind not in ("response", "conversion"):
            self.skip(stats, kind or "unknown_record")
            return None
        if kind == "conversion":
            raw = rec.reader.read()
            if len(raw) < rec.content_length:
                self.skip(stats, "truncated_record")
                return None
            stats.docs_in += 1
            return self._fast_doc(rec, raw.decode("utf-8", errors="replace"))
        url = _target_uri(rec.headers)
        if rec.content_length == 0 or not url.startswith(("http:", "https:")):  # warcio's rule for HTTP records
            self.skip(stats, "no_http_headers")
            return None
        if rec.content_length > 4 * self.max_html_bytes:  # bound memory before reading: no page shrinks 4x
            self.skip(stats, "too_large")
            return None
        block = rec.reader.read()
        if len(block) < rec.content_length:  # the file ends inside this record
            self.skip(stats, "truncated_record")
            return None
        http = _split_http(block)
        if http is None:
            self.skip(stats, "no_http_headers")
            return None
        status, h, raw = http
        ctype = h.get("content-type", "")
        if not any(t in ctype.lower() for t in _HTML_TYPES):
            self.skip(stats, "not_html")
            return None
        body = _http_payload(raw, h.get("transfer-encoding", ""), h.get("content-encoding", ""), self.max_html_bytes)
        if len(body) > self.max_html_bytes:
            self.skip(stats, "too_large")
            return None
        html, charset = decode_html(body, ctype)
        stats.docs_in += 1
        doc = self._fast_doc(rec, "")
        doc.html = html
        doc.metadata = {"http_status": status, "charset": charset}
        return doc

    def _fast_doc(self, rec: Any, text: str) -> Document:
        h = rec.headers
        url = _target_uri(h) or None
        rid = h.get("WARC-Record-ID") or f"{url}@{rec.stream_pos}"
        date = parse_date(h.get("WARC-Date"))
        return Document(id=make_id(self.source, rid), text=text, source=self.source, url=url, date=date)


def _target_uri(headers: Any) -> str:
    """WARC-Target-URI without the angle brackets that wget 1.19 wrapped it in (warcio strips them too)."""
    uri = headers.get("WARC-Target-URI") or ""
    return uri[1:-1] if uri.startswith("<") and uri.endswith(">") else uri
