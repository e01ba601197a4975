"""curate run PIPELINE.py --input GLOB --output DIR: run a pipeline file."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from curate.cli.common import add_executor, add_overwrite, add_progress, detach, executor_from_args
from curate.core.errors import CorruptState, StepFailed, disk_full
from curate.core.stats import StepStats, format_table

if TYPE_CHECKING:
    from curate.run.pipeline import Pipeline


def add_parser(sub):
    p = sub.add_parser("run", help="run a pipeline file over input files")
    p.add_argument("pipeline", help="a Python file that defines `pipeline = Pipeline(...)`")
    p.add_argument("--input", action="extend", nargs="+", metavar="GLOB|DIR",
                   help="input files: globs (** recurses), files or folders (their files of the reader's format, "
                        "recursively); several after one --input (an unquoted shell glob works) and repeatable")
    p.add_argument("--output", help="output directory")
    add_executor(p)
    p.add_argument("--rejected", action="store_true", help="also write dropped documents with drop_reason")
    p.add_argument("--limit", type=int, default=None, help="stop after N documents per task")
    p.add_argument("--tasks", type=int, default=None,
                   help="cut large inputs into byte ranges so the first stage has about N tasks (docs/splitting.md)")
    p.add_argument("--task-bytes", default=None, metavar="SIZE",
                   help="cut inputs larger than SIZE (e.g. 256M) into ranges of about SIZE, one task each")
    p.add_argument("--allow-missing", action="store_true",
                   help="a record or file still failing after the reader's retries is counted as read:missing "
                        "(named in the stats) instead of stopping the run (readers.CommonCrawl)")
    p.add_argument("--reader", choices=sorted(READERS), default=None,
                   help="read the inputs with this reader instead of the pipeline file's (a WARC recipe over JSONL or "
                        "Parquet text: extraction passes text through); Pipeline.with_reader in Python")
    p.add_argument("--text-key", default=None, metavar="FIELD",
                   help="with --reader jsonl|parquet: the field holding the text (default: text)")
    p.add_argument("--source", default=None, help="with --reader: the documents' `source` value (default: web)")
    add_progress(p)
    add_overwrite(p)
    return p


# `--reader NAME`: the readers a recipe can be pointed at from the command line, by their module's class name
READERS = {"jsonl": "Jsonl", "parquet": "Parquet", "warc": "Warc", "fastwarc": "FastWarc"}


def reader_from_args(args):
    """The reader `--reader` names, with `--text-key` / `--source`; None when the file's reader stays."""
    from curate.core.errors import UsageError

    name = getattr(args, "reader", None)
    if name is None:
        if getattr(args, "text_key", None) or getattr(args, "source", None):
            raise UsageError("--text-key and --source go with --reader (they set up the reader it names)")
        return None
    from curate.io import readers

    kw = {"source": args.source} if args.source else {}
    if args.text_key:
        if name not in ("jsonl", "parquet"):
            raise UsageError(f"--text-key: the {name} reader takes the page body as text; it applies to jsonl and parquet")
        kw["text_key"] = args.text_key
    return getattr(readers, READERS[name])(**kw)


def _task_bytes(args) -> int | None:
    from curate.io.plan import parse_size

    value = getattr(args, "task_bytes", None)
    return None if value is None else parse_size(value)


def load_pipeline(path: str) -> Pipeline:
    from curate.run.pipeline import Pipeline  # here, not above: `curate run --help` needs no numba or polars

    return Pipeline.from_file(path)


