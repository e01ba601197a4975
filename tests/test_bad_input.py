"""Hostile input: every case ends in a counted skip (or a clean decode), never a crashed task or a silent loss."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from curate import Pipeline, extract, readers
from curate.core.document import Document
from curate.core.stats import StepStats
from curate.io.readers import warc as warc_readers

GOOD_HTML = b"<html><body><article><p>" + b"A perfectly ordinary paragraph of readable text. " * 20 + b"</p></article></body></html>"
WARC_READERS = [readers.Warc, readers.FastWarc]


def record(headers: dict[str, str], payload: bytes) -> bytes:
    """One gzip member holding one WARC record, built by hand so that any header can be left out."""
    head = "WARC/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return gzip.compress(f"{head}Content-Length: {len(payload)}\r\n\r\n".encode() + payload + b"\r\n\r\n", mtime=0)


def response(url: str, html: bytes, ctype: str = "text/html; charset=utf-8", rid: str | None = "<urn:uuid:1>",
             date: str | None = "2024-01-01T00:00:00Z") -> bytes:
    h = {"WARC-Type": "response", "WARC-Target-URI": url, "Content-Type": "application/http; msgtype=response"}
    h.update({k: v for k, v in (("WARC-Record-ID", rid), ("WARC-Date", date)) if v})
    return record(h, f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\n\r\n".encode() + html)


def good_file(tmp: Path) -> Path:
    p = tmp / "good.warc.gz"
    p.write_bytes(response("http://ok.example/", GOOD_HTML, rid="<urn:uuid:ok>"))
    return p


def run(tmp: Path, files: list[Path], reader=None, steps=None) -> dict:
    """Run a pipeline in-process over the files; return stats.json's steps by name."""
    pipe = Pipeline(name="bad", reader=reader or readers.Warc(),
                    steps=steps if steps is not None else [extract.Resiliparse()])
    pipe.run(inputs=[str(f) for f in files], output=str(tmp / "out"), progress=False)
    return {s["name"]: s for s in json.loads((tmp / "out/stats.json").read_text())["steps"]}


def read(reader, path) -> tuple[list[Document], StepStats]:
    stats = StepStats("read")
    return list(reader.read(str(path), stats)), stats


@pytest.mark.parametrize("cls", WARC_READERS)
def test_truncated_gzip_keeps_complete_records_and_counts_the_cut_one(shared, tmp_path, cls):
    data = (shared / "warc/wget/dolma_sample-0001.warc.gz").read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: int(len(data) * 0.6)])
    docs, stats = read(cls(), cut)
    full, _ = read(cls(), shared / "warc/wget/dolma_sample-0001.warc.gz")
    rid = lambda d: d.metadata["warc_record_id"]  # noqa: E731 (ids depend on the path; record ids do not)
    assert [rid(d) for d in docs] == [rid(d) for d in full[: len(docs)]] and len(docs) == 8
    assert [d.html for d in docs] == [d.html for d in full[:8]]  # no partial page slips through
    assert stats.dropped["read:truncated_record"] == 1
    steps = run(tmp_path, [cut, good_file(tmp_path)], reader=cls())
    assert steps["read"]["dropped"]["read:truncated_record"] == 1 and steps["extract"]["docs_in"] == 9


@pytest.mark.parametrize("cls", WARC_READERS)
def test_non_warc_file(tmp_path, cls):
    junk = tmp_path / "junk.warc.gz"
    junk.write_bytes(b"this is a plain text file, not a web archive\n" * 50)
    steps = run(tmp_path, [junk, good_file(tmp_path)], reader=cls())
    assert steps["read"]["dropped"] == {"read:not_warc": 1} and steps["extract"]["docs_out"] == 1


@pytest.mark.parametrize("cls", WARC_READERS)
def test_empty_file(tmp_path, cls):
    empty = tmp_path / "empty.warc.gz"
    empty.touch()
    steps = run(tmp_path, [empty, good_file(tmp_path)], reader=cls())
    assert steps["read"]["dropped"] == {"read:empty_file": 1} and steps["extract"]["docs_out"] == 1


