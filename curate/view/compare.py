"""Two runs document by document, by id: the ablation question ("what did the other recipe keep?").

Runs over the same inputs give the same documents the same ids (docs/data-contract.md, "Document identity"), so
a document kept by A and not by B is an anti-join on `id`; where B ran with `--rejected`, B's drop reason comes
with it. A document kept by both with different text (another extractor, redaction, line dedup) is an inner join
on `id` filtered on a hash of the text. The joins hold ids and 64-bit hashes only, never text (lengths and hashes
come from the shards' indexes where they are current, `curate.view.index`): memory is about 40 bytes a kept
document of the larger run, for as long as one request runs; only the page's rows read their text.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import polars as pl

from curate.view.query import PAGE, Run, ViewError, guarded, snippets

KINDS = {"only_a": "kept by A only", "only_b": "kept by B only", "changed": "kept by both, text differs"}
MAX_DIFF_LINES = 4000  # lines of each side a text diff compares (difflib is quadratic in the worst case)


@dataclass
class Comparison:
    counts: dict[str, int]  # kind -> documents
    rows: list[dict]  # the page of `kind`
    kind: str


def _kept(run: Run) -> pl.LazyFrame:
    """Id, URL, text hash and length of the kept documents: from the shards' indexes where current, no text."""
    return run.frame("kept", narrow=True).select("id", "url", "_shard", h="_hash", n="length")


def _queries(a: Run, b: Run) -> dict[str, pl.LazyFrame]:
    ka, kb = _kept(a), _kept(b)
    out = {}
    for kind, (x, y, other) in {"only_a": (ka, kb, b), "only_b": (kb, ka, a)}.items():
        lf = x.join(y.select("id"), on="id", how="anti")
        dropped = other.frame("dropped", narrow=True).select("id", other_reason=pl.col("drop_reason"))
        lf = lf.join(dropped.unique("id", keep="first"), on="id", how="left") if other.has_rejected else \
            lf.with_columns(other_reason=pl.lit(None, pl.String))
        out[kind] = lf.drop("h")
    both = ka.join(kb.select("id", h_b="h", n_b="n"), on="id", how="inner")
    out["changed"] = both.filter(pl.col("h") != pl.col("h_b")).drop("h", "h_b")
    return out


def _with_snippets(run: Run, rows: pl.DataFrame) -> list[dict]:
    """The page's rows with the first characters of their text in `run`, read from their shards only."""
    texts = snippets(run, "kept", rows) if rows.height else {}
    return [{**r, "snippet": texts.get(r["id"], {}).get("snippet")} for r in rows.drop("_shard").iter_rows(named=True)]


def compare(a: Run, b: Run, kind: str, page: int) -> Comparison:
    """Counts of the three kinds and one page of `kind`, in id order (stable across pages)."""
    if kind not in KINDS:
        raise ViewError(f"unknown comparison {kind!r}: one of {', '.join(KINDS)}")
    qs = _queries(a, b)
    plans = [qs[k].select(pl.len()) for k in KINDS]
    plans.append(qs[kind].sort("id").slice(page * PAGE, PAGE))
    with guarded(f"{a.path} and {b.path}"):
        *totals, rows = pl.collect_all(plans, engine="streaming")
        rows = _with_snippets(b if kind == "only_b" else a, rows)
    return Comparison({k: int(t.item()) for k, t in zip(KINDS, totals, strict=True)}, rows, kind)


def text_diff(a: str, b: str) -> list[tuple[str, str]]:
    """(op, line) of a line diff of A's text to B's: op is " " (both), "-" (A only) or "+" (B only).
    Beyond MAX_DIFF_LINES lines a side, the rest is compared as one block."""
    la, lb = _cap(a.splitlines()), _cap(b.splitlines())
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [(" ", s) for s in la[i1:i2]]
        else:
            out += [("-", s) for s in la[i1:i2]] + [("+", s) for s in lb[j1:j2]]
    return out


def _cap(lines: list[str]) -> list[str]:
    return lines if len(lines) <= MAX_DIFF_LINES else [*lines[:MAX_DIFF_LINES], "\n".join(lines[MAX_DIFF_LINES:])]
