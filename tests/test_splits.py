"""Within-file tasks (issue 30.2): inputs cut into byte ranges that tasks read independently.

The references are independent of the code under test: a brute-force reading of every record (lines split on
b"\\n" with their offsets, warcio over the whole file, pyarrow's own table), and the same input read unsplit.
Whatever the cuts (1, 7, 64 ways; planted at record starts, inside a record, on a \\r\\n, at the last byte;
empty ranges), the documents and their ids are those of the whole file, each exactly once.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _chaos import kill_after

from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.core.step import GlobalStep
from curate.io import readers
from curate.io.plan import parse_size, plan_splits
from curate.io.readers.base import Reader, unique_id
from curate.io.splits import Split
from curate.run.pipeline import Pipeline

DATA = Path("/work/shared/data")
GSM8K = DATA / "benchmarks/gsm8k/test.jsonl"  # 1,319 real records, `question` as text
WARCS = [DATA / "warc/internet_archive/aut_IAH-20080430204825-00000-blackbook.warc.gz",  # 822 records, 140 html
         DATA / "warc/internet_archive/pywb_iana.warc.gz",
         DATA / "warc/wget/dolma_sample-0000.warc.gz"]
JSONL_GZ = DATA / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
CURATE = [sys.executable, "-m", "curate"]

pytestmark = pytest.mark.skipif(not GSM8K.exists(), reason="needs /work/shared/data (the real test data)")


def _read(reader: Reader, splits: list[Split]) -> tuple[list[tuple], StepStats]:
    stats = StepStats("read")
    docs = [(d.id, d.text, d.html, d.url) for s in splits for d in reader.read_split(s, stats)]
    return docs, stats


def _ranges(path: Path, cuts: list[int], key: str = "k") -> list[Split]:
    bounds = [0, *cuts, None]
    return [Split(str(path), key, a, b) for a, b in zip(bounds, bounds[1:], strict=False)]


def _even(path: Path, n: int) -> list[int]:
    size = path.stat().st_size
    return [size * i // n for i in range(1, n)]


def _same(reader: Reader, path: Path, cuts: list[int]) -> list[tuple]:
    """The documents of the ranges `cuts` make, asserted equal (ids, texts, counts) to the whole file's."""
    whole, ws = _read(reader, [Split(str(path), "k")])
    got, gs = _read(reader, _ranges(path, cuts))
    assert got == whole, f"cuts {cuts[:5]}…: {len(got)} documents, whole file {len(whole)}"
    assert (gs.docs_in, dict(gs.dropped)) == (ws.docs_in, dict(ws.dropped))
    return whole


# ---------------------------------------------------------------- JSONL


def _brute_jsonl(path: Path, text_key: str, key: str = "k") -> list[tuple]:
    """Every line with its byte offset, from the file's bytes alone."""
    data, out, at = path.read_bytes(), [], 0
    for line in data.split(b"\n"):
        if line.strip():
            rec = json.loads(line)
            out.append((unique_id("web", rec.get("id"), f"{key}@{at}"), rec[text_key]))
        at += len(line) + 1
    return out


@pytest.mark.parametrize("n", [1, 7, 64, 1319 * 3])
def test_jsonl_split_any_number_of_ways_gives_the_whole_files_documents_and_ids(n):
    reader = readers.Jsonl(text_key="question")
    whole = _same(reader, GSM8K, _even(GSM8K, n))
    assert [(i, t) for i, t, _, _ in whole] == _brute_jsonl(GSM8K, "question")


def test_jsonl_cuts_planted_at_line_starts_inside_lines_on_crlf_and_at_the_last_byte(tmp_path):
    """CRLF lines (the \\r belongs to the line), a blank line, and cuts at every kind of place."""
    lines = GSM8K.read_bytes().split(b"\n")[:40]
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(b"\r\n".join(lines[:20]) + b"\r\n\r\n" + b"\r\n".join(lines[20:]) + b"\r\n")
    data = path.read_bytes()
    starts = [i + 1 for i in range(len(data)) if data[i:i + 1] == b"\n"][:-1]
    reader = readers.Jsonl(text_key="question")
    whole = _same(reader, path, starts)  # every range starts exactly at a line
    assert len(whole) == 40
    crlf = [s - 1 for s in starts]  # on the \n of a \r\n: the line before is not read twice
    cr = [s - 2 for s in starts]  # on the \r
    inside = [s + 7 for s in starts]
    last = [len(data) - 1]
    for cuts in (crlf, cr, inside, last, [1], sorted(set(starts[:5] + inside[:5] + crlf[5:9]))):
        _same(reader, path, cuts)
    _same(reader, path, [starts[3], starts[3], starts[3] + 1, starts[3] + 2])  # empty ranges between


def test_a_range_holding_no_line_start_reads_nothing_and_counts_nothing():
    reader = readers.Jsonl(text_key="question")
    data = GSM8K.read_bytes()
    first_nl = data.index(b"\n")
    docs, stats = _read(reader, [Split(str(GSM8K), "k", 5, first_nl)])  # inside the first line
    assert docs == [] and stats.docs_in == 0
    docs, stats = _read(reader, [Split(str(GSM8K), "k", 100, 100)])
    assert docs == [] and stats.docs_in == 0


