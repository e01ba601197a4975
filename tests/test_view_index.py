"""curate view's shard index and its stop-early text search, in process (no server, no browser): every page and
count must equal what pyarrow reads from the shards, whether a shard is indexed, not yet indexed, or rewritten
after it was indexed (a stale index must never be read)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("starlette")

from curate.view import query  # noqa: E402
from curate.view.index import ShardIndex  # noqa: E402

WORDS = ["harbour", "committee", "river", "school", "garden", "market", "bridge", "music"]


def _shard(path, rng, start: int, n: int, reason: bool = False) -> None:
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(1, 60))) for _ in range(n)]
    cols = {"id": [f"d{start + i:05d}" for i in range(n)], "text": texts, "source": ["web"] * n,
            "url": [f"https://s{i % 7}.example/{start + i}" for i in range(n)],
            "lang": rng.choice(["en", "pt"], size=n).tolist(), "quality_score": rng.uniform(size=n),
            "metadata": ["{}"] * n}
    if reason:
        cols["drop_reason"] = rng.choice(["a:x", "b:y"], size=n).tolist()
    pq.write_table(pa.table(cols), path, row_group_size=40)


@pytest.fixture
def run(tmp_path):
    rng = np.random.default_rng(7)
    for part in ("data", "rejected"):
        (tmp_path / part).mkdir()
    for s in range(3):
        _shard(tmp_path / "data" / f"part-{s:05d}.parquet", rng, s * 1000, 120)
        _shard(tmp_path / "rejected" / f"part-{s:05d}.parquet", rng, s * 1000 + 500, 30, reason=True)
    return tmp_path


def _ref(run) -> list[dict]:
    out = []
    for part, status in (("data", "kept"), ("rejected", "dropped")):
        for f in sorted((run / part).glob("*.parquet")):
            out += [{**r, "status": status} for r in pq.read_table(f).to_pylist()]
    return out


def _page(r, **qs) -> query.Page:
    return query.documents(r, query.Filters.parse({k: str(v) for k, v in qs.items()}, r.numeric()))


CASES = [({"min:length": 100, "max:length": 200}, lambda d: 100 <= len(d["text"]) < 200),
         ({"status": "dropped", "step": "a", "min:length": 50}, lambda d: (d.get("drop_reason") or "").startswith(
             "a:") and len(d["text"]) >= 50),
         ({"lang": "pt", "sort": "length", "desc": 1}, lambda d: d["lang"] == "pt")]


def test_indexed_pages_equal_the_shards_and_a_rewritten_shard_is_never_read_stale(run, tmp_path_factory):
    index = ShardIndex(str(tmp_path_factory.mktemp("cache")), background=False)  # indexed here, by build
    built = query.Run(str(run))
    shards = built.shards("data") + built.shards("rejected")
    for i, s in enumerate(shards):  # all but the last indexed: one query mixes index files and a shard
        if i < len(shards) - 1:
            assert index.build(s)
    r = query.Run(os.path.relpath(run))  # the same run named another way (another cwd): the same index
    r.index = index
    shards = r.shards("data") + r.shards("rejected")
    assert [r.index.current(s) is not None for s in shards] == [True] * 5 + [False]
    plan = r.frame(narrow=True).explain()  # the narrow query reads the index files, and the one shard without
    assert index.folder in plan and shards[-1] in plan and shards[0] not in plan
    for step in ("indexed", "rewritten"):
        ref = _ref(run)
        for qs, pred in CASES:
            want = [d for d in ref if pred(d)]
            got = _page(r, **qs)
            assert got.total == len(want) and got.exact, (step, qs)
            if "sort" in qs:
                assert [x["length"] for x in got.rows] == sorted((len(d["text"]) for d in want), reverse=True)[:50]
            else:
                assert [(x["id"], x["length"], x["snippet"]) for x in got.rows] == \
                    [(d["id"], len(d["text"]), d["text"][:query.SNIPPET]) for d in want][:50]
        if step == "rewritten":
            break
        # the first shard rewritten as `--overwrite` would (new content, same name): its index is for the old one
        first = run / "data" / "part-00000.parquet"
        _shard(first, np.random.default_rng(99), 0, 120)
        os.utime(first, ns=(1, 1))
        assert r.index.current(str(first)) is None


def test_text_search_stops_at_the_first_full_page_and_counts_all_on_request(run):
    r = query.Run(str(run))
    ref = _ref(run)
    want = [d["id"] for d in ref if "harbour" in d["text"]]
    by_shard = [sum("harbour" in d["text"] for d in pq.read_table(f).to_pylist())
                for f in sorted((run / "data").glob("*.parquet"))]
    assert by_shard[0] >= 50 and len(want) > by_shard[0]  # the first shard fills page 1
    got = _page(r, q="HARBOUR")
    assert not got.exact and got.total == by_shard[0] and [x["id"] for x in got.rows] == want[:50]
    deep = _page(r, q="harbour", page=2)  # rows 100-149: past the first shard
    assert [x["id"] for x in deep.rows] == want[100:150] and deep.total >= 150
    exact = _page(r, q="harbour", exact=1)
    assert exact.exact and exact.total == len(want) and [x["id"] for x in exact.rows] == want[:50]
    rare = _page(r, q="harbour harbour harbour harbour", status="dropped")  # all shards read: exact
    assert rare.exact and rare.total == sum("harbour harbour harbour harbour" in d["text"] for d in ref
                                            if d["status"] == "dropped")


def test_compare_reads_hashes_the_same_from_an_index_and_from_a_shard(run, tmp_path_factory):
    """Run A indexed, its copy B not, one text of B changed and one document of B removed: the comparison finds
    exactly those (hashes from index files equal hashes computed from the shards), with A's snippet."""
    from curate.view import compare

    other = tmp_path_factory.mktemp("other") / "b"
    shutil.copytree(run, other)
    shard = other / "data" / "part-00001.parquet"
    t = pq.read_table(shard).to_pylist()
    t[3]["text"] += " changed"
    gone = t.pop(5)["id"]
    pq.write_table(pa.Table.from_pylist(t), shard)
    a, b = query.Run(str(run)), query.Run(str(other))
    a.index = ShardIndex(str(tmp_path_factory.mktemp("cache")), background=False)
    for s in a.shards("data") + a.shards("rejected"):
        a.index.build(s)
    got = compare.compare(a, b, "changed", 0)
    assert got.counts == {"only_a": 1, "only_b": 0, "changed": 1}
    in_a = {d["id"]: d["text"] for d in _ref(run)}
    assert [(r["id"], r["snippet"]) for r in got.rows] == [(t[3]["id"], in_a[t[3]["id"]][:query.SNIPPET])]
    assert [r["id"] for r in compare.compare(a, b, "only_a", 0).rows] == [gone]


def test_a_killed_servers_half_written_index_is_removed_and_a_live_ones_kept(tmp_path):
    import subprocess
    import sys

    from curate.view.index import ShardIndex

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs (reused pids are possible but not within this test)
    orphan = tmp_path / f"{'a' * 32}.parquet.{dead.pid}.140.tmp"
    live = tmp_path / f"{'b' * 32}.parquet.{os.getpid()}.140.tmp"
    kept = tmp_path / f"{'c' * 32}.parquet"
    for f in (orphan, live, kept):
        f.write_bytes(b"x")
    ShardIndex(str(tmp_path), background=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, kept.name])
