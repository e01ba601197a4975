"""The `curate` command. Each subcommand lives in curate/commands/<name>.py with `add_parser` and `main`."""

from __future__ import annotations

import argparse
import importlib
import sys

# Subcommand modules, in the order `curate --help` lists them.
COMMANDS = ["run", "stats", "inspect", "report", "dedup_report", "quality", "decontam", "mix", "tokenizer",
            "tokenize", "models", "demo"]


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
    from curate.core.errors import UsageError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except UsageError as e:
        sys.stderr.write(f"curate {args.command}: error: {e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: rerun the same command to resume\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