def test_bad_lines_are_counted_once_whatever_the_cuts(tmp_path):
    """Hostile lines (not JSON, no text, over max_line_bytes) are counted by the one range they begin in."""
    good = GSM8K.read_bytes().split(b"\n")[:30]
    junk = [b"{not json", b'{"question": 3}', b'{"question": "' + b"x" * 5000 + b'"}']
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(good[:10] + junk + good[10:] + junk) + b"\n")
    reader = readers.Jsonl(text_key="question", max_line_bytes=4096)
    for n in (1, 3, 17, 200):
        _same(reader, path, _even(path, n))
    _, stats = _read(reader, _ranges(path, _even(path, 17)))
    assert dict(stats.dropped) == {"read:bad_json": 2, "read:no_text": 2, "read:too_large": 2}


# ---------------------------------------------------------------- compressed JSONL (gzip members, zstd frames)


def _gz_members(data: bytes) -> list[tuple[int, bytes]]:
    """(compressed offset, decompressed bytes) of every gzip member, by zlib member after member."""
    at, out = 0, []
    while at < len(data):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        text = d.decompress(data[at:])
        out.append((at, text))
        at = len(data) - len(d.unused_data)
    return out


def _zst_frames(data: bytes) -> list[tuple[int, bytes]]:
    import zstandard

    at, out = 0, []
    while at < len(data):
        d = zstandard.ZstdDecompressor().decompressobj()
        text = d.decompress(data[at:])
        out.append((at, text))
        at = len(data) - len(d.unused_data)
    return out


def _brute_chain(members: list[tuple[int, bytes]], key: str = "k") -> list[tuple]:
    """Every line of the decompressed members with the id the contract gives it: (the compressed offset of the
    member its first byte comes from, its offset in that member's output); `key@offset` in the member at 0."""
    spans, at = [], 0
    for coff, text in members:
        if text:
            spans.append((at, coff))
        at += len(text)
    data, out, q = b"".join(t for _, t in members), [], 0
    for line in data.split(b"\n"):
        if line.strip():
            first, coff = max(sp for sp in spans if sp[0] <= q)
            pos = f"{key}@{q - first}" if coff == 0 else f"{key}@{coff}+{q - first}"
            rec = json.loads(line)
            out.append((unique_id("web", rec.get("id"), pos), rec["text"]))
        q += len(line) + 1
    return out


def _blocks(data: bytes, sizes: list[int]) -> list[bytes]:
    """`data` cut into pieces of the given sizes in turn (bgzip-style: cuts fall anywhere in a line)."""
    out, at, i = [], 0, 0
    while at < len(data):
        out.append(data[at:at + sizes[i % len(sizes)]])
        at, i = at + sizes[i % len(sizes)], i + 1
    return out


@pytest.fixture(scope="module")
def chained(tmp_path_factory) -> dict[str, Path]:
    """Real web text (697 dolma records) as a many-member .jsonl.gz (members of 5-70 KB cut mid-line, one cut on
    a line start, an empty member, zero padding at the end) and a many-frame .jsonl.zst (with a skippable frame);
    and as one gzip member and one zstd frame."""
    import zstandard

    text = gzip.decompress(JSONL_GZ.read_bytes())
    pieces = _blocks(text, [65280, 5000, 70000, 12345])
    pieces.insert(3, b"")  # an empty member
    nl = text.index(b"\n", 200_000) + 1
    pieces = [p for p in _blocks(text[:nl], [65280]) + [b""] + _blocks(text[nl:], [65280, 5000, 70000, 12345])]
    root = tmp_path_factory.mktemp("chained")
    files = {"gz": root / "many.jsonl.gz", "zst": root / "many.jsonl.zst", "gz1": root / "one.jsonl.gz",
             "zst1": root / "one.jsonl.zst"}
    files["gz"].write_bytes(b"".join(gzip.compress(p, 6, mtime=0) for p in pieces) + b"\0" * 100)
    zc = zstandard.ZstdCompressor(write_checksum=True)
    frames = [zc.compress(p) for p in _blocks(text, [100_000, 30_000])]
    frames.insert(2, (0x184D2A53).to_bytes(4, "little") + (7).to_bytes(4, "little") + b"skipped")
    files["zst"].write_bytes(b"".join(frames))
    files["gz1"].write_bytes(gzip.compress(text, 6, mtime=0))
    files["zst1"].write_bytes(zc.compress(text))
    return files


def _chain_reference(path: Path) -> list[tuple]:
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = data.rstrip(b"\0")
    return _brute_chain(_gz_members(data) if path.name.endswith(".gz") else _zst_frames(data))


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_compressed_jsonl_split_by_members_gives_the_whole_files_lines_and_ids(chained, kind):
    """Split 1, 7, 64 ways, at every member start, one byte after, at the last byte, with empty ranges: the lines
    and ids of the whole file, which are those of the independent reference (zlib / zstd member by member)."""
    path, reader = chained[kind], readers.Jsonl()
    members = [c for c, _ in (_gz_members(path.read_bytes().rstrip(b"\0")) if kind == "gz"
                              else _zst_frames(path.read_bytes()))]
    size = path.stat().st_size
    for cuts in (_even(path, 7), _even(path, 64), members[1:], [m + 1 for m in members[1:]], [size - 1],
                 sorted({*members[2:5], *(m + 2 for m in members[2:5])}), [members[3]] * 3):
        whole = _same(reader, path, cuts)
    assert [(i, t) for i, t, _, _ in whole] == _chain_reference(path) and len(whole) == 697
    plan = plan_splits(str(path), tasks=7)
    assert len(plan) == 7 and {s.start for s in plan} <= {0, *members} and not plan.whole
    assert _read(reader, plan)[0] == _read(reader, [Split(str(path), plan[0].key)])[0]


