"""Options worded alike in every `curate` command that has them."""

from __future__ import annotations

import argparse


def add_overwrite(parser: argparse.ArgumentParser) -> None:
    """`--overwrite`, for a command that writes an output folder (`curate.io.outputs.claim`)."""
    parser.add_argument("--overwrite", action="store_true",
                        help="replace what an earlier or different run left in the output folder (only the files "
                             "this command writes are removed; any other file there refuses the run)")


def add_progress(parser: argparse.ArgumentParser) -> None:
    """`--progress/--no-progress` (default on), spelled as the trainer spells it."""
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show progress bars (default: on)")
