"""One home for a file's kind (curate.io.kinds, issue 42.1): every gzip framing a WARC or JSONL file can legally
have, under any name case, read whole and split 7 and 64 ways gives what warcio (FastWARC) reads from the whole
file; a name and content that disagree get one loud line; and no other module decides a kind by its name."""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from pathlib import Path

import pytest
from _gzipframes import bgzip, members_at

from curate.core.stats import StepStats
from curate.io import kinds, readers
from curate.io.plan import plan_splits
from curate.io.splits import Split

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
WARC = DATA / "warc/internet_archive/pywb_iana.warc.gz"  # 20 HTML responses among 343 records, 787 KB
JSONL = DATA / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"

pytestmark = pytest.mark.skipif(not WARC.exists(), reason="needs /work/shared/data (the real test data)")


def _framings(raw: bytes, per_record: bytes) -> dict[str, bytes]:
    """The gzip framings of one content: one member per record (as written), one member, bgzip blocks (with
    BGZF's extra field), and members cut at places that follow no record."""
    return {"per-record": per_record, "single": gzip.compress(raw, mtime=0), "bgzip": bgzip(raw),
            "pieces": members_at(raw, [1000, len(raw) // 3, len(raw) // 2 + 7])}


def _warcio_html(path: Path) -> list[str]:
    """WARC-Record-IDs of the HTML responses in file order: warcio over the whole file, decompressed by Python's
    gzip (which reads every member: warcio itself refuses a single member holding many records)."""
    from warcio.archiveiterator import ArchiveIterator

    data = path.read_bytes()
    with io.BytesIO(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data) as f:
        return [r.rec_headers.get_header("WARC-Record-ID") for r in ArchiveIterator(f)
                if r.rec_type == "response" and r.http_headers
                and "text/html" in r.http_headers.get_header("Content-Type", "").lower()]


def _read(reader, splits) -> tuple[list[tuple], dict]:
    stats = StepStats("read")
    docs = [(d.id, d.text, d.metadata.get("warc_record_id")) for s in splits for d in reader.read_split(s, stats)]
    return docs, dict(stats.dropped)


def _same_whole_and_split(reader, path: Path) -> list[tuple]:
    whole, counts = _read(reader, [Split(str(path), "k")])
    for tasks in (7, 64):
        plan = [Split(s.url, "k", s.start, s.end) for s in plan_splits(str(path), tasks=tasks)]
        assert _read(reader, plan) == (whole, counts), (path.name, tasks)
    return whole


@pytest.fixture(scope="module")
def warc_raw() -> bytes:
    return gzip.decompress(WARC.read_bytes())


# every framing and every name, each name with the per-record framing the planner cuts member by member
CASES = [("per-record", "x.warc.gz"), ("per-record", "x.WARC.GZ"), ("per-record", "x.warc.gzip"),
         ("single", "x.WARC.GZ"), ("bgzip", "x.warc.gz"), ("bgzip", "x.warc.gzip"), ("pieces", "x.WARC.GZ")]


@pytest.mark.parametrize(("framing", "name"), CASES)
@pytest.mark.parametrize("cls", [readers.Warc, readers.FastWarc])
def test_every_gzip_framing_of_a_warc_under_any_name_reads_whole_and_split_as_warcio(tmp_path, warc_raw, name,
                                                                                    framing, cls):
    path = tmp_path / name
    path.write_bytes(_framings(warc_raw, WARC.read_bytes())[framing])
    docs = _same_whole_and_split(cls(), path)
    assert [d[2] for d in docs] == _warcio_html(path) and len(docs) == 20
    if framing in ("bgzip", "pieces"):
        assert kinds.kind_of(str(path)).gzip_stream


def test_a_bgzip_warc_is_told_by_its_extra_field_and_read_as_fastwarc_reads_it(tmp_path, warc_raw):
    from fastwarc.warc import ArchiveIterator

    path = tmp_path / "b.warc.gz"
    path.write_bytes(bgzip(warc_raw))
    assert kinds.kind_of(str(path)).bgzf
    with open(path, "rb") as f:
        native = [r.headers.get("WARC-Record-ID") for r in ArchiveIterator(f, parse_http=False)
                  if r.headers.get("WARC-Type") == "response"]
    docs, counts = _read(readers.FastWarc(), [Split(str(path), "k")])  # FastWARC's own gzip reads every block
    assert [d[2] for d in docs] == [r for r in native if r in set(_warcio_html(path))] and len(docs) == 20
    assert not {"read:bad_header", "read:truncated_record", "read:bad_gzip"} & set(counts)


@pytest.mark.parametrize(("framing", "name"), [(f, n.replace("warc", "jsonl").replace("WARC", "JSONL"))
                                               for f, n in CASES])
def test_every_gzip_framing_of_a_jsonl_under_any_name_reads_whole_and_split_as_its_lines(tmp_path, name, framing):
    lines = gzip.decompress(JSONL.read_bytes()).splitlines(keepends=True)[:150]  # 150 pages, 540 KB
    raw = b"".join(lines)
    path = tmp_path / name
    per_line = b"".join(gzip.compress(line, mtime=0) for line in lines)
    path.write_bytes(_framings(raw, per_line)[framing])
    lines = gzip.decompress(path.read_bytes()).splitlines()
    docs = _same_whole_and_split(readers.Jsonl(), path)
    assert [d[1] for d in docs] == [json.loads(x)["text"] for x in lines if x.strip()]


def test_a_name_and_content_that_disagree_get_one_loud_line_and_the_content_wins(tmp_path, warc_raw, capsys):
    plain = tmp_path / "plain.warc.gz"  # named gzip, holds an uncompressed WARC
    plain.write_bytes(warc_raw)
    zipped = tmp_path / "zipped.warc"  # named plain, holds gzip
    zipped.write_bytes(WARC.read_bytes())
    for path in (plain, zipped):
        docs = _same_whole_and_split(readers.Warc(), path)
        assert [d[2] for d in docs] == _warcio_html(WARC)
    err = capsys.readouterr().err
    assert len(re.findall(r"plain\.warc\.gz: the name says compression gzip, the content is none", err)) == 1
    assert len(re.findall(r"zipped\.warc: the name says compression none, the content is gzip", err)) == 1


def test_the_names_alone_are_read_case_insensitively_with_queries_aside():
    assert kinds.name_kind("https://h/a/X.WARC.GZ?sig=1") == kinds.Kind("warc", "gzip")
    assert kinds.name_kind("a.jsonl.zst") == kinds.Kind("jsonl", "zstd")
    assert kinds.name_kind("a.Parquet") == kinds.Kind("parquet", "")
    assert kinds.name_kind("gz") == kinds.Kind("", "")


ROOT = Path(__file__).resolve().parents[1] / "curate"
# a file's kind decided from its name's compression suffix: only curate/io/kinds.py may (issue 42.1)
_BY_NAME = re.compile(r"""(endswith|removesuffix)\(\(?["']\.(gz|gzip|zst|bz2|xz)["']|\.(gz|zst)["'] in """)
_ALLOWED = {
    "curate/io/kinds.py": "the one home",
    "curate/decontam/loaders.py": "benchmark files on local disk: `.csv.gz` told from `.csv` to pick a parser",
    "curate/extract/features.py": "the package's own stoplists, named by us",
    "curate/quality/importance.py": "another helper's new module, written while this test was: to move to kinds",
}


def test_only_kinds_decides_a_compression_from_a_name():
    found = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).as_posix()
        if rel not in _ALLOWED and _BY_NAME.search(path.read_text(encoding="utf-8")):
            found.append(rel)
    assert found == [], f"decide a file's kind with curate.io.kinds, not its name: {found}"


# a path or URL taken apart (protocol, the path inside a store) outside curate/io/fs.py (issue 42.4)
_PARSES_PATH = re.compile(r"""split\(["']://["']|fsspec\.core|_strip_protocol\(""")
_PATH_ALLOWED = {
    "curate/io/fs.py": "the one home: is_url, url_to_fs, local_path, without_protocol, glob's URLs",
    "curate/core/validate.py": "the core layer imports nothing of curate.io; it only asks a store whether a file is there",
}


def test_only_fs_takes_a_path_or_url_apart():
    found = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).as_posix()
        if rel not in _PATH_ALLOWED and _PARSES_PATH.search(path.read_text(encoding="utf-8")):
            found.append(rel)
    assert found == [], f"parse paths and URLs with curate.io.fs, not by hand: {found}"


def test_a_folder_input_takes_every_name_kinds_reads(tmp_path):
    """`--input crawl/` lists a folder by name: the gzip spellings kinds reads (any case, `.gzip`) are inputs."""
    from curate.io import fs
    from curate.run.pipeline import reader_suffixes

    for name in ("a.warc.gz", "b.WARC.GZ", "c.warc.gzip", "d.jsonl", "README.md"):
        (tmp_path / name).write_bytes(WARC.read_bytes()[:100])
    got = [Path(p).name for p in fs.expand_inputs([str(tmp_path)], reader_suffixes(readers.Warc()))]
    assert got == ["a.warc.gz", "b.WARC.GZ", "c.warc.gzip"]



def test_a_first_record_with_a_wrong_length_does_not_make_members_one_stream(tmp_path):
    """Only a next member that goes on with a record shows that members do not start records: a first record
    whose Content-Length overruns its member (damage) leaves the file read member by member, as before."""
    data = WARC.read_bytes()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    first = d.decompress(data)
    rest = d.unused_data
    bad = re.sub(rb"(?i)(content-length:\s*)(\d+)", lambda m: m.group(1) + str(int(m.group(2)) + 50).encode(),
                 first, count=1)
    path = tmp_path / "x.warc.gz"
    path.write_bytes(gzip.compress(bad, mtime=0) + rest)
    assert not kinds.kind_of(str(path)).gzip_stream
