"""curate dedup-report OUT: how MinHash grouped a run's documents, and a few clusters side by side.

Reads the kept shards' `dedup_cluster` / `dedup_cluster_size` columns for the histogram and, when
the run was made with --rejected, the dropped copies (same `dedup_cluster`) for the examples.
"""

from __future__ import annotations

import textwrap

import pyarrow as pa
import pyarrow.compute as pc

from curate.core.errors import UsageError
from curate.io import fs

BINS = [(1, 1), (2, 2), (3, 5), (6, 10), (11, 100), (101, 1000), (1001, None)]


def add_parser(sub):
    p = sub.add_parser("dedup-report", help="near-duplicate cluster sizes and example clusters of a run")
    p.add_argument("output", help="a run's output directory (made by a pipeline with dedup.MinHash)")
    p.add_argument("-n", "--examples", type=int, default=3, help="how many of the largest clusters to show")
    p.add_argument("--width", type=int, default=60, help="characters per column in the examples")
    p.add_argument("--lines", type=int, default=8, help="lines of text per document in the examples")
    p.add_argument("--copies", type=int, default=2, help="dropped copies shown beside each kept document")
    return p


def _read(paths: list[str], columns: list[str]) -> pa.Table:
    tables = []
    for p in paths:
        names = fs.parquet_file(p).schema_arrow.names
        if all(c in names for c in columns):
            tables.append(fs.read_table(p, columns=columns))
    return pa.concat_tables(tables) if tables else pa.table({c: [] for c in columns})


def histogram(sizes: list[int]) -> list[tuple[str, int, int]]:
    """(bin label, clusters, documents in them) for cluster sizes of kept documents."""
    rows = []
    for lo, hi in BINS:
        inside = [s for s in sizes if s >= lo and (hi is None or s <= hi)]
        label = f"{lo}" if lo == hi else (f"{lo}-{hi}" if hi else f">{lo - 1}")
        rows.append((label, len(inside), sum(inside)))
    return rows


def side_by_side(texts: list[str], titles: list[str], width: int, lines: int) -> str:
    cols = []
    for title, text in zip(titles, texts, strict=True):
        wrapped = textwrap.wrap(" ".join(text.split()), width)[:lines]
        cols.append([title[:width].ljust(width), "-" * width, *(w.ljust(width) for w in wrapped)])
    height = max(len(c) for c in cols)
    for c in cols:
        c.extend([" " * width] * (height - len(c)))
    return "\n".join(" | ".join(parts) for parts in zip(*cols, strict=True))


def main(args) -> int:
    data = fs.glob(fs.join(args.output, "data", "*.parquet"))
    if not data:
        raise UsageError(f"no shards under {fs.join(args.output, 'data')}")
    kept = _read(data, ["id", "text", "dedup_cluster", "dedup_cluster_size"])
    if kept.num_rows == 0 and fs.parquet_file(data[0]).schema_arrow.get_field_index("dedup_cluster") < 0:
        raise UsageError(f"{args.output} has no dedup_cluster column: was it made with dedup.MinHash?")
    sizes = [s or 1 for s in kept["dedup_cluster_size"].to_pylist()]
    dup_docs = sum(s - 1 for s in sizes)
    print(f"kept documents: {len(sizes):,}   in clusters of 2+: {sum(1 for s in sizes if s > 1):,}   "
          f"near-duplicates removed: {dup_docs:,}")
    print(f"\n{'cluster size':>14}{'clusters':>12}{'documents':>12}")
    for label, n, docs in histogram(sizes):
        print(f"{label:>14}{n:>12,}{docs:>12,}")

    rejected = fs.glob(fs.join(args.output, "rejected", "*.parquet"))
    dropped = _read(rejected, ["id", "text", "dedup_cluster", "drop_reason"])
    dropped = dropped.filter(pc.starts_with(dropped["drop_reason"], "minhash:")) if dropped.num_rows else dropped
    big = kept.filter(pc.greater(kept["dedup_cluster_size"], 1)) if kept.num_rows else kept
    big = big.sort_by([("dedup_cluster_size", "descending"), ("id", "ascending")]).slice(0, args.examples)
    if big.num_rows and not dropped.num_rows:
        print("\n(run with --rejected to see the dropped copies beside each kept document)")
    for row in big.to_pylist():
        members = dropped.filter(pc.equal(dropped["dedup_cluster"], row["dedup_cluster"])) if dropped.num_rows else dropped
        members = members.sort_by("id").slice(0, args.copies).to_pylist() if members.num_rows else []
        print(f"\ncluster {row['dedup_cluster']} ({row['dedup_cluster_size']} documents)")
        titles = [f"kept {row['id']}"] + [f"dropped {m['id']}" for m in members]
        print(side_by_side([row["text"]] + [m["text"] for m in members], titles, args.width, args.lines))
    return 0
