"""curate stats OUT: the per-step table of a finished run."""

from __future__ import annotations

import json

from curate.core.errors import UsageError
from curate.core.stats import StepStats, format_table
from curate.io import fs
from curate.report.inputs import by_input


def add_parser(sub):
    p = sub.add_parser("stats", help="per-step table: documents and characters in, out, dropped by reason")
    p.add_argument("output", help="a run's output directory")
    p.add_argument("--json", action="store_true", help="print stats.json as is")
    p.add_argument("--by-input", action="store_true",
                   help="one row per input file (its records, documents read, kept after the first stage and at the "
                        "end), then the kept documents per source")
    p.add_argument("--folders", action="store_true", help="with --by-input: one row per input folder instead")
    return p


def load_stats(out: str) -> list[StepStats]:
    path = fs.join(out, "stats.json")
    if not fs.exists(path):
        raise UsageError(f"{out} has no stats.json (not a finished run?)")
    with fs.open(path, "r", encoding="utf-8") as f:
        return [StepStats.from_dict(d) for d in json.load(f)["steps"]]


def main(args) -> int:
    stats = load_stats(args.output)
    if args.by_input or args.folders:
        print(format_inputs(by_input(args.output, folders=args.folders)))
        return 0
    if args.json:
        print(json.dumps([s.to_dict() for s in stats], indent=1))
    else:
        print(format_table(stats))
    return 0


def format_inputs(table: dict) -> str:
    """The --by-input table: every input's documents against its own read count, then sources."""
    from curate.core.shown import for_terminal

    head = f"{'input':<60}{'records':>10}{'read':>10}{'stage 1':>10}{'kept':>10}{'kept/read':>10}"
    lines = [head, "-" * len(head)]
    for key, r in table["inputs"].items():
        name = for_terminal(key, lines=False)
        name = name if len(name) <= 58 else "…" + name[-57:]
        share = f"{r['kept'] / r['read']:.1%}" if r["read"] else "-"
        lines.append(f"{name:<60}{r['records']:>10,}{r['read']:>10,}{r['first_stage']:>10,}{r['kept']:>10,}{share:>10}")
    lines += ["", "kept documents per source:"]
    lines += [f"  {for_terminal(str(s), lines=False):<30}{n:>10,}" for s, n in table["sources"].most_common()]
    return "\n".join(lines)
