"""filters.HttpStatus (issue 35.9: a 404 page survived every filter) on a real Internet Archive WARC, with
warcio's reading of each record's status line as the reference."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

from curate import Document, Pipeline, filters, readers
from curate.core.errors import UsageError


def _statuses(path) -> dict[str, str]:
    with open(path, "rb") as f:
        return {r.rec_headers.get_header("WARC-Record-ID"): r.http_headers.get_statuscode()
                for r in ArchiveIterator(f) if r.rec_type == "response" and r.http_headers}


def _rows(out, sub):
    return [r for f in sorted((out / sub).glob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_error_pages_are_dropped_by_class_and_every_2xx_page_kept(shared, tmp_path):
    warc = shared / "warc/internet_archive/aut_IAH-20080430204825-00000-blackbook.warc.gz"
    want = _statuses(warc)
    out = tmp_path / "out"
    Pipeline(name="h", reader=readers.Warc(), steps=[filters.HttpStatus()]).run(
        inputs=str(warc), output=str(out), rejected=True, progress=False)

    def status(row):
        meta = row["metadata"] if isinstance(row["metadata"], dict) else json.loads(row["metadata"] or "{}")
        return want[meta["warc_record_id"]]

    kept, dropped = _rows(out, "data"), _rows(out, "rejected")
    assert kept and all(status(r).startswith("2") for r in kept)
    classes = {"3": "http_status:redirect", "4": "http_status:client_error", "5": "http_status:server_error"}
    assert sorted(r["drop_reason"] for r in dropped) == sorted(classes[status(r)[0]] for r in dropped)
    assert sum(r["drop_reason"] == "http_status:client_error" for r in dropped) >= 10  # the WARC's 404 pages


def test_exact_codes_classes_and_documents_without_a_status():
    f = filters.HttpStatus(keep=["2xx", "304"])
    docs = [Document(id=str(i), text="x", source="t", metadata={"http_status": s}) for i, s in enumerate(["200", "304", "302", "503", "abc"])]
    assert [f.reject_rule(d) for d in docs] == [None, None, "redirect", "server_error", "other"]
    assert f.reject_rule(Document(id="j", text="from jsonl", source="t")) is None and f._no_status == 1
    with pytest.raises(UsageError, match="HttpStatus: keep entries"):
        filters.HttpStatus(keep=["2XX"])
