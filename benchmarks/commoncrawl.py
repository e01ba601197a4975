"""Index-selected single-record fetches vs scanning whole files, over a Common Crawl-shaped tree on 127.0.0.1.

    .venv/bin/python benchmarks/commoncrawl.py [--latency-ms 0 20] [--repeats 3]

The tree (tests/_ccserver.py) holds 7 real WARC files from ../shared/data/warc (3.9 MB); the index query
selects every text/html response. `--latency-ms` makes the server wait that long before each answer, as a
store far away does (data.commoncrawl.org answers in tens of ms): with none, the numbers measure this
machine's CPU, not the network. Then the same query through a proxy that answers 10% of the record
ranges 503 SlowDown (Retry-After: 0) on their first try: throughput, retries, and whether the output is identical.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _ccserver import BIG, SNAPSHOT, SOURCES, FaultProxy, RangeServer, build_tree, env, planned  # noqa: E402

from curate.core.stats import StepStats  # noqa: E402
from curate.io import commoncrawl as cc  # noqa: E402
from curate.io.readers import CommonCrawl  # noqa: E402


def read(splits, reader) -> tuple[list, StepStats, float]:
    stats = StepStats("read")
    t = time.perf_counter()
    docs = [d for s in splits for d in reader.read_split(s, stats)]
    return docs, stats, time.perf_counter() - t


def median_run(splits, reader, repeats: int) -> tuple[list, StepStats, float]:
    runs = [read(splits, reader) for _ in range(repeats)]
    return runs[0][0], runs[0][1], statistics.median(r[2] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency-ms", type=float, nargs="+", default=[0, 20])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ccbench-"))
    sources = {k: v for k, v in {**SOURCES, **BIG}.items() if v[1] == "warc"}
    build_tree(root, sources)
    size = sum(p.stat().st_size for p in root.rglob("*.warc.gz"))
    print(f"tree: {len(sources)} WARC files, {size / 1e6:.1f} MB; repeats {args.repeats} (median)")
    for latency in args.latency_ms:
        server = RangeServer(root, delay=latency / 1000)
        os.environ.update(env(server.url))
        splits = cc.cc_splits(f"cc://{SNAPSHOT}/index?mime=text/html")
        n = sum(len(s.records) for s in splits)
        files = sorted({s.url for s in splits})
        print(f"\nlatency {latency:g} ms per request; {n} records selected in {len(files)} files")
        print(f"{'mode':<34}{'records/s':>10}{'seconds':>9}{'requests':>9}{'MB fetched':>11}")
        base = None
        for k in (1, 8, 32):
            docs, stats, sec = median_run(splits, CommonCrawl(concurrency=k, per_host=k), args.repeats)
            base = base or docs
            print(f"{f'index, {k} in flight':<34}{n / sec:>10.0f}{sec:>9.2f}{stats.extra['read:requests']:>9}"
                  f"{stats.extra['read:bytes_fetched'] / 1e6:>11.2f}")
        whole = cc.cc_splits(f"cc://{SNAPSHOT}/warc")
        wanted = {d.id for d in base}
        docs, stats, sec = median_run([s for s in whole if s.url in files], CommonCrawl(), args.repeats)
        assert wanted <= {d.id for d in docs}
        print(f"{'scan the whole files':<34}{n / sec:>10.0f}{sec:>9.2f}{stats.extra['read:requests']:>9}"
              f"{stats.extra['read:bytes_fetched'] / 1e6:>11.2f}")
        proxy = FaultProxy(server.url, planned(every=10, kinds=("503",)))
        faulty = cc.cc_splits(f"cc://{SNAPSHOT}/index?mime=text/html&base={proxy.url}")
        for k in (8, 32):
            docs, stats, sec = read(faulty, CommonCrawl(concurrency=k, per_host=k))
            same = [(d.id, d.html) for d in docs] == [(d.id, d.html) for d in base]
            print(f"{f'index, {k} in flight, 10% 503':<34}{n / sec:>10.0f}{sec:>9.2f}{stats.extra['read:requests']:>9}"
                  f"{stats.extra['read:bytes_fetched'] / 1e6:>11.2f}  retries {stats.extra['read:retries']}, "
                  f"throttles {stats.extra['read:throttles']}, output identical: {same}")
            proxy.attempts.clear()  # the same ranges fail again on the next run
        proxy.close()
        server.close()


if __name__ == "__main__":
    main()