def test_a_single_member_or_frame_stays_whole_with_the_ids_it_always_had(chained, capsys):
    """One gzip member / zstd frame cannot be cut: the plan keeps it whole and says so; its ids are those of the
    line's offset in the decompressed file, as before members counted (the member at 0 keeps `key@offset`)."""
    plan = plan_splits([str(chained["gz1"]), str(chained["zst1"])], tasks=8)
    assert [s.whole for s in plan] == [True, True]
    assert [u for u, _ in plan.whole] == [str(chained["gz1"]), str(chained["zst1"])]
    assert "one gzip member" in plan.whole[0][1] and "one zstd frame" in plan.whole[1][1]
    assert "stay whole" in capsys.readouterr().err
    for name in ("gz1", "zst1"):
        docs, _ = _read(readers.Jsonl(), [Split(str(chained[name]), "k")])
        assert [(i, t) for i, t, _, _ in docs] == _brute_jsonl_bytes(gzip.decompress(JSONL_GZ.read_bytes()))


def _brute_jsonl_bytes(data: bytes, key: str = "k") -> list[tuple]:
    out, at = [], 0
    for line in data.split(b"\n"):
        if line.strip():
            rec = json.loads(line)
            out.append((unique_id("web", rec.get("id"), f"{key}@{at}"), rec["text"]))
        at += len(line) + 1
    return out


def _damaged(chained: dict, tmp_path: Path) -> Path:
    """The many-member .jsonl.gz with a member damaged after its first 64 KiB (a flipped byte near its end), a
    member damaged at its start (junk: it decodes nothing), junk bytes between two members, and cut short."""
    data = chained["gz"].read_bytes().rstrip(b"\0")
    starts = [c for c, _ in _gz_members(data)]
    big = next(i for i in range(len(starts) - 1) if starts[i + 1] - starts[i] > 20_000 and i > 2)
    buf = bytearray(data)
    buf[starts[big + 1] - 30] ^= 0xFF  # in the last deflate bytes of a large member: after 64 KiB of output
    buf[starts[big + 4] + 12] ^= 0xFF  # in the first deflate bytes of another: no member (junk)
    buf[starts[big + 7]:starts[big + 7]] = b"JUNK" * 50
    path = tmp_path / "damaged.jsonl.gz"
    path.write_bytes(bytes(buf[: len(buf) - 5000]))
    return path


def test_damaged_members_junk_and_a_cut_cost_the_same_lines_and_counts_whatever_the_split(chained, tmp_path):
    path, reader = _damaged(chained, tmp_path), readers.Jsonl()
    whole, stats = _read(reader, [Split(str(path), "k")])
    assert stats.dropped["read:corrupt_stream"] == 4  # the damaged member, the junk member, the junk, the cut
    good = _chain_reference(chained["gz"])
    assert {t for _, t, _, _ in whole} < {t for _, t in good} and len(whole) > 600  # lines of intact members
    assert [(i, t) for i, t, _, _ in whole[:40]] == good[:40]  # their ids (before the damage moved the members)
    starts = [c for c, _ in _gz_members(chained["gz"].read_bytes().rstrip(b"\0"))]
    for cuts in (_even(path, 7), _even(path, 64), [s + 1 for s in starts[1:-3]], [path.stat().st_size - 3]):
        _same(reader, path, cuts)


def test_a_member_start_forged_inside_a_member_fails_the_split_loudly(tmp_path):
    """A stored (level 0) deflate block can hold any bytes, a complete gzip member among them: a search from a cut
    before it lands inside the real member. The range before notices and fails in one line, never reading
    anything twice; unsplit, the file reads as it is."""
    forged = gzip.compress(b'{"text": "forged"}\n' * 5000, 9, mtime=0)
    lines = [json.dumps({"text": f"line {i}"}).encode() for i in range(300)]
    data = b"\n".join(lines[:150]) + b"\n" + forged + b"\n" + b"\n".join(lines[150:]) + b"\n"
    path = tmp_path / "forged.jsonl.gz"
    path.write_bytes(gzip.compress(data, 0, mtime=0))
    at = path.read_bytes().index(forged)
    docs, stats = _read(readers.Jsonl(), [Split(str(path), "k")])
    assert len(docs) == 300 and stats.dropped == {"read:bad_json": 1}
    plan = plan_splits(str(path), task_bytes=at - 10)
    assert [s.start for s in plan] == [0, at]
    with pytest.raises(UsageError, match=f"search from byte {at} finds one at byte {at}: this file cannot be split there"):
        _read(readers.Jsonl(), plan)


# ---------------------------------------------------------------- WARC


def _member_starts(path: Path) -> list[int]:
    """Every gzip member's offset, by decompressing the file member after member (zlib alone)."""
    data, at, out = path.read_bytes(), 0, []
    while at < len(data):
        out.append(at)
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        d.decompress(data[at:])
        at = len(data) - len(d.unused_data)
    return out


def _warcio_html(path: Path) -> list[str]:
    """WARC-Record-IDs of the HTML responses, in file order, by warcio over the whole file."""
    from warcio.archiveiterator import ArchiveIterator

    out = []
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f):
            ctype = rec.http_headers.get_header("Content-Type", "") if rec.http_headers else ""
            if rec.rec_type == "response" and "text/html" in ctype.lower():
                out.append(rec.rec_headers.get_header("WARC-Record-ID"))
    return out