def main(args) -> int:
    from curate.run.executors.base import TaskFailures

    pipeline = load_pipeline(args.pipeline)
    reader = reader_from_args(args)
    if reader is not None:
        pipeline = pipeline.with_reader(reader)
    if getattr(args, "allow_missing", False):
        if not hasattr(pipeline.reader, "allow_missing"):
            from curate.core.errors import UsageError

            raise UsageError(f"--allow-missing: the reader {type(pipeline.reader).__name__} always stops on a "
                             "missing input; it applies to readers.CommonCrawl")
        pipeline.reader.allow_missing = True
    output = args.output or pipeline.output or ""
    if args.detach:
        executor_from_args(args, output)  # every option checked before the driver is submitted
        return detach(args, output)
    executor = executor_from_args(args, output)
    try:
        manifest = pipeline.run(
            inputs=args.input, output=args.output, executor=executor, rejected=args.rejected, limit=args.limit,
            overwrite=args.overwrite, tasks=args.tasks, task_bytes=_task_bytes(args),
        )
    except (TaskFailures, StepFailed) as e:
        if disk_full(e):
            raise  # one line naming the path (curate.cli.main)
        sys.stderr.write(f"curate run: {failure_text(e)}\n")
        return 1
    out = args.output or pipeline.output
    stats = print_summary(out, manifest)
    empty = nothing_read(stats[0], len(manifest["inputs"])) if stats else None
    if empty:
        sys.stderr.write(f"curate run: {empty}\n")
        return 1
    return 0


def failure_text(e: Exception) -> str:
    """What a failed run prints. A step that failed (or left a document without text) and a state file that
    cannot be read are one line, the same in every task that hit them; any other failure keeps its tasks
    and the first traceback, which is what a reader or step bug needs."""
    causes = getattr(e, "causes", None)
    worded = [e] if causes is None else causes
    if worded and all(isinstance(c, (StepFailed, CorruptState)) for c in worded):
        first = worded[0]
        more = f" (and in {len(worded) - 1} more task(s))" if len(worded) > 1 else ""
        if isinstance(first, CorruptState):
            return f"{first}{more}"
        return f"{first}{more}; tasks that finished are kept"
    return f"{e}\nfinished tasks are kept; fix the cause and rerun to resume"


# What a reader's skip reason most likely means when it is all a run read (the reader's options or the inputs).
READ_HINTS = {
    "read:no_text": "the records hold no string under the reader's text key: name the field, e.g. "
                    "readers.Jsonl(text_key=\"content\")",
    "read:not_warc": "the inputs are not WARC files: use the reader of their format (readers.Jsonl, readers.Parquet)",
    "read:bad_json": "the inputs are not JSON Lines: use the reader of their format (readers.Warc, readers.Parquet)",
    "read:not_parquet": "the inputs are not Parquet files: use the reader of their format",
    "read:bad_schema": "the Parquet files have no such text column: set readers.Parquet(text_key=...)",
    "read:not_html": "no record is an HTML page (only other content types): check the inputs",
    "read:empty_file": "the input files are empty",
}


def nothing_read(read: StepStats, n_inputs: int) -> str | None:
    """When the reader yielded no document: one line with its reasons and what they most likely mean."""
    if read.docs_out:
        return None
    reasons = read.dropped.most_common()
    shown = ", ".join(f"{r} {n:,}" for r, n in reasons[:3]) or "no records at all"
    hint = next((READ_HINTS[r] for r, _ in reasons if r in READ_HINTS),
                "check the reader in the pipeline file against the --input files")
    sample = f"; first error: {read.error_sample}" if read.error_sample else ""
    return f"the reader yielded no documents from {n_inputs} input file(s) ({shown}){sample}; hint: {hint}"


def print_summary(out: str, manifest: dict) -> list[StepStats]:
    import json

    from curate.io import fs

    with fs.open(fs.join(out, "stats.json"), "r", encoding="utf-8") as f:
        stats = [StepStats.from_dict(d) for d in json.load(f)["steps"]]
    print(format_table(stats))
    print(
        f"\n{manifest['docs_read']:,} records read from {len(manifest['inputs']):,} input file(s), "
        f"{stats[0].docs_out:,} documents, {manifest['docs_written']:,} kept "
        f"in {len(manifest['outputs'])} shard(s) under {out}/data ({manifest['seconds']:.1f}s)"
    )
    return stats
