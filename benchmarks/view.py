"""`curate view` on a run of a million documents: response time of each page and the server's peak RSS.

Synthesizes the run (text shards with the project's schema, zstd, row groups of 10,000 documents as
`writers.Parquet` writes them; 90% kept in data/, 10% dropped in rejected/ with a reason) and a run B to compare
it with (A's kept shards, the first with a tenth of its documents gone and a seventh of its texts edited), starts
the real server (`curate view RUN RUN_B --port 0 --cache EMPTY`, its own process), waits until its background
thread has indexed every shard (the time is reported: once per run), times each request over HTTP (median of --reps, wall clock: the
server's queries use every core) and reads the server's peak RSS (VmHWM, indexing included) after all of them.
Then the same requests against a second server started with `--no-cache` (every query reads the shards: the path
before the index), for the ratio in the same run. Texts are drawn from a pool of sentences, so they compress like
prose, not like noise.

    .venv/bin/python benchmarks/view.py --docs 1000000 [--dir /tmp/view-bench] [--json benchmarks/view.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.core.document import TEXT_SCHEMA
from curate.core.stats import StepStats

ROOT = Path(__file__).resolve().parents[1]
SHARD_DOCS = 50_000
REASONS = ["gopher_quality:too_few_words", "c4:too_few_sentences", "language:low_score", "exact:duplicate"]

def queries(docs: int) -> list[tuple[str, str]]:
    """(label, path) of each request timed: pages, each kind of filter, sorts, one document, the Run page."""
    return [
        ("Documents, first page", "/run/0/docs"),
        (f"Documents, page at offset {docs // 2:,}", f"/run/0/docs?page={docs // 100}"),
        ("kept, lang=pt", "/run/0/docs?status=kept&lang=pt"),
        ("dropped, one reason", "/run/0/docs?status=dropped&reason=c4%3Atoo_few_sentences"),
        ("quality_score in [0.9, 1)", "/run/0/docs?min%3Aquality_score=0.9"),
        ("length in [2000, 5000)", "/run/0/docs?min%3Alength=2000&max%3Alength=5000"),
        ("URL contains 'site-7/'", "/run/0/docs?url=site-7%2F"),
        ("text contains a phrase", "/run/0/docs?q=harbour+committee"),
        ("text contains a phrase, exact count", "/run/0/docs?q=harbour+committee&exact=1"),
        ("sorted by length, descending", "/run/0/docs?sort=length&desc=1"),
        ("sorted by quality_score, page 2", "/run/0/docs?sort=quality_score&page=1"),
        ("Document by id", f"/run/0/doc?id=doc-{int(docs * 0.654321):07d}"),
        ("Run page (funnel, languages, lengths, scores)", "/run/0"),
        ("Compare with run B: kept by A only", "/compare?a=0&b=1&kind=only_a"),
        ("Compare with run B: text differs", "/compare?a=0&b=1&kind=changed"),
    ]


BEFORE = {"text contains a phrase": "text contains a phrase, exact count"}  # the request's path before the index


def baselines() -> dict[str, object]:
    """The queries that must read every text, as a bare Polars count over the shards (same engine, no server, no
    page): what the server's time for them is compared with."""
    import polars as pl

    return {"length in [2000, 5000)": pl.col("text").str.len_chars().is_between(2000, 5000, closed="left"),
            "text contains a phrase": pl.col("text").str.contains("(?i)harbour committee"),
            "text contains a phrase, exact count": pl.col("text").str.contains("(?i)harbour committee"),
            "sorted by length, descending": None}


def bare_seconds(run: Path, expr) -> float:
    import polars as pl

    lf = pl.concat([pl.scan_parquet(str(run / p / "*.parquet")).select("text") for p in ("data", "rejected")])
    t = time.perf_counter()
    if expr is None:  # the sort: the 50 longest
        lf.select(pl.col("text").str.len_chars().top_k(50)).collect(engine="streaming")
    else:
        lf.filter(expr).select(pl.len()).collect(engine="streaming")
    return time.perf_counter() - t


