"""dedup.Substrings: MB/s per core and peak RSS of each phase against corpus size, for both methods (suffix arrays
of pairs of parts, hashed windows in hash partitions) on the same corpora in the same run, dedup.Exact as the
baseline.

Corpus: the real text of ../shared/data (web_cc's Common Crawl documents, the extraction gold texts, wikitext-2,
Botchan, Shakespeare, Portuguese Bosque), cut into documents of at most 8,000 characters and drawn in turn until the
corpus has SIZE MB of UTF-8; every copy after the first has 2% of its words replaced by random numbers, so copies
share spans of about 50 words (what substring dedup removes) but are rarely equal whole. About 3 MB of distinct text,
so a 100 MB corpus is mostly repeats: a heavy case for the rewrite.

Each (method, size, part size) runs in a process of its own on one worker (`LocalExecutor(1)`: every phase on one
core, in that process), so a phase's MB/s is MB per core and its peak RSS is the process's high-water mark over the
phase (reset before it through /proc/self/clear_refs, read from VmHWM: it includes the interpreter and libraries,
about 200-300 MB). Phases of `method="suffix"`: `text` (shards to UTF-8 and offsets), `pairs` (the suffix and LCP
arrays of each pair of parts and the repeats found: the cross-part scheme), `rewrite` (strike, write the shards),
`top`; of `method="hash"`: `text`, `windows` (hash every window, settle a piece's own repeats, write records by hash
partition), `repeats` (sort each partition), `spans` (repeated windows to intervals), `rewrite`, `top`. `sa MB/s`:
libdivsufsort + Kasai's LCP (+ the longest previous factor for keep="first") alone on one pair's text, CPU time.
dedup.Exact on the same shards is the baseline in the same run (its whole run's MB/s); `vs suffix` is the hash
method's step MB/s over the suffix method's at the same size and part size in the same run.

    .venv/bin/python benchmarks/substrings.py --sizes 10 30 100 --part-mb 16 --json benchmarks/substrings.json
    .venv/bin/python benchmarks/substrings.py --markdown benchmarks/substrings.json   # the docs' table
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _data import DATA

MB = 1_000_000


def real_texts() -> list[str]:
    """The shared data's real texts, as documents of at most 8,000 characters."""
    texts = []
    for path in sorted((DATA / "text/web_cc").glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f]
    for gold in sorted((DATA / "extraction").glob("*/gold.jsonl")):
        texts += [json.loads(line)["text"] for line in gold.open(encoding="utf-8")]
    for name in ("clean_en/wikitext-2-test.txt", "clean_en/botchan_gutenberg8868.txt", "clean_en/tinyshakespeare.txt"):
        texts.append((DATA / "text" / name).read_text(encoding="utf-8", errors="replace"))
    texts += [json.loads(line)["text"] for line in (DATA / "text/pt/bosque_docs.jsonl").open(encoding="utf-8")]
    return [t[i:i + 8000] for t in texts if t and t.strip() for i in range(0, len(t), 8000)]


def corpus_texts(size_mb: float, seed: int = 0):
    """Documents until `size_mb` MB of UTF-8: the real texts, then copies with 2% of their words replaced."""
    rng = random.Random(seed)
    base = real_texts()
    total, n = 0, 0
    while total < size_mb * MB:
        text = base[n % len(base)]
        if n >= len(base):
            words = text.split(" ")
            for _ in range(len(words) // 50):
                words[rng.randrange(len(words))] = str(rng.randrange(10**6))
            text = " ".join(words)
        yield text
        total += len(text.encode())
        n += 1


def write_corpus(folder: Path, size_mb: float, files: int = 8) -> int:
    """JSONL files of about `size_mb` MB of text; returns the text's UTF-8 bytes."""
    outs = [(folder / f"in-{k}.jsonl").open("w", encoding="utf-8") for k in range(files)]
    total = 0
    for n, text in enumerate(corpus_texts(size_mb)):
        outs[n % files].write(json.dumps({"id": f"d{n:08d}", "text": text}) + "\n")
        total += len(text.encode())
    for f in outs:
        f.close()
    return total


def phase_peaks(peaks: dict) -> Callable:
    """Record each phase's peak RSS (MB) in `peaks`: the high-water mark reset before the phase, read after it.
    Returns the real `run_phase`, to put back."""
    from curate.dedup import common

    real = common.run_phase

    def measured(ctx, phase, *args, **kwargs):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux >= 4.0)
        try:
            return real(ctx, phase, *args, **kwargs)
        finally:
            hwm = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM"))
            peaks[phase] = round(int(hwm.split()[1]) * 1024 / MB, 1)

    common.run_phase = measured
    return real


