"""extract.Main's output and its parse + walk time on every gold page and every HTML page of the shared WARC files.

    .venv/bin/python benchmarks/extract_parse.py --save before.json.gz   # record this build's output and times
    .venv/bin/python benchmarks/extract_parse.py --compare before.json.gz --save after.json.gz
    .venv/bin/python benchmarks/extract_parse.py --old-build OLD/_walk.cpython-311-x86_64-linux-gnu.so --out r.json

Made to check that a change of the parser's plumbing (issue 23: Lexbor vendored instead of bound from
selectolax) changes no output and costs no time. The output recorded is extract_text's text (title on,
so the <title> lookup is compared too) of each page, keyed by set and id, plus TooDeep. Time: CPU time of
`parse` alone (parse + walk, what the plumbing changes), the median of `--rounds` passes over all pages,
the pages decoded beforehand. With `--old-build`, the extension module of commit da9806e (the walk bound to
selectolax's Lexbor by dlsym, parse by selectolax) is loaded beside this one and the two take turns, round by
round, so that the shared machine's drift weighs on both alike (selectolax needed: the extra `dev`).
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


def old_parser(path: str):
    """parse() as commit da9806e did it: selectolax parses, the old module's walk reads its tree by pointer."""
    import importlib.util

    import selectolax.lexbor
    from selectolax.lexbor import LexborHTMLParser

    from curate.extract.blocks import BOILERPLATE_CUES, COMMENT_CUES, CONTENT_CUES, _tag_table

    spec = importlib.util.spec_from_file_location("old._walk", path)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    old.configure(_tag_table(), (COMMENT_CUES, BOILERPLATE_CUES, CONTENT_CUES), TooDeep)
    old.lexbor(selectolax.lexbor.__file__)

    def parse_old(html: str, max_depth: int = 512, title: bool = False):
        tree = LexborHTMLParser(html)
        node = tree.css_first("title") if title else None
        page_title = " ".join(node.text().split()) if node is not None else ""
        return (old.walk(tree.body.mem_id, max_depth) if tree.body is not None else []), page_title

    return parse_old


def ab(html: dict[str, str], old_path: str, rounds: int) -> dict:
    """CPU microseconds a page of parse + walk, old build and this one taking turns; medians over rounds."""
    fs = {"before": old_parser(old_path), "after": parse}
    times: dict[str, list[float]] = {k: [] for k in fs}
    for _ in range(rounds):
        for name, f in fs.items():
            t0 = time.process_time()
            for page in html.values():
                with contextlib.suppress(TooDeep):
                    f(page, 512, False)
            times[name].append((time.process_time() - t0) / len(html) * 1e6)
    return {"pages": len(html), "rounds": rounds, **{f"{k}_us_per_page": statistics.median(v)
                                                      for k, v in times.items()}, "all_us": times}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--save", type=Path, help="write outputs and times here (.json.gz)")
    ap.add_argument("--compare", type=Path, help="a file of --save: report every page whose output differs")
    ap.add_argument("--old-build", help="the extension module of commit da9806e: time it against this one")
    ap.add_argument("--out", type=Path, help="with --old-build: write the timings here (JSON)")
    args = ap.parse_args()
    html = all_pages(args.data)
    if args.old_build:
        result = ab(html, args.old_build, args.rounds)
        print(json.dumps(result))
        if args.out:
            args.out.write_text(json.dumps(result, indent=1))
        return
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
