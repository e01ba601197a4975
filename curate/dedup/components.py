"""Connected components of an edge list that does not fit one process: alternating large-star and small-star.

The algorithm is Kiveris et al., "Connected Components in MapReduce and Beyond" (SoCC 2014). Each
round is two phases of `parts` tasks; a task holds only the edges of its partition of vertices
(vertex hash), and writes what the next phase needs to one file, sorted by the receiving partition
with row groups per partition, so the next task reads only its own rows (`common.read_where`).

* large-star, per vertex u with neighbours N(u): m = min(N(u) + u); every neighbour v > u is joined to m;
* small-star, per vertex u with its smaller neighbours N: m = min(N + u); every x in N + u, x != m, is joined to m.

Both keep every component and shrink its depth; they converge to stars centred on each component's
smallest vertex (O(log^2 n) rounds, a handful on the shallow graphs near-duplicates form). A large-star
task also checks whether its input is already that: every vertex either has only larger neighbours
(a centre) or exactly one neighbour, smaller (a leaf). When no vertex of any partition fails the
check, the labels that round wrote, (vertex, m), are the components: m is the smallest vertex of the
vertex's component. A leaf's one neighbour is a centre, since a leaf has no larger neighbour.

Vertices are uint64 document handles (shard << 32 | row); labels are written sorted by shard.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from curate.core.step import GlobalContext
from curate.dedup import common
from curate.io import fs

MAX_ROUNDS = 64  # the algorithm's bound is O(log^2 n); more rounds than this means a bug, not a big graph
EDGE_SCHEMA = pa.schema([("cpart", pa.uint16()), ("u", pa.uint64()), ("v", pa.uint64())])

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def vertex_part(v: np.ndarray, parts: int) -> np.ndarray:
    """The partition of each vertex: the top bits of a splitmix64 hash (handles of one shard are consecutive)."""
    with np.errstate(over="ignore"):
        h = v.astype(np.uint64)
        h = (h ^ (h >> np.uint64(30))) * _M1
        h = (h ^ (h >> np.uint64(27))) * _M2
        h ^= h >> np.uint64(31)
    return common.partition_of(h, parts)


def edge_table(u: np.ndarray, v: np.ndarray, parts: int, both: bool) -> pa.Table:
    """Edges keyed by `u` (and, with `both`, also by `v`), sorted by u's partition, without repeats."""
    if both:
        u, v = np.concatenate([u, v]), np.concatenate([v, u])
    df = pl.DataFrame({"cpart": vertex_part(u, parts), "u": u, "v": v}, schema={"cpart": pl.UInt16, "u": pl.UInt64,
                                                                                 "v": pl.UInt64})
    return df.unique().sort(["cpart", "u", "v"]).to_arrow().cast(EDGE_SCHEMA)


def write_edges(table: pa.Table, path: str) -> None:
    common.write_table(table, path, segments=["cpart"])


@dataclass
class StarTask:
    part: int
    parts: int
    inputs: list[str]  # edge files (cpart, u, v); this task reads the rows with cpart == part
    out: str
    labels: str | None  # large-star only: (shard, vertex, label) of every vertex of the partition


def _read(task: StarTask) -> pl.DataFrame:
    table = common.read_where(task.inputs, {"cpart": task.part}, ["u", "v"])
    if not table.num_rows:
        return pl.DataFrame(schema={"u": pl.UInt64, "v": pl.UInt64})
    return pl.from_arrow(table).unique()


def large_star(task: StarTask) -> dict:
    """One partition's large-star: input edges in both directions, keyed by u; output keyed by the larger end."""
    df = _read(task)
    per = df.group_by("u").agg(pl.col("v").min().alias("vmin"), pl.col("v").n_unique().alias("deg"))
    per = per.with_columns(pl.min_horizontal("u", "vmin").alias("m"))
    centre = pl.col("vmin") > pl.col("u")
    leaf = (pl.col("deg") == 1) & (pl.col("vmin") < pl.col("u"))
    not_star = per.filter(~(centre | leaf)).height
    joined = df.join(per.select("u", "m"), on="u").filter(pl.col("v") > pl.col("u"))
    write_edges(edge_table(joined["v"].to_numpy(), joined["m"].to_numpy(), task.parts, both=False), task.out)
    u = per["u"].to_numpy()
    labels = pa.table({"shard": (u >> np.uint64(32)).astype(np.int32), "vertex": u, "label": per["m"].to_numpy()})
    common.write_table(labels.sort_by([("shard", "ascending"), ("vertex", "ascending")]), task.labels)
    return {"edges": df.height, "vertices": per.height, "not_star": not_star}


def small_star(task: StarTask) -> dict:
    """One partition's small-star: input edges (u, v) with v < u, keyed by u; output in both directions."""
    df = _read(task)
    per = df.group_by("u").agg(pl.col("v").min().alias("m"))
    joined = df.join(per, on="u").filter(pl.col("v") != pl.col("m"))
    a = np.concatenate([joined["v"].to_numpy(), per["u"].to_numpy()])
    b = np.concatenate([joined["m"].to_numpy(), per["m"].to_numpy()])
    write_edges(edge_table(a, b, task.parts, both=True), task.out)
    return {"edges": df.height}


def components(ctx: GlobalContext, edges: list[str], parts: int, work: str) -> tuple[list[str], dict]:
    """Label files of the components of `edges` (both directions, keyed by `cpart`), and figures."""
    names = [f"{p:04d}" for p in range(parts)]
    for r in range(MAX_ROUNDS):
        large_out = [fs.join(work, "components", f"{r:02d}-large-{n}.parquet") for n in names]
        labels = [fs.join(work, "components", f"{r:02d}-labels-{n}.parquet") for n in names]
        done = common.run_phase(ctx, f"components-{r:02d}-large", large_star, [
            StarTask(p, parts, edges, large_out[p], labels[p]) for p in range(parts)], names)
        if sum(d["not_star"] for d in done) == 0:
            return labels, {"rounds": r + 1, "vertices": sum(d["vertices"] for d in done)}
        edges = [fs.join(work, "components", f"{r:02d}-small-{n}.parquet") for n in names]
        common.run_phase(ctx, f"components-{r:02d}-small", small_star, [
            StarTask(p, parts, large_out, edges[p], None) for p in range(parts)], names)
    raise RuntimeError(f"connected components did not converge in {MAX_ROUNDS} rounds")
