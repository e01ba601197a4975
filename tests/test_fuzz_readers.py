"""Seeded mutations of the real files in ../shared/data, read by every reader: nothing intact is lost,
nothing damaged gets out, and every record in the mutated file is read or counted under a reason.

The expected outcome of each mutated file is computed here, independently of the readers: the
original file is cut into its records (gzip members located with zlib, JSON lines, Parquet row
groups) and each record is followed through the mutations that hit it. A WARC member is intact if
zlib still decompresses it, alone, to the same bytes; a JSON line is read if the standard library's
json parses it to an object with a text string. Fixed seeds, so a failure reproduces.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import re
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate import Pipeline, readers
from curate.core.stats import StepStats

WARCS = ["wget/dolma_sample-0001.warc.gz", "wget/dolma_sample-0000.warc.gz",
         "cc/resiliparse_warcfile.CC-MAIN-2020-34.warc.gz", "clueweb09/clueweb09-ja-quirk.warc.gz"]
MUTANTS_PER_FILE = 40
FIGURES: Counter = Counter()  # summed over the whole module, printed at the end (-s shows them)


def read(reader, path: Path) -> tuple[list, StepStats]:
    stats = StepStats("read")
    docs = list(reader.read(str(path), stats))
    return docs, stats


def account(docs: list, stats: StepStats, units: int) -> None:
    """Zero unaccounted: every record of the mutated file is a document or one counted drop."""
    assert stats.docs_in == units, (stats.docs_in, units, dict(stats.dropped))
    assert stats.docs_in == len(docs) + sum(stats.dropped.values())
    FIGURES["reads"] += 1  # one reader over one mutated file
    FIGURES["records_read"] += len(docs)
    FIGURES["records_counted"] += sum(stats.dropped.values())
    FIGURES.update({f"reason {k}": v for k, v in stats.dropped.items()})
    FIGURES.update({f"figure {k}": v for k, v in stats.extra.items()})


# ---------------------------------------------------------------- WARC


@dataclass
class Seg:
    """A piece of the mutated file: its bytes, and the record id of the document it must yield (html),
    or None when it must be counted (a non-HTML record, or damage)."""

    data: bytes
    rid: str | None
    counted: bool = True  # False only for the zero-length remainder of a cut at a boundary
    tail: int = 0  # counts beyond the record's own: 1 for bytes after its Content-Length that start no record
    utf16: bool = False  # a page made UTF-16 without a BOM: its HTML must come out without NULs


def units(segs: list[Seg]) -> int:
    return sum(1 + s.tail for s in segs)


def members(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        d.decompress(data[pos:])
        end = len(data) - len(d.unused_data)
        out.append(data[pos:end])
        pos = end
    return out


def html_rid(raw: bytes) -> str | None:
    """The WARC-Record-ID of an HTML response record (warcio's reading of the raw record), else None."""
    from warcio.archiveiterator import ArchiveIterator

    for rec in ArchiveIterator(io.BytesIO(raw)):
        ctype = (rec.http_headers.get_header("Content-Type") or "") if rec.http_headers else ""
        if rec.rec_type == "response" and "text/html" in ctype.lower() and rec.http_headers.protocol.startswith("HTTP/"):
            return rec.rec_headers.get_header("WARC-Record-ID")
    return None


def intact(original: bytes, mutated: bytes) -> bool:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(mutated)
    except zlib.error:
        return False
    return d.eof and not d.unused_data and out == zlib.decompress(original, 16 + zlib.MAX_WBITS)


def one_record(member: bytes) -> bool:
    """Whether `member` is one whole gzip member holding a record `rewrite` can edit."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        raw = d.decompress(member)
    except zlib.error:
        return False
    return d.eof and not d.unused_data and raw.startswith(b"WARC/") and b"\r\n\r\n" in raw and \
        re.search(rb"Content-Length:\s*\d+", raw, re.I) is not None


def rewrite(member: bytes, fn) -> bytes:
    """Decompress a member, change its record with `fn(header, block) -> (header, block)`, fix Content-Length."""
    raw = zlib.decompress(member, 16 + zlib.MAX_WBITS)
    head, _, rest = raw.partition(b"\r\n\r\n")
    length = int(re.search(rb"Content-Length:\s*(\d+)", head, re.I).group(1))
    head, block = fn(head, rest[:length])
    head = re.sub(rb"(Content-Length:\s*)\d+", lambda m: m.group(1) + str(len(block)).encode(), head, flags=re.I)
    c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return c.compress(head + b"\r\n\r\n" + block + rest[length:]) + c.flush()


def set_charset(label: str):
    def fn(head, block):
        http, sep, body = block.partition(b"\r\n\r\n")
        http = re.sub(rb"(?im)^(Content-Type:)[^\r\n]*", b"\\1 text/html; charset=" + label.encode(), http)
        return head, http + sep + body
    return fn


def inject_bytes(junk: bytes):
    def fn(head, block):
        http, sep, body = block.partition(b"\r\n\r\n")
        at = len(body) // 2
        return head, http + sep + body[:at] + junk + body[at:]
    return fn


def http_parts(block: bytes) -> tuple[bytes, bytes]:
    """An HTTP block's head without the encodings of its body (which a mutation re-encodes), and its body."""
    end = re.search(rb"\r?\n\r?\n", block)  # ClueWeb09's heads end in bare LFs
    http, body = block[: end.start()], block[end.end():]
    return re.sub(rb"(?im)^(Content|Transfer)-Encoding:[^\r\n]*(\r?\n|$)", b"", http), body


def brotli_page(bomb: bool):
    """The page's body as brotli (`Content-Encoding: br`), or a brotli bomb over `max_html_bytes` in its place."""
    import brotli

    def fn(head, block):
        http, body = http_parts(block)
        if bomb:
            c = brotli.Compressor(quality=1)
            body = c.process(b"") + b"".join(c.process(bytes(1 << 20)) for _ in range(6)) + c.finish()
        else:
            body = brotli.compress(body)
        return head, http + b"\r\nContent-Encoding: br\r\n\r\n" + body
    return fn


def utf16_page(head, block):
    """The page as UTF-16LE without a byte-order mark and without a declared charset."""
    http, body = http_parts(block)
    http = re.sub(rb"(?im)^(Content-Type:)[^\r\n]*", b"\\1 text/html", http)
    return head, http + b"\r\n\r\n" + body.decode("utf-8", "replace").encode("utf-16-le")


DAMAGE = ("bitflip", "bitflip", "truncate", "splice", "junk", "bad_header", "bad_http", "bad_charset", "bad_bytes",
          "duplicate")
# Hostile records (issue 22): pages that decode (brotli, UTF-16 without a BOM) or must be counted (a brotli
# bomb, a header block over 32 KiB), and a Content-Length too short, whose tail must be passed over.
HOSTILE = ("brotli", "brotli_bomb", "long_header", "utf16", "short_length", "duplicate", "splice")


def mutate_warc(segs: list[Seg], donors: list[Seg], rng: random.Random, kinds=DAMAGE) -> tuple[list[Seg], str]:
    """One seeded mutation of the segment list; returns the new list and what was done."""
    segs = list(segs)
    k = rng.randrange(len(segs))
    html = [i for i, s in enumerate(segs) if s.rid and not s.tail]  # a record with a tail is not rewritten
    kind = rng.choice(kinds)
    if kind == "bitflip":
        data = bytearray(segs[k].data)
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        ok = intact(segs[k].data, bytes(data))
        segs[k] = Seg(bytes(data), segs[k].rid if ok else None)
    elif kind == "truncate":
        cut = rng.randrange(1, len(segs[k].data))
        segs = segs[:k] + [Seg(segs[k].data[:cut], None)]
    elif kind == "splice":
        segs.insert(k, rng.choice(donors))
    elif kind == "junk":
        segs.insert(k, Seg(bytes([rng.randrange(32, 127) for _ in range(rng.randrange(1, 300))]), None))
    elif kind == "bad_header" and not segs[k].tail:
        # (pattern, replacement, whether the record is lost): no version line or no WARC-Type is a lost
        # record; a header line without its colon is dropped by both parsers, the record is still read
        how = rng.choice([(rb"^WARC/[\d.]+", b"WARX/1.0", True), (rb"(?im)^WARC-Type:[^\r\n]*\r\n", b"", True),
                          (rb"(?im)^WARC-Type:[^\r\n]*", b"WARC-Type", True), (rb"(?m)^WARC-Date:", b"WARC-Date", False)])
        new = rewrite(segs[k].data, lambda h, b: (re.sub(how[0], how[1], h, count=1), b))
        if new != rewrite(segs[k].data, lambda h, b: (h, b)):  # the header had that field
            segs[k] = Seg(new, None if how[2] else segs[k].rid)
    elif kind == "bad_http" and html:
        k = rng.choice(html)
        segs[k] = Seg(rewrite(segs[k].data, lambda h, b: (h, b.replace(b"HTTP/", b"HTXP/", 1))), None)
    elif kind in ("bad_charset", "bad_bytes") and html:
        k = rng.choice(html)
        fn = (set_charset(rng.choice(["idna", "x-no-such", "base64", "utf-7", "utf-16", "euc-jp"]))
              if kind == "bad_charset" else inject_bytes(rng.choice([b"\xed\xa0\x80", b"\xff\xfe\x00", b"\x80\x81"])))
        segs[k] = Seg(rewrite(segs[k].data, fn), segs[k].rid)  # still a whole page: read, decoded some way
    elif kind == "duplicate":
        segs.insert(k, segs[k])
    elif kind in ("brotli", "brotli_bomb", "utf16") and html:  # a page read (decoded), or a bomb counted
        k = rng.choice(html)
        if kind == "utf16" and re.search(rb"(?im)^(Content|Transfer)-Encoding:", zlib.decompress(segs[k].data, 31)):
            return segs, kind  # its stored body is encoded: re-encoding it as text would make no page
        fn = utf16_page if kind == "utf16" else brotli_page(bomb=kind == "brotli_bomb")
        segs[k] = Seg(rewrite(segs[k].data, fn), None if kind == "brotli_bomb" else segs[k].rid, utf16=kind == "utf16")
    elif kind in ("long_header", "short_length") and not (whole := [i for i, s in enumerate(segs) if not s.tail and one_record(s.data)]):
        pass
    elif kind == "long_header":  # a header block over 32 KiB: the record is counted, the next one read
        k = rng.choice(whole)
        line = b"\r\nX-Long: " + b"a" * rng.choice([40_000, 1 << 20])
        segs[k] = Seg(rewrite(segs[k].data, lambda h, b: (h + line, b)), None)
    elif kind == "short_length":  # Content-Length too small: the record's tail, in its member, starts no record
        k, cut = rng.choice(whole), rng.randrange(1, 200)
        raw = zlib.decompress(rewrite(segs[k].data, lambda h, b: (h, b)), 16 + zlib.MAX_WBITS)
        n = int(re.search(rb"Content-Length:\s*(\d+)", raw, re.I).group(1))
        if n > cut:
            raw = re.sub(rb"(Content-Length:\s*)\d+", lambda m: m.group(1) + str(n - cut).encode(), raw, count=1, flags=re.I)
            end = raw.index(b"\r\n\r\n") + 4 + n - cut  # the record as its new Content-Length frames it
            c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            segs[k] = Seg(c.compress(raw) + c.flush(), html_rid(raw[:end] + b"\r\n\r\n"),
                          tail=int(bool(raw[end:].strip(b"\r\n"))))
    return segs, kind


@pytest.fixture(scope="module")
def warc_segments(shared) -> dict[str, list[Seg]]:
    out = {}
    for name in WARCS:
        out[name] = [Seg(m, html_rid(zlib.decompress(m, 16 + zlib.MAX_WBITS))) for m in members((shared / "warc" / name).read_bytes())]
    return out


@pytest.mark.parametrize("name", WARCS)
@pytest.mark.parametrize("mutations", ["damage", "hostile"])
def test_fuzz_warc_readers(warc_segments, tmp_path, name, mutations):
    rng = random.Random(f"warc:{name}" if mutations == "damage" else f"warc-{mutations}:{name}")
    donors = [s for other, segs in warc_segments.items() if other != name for s in segs if s.rid][:20]
    for i in range(MUTANTS_PER_FILE if mutations == "damage" else MUTANTS_PER_FILE // 2):
        segs, kinds = warc_segments[name], []
        for _ in range(rng.randint(1, 3)):
            segs, kind = mutate_warc(segs, donors, rng, DAMAGE if mutations == "damage" else HOSTILE)
            kinds.append(kind)
        path = tmp_path / f"m{i}.warc.gz"
        path.write_bytes(b"".join(s.data for s in segs))
        FIGURES["mutated_files"] += 1
        want, reasons = Counter(s.rid for s in segs if s.rid), []
        for cls in (readers.Warc, readers.FastWarc):
            docs, stats = read(cls(), path)
            reasons.append((dict(stats.dropped), [d.id for d in docs]))
            got = Counter(d.metadata["warc_record_id"] for d in docs)
            assert got == want, (name, i, kinds, cls.__name__, want - got, got - want, dict(stats.dropped))
            assert len({d.id for d in docs}) == len(docs)  # duplicated records get distinct ids
            u16 = {s.rid for s in segs if s.utf16}
            assert not any("\x00" in d.html for d in docs if d.metadata["warc_record_id"] in u16), (i, kinds)
            account(docs, stats, units=units(segs))
        assert reasons[0] == reasons[1], (name, i, kinds)  # the same reasons and ids (docs/pipelines.md)


# ---------------------------------------------------------------- JSONL


def expected_jsonl(data: bytes, limit: int | None = None) -> tuple[list[str], int]:
    """Texts the reader must yield (json's reading, lone surrogates as U+FFFD) and the records in the file;
    a line longer than `limit` bytes is a record, never read; a UTF-8 BOM is no part of the first line."""
    texts, units = [], 0
    for n, line in enumerate(data.split(b"\n")):
        if limit is not None and len(line) > limit:
            units += 1
            continue
        if n == 0 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        if not line.strip():
            continue
        units += 1
        try:
            rec = json.loads(line.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict) and isinstance(rec.get("text"), str):
            texts.append(re.sub("[\ud800-\udfff]", "\ufffd", rec["text"]))
    return texts, units


JSONL_DAMAGE = ("bitflip", "truncate", "splice", "junk", "bad_charset", "surrogate", "duplicate_id")
JSONL_HOSTILE = ("long_line", "bom", "truncate", "junk", "duplicate_id")  # issue 22: record size, BOM
LINE_LIMIT = 1 << 14  # the hostile test's `max_line_bytes`: some real lines pass it, `long_line` always does


def mutate_jsonl(lines: list[bytes], rng: random.Random, kinds=JSONL_DAMAGE) -> tuple[list[bytes], str]:
    lines = list(lines)
    k = rng.randrange(len(lines))
    kind = rng.choice(kinds)
    if kind == "bitflip":
        data = bytearray(lines[k])
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        lines[k] = bytes(data)
    elif kind == "truncate":
        lines = lines[:k] + [lines[k][: rng.randrange(len(lines[k]))]]
    elif kind == "splice":
        lines.insert(k, lines[rng.randrange(len(lines))][: rng.randrange(5, 60)] + lines[rng.randrange(len(lines))][60:])
    elif kind == "junk":
        lines.insert(k, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80))).replace(b"\n", b" "))
    elif kind == "bad_charset":
        at = lines[k].find(b'"text": "') + 9
        lines[k] = lines[k][:at] + rng.choice([b"\xe9t\xe9", b"\xff\xfe", b"\xc3"]) + lines[k][at:]
    elif kind == "surrogate":
        at = lines[k].find(b'"text": "') + 9
        lines[k] = lines[k][:at] + rng.choice([b"\\ud800", b"\\udfff x", b"\\ud83d"]) + lines[k][at:]
    elif kind == "duplicate_id":
        lines.insert(k, lines[k])
    elif kind == "long_line":  # a valid record over the limit, of any length up to a few times it
        lines.insert(k, json.dumps({"id": "long", "text": "x" * rng.randrange(LINE_LIMIT - 40, 4 * LINE_LIMIT)}).encode())
    elif kind == "bom":
        lines[0] = b"\xef\xbb\xbf" + lines[0]
    return lines, kind


