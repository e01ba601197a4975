"""Common Crawl input (issue 31): planning from path lists and the columnar index, range reads, faults survived.

A Common Crawl-shaped tree of real WARC/WET/WAT files is served on 127.0.0.1 (tests/_ccserver.py); the
references are warcio (offsets and lengths in the index, the brute-force filter over its rows) and
readers.Warc reading the same files from disk (documents and ids). Faults come from a proxy in front of the
server at planned moments; the proxy counts what it delivered whole per range and its peak of requests in flight.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from _ccserver import SNAPSHOT, FaultProxy, RangeServer, build_tree, env, planned

from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.io import commoncrawl as cc
from curate.io.readers import CommonCrawl, Warc
from curate.io.readers import commoncrawl as ccreader
from curate.io.retry import Exhausted, Policy, Transient, parse_retry_after


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("cc")
    rows = build_tree(root)
    server = RangeServer(root, delay=0.005)
    yield root, rows, server
    server.close()


@pytest.fixture
def cc_env(tree, monkeypatch):
    root, rows, server = tree
    for k, v in env(server.url).items():
        monkeypatch.setenv(k, v)
    return root, rows, server


def reference(root: Path, splits) -> dict:
    """Documents by id of readers.Warc reading the files from disk under the same keys."""
    out = {}
    for s in {s.key: s for s in splits}.values():
        for d in Warc().read(str(root / "crawl-data" / SNAPSHOT / s.key), StepStats("read"), key=s.key):
            out[d.id] = d
    return out


def read_all(reader, splits) -> tuple[list, StepStats]:
    stats = StepStats("read")
    return [d for s in splits for d in reader.read_split(s, stats)], stats


def brute(rows, **want) -> set:
    """The (file, offset) of the rows an index query should select, by a plain loop over the rows."""
    keep = set()
    for r in rows:
        if "domain" in want and r["url_host_registered_domain"] not in want["domain"].split(","):
            continue
        if "mime" in want and r["content_mime_detected"] != want["mime"]:
            continue
        if "status" in want and r["fetch_status"] != int(want["status"]):
            continue
        if "lang" in want and want["lang"] not in r["content_languages"].split(","):
            continue
        keep.add((r["warc_filename"], r["warc_record_offset"]))
    return keep


# ---------------------------------------------------------------- planning


def test_snapshots_paths_and_selection(cc_env):
    assert [s["id"] for s in cc.snapshots()] == [SNAPSHOT, "CC-MAIN-2023-50"]
    every = cc.cc_splits(f"cc://{SNAPSHOT}/warc")
    assert len(every) == 5 and all(s.whole and s.url.startswith("http://127.0.0.1") for s in every)
    assert every[0].key.startswith("segments/1700000000001.0/warc/")
    half = cc.cc_splits(f"cc://{SNAPSHOT}/warc?sample=0.5")
    assert half == cc.cc_splits(f"cc://{SNAPSHOT}/warc?sample=0.5")  # stable: a rerun plans the same tasks
    assert {s.key for s in half} == {s.key for s in every if cc.in_sample(f"crawl-data/{SNAPSHOT}/{s.key}", 0.5)}
    assert {s.key.split("/")[1] for s in cc.cc_splits(f"cc://{SNAPSHOT}/warc?segments=2")} == {
        "1700000000001.0", "1700000000002.0"}
    assert [s.key for s in cc.cc_splits(f"cc://{SNAPSHOT}/warc?files=1:3")] == [s.key for s in every[1:3]]
    assert [s.key for s in cc.cc_splits(f"cc://{SNAPSHOT}/wet")] == [
        "segments/1700000000003.0/wet/CC-MAIN-whirl_wet.warc.wet.gz"]
    for bad, words in [("cc://CC-2024/warc", "not a Common Crawl snapshot"), (f"cc://{SNAPSHOT}/arc", "kind"),
                       (f"cc://{SNAPSHOT}/warc?sampel=0.1", "unknown parameter"),
                       (f"cc://{SNAPSHOT}/warc?segments=nope", "no such segment"),
                       ("cc://CC-MAIN-1999-01/warc", "no warc.paths.gz")]:
        with pytest.raises(UsageError, match=words):
            cc.cc_splits(bad)


@pytest.mark.parametrize("query", [
    {"mime": "text/html", "lang": "por"},
    {"domain": "commoncrawl.org,allenai.org", "status": "200"},
    {"mime": "text/html", "status": "200", "lang": "eng"},
])
def test_index_query_selects_what_a_loop_over_the_rows_selects(cc_env, query):
    root, rows, _ = cc_env
    url = f"cc://{SNAPSHOT}/index?" + "&".join(f"{k}={v}" for k, v in query.items()) + "&per_task=4"
    splits = cc.cc_splits(url)
    got = [(f"crawl-data/{SNAPSHOT}/{s.key}", off) for s in splits for off, _ in s.records]
    assert len(got) == len(set(got)) and set(got) == brute(rows, **query) and got
    assert all(len(s.records) <= 4 and list(s.records) == sorted(s.records) for s in splits)
    lengths = {(r["warc_filename"], r["warc_record_offset"]): r["warc_record_length"] for r in rows}
    assert all(lengths[(f"crawl-data/{SNAPSHOT}/{s.key}", o)] == n for s in splits for o, n in s.records)


@pytest.mark.parametrize("fault", ["503", "reset", "truncate"])
def test_planning_survives_faults(cc_env, fault):
    """The path list and every Parquet read of the index go through retried range reads: the same plan."""
    _, _, server = cc_env
    clean = cc.cc_splits(f"cc://{SNAPSHOT}/index?mime=text/html")
    proxy = FaultProxy(server.url, lambda p, r, a: fault if a == 0 and ("parquet" in p or "paths" in p) else None)
    try:
        got = cc.cc_splits(f"cc://{SNAPSHOT}/index?mime=text/html&base={proxy.url}")
    finally:
        proxy.close()
    assert [(s.key, s.records) for s in got] == [(s.key, s.records) for s in clean]
    assert proxy.faults[fault] >= 3  # the path list and the first read of each of the 2 index files


def test_url_glob_and_limit(cc_env, monkeypatch):
    _, rows, _ = cc_env
    splits = cc.cc_splits(f"cc://{SNAPSHOT}/index?url=https://commoncrawl.org/*")
    want = {(r["warc_filename"], r["warc_record_offset"]) for r in rows if r["url"].startswith("https://commoncrawl.org/")}
    assert {(f"crawl-data/{SNAPSHOT}/{s.key}", o) for s in splits for o, _ in s.records} == want and want
    assert cc.describe_splits(cc.cc_splits(f"cc://{SNAPSHOT}/index?limit=7"))["records"] == 7
    monkeypatch.setattr(cc, "MAX_RECORDS", 10)  # the plan is held by the driver: a stated limit, one line
    with pytest.raises(UsageError, match="selects more than 10 records"):
        cc.cc_splits(f"cc://{SNAPSHOT}/index")
    assert cc.describe_splits(cc.cc_splits(f"cc://{SNAPSHOT}/index?limit=10"))["records"] == 10


# ---------------------------------------------------------------- reading


def test_whole_files_read_like_warc_on_disk(cc_env, monkeypatch):
    root, _, _ = cc_env
    monkeypatch.setattr(ccreader, "RANGE_CHUNK", 50_000)  # several ranged chunks a file
    splits = cc.cc_splits(f"cc://{SNAPSHOT}/warc")
    docs, stats = read_all(CommonCrawl(), splits)
    ref = reference(root, splits)
    assert [d.id for d in docs] == list(ref) and all(d.html == ref[d.id].html for d in docs)
    assert stats.extra["read:requests"] > len(splits) and stats.extra["read:retries"] == 0
    assert stats.extra["read:bytes_fetched"] == sum((root / "crawl-data" / SNAPSHOT / s.key).stat().st_size for s in splits)
    assert all(d.metadata["cc_snapshot"] == SNAPSHOT and d.metadata["cc_file"].startswith("segments/") for d in docs)


def test_wet_and_wat(cc_env):
    wet, _ = read_all(CommonCrawl(), cc.cc_splits(f"cc://{SNAPSHOT}/wet"))
    assert len(wet) == 1 and "Escopete" in wet[0].text and wet[0].url == "https://an.wikipedia.org/wiki/Escopete"
    wat, stats = read_all(CommonCrawl(), cc.cc_splits(f"cc://{SNAPSHOT}/wat"))
    assert len(wat) == 1 and json.loads(wat[0].text)["Envelope"]["WARC-Header-Metadata"]["WARC-Target-URI"] == wat[0].url
    assert stats.dropped["read:warcinfo"] == 1


@pytest.mark.parametrize("fast", [False, True])
def test_index_records_are_the_whole_file_documents(cc_env, fast):
    if fast:
        pytest.importorskip("fastwarc")
    root, rows, _ = cc_env
    splits = cc.cc_splits(f"cc://{SNAPSHOT}/index?mime=text/html&per_task=3")
    docs, stats = read_all(CommonCrawl(concurrency=4, fast=fast), splits)
    ref = reference(root, splits)
    assert len(docs) == len({d.id for d in docs}) == stats.docs_in - sum(stats.dropped.values())
    assert {d.id for d in docs} <= set(ref) and all(d.html == ref[d.id].html for d in docs)
    html_rows = brute(rows, mime="text/html")
    assert {(f"crawl-data/{SNAPSHOT}/{d.metadata['cc_file']}", d.metadata["cc_offset"]) for d in docs} <= html_rows
    assert stats.docs_in == len(html_rows)  # each record read, or counted with a reason
    assert stats.extra["read:requests"] == len(html_rows)


# ---------------------------------------------------------------- faults


def _fault_run(server, plan, **reader_kw):
    proxy = FaultProxy(server.url, plan, stall=0.6)
    try:
        url = f"cc://{SNAPSHOT}/index?mime=text/html&base={proxy.url}"
        docs, stats = read_all(CommonCrawl(timeout=0.3, **reader_kw), cc.cc_splits(url))
        return docs, stats, proxy
    finally:
        proxy.close()


def test_faults_survived_output_identical_cap_held(cc_env):
    _, _, server = cc_env
    clean, clean_stats, clean_proxy = _fault_run(server, None, concurrency=8, per_host=3)
    assert 2 <= clean_proxy.max_in_flight <= 3  # in flight together, never more than per_host
    stalled = []

    def plan(path, rng, attempt):
        fault = planned(every=4)(path, rng, attempt)
        if fault is None and not attempt and rng and path.endswith("dolma1.warc.gz") and not stalled:
            stalled.append(rng)
            return "stall"
        return fault

    docs, stats, proxy = _fault_run(server, plan, concurrency=8, per_host=3)
    assert [(d.id, d.html) for d in docs] == [(d.id, d.html) for d in clean] and docs
    assert dict(stats.dropped) == dict(clean_stats.dropped)
    records = [k for k in proxy.attempts if k[1] and ".warc.gz" in k[0]]
    assert records and all(proxy.delivered[k] == 1 for k in records)  # every record fetched whole exactly once
    faults = sum(proxy.faults.values())
    assert faults >= 5 and set(proxy.faults) == {"503", "reset", "truncate", "stall"}
    assert stats.extra["read:retries"] == faults and stats.extra["read:throttles"] == proxy.faults["503"]
    assert 2 <= proxy.max_in_flight <= 3  # in flight together, never more than per_host


def test_whole_file_read_survives_faults(cc_env, monkeypatch):
    _, _, server = cc_env
    monkeypatch.setattr(ccreader, "RANGE_CHUNK", 40_000)
    proxy = FaultProxy(server.url, planned(every=2))
    try:
        splits = cc.cc_splits(f"cc://{SNAPSHOT}/warc?base={proxy.url}")
        docs, stats = read_all(CommonCrawl(), splits)
    finally:
        proxy.close()
    clean, _ = read_all(CommonCrawl(), cc.cc_splits(f"cc://{SNAPSHOT}/warc"))
    assert [(d.id, d.html) for d in docs] == [(d.id, d.html) for d in clean]
    assert stats.extra["read:retries"] == sum(proxy.faults.values()) > 0


def _always_on(target: dict):
    def plan(path, rng, attempt):
        return "503" if rng and rng == target.get("range") and path.endswith(target["file"]) else None
    return plan


def test_budget_exhausted_fails_loudly_or_is_counted_by_name(cc_env):
    _, _, server = cc_env
    splits = cc.cc_splits(f"cc://{SNAPSHOT}/index?mime=text/html")
    s = next(s for s in splits if s.key.endswith("dolma0.warc.gz"))
    off, n = s.records[1]
    target = {"file": "dolma0.warc.gz", "range": f"bytes={off}-{off + n - 1}"}
    with pytest.raises(Exhausted, match=rf"dolma0.warc.gz@{off}\+{n}.*--allow-missing"):
        _fault_run(server, _always_on(target), tries=3)
    docs, stats, proxy = _fault_run(server, _always_on(target), tries=3, allow_missing=True)
    clean, _, _ = _fault_run(server, None)
    assert stats.dropped["read:missing"] == 1 and f"dolma0.warc.gz@{off}+{n}" in stats.error_sample
    assert len(docs) == len(clean) - 1 and stats.extra["read:retries"] == 2 and proxy.faults["503"] == 3


def test_whole_file_budget_exhausted(cc_env, monkeypatch):
    """A file whose second chunk never comes: the run stops naming it, or the rest is one read:missing."""
    _, _, server = cc_env
    monkeypatch.setattr(ccreader, "RANGE_CHUNK", 50_000)

    def plan(path, rng, attempt):
        start = int(rng.removeprefix("bytes=").split("-")[0] or 0) if rng else 0
        return "503" if path.endswith("dolma0.warc.gz") and start >= 150_000 else None

    proxy = FaultProxy(server.url, plan)
    try:
        splits = [s for s in cc.cc_splits(f"cc://{SNAPSHOT}/warc?base={proxy.url}") if s.key.endswith("dolma0.warc.gz")]
        with pytest.raises(Exhausted, match="dolma0.warc.gz .the rest of the file."):
            read_all(CommonCrawl(tries=2), splits)
        docs, stats = read_all(CommonCrawl(tries=2, allow_missing=True), splits)
    finally:
        proxy.close()
    clean, _ = read_all(CommonCrawl(), [s for s in cc.cc_splits(f"cc://{SNAPSHOT}/warc") if s.key.endswith("dolma0.warc.gz")])
    assert stats.dropped["read:missing"] == 1 and "dolma0.warc.gz (the rest of the file)" in stats.error_sample
    assert 0 < len(docs) < len(clean) and [d.id for d in docs] == [d.id for d in clean[: len(docs)]]


def test_a_server_that_ignores_ranges_is_an_error_not_a_whole_file_per_record(cc_env):
    _, _, server = cc_env
    with pytest.raises(OSError, match="does not serve ranges") as e:
        _fault_run(server, lambda path, rng, attempt: "norange" if rng else None)
    assert not isinstance(e.value, Exhausted)  # raised at the first answer, not retried


def test_policy_waits_and_retry_after():
    p = Policy(tries=4, base=1, throttle_base=4, cap=10, jitter=False)
    assert [p.delay(k) for k in range(5)] == [1, 2, 4, 8, 10]
    assert p.delay(0, Transient("x", 503, throttle=True)) == 4
    assert p.delay(0, Transient("x", 503, retry_after=7)) == 7 and p.delay(0, Transient("x", retry_after=99)) == 10
    assert all(0 <= Policy(base=1, cap=5).delay(3) <= 5 for _ in range(50))
    assert parse_retry_after("12") == 12 and parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470) == 10
    assert parse_retry_after("soon") is None
    waits, calls = [], []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise Transient("503", 503, throttle=True)
        return "ok"

    assert p.call(flaky, lambda e: isinstance(e, Transient), sleep=waits.append) == "ok" and waits == [4, 8]
    with pytest.raises(ValueError):  # not transient: raised at once, no wait
        p.call(lambda: int("x"), lambda e: isinstance(e, Transient), sleep=waits.append)
    assert waits == [4, 8]


def test_fs_retrying_waits_longer_after_a_throttle(monkeypatch):
    """fs.retrying's 0.2 s doubling (3 s in all) is too short for S3's SlowDown: a throttle waits as the policy says."""
    from curate.io import fs

    waits: list[float] = []
    monkeypatch.setattr(fs.time, "sleep", waits.append)
    monkeypatch.setattr(fs, "_THROTTLED", Policy(throttle_base=2.0, cap=30.0, jitter=False))

    def failing(error: Exception):
        def fn():
            if len(waits) < 4:
                raise error
            return "ok"
        return fn

    assert fs.retrying(failing(OSError("An error occurred (SlowDown) when calling GetObject"))) == "ok"
    assert waits == [2, 4, 8, 16]
    waits.clear()
    assert fs.retrying(failing(OSError("connection reset"))) == "ok" and waits == [0.2, 0.4, 0.8, 1.6]


# ---------------------------------------------------------------- hostile input


def test_hostile_index_entries_are_counted(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from _ccserver import SOURCES

    root = tmp_path
    rows = build_tree(root, {"dolma0": SOURCES["dolma0"]}, index_files=1)
    name = rows[0]["warc_filename"]
    path = root / name
    size = path.stat().st_size
    path.write_bytes(path.read_bytes() + gzip.compress(b"this gzip member holds no WARC record\r\n" * 20))
    junk = size, path.stat().st_size - size
    extra = [dict(rows[0], warc_record_offset=size - 100, warc_record_length=5000),  # overruns the file
             dict(rows[0], warc_record_offset=junk[0], warc_record_length=junk[1]),  # not a WARC record
             dict(rows[0], warc_record_offset=10, warc_record_length=0),  # empty
             dict(rows[0], warc_record_offset=20, warc_record_length=64 << 20)]  # over max_record_bytes
    table = pq.read_table(next(root.glob("cc-index/**/*.parquet")))
    pq.write_table(pa.concat_tables([table, pa.Table.from_pylist(extra, schema=table.schema)]),
                   next(root.glob("cc-index/**/*.parquet")))
    server = RangeServer(root)
    try:
        for k, v in env(server.url).items():
            monkeypatch.setenv(k, v)
        docs, stats = read_all(CommonCrawl(max_record_bytes=1 << 20), cc.cc_splits(f"cc://{SNAPSHOT}/index"))
    finally:
        server.close()
    clean = [d for d in Warc().read(str(path), StepStats("read"), key=name.removeprefix(f"crawl-data/{SNAPSHOT}/"))]
    assert [d.id for d in docs] == [d.id for d in clean]  # the good records all read
    assert stats.dropped["read:bad_range"] == 2 and stats.dropped["read:record_too_large"] == 1
    assert stats.dropped["read:bad_header"] == 1  # the gzip member that is no WARC record
    assert stats.docs_in == len(rows) + len(extra) == len(docs) + sum(stats.dropped.values())  # each row once


# ---------------------------------------------------------------- S3 and the command line


def test_s3_form_reads_the_same(cc_env, s3_bucket, monkeypatch):
    import fsspec

    root, _, _ = cc_env
    s3 = fsspec.filesystem("s3")
    for p in root.rglob("*"):
        if p.is_file():
            s3.put_file(str(p), f"{s3_bucket}/{p.relative_to(root)}")
    monkeypatch.setenv("PENEIRA_CC_S3_ANON", "0")  # moto with the suite's dummy credentials
    for kind in ("warc", "index?mime=text/html"):
        http, _ = read_all(CommonCrawl(), cc.cc_splits(f"cc://{SNAPSHOT}/{kind}"))
        splits = cc.cc_splits(f"cc://{SNAPSHOT}/{kind}{'&' if '?' in kind else '?'}base={s3_bucket}/")
        assert splits[0].url.startswith("s3://")
        docs, stats = read_all(CommonCrawl(), splits)
        assert [(d.id, d.html) for d in docs] == [(d.id, d.html) for d in http] and stats.extra["read:requests"]


def test_cli_list_paths_query(cc_env, capsys):
    from curate.cli.main import main

    assert main(["cc", "list"]) == 0 and SNAPSHOT in capsys.readouterr().out
    assert main(["cc", "paths", SNAPSHOT, "--kind", "wet"]) == 0
    assert capsys.readouterr().out.strip().endswith("CC-MAIN-whirl_wet.warc.wet.gz")
    assert main(["cc", "query", SNAPSHOT, "--lang", "por", "--mime", "text/html"]) == 0
    _, rows, _ = cc_env
    assert capsys.readouterr().out.startswith(f"{len(brute(rows, lang='por', mime='text/html')):,} record(s)")
    assert main(["cc", "paths", "CC-MAIN-2024-1"]) == 2
    assert main(["cc", "list", "--index", cc_env[2].url + "nowhere/"]) == 1
    assert "collinfo.json: 404" in capsys.readouterr().err


def test_cli_shows_what_the_index_and_path_lists_say_without_obeying_it(tmp_path, monkeypatch, capsys):
    """A crawl's index is another party's text (issue 41, `curate cc` was the command not walked): names and paths
    with terminal escapes, a window title and a right-to-left override are printed inert, one line each."""
    import unicodedata

    from curate.cli.main import main

    hostile = "\x1b[2J\x1b]0;pwned\x07\u202eevil\nnext"
    (tmp_path / "collinfo.json").write_text(json.dumps([{"id": SNAPSHOT, "name": hostile, "from": hostile}]))
    lists = tmp_path / "crawl-data" / SNAPSHOT
    lists.mkdir(parents=True)
    (lists / "warc.paths.gz").write_bytes(gzip.compress(f"crawl-data/{SNAPSHOT}/a{hostile[:-5]}.warc.gz\n".encode()))
    server = RangeServer(tmp_path)
    try:
        for k, v in env(server.url).items():
            monkeypatch.setenv(k, v)
        assert main(["cc", "list"]) == 0
        listed = capsys.readouterr().out
        assert main(["cc", "paths", SNAPSHOT]) == 0
        paths = capsys.readouterr().out
    finally:
        server.close()
    for out in (listed, paths):
        assert out.count("\n") == 1  # one record, one line: the newline in the name is shown, not obeyed
        assert not [c for c in out if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf")]
    assert "pwned" in listed and "evil" in paths  # shown, not dropped


# ---------------------------------------------------------------- curate run --input cc://...

PIPE = ("from curate import Pipeline, extract, readers\n"
        "pipeline = Pipeline(name='cc', reader=readers.CommonCrawl(), steps=[extract.Main()])\n")


def _run_cc(tmp_path, inp: str, out: Path, *extra: str) -> tuple[int, dict]:
    from curate.cli.main import main

    pipe = tmp_path / "cc_pipe.py"
    pipe.write_text(PIPE)
    rc = main(["run", str(pipe), "--input", inp, "--output", str(out), "--workers", "1", "--no-progress", *extra])
    stats = json.loads((out / "stats.json").read_text())["steps"] if (out / "stats.json").exists() else []
    return rc, (stats[0] if stats else {})


def _tree_on_s3(cc_env, bucket: str, monkeypatch) -> tuple[Path, list]:
    """The Common Crawl-shaped tree copied into `bucket` (the s3:// form of the tests), read with credentials."""
    import fsspec

    root, rows, _ = cc_env
    s3 = fsspec.filesystem("s3")
    for p in root.rglob("*"):
        if p.is_file():
            s3.put_file(str(p), f"{bucket}/{p.relative_to(root)}")
    monkeypatch.setenv("PENEIRA_CC_S3_ANON", "0")
    return root, rows


def _shard_ids(out: Path) -> list[str]:
    import pyarrow.parquet as pq

    return sorted(i for p in sorted((out / "data").glob("*.parquet")) for i in pq.read_table(p, columns=["id"])["id"].to_pylist())


def test_curate_run_on_the_s3_form_end_to_end(cc_env, s3_bucket, monkeypatch, tmp_path):
    """`curate run --input cc://…` (planning by io.splits.plan_splits, a task per split): the records the index
    selects, each once, with ids the reader gives by itself; a rerun resumes and reads nothing again."""
    root, rows = _tree_on_s3(cc_env, s3_bucket, monkeypatch)
    inp = f"cc://{SNAPSHOT}/index?mime=text/html&per_task=5&base={s3_bucket}/"
    rc, read = _run_cc(tmp_path, inp, tmp_path / "out")
    assert rc == 0
    direct, stats = read_all(CommonCrawl(), cc.cc_splits(inp))
    assert read["docs_in"] == stats.docs_in == len(brute(rows, mime="text/html")) and read["docs_out"] == len(direct)
    assert read["extra"]["read:requests"] == stats.extra["read:requests"]
    assert set(_shard_ids(tmp_path / "out")) <= {d.id for d in direct} and _shard_ids(tmp_path / "out")
    rc, again = _run_cc(tmp_path, inp, tmp_path / "out")
    assert rc == 0 and again == read  # every task was done: nothing read again


def test_curate_run_over_https_end_to_end(cc_env, tmp_path):
    """`curate run --input cc://…` over HTTPS through the fault proxy: a server that lists no folder (as
    data.commoncrawl.org) fingerprints each input file by a HEAD, retried like every read; every selected record
    is read once, the proxy's faults are the retries counted."""
    _, rows, server = cc_env
    proxy = FaultProxy(server.url, planned(every=4))
    try:
        inp = f"cc://{SNAPSHOT}/index?mime=text/html&per_task=5&base={proxy.url}"
        rc, read = _run_cc(tmp_path, inp, tmp_path / "out")
    finally:
        proxy.close()
    assert rc == 0 and read["docs_in"] == len(brute(rows, mime="text/html"))
    assert read["extra"]["read:retries"] == sum(proxy.faults.values()) > 0


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_progress_bar_shows_bytes_per_second_and_retries(cc_env, tmp_path, capsys, workers):
    """The read stage's bar, in this process (1 worker) and from pool workers' shared counter (2): bytes per
    second once records are fetched, and the retries the fault proxy caused, the same count as the stats'."""
    from curate.cli.main import main

    _, _, server = cc_env
    proxy = FaultProxy(server.url, planned(every=3, kinds=("503",)))
    pipe = tmp_path / "cc_pipe.py"
    pipe.write_text(PIPE)
    try:
        inp = f"cc://{SNAPSHOT}/index?mime=text/html&per_task=10&base={proxy.url}"
        capsys.readouterr()
        assert main(["run", str(pipe), "--input", inp, "--output", str(tmp_path / "out"), "--workers", workers]) == 0
    finally:
        proxy.close()
    err = capsys.readouterr().err
    retries = json.loads((tmp_path / "out" / "stats.json").read_text())["steps"][0]["extra"]["read:retries"]
    assert retries == sum(proxy.faults.values()) > 0
    bars = [line for line in err.replace("\r", "\n").splitlines() if "docs/s" in line]
    assert any(" MB/s" in b for b in bars) and any(f"{retries:,} retries" in b for b in bars), bars[-3:]


def test_a_rerun_over_https_after_a_file_changed_is_refused(cc_env, tmp_path, capsys):
    """The https inputs' fingerprint holds each file's size, ETag and Last-Modified as the server sends them: a
    WARC file rewritten between two runs (same bytes, another version) makes the rerun refuse the folder in one
    line instead of mixing two versions of the input."""
    root, _, server = cc_env
    inp = f"cc://{SNAPSHOT}/index?mime=text/html&per_task=50&base={server.url}"
    rc, _ = _run_cc(tmp_path, inp, tmp_path / "out")
    assert rc == 0
    warc = next((root / "crawl-data" / SNAPSHOT).rglob("*.warc.gz"))
    os.utime(warc, ns=(warc.stat().st_atime_ns, warc.stat().st_mtime_ns + 10**9))
    capsys.readouterr()
    rc, _ = _run_cc(tmp_path, inp, tmp_path / "out")
    err = capsys.readouterr().err
    assert rc == 2 and warc.name in err and "input" in err.lower()


@pytest.mark.slow  # ~20 s: s3fs's own SlowDown retries (~2 s a try) under each of the policy's tries
def test_curate_run_allow_missing_on_the_s3_form(cc_env, s3_bucket, s3_server, monkeypatch, tmp_path):
    """A record S3 never serves: `curate run` fails naming it; rerun with --allow-missing, the run resumes and
    counts it as read:missing, by name; every other record is read."""
    root, rows = _tree_on_s3(cc_env, s3_bucket, monkeypatch)
    monkeypatch.setenv("PENEIRA_CC_TRIES", "2")
    inp = f"cc://{SNAPSHOT}/index?mime=text/html&per_task=4&base={s3_bucket}/"
    splits = cc.cc_splits(inp)
    off, n = next(s for s in splits if s.key.endswith("dolma0.warc.gz")).records[1]

    def fault(method, path, query, headers):
        return method == "GET" and path.endswith("dolma0.warc.gz") and headers.get("range") == f"bytes={off}-{off + n - 1}"

    fault.takes_headers = True
    s3_server.fault = fault
    rc, _ = _run_cc(tmp_path, inp, tmp_path / "out")
    assert rc == 1
    rc, read = _run_cc(tmp_path, inp, tmp_path / "out", "--allow-missing")
    assert rc == 0 and read["dropped"]["read:missing"] == 1 and f"dolma0.warc.gz@{off}+{n}" in read["error_sample"]
    assert read["docs_in"] == sum(len(s.records) for s in splits)



# ---------------------------------------------------------------- checked replies (issue 42.2)


def _first_attempt(fault: str, only: str = ".warc.gz"):
    """`fault` on the first attempt at every ranged GET of a WARC file."""
    return lambda path, rng, attempt: fault if rng and not attempt and path.endswith(only) else None


@pytest.mark.parametrize("fault", ["shifted", "short", "long"])
def test_a_reply_for_another_range_is_retried_never_parsed(cc_env, fault):
    """A 206 for other bytes than asked (1000 bytes on; 100 fewer or more at the end) was parsed as the asked
    record: an index query kept 1 document of 215. Each is now a retry, and the documents are the clean run's."""
    root, rows, server = cc_env
    clean, clean_stats, _ = _fault_run(server, None)
    docs, stats, proxy = _fault_run(server, _first_attempt(fault))
    assert [(d.id, d.html) for d in docs] == [(d.id, d.html) for d in clean] and len(docs) > 50
    assert dict(stats.dropped) == dict(clean_stats.dropped)
    html = brute(rows, mime="text/html")
    last = {(r["warc_filename"], r["warc_record_offset"]) for r in rows if r["warc_record_offset"]
            + r["warc_record_length"] == (root / r["warc_filename"]).stat().st_size}
    honest = len(html & last) if fault == "long" else 0  # a file's last record: 100 bytes more is the same reply
    assert proxy.faults[fault] == len(html) and stats.extra["read:retries"] == len(html) - honest


def test_a_range_that_never_comes_right_fails_loudly(cc_env):
    _, _, server = cc_env
    with pytest.raises(Exhausted, match="the reply holds bytes"):
        _fault_run(server, lambda path, rng, attempt: "shifted" if rng and "dolma0" in path else None, tries=2)


def test_a_file_that_changes_while_it_is_read_fails_at_once(cc_env):
    _, _, server = cc_env
    with pytest.raises(cc.Changed, match="changed while this run read it"):
        _fault_run(server, lambda path, rng, attempt: "etag" if rng and "dolma1" in path and attempt == 0
                   and int(rng[6:].split("-")[0]) > 50_000 else None)


@pytest.mark.parametrize(("status", "headers", "start", "end", "want"), [
    (206, {"Content-Range": "bytes 10-19/100", "Content-Length": "10"}, 10, 20, 10),
    (206, {"Content-Range": "bytes 90-99/100"}, 90, 120, 10),  # clipped at the file's end: RangeError follows
    (206, {"Content-Range": "bytes 10-99/100"}, 10, None, 90),
    (200, {"Content-Length": "20"}, 0, 20, 20),
    (206, {"Content-Range": "bytes 11-20/100"}, 10, 20, Transient),
    (206, {"Content-Range": "bytes 10-18/100"}, 10, 20, Transient),
    (206, {"Content-Range": "bytes 10-19/100", "Content-Length": "11"}, 10, 20, Transient),
    (206, {}, 10, 20, Transient),
    (200, {"Content-Length": "100"}, 10, 20, OSError),
    (200, {"Content-Length": "100"}, 0, 20, OSError),
])
def test_check_reply_accepts_exactly_the_bytes_asked_for(status, headers, start, end, want):
    if isinstance(want, type):
        with pytest.raises(want):
            cc.check_reply("u", status, headers, start, end)
    else:
        assert cc.check_reply("u", status, headers, start, end) == want
