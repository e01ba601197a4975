"""curate report OUT: report.md and a self-contained report.html with charts for a finished run."""

from __future__ import annotations

from curate.core.errors import UsageError


def add_parser(sub):
    p = sub.add_parser("report", help="write report.md and report.html (funnel, drops per reason, histograms)")
    p.add_argument("output", help="a run's output directory")
    return p


def main(args) -> int:
    from curate.report.build import write_report

    try:
        paths = write_report(args.output)
    except FileNotFoundError as e:
        raise UsageError(str(e)) from e
    print(f"wrote {paths['md']} and {paths['html']}")
    return 0
