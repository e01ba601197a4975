"""Exact deduplication: documents whose normalised text (or URL) hashes alike form a group; one is kept.

Phases, each one task per item through the executor:
1. `hash` (per shard): a 128-bit xxh3 key of the match form per document, written with the id,
   length and quality score, sorted by hash partition (row groups per partition);
2. `group` (per partition): read only that partition's rows (pushed down), group by key with
   polars, choose the keeper of each group;
3. `filter` (per shard): drop the others by id.
A 128-bit key makes an accidental collision negligible even at 10^12 documents.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import polars as pl
import pyarrow as pa
import xxhash

from curate.core.stats import StepStats
from curate.core.step import GlobalContext, GlobalStep
from curate.core.validate import check, config_error
from curate.dedup import common
from curate.dedup.text import match_form_batch
from curate.io import fs
from curate.io.batching import iter_batches

KEYS = ("text", "url", "text+url")


@dataclass
class HashTask:
    shard: int
    path: str
    out: str
    key: str
    parts: int


def hash_shard(task: HashTask) -> dict:
    """Phase 1: the key of every document of one shard. A document with nothing to key (no word, no URL) is keyed
    by its id and raw text, so it is grouped with its own copies only."""
    cols = ["id", "text", "url", "quality_score"]
    pf = fs.parquet_file(task.path)
    present = [c for c in cols if c in pf.schema_arrow.names]
    ids, hi, lo, length, quality, texthash, where = [], [], [], [], [], [], []
    rows = unkeyed = 0
    for batch in iter_batches(pf, columns=present):
        rec = batch.to_pydict()
        texts = rec["text"]
        urls = rec.get("url") or [None] * len(texts)
        parts = []
        if "text" in task.key:
            data, off = match_form_batch(texts)
            parts.append([data[off[i]:off[i + 1]].tobytes() for i in range(len(texts))])
        if "url" in task.key:
            parts.append([u.strip().lower().encode() if u else None for u in urls])
        th = common.text_hashes(texts)
        for i in range(len(texts)):
            fields = [p[i] for p in parts]
            if any(f is None for f in fields) or not any(fields):
                # no URL, or no word at all: nothing to compare by content, kept, but copies of one document
                # (its id and its raw text) still form a group, so only one of them is kept
                unkeyed += 1
                digest = xxhash.xxh3_128_intdigest(b"\xffcopy\x00" + rec["id"][i].encode() + b"\x00" + texts[i].encode())
            else:
                digest = xxhash.xxh3_128_intdigest(b"\x00".join(fields))
            ids.append(rec["id"][i])
            hi.append(digest >> 64)
            lo.append(digest & 0xFFFFFFFFFFFFFFFF)
            length.append(len(texts[i]))
            quality.append(rec["quality_score"][i] if "quality_score" in rec else None)
            texthash.append(th[i])
            where.append(rows + i)
        rows += len(texts)
    hi_arr = np.array(hi, dtype=np.uint64)
    table = pa.table({
        "part": common.partition_of(hi_arr, task.parts),
        "hi": hi_arr,
        "lo": np.array(lo, dtype=np.uint64),
        "id": pa.array(ids, pa.string()),
        "length": pa.array(length, pa.int64()),
        "quality": pa.array(quality, pa.float32()),
        "texthash": np.array(texthash, dtype=np.uint64),
        "shard": pa.array(np.full(len(ids), task.shard, dtype=np.int32)),
        "row": np.array(where, dtype=np.uint32),
    }).sort_by("part")
    common.write_table(table, task.out, segments=["part"])
    return {"rows": rows, "unkeyed": unkeyed}


@dataclass
class GroupTask:
    part: int
    keys: list[str]
    out: str
    keep: str


def group_part(task: GroupTask) -> dict:
    """Phase 2: documents sharing a key, exactly one kept by policy; writes decisions sorted by (shard, row)."""
    table = common.read_where(task.keys, {"part": task.part},
                              ["hi", "lo", "id", "length", "quality", "texthash", "shard", "row"])
    df = pl.from_arrow(table) if table.num_rows else pl.DataFrame()
    if df.height:
        df = df.with_columns(pl.len().over(["hi", "lo"]).alias("n")).filter(pl.col("n") > 1)
    ranked = None
    if df.height:  # grouped by the 128-bit key itself (a 64-bit hash of it could merge two keys)
        ranked = common.choose_keepers(df, ["hi", "lo"], task.keep)
    out = common.decisions(ranked)
    common.write_table(out.to_arrow(), task.out)
    return {"duplicates": int((~out["keep"]).sum()), "groups": int(out["keep"].sum()),
            "same_id_copies": int(ranked["copies"].sum()) if ranked is not None else 0}


class Exact(GlobalStep):
    """Drop documents whose normalised text (or URL, or both) equals another's, keeping one per group.

    `key`: "text" (default), "url" or "text+url". `keep`: "smallest_id" (default), "longest" (most
    characters) or "quality" (highest quality_score). Dropped documents get `exact:duplicate`.
    """

    name: ClassVar[str] = "exact"
    repeated_ids: ClassVar[str] = "keep_one"  # rows by (shard, row): of copies sharing an id, one is kept

    def __init__(self, key: str = "text", keep: str = "smallest_id", partitions: int | None = None):
        self.key = check(self, "key", key, choices=KEYS)
        self.keep = common.check_keep(self, keep)
        check(self, "partitions", partitions, int, lo=1, optional=True)
        if partitions and partitions & (partitions - 1):
            raise config_error(self, f"partitions must be a power of two or None, got {partitions}")
        self.partitions = partitions

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        common.check_work_dir(ctx.work_dir, ctx.inputs, {"step": repr(self), "rows": "keyed"})
        parts = common.partitions_for(ctx.inputs, self.partitions)
        seconds: dict[str, float] = {}
        names = [common.shard_name(i) for i in range(len(ctx.inputs))]
        keys = [fs.join(ctx.work_dir, "keys", f"{n}.parquet") for n in names]

        t = time.perf_counter()
        hashed = common.run_phase(
            ctx, "hash", hash_shard,
            [HashTask(i, p, keys[i], self.key, parts) for i, p in enumerate(ctx.inputs)], names)
        seconds["hash"] = time.perf_counter() - t

        t = time.perf_counter()
        decisions = [fs.join(ctx.work_dir, "groups", f"{p:04d}.parquet") for p in range(parts)]
        grouped = common.run_phase(
            ctx, "group", group_part,
            [GroupTask(p, keys, decisions[p], self.keep) for p in range(parts)], [f"{p:04d}" for p in range(parts)])
        seconds["group"] = time.perf_counter() - t

        t = time.perf_counter()
        filtered = common.run_filter(ctx, self.name, decisions, [h["rows"] for h in hashed], cluster_columns=False)
        seconds["filter"] = time.perf_counter() - t
        extra = {
            "groups": sum(g["groups"] for g in grouped),
            "unkeyed": sum(h["unkeyed"] for h in hashed),
            "same_id_copies": sum(g.get("same_id_copies", 0) for g in grouped),
            "partitions": parts,
            "seconds": {k: round(v, 3) for k, v in seconds.items()},
        }
        return common.step_stats(self.name, filtered, extra)