@pytest.mark.parametrize("path", WARCS, ids=lambda p: p.name[:20])
@pytest.mark.parametrize("cls", [readers.Warc, readers.FastWarc])
def test_warc_gz_split_1_7_64_ways_and_at_member_starts_gives_the_whole_files_records(path, cls):
    reader = cls()
    stats = StepStats("read")
    whole_ids = [d.metadata["warc_record_id"] for d in reader.read_split(Split(str(path), "k"), stats)]
    assert whole_ids == _warcio_html(path)  # the independent reference
    members = _member_starts(path)
    size = path.stat().st_size
    for cuts in (_even(path, 7), _even(path, 64), members[1:], [m + 1 for m in members[1:40]],
                 [size - 1], sorted({*members[5:9], *(m + 3 for m in members[5:9])})):
        _same(reader, path, cuts)


def test_fastwarc_reads_a_range_natively_not_member_by_member(monkeypatch):
    """A range that ends before the file's last member never needs the Python member reader (which would
    give the same documents, only slower: the equality tests above cannot tell)."""
    from curate.io.readers.warc import Warc

    fallbacks = []
    members = Warc._members
    monkeypatch.setattr(Warc, "_members", lambda self, f, offset, *a, **k: fallbacks.append(offset) or
                        members(self, f, offset, *a, **k))
    path = WARCS[0]
    docs, _ = _read(readers.FastWarc(), _ranges(path, _even(path, 7))[:-1])
    assert len(docs) > 100 and fallbacks == []


def test_a_single_stream_warc_gz_stays_whole_and_is_said_so(tmp_path, capsys):
    single = tmp_path / "single.warc.gz"
    single.write_bytes(gzip.compress(gzip.decompress(WARCS[2].read_bytes())))
    multi = tmp_path / "multi.warc.gz"
    multi.write_bytes(WARCS[2].read_bytes())
    plan = plan_splits([str(single), str(multi)], task_bytes=30_000)
    assert [s.whole for s in plan if s.url == str(single)] == [True]
    assert len([s for s in plan if s.url == str(multi)]) > 3
    assert [u for u, _ in plan.whole] == [str(single)]
    assert "single.warc.gz" in capsys.readouterr().err
    pipe = Pipeline(name="w", reader=readers.FastWarc(), steps=[_html_text])
    m = pipe.run(inputs=[str(single), str(multi)], output=str(tmp_path / "out"), workers=1, progress=False,
                 task_bytes=30_000)
    assert [f["input"] for f in m["split_plan"]["files_not_split"]] == [str(single)]  # counted in the manifest
    assert m["split_plan"]["files_split"] == 1 and m["docs_written"] == 2 * 22


# ---------------------------------------------------------------- uncompressed WARC


@pytest.fixture(scope="module")
def plain_warcs(tmp_path_factory) -> list[Path]:
    """The three real .warc.gz files decompressed: uncompressed WARCs."""
    root = tmp_path_factory.mktemp("plain")
    out = []
    for p in WARCS:
        out.append(root / p.name.removesuffix(".gz"))
        out[-1].write_bytes(gzip.decompress(p.read_bytes()))
    return out


def _record_starts(path: Path) -> list[int]:
    """Every record's offset, by warcio over the whole file (the independent reference)."""
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as f:
        it = ArchiveIterator(f)
        out = []
        for _ in it:
            out.append(it.get_record_offset())
    return out


@pytest.mark.parametrize("cls", [readers.Warc, readers.FastWarc])
def test_plain_warc_split_by_records_gives_the_whole_files_records_and_ids(plain_warcs, cls):
    """Ranges start at the first record start at or after their start; ids are `0+<record offset>`, the offset
    warcio gives over the whole file (so the ids of an uncompressed WARC are those it had before it split)."""
    from curate.core.document import make_id

    reader = cls()
    for path in plain_warcs:
        starts, size = _record_starts(path), path.stat().st_size
        whole = _same(reader, path, _even(path, 7))
        for cuts in (_even(path, 64), starts[1:], [a + 1 for a in starts[1:60]], [size - 1], [starts[2]] * 3):
            _same(reader, path, cuts)
        docs = list(reader.read_split(Split(str(path), "k"), StepStats("read")))
        assert [d.metadata["warc_record_id"] for d in docs] == _warcio_html(path)
        assert {d.id for d in docs} <= {make_id("web", f"k\x000+{a}") for a in starts} and len(whole) == len(docs)
    plan = plan_splits(str(plain_warcs[0]), tasks=7)
    assert len(plan) == 7 and {s.start for s in plan} <= {0, *_record_starts(plain_warcs[0])} and not plan.whole


def _quoting(record: bytes, n: int) -> bytes:
    """An HTML response record whose page quotes `record` (raw bytes: a WARC record inside a record)."""
    body = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body><pre>\n" + record + b"\n</pre></body></html>"
    head = (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.com/q%d\r\n"
            b"WARC-Record-ID: <urn:uuid:q%d>\r\nContent-Length: %d\r\n\r\n" % (n, n, len(body)))
    return head + body + b"\r\n\r\n"


def test_a_record_whose_page_holds_warc_text_is_read_once_whatever_the_cuts(plain_warcs, tmp_path):
    """Lines `WARC/1.0` in a page, even with a Content-Length that does not land on a record, are no record start:
    every cut inside that page gives the whole file's documents."""
    fake = b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 12\r\n\r\nnot a record"
    words = b"the format begins\nWARC/1.0\nand a header line WARC/1.1\r\n"
    data = plain_warcs[1].read_bytes()
    path = tmp_path / "quotes.warc"
    path.write_bytes(data + _quoting(fake, 1) + _quoting(words * 3, 2) + data)
    inner = [len(data) + i for i in range(0, len(_quoting(fake, 1)) + len(_quoting(words * 3, 2)), 7)]
    reader = readers.FastWarc()
    whole, stats = _read(reader, [Split(str(path), "k")])
    n = len(_read(reader, [Split(str(plain_warcs[1]), "k")])[0])
    assert len(whole) == 2 * n + 2 and not stats.dropped.get("read:bad_header")
    for cut in inner:
        _same(reader, path, [cut])
    _same(reader, path, inner[::5])


