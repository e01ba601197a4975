"""curate demo generate --out DIR: write the seeded demo crawl (WARCs, benchmark.jsonl, truth.json)."""

from __future__ import annotations

import time

from curate.cli.common import add_overwrite
from curate.core.errors import UsageError

DEMO_LAYOUT = ("truth.json", "demo-*.warc.gz", "benchmark.jsonl", "quality")  # what generate writes


def add_parser(sub):
    p = sub.add_parser("demo", help="generate the demo crawl")
    from curate.cli.main import ArgParser

    demo_sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=ArgParser)
    g = demo_sub.add_parser("generate", help="write demo WARC files, benchmark.jsonl and truth.json")
    g.add_argument("--out", required=True, help="output directory")
    g.add_argument("--pages", type=int, default=600, help="number of HTTP responses (default 600)")
    g.add_argument("--files", type=int, default=4, help="number of WARC files (default 4)")
    g.add_argument("--seed", type=int, default=0, help="same seed, same bytes (default 0)")
    add_overwrite(g)
    return p


def main(args) -> int:
    from curate.demo.crawl import generate, write_quality_samples

    if args.pages < 20:
        raise UsageError(f"--pages must be >= 20 to hold every kind of page, got {args.pages}")
    if args.files < 1 or args.files > args.pages:
        raise UsageError(f"--files must be between 1 and --pages, got {args.files}")
    from curate.io import fs
    from curate.io.outputs import claim, locked

    what = "`curate demo generate`"
    with locked(args.out, what=what):  # two generates into one folder: the second is refused with one line
        claim(args.out, what=what, option="--out", layout=DEMO_LAYOUT, overwrite=args.overwrite,
              own=lambda: "truth.json" in fs.listdir(args.out))  # the same seed writes the same bytes again
        t0 = time.perf_counter()
        truth = generate(args.out, pages=args.pages, seed=args.seed, files=args.files)
        positive, negative = write_quality_samples(args.out, seed=args.seed)
    kinds = ", ".join(f"{n} {k}" for k, n in truth["kinds"].items())
    print(f"wrote {truth['pages']} pages ({kinds}) in {len(truth['files'])} WARC file(s) to {args.out} "
          f"in {time.perf_counter() - t0:.1f}s; {truth['html_responses']} are text/html")
    print(f"ground truth: {args.out}/truth.json; benchmark questions: {args.out}/benchmark.jsonl")
    print(f"quality classifier examples: {positive}, {negative}")
    return 0
