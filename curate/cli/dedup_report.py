"""curate dedup-report OUT: how MinHash grouped a run's documents, and a few clusters side by side.

Reads the kept shards' `dedup_cluster` / `dedup_cluster_size` columns for the histogram and, when
the run was made with --rejected, the dropped copies (same `dedup_cluster`) for the examples: a batch
of narrow columns at a time, texts only for the few documents shown. dedup.Semantic's groups (`semantic_cluster`,
`semantic_cluster_size`) are shown the same way. A run with dedup.Substrings also gets its
most repeated struck regions, from the file that step's `top` phase wrote in the run's `_work` folder.
"""

from __future__ import annotations

import textwrap
from collections import Counter

from curate.core.errors import UsageError
from curate.core.shown import for_terminal
from curate.io import fs

BINS = [(1, 1), (2, 2), (3, 5), (6, 10), (11, 100), (101, 1000), (1001, None)]


def add_parser(sub):
    p = sub.add_parser("dedup-report", help="near-duplicate cluster sizes and example clusters of a run; the most repeated substrings struck")
    p.add_argument("output", help="a run's output directory (made by a pipeline with dedup.MinHash)")
    p.add_argument("-n", "--examples", type=int, default=3, help="how many of the largest clusters to show")
    p.add_argument("--width", type=int, default=60, help="characters per column in the examples")
    p.add_argument("--lines", type=int, default=8, help="lines of text per document in the examples")
    p.add_argument("--copies", type=int, default=2, help="dropped copies shown beside each kept document")
    p.add_argument("--spans", type=int, default=10, help="most repeated regions dedup.Substrings struck to show")
    return p


BATCH_ROWS = 8192  # rows decoded at a time: the report holds counts and a few examples, never a column of the corpus


def _batches(paths: list[str], columns: list[str]):
    from curate.io.batching import iter_batches  # Arrow: loaded by the report, not by `curate dedup-report --help`

    """Record batches of `columns` from every shard that has them, `BATCH_ROWS` rows at a time."""
    for p in paths:
        pf = fs.parquet_file(p)
        if all(c in pf.schema_arrow.names for c in columns):
            yield from iter_batches(pf, columns=columns, max_rows=BATCH_ROWS)


def _largest(rows: list[dict], n: int) -> list[dict]:
    """The `n` kept rows of the largest clusters (ties: smallest id), as the examples show them."""
    return sorted(rows, key=lambda r: (-r["dedup_cluster_size"], r["id"]))[:n]


def scan_kept(paths: list[str], examples: int, column: str = "dedup_cluster") -> tuple[Counter, list[dict]]:
    """(kept documents per cluster size, the kept rows of the `examples` largest clusters), from narrow columns.
    `column`: dedup_cluster (MinHash) or semantic_cluster (dedup.Semantic), with its `_size`; rows come back with
    MinHash's names."""
    import pyarrow.compute as pc

    sizes: Counter = Counter()
    top: list[dict] = []
    for b in _batches(paths, ["id", column, f"{column}_size"]):
        b = b.rename_columns(["id", "dedup_cluster", "dedup_cluster_size"])
        size = pc.fill_null(b.column(2), 1)
        for row in pc.value_counts(size).to_pylist():
            sizes[row["values"]] += row["counts"]
        big = b.filter(pc.greater(size, 1))
        if big.num_rows and examples:
            top = _largest(top + big.to_pylist(), examples)
    return sizes, top


def histogram(sizes: Counter) -> list[tuple[str, int, int]]:
    """(bin label, clusters, documents in them) from kept documents per cluster size (one kept per cluster)."""
    rows = []
    for lo, hi in BINS:
        inside = {s: n for s, n in sizes.items() if s >= lo and (hi is None or s <= hi)}
        label = f"{lo}" if lo == hi else (f"{lo}-{hi}" if hi else f">{lo - 1}")
        rows.append((label, sum(inside.values()), sum(s * n for s, n in inside.items())))
    return rows


