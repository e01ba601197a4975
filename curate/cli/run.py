"""curate run PIPELINE.py --input GLOB --output DIR: run a pipeline file."""

from __future__ import annotations

import os
import sys

from curate.core.errors import UsageError
from curate.core.stats import StepStats, format_table
from curate.run.pipeline import Pipeline


def add_parser(sub):
    p = sub.add_parser("run", help="run a pipeline file over input files")
    p.add_argument("pipeline", help="a Python file that defines `pipeline = Pipeline(...)`")
    p.add_argument("--input", action="append", help="input glob (repeatable; ** recurses)")
    p.add_argument("--output", help="output directory")
    p.add_argument("--workers", type=int, default=None,
                   help="parallel tasks (default: local: all CPUs; ray: as many as the cluster runs)")
    p.add_argument("--executor", choices=["local", "ray"], default="local")
    p.add_argument("--address", default=None, help="Ray cluster address (with --executor ray)")
    p.add_argument("--task-cpus", type=float, default=1, help="CPUs reserved per Ray task")
    p.add_argument("--task-memory-gb", type=float, default=None, help="memory reserved per Ray task (GB)")
    p.add_argument("--rejected", action="store_true", help="also write dropped documents with drop_reason")
    p.add_argument("--limit", type=int, default=None, help="stop after N documents per task")
    p.add_argument("--no-progress", action="store_true")
    return p


def load_pipeline(path: str) -> Pipeline:
    return Pipeline.from_file(path)


def main(args) -> int:
    from curate.core.errors import StepFailed
    from curate.run.executors import make_executor
    from curate.run.executors.base import TaskFailures

    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    pipeline = load_pipeline(args.pipeline)
    if args.executor == "ray":  # workers=0: the window follows the cluster, not this machine's CPUs
        memory = int(args.task_memory_gb * 2**30) if args.task_memory_gb else None
        kw = {"address": args.address, "num_cpus_per_task": args.task_cpus, "memory_per_task": memory}
        executor = make_executor("ray", args.workers or 0, progress=not args.no_progress, **kw)
    else:
        executor = make_executor("local", args.workers or os.cpu_count() or 1, progress=not args.no_progress)
    try:
        manifest = pipeline.run(
            inputs=args.input, output=args.output, executor=executor, rejected=args.rejected, limit=args.limit
        )
    except (TaskFailures, StepFailed) as e:
        sys.stderr.write(f"curate run: {e}\nfinished tasks are kept; fix the cause and rerun to resume\n")
        return 1
    out = args.output or pipeline.output
    print_summary(out, manifest)
    return 0


def print_summary(out: str, manifest: dict) -> None:
    import json

    from curate.io import fs

    with fs.open(fs.join(out, "stats.json"), "r", encoding="utf-8") as f:
        stats = [StepStats.from_dict(d) for d in json.load(f)["steps"]]
    print(format_table(stats))
    print(
        f"\n{manifest['docs_read']:,} records read, {stats[0].docs_out:,} documents, {manifest['docs_written']:,} kept "
        f"in {len(manifest['outputs'])} shard(s) under {out}/data ({manifest['seconds']:.1f}s)"
    )
