"""Sizes in bytes, not counts (issue 29): row groups, a run writer's buffer and every batch are cut by bytes,
and whatever the project writes, the project reads.

Writers used to cut row groups at 10,000 documents whatever their size, while the next stage's reader
refused row groups over 1 GiB: 9,000 unique 150 KB documents through `[dedup.Exact(), len > 0]` came out
as 808 (`read:too_large` 8,192), and memory followed the documents' size (benchmarks/big_docs.py has the
full-size figures). Here the same paths run on a few MB, with the byte budgets scaled down to match.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate import Pipeline, dedup, quality, readers, writers
from curate.core.document import shard_schema
from curate.core.stats import StepStats
from curate.io import batching
from curate.io.readers.pages import largest_page
from curate.quality.model import TrainConfig
from curate.run.executors.local import LocalExecutor

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20


def texts(n: int, size: int, seed: int) -> list[str]:
    """`n` unique texts of `size` ASCII characters: random words from a 20,000-word vocabulary."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{v:x}".encode() for v in rng.integers(0, 1 << 40, 20_000)])
    return [b" ".join(vocab[rng.integers(0, len(vocab), size // 8)])[:size].decode() for _ in range(n)]


def corpus(path: Path, sizes: list[tuple[int, int]], seed: int = 0) -> dict[str, str]:
    """A JSONL file of unique documents (`sizes`: (count, characters) pairs, interleaved); id -> text."""
    docs: list[str] = []
    for k, (n, size) in enumerate(sizes):
        docs += texts(n, size, seed * 100 + k)
    order = np.random.default_rng(seed).permutation(len(docs))
    out = {f"doc{i:04d}": docs[j] for i, j in enumerate(order.tolist())}
    with open(path, "w", encoding="utf-8") as f:
        for i, t in out.items():
            f.write(json.dumps({"id": i, "text": t}) + "\n")
    return out


def row_groups(directory: Path) -> list[tuple[int, int]]:
    """(rows, decoded bytes) of every row group of every shard under `directory`."""
    out = []
    for p in sorted(directory.rglob("*.parquet")):
        md = pq.ParquetFile(p).metadata
        out += [(md.row_group(g).num_rows, md.row_group(g).total_byte_size) for g in range(md.num_row_groups)]
    return out


def nonempty(d) -> bool:
    return len(d.text) > 0


# ---------------------------------------------------------------- writers: row groups by bytes


def test_row_groups_are_cut_by_bytes_and_by_count(tmp_path):
    """Each row group holds at most `row_group_bytes` (a bigger document alone) and `row_group_docs`
    documents; rows and their order are those written, through both writers."""
    docs = texts(6, 150_000, 1) + texts(2, 2_000_000, 2) + texts(300, 500, 3)
    order = np.random.default_rng(0).permutation(len(docs)).tolist()
    docs = [docs[i] for i in order]
    cfg = writers.Parquet(row_group_bytes=MIB, row_group_docs=100)
    schema = shard_schema({})
    from curate.core.document import Document

    shard = cfg.open(str(tmp_path / "shards"), "part", schema)
    for i, t in enumerate(docs):
        shard.write(Document(id=f"d{i:04d}", text=t, source="web"))
    [path] = shard.commit()
    table = writers.Parquet(row_group_bytes=MIB, row_group_docs=100).open_file(str(tmp_path / "t.parquet"), schema)
    got = pq.read_table(path)
    for lo in range(0, got.num_rows, 37):  # tables of any size in, the same row groups out
        table.write_table(got.slice(lo, 37))
    table_path = table.commit()
    for p in (path, table_path):
        read = pq.read_table(p)
        assert read.column("text").to_pylist() == docs
        md = pq.ParquetFile(p).metadata
        groups = [md.row_group(g) for g in range(md.num_row_groups)]
        assert all(g.num_rows <= 100 for g in groups)
        for g in groups:  # by Arrow's own sizes: text and offsets plus the other columns, a few bytes
            assert g.num_rows == 1 or g.total_byte_size <= MIB + 64 * g.num_rows, (g.num_rows, g.total_byte_size)
        assert any(g.num_rows == 100 for g in groups)  # small documents: the count cuts
        assert sum(g.num_rows == 1 and g.total_byte_size > MIB for g in groups) == 2  # the 2 MB ones, alone


def test_row_group_bytes_is_bounded_by_what_readers_decode():
    with pytest.raises(ValueError, match="row_group_bytes"):
        writers.Parquet(row_group_bytes=batching.MAX_RECORD_BYTES + 1)


def test_row_groups_helper_cuts_exactly():
    t = pa.table({"text": ["a" * 10, "b" * 30, "c" * 5, "d" * 100, "e" * 1, "f" * 1]})
    rg = batching.RowGroups(max_bytes=50, max_rows=3)
    groups = rg.add(t) + [rg.take()]
    assert [g.column("text").to_pylist() for g in groups] == [
        ["a" * 10, "b" * 30], ["c" * 5], ["d" * 100], ["e", "f"]]  # 14 + 34 bytes; +9 would pass 50


# ---------------------------------------------------------------- the reader: a limit on what is decoded at once


def test_row_group_over_the_limit_with_small_pages_is_read_in_batches(tmp_path):
    """A file another tool wrote as one 6 MB row group of small pages: nothing in it decodes to over
    1 MiB at once, so it is read, all of it, where the old row-group limit dropped every row."""
    path = tmp_path / "one_group.parquet"
    data = texts(40, 150_000, 5)
    pq.write_table(pa.table({"text": data}), path, row_group_size=1000, write_batch_size=2, data_page_size=64 << 10,
                   use_dictionary=False)
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 1 and md.row_group(0).total_byte_size > 5 * MIB
    with open(path, "rb") as f:
        assert largest_page(f, md, 0) < MIB
    stats = StepStats("read")
    docs = list(readers.Parquet(max_record_bytes=MIB).read(str(path), stats))
    assert [d.text for d in docs] == data and not stats.dropped


def test_only_the_row_group_holding_a_record_over_the_limit_is_counted(tmp_path):
    """Row groups of one record each: the 3 MB one is over a 1 MiB limit and counted, exactly once; the
    reader never decodes it (pyarrow would decode the page whole)."""
    path = tmp_path / "mixed.parquet"
    data = ["first", "y" * (3 * MIB), "third"]
    pq.write_table(pa.table({"text": data}), path, row_group_size=1, compression="zstd")
    for reader in (readers.Parquet(max_record_bytes=MIB), readers.Parquet(max_row_group_bytes=MIB)):  # old name
        stats = StepStats("read")
        assert [d.text for d in reader.read(str(path), stats)] == ["first", "third"]
        assert dict(stats.dropped) == {"read:too_large": 1}


def test_page_headers_are_walked_for_every_page_kind(tmp_path):
    """Dictionary pages, data pages v1 and v2, nulls, nested columns, page statistics and checksums."""
    t = pa.table({"text": ["a" * 100, None, "b" * 5000] * 300, "tags": [[1, 2], [3], None] * 300,
                  "meta": [{"a": 1}, {"a": 2}, None] * 300, "kind": ["x", "y", "x"] * 300})
    for version in ("1.0", "2.0"):
        path = tmp_path / f"v{version}.parquet"
        pq.write_table(t, path, data_page_version=version, row_group_size=300, data_page_size=4096,
                       write_page_index=True, write_page_checksum=True)
        md = pq.ParquetFile(path).metadata
        with open(path, "rb") as f:
            assert all(5000 < largest_page(f, md, g) < 16_000 for g in range(md.num_row_groups))


# ---------------------------------------------------------------- every global step, then a stream stage


@pytest.fixture(scope="module")
def quality_model(shared, tmp_path_factory) -> str:
    """A tiny model (a novel's start vs 300 text messages): TopFraction(fraction=1.0) keeps every document
    whatever the scores, so only its reading and writing are under test."""
    tmp = tmp_path_factory.mktemp("sizes_quality")
    rows = (shared / "text/low_quality/SMSSpamCollection.tsv").read_text(encoding="utf-8").splitlines()[1:301]
    (tmp / "sms.txt").write_text("\n".join(r.split("\t", 1)[1] for r in rows), encoding="utf-8")
    novel = (shared / "text/clean_en/botchan_gutenberg8868.txt").read_text(encoding="utf-8")[:30_000]
    (tmp / "novel.txt").write_text(novel, encoding="utf-8")
    config = TrainConfig(epoch=1, dim=8, bucket=1000, holdout=0)
    return quality.train([str(tmp / "novel.txt")], [str(tmp / "sms.txt")], str(tmp / "quality.bin"), config).model_path


GLOBAL_STEPS = {
    "exact": lambda model: dedup.Exact(),
    "minhash": lambda model: dedup.MinHash(),
    "lines": lambda model: dedup.Lines(),
    "top_fraction": lambda model: quality.TopFraction(model, fraction=1.0),
}


@pytest.mark.parametrize("name", sorted(GLOBAL_STEPS))
def test_every_global_step_keeps_every_big_document(name, request, tmp_path, monkeypatch):
    """150 KB and 2 MB unique documents through a global step and a stream stage: every one is kept (all
    are unique: the brute-force reference keeps them all), nothing is `too_large`, and every row group
    the run wrote, in its stages and its output, holds at most `row_group_bytes` or a single document."""
    model = request.getfixturevalue("quality_model") if name == "top_fraction" else None
    monkeypatch.setattr(batching, "BATCH_BYTES", 512 << 10)
    src = tmp_path / "in.jsonl"
    want = corpus(src, [(24, 150_000), (3, 2_000_000), (40, 3_000)])
    pipe = Pipeline(name=f"sizes-{name}", reader=readers.Jsonl(source="web", unique_ids=False),
                    steps=[GLOBAL_STEPS[name](model), nonempty], writer=writers.Parquet(row_group_bytes=MIB))
    out = tmp_path / "out"
    m = pipe.run([str(src)], str(out), executor=LocalExecutor(1, progress=False))
    steps = json.loads((out / "stats.json").read_text())["steps"]
    assert [s["dropped"] for s in steps] == [{}] * len(steps)
    got = {r["id"]: r["text"] for p in sorted((out / "data").glob("*.parquet")) for r in pq.read_table(p).to_pylist()}
    assert got == want and m["docs_written"] == len(want)
    groups = row_groups(out / "_work") + row_groups(out / "data")
    stage_groups = [g for g in groups if g[0] > 0]
    assert stage_groups and all(rows == 1 or size <= MIB + 1024 * rows for rows, size in stage_groups)


# ---------------------------------------------------------------- memory follows the budgets, not the corpus


RSS_SCRIPT = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from test_sizes import corpus, nonempty
    from curate import Pipeline, dedup, readers, writers
    from curate.io import batching, writers as w
    from curate.run import pipeline as p
    from curate.run.executors.local import LocalExecutor

    batching.BATCH_BYTES = 2 << 20  # every budget scaled down by the same 16 from the defaults
    p.BATCH_CHARS = 1 << 20
    w.CHUNK_CHARS = 256 << 10
    work, n = Path(sys.argv[1]), int(sys.argv[2])
    corpus(work / "in.jsonl", [(n, 2_000_000), (4 * n, 150_000)])
    def status(field):
        return next(int(l.split()[1]) << 10 for l in open("/proc/self/status") if l.startswith(field))
    pipe = Pipeline(name="rss", reader=readers.Jsonl(source="web"), steps=[dedup.Exact(), nonempty],
                    writer=writers.Parquet(row_group_bytes=4 << 20))
    pipe.run([str(work / "in.jsonl")], str(work / "warm"), executor=LocalExecutor(1, progress=False), limit=2)
    open("/proc/self/clear_refs", "w").write("5")  # VmHWM from here: the run, not the imports or the data
    base = status("VmRSS")
    m = pipe.run([str(work / "in.jsonl")], str(work / "out"), executor=LocalExecutor(1, progress=False))
    print(json.dumps({{"docs": m["docs_written"], "peak": status("VmHWM") - base}}))
''')


def _peak(tmp_path: Path, n: int) -> dict:
    work = tmp_path / f"n{n}"
    work.mkdir()
    # Measured is what the code holds, not what an allocator keeps: Arrow on malloc, and malloc returning
    # every block over 256 KiB at once (glibc's default threshold moves up after a large free, so freed
    # 2 MB texts stay resident and the peak wanders with the order of allocations)
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_MMAP_THRESHOLD_": str(256 << 10)}
    done = subprocess.run([sys.executable, "-c", RSS_SCRIPT.format(tests=str(ROOT / "tests")), str(work), str(n)],
                          capture_output=True, text=True, cwd=ROOT, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # two fresh processes, ~7 s of CPU each
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc/self/clear_refs")
def test_peak_rss_follows_the_batch_budget_not_the_corpus(tmp_path):
    """The same run, `[dedup.Exact(), len > 0]`, on a corpus 4x bigger (10 then 42 MB: 2 MB and 150 KB
    documents) has about the same peak: a few times the budgets (2 MiB batches, 4 MiB row groups, 2 MB
    documents), whatever the corpus. Cut by counts, every batch held the whole corpus (8,192 documents)."""
    small, big = _peak(tmp_path, 4), _peak(tmp_path, 16)
    assert small["docs"] == 20 and big["docs"] == 80
    assert big["peak"] < small["peak"] + 12 * MIB, (small, big)  # the corpus grew by 31 MB
    assert big["peak"] < 48 * MIB, big
