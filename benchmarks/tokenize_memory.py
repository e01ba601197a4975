"""Peak memory of one `curate tokenize` task against the size of its documents (issue 29.9).

A file of 1,000 documents of `--kb` KB each (real Common Crawl text from shared/data/text/web_cc, cut and joined
to that length) is tokenized by `_tokenize_file`, the task `curate tokenize` runs per input file, in a fresh
process with one Rust thread. Printed per size: resident memory after the imports and the tokenizer load
("before"), the process's peak (`VmHWM`), and the difference: what the task itself held at its peak.

    .venv/bin/python benchmarks/tokenize_memory.py --kb 3 30 300 2000

Run it on an older checkout (PENEIRA_SHARED_DATA=…/shared/data python benchmarks/tokenize_memory.py) for the
figures before a change; docs/benchmarks.md ("Tokenization memory") has both.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _data import ROOT, WEB_AND_PT

TASK = r"""
import json, os, sys
sys.path.insert(0, sys.argv[5])
from curate.tokens.tokenize import _Task, _tokenize_file, task_tokenizer
path, out, tok = sys.argv[1:4]
task_tokenizer(tok)  # built before the baseline, as in a pool worker after its first task
def status(key):  # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forked parent
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":")) / 1024
before = status("VmRSS")
_tokenize_file(_Task(int(sys.argv[4]), path, out, tok, "uint16", 0.0, 1000, 1))
print(json.dumps({"before": before, "peak": status("VmHWM")}))
"""


def corpus(path: Path, kb: int, docs: int = 1000) -> int:
    """`docs` documents of `kb` KB of real web text each (the web_cc documents joined and cut); their characters."""
    import gzip

    with gzip.open(WEB_AND_PT[0], "rt", encoding="utf-8") as f:
        text = "\n\n".join(json.loads(line)["text"] for line in f)
    size, chars, pos = kb * 1000, 0, 0
    with open(path, "w", encoding="utf-8") as f:
        for i in range(docs):
            if pos + size > len(text):
                pos = (pos * 7 + 1) % max(1, len(text) - size)
            doc = text[pos : pos + size]
            pos += size
            chars += len(doc)
            f.write(json.dumps({"id": f"d{i}", "text": doc}) + "\n")
    return chars


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", type=int, nargs="+", default=[3, 30])
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--vocab-size", type=int, default=8192)
    args = ap.parse_args()
    from curate.tokens.tokenize import train_tokenizer

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        tok = tmp / "tok.json"
        train_tokenizer([str(WEB_AND_PT[0])], args.vocab_size, tok)
        print(f"{'doc size':>9} {'text':>9} {'before':>9} {'peak':>9} {'task':>9}")
        for i, kb in enumerate(args.kb):
            path = tmp / f"docs-{kb}k.jsonl"
            chars = corpus(path, kb, args.docs)
            out = tmp / f"out-{kb}"
            (out / "_done").mkdir(parents=True)
            got = subprocess.run([sys.executable, "-c", TASK, str(path), str(out), str(tok), str(i), str(ROOT)],
                                 check=True, capture_output=True, text=True, env={**os.environ, "RAYON_NUM_THREADS": "1"})
            r = json.loads(got.stdout)
            print(f"{kb:>7} K {chars / 2**20:>7.1f} M {r['before']:>6.0f} MiB {r['peak']:>5.0f} MiB "
                  f"{r['peak'] - r['before']:>5.0f} MiB")


if __name__ == "__main__":
    main()