def synthesize(out: Path, docs: int, seed: int = 0) -> None:
    """`docs` documents in shards of SHARD_DOCS, kept or dropped at random; skipped if already there."""
    if (out / "stats.json").exists():
        return
    rng = np.random.default_rng(seed)
    words = ["harbour", "committee", "river", "school", "garden", "market", "council", "project", "water", "years",
             "people", "village", "money", "bridge", "weather", "library", "family", "report", "music", "road"]
    sentences = [" ".join(rng.choice(words, size=rng.integers(6, 18))).capitalize() + "." for _ in range(5000)]
    for part in ("data", "rejected"):
        (out / part).mkdir(parents=True, exist_ok=True)
    kept_total = 0
    for s, start in enumerate(range(0, docs, SHARD_DOCS)):
        n = min(SHARD_DOCS, docs - start)
        k = rng.integers(1, 40, size=n)  # sentences a document
        idx = rng.integers(0, len(sentences), size=int(k.sum()))
        bounds = np.concatenate([[0], np.cumsum(k)])
        texts = [" ".join(sentences[j] for j in idx[bounds[i]:bounds[i + 1]]) for i in range(n)]
        cols = {"id": [f"doc-{start + i:07d}" for i in range(n)], "text": texts, "source": ["web"] * n,
                "url": [f"https://site-{rng.integers(0, 1000)}/page/{start + i}" for i in range(n)],
                "date": [None] * n, "lang": rng.choice(["en", "pt", "es", "fr"], size=n, p=[.6, .2, .1, .1]).tolist(),
                "lang_score": rng.uniform(0.5, 1, n).astype(np.float32), "metadata": ["{}"] * n,
                "quality_score": rng.uniform(0, 1, n).astype(np.float32)}
        table = pa.table(cols, schema=TEXT_SCHEMA)
        dropped = rng.uniform(size=n) < 0.1
        kept_total += int((~dropped).sum())
        name = f"part-{s:05d}-000.parquet"
        pq.write_table(table.filter(pa.array(~dropped)), out / "data" / name, compression="zstd",
                       row_group_size=10_000)
        rej = table.filter(pa.array(dropped))
        rej = rej.append_column("drop_reason", pa.array(rng.choice(REASONS, size=rej.num_rows).tolist()))
        pq.write_table(rej, out / "rejected" / name, compression="zstd", row_group_size=10_000)
    dropped = Counter({r: (docs - kept_total) // len(REASONS) for r in REASONS})  # the funnel's shape only
    steps = [StepStats("read", docs, docs), StepStats("filters", docs, kept_total, dropped=dropped)]
    (out / "stats.json").write_text(json.dumps({"pipeline": "bench", "steps": [s.to_dict() for s in steps]}))


def synthesize_b(run: Path) -> Path:
    """Run B for the comparison: A's kept shards (symbolic links), but the first one with every 10th document
    gone and every 7th text edited (a recipe that drops and rewrites a little); no rejected/."""
    b = run.with_name(run.name + "-b")
    if (b / "data").exists():
        return b
    (b / "data").mkdir(parents=True)
    shards = sorted((run / "data").glob("*.parquet"))
    table = pq.read_table(shards[0])
    keep = np.arange(table.num_rows) % 10 != 9
    edited = [t + " (edited)" if i % 7 == 0 else t for i, t in enumerate(table["text"].to_pylist())]
    table = table.set_column(table.schema.get_field_index("text"), "text", pa.array(edited)).filter(pa.array(keep))
    pq.write_table(table, b / "data" / shards[0].name, compression="zstd", row_group_size=10_000)
    for f in shards[1:]:
        (b / "data" / f.name).symlink_to(f)
    return b


def peak_rss_mib(pid: int) -> tuple[float, float]:
    """(current, peak) resident set of a process, MiB, from /proc (VmRSS, VmHWM)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return tuple(int(re.search(rf"{k}:\s+(\d+)", status).group(1)) / 1024 for k in ("VmRSS", "VmHWM"))


def markdown(res: dict) -> str:
    """The table of docs/benchmarks.md, from a results file."""
    def n(q):
        return "" if q["matches"] is None else ("at least " if q.get("at_least") else "") + format(q["matches"], ",")

    rows = [f"| {q['query']} | {q['first_s']:.2f} | {q['median_s']:.2f} | {n(q)} | {q['old_first_s']:.2f} | "
            f"{q['old_median_s']:.2f} | {q['old_median_s'] / q['median_s']:.1f}x | "
            f"{format(q['bare_polars_s'], '.2f') if 'bare_polars_s' in q else ''} |" for q in res["queries"]]
    head = (f"{res['docs']:,} documents ({res['shard_mib']} MiB of shards), {res['reps']} requests each, "
            f"{res['cpus']} cores, load average {res['load_average']} when it ended. Index: built by the server's "
            f"background thread in {res['index_build_s']:.0f} s (once per run; {res['index_mib']} MiB in the "
            f"cache). Server RSS {res['rss_idle_mib']} MiB idle, peak {res['rss_peak_mib']} MiB over the indexing "
            f"and all requests; without the index (`--no-cache`) peak {res['old_rss_peak_mib']} MiB.\n\n")
    return head + ("| request | first (s) | median (s) | documents matched | before: first (s) | before: median (s) | "
                   "ratio of medians | bare Polars count (s) |\n|---|---|---|---|---|---|---|---|\n") + "\n".join(rows)


def start(run: Path, run_b: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "curate", "view", str(run), str(run_b), "--port", "0", *extra],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    return proc, re.search(r"http://[^/]+", proc.stdout.readline()).group()


def timed(base: str, docs: int, reps: int) -> list[dict]:
    """Each request of `queries`, `reps` times: first and median seconds, and the count the page shows."""
    results = []
    for label, path in queries(docs):
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            r = httpx.get(base + path, timeout=600)
            times.append(time.perf_counter() - t)
            assert r.status_code == 200, (path, r.status_code, r.text[:300])
        kind = re.search(r"kind=(\w+)", path)
        m = re.search(r'(at least )?<span id="total">([\d,]+)</span>' if not kind else
                      rf'()<span id="n-{kind and kind.group(1)}">([\d,]+)</span>', r.text)
        results.append({"query": label, "path": path, "first_s": round(times[0], 3),
                        "median_s": round(statistics.median(times), 3),
                        "matches": int(m.group(2).replace(",", "")) if m else None, "at_least": bool(m and m.group(1))})
        print(f"{label:48s} first {times[0]:6.2f} s  median {statistics.median(times):6.2f} s  "
              f"{'at least ' * results[-1]['at_least']}{results[-1]['matches'] if m else ''}", flush=True)
    return results


def indexed(cache: Path, shards: int, limit: float = 1800) -> float:
    """Seconds until the server's builder thread has written an index file for each of `shards` shards."""
    t = time.perf_counter()
    while len(list(cache.glob("*.parquet"))) < shards:
        if time.perf_counter() - t > limit:
            raise SystemExit(f"not indexed after {limit} s")
        time.sleep(0.2)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--dir", default="/tmp/view-bench")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--markdown", metavar="JSON", help="print docs/benchmarks.md's table from a results file, run nothing")
    args = ap.parse_args()
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())))
        return 0
    run = Path(args.dir) / f"run-{args.docs}"
    t = time.perf_counter()
    synthesize(run, args.docs)
    shards = sorted(run.rglob("*.parquet"))
    size = sum(f.stat().st_size for f in shards)
    run_b = synthesize_b(run)
    print(f"run: {args.docs:,} documents, {size / 2**20:,.0f} MiB of shards ({time.perf_counter() - t:.0f} s)")
    cache = Path(args.dir) / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    out = {}
    for mode, extra in (("index", ("--cache", str(cache))), ("old", ("--no-cache",))):
        print(f"-- {'with the index' if mode == 'index' else 'without the index (--no-cache)'}", flush=True)
        proc, base = start(run, run_b, *extra)
        try:
            idle = peak_rss_mib(proc.pid)[0]
            if mode == "index":
                n = len(shards) + len(list(run_b.glob("data/*.parquet")))
                out["index_build_s"] = round(indexed(cache, n), 1)
                print(f"indexed {n} shards in {out['index_build_s']} s", flush=True)
            out[mode] = timed(base, args.docs, args.reps)
            out[mode + "_rss"] = (idle, *peak_rss_mib(proc.pid))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    results, before = out["index"], {q["query"]: q for q in out["old"]}
    for q in results:
        assert q["matches"] == before[q["query"]]["matches"], q  # both paths count the same
        # the text search: both servers now stop once the page is full; before, it counted every match
        old = before[BEFORE.get(q["query"], q["query"])]
        q["old_median_s"], q["old_first_s"] = old["median_s"], old["first_s"]
    for q in results:  # after the servers are gone: the bare engine on the same shards, one at a time
        if q["query"] in baselines():
            q["bare_polars_s"] = round(bare_seconds(run, baselines()[q["query"]]), 3)
            print(f"{q['query']:48s} bare Polars {q['bare_polars_s']:6.2f} s", flush=True)
    idle, rss, peak = out["index_rss"]
    print(f"server RSS: {idle:.0f} MiB idle, {rss:.0f} MiB after, peak {peak:.0f} MiB; without the index: peak "
          f"{out['old_rss'][2]:.0f} MiB")
    if args.json:
        load = os.getloadavg()[0]
        index_mib = sum(f.stat().st_size for f in cache.glob("*.parquet")) / 2**20
        Path(args.json).write_text(json.dumps({
            "docs": args.docs, "shard_mib": round(size / 2**20), "reps": args.reps, "cpus": os.cpu_count(),
            "load_average": round(load, 1), "index_build_s": out["index_build_s"], "index_mib": round(index_mib),
            "rss_idle_mib": round(idle), "rss_peak_mib": round(peak), "old_rss_peak_mib": round(out["old_rss"][2]),
            "queries": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
