"""The `curate` command. Each subcommand lives in curate/commands/<name>.py with `add_parser` and `main`."""

from __future__ import annotations

import argparse
import importlib
import sys

# Subcommand modules, in the order `curate --help` lists them.
COMMANDS = ["run", "stats", "inspect", "report", "dedup_report", "quality", "decontam", "mix", "tokenizer",
            "tokenize", "export", "models", "demo", "cc", "status", "cancel"]


class ArgParser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line, exit 2
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgParser(prog="curate", description="Peneira: curate pretraining data.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=ArgParser)
    for name in COMMANDS:
        mod = importlib.import_module(f"curate.cli.{name}")
        p = mod.add_parser(sub)
        p.set_defaults(func=mod.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    from curate.core.errors import CorruptState, Stopped, UsageError, disk_full
    from curate.run.stopping import exit_code, message, stop_on_signals

    args = build_parser().parse_args(argv)
    with stop_on_signals():
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


def disk_full_line(e: OSError, args) -> str:
    """One line for a full disk anywhere in a command: the file it was writing when known, else the command's
    output folder; what to do. Tasks that finished are kept, so a rerun resumes where the command stopped."""
    where = e.filename or next((getattr(args, a) for a in ("output", "out") if getattr(args, a, None)), None)
    at = f" writing {where}" if where else ""
    return (f"no space left on the device{at}: free some space (or choose an output on a larger disk) "
            "and rerun the same command to resume")


if __name__ == "__main__":
    sys.exit(main())