def test_a_warc_record_stored_inside_a_record_fails_a_split_through_it_loudly(plain_warcs, tmp_path):
    """A whole record (with blank lines and a next `WARC/` after its content) stored in a page cannot be told from
    a record start by a range that begins before it: the range before sees its own reading reach another record
    and fails in one line; read whole, the file gives every record once."""
    data = plain_warcs[1].read_bytes()
    stored = data[: _record_starts(plain_warcs[1])[3]]  # the file's first three records, WARC/ after them
    path = tmp_path / "stored.warc"
    quoting = _quoting(stored, 1)
    path.write_bytes(data + quoting + data)
    at = len(data) + quoting.index(stored)
    docs, _ = _read(readers.Warc(), [Split(str(path), "k")])
    assert len(docs) == 2 * len(_read(readers.Warc(), [Split(str(plain_warcs[1]), "k")])[0]) + 1
    with pytest.raises(UsageError, match=f"search from byte {at - 5} finds one at byte {at}.*cannot be split there"):
        _read(readers.Warc(), _ranges(path, [at - 5]))


# ---------------------------------------------------------------- Parquet


@pytest.fixture(scope="module")
def gsm_parquet(tmp_path_factory) -> Path:
    """gsm8k as Parquet, 40 rows a row group (33 row groups), with its own `id` column."""
    rows = [json.loads(line) for line in GSM8K.read_text().splitlines()]
    table = pa.table({"id": [f"g{i % 50}" for i in range(len(rows))], "text": [r["question"] for r in rows]})
    path = tmp_path_factory.mktemp("pq") / "gsm.parquet"
    pq.write_table(table, path, row_group_size=40)
    return path


def test_parquet_split_by_row_groups_gives_the_whole_files_rows_and_ids(gsm_parquet):
    reader = readers.Parquet()
    table = pq.read_table(gsm_parquet).to_pylist()
    brute = [(unique_id("web", r["id"], f"k:{row}"), r["text"]) for row, r in enumerate(table)]
    meta = pq.ParquetFile(gsm_parquet).metadata
    group_starts = [min(c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
                        for c in (meta.row_group(g).column(i) for i in range(meta.num_columns)))
                    for g in range(meta.num_row_groups)]  # where each row group's first page begins
    for cuts in (_even(gsm_parquet, 7), _even(gsm_parquet, 64), group_starts[1:], [g + 1 for g in group_starts[1:]],
                 [gsm_parquet.stat().st_size - 1]):
        whole = _same(reader, gsm_parquet, cuts)
    assert [(i, t) for i, t, _, _ in whole] == brute
    plan = plan_splits(str(gsm_parquet), tasks=7)
    assert len(plan) == 7 and all(s.start in group_starts or s.start == 0 for s in plan)


# ---------------------------------------------------------------- planning


