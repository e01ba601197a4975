"""Reading and extraction throughput on the real crawls, single core: warcio vs FastWARC, trafilatura vs Resiliparse.

    .venv/bin/python benchmarks/extract.py [--data ../shared/data] [--repeat 5]

Prints docs/s per core for read-only (each reader over the WARC set, `--repeat` times) and for
read+extract (each extractor over every page once, plus the read cost), the speed ratio against the
baseline measured in the same run (warcio, trafilatura), how far the two extractors agree (mean
token-set Jaccard over pages where both return text), and peak RSS.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

from curate import extract, readers
from curate.core.document import Document
from curate.core.stats import StepStats


def read_all(reader: readers.Reader, files: list[Path]) -> list[Document]:
    return [d for f in files for d in reader.read(str(f), StepStats("read"))]


def time_reads(reader: readers.Reader, files: list[Path], repeat: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = sum(len(read_all(reader, files)) for _ in range(repeat))
    return time.perf_counter() - t0, n


def time_extract(ex: extract._Extractor, docs: list[Document]) -> tuple[float, dict[str, str]]:
    ex.setup()
    out: dict[str, str] = {}
    t0 = time.perf_counter()
    for d in docs:
        res = ex.apply(Document(id=d.id, text=d.text, source=d.source, url=d.url, html=d.html))
        out[d.id] = res.text if isinstance(res, Document) else ""
    return time.perf_counter() - t0, out


def jaccard(a: str, b: str) -> float:
    sa, sb = set(a.lower().split()), set(b.lower().split())
    return len(sa & sb) / max(len(sa | sb), 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    ap.add_argument("--repeat", type=int, default=5, help="passes over the WARC set for the read-only figure")
    args = ap.parse_args()
    files = sorted((Path(args.data) / "warc").rglob("*.warc*.gz"))
    if not files:
        sys.exit(f"no WARC files under {args.data}/warc")

    print(f"{len(files)} WARC files, read-only x{args.repeat}, one process")
    reads = {}
    for name, reader in (("warcio (readers.Warc)", readers.Warc()), ("FastWARC (readers.FastWarc)", readers.FastWarc())):
        sec, n = time_reads(reader, files, args.repeat)
        reads[name] = (sec / args.repeat, n // args.repeat)
        print(f"  read  {name:<30} {n / sec:>9,.0f} docs/s  ({n:,} docs in {sec:.2f}s)")
    base_read, fast_read = reads["warcio (readers.Warc)"][0], reads["FastWARC (readers.FastWarc)"][0]
    print(f"  ratio FastWARC / warcio: {base_read / fast_read:.1f}x")

    docs = [d for d in read_all(readers.Warc(), files) if d.html is not None]
    results = {}
    for name, ex in (("trafilatura", extract.Trafilatura()), ("resiliparse", extract.Resiliparse())):
        sec, texts = time_extract(ex, docs)
        results[name] = (sec, texts)
        kept = sum(bool(t) for t in texts.values())
        per_doc_read = fast_read / len(docs) if name == "resiliparse" else base_read / len(docs)
        rate = len(docs) / (sec + per_doc_read * len(docs))
        print(f"  read+extract {name:<13} {rate:>9,.1f} docs/s  (extract {len(docs) / sec:,.1f} docs/s, "
              f"{kept}/{len(docs)} pages with text)")
    t_sec, t_texts = results["trafilatura"]
    r_sec, r_texts = results["resiliparse"]
    print(f"  ratio Resiliparse / trafilatura (extract only): {t_sec / r_sec:.1f}x")
    both = [i for i in t_texts if t_texts[i] and r_texts[i]]
    agree = sum(jaccard(t_texts[i], r_texts[i]) for i in both) / max(len(both), 1)
    ratio = sum(len(r_texts[i]) for i in both) / max(sum(len(t_texts[i]) for i in both), 1)
    print(f"  agreement: mean token-set Jaccard {agree:.3f} over {len(both)} pages with text from both; "
          f"Resiliparse/trafilatura chars {ratio:.2f}")
    print(f"  peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