def _texts(paths: list[str], wanted: set[str]) -> dict[str, str]:
    """Texts of the documents with these ids, reading a batch of `id` and `text` at a time."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out: dict[str, str] = {}
    keys = pa.array(sorted(wanted), pa.string())
    for b in _batches(paths, ["id", "text"]):
        hit = b.filter(pc.is_in(b.column(0), value_set=keys))
        out.update(zip(hit.column(0).to_pylist(), hit.column(1).to_pylist(), strict=True))
    return out


def dropped_copies(paths: list[str], clusters: list, copies: int, column: str = "dedup_cluster",
                   step: str = "minhash") -> dict:
    """Per cluster, its `copies` members dropped by `step` with the smallest ids, with their texts."""
    import pyarrow as pa
    import pyarrow.compute as pc

    members: dict = {c: [] for c in clusters}
    for b in _batches(paths, ["id", column, "drop_reason"]):
        b = b.rename_columns(["id", "dedup_cluster", "drop_reason"])
        keys = pa.array(clusters, b.schema.field("dedup_cluster").type)
        hit = b.filter(pc.and_(pc.is_in(b.column(1), value_set=keys), pc.starts_with(b.column(2), f"{step}:")))
        for row in hit.to_pylist():
            c = row["dedup_cluster"]
            members[c] = sorted(members[c] + [row], key=lambda r: r["id"])[:copies]
    texts = _texts(paths, {r["id"] for rows in members.values() for r in rows})
    return {c: [{**r, "text": texts[r["id"]]} for r in rows] for c, rows in members.items()}


def side_by_side(texts: list[str], titles: list[str], width: int, lines: int) -> str:
    cols = []
    for title, text in zip(titles, texts, strict=True):
        wrapped = textwrap.wrap(" ".join(for_terminal(text).split()), width)[:lines]
        cols.append([for_terminal(title, lines=False)[:width].ljust(width), "-" * width, *(w.ljust(width) for w in wrapped)])
    height = max(len(c) for c in cols)
    for c in cols:
        c.extend([" " * width] * (height - len(c)))
    return "\n".join(" | ".join(parts) for parts in zip(*cols, strict=True))


def substring_spans(output: str, n: int, width: int) -> bool:
    """Print the `n` regions dedup.Substrings struck most often (its `top` phase's file); False when the run has none."""
    from curate.dedup.substrings import top_spans

    top = top_spans(output)
    if top is None or not top.height:
        return False
    print(f"substrings: the {min(n, top.height)} most repeated struck regions (of {top.height} kept for the report)")
    print(f"{'copies':>8}{'bytes':>8}  text")
    for row in top.head(n).iter_rows(named=True):
        text = " ".join(for_terminal(row["text"]).split())
        print(f"{row['count']:>8,}{row['bytes']:>8,}  {text[:width * 2]}")
    print()
    return True


def main(args) -> int:
    from curate.io.writers import parquet_shards

    data = parquet_shards(fs.join(args.output, "data"), "curate dedup-report") if fs.isdir(fs.join(args.output, "data")) else []
    if not data:
        raise UsageError(f"no shards under {fs.join(args.output, 'data')}")
    spans = substring_spans(args.output, args.spans, args.width)
    names = fs.parquet_file(data[0]).schema_arrow.names
    shown = [(col, step, what) for col, step, what in GROUPINGS if col in names]
    if not shown:
        if spans:
            return 0
        raise UsageError(f"{args.output} has no dedup_cluster or semantic_cluster column: was it made with "
                         "dedup.MinHash, dedup.Semantic or dedup.Substrings?")
    for column, step, what in shown:
        clusters(args, data, column, step, what)
    return 0


# the cluster columns a run may hold: (column, the step that drops by it, what it removes)
GROUPINGS = [("dedup_cluster", "minhash", "near-duplicates"), ("semantic_cluster", "semantic", "semantic duplicates")]


def clusters(args, data: list[str], column: str, step: str, what: str) -> None:
    """The histogram of one step's groups and its largest ones side by side."""
    sizes, top = scan_kept(data, args.examples, column)
    print(f"{step}: kept documents: {sum(sizes.values()):,}   in clusters of 2+: "
          f"{sum(n for s, n in sizes.items() if s > 1):,}   {what} removed: {sum((s - 1) * n for s, n in sizes.items()):,}")
    print(f"\n{'cluster size':>14}{'clusters':>12}{'documents':>12}")
    for label, n, docs in histogram(sizes):
        print(f"{label:>14}{n:>12,}{docs:>12,}")

    rejected = fs.glob(fs.join(args.output, "rejected", "*.parquet"))
    copies = dropped_copies(rejected, [r["dedup_cluster"] for r in top], args.copies, column, step) if top else {}
    if top and not any(copies.values()):
        print("\n(run with --rejected to see the dropped copies beside each kept document)")
    kept_text = _texts(data, {r["id"] for r in top}) if top else {}
    for row in top:
        members = copies[row["dedup_cluster"]]
        print(f"\ncluster {for_terminal(row['dedup_cluster'], lines=False)} ({row['dedup_cluster_size']} documents)")
        titles = [f"kept {row['id']}"] + [f"dropped {m['id']}" for m in members]
        print(side_by_side([kept_text[row["id"]]] + [m["text"] for m in members], titles, args.width, args.lines))
    print()
