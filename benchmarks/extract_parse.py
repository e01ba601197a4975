"""extract.Main's output and its parse + walk time on every gold page and every HTML page of the shared WARC files.

    .venv/bin/python benchmarks/extract_parse.py --save before.json.gz   # record this build's output and times
    .venv/bin/python benchmarks/extract_parse.py --compare before.json.gz --save after.json.gz

Made to check that a change of the parser's plumbing (issue 23: Lexbor vendored instead of bound from
selectolax) changes no output and costs no time. The output recorded is extract_text's text (title on,
so the <title> lookup is compared too) of each page, keyed by set and id, plus TooDeep. Time: CPU time of
`parse` alone (parse + walk, what the plumbing changes), the median of `--rounds` passes over all pages,
the pages decoded beforehand.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import statistics
import time
from pathlib import Path

from _data import DATA
from _gold import SETS, pages

from curate.core.stats import StepStats
from curate.extract.blocks import TooDeep
from curate.extract.main import extract_text, parse
from curate.io import readers


def all_pages(data: Path) -> dict[str, str]:
    """Every page's HTML, keyed "set/id" (gold sets) or "warc/file#n" (HTML records of the shared WARC files)."""
    out = {f"{name}/{pid}": html for name in SETS for pid, html, _, _ in pages(name, data)}
    for f in sorted((data / "warc").rglob("*.warc.gz")):
        for n, d in enumerate(readers.Warc().read(str(f), StepStats("read"))):
            if d.html:
                out[f"warc/{f.name}#{n}"] = d.html
    return out


def outputs(html: dict[str, str]) -> dict[str, str]:
    got = {}
    for key, page in html.items():
        try:
            got[key] = extract_text(page, title=True)
        except TooDeep:
            got[key] = "<TooDeep>"
    return got


def parse_seconds(html: dict[str, str], rounds: int) -> float:
    """The median over `rounds` of the CPU seconds that parse() takes over all pages."""
    times = []
    for _ in range(rounds):
        t0 = time.process_time()
        for page in html.values():
            with contextlib.suppress(TooDeep):
                parse(page, 512, True)
        times.append(time.process_time() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--save", type=Path, help="write outputs and times here (.json.gz)")
    ap.add_argument("--compare", type=Path, help="a file of --save: report every page whose output differs")
    args = ap.parse_args()
    html = all_pages(args.data)
    got = outputs(html)
    secs = parse_seconds(html, args.rounds)
    result = {"pages": len(html), "parse_walk_cpu_s": secs, "us_per_page": secs / len(html) * 1e6, "outputs": got}
    print(json.dumps({k: v for k, v in result.items() if k != "outputs"}))
    if args.compare:
        before = json.loads(gzip.decompress(args.compare.read_bytes()))
        differ = sorted(k for k in got.keys() | before["outputs"].keys() if got.get(k) != before["outputs"].get(k))
        print(f"identical output on {len(got) - len(differ)} of {len(got)} pages; differ: {differ[:20]}")
        print(f"parse+walk: {before['us_per_page']:.1f} -> {result['us_per_page']:.1f} us a page (CPU, median "
              f"of {args.rounds})")
    if args.save:
        args.save.write_bytes(gzip.compress(json.dumps(result).encode()))


if __name__ == "__main__":
    main()
