"""The questions `curate view` asks of a run folder, as Polars queries pushed down to its Parquet shards.

A run folder has `data/` (kept documents) and, with `--rejected`, `rejected/` (dropped ones, with `drop_reason`).
Both are scanned lazily on every request: the shards are listed anew (a run being written shows what it has
published so far, never a half-written file: shards appear whole, `curate.io.fs`), filters, sorting and paging
are handed to Polars' streaming engine, and only one page of rows (a snippet of text each) or one document comes
back into Python. Memory is bounded by the page and Polars' batches, not by the run.
"""

from __future__ import annotations

import functools
import itertools
import json
import operator
import os
import re
from dataclasses import dataclass, field
from functools import cached_property

import polars as pl

from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.io import fs
from curate.io.writers import parquet_shards
from curate.report.build import load_stats
from curate.view.index import ShardIndex, narrow_schema, text_columns

PAGE = 50  # rows per page of Documents and Compare
SNIPPET = 200  # characters of text per row of a list
LENGTH_EDGES = [0, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000]  # Run page's length bars
HIDDEN = {"text", "metadata", "html", "_shard", "_hash"}  # shown on the Document page, never as list columns or filters
_DOMAIN = r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^/:?#]+)"


class ViewError(Exception):
    """A problem to show as one message on the page (a damaged shard, an unknown run), never a stack trace."""


@dataclass
class Filters:
    """What the Documents page selects: each field empty means "any". Built from the query string."""

    status: str = ""  # "kept", "dropped" or "" (both)
    step: str = ""  # the step that dropped it (drop_reason's prefix)
    reason: str = ""  # a whole drop reason, step:rule
    lang: str = ""
    source: str = ""
    url: str = ""  # substring of the URL, case-insensitive (a domain, a path)
    domain: str = ""  # exact host of the URL, case-insensitive
    q: str = ""  # substring of the text, case-insensitive
    ranges: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)  # column -> [lo, hi)
    equals: dict[str, str] = field(default_factory=dict)  # column -> value (`eq:dedup_cluster=…`: a cluster)
    sort: str = ""
    desc: bool = False
    page: int = 0
    exact: bool = False  # a text search counts every match (reads every text), not only until the page is full

    @classmethod
    def parse(cls, params, numeric: list[str]) -> Filters:
        """From the query string; a number that does not parse is a ViewError (one line), not a 500."""
        f = cls(**{k: params.get(k, "").strip() for k in ("status", "step", "reason", "lang", "source", "url",
                                                            "domain", "q", "sort")})
        f.desc = params.get("desc", "") in ("1", "true", "on")
        f.exact = params.get("exact", "") in ("1", "true", "on")
        f.page = max(number(params.get("page"), "page", int) or 0, 0)
        for col in ["length", *numeric]:
            lo, hi = (number(params.get(f"{b}:{col}"), f"{b}:{col}", float) for b in ("min", "max"))
            if lo is not None or hi is not None:
                f.ranges[col] = (lo, hi)
        for key, value in params.items():
            if key.startswith("eq:") and value != "":
                f.equals[key[3:]] = value
        return f

    def expr(self, columns: set[str]) -> pl.Expr | None:
        """One predicate (None: no filter); Polars pushes the column ones down into the Parquet scan."""
        conds = []
        for name, col in (("status", "status"), ("step", "step"), ("reason", "drop_reason"), ("lang", "lang"),
                          ("source", "source")):
            if getattr(self, name) and col in columns:
                conds.append(pl.col(col) == getattr(self, name))
            elif getattr(self, name):
                conds.append(pl.lit(False))  # asked for a value of a column the run does not have
        if self.url:
            conds.append(pl.col("url").str.to_lowercase().str.contains(self.url.lower(), literal=True))
        if self.domain:
            conds.append(pl.col("url").str.extract(_DOMAIN, 1).str.to_lowercase() == self.domain.lower())
        if self.q:
            conds.append(pl.col("text").str.contains("(?i)" + re.escape(self.q)))
        for col, value in self.equals.items():  # compared as text, so any column can be matched from a link
            known = col in columns and col not in HIDDEN
            conds.append(pl.col(col).cast(pl.String) == value if known else pl.lit(False))
        for col, (lo, hi) in self.ranges.items():
            if lo is not None:
                conds.append(pl.col(col) >= lo)
            if hi is not None:
                conds.append(pl.col(col) < hi)
        return functools.reduce(operator.and_, conds) if conds else None

    def query_string(self, **change) -> list[tuple[str, str]]:
        """The filters as query parameters (for links to the next page, a sorted column), with `change` applied."""
        d = {k: getattr(self, k) for k in ("status", "step", "reason", "lang", "source", "url", "domain", "q",
                                           "sort", "desc", "page", "exact")}
        d.update(change)
        out = [(k, "1" if v is True else str(v)) for k, v in d.items() if v not in ("", False, 0, None)]
        out += [(f"eq:{col}", v) for col, v in self.equals.items()]
        for col, (lo, hi) in self.ranges.items():
            out += [(f"{b}:{col}", _fmt(v)) for b, v in (("min", lo), ("max", hi)) if v is not None]
        return out


