"""Readers on the real crawls and text files in ../shared/data (counts from shared/data/SOURCES.md)."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.core.stats import StepStats
from curate.io import readers

# text/html responses per real WARC file (SOURCES.md, section 1); the WET file holds one conversion.
HTML_COUNTS = {
    "cc/resiliparse_warcfile.CC-MAIN-2020-34.warc.gz": 16,
    "cc/whirlwind.CC-MAIN-2024-22.warc.gz": 1,
    "cc/cmoncrawl_mini.CC-MAIN-2022-05.warc.gz": 1,
    "clueweb09/clueweb09-ja-quirk.warc.gz": 29,
    "internet_archive/aut_IAH-20080430204825-00000-blackbook.warc.gz": 140,
    "internet_archive/pywb_iana.warc.gz": 20,
    "wget/dolma_sample-0000.warc.gz": 22,
    "wget/dolma_sample-0001.warc.gz": 15,
}


def read(reader, path) -> tuple[list, StepStats]:
    stats = StepStats("read")
    return list(reader.read(str(path), stats)), stats


@pytest.mark.parametrize("name,count", sorted(HTML_COUNTS.items()))
def test_warc_html_counts_match_sources(shared, name, count):
    docs, stats = read(readers.Warc(), shared / "warc" / name)
    assert len(docs) == count == stats.docs_in - sum(stats.dropped.values())
    assert all(d.html is not None and d.url.startswith("http") for d in docs)
    assert len({d.id for d in docs}) == count


def test_total_is_244_html_plus_one_wet(shared):
    files = sorted((shared / "warc").rglob("*.warc*.gz"))
    docs = [d for f in files for d in read(readers.Warc(), f)[0]]
    assert sum(d.html is not None for d in docs) == sum(HTML_COUNTS.values()) == 244
    wet = [d for d in docs if d.html is None]
    assert len(wet) == 1 and "Escopete" in wet[0].text


def test_skip_reasons_are_counted(shared):
    _, stats = read(readers.Warc(), shared / "warc/internet_archive/pywb_iana.warc.gz")
    assert dict(stats.dropped) == {"read:request": 171, "read:revisit": 123, "read:not_html": 28, "read:warcinfo": 1}
    _, stats = read(readers.Warc(), shared / "warc/internet_archive/aut_IAH-20080430204825-00000-blackbook.warc.gz")
    assert stats.dropped["read:not_html"] == 121 and stats.dropped["read:no_http_headers"] == 38  # dns: records


def test_charset_from_http_header_and_meta(shared):
    docs, _ = read(readers.Warc(), shared / "warc/clueweb09/clueweb09-ja-quirk.warc.gz")
    assert {d.metadata["charset"] for d in docs} == {"euc-jp"}
    assert "ヘッドポーター" in docs[0].html  # decoded, not mojibake


@pytest.mark.parametrize("path", sorted(f"{k}" for k in HTML_COUNTS) + ["cc/whirlwind.CC-MAIN-2024-22.warc.wet.gz"])
def test_fastwarc_yields_the_same_documents(shared, path):
    a, sa = read(readers.Warc(), shared / "warc" / path)
    b, sb = read(readers.FastWarc(), shared / "warc" / path)
    key = lambda d: (d.id, d.url, d.date, d.text, d.html, d.metadata)  # noqa: E731
    assert [key(d) for d in a] == [key(d) for d in b]
    assert sa.dropped == sb.dropped and sa.docs_in == sb.docs_in


def test_ids_are_stable_across_reads(shared):
    path = shared / "warc/wget/dolma_sample-0001.warc.gz"
    assert [d.id for d in read(readers.Warc(), path)[0]] == [d.id for d in read(readers.Warc(), path)[0]]
    assert [d.id for d in read(readers.Warc(source="web"), path)[0]] != [
        d.id for d in read(readers.Warc(source="other"), path)[0]
    ]


DOLMA = "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"


def test_jsonl_gz_keeps_existing_ids_in_metadata(shared):
    docs, stats = read(readers.Jsonl(source="cc"), shared / DOLMA)
    with gzip.open(shared / DOLMA, "rt") as f:
        rows = [json.loads(line) for line in f]
    assert len(docs) == 697 == stats.docs_in
    assert [d.metadata["id"] for d in docs] == [r["id"] for r in rows]  # the record's own id, kept
    assert len({d.id for d in docs}) == 697  # the run's id: unique by construction
    assert [d.url for d in docs] == [r["metadata"]["url"] for r in rows]  # url found in nested metadata


def test_jsonl_zst_equals_gz(shared, tmp_path):
    import zstandard

    dst = tmp_path / "dolma.jsonl.zst"
    dst.write_bytes(zstandard.ZstdCompressor().compress(gzip.decompress((shared / DOLMA).read_bytes())))
    a, _ = read(readers.Jsonl(), shared / DOLMA)
    b, _ = read(readers.Jsonl(), dst)
    assert [(d.metadata, d.text) for d in a] == [(d.metadata, d.text) for d in b]


def test_jsonl_zst_truncated_is_counted_and_concatenated_frames_read(shared, tmp_path):
    import zstandard

    frame = zstandard.ZstdCompressor().compress(gzip.decompress((shared / DOLMA).read_bytes()))
    two = tmp_path / "two.jsonl.zst"
    two.write_bytes(frame + frame)  # `cat a.zst b.zst` is a valid zstd file
    docs, stats = read(readers.Jsonl(), two)
    assert len(docs) == 2 * 697 and not stats.dropped
    cut = tmp_path / "cut.jsonl.zst"
    cut.write_bytes(frame[: len(frame) // 2])
    docs, stats = read(readers.Jsonl(), cut)
    assert 0 < len(docs) < 697
    assert stats.dropped == {"read:corrupt_stream": 1}


def test_jsonl_custom_keys_and_bad_lines(shared, tmp_path):
    docs, _ = read(readers.Jsonl(text_key="prompt", id_key="task_id"), shared / "benchmarks/humaneval/HumanEval.jsonl.gz")
    assert len(docs) == 164 and docs[0].metadata["task_id"] == "HumanEval/0" and "def " in docs[0].text
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine", "id": 7}\n{not json\n{"body": "no text key"}\n[1, 2]\n\n{"text": "also fine"}\n')
    docs, stats = read(readers.Jsonl(), bad)
    assert [d.text for d in docs] == ["fine", "also fine"] and docs[0].metadata == {"id": 7}
    assert dict(stats.dropped) == {"read:bad_json": 1, "read:no_text": 2}


def test_parquet_custom_columns_wrong_schema_and_not_parquet(tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"doc_id": ["a", "b"], "content": ["one", "two"], "lang_hint": ["en", "pt"]}), good)
    docs, _ = read(readers.Parquet(text_key="content", id_key="doc_id", source="books"), good)
    assert [(d.text, d.source, d.metadata) for d in docs] == [
        ("one", "books", {"doc_id": "a", "lang_hint": "en"}), ("two", "books", {"doc_id": "b", "lang_hint": "pt"})]
    assert len({d.id for d in docs}) == 2
    docs, stats = read(readers.Parquet(), good)  # no `text` column: a counted skip, not a crash
    assert docs == [] and dict(stats.dropped) == {"read:bad_schema": 1} and "content" in stats.error_sample
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"PAR1 this is not parquet")
    docs, stats = read(readers.Parquet(), junk)
    assert docs == [] and dict(stats.dropped) == {"read:not_parquet": 1}


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_jsonl_closes_the_file_it_opened(tmp_path, monkeypatch, suffix):
    """Every handle the reader opens (an fsspec file for a URL) is closed once the file is read."""
    import zstandard

    from curate.io import fs

    raw = b"".join(json.dumps({"text": f"doc {i}"}).encode() + b"\n" for i in range(3))
    pack = {".jsonl": bytes, ".jsonl.gz": gzip.compress, ".jsonl.zst": zstandard.ZstdCompressor().compress}[suffix]
    (tmp_path / f"in{suffix}").write_bytes(pack(raw))
    url = f"file://{tmp_path}/in{suffix}"  # opened through fsspec, as any URL
    opened = []
    real_open = fs.open
    monkeypatch.setattr(fs, "open", lambda *a, **k: opened.append(real_open(*a, **k)) or opened[-1])
    docs = list(readers.Jsonl().read(url, StepStats("read")))
    assert [d.text for d in docs] == ["doc 0", "doc 1", "doc 2"]
    assert len(opened) == 1 and opened[0].closed


# ---------------------------------------------------------------- issue 13 and 16: streams, charsets, identity


@pytest.mark.parametrize("cls", [readers.Warc, readers.FastWarc])
def test_warc_gzipped_as_one_stream_is_read_whole(shared, tmp_path, cls):
    """`gzip -c file.warc` writes one member for all records; every record is intact and read (case 7)."""
    src = shared / "warc/wget/dolma_sample-0001.warc.gz"
    one = tmp_path / "one-stream.warc.gz"
    one.write_bytes(gzip.compress(gzip.decompress(src.read_bytes()), mtime=0))
    want, want_stats = read(cls(), src)
    got, stats = read(cls(), one)
    key = lambda d: (d.metadata["warc_record_id"], d.url, d.html)  # noqa: E731
    assert [key(d) for d in got] == [key(d) for d in want] and len(got) == HTML_COUNTS["wget/dolma_sample-0001.warc.gz"]
    assert stats.dropped == want_stats.dropped and stats.extra["read:single_gzip_stream"] == 1


def _page(ctype: str, body: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\n\r\n".encode()
    block = head + body
    return gzip.compress(
        (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://x.example/\r\n"
         f"WARC-Record-ID: <urn:uuid:{len(body)}-{ctype}>\r\nContent-Length: {len(block)}\r\n\r\n").encode()
        + block + b"\r\n\r\n", mtime=0)


CP1252 = "<html><body><p>Ceci n\u2019est pas une pipe \u2014 \u00e9t\u00e9, \u00e0 bient\u00f4t.</p></body></html>"
SJIS = "<html><head><title>日本語のページ</title></head><body><p>" + "これは日本語で書かれた文章です。" * 20 + "</p></body></html>"


@pytest.mark.parametrize("cls", [readers.Warc, readers.FastWarc])
@pytest.mark.parametrize("ctype,body,want,charset,guessed", [
    # the HTTP header wins; latin-1 is read as windows-1252, as browsers do (the ’ and — are 0x92, 0x97)
    ("text/html; charset=ISO-8859-1", CP1252.encode("cp1252"), CP1252, "cp1252", 0),
    # no HTTP charset: <meta charset> and <meta http-equiv>
    ("text/html", b'<meta charset="shift_jis">' + SJIS.encode("shift_jis"), SJIS, "shift_jis", 0),
    ("text/html", b'<meta http-equiv="Content-Type" content="text/html; charset=euc-jp">' + SJIS.encode("euc-jp"),
     SJIS, "euc-jp", 0),
    # an unusable label (idna, base64, unknown) counts as none: detection, counted as guessed
    ("text/html; charset=idna", SJIS.encode("shift_jis"), SJIS, None, 1),
    ("text/html; charset=base64", CP1252.encode("utf-8"), CP1252, "utf-8", 1),
    # a mislabelled page: declared UTF-8, bytes in windows-1252 -> detection
    ("text/html; charset=utf-8", b'<meta charset="windows-1252">' + CP1252.encode("cp1252"), CP1252, "windows-1252", 0),
    # a BOM beats every declaration
    ("text/html; charset=iso-8859-1", b"\xef\xbb\xbf" + SJIS.encode("utf-8"), SJIS, "utf-8", 0),
])
def test_charset_from_the_raw_bytes(tmp_path, cls, ctype, body, want, charset, guessed):
    path = tmp_path / "c.warc.gz"
    path.write_bytes(_page(ctype, body))
    docs, stats = read(cls(), path)
    assert len(docs) == 1 and want.split("<body>")[1] in docs[0].html
    if charset is not None:
        assert docs[0].metadata["charset"] == charset
    assert stats.extra.get("read:charset_guessed", 0) == guessed


def test_duplicate_records_and_ids_stay_distinct(shared, tmp_path):
    """The same record twice in a file, or the same id on two JSONL lines, are two documents with two ids."""
    src = shared / "warc/cc/whirlwind.CC-MAIN-2024-22.warc.gz"
    twice = tmp_path / "twice.warc.gz"
    twice.write_bytes(src.read_bytes() * 2)
    docs, _ = read(readers.Warc(), twice)
    assert len(docs) == 2 and docs[0].metadata == docs[1].metadata and docs[0].id != docs[1].id
    jl = tmp_path / "dup.jsonl"
    jl.write_text('{"id": "b", "text": "X"}\n{"id": "a", "text": "X"}\n{"id": "b", "text": "Y"}\n')
    docs, _ = read(readers.Jsonl(), jl)
    assert [d.metadata["id"] for d in docs] == ["b", "a", "b"] and len({d.id for d in docs}) == 3


@pytest.mark.parametrize("cls", [readers.Warc, readers.FastWarc])
def test_uncompressed_warc_reads_like_the_gzipped_one(shared, tmp_path, cls):
    src = shared / "warc/wget/dolma_sample-0000.warc.gz"
    plain = tmp_path / "plain.warc"
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    want, want_stats = read(cls(), src)
    got, stats = read(cls(), plain)
    key = lambda d: (d.metadata["warc_record_id"], d.url, d.html)  # noqa: E731
    assert [key(d) for d in got] == [key(d) for d in want] and len(got) == HTML_COUNTS["wget/dolma_sample-0000.warc.gz"]
    assert stats.dropped == want_stats.dropped and "read:single_gzip_stream" not in stats.extra
