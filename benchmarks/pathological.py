"""Pathological texts through the word-level rules and the extractor (issue 29): seconds per document.

Case 8 of issue 29: a whitespace-free run of one character is a single chunk, and the word tokenizer
(curate/filters/_words.py) peeled its edge marks one at a time, copying what was left at each step, so
GopherQuality took 3.0 / 11.9 / 37.1 s on 100k / 200k / 400k `=` and 40 s on 200k emoji. The other cases
are the other routines that were quadratic on some text (C4's sentence count on a run of periods, the
sentence splitter of line dedup on a long chunk without a stop, the URL filter on a host of many labels,
extract.Main's output of a table row of many cells). Each case is one document and runs in a fresh process
with the code of `--root` (default: this checkout), cut at `--timeout` seconds; CPU seconds are reported.
To measure an older commit, unpack its `curate` beside a copy of the built extension:

    git archive COMMIT curate | tar -x -C /tmp/before && cp curate/extract/_walk*.so /tmp/before/curate/extract/
    nice .venv/bin/python benchmarks/pathological.py --root /tmp/before --out /tmp/before.json
    nice .venv/bin/python benchmarks/pathological.py --out /tmp/after.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# name -> (what runs, the text): GopherQuality and the others on one document of that text
CASES = {
    "gopher_quality_eq_100k": ("GopherQuality", "=" * 100_000),
    "gopher_quality_eq_200k": ("GopherQuality", "=" * 200_000),
    "gopher_quality_eq_400k": ("GopherQuality", "=" * 400_000),
    "gopher_quality_emoji_200k": ("GopherQuality", "\U0001F600" * 200_000),
    "gopher_repetition_eq_400k": ("GopherRepetition", "=" * 400_000),
    "fineweb_punct_400k": ("FineWeb", ",." * 200_000),
    "gopher_quality_2M_mixed": ("GopherQuality", ("abc=Жж😀\u0301'.-" * 200_000)[:2_000_000]),
    "c4_sentences_dots_100k": ("count_sentences", "." * 100_000 + " x."),
    "dedup_sentences_letters_100k": ("sentence_cuts", "a" * 100_000),
    "url_host_200k_labels": ("Url", "http://" + "a." * 200_000 + "com/"),
    "extract_main_row_32k_cells": ("Main", "<article><table><tr>" + "<td>The cat sat on the mat, and it was a good day."
                                   "</td>" * 32_000 + "</tr></table></article>"),
}


def run_case(name: str) -> dict:
    """One case in this process: its CPU and wall seconds and what the step said."""
    from curate.core.document import Document

    what, text = CASES[name]
    doc = Document(id="x", text=text, source="s", lang="en", url="http://example.com/")
    if what in ("GopherQuality", "GopherRepetition", "FineWeb"):
        from curate import filters

        step = getattr(filters, what)()
        call = lambda: step.reject_rule(doc)  # noqa: E731
    elif what == "count_sentences":
        from curate.filters.c4 import count_sentences

        call = lambda: count_sentences(text)  # noqa: E731
    elif what == "sentence_cuts":
        from curate.dedup.units import cut

        call = lambda: len(cut(text, "sentence")[0])  # noqa: E731
    elif what == "Url":
        from curate import filters

        step = filters.Url(blocked_domains=["example.org"])
        step.setup()
        doc.url = text
        call = lambda: step.reject_rule(doc)  # noqa: E731
    else:
        from curate.extract.main import extract_text

        call = lambda: len(extract_text(text))  # noqa: E731
    c0, w0 = time.process_time(), time.perf_counter()
    result = call()
    return {"cpu_s": round(time.process_time() - c0, 3), "wall_s": round(time.perf_counter() - w0, 3),
            "chars": len(text), "result": result}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=str(ROOT), help="checkout whose curate package is measured")
    ap.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--out", help="write the rows here as JSON")
    ap.add_argument("--run", help=argparse.SUPPRESS)  # one case, in the child process
    args = ap.parse_args()
    if args.run:
        sys.path.insert(0, args.root)
        print(json.dumps(run_case(args.run)))
        return
    rows = {}
    for name in args.cases:
        cmd = [sys.executable, __file__, "--root", args.root, "--run", name]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, check=True)
            rows[name] = json.loads(proc.stdout.splitlines()[-1])
        except subprocess.TimeoutExpired:
            rows[name] = {"cpu_s": None, "wall_s": None, "chars": len(CASES[name][1]),
                          "result": f"not finished after {args.timeout:.0f} s"}
        r = rows[name]
        print(f"{name:32s} {r['chars']:>10,} chars  cpu {r['cpu_s']} s  wall {r['wall_s']} s  -> {r['result']}",
              flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"root": args.root, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
