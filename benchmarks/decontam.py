"""Decontamination: index build time and size, and scan throughput against a plain-Python baseline.

Index: every benchmark set in shared/data/benchmarks (HumanEval, GSM8K, MMLU dev+test, the 15 llm-foundry
ICL files). Corpus: the 697 Common Crawl pages of text/web_cc plus the clean English prose (WikiText-2
test, Botchan, Tiny Shakespeare, the inaugural and State of the Union addresses), about 7 MB.

The baseline is the straightforward implementation of the same matching rule: the same normalised words,
a Python `set` of word tuples (13-grams, and whole items of 8-12 words), and for each document a
`tuple(words[i:i+k]) in set` test at every position for every length present. Both run in this process
(one core) on the same documents; the script checks they flag the same documents and prints MB/s per
core from process CPU time, which is robust to other jobs on a shared machine.

    .venv/bin/python benchmarks/decontam.py --reps 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# benchmarks/tokenize.py would shadow the standard library's tokenize (numpy imports it): run from the repo.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
DATA = Path(os.environ.get("PENEIRA_SHARED_DATA", ROOT.parent / "shared" / "data"))

from curate.decontam import NgramIndex, build_index, load_benchmark  # noqa: E402
from curate.decontam.text import words  # noqa: E402

BENCHMARKS = {"humaneval": "humaneval/HumanEval.jsonl.gz", "gsm8k": "gsm8k/test.jsonl", "mmlu": "mmlu",
              "icl": "llm_foundry_icl"}


def corpus() -> list[str]:
    with gzip.open(DATA / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz", "rt") as f:
        texts = [json.loads(line)["text"] for line in f]
    for name in ("wikitext-2-test.txt", "botchan_gutenberg8868.txt", "tinyshakespeare.txt"):
        texts.append((DATA / "text/clean_en" / name).read_text(encoding="utf-8"))
    for name in ("nltk_inaugural.zip", "nltk_state_union.zip"):
        with zipfile.ZipFile(DATA / "text/clean_en" / name) as z:
            texts += [z.read(n).decode("utf-8", errors="replace") for n in sorted(z.namelist()) if n.endswith(".txt")]
    return texts


class Baseline:
    """A set of word tuples: what one writes first, and the reference the fast path must agree with."""

    def __init__(self, items_by_bench: dict, n: int = 13, min_words: int = 8, lengths: list[int] | None = None):
        self.grams: set[tuple[str, ...]] = set()
        for _, items in items_by_bench.values():
            for it in items:
                for seg in it.segments:
                    w = words(seg)
                    if len(w) >= n:
                        self.grams.update(tuple(w[i : i + n]) for i in range(len(w) - n + 1))
                    elif len(w) >= min_words:
                        self.grams.add(tuple(w))
        self.lengths = lengths or list(range(min_words, n + 1))

    def hit(self, text: str) -> bool:
        w = words(text)
        return any(tuple(w[i : i + k]) in self.grams for k in self.lengths for i in range(len(w) - k + 1))


def cpu(fn, reps: int) -> tuple[float, object]:
    t = time.process_time()
    for _ in range(reps):
        out = fn()
    return (time.process_time() - t) / reps, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()

    t = time.process_time()
    benches = {k: (v, load_benchmark(str(DATA / "benchmarks" / v))) for k, v in BENCHMARKS.items()}
    load_s = time.process_time() - t
    with tempfile.TemporaryDirectory() as tmp:
        build_s, meta = cpu(lambda: build_index(benches, Path(tmp) / "ix"), 1)
        size = sum(f.stat().st_size for f in (Path(tmp) / "ix").iterdir())
        open_s, index = cpu(lambda: NgramIndex.load(Path(tmp) / "ix"), 1)
        index.scan(["warm up"])
        texts = corpus()
        mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        batches = [texts[i : i + 64] for i in range(0, len(texts), 64)]
        fast_s, found = cpu(lambda: [ms for b in batches for ms in index.scan(b)], args.reps)
    set_s, base = cpu(lambda: Baseline(benches), 1)
    slow_s, flags = cpu(lambda: [base.hit(t) for t in texts], 1)
    base13 = Baseline(benches, lengths=[13])
    slow13_s, _ = cpu(lambda: [base13.hit(t) for t in texts], 1)

    items = sum(len(v[1]) for v in benches.values())
    agree = [bool(ms) for ms in found] == flags
    print(f"benchmarks: {items:,} items from {len(BENCHMARKS)} sources (load {load_s:.2f} s)")
    print(f"index: {meta['entries']:,} entries, {size / 2**20:.1f} MiB on disk, build {build_s:.2f} CPU s "
          f"(Python set of tuples: {set_s:.2f} s, {len(base.grams):,} tuples); load per worker {open_s:.2f} s")
    print(f"corpus: {len(texts):,} documents, {mb:.2f} MB; documents with a hit: {sum(flags)} "
          f"(fast and baseline agree: {agree})")
    print(f"{'scanner':<44}{'CPU s':>8}{'MB/s/core':>11}{'ratio':>8}")
    for name, s in [("numpy index (Decontaminate)", fast_s), ("baseline set of tuples, lengths 8-13", slow_s),
                    ("baseline set of tuples, 13-grams only", slow13_s)]:
        print(f"{name:<44}{s:>8.2f}{mb / s:>11.2f}{slow_s / s:>7.1f}x")
    if not agree:
        sys.exit("fast and baseline scanners disagree")


if __name__ == "__main__":
    main()
