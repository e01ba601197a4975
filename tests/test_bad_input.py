"""Hostile input: every case ends in a counted skip (or a clean decode), never a crashed task or a silent loss."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from curate import Pipeline, extract, readers
from curate.core.document import Document
from curate.core.stats import StepStats

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
