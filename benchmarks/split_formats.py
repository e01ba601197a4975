"""Within-file tasks over the formats split by a search (issue 30): what reading a file as byte ranges costs
against reading it whole, in CPU seconds of one process (the ranges read one after another), plus planning.

Inputs generated into `--scratch` from ../shared/data (never the repository): real CC web text (697 dolma
records, repeated 20 times) as a bgzip-style `.jsonl.gz` (64 KiB members cut mid-line) and a `.jsonl.zst` of
1 MiB frames; a real WARC decompressed and repeated 4 times as an uncompressed `.warc`. Each split reads the
same number of documents as the whole file (asserted; tests/test_splits.py checks ids and texts).

    .venv/bin/python benchmarks/split_formats.py --scratch /tmp/split-formats
"""

from __future__ import annotations

import argparse
import gzip
import os
import time
from pathlib import Path

from curate.core.stats import StepStats
from curate.io import readers
from curate.io.plan import plan_splits
from curate.io.splits import Split

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def inputs(scratch: Path) -> list[tuple[Path, object]]:
    """The three inputs, written once, with the reader of each."""
    import zstandard

    scratch.mkdir(parents=True, exist_ok=True)
    src = gzip.decompress((SHARED / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz")
                          .read_bytes()) * 20
    gz, zst, warc = scratch / "bgzf.jsonl.gz", scratch / "frames.jsonl.zst", scratch / "plain.warc"
    gz.write_bytes(b"".join(gzip.compress(src[i:i + 65280], 6, mtime=0) for i in range(0, len(src), 65280)))
    zc = zstandard.ZstdCompressor()
    zst.write_bytes(b"".join(zc.compress(src[i:i + (1 << 20)]) for i in range(0, len(src), 1 << 20)))
    one = SHARED / "warc/internet_archive/aut_IAH-20080430204825-00000-blackbook.warc.gz"
    warc.write_bytes(gzip.decompress(one.read_bytes()) * 4)
    return [(gz, readers.Jsonl()), (zst, readers.Jsonl()), (warc, readers.FastWarc())]


def cpu(reader, splits) -> tuple[int, float]:
    t = time.process_time()
    n = sum(1 for s in splits for _ in reader.read_split(s, StepStats("read")))
    return n, time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scratch", default="/tmp/split-formats")
    args = ap.parse_args()
    for path, reader in inputs(Path(args.scratch)):
        n, base = cpu(reader, [Split(str(path), path.name)])
        row = [f"{path.name} ({os.path.getsize(path) >> 20} MiB, {n} docs): whole {base:.2f} s"]
        for k in (8, 64):
            t = time.process_time()
            plan = plan_splits(str(path), tasks=k)
            planning = time.process_time() - t
            m, c = cpu(reader, plan)
            assert m == n, (path, k, m, n)
            row.append(f"{len(plan)} ranges {c:.2f} s (x{c / base:.2f}), planning {planning:.2f} s")
        print("; ".join(row))


if __name__ == "__main__":
    main()
