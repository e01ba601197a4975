"""curate stats OUT: the per-step table of a finished run."""

from __future__ import annotations

import json

from curate.core.errors import UsageError
from curate.core.stats import StepStats, format_table
from curate.io import fs


def add_parser(sub):
    p = sub.add_parser("stats", help="per-step table: documents and characters in, out, dropped by reason")
    p.add_argument("output", help="a run's output directory")
    p.add_argument("--json", action="store_true", help="print stats.json as is")
    return p


def load_stats(out: str) -> list[StepStats]:
    path = fs.join(out, "stats.json")
    if not fs.exists(path):
        raise UsageError(f"{out} has no stats.json (not a finished run?)")
    with fs.open(path, "r", encoding="utf-8") as f:
        return [StepStats.from_dict(d) for d in json.load(f)["steps"]]


def main(args) -> int:
    stats = load_stats(args.output)
    if args.json:
        print(json.dumps([s.to_dict() for s in stats], indent=1))
    else:
        print(format_table(stats))
    return 0
