"""A finished run by input: how many of each input file's (or folder's) documents were read and kept.

From what the run already writes, for every consumer (`curate stats --by-input`, the report): each first-stage task's
stats file names its input and its output shards, and every later stage (global steps included) keeps the first
stage's shard file names (a streaming stage after a global one adds a suffix `-NNN`), so a final shard's rows
belong to that task's input.
"""

from __future__ import annotations

import json
import os
from collections import Counter

from curate.io import fs


def by_input(out: str, folders: bool = False) -> dict:
    """Per input (file, or its folder): records read, documents, kept after the first stage, kept at the end; and
    the kept documents per `source`. From what the run already wrote: each first-stage task's stats
    (`stats/stage0-*.json`: its input path, its counts, its output shards) and the final shards, which keep the
    first stage's file names through every global step, so a final shard's rows belong to that task's input.
    Row counts come from the Parquet footers; only the `source` column is read."""
    import pyarrow.compute as pc

    rows: dict[str, Counter] = {}
    owner: dict[str, str] = {}  # a first-stage shard's name (no extension) -> its task's input
    sources: Counter = Counter()
    final = {fs.basename(p): p for p in fs.glob(fs.join(out, "data", "*.parquet"))}
    for path in sorted(fs.glob(fs.join(out, "stats", "stage0-*.json"))):
        with fs.open(path, "r", encoding="utf-8") as f:
            task = json.load(f)
        key = (os.path.dirname(task["path"]) or ".") if folders else task["path"]
        steps = task["steps"]
        row = rows.setdefault(key, Counter())
        row["records"] += steps[0]["docs_in"]
        row["read"] += steps[0]["docs_out"]
        row["first_stage"] += steps[-1]["docs_out"]
        for shard in task["outputs"]:
            owner[_stem(shard)] = key
    for name, p in final.items():  # a streaming stage after a global one adds `-NNN` to the name it was given
        stem = _stem(name)
        while stem not in owner and "-" in stem:
            stem = stem.rsplit("-", 1)[0]
        if stem in owner:
            rows[owner[stem]]["kept"] += fs.parquet_file(p).metadata.num_rows
    for p in final.values():
        col = fs.parquet_file(p).read(columns=["source"])["source"]
        sources.update({v.as_py(): n.as_py() for v, n in zip(*pc.value_counts(col).flatten(), strict=True)})
    return {"inputs": rows, "sources": sources}


def _stem(path: str) -> str:
    return fs.basename(path).split(".", 1)[0]