def number(value, name: str, kind):
    """A query-string number, or None when empty; not a number is a ViewError (one line on the page)."""
    if value is None or str(value).strip() == "":
        return None
    try:
        return kind(value)
    except ValueError:
        raise ViewError(f"{name}: {value!r} is not a number") from None


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


@dataclass
class Page:
    rows: list[dict]
    total: int
    columns: list[str]
    exact: bool = True  # False: a text search stopped once the page was full; `total` counts the shards it read


class Run:
    """One run folder, addressed by its index in the command line: a request never names a path."""

    kind = "run"

    def __init__(self, path: str, name: str | None = None):
        self.path = path.rstrip("/") or path
        self.name = name or fs.basename(self.path)
        if not fs.isdir(fs.join(self.path, "data")) and not fs.exists(fs.join(self.path, "stats.json")):
            raise UsageError(f"{path} is not a run folder (no data/ and no stats.json)")
        self._schemas: dict[str, dict[str, pl.DataType]] = {}  # shard path -> its columns (shards never change)
        self._cache: dict[tuple, object] = {}
        self.index: ShardIndex | None = None  # set by `curate view` (its --cache): narrow queries read it

    def cached(self, key: str, compute):
        """`compute()` once per set of published shards: the Run page's figures read every text of the run, so
        they are kept until a shard appears or goes (a run being written), not recomputed on every visit."""
        stamp = (key, tuple(self.shards("data")), tuple(self.shards("rejected")))
        if stamp not in self._cache:
            self._cache = {k: v for k, v in self._cache.items() if k[0] != key}
            self._cache[stamp] = compute()
        return self._cache[stamp]

    def shards(self, part: str) -> list[str]:
        folder = fs.join(self.path, part)
        return parquet_shards(folder, "curate view") if fs.isdir(folder) else []

    @property
    def has_rejected(self) -> bool:
        return bool(self.shards("rejected"))

    def stats(self) -> list[StepStats]:
        """stats.json's steps (read as the report reads them), or none for a run still being written (its tasks'
        stats/ are not merged yet)."""
        return load_stats(self.path)[1] if fs.exists(fs.join(self.path, "stats.json")) else []

    def recorded_steps(self) -> list[str] | None:
        """The pipeline's steps as manifest.json describes them (`Main(threshold=0.5, ...)`), or None where there
        is no readable manifest (a run being written, a damaged file): the Document page re-runs the extractor
        with them (`curate.view.blocks`)."""
        try:
            steps = json.loads(fs.read_bytes(fs.join(self.path, "manifest.json")))["pipeline"]["steps"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return [s for s in steps if isinstance(s, str)] if isinstance(steps, list) else None

    def _schema(self, shard: str) -> dict[str, pl.DataType]:
        if shard not in self._schemas:
            with guarded(shard):
                arrow = fs.parquet_file(shard).schema_arrow
                self._schemas[shard] = dict(pl.DataFrame(arrow.empty_table()).schema)
        return self._schemas[shard]

    def _union(self, files: list[str]) -> dict[str, pl.DataType]:
        schema: dict[str, pl.DataType] = {}
        for f in files:
            for k, v in self._schema(f).items():
                schema.setdefault(k, v)
        return schema

    def _scan(self, part: str, only: set[str] | None, narrow: bool = False) -> pl.LazyFrame | None:
        """The shards of `data/` or `rejected/` (those in `only`, when given) as one lazy frame over the union of
        their columns (a shard without a column reads it as null), with each row's shard in `_shard` (local
        shards only; null on an object store, read through a pyarrow dataset). `narrow`: without the WIDE
        columns, with `length`; read from a shard's index where it has a current one (`curate.view.index`)."""
        if only is not None:  # `_shard` of an index is absolute: the same shard however the run was named
            only = {_absolute(f) for f in only}
        files = [f for f in self.shards(part) if only is None or _absolute(f) in only]
        if not files:
            return None
        schema = self._union(files)
        if any(fs.is_url(f) for f in files):
            lf = pl.scan_pyarrow_dataset(fs.dataset(files, format="parquet")).with_columns(
                _shard=pl.lit(None, pl.String))
            return _narrowed(lf, schema) if narrow else lf
        if not narrow:
            return _raw(files, schema)
        small = narrow_schema(schema)
        indexed = [self.index.current(f) if self.index else None for f in files]
        groups = []  # consecutive shards read the same way, one scan each, in shard order
        for has, run in itertools.groupby(zip(files, indexed, strict=True), key=lambda p: p[1] is not None):
            run = list(run)
            groups.append(pl.scan_parquet([i for _, i in run], schema=small, missing_columns="insert",
                                          extra_columns="ignore") if has else
                          _narrowed(_raw([f for f, _ in run], schema), schema))
        return groups[0] if len(groups) == 1 else pl.concat(groups, how="vertical")

    def frame(self, status: str = "", only: set[str] | None = None, narrow: bool = False) -> pl.LazyFrame:
        """Kept and dropped documents (or those of one `status`) as one frame with every column of the run (those
        of rejected shards only, `drop_reason`, `drop_measured`..., null for kept ones) and the columns every page
        filters on: `status`, `step` (the drop's step), `length` (characters of text). `narrow`: all but the
        WIDE columns (text, metadata, html), read from the shards' indexes where they are current."""
        every = self._union(self.shards("data") + self.shards("rejected"))
        every = narrow_schema(every) if narrow else every
        parts = []
        for part, label in (("data", "kept"), ("rejected", "dropped")):
            if status and status != label:
                continue
            lf = self._scan(part, only, narrow)
            if lf is None:
                continue
            have = lf.collect_schema()
            lf = lf.with_columns(pl.lit(label).alias("status"), *(pl.lit(None, t).alias(c) for c, t in
                                                                 {"drop_reason": pl.String, **every}.items()
                                                                 if c not in have))
            parts.append(lf)
        if not parts:  # no shard (yet): the columns every page asks for, no rows
            parts = [pl.LazyFrame(schema={**every, **{c: pl.String for c in ("id", "status", "drop_reason",
                                                                              "_shard")},
                                          **({"length": pl.UInt32} if narrow else {"text": pl.String})})]
        lf = pl.concat(parts, how="diagonal_relaxed").with_columns(
            step=pl.col("drop_reason").str.split(":").list.first())
        return lf if narrow else lf.with_columns(length=pl.col("text").str.len_chars())

    @cached_property
    def _columns(self) -> dict[str, pl.DataType]:
        return dict(self.frame().collect_schema())

    def columns(self) -> dict[str, pl.DataType]:
        """Columns of the run (read from the shards' footers once: a server over a growing run sees the schema
        of the shards it first saw; steps add the same columns to every shard)."""
        return self._columns

    def numeric(self) -> list[str]:
        """Signal columns a range can filter on: lang_score, quality_score, every numeric step column."""
        return [c for c, t in self.columns().items() if t.is_numeric() and c not in HIDDEN and c != "length"]


def _absolute(path: str) -> str:
    return path if fs.is_url(path) else os.path.abspath(path)


def _raw(files: list[str], schema: dict[str, pl.DataType]) -> pl.LazyFrame:
    return pl.scan_parquet(files, schema=schema, missing_columns="insert", extra_columns="ignore",
                           include_file_paths="_shard")


def _narrowed(lf: pl.LazyFrame, schema: dict[str, pl.DataType]) -> pl.LazyFrame:
    """A shard scan as its index would read: the narrow columns, the text's length and hash, the shard."""
    return lf.with_columns(**text_columns(schema)).select(list(narrow_schema(schema)))


def documents(run: Run, f: Filters) -> Page:
    """One page of the documents `f` selects, and how many it selects.

    In two steps, because text is most of a shard: the filters, sort and page over the narrow columns give the
    page's ids (from the shards' indexes: no text read, `length` included), then the text of those ids alone
    gives their snippets (row groups without one are not decoded). A text search must read text: unsorted, it
    reads shard after shard only until the page is full (`_first_matches`); sorted or `exact`, every shard."""
    cols = run.columns()
    base = [c for c in ("id", "status", "drop_reason", "url", "source", "lang") if c in cols]
    narrow, shown = [*base, *run.numeric()], [*base, "length", *run.numeric()]
    if f.sort and f.sort not in shown:
        raise ViewError(f"cannot sort by {f.sort!r}: one of {', '.join(sorted(shown))}")
    conds = f.expr(set(cols))
    with guarded(run.path):
        if f.q and not f.sort and not f.exact:
            rows, total, exact = _first_matches(run, f, conds, narrow)
        else:
            lf = run.frame(f.status, narrow=not f.q)
            lf = lf if conds is None else lf.filter(conds)
            page = lf.select(*narrow, "_shard", *(["length"] if f.sort == "length" else []))
            if f.sort:
                page = page.sort(f.sort, descending=f.desc, nulls_last=True, maintain_order=True)
            page = page.slice(f.page * PAGE, PAGE)
            # two collects, not collect_all: sharing the scan between the plans loses the page's slice pushdown
            rows, total = page.collect(engine="streaming"), lf.select(pl.len()).collect(engine="streaming").item()
            exact = True
        by_id = snippets(run, f.status, rows) if rows.height else {}
    out = [{**r, **by_id.get(r["id"], {})} for r in rows.iter_rows(named=True)]
    return Page(out, int(total), shown, exact)


def _first_matches(run: Run, f: Filters, conds: pl.Expr, narrow: list[str]) -> tuple[pl.DataFrame, int, bool]:
    """The page of an unsorted selection that reads text, scanning shards in order and stopping at the first
    shard that fills it: (rows, matches in the shards read, whether those were all of them). A common phrase
    fills the first page from the first shard; a rare one reads them all and its count is exact."""
    start, stop = f.page * PAGE, (f.page + 1) * PAGE
    shards = [s for part, label in (("data", "kept"), ("rejected", "dropped")) if f.status in ("", label)
              for s in run.shards(part)]
    seen, got = 0, []
    for n, shard in enumerate(shards):
        df = run.frame(f.status, only={shard}).filter(conds).select(*narrow, "_shard").collect(engine="streaming")
        if seen + df.height > start:
            got.append(df.slice(max(start - seen, 0), stop - max(start, seen)))
        seen += df.height
        if seen >= stop and n < len(shards) - 1:
            return pl.concat(got), seen, False
    empty = run.frame(f.status).select(*narrow, "_shard").clear().collect()
    return pl.concat([empty, *got], how="vertical_relaxed"), seen, True


def snippets(run: Run, status: str, rows: pl.DataFrame) -> dict[str, dict]:
    """id -> {length, snippet} of a page's rows, reading only the shards they came from (where the scan could
    say which: local shards)."""
    where = set(rows["_shard"].to_list())
    lf = run.frame(status, None if None in where else where).filter(pl.col("id").is_in(rows["id"].to_list()))
    texts = lf.select("id", "length", snippet=pl.col("text").str.slice(0, SNIPPET)).collect(engine="streaming")
    return {r["id"]: r for r in texts.iter_rows(named=True)}


def document(run: Run, doc_id: str) -> dict | None:
    """Every column of one document, found by id (row-group statistics skip most of a sorted run)."""
    with guarded(run.path):
        rows = run.frame().filter(pl.col("id") == doc_id).head(1).collect(engine="streaming")
    return rows.to_dicts()[0] if rows.height else None


def counts(run: Run, column: str, status: str = "kept") -> list[tuple[object, int]]:
    """Documents per value of a column, most first (the Run page's languages, sources)."""
    lf = run.frame(status, narrow=True)
    if column not in lf.collect_schema():
        return []
    with guarded(run.path):
        df = lf.group_by(column).agg(n=pl.len()).sort(["n", column], descending=[True, False]).collect(
            engine="streaming")
    return list(df.iter_rows())


def length_bars(run: Run, status: str = "kept") -> list[tuple[int, int | None, int]]:
    """(lo, hi, documents) per bucket of LENGTH_EDGES (hi None: the last, open bucket)."""
    bucket = sum((pl.col("length") >= e).cast(pl.Int32) for e in LENGTH_EDGES[1:])
    with guarded(run.path):
        df = run.frame(status, narrow=True).group_by(bucket.alias("b")).agg(n=pl.len()).collect(engine="streaming")
    got = dict(df.iter_rows())
    his = [*LENGTH_EDGES[1:], None]
    return [(lo, hi, got.get(i, 0)) for i, (lo, hi) in enumerate(zip(LENGTH_EDGES, his, strict=True))]


def score_bars(run: Run, column: str, bins: int = 10, status: str = "kept") -> list[tuple[float, float, int]]:
    """A score in [0, 1] (lang_score, quality_score) in `bins` equal bins: (lo, hi, documents)."""
    b = (pl.col(column) * bins).floor().clip(0, bins - 1).cast(pl.Int32)
    with guarded(run.path):
        df = (run.frame(status, narrow=True).filter(pl.col(column).is_not_null()).group_by(b.alias("b")).agg(n=pl.len())
              .collect(engine="streaming"))
    got = dict(df.iter_rows())
    return [(i / bins, (i + 1) / bins, got.get(i, 0)) for i in range(bins)]


class guarded:
    """Around a query: a Polars or Arrow error (a damaged or vanished shard) becomes a ViewError naming the run
    and the first line of the cause. Bugs of ours (TypeError, KeyError...) pass through."""

    def __init__(self, where: str):
        self.where = where

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        import pyarrow as pa

        if e is None or isinstance(e, ViewError):
            return False
        if isinstance(e, (pl.exceptions.PolarsError, pa.ArrowException, OSError)):
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            raise ViewError(f"could not read {self.where}: {first} (a damaged shard? rerun the command that "
                            "wrote it with --overwrite)") from e
        return False