def test_fuzz_jsonl_reader(shared, tmp_path):
    rng = random.Random("jsonl")
    base = (shared / "text/pt/bosque_docs.jsonl").read_bytes().rstrip(b"\n").split(b"\n")
    for i in range(40):
        lines, kinds = base, []
        for _ in range(rng.randint(1, 4)):
            lines, kind = mutate_jsonl(lines, rng)
            kinds.append(kind)
        path = tmp_path / f"m{i}.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        FIGURES["mutated_files"] += 1
        want, units = expected_jsonl(path.read_bytes())
        docs, stats = read(readers.Jsonl(), path)
        assert [d.text for d in docs] == want, (i, kinds)
        assert len({d.id for d in docs}) == len(docs)
        account(docs, stats, units)


def test_fuzz_jsonl_hostile(shared, tmp_path):
    """Lines over `max_line_bytes` are counted, never read; a BOM costs nothing; the rest is read as before."""
    rng = random.Random("jsonl-hostile")
    base = (shared / "text/pt/bosque_docs.jsonl").read_bytes().rstrip(b"\n").split(b"\n")
    for i in range(20):
        lines, kinds = base, []
        for _ in range(rng.randint(1, 4)):
            lines, kind = mutate_jsonl(lines, rng, JSONL_HOSTILE)
            kinds.append(kind)
        path = tmp_path / (f"m{i}.jsonl.gz" if i % 2 else f"m{i}.jsonl")
        data = b"\n".join(lines) + b"\n"
        path.write_bytes(gzip.compress(data) if i % 2 else data)
        FIGURES["mutated_files"] += 1
        want, units = expected_jsonl(data, LINE_LIMIT)
        docs, stats = read(readers.Jsonl(max_line_bytes=LINE_LIMIT), path)
        assert [d.text for d in docs] == want, (i, kinds)
        assert len({d.id for d in docs}) == len(docs)
        account(docs, stats, units)


