"""Measure what the Ray executor costs and gives on this machine, for docs/benchmarks.md (## Scale-out).

    .venv/bin/python -P benchmarks/scale_out.py [--cpus 2] [--tasks 400]   # -P: benchmarks/tokenize.py must not shadow the stdlib

Prints one JSON object: Ray start-up time, scheduling overhead per task (no-op tasks, Ray vs the local
process pool), the extract_only pipeline over the real WARC files on local (1 and N workers) and Ray (N
CPUs) with HTML bytes and pages per second, Resiliparse on one worker for comparison, and the peak memory of one extraction task. The numbers
feed the Common Crawl projection in docs/scale-out.md; run it on an idle machine, since every figure
here is wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import cloudpickle

from curate import Pipeline, extract, readers, writers
from curate.core.stats import StepStats
from curate.run.executors.local import LocalExecutor
from curate.run.executors.ray import RayExecutor
from curate.run.pipeline import StreamTask, run_stream_task

ROOT = Path(__file__).resolve().parents[1]
WARCS = sorted(str(p) for p in (ROOT.parent / "shared" / "data" / "warc").rglob("*.warc.gz"))


def noop(x: int) -> int:
    return x


def peak_rss_task(task: StreamTask) -> dict:
    """Run one stream task and report this worker's peak resident memory (MiB) with its result."""
    result = run_stream_task(task)
    return {"docs": result["docs"], "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def html_bytes() -> tuple[int, int]:
    """HTML pages and bytes the extractor sees in the test WARCs (what its throughput is measured against)."""
    pages = size = 0
    for path in WARCS:
        for doc in readers.Warc(source="web").read(path, StepStats("read")):
            if doc.html is not None:
                pages += 1
                size += len(doc.html.encode("utf-8", "replace"))
    return pages, size


def pipeline(extractor: str = "Trafilatura") -> Pipeline:
    return Pipeline(name="extract_only", reader=readers.Warc(source="web"),
                    steps=[getattr(extract, extractor)()], writer=writers.Parquet())


def timed_run(executor, out: str, extractor: str = "Trafilatura") -> float:
    t0 = time.perf_counter()
    pipeline(extractor).run(WARCS, out, executor=executor)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--tasks", type=int, default=400)
    args = ap.parse_args()
    import ray

    report: dict = {"cpus": args.cpus, "load_avg_before": os.getloadavg()[0], "warc_files": len(WARCS)}
    pages, size = html_bytes()
    report.update(html_pages=pages, html_mib=round(size / 2**20, 2))

    t0 = time.perf_counter()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    report["ray_start_s"] = round(time.perf_counter() - t0, 2)
    ray_ex = RayExecutor(progress=False)
    ray_ex.map(noop, list(range(args.cpus * 2)))  # start the workers before timing
    for name, ex in (("ray", ray_ex), ("local", LocalExecutor(args.cpus, progress=False))):
        t0 = time.perf_counter()
        ex.map(noop, list(range(args.tasks)))
        report[f"{name}_ms_per_noop_task"] = round(1000 * (time.perf_counter() - t0) / args.tasks, 2)

    with tempfile.TemporaryDirectory() as tmp:
        for name, ex in (("local_1", LocalExecutor(1, progress=False)),
                         (f"local_{args.cpus}", LocalExecutor(args.cpus, progress=False)),
                         (f"ray_{args.cpus}", ray_ex)):
            s = timed_run(ex, os.path.join(tmp, name))
            report[f"extract_{name}_s"] = round(s, 2)
            report[f"extract_{name}_pages_per_s"] = round(pages / s, 1)
            report[f"extract_{name}_html_mib_per_s"] = round(size / 2**20 / s, 3)
        s = timed_run(LocalExecutor(1, progress=False), os.path.join(tmp, "resiliparse"), "Resiliparse")
        report["extract_resiliparse_local_1_s"] = round(s, 2)
        report["extract_resiliparse_local_1_pages_per_s"] = round(pages / s, 1)
        biggest = max(WARCS, key=os.path.getsize)
        task = StreamTask(payload=cloudpickle.dumps(pipeline().stages()[0]), path=biggest,
                          out_dir=os.path.join(tmp, "rss", "data"), stem="part-00000", root=os.path.join(tmp, "rss"),
                          tag="rss", rejected_dir=None, limit=None, extra_columns={})
        os.makedirs(os.path.join(tmp, "rss", "stats"))
        os.makedirs(os.path.join(tmp, "rss", "_done"))
        (rss,) = RayExecutor(progress=False).map(peak_rss_task, [task])
        report["extract_task_peak_rss_mib"] = round(rss["peak_rss_mib"], 1)
        report["extract_task_input_mib"] = round(os.path.getsize(biggest) / 2**20, 2)
    ray.shutdown()
    report["load_avg_after"] = os.getloadavg()[0]
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
