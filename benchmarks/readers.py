"""What per-record fault isolation costs the WARC readers: each reader against its bare library.

The readers decompress a `.warc.gz` gzip member by member (`curate.io.members`), hold each document
back until its member's CRC checks out, and count every record; the baselines iterate the same files
with the library alone (warcio reading every response's content; FastWARC framing every record and
reading its block), which is what the readers did before. Docs/s per core, best of `--repeat` passes
over the 10 real WARC/WET/WAT files of ../shared/data/warc, all measured in this one run.

    .venv/bin/python benchmarks/readers.py --repeat 5
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import DATA  # noqa: E402

from curate.core.stats import StepStats  # noqa: E402
from curate.io import readers  # noqa: E402


def bare_warcio(path: Path) -> int:
    from warcio.archiveiterator import ArchiveIterator

    n = 0
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f):
            if rec.rec_type in ("response", "conversion"):
                rec.content_stream().read()
                n += 1
    return n


def bare_fastwarc(path: Path) -> int:
    from fastwarc.warc import ArchiveIterator

    n = 0
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f, parse_http=False, auto_decode="none"):
            if rec.headers.get("WARC-Type") in ("response", "conversion"):
                rec.reader.read()
                n += 1
    return n


def best(fn, files: list[Path], repeat: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        n = sum(fn(f) for f in files)
        times.append(time.perf_counter() - t)
    return min(times), n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    files = sorted((DATA / "warc").rglob("*.warc*.gz"))
    reader_fn = lambda r: (lambda f: sum(1 for _ in r.read(str(f), StepStats("read"))))  # noqa: E731
    rows = [("warcio alone (baseline)", bare_warcio), ("readers.Warc", reader_fn(readers.Warc())),
            ("FastWARC alone (baseline)", bare_fastwarc), ("readers.FastWarc", reader_fn(readers.FastWarc()))]
    print(f"{len(files)} WARC files, best of {args.repeat}, one process")
    secs = {}
    for name, fn in rows:
        sec, n = best(fn, files, args.repeat)
        secs[name] = sec
        print(f"  {name:<28} {sec * 1000:8.1f} ms   ({n} records or documents)")
    print(f"  readers.Warc / warcio alone:        {secs['readers.Warc'] / secs['warcio alone (baseline)']:.2f}x the time")
    print(f"  readers.FastWarc / FastWARC alone:  {secs['readers.FastWarc'] / secs['FastWARC alone (baseline)']:.2f}x the time")
    print(f"  peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