def one(args) -> dict:
    """One method, size and part size in this process: the pipeline, then the baseline; prints a JSON line."""
    from curate import Pipeline, dedup, readers
    from curate.run.executors.local import LocalExecutor

    tmp = Path(tempfile.mkdtemp(prefix="substr-bench-"))
    try:
        nbytes = write_corpus(tmp, args.one)
        inputs = sorted(str(p) for p in tmp.glob("in-*.jsonl"))
        shards_run = Pipeline(name="read", reader=readers.Jsonl(), steps=[])
        shards_run.run(inputs=inputs, output=str(tmp / "read"), executor=LocalExecutor(1, progress=False), progress=False)
        shards = sorted(str(p) for p in (tmp / "read" / "data").glob("*.parquet"))
        step = dedup.Substrings(min_length=100, keep=args.keep[0], part_bytes=int(args.part_mb * MB),
                                method=args.methods[0])
        peaks: dict[str, float] = {}
        real_run_phase = phase_peaks(peaks)
        t, cpu = time.perf_counter(), time.process_time()
        Pipeline(name="sub", reader=readers.Parquet(), steps=[step]).run(
            inputs=shards, output=str(tmp / "sub"), executor=LocalExecutor(1, progress=False), progress=False)
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
        sys.modules["curate.dedup.common"].run_phase = real_run_phase  # dedup.Exact's phases not measured
        st = json.loads((tmp / "sub" / "stats.json").read_text())["steps"][-1]
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        t = time.process_time()
        Pipeline(name="exact", reader=readers.Parquet(), steps=[dedup.Exact()]).run(
            inputs=shards, output=str(tmp / "exact"), executor=LocalExecutor(1, progress=False), progress=False)
        exact = time.process_time() - t
        ex = st["extra"]
        hashed = args.methods[0] == "hash"
        return {"method": args.methods[0], "size_mb": round(nbytes / MB, 1), "part_mb": args.part_mb,
                "keep": args.keep[0], "parts": ex["partitions"] if hashed else ex["parts"],
                "tasks": ex["partitions"] if hashed else ex["pair_tasks"], "phase_rss_mb": peaks,
                "max_task_mb": round(ex["max_partition_records" if hashed else "max_pair_bytes"] / MB, 1),
                "seconds": ex["seconds"], "cpu_seconds": ex["cpu_seconds"], "wall": round(wall, 2), "cpu": round(cpu, 2),
                "exact_cpu": round(exact, 2), "load": round(os.getloadavg()[0], 1),
                "peak_rss_mb": round(rss / MB, 1), "chars_struck_pct": round(100 * ex["chars_struck"] / st["chars_in"], 1),
                "docs": st["docs_in"], "docs_emptied": ex["docs_emptied"]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sa_rate(part_mb: float, keep: str) -> float:
    """MB/s (CPU time) of the suffix and LCP arrays (and the longest previous factor) on the text of one pair task:
    the first 2 x `part_mb` MB of the benchmark's corpus."""
    import numpy as np

    from curate.dedup.substrings import longest_repeats

    n = int(2 * part_mb * MB)
    raw = b"".join(t.encode() + b"\xff" for t in corpus_texts(2 * part_mb))[:n]
    text = np.frombuffer(bytearray(raw), dtype=np.uint8)
    t = time.process_time()
    longest_repeats(text, keep)
    return len(raw) / MB / (time.process_time() - t)


def rates(r: dict) -> dict:
    s, mb = r["cpu_seconds"], r["size_mb"]
    return {k: round(mb / v, 1) for k, v in s.items() if v} | {
        "total": round(mb / r["cpu"], 2), "exact": round(mb / r["exact_cpu"], 2)}


def versus_suffix(doc: dict, r: dict) -> str:
    """The hash method's step MB/s over the suffix method's on the same corpus and parts, in the same run."""
    same = [s for s in doc["runs"] if s.get("method", "suffix") == "suffix" and s["size_mb"] == r["size_mb"]
            and s["part_mb"] == r["part_mb"] and s["keep"] == r["keep"]]
    return f"{same[0]['cpu'] / r['cpu']:.1f}x" if same and r.get("method") == "hash" else ""


def markdown(path: str) -> str:
    doc = json.loads(Path(path).read_text())
    lines = [f"Machine: {doc['machine']}; `{doc['command']}`; min_length 100, "
             "one worker; MB/s per core: corpus MB over CPU seconds (a phase's tasks' own, the step's and dedup.Exact's "
             "process), as the machine is shared (load average in the last column). Parts: parts of the suffix "
             "method (its tasks: pairs of parts), hash partitions of the hash method (its tasks: one per partition); "
             "peak RSS per phase: the process's high-water mark over that phase, interpreter included.", "",
             "| method | keep | corpus MB | part MB | parts | tasks | MB/s per phase | step MB/s | vs suffix | "
             "dedup.Exact MB/s | peak RSS MB per phase | struck | load |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["runs"]:
        q = rates(r)
        phases = " · ".join(f"{k} {q[k]}" for k in r["cpu_seconds"] if k in q)
        rss = " · ".join(f"{k} {v:.0f}" for k, v in r.get("phase_rss_mb", {}).items()) or str(r["peak_rss_mb"])
        lines.append(f"| {r.get('method', 'suffix')} | {r['keep']} | {r['size_mb']} | {r['part_mb']} | {r['parts']} | "
                     f"{r.get('tasks', r.get('pair_tasks'))} | {phases} | {q['total']} | {versus_suffix(doc, r)} | "
                     f"{q['exact']} | {rss} | {r['chars_struck_pct']}% | {r['load']} |")
    lines += ["", "Suffix + LCP arrays alone (libdivsufsort, one pair's text, CPU time): " +
              ", ".join(f"{k}: {v:.1f} MB/s" for k, v in doc["sa_mb_s"].items())]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=float, nargs="*", default=[10, 30, 100])
    ap.add_argument("--part-mb", type=float, default=16)
    ap.add_argument("--whole", action="store_true", help="also one part holding the whole corpus, per size")
    ap.add_argument("--keep", nargs="*", default=["none"], help='"none" and/or "first"')
    ap.add_argument("--methods", nargs="*", default=["suffix", "hash"])
    ap.add_argument("--first-sizes", type=float, nargs="*", help='sizes keep="first" runs at (default: all)')
    ap.add_argument("--json")
    ap.add_argument("--markdown", metavar="JSON")
    ap.add_argument("--one", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.markdown:
        print(markdown(args.markdown))
        return
    if args.one:
        print(json.dumps(one(args)))
        return
    runs = []
    for keep in args.keep:
        for size in args.sizes if keep == "none" or args.first_sizes is None else args.first_sizes:
            for part in [args.part_mb] + ([round(size * 1.1, 1)] if args.whole else []):
                for method in args.methods:
                    out = subprocess.run([sys.executable, __file__, "--one", str(size), "--part-mb", str(part), "--keep",
                                          keep, "--methods", method], check=True, capture_output=True, text=True).stdout
                    runs.append(json.loads(out.strip().splitlines()[-1]))
                    print(json.dumps(runs[-1] | {"mb_s": rates(runs[-1])}), flush=True)
    doc = {"machine": f"{platform.node()} {platform.processor() or platform.machine()}, {platform.python_version()}",
           "command": " ".join(["benchmarks/substrings.py", *sys.argv[1:]]),
           "sa_mb_s": {k: sa_rate(args.part_mb, k) for k in ("none", "first")}, "runs": runs}
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    print(markdown(args.json) if args.json else json.dumps(doc))


if __name__ == "__main__":
    main()