@pytest.mark.parametrize("cls", WARC_READERS)
def test_records_with_missing_headers(tmp_path, cls):
    path = tmp_path / "holes.warc.gz"
    path.write_bytes(
        record({"WARC-Target-URI": "http://a.example/"}, b"no WARC-Type at all")
        + record({"WARC-Type": "response", "WARC-Target-URI": "http://b.example/"}, b"<html>no HTTP head</html>")
        + response("http://c.example/", GOOD_HTML, rid=None, date=None)  # no record id, no date
        + response("http://d.example/", GOOD_HTML, rid="<urn:uuid:d>")
    )
    docs, stats = read(cls(), path)
    assert dict(stats.dropped) == {"read:unknown_record": 1, "read:no_http_headers": 1}
    assert [d.url for d in docs] == ["http://c.example/", "http://d.example/"]
    assert docs[0].date is None and docs[0].id == read(cls(), path)[0][0].id  # id from URL@offset: stable


@pytest.mark.parametrize("cls", WARC_READERS)
def test_undecodable_bytes_become_replacement_characters(tmp_path, cls):
    path = tmp_path / "bytes.warc.gz"
    broken = b"<html><body><p>caf\xe9 \xff\xfe " + b"and then many ordinary words follow here. " * 20 + b"</p></body></html>"
    path.write_bytes(response("http://a.example/", broken)
                     + response("http://b.example/", GOOD_HTML, ctype="text/html; charset=x-no-such-charset"))
    docs, stats = read(cls(), path)
    assert len(docs) == 2 and not stats.dropped
    assert "caf\ufffd" in docs[0].html and docs[1].metadata["charset"] == "utf-8"
    steps = run(tmp_path, [path], reader=cls())
    assert steps["extract"]["docs_out"] == 2


