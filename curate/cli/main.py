"""The `curate` command. Each subcommand lives in curate/cli/<name>.py (a dash in the name is an underscore in
the module's) with `add_parser` and `main`, and has one line in `COMMANDS`.

Only the module of the command being run is imported: `curate --help` lists the table, `curate stats` imports
curate/cli/stats.py alone, so a command typed dozens of times a day never pays for numba, polars or torch that
another command needs (tests/test_cli_imports.py holds every light command to that)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import threading
import time
from collections.abc import Iterable

# Subcommand -> the line `curate --help` shows for it, in the order it lists them. Adding a command: one line here.
COMMANDS = {
    "run": "run a pipeline file over input files",
    "stats": "per-step table: documents and characters in, out, dropped by reason",
    "inspect": "print a few documents of a run",
    "report": "write report.md and report.html (funnel, drops per reason, histograms)",
    "dedup-report": "near-duplicate cluster sizes and example clusters of a run",
    "quality": "train and evaluate the fastText quality classifier",
    "decontam": "benchmark decontamination: build an n-gram index, report hits of a run",
    "mix": "mix curated sources by weight (fractions of final tokens) to a token budget",
    "tokenizer": "train a byte-level BPE tokenizer on a corpus",
    "tokenize": "tokenize a corpus into token shards for training",
    "export": "a curated run as a Hugging Face dataset folder (data files + dataset card)",
    "view": "look at runs in a browser: funnel, documents, filters, two runs compared (local web app)",
    "models": "fetch models into the user cache (sha256-verified) or list them",
    "demo": "generate the demo crawl",
    "cc": "Common Crawl: snapshots, path lists, index queries (what --input cc://... reads)",
    "status": "a run's progress from its output folder (any executor)",
    "cancel": "stop a Slurm run (scancel its jobs); it stays resumable",
}


class ArgParser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line, exit 2
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


class _Commands(argparse._SubParsersAction):
    """The subcommand table's help line wins over a module's own, so `curate --help` reads the same whether the
    module was imported or not."""

    def add_parser(self, name, **kwargs):
        return super().add_parser(name, **{**kwargs, "help": COMMANDS.get(name, kwargs.get("help"))})


def build_parser(load: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with `load`, one whose other commands are placeholders that only name themselves."""
    load = COMMANDS if load is None else set(load)
    parser = ArgParser(prog="curate", description="Peneira: curate pretraining data.")
    parser.register("action", "parsers", _Commands)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=ArgParser)
    for name in COMMANDS:
        if name not in load:
            sub.add_parser(name)
            continue
        mod = importlib.import_module(f"curate.cli.{name.replace('-', '_')}")
        mod.add_parser(sub).set_defaults(func=mod.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    from curate.core.errors import CorruptState, Stopped, UsageError, disk_full
    from curate.run.stopping import exit_code, message, stop_on_signals

    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)  # the top level has no option with a value
    args = build_parser(load=[command]).parse_args(argv)
    with _threads_ended(), stop_on_signals():
        try:
            return args.func(args) or 0
        except UsageError as e:
            sys.stderr.write(f"curate {args.command}: error: {e}\n")
            return 2
        except Stopped as e:  # SIGTERM, SIGINT (curate.run.stopping): workers are stopped by now
            sys.stderr.write(message(e.signum) + "\n")
            return exit_code(e.signum)
        except KeyboardInterrupt:
            sys.stderr.write("stopped by SIGINT: rerun the same command to resume\n")
            return 130
        except Exception as e:
            corrupt = next((c for c in getattr(e, "causes", []) if isinstance(c, CorruptState)), None)
            if corrupt is not None:  # a task read a damaged file: the file and what to do, not a traceback
                sys.stderr.write(f"curate {args.command}: error: {corrupt}\n")
                return 2
            full = disk_full(e)
            if full is None:
                raise
            sys.stderr.write(f"curate {args.command}: {disk_full_line(full, args)}\n")
            return 1


@contextlib.contextmanager
def _threads_ended(timeout: float = 10.0):
    """After the command, wait (at most `timeout` s in all) for the threads it left running. A process pool stopped
    on an error leaves its manager thread closing its wake-up pipe, and CPython 3.11's exit hook for process pools
    (run before non-daemon threads are joined) writes to that pipe unlocked: a close between its check and its
    write printed "OSError: Bad file descriptor" after a command that had stopped with one line. Threads that
    ended have nothing left to race."""
    before = set(threading.enumerate())  # a caller's own threads (a test's servers) are not the command's
    try:
        yield
    finally:
        deadline = time.monotonic() + timeout
        for t in threading.enumerate():
            if t not in before and not t.daemon:
                t.join(max(0.0, deadline - time.monotonic()))


def disk_full_line(e: OSError, args) -> str:
    """One line for a full disk anywhere in a command: the file it was writing when known, else the command's
    output folder; what to do. Tasks that finished are kept, so a rerun resumes where the command stopped."""
    where = e.filename or next((getattr(args, a) for a in ("output", "out") if getattr(args, a, None)), None)
    at = f" writing {where}" if where else ""
    return (f"no space left on the device{at}: free some space (or choose an output on a larger disk) "
            "and rerun the same command to resume")


if __name__ == "__main__":
    sys.exit(main())