def test_fuzz_jsonl_gz_truncations(shared, tmp_path):
    """A .jsonl.gz is one gzip stream: a cut keeps every complete line before it and counts the rest once."""
    rng = random.Random("jsonl.gz")
    data = (shared / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz").read_bytes()
    for i in range(8):
        cut = data[: rng.randrange(len(data) // 20, len(data) - 8)]
        prefix = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut)
        whole = prefix[: prefix.rfind(b"\n") + 1]
        want, units = expected_jsonl(whole)
        path = tmp_path / f"cut{i}.jsonl.gz"
        path.write_bytes(cut)
        FIGURES["mutated_files"] += 1
        docs, stats = read(readers.Jsonl(), path)
        assert [d.text for d in docs] == want and stats.dropped["read:corrupt_stream"] == 1
        assert stats.extra["read:records_before_corrupt_stream"] == units
        account(docs, stats, units + 1)


# ---------------------------------------------------------------- Parquet


def test_fuzz_parquet_reader(shared, tmp_path):
    """Bit flips in row-group data cost at most their row group; every row read is an original row."""
    rows = [json.loads(line) for line in (shared / "text/pt/bosque_docs.jsonl").read_text().splitlines()]
    rows += rows[:40]  # duplicate ids
    src = tmp_path / "src.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in rows], "text": [r["text"] for r in rows]}), src,
                   row_group_size=40, write_page_checksum=True, compression="zstd")
    meta = pq.ParquetFile(src).metadata
    groups = []
    for g in range(meta.num_row_groups):
        col = meta.row_group(g).column(1)  # the text column
        start = col.dictionary_page_offset or col.data_page_offset
        groups.append((start, start + col.total_compressed_size, meta.row_group(g).num_rows))
    data = src.read_bytes()
    texts = [r["text"] for r in rows]
    rng = random.Random("parquet")
    for i in range(30):
        mutated = bytearray(data)
        hit = set()
        for _ in range(rng.randint(1, 3)):
            g = rng.randrange(len(groups))
            mutated[rng.randrange(groups[g][0], groups[g][1])] ^= 1 << rng.randrange(8)
            hit.add(g)
        path = tmp_path / f"m{i}.parquet"
        path.write_bytes(bytes(mutated))
        FIGURES["mutated_files"] += 1
        docs, stats = read(readers.Parquet(), path)
        got = Counter(d.text for d in docs)
        must = Counter(t for g, (_, _, n) in enumerate(groups) if g not in hit for t in texts[g * 40: g * 40 + n])
        assert not must - got, (i, sorted(hit))  # every row of an untouched row group is read
        assert not got - Counter(texts), (i, sorted(hit))  # no altered row gets out
        assert len({d.id for d in docs}) == len(docs)
        account(docs, stats, units=len(rows))
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])
    FIGURES["mutated_files"] += 1
    docs, stats = read(readers.Parquet(), cut)
    assert docs == [] and dict(stats.dropped) == {"read:not_parquet": 1}
    account(docs, stats, units=1)


def test_mutated_inputs_run_to_the_end_and_figures(shared, warc_segments, tmp_path):
    """A pipeline over a few mutated WARCs completes and its read stats add up; prints the module's figures."""
    rng = random.Random("run")
    files, n_units = [], 0
    for n, name in enumerate(WARCS):
        segs, _ = mutate_warc(warc_segments[name], [], rng)
        path = tmp_path / f"run{n}.warc.gz"
        path.write_bytes(b"".join(s.data for s in segs))
        files.append(str(path))
        n_units += units(segs)
    Pipeline(name="fuzz", reader=readers.FastWarc(), steps=[]).run(inputs=files, output=str(tmp_path / "o"),
                                                                     progress=False)
    st = {s["name"]: s for s in json.loads((tmp_path / "o/stats.json").read_text())["steps"]}["read"]
    assert st["docs_in"] == n_units and st["docs_out"] == st["docs_in"] - sum(st["dropped"].values())
    print("\nfuzz figures:", json.dumps(dict(sorted(FIGURES.items())), indent=1))