@pytest.mark.parametrize("cls", WARC_READERS)
def test_50mb_page_is_skipped_as_too_large(tmp_path, cls):
    path = tmp_path / "huge.warc.gz"
    huge = b"<html><body>" + b"<p>spam spam spam spam.</p>" * (50 * 1024 * 1024 // 27) + b"</body></html>"
    path.write_bytes(response("http://huge.example/", huge) + response("http://ok.example/", GOOD_HTML, rid="<u:2>"))
    docs, stats = read(cls(), path)
    assert dict(stats.dropped) == {"read:too_large": 1} and [d.url for d in docs] == ["http://ok.example/"]


def test_page_over_the_extractor_cap_is_a_counted_drop(tmp_path):
    path = tmp_path / "big.warc.gz"
    big = b"<html><body>" + b"<p>word word word.</p>" * 150_000 + b"</body></html>"  # 3 MB: read, not extracted
    path.write_bytes(response("http://big.example/", big) + response("http://ok.example/", GOOD_HTML, rid="<u:2>"))
    steps = run(tmp_path, [path])
    assert steps["extract"]["dropped"] == {"extract:too_large": 1} and steps["extract"]["docs_out"] == 1


@pytest.mark.parametrize("extractor", [extract.Trafilatura, extract.Resiliparse])
def test_deeply_nested_html_cannot_stall_a_worker(tmp_path, extractor):
    path = tmp_path / "deep.warc.gz"
    deep = b"<html><body>" + b"<div>" * 50_000 + b"<p>deep inside.</p>" + b"</div>" * 50_000 + b"</body></html>"
    path.write_bytes(response("http://deep.example/", deep) + response("http://ok.example/", GOOD_HTML, rid="<u:2>"))
    steps = run(tmp_path, [path], steps=[extractor()])
    assert steps["extract"]["dropped"] == {"extract:too_deep": 1} and steps["extract"]["docs_out"] == 1


# ---------------------------------------------------------------- issue 13: nothing lost


@pytest.mark.parametrize("cls", WARC_READERS)
def test_one_bad_record_costs_itself_not_the_rest_of_the_file(tmp_path, monkeypatch, cls):
    """A page declaring `charset=idna` (a codec that raises on most bytes) and a page whose processing
    raises are one record each: the pages after them are still read (case 1)."""
    real = readers.decode_html

    def poisoned(body, ctype, stats=None):
        if b"POISON" in body:
            raise ValueError("a decoding error in this one record")
        return real(body, ctype, stats)

    monkeypatch.setattr(warc_readers, "decode_html", poisoned)  # where the WARC readers look it up
    path = tmp_path / "mixed.warc.gz"
    idna = "<html><body><p>Olá, página em português com acentuação: ação, coração.</p></body></html>".encode()
    path.write_bytes(response("http://a.example/", GOOD_HTML, rid="<u:a>")
                     + response("http://b.example/", idna, ctype="text/html; charset=idna", rid="<u:b>")
                     + response("http://c.example/", b"<html>POISON</html>", rid="<u:c>")
                     + response("http://d.example/", GOOD_HTML, rid="<u:d>"))
    docs, stats = read(cls(), path)
    assert [d.url for d in docs] == ["http://a.example/", "http://b.example/", "http://d.example/"]
    assert "coração" in docs[1].html  # the unusable label passed over: the bytes are UTF-8
    assert dict(stats.dropped) == {"read:bad_record": 1} and "decoding error" in stats.error_sample
    assert stats.extra["read:charset_invalid"] == 1 and stats.extra["read:charset_guessed"] == 1


@pytest.mark.parametrize("odd,counted", [(b"", 0), (b"\r\n", 1), (b"   \r\n\r\n", 1)])
def test_a_member_native_fastwarc_passes_over_is_still_read_or_counted(tmp_path, odd, counted):
    """An empty gzip member ends FastWARC's own iteration there, and one holding only blank lines is
    passed over without a word; the reader's native path must not lose the records after either, nor
    the blank member's count (it holds bytes that are no record)."""
    pages = [response(f"http://{c}.example/", GOOD_HTML, rid=f"<u:{c}>") for c in "abcd"]
    path = tmp_path / "odd.warc.gz"
    path.write_bytes(b"".join(pages[:2]) + gzip.compress(odd, mtime=0) + b"".join(pages[2:]))
    docs, stats = read(readers.FastWarc(), path)
    assert [d.metadata["warc_record_id"] for d in docs] == ["<u:a>", "<u:b>", "<u:c>", "<u:d>"]
    assert stats.docs_in == 4 + counted and sum(stats.dropped.values()) == counted


@pytest.mark.parametrize("cls", WARC_READERS)
@pytest.mark.parametrize("where", [-8, -1])  # a byte of the CRC-32, of the length (ISIZE)
def test_a_page_whose_member_fails_its_gzip_trailer_is_not_passed_on(tmp_path, cls, where):
    """Its deflate data is whole, so the page decompresses in full; only the trailer tells it is not the
    page that was written. FastWarc's native path relies on FastWARC checking it before the next member."""
    pages = [response(f"http://{c}.example/", GOOD_HTML, rid=f"<u:{c}>") for c in "abc"]
    bad = bytearray(pages[1])
    bad[where] ^= 0x01
    path = tmp_path / "crc.warc.gz"
    path.write_bytes(pages[0] + bytes(bad) + pages[2])
    docs, stats = read(cls(), path)
    assert [d.metadata["warc_record_id"] for d in docs] == ["<u:a>", "<u:c>"]
    assert dict(stats.dropped) == {"read:bad_gzip": 1}


def test_fastwarc_decompresses_only_the_last_member_in_python_on_an_intact_file(shared, monkeypatch):
    """The fast path: an intact file is read natively, and the member reader (Python zlib) takes over
    only for the last member, which the native reader cannot tell whole from cut."""
    import zlib

    from curate.io import members

    made = []
    real = members.Member.__init__
    monkeypatch.setattr(members.Member, "__init__", lambda self, *a, **k: made.append(1) or real(self, *a, **k))
    path = shared / "warc/internet_archive/pywb_iana.warc.gz"
    data, n_members = path.read_bytes(), 0
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        d.decompress(data)
        data, n_members = d.unused_data, n_members + 1
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as f:  # the reference: HTML responses as warcio reads them
        pages = sum(r.rec_type == "response" and "text/html" in (r.http_headers.get_header("Content-Type") or "")
                    for r in ArchiveIterator(f))
    docs, stats = read(readers.FastWarc(), path)
    assert n_members > 300 and len(made) == 1
    assert stats.docs_in == n_members and len(docs) == pages > 0  # one record a member: each counted once


class _FlakyFile:
    """A file that raises an OSError (a connection reset, say) after `good` bytes, as fsspec would."""

    def __init__(self, f, good: int):
        self.f, self.left = f, good

    def read(self, n=-1):
        if self.left <= 0:
            raise ConnectionResetError(104, "Connection reset by peer")
        data = self.f.read(self.left if n is None or n < 0 else min(n, self.left))
        self.left -= len(data)
        return data

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


@pytest.mark.parametrize("cls,name", [(readers.Warc, "wget/dolma_sample-0001.warc.gz"),
                                      (readers.FastWarc, "wget/dolma_sample-0001.warc.gz"),
                                      (readers.Jsonl, None), (readers.Parquet, None)])
def test_io_error_mid_file_fails_the_task_and_leaves_no_marker(shared, tmp_path, monkeypatch, cls, name):
    """An OSError of the file itself is raised, never counted as bad data: the task fails, writes no
    `_done` marker, and a rerun reads the whole file (case 2)."""
    from curate.io import fs

    if name is not None:
        src = shared / "warc" / name
    elif cls is readers.Jsonl:
        src = shared / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        src = tmp_path / "in.parquet"
        pq.write_table(pa.table({"text": [f"document number {i} " * 50 for i in range(3000)]}), src, row_group_size=500)
    real_open = fs.open
    flaky = {"on": True}

    def open_(path, mode="rb", **kw):
        f = real_open(path, mode, **kw)
        return _FlakyFile(f, src.stat().st_size // 2) if flaky["on"] and str(path) == str(src) else f

    monkeypatch.setattr(fs, "open", open_)
    out = tmp_path / "out"
    pipe = Pipeline(name="io", reader=cls(), steps=[])
    with pytest.raises(Exception, match="Connection reset"):
        pipe.run(inputs=[str(src)], output=str(out), progress=False)
    assert not (out / "_done").exists() or not list((out / "_done").iterdir())
    flaky["on"] = False
    pipe.run(inputs=[str(src)], output=str(out), progress=False)
    expected = read(cls(), src)[0]
    written = [r for f in (out / "data").glob("*.parquet") for r in __import__("pyarrow.parquet").parquet.read_table(f).to_pylist()]
    assert len(written) == len(expected) > 0


def test_lone_surrogate_in_jsonl_is_repaired_and_counted(tmp_path):
    """json.loads accepts "\\ud800", which Arrow cannot write: repaired to U+FFFD, counted, task done (case 4)."""
    path = tmp_path / "s.jsonl"
    path.write_text('{"text": "before \\ud800 after", "id": 1, "meta": {"k": "\\udc00"}}\n'
                    '{"text": "a paired surrogate \\ud83d\\ude00 is fine", "id": 2}\n', encoding="ascii")
    steps = run(tmp_path, [path], reader=readers.Jsonl(), steps=[])
    assert steps["read"]["extra"] == {"read:text_repaired": 1} and steps["read"]["docs_out"] == 2
    import pyarrow.parquet as pq

    rows = [r for f in sorted((tmp_path / "out/data").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert [r["text"] for r in rows] == ["before \ufffd after", "a paired surrogate \U0001f600 is fine"]
    assert json.loads(rows[0]["metadata"]) == {"id": 1, "meta": {"k": "\ufffd"}}


def test_invalid_utf8_jsonl_line_is_decoded_with_replacement_and_counted(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"text": "caf\xe9 cr\xe8me"}\n{"text": "plain"}\n')
    docs, stats = read(readers.Jsonl(), path)
    assert [d.text for d in docs] == ["caf\ufffd cr\ufffdme", "plain"] and stats.extra == {"read:invalid_utf8": 1}


def test_parquet_string_that_is_not_utf8_is_decoded_with_replacement_and_counted(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = pa.array([b"caf\xe9", b"fine"], pa.binary()).view(pa.string())  # bytes Arrow never checked
    pq.write_table(pa.table({"text": text, "id": ["x", "y"]}), tmp_path / "bad.parquet")
    docs, stats = read(readers.Parquet(), tmp_path / "bad.parquet")
    assert [d.text for d in docs] == ["caf\ufffd", "fine"] and stats.extra == {"read:invalid_utf8": 1}


# ---------------------------------------------------------------- issue 22: hostile input, every limit bounded


def traced_peak(fn):
    """(fn(), the peak of Python's allocations while it ran): a memory bound checked without wall clocks."""
    import tracemalloc

    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def http_response(url: str, http_head: bytes, body: bytes, rid: str) -> bytes:
    h = {"WARC-Type": "response", "WARC-Target-URI": url, "WARC-Record-ID": rid,
         "Content-Type": "application/http; msgtype=response"}
    return record(h, b"HTTP/1.1 200 OK\r\n" + http_head + b"\r\n" + body)


def brotli_bomb(mib: int) -> bytes:
    import brotli

    c = brotli.Compressor(quality=1)
    zeros = bytes(1 << 20)
    return c.process(b"") + b"".join(c.process(zeros) for _ in range(mib)) + c.finish()


@pytest.mark.parametrize("cls", WARC_READERS)
def test_brotli_bomb_costs_its_record_and_bounded_memory(tmp_path, cls):
    """64 MiB of zeros in 12 KB of brotli: decoded only up to max_html_bytes, counted, the next page read."""
    path = tmp_path / "bomb.warc.gz"
    path.write_bytes(http_response("http://bomb.example/", b"Content-Type: text/html\r\nContent-Encoding: br\r\n",
                                   brotli_bomb(64), "<u:bomb>")
                     + response("http://ok.example/", GOOD_HTML, rid="<u:ok>"))
    (docs, stats), peak = traced_peak(lambda: read(cls(max_html_bytes=1_000_000), path))
    assert dict(stats.dropped) == {"read:too_large": 1} and [d.url for d in docs] == ["http://ok.example/"]
    assert peak < 16 << 20, peak  # the whole bomb would be 64 MiB


@pytest.mark.parametrize("cls", WARC_READERS)
def test_brotli_page_is_read_like_a_plain_one(tmp_path, cls):
    """warcio 1.8.1 cannot build a decompressor with brotli >= 1.2: `Warc` dropped such pages as bad_record."""
    import brotli

    path = tmp_path / "br.warc.gz"
    path.write_bytes(http_response("http://br.example/", b"Content-Type: text/html\r\nContent-Encoding: br\r\n",
                                   brotli.compress(GOOD_HTML), "<u:br>")
                     + http_response("http://cut.example/", b"Content-Type: text/html\r\nContent-Encoding: br\r\n",
                                     brotli.compress(GOOD_HTML)[:-5], "<u:cut>"))
    docs, stats = read(cls(), path)
    assert not stats.dropped and len(docs) == 2  # a cut stream: its raw bytes, as warcio does for gzip
    assert docs[0].html == GOOD_HTML.decode()


def long_header_record(n: int) -> bytes:
    """A gzip member whose WARC header has an `n`-byte line: a few KB compressed."""
    head = b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://long.example/\r\nX-Long: "
    body = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + GOOD_HTML
    return gzip.compress(head + b"a" * n + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body + b"\r\n\r\n", mtime=0)


@pytest.mark.parametrize("cls", WARC_READERS)
def test_huge_warc_header_line_is_counted_in_linear_time_and_bounded_memory(tmp_path, cls):
    """warcio's readline is quadratic in a line's length (16 MB: 6.6 s) and holds it whole; FastWARC
    refuses a header block over 32 KiB with a different reason. Both now: read:header_too_long."""
    path = tmp_path / "header.warc.gz"
    path.write_bytes(response("http://a.example/", GOOD_HTML, rid="<u:a>") + long_header_record(8 << 20)
                     + response("http://b.example/", GOOD_HTML, rid="<u:b>"))
    (docs, stats), peak = traced_peak(lambda: read(cls(), path))
    assert dict(stats.dropped) == {"read:header_too_long": 1}
    assert [d.url for d in docs] == ["http://a.example/", "http://b.example/"]
    assert peak < 4 << 20, peak  # the line alone is 8 MiB


@pytest.mark.parametrize("cls", WARC_READERS)
def test_header_block_at_the_limit_is_read_and_one_byte_over_is_not(tmp_path, cls):
    from curate.io.readers.framing import MAX_HEADER_BYTES

    fixed = gzip.decompress(long_header_record(0)).index(b"\r\n\r\n") + 4  # the header block without the line
    for extra, want in ((0, {}), (1, {"read:header_too_long": 1})):
        path = tmp_path / f"edge{extra}.warc.gz"
        path.write_bytes(long_header_record(MAX_HEADER_BYTES - fixed + extra))
        docs, stats = read(cls(), path)
        assert dict(stats.dropped) == want and len(docs) == 1 - extra


def single_stream(shared, edit) -> bytes:
    """dolma_sample-0001 (19 non-HTML records, 15 pages) gzipped as one stream after `edit(raw)`."""
    raw = gzip.decompress((shared / "warc/wget/dolma_sample-0001.warc.gz").read_bytes())
    return gzip.compress(edit(raw), mtime=0)


@pytest.mark.parametrize("cls", WARC_READERS)
@pytest.mark.parametrize("short", [40, 200])  # the record's tail: one line, several lines
def test_single_stream_with_a_short_content_length_keeps_the_later_records(shared, tmp_path, cls, short):
    """The first record's Content-Length is `short` bytes too small: its tail is bytes that start no
    record (one read:bad_header), and every later record is read (main: FastWarc lost all 34 records
    and counted only the warcinfo; warcio recovered from a one-line tail only)."""
    import re

    def edit(raw):
        m = re.search(rb"Content-Length: (\d+)", raw)
        return raw[: m.start(1)] + str(int(m.group(1)) - short).encode() + raw[m.end(1):]

    whole, cut = tmp_path / "whole.warc.gz", tmp_path / "short.warc.gz"
    whole.write_bytes(single_stream(shared, lambda raw: raw))
    cut.write_bytes(single_stream(shared, edit))
    want, want_stats = read(cls(), whole)
    docs, stats = read(cls(), cut)
    assert [d.html for d in docs] == [d.html for d in want] and len(docs) == 15
    assert stats.dropped == want_stats.dropped + Counter({"read:bad_header": 1})


@pytest.mark.parametrize("cls", WARC_READERS)
def test_single_stream_with_a_huge_header_line_keeps_the_later_records(shared, tmp_path, cls):
    def edit(raw):
        at = raw.index(b"WARC/1.0", 10)
        return raw[:at] + long_header_raw(1 << 20) + raw[at:]

    path = tmp_path / "long.warc.gz"
    path.write_bytes(single_stream(shared, edit))
    docs, stats = read(cls(), path)
    assert len(docs) == 15 and stats.dropped["read:header_too_long"] == 1 and stats.docs_in == 35


def long_header_raw(n: int) -> bytes:
    return gzip.decompress(long_header_record(n))


@pytest.mark.parametrize("cls", WARC_READERS)
@pytest.mark.parametrize("enc", ["utf-16-le", "utf-16-be"])
def test_utf16_page_without_a_bom_is_decoded(tmp_path, cls, enc):
    """NUL-interleaved ASCII is valid UTF-8: without the check the raw markup became the kept text."""
    html = "<html><body><p>Olá! Uma página em UTF-16 sem marca de ordem, 日本語も少し。</p></body></html>"
    path = tmp_path / "u16.warc.gz"
    path.write_bytes(response("http://u16.example/", html.encode(enc), ctype="text/html")
                     + response("http://ok.example/", GOOD_HTML, rid="<u:2>"))
    docs, stats = read(cls(), path)
    assert [d.html for d in docs] == [html, GOOD_HTML.decode()] and docs[0].metadata["charset"] == enc
    assert not stats.dropped


def test_jsonl_line_over_the_limit_is_passed_over_in_bounded_memory(tmp_path):
    """A 16 MiB line in 16 KB of gzip, read with a 64 KiB limit: counted, never held, the next line read."""
    path = tmp_path / "long.jsonl.gz"
    with gzip.open(path, "wb") as f:
        f.write(b'{"text": "before"}\n{"text": "')
        for _ in range(16):
            f.write(b"y" * (1 << 20))
        f.write(b'"}\n{"text": "after"}\n')
    (docs, stats), peak = traced_peak(lambda: read(readers.Jsonl(max_line_bytes=1 << 16), path))
    assert [d.text for d in docs] == ["before", "after"] and dict(stats.dropped) == {"read:too_large": 1}
    assert peak < 4 << 20, peak
    edge = tmp_path / "edge.jsonl"  # a line of exactly the limit is read, one byte more is not
    line = json.dumps({"text": "x" * 100}).encode()
    edge.write_bytes(line + b"\n" + line[:-1] + b' }\n' + line)
    docs, stats = read(readers.Jsonl(max_line_bytes=len(line)), edge)
    assert len(docs) == 2 and dict(stats.dropped) == {"read:too_large": 1}


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_jsonl_utf8_bom_does_not_cost_the_first_record(tmp_path, suffix):
    path = tmp_path / f"bom{suffix}"
    data = b"\xef\xbb\xbf" + b'{"id": "1", "text": "first"}\n{"id": "2", "text": "second"}\n'
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    docs, stats = read(readers.Jsonl(), path)
    assert [d.text for d in docs] == ["first", "second"] and not stats.dropped


def test_third_party_parquet_with_the_contract_columns_keeps_its_unique_text(tmp_path):
    """{b: X, a: X, b: Y}: with its ids trusted, exact dedup dropped "id b" and with it the unique Y."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate import dedup

    path = tmp_path / "third.parquet"
    pq.write_table(pa.table({"id": ["b", "a", "b"], "text": ["X text", "X text", "Y text"], "source": ["s"] * 3}), path)
    docs, _ = read(readers.Parquet(), path)
    assert len({d.id for d in docs}) == 3 and [d.metadata["id"] for d in docs] == ["b", "a", "b"]
    steps = run(tmp_path, [path], reader=readers.Parquet(), steps=[dedup.Exact()])
    assert steps["exact"]["dropped"] == {"exact:duplicate": 1}
    kept = pq.read_table(tmp_path / "out/data").column("text").to_pylist()
    assert sorted(kept) == ["X text", "Y text"]
    shards = sorted((tmp_path / "out/data").glob("*.parquet"))  # our own shards: ids kept as written
    ours, _ = read(readers.Parquet(), shards[0])
    assert [d.id for d in ours] == pq.read_table(shards[0]).column("id").to_pylist()


def test_jsonl_zst_bomb_is_decompressed_in_bounded_pieces(tmp_path):
    """zstandard's decompressobj has no output cap: 64 KiB of zstd can hold GBs. Fed 256 bytes at a time,
    a 64 MiB line in 3 KB of zstd is passed over without holding more than a few MiB."""
    import zstandard

    c = zstandard.ZstdCompressor().compressobj()
    data = c.compress(b'{"text": "before"}\n{"text": "') + b"".join(c.compress(b"y" * (1 << 20)) for _ in range(64))
    path = tmp_path / "bomb.jsonl.zst"
    path.write_bytes(data + c.compress(b'"}\n{"text": "after"}\n') + c.flush())
    (docs, stats), peak = traced_peak(lambda: read(readers.Jsonl(max_line_bytes=1 << 16), path))
    assert [d.text for d in docs] == ["before", "after"] and dict(stats.dropped) == {"read:too_large": 1}
    assert peak < 32 << 20, peak  # at most 8 MiB out of one piece, a few copies of it; the line is 64 MiB


def test_parquet_row_group_over_the_limit_is_counted_not_decoded(tmp_path):
    """A 16 MiB text in a few KB of zstd: pyarrow would decode it whole. Its row group (by the file's
    metadata) is over the limit: its rows are counted, the other groups read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "big.parquet"
    texts = ["first", "y" * (16 << 20), "third", "fourth"]
    pq.write_table(pa.table({"text": texts}), path, row_group_size=2, compression="zstd")
    (docs, stats), peak = traced_peak(lambda: read(readers.Parquet(max_record_bytes=1 << 20), path))
    assert [d.text for d in docs] == ["third", "fourth"] and dict(stats.dropped) == {"read:too_large": 2}
    assert peak < 8 << 20, peak
