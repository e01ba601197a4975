"""Repeated document ids before a global step: found in two phases on the executor, refused with one line.

Ids repeat when one shard is given twice (a glob and a copy of it, or two spellings of one folder), when
the outputs of two runs over one crawl are unioned, or when a step splits a document and gives the parts
its own id. A global step that tells documents apart by id would take the copies for one document: keep
or drop both. Every global step passes through `Run._global`, which calls `check` before it runs:

* a step whose `repeated_ids` is "keep_one" (the dedup steps) tells rows apart by (shard, row) itself,
  and copies sharing an id are duplicates to it, so exactly one of each group is kept: nothing is checked;
* any other step ("refuse", the default of `GlobalStep`) gets its input's ids checked first:
  `ids` (per shard) writes a 64-bit hash partition of every id with its (shard, row); `repeats` (per
  partition) groups the ids, exactly (the strings, not the hashes). A repeat stops the run with a
  `UsageError` naming the smallest repeated id and the two inputs holding its first two copies.

Memory per task is one shard's ids or one partition's; the partitions grow with the corpus as Exact's do.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from curate.core.errors import UsageError
from curate.core.step import GlobalContext, GlobalStep
from curate.dedup import common
from curate.io import fs

POLICIES = ("refuse", "keep_one")
# stage 0 writes part-<input index>-NNN.parquet, or part-<input index>-r<range>-NNN.parquet for a range of a split file
_STAGE0 = re.compile(r"part-(\d{5})(?:-r\d{4,})?(?:-\d{3,})+\.parquet")


@dataclass
class IdTask:
    shard: int
    path: str
    out: str
    parts: int


def id_shard(task: IdTask) -> dict:
    """Phase 1 for one shard: (part, id, shard, row) of every row, sorted by hash partition of the id."""
    pf = fs.parquet_file(task.path)
    ids = pa.concat_arrays([b.column("id") for b in pf.iter_batches(batch_size=65_536, columns=["id"])]
                           or [pa.array([], pa.string())])
    hashes = common.text_hashes(ids.to_pylist())
    table = pa.table({
        "part": common.partition_of(hashes, task.parts),
        "id": ids.cast(pa.string()),
        "shard": np.full(len(ids), task.shard, dtype=np.int32),
        "row": np.arange(len(ids), dtype=np.uint32),
    }).sort_by("part")
    common.write_table(table, task.out, segments=["part"])
    return {"rows": len(ids)}


@dataclass
class RepeatTask:
    part: int
    files: list[str]


def repeat_part(task: RepeatTask) -> dict:
    """Phase 2 for one partition: how many ids repeat, and the smallest one with its first two places."""
    table = common.read_where(task.files, {"part": task.part}, ["id", "shard", "row"])
    if not table.num_rows:
        return {"repeated": 0, "copies": 0}
    rep = pl.from_arrow(table).filter(pl.len().over("id") > 1)
    if not rep.height:
        return {"repeated": 0, "copies": 0}
    rep = rep.sort(["id", "shard", "row"])
    first = rep.head(2).to_dicts()
    return {"repeated": rep["id"].n_unique(), "copies": rep.height, "id": first[0]["id"],
            "at": [[r["shard"], r["row"]] for r in first]}


def input_of(shard: str, files: list[str]) -> str:
    """The run's input a shard came from (stage 0 names its shards after the input's index), else the shard."""
    m = _STAGE0.match(fs.basename(shard))
    if m and int(m.group(1)) < len(files):
        return files[int(m.group(1))]
    return shard


def check(step: GlobalStep, ctx: GlobalContext, files: list[str]) -> dict:
    """Refuse repeated ids in the input of a step that needs them unique; the figures of the check."""
    policy = getattr(step, "repeated_ids", "refuse")
    if policy not in POLICIES:
        raise UsageError(f"{type(step).__name__}.repeated_ids must be one of {POLICIES}, got {policy!r}")
    if policy == "keep_one" or not ctx.inputs:
        return {}
    work = fs.join(ctx.work_dir, "_ids")
    sub = dataclasses.replace(ctx, work_dir=work)
    parts = common.partitions_for(ctx.inputs, None)
    names = [common.shard_name(i) for i in range(len(ctx.inputs))]
    keyed = [fs.join(work, "ids", f"{n}.parquet") for n in names]
    common.run_phase(sub, "ids", id_shard, [IdTask(i, p, keyed[i], parts) for i, p in enumerate(ctx.inputs)], names)
    found = [r for r in common.run_phase(sub, "repeats", repeat_part, [RepeatTask(p, keyed) for p in range(parts)],
                                         [f"{p:04d}" for p in range(parts)]) if r["repeated"]]
    if not found:
        return {"repeated_ids": 0}
    first = min(found, key=lambda r: r["id"])
    repeated = sum(r["repeated"] for r in found)
    (s1, _), (s2, _) = first["at"]
    a, b = input_of(ctx.inputs[s1], files), input_of(ctx.inputs[s2], files)
    where = f"twice in {a}" if a == b else f"in both {a} and {b}"
    more = f" ({repeated - 1} more ids repeat)" if repeated > 1 else ""
    raise UsageError(
        f"step {step.name!r} tells documents apart by id, and id {first['id']!r} is {where}{more}: give each input "
        "once and the parts of a split their own ids (Document.child), or deduplicate first (dedup.Exact keeps one "
        "of each set of copies)")
