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