def test_the_plan_cuts_large_files_keeps_small_ones_whole_and_says_what_cannot_be_cut(tmp_path, capsys):
    small = tmp_path / "small.jsonl"
    small.write_bytes(GSM8K.read_bytes()[:2000])
    plan = plan_splits([str(GSM8K), str(small), str(JSONL_GZ)], tasks=8)
    by_url: dict[str, list[Split]] = {}
    for s in plan:
        by_url.setdefault(s.url, []).append(s)
    assert len(by_url[str(GSM8K)]) >= 4 and all(not s.whole for s in by_url[str(GSM8K)])
    unsplit = {s.url: s for s in plan_splits([str(GSM8K), str(small), str(JSONL_GZ)])}
    assert by_url[str(small)] == [unsplit[str(small)]]  # smaller than a task: whole
    assert by_url[str(JSONL_GZ)][0].whole and [u for u, _ in plan.whole] == [str(JSONL_GZ)]
    assert "stay whole" in capsys.readouterr().err
    assert {s.key for s in by_url[str(GSM8K)]} == {unsplit[str(GSM8K)].key}  # the key of the file, as unsplit
    assert plan_splits(str(GSM8K)) == [Split(str(GSM8K), "test.jsonl")]
    assert len(plan_splits(str(GSM8K), task_bytes=parse_size("64K"))) == -(-GSM8K.stat().st_size // 65536)


def test_bad_options_and_readers_that_cannot_split_are_one_line(tmp_path):
    for kw in ({"tasks": 0}, {"task_bytes": -1}, {"tasks": 2, "task_bytes": 10}):
        with pytest.raises(UsageError):
            plan_splits(str(GSM8K), **kw)
    for bad in ("12Q", "", "-5", "0"):
        with pytest.raises(UsageError, match="--task-bytes"):
            parse_size(bad)
    assert parse_size("2G") == 2 << 30 and parse_size("512MiB") == 512 << 20 and parse_size("100") == 100

    class Mine(Reader):
        def read(self, path, stats):
            yield from ()

    with pytest.raises(UsageError, match="reader Mine cannot read a byte range"):
        list(Mine().read_split(Split("x.jsonl", "x", 10, 20), StepStats("read")))
    with pytest.raises(UsageError, match="cannot read 1 record"):
        list(readers.Jsonl().read_split(Split(str(GSM8K), "k", records=((0, 10),)), StepStats("read")))
    assert list(readers.Jsonl().read_split(Split(str(JSONL_GZ), "k", 10, 20), StepStats("read"))) == []  # no member


def test_cc_inputs_are_planned_by_the_commoncrawl_module_and_splits_pass_as_given(monkeypatch):
    import types

    fake = types.ModuleType("curate.io.commoncrawl")
    fake.cc_splits = lambda url: [Split("s3://cc/a.warc.gz", "a.warc.gz", records=((10, 5),)), Split(str(WARCS[2]), "b")]
    monkeypatch.setitem(sys.modules, "curate.io.commoncrawl", fake)
    mine = Split(str(GSM8K), "mine", 0, 100)
    plan = plan_splits([mine, "cc://CC-MAIN-2024-10?x", str(GSM8K)], task_bytes=100_000)
    assert plan[:2] == [mine, fake.cc_splits("")[0]]  # records and given ranges untouched, in the order given
    assert {s.url for s in plan[2:4]} == {str(WARCS[2])} and plan[2].start == 0 and plan[3].start > 0  # cut too
    plan = [s for s in plan if s.url != str(WARCS[2])]
    assert all(s.url == str(GSM8K) and s.key == "test.jsonl" for s in plan[2:]) and len(plan) >= 4
    monkeypatch.setitem(sys.modules, "curate.io.commoncrawl", None)  # the module missing
    with pytest.raises(UsageError, match="curate.io.commoncrawl"):
        plan_splits("cc://CC-MAIN-2024-10")


# ---------------------------------------------------------------- runs


PIPE = """
from curate import Pipeline, readers

def keep(doc):
    return len(doc.text) > 150

pipeline = Pipeline(name="splits", reader=readers.Jsonl(text_key="question"), steps=[keep])
"""


def _rows(out: Path) -> list[tuple]:
    files = sorted((out / "data").glob("*.parquet"))
    return [(r["id"], r["text"]) for f in files for r in pq.read_table(f).to_pylist()]


def _html_text(doc):
    doc.text = doc.html[:2000]
    return doc


def test_a_run_split_1_7_64_ways_writes_the_unsplit_runs_documents(tmp_path):
    """JSONL and WARC inputs in one run, on the local executor with 2 workers."""
    jsonl = Pipeline(name="j", reader=readers.Jsonl(text_key="question"), steps=[lambda d: len(d.text) > 150])
    warc = Pipeline(name="w", reader=readers.FastWarc(), steps=[_html_text])
    for name, pipe, inputs in (("j", jsonl, [str(GSM8K)]), ("w", warc, [str(p) for p in WARCS])):
        ref = pipe.run(inputs=inputs, output=str(tmp_path / f"{name}-ref"), workers=2, progress=False)
        want = _rows(tmp_path / f"{name}-ref")
        assert len(want) == ref["docs_written"] > 100
        for n in (7, 64):
            out = tmp_path / f"{name}-{n}"
            m = pipe.run(inputs=inputs, output=str(out), workers=2, progress=False, tasks=n)
            assert _rows(out) == want, (name, n)
            assert n // 2 <= m["split_plan"]["tasks"] <= n + len(inputs) and m["split_plan"]["files_not_split"] == []
            assert any("-r00" in p for p in m["outputs"])


def _cmd(root: Path, out: Path, *extra: str) -> list[str]:
    return [*CURATE, "run", str(root / "pipe.py"), "--input", str(GSM8K), "--output", str(out), "--workers", "2",
            "--no-progress", *extra]


def test_a_killed_split_run_resumes_to_the_same_documents_and_another_plan_is_refused(tmp_path):
    slow = PIPE.replace("def keep(doc):\n", "def keep(doc):\n    import time; time.sleep(0.002)\n")
    (tmp_path / "pipe.py").write_text(slow)
    ref = subprocess.run(_cmd(tmp_path, tmp_path / "ref"), capture_output=True, text=True, timeout=300)
    assert ref.returncode == 0, ref.stderr
    out = tmp_path / "out"
    done = out / "_done"
    killed = kill_after(_cmd(tmp_path, out, "--tasks", "7"), lambda: done.is_dir() and len(os.listdir(done)) >= 2,
                        signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    assert 2 <= len(os.listdir(done)) < 7
    other = subprocess.run(_cmd(tmp_path, out, "--tasks", "9"), capture_output=True, text=True, timeout=300)
    assert other.returncode == 2
    assert "split into other tasks (7 then, 9 now" in other.stderr and len(other.stderr.strip().splitlines()) == 1
    again = subprocess.run(_cmd(tmp_path, out, "--tasks", "7"), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert _rows(out) == _rows(tmp_path / "ref")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["split_plan"]["tasks"] == 7 and len(os.listdir(done)) == 7
    unsplit = subprocess.run(_cmd(tmp_path, out), capture_output=True, text=True, timeout=300)
    assert unsplit.returncode == 2 and "7 then, one per file now" in unsplit.stderr


def test_limit_with_tasks_is_refused():
    p = Pipeline(name="x", reader=readers.Jsonl(text_key="question"))
    with pytest.raises(UsageError, match="--limit"):
        p.run(inputs=[str(GSM8K)], output="/nonexistent/out", limit=5, tasks=3, progress=False)


def test_a_reader_that_cannot_read_a_range_is_refused_before_anything_is_written(tmp_path):
    class Whole(Reader):
        def read(self, path, stats, key=None):
            yield from readers.Jsonl(text_key="question").read(path, stats, key)

    p = Pipeline(name="x", reader=Whole())
    with pytest.raises(UsageError, match="reader Whole cannot read a byte range"):
        p.run(inputs=[str(GSM8K)], output=str(tmp_path / "out"), tasks=3, progress=False)
    assert not (tmp_path / "out").exists()
    p.run(inputs=[str(GSM8K)], output=str(tmp_path / "out"), progress=False)  # unsplit: read whole
    assert len(_rows(tmp_path / "out")) == 1319


@pytest.mark.slow
def test_a_split_run_on_ray_writes_the_unsplit_local_runs_documents(tmp_path):
    ray = pytest.importorskip("ray")
    from curate.run.executors.ray import RayExecutor

    pipe = Pipeline(name="j", reader=readers.Jsonl(text_key="question"), steps=[lambda d: len(d.text) > 150])
    pipe.run(inputs=[str(GSM8K)], output=str(tmp_path / "local"), workers=1, progress=False)
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        m = pipe.run(inputs=[str(GSM8K)], output=str(tmp_path / "ray"), executor=RayExecutor(progress=False), tasks=7)
    finally:
        ray.shutdown()
    assert m["split_plan"]["tasks"] == 7
    assert _rows(tmp_path / "ray") == _rows(tmp_path / "local")


class _Failing:
    """A file whose reads past byte `at` raise OSError: a disk or network fault in the middle of a range."""

    def __init__(self, f, at: int):
        self.f, self.at = f, at

    def read(self, n=-1):
        if self.f.tell() + (n if n and n > 0 else 1 << 30) > self.at:
            raise OSError(5, "injected I/O error")
        return self.f.read(n)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


@pytest.mark.parametrize("path, reader", [(GSM8K, readers.Jsonl(text_key="question")), (WARCS[0], readers.Warc()),
                                          (WARCS[0], readers.FastWarc())], ids=["jsonl", "warc", "fastwarc"])
def test_an_io_error_inside_a_range_fails_the_task_never_counted_as_bad_data(path, reader, monkeypatch):
    from curate.io import fs

    real_open = fs.open
    size = path.stat().st_size
    monkeypatch.setattr(fs, "open", lambda p, mode="rb", **kw: _Failing(real_open(p, mode, **kw), size * 3 // 5))
    stats = StepStats("read")
    with pytest.raises(OSError, match="injected"):
        for _ in reader.read_split(Split(str(path), "k", size // 2, size * 4 // 5), stats):
            pass
    damage = {"corrupt_stream", "bad_gzip", "truncated_record", "bad_header", "bad_record", "not_warc", "bad_json"}
    assert not {r.removeprefix("read:") for r in stats.dropped} & damage, stats.dropped


def test_a_rerun_whose_options_spell_the_same_plan_resumes(tmp_path):
    pipe = Pipeline(name="j", reader=readers.Jsonl(text_key="question"), steps=[lambda d: len(d.text) > 150])
    out = str(tmp_path / "out")
    first = pipe.run(inputs=[str(GSM8K)], output=out, workers=1, progress=False, tasks=7)
    size = GSM8K.stat().st_size
    again = pipe.run(inputs=[str(GSM8K)], output=out, workers=1, progress=False, task_bytes=-(-size // 7))
    assert again["split_plan"] == first["split_plan"] and again["docs_written"] == first["docs_written"]
    with pytest.raises(UsageError, match="split into other tasks"):
        pipe.run(inputs=[str(GSM8K)], output=out, workers=1, progress=False, task_bytes=size // 7 - 1000)


def test_ranges_read_through_fsspec_urls_as_from_local_files():
    """The same plan and documents when the input is a URL (fsspec's memory store stands for an object store)."""
    import fsspec

    store = fsspec.filesystem("memory")
    try:
        for name, src, reader in (("t.jsonl", GSM8K, readers.Jsonl(text_key="question")),
                                  ("a.warc.gz", WARCS[2], readers.FastWarc())):
            url = f"memory://splits-test/{name}"
            store.pipe(url, src.read_bytes())
            plan, local = plan_splits(url, task_bytes=20_000), plan_splits(str(src), task_bytes=20_000)
            assert [(s.start, s.end) for s in plan] == [(s.start, s.end) for s in local] and len(plan) > 5
            assert _read(reader, plan)[0] == _read(reader, [Split(url, plan[0].key)])[0]
    finally:
        store.rm("memory://splits-test", recursive=True)


class _KeepAll(GlobalStep):
    """A global step that needs unique ids (it declares nothing), so the run checks them before it."""

    name = "keep"

    def run_global(self, ctx):
        for p in ctx.inputs:
            shutil.copy(p, os.path.join(ctx.output_dir, os.path.basename(p)))
        return [StepStats(self.name)]


def _halves(doc):
    """Two parts with the parent's id (not `Document.child`): repeated ids, which `_KeepAll` refuses."""
    return [dataclasses.replace(doc, text=doc.text[:40]), dataclasses.replace(doc, text=doc.text[40:])]


def test_repeated_ids_in_a_split_run_are_named_by_the_input_not_the_ranges_shard(tmp_path):
    """The shards of a range are `part-NNNNN-rRRRR-KKK.parquet`; the refusal names the input file they came from."""
    from curate.dedup.ids import input_of

    files = ["a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"]
    assert input_of("/o/data/part-00003-r0005-000.parquet", files) == "d.jsonl"
    assert input_of("/o/data/part-00002-001.parquet", files) == "c.jsonl"
    assert input_of("/o/data/part-00009-r0001-000.parquet", files).endswith("part-00009-r0001-000.parquet")
    pipe = Pipeline(name="x", reader=readers.Jsonl(text_key="question"), steps=[_halves, _KeepAll()])
    with pytest.raises(UsageError) as e:
        pipe.run(inputs=[str(GSM8K)], output=str(tmp_path / "out"), workers=1, progress=False, tasks=3)
    assert f"is twice in {GSM8K} (" in str(e.value) and "part-0" not in str(e.value)


def test_an_io_error_inside_a_range_of_a_compressed_file_fails_the_task(chained, monkeypatch):
    from curate.io import fs

    real_open, path = fs.open, chained["gz"]
    size = path.stat().st_size
    monkeypatch.setattr(fs, "open", lambda p, mode="rb", **kw: _Failing(real_open(p, mode, **kw), size * 3 // 5))
    stats = StepStats("read")
    with pytest.raises(OSError, match="injected"):
        for _ in readers.Jsonl().read_split(Split(str(path), "k", size // 2, size * 4 // 5), stats):
            pass
    assert not stats.dropped, stats.dropped


def test_a_run_over_compressed_jsonl_split_7_ways_writes_the_unsplit_runs_documents(chained, tmp_path):
    pipe = Pipeline(name="z", reader=readers.Jsonl(), steps=[lambda d: len(d.text) > 500])
    inputs = [str(chained["gz"]), str(chained["zst"]), str(chained["gz1"])]
    pipe.run(inputs=inputs, output=str(tmp_path / "ref"), workers=2, progress=False)
    m = pipe.run(inputs=inputs, output=str(tmp_path / "split"), workers=2, progress=False, tasks=7)
    assert _rows(tmp_path / "split") == _rows(tmp_path / "ref") and len(_rows(tmp_path / "ref")) > 1000
    assert [f["input"] for f in m["split_plan"]["files_not_split"]] == [str(chained["gz1"])]
    assert m["split_plan"]["files_split"] == 2


@pytest.mark.parametrize("cls", [readers.Warc, readers.FastWarc])
def test_an_io_error_inside_a_range_of_an_uncompressed_warc_fails_the_task(plain_warcs, cls, monkeypatch):
    from curate.io import fs

    real_open, path = fs.open, plain_warcs[0]
    size = path.stat().st_size
    monkeypatch.setattr(fs, "open", lambda p, mode="rb", **kw: _Failing(real_open(p, mode, **kw), size * 3 // 5))
    stats = StepStats("read")
    with pytest.raises(OSError, match="injected"):
        for _ in cls().read_split(Split(str(path), "k", size // 2, size * 4 // 5), stats):
            pass
    damage = {"corrupt_stream", "truncated_record", "bad_header", "bad_record", "not_warc"}
    assert not {r.removeprefix("read:") for r in stats.dropped} & damage, stats.dropped


def _damage(data: bytes, rng) -> bytes:
    """`data` with 1-4 random faults: a flipped bit, junk (gzip magic, `WARC/1.0` lines, random bytes) inserted,
    bytes deleted, the end cut."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op, i = rng.choice(["flip", "junk", "cut", "del"]), rng.randrange(len(buf))
        if op == "flip":
            buf[i] ^= 1 << rng.randrange(8)
        elif op == "junk":
            buf[i:i] = rng.choice([b"WARC/1.0\r\n", b"\x1f\x8b\x08junk", b"\n\n\n", rng.randbytes(30)])
        elif op == "cut":
            del buf[rng.randrange(len(buf) // 2, len(buf)):]
        else:
            del buf[i:i + rng.randrange(1, 200)]
    return bytes(buf)


@pytest.mark.parametrize("kind", ["jsonl.gz", "warc"])
def test_randomly_damaged_files_split_at_random_give_the_whole_files_documents_or_fail_loudly(plain_warcs, kind,
                                                                                                tmp_path):
    """A multi-member .jsonl.gz always reads the same split or whole; an uncompressed WARC the same, or the split
    fails in one line (a UsageError) where damage breaks the record chain at a range's end: never different."""
    import random

    rng = random.Random(f"damaged-{kind}")
    if kind == "warc":
        base, reader = plain_warcs[1].read_bytes(), readers.FastWarc()
    else:
        text = gzip.decompress((DATA / "text/web_cc/dolma_ccnet_cc_en_head-0091.jsonl.gz").read_bytes())
        base, reader = b"".join(gzip.compress(p, 6, mtime=0) for p in _blocks(text, [3000, 20000, 100])), readers.Jsonl()
    outcomes, damaged = [], 0
    for i in range(12):
        path = tmp_path / f"d{i}.{kind}"
        path.write_bytes(_damage(base, rng))
        whole = _read(reader, [Split(str(path), "k")])
        damaged += bool({"read:corrupt_stream", "read:bad_header", "read:truncated_record", "read:bad_json",
                         "read:bad_record"} & set(whole[1].dropped))
        cuts = sorted(rng.sample(range(1, path.stat().st_size), 9))
        try:
            got = _read(reader, _ranges(path, cuts))
        except UsageError as e:
            assert kind == "warc" and "cannot be split" in str(e) and "\n" not in str(e)
            outcomes.append("loud")
            continue
        assert (got[0], got[1].docs_in, dict(got[1].dropped)) == (whole[0], whole[1].docs_in, dict(whole[1].dropped))
        outcomes.append("same")
    assert outcomes.count("same") >= 6 and damaged >= 4, (outcomes, damaged)
