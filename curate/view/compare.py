"""Two runs document by document, by id: the ablation question ("what did the other recipe keep?").

Runs over the same inputs give the same documents the same ids (docs/data-contract.md, "Document identity"), so
one full join of the two runs' kept documents on `id` answers all three questions: kept by A and not by B (where
B ran with `--rejected`, B's drop reason comes with it), kept by B and not by A, and kept by both with different
text (another extractor, redaction, line dedup: the hashes of the texts differ). The join holds ids, lengths and
64-bit hashes only, never text (lengths and hashes come from the shards' indexes where they are current,
`curate.view.index`): memory is some tens of bytes a kept document, for as long as one request runs; only the
page's rows read their text.
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


# each kind, on the full join of A's and B's kept documents by id (in_a / in_b: the id is kept by that run)
_KINDS = {"only_a": pl.col("in_b").is_null(), "only_b": pl.col("in_a").is_null(),
          "changed": pl.col("in_a") & pl.col("in_b") & (pl.col("h_a") != pl.col("h_b"))}


def _kept(run: Run, tag: str) -> pl.LazyFrame:
    """Id, text hash and length of the kept documents: from the shards' indexes where current, no text."""
    return run.frame("kept", narrow=True).select("id", pl.col("_hash").alias(f"h{tag}"),
                                                 pl.col("length").alias(f"n{tag}"), pl.lit(True).alias(f"in{tag}"))


def _page_rows(run: Run, other: Run | None, ids: pl.DataFrame) -> list[dict]:
    """The page's documents as `run` kept them (URL, first characters of text) and, when `other` is given and
    has rejected shards, why `other` dropped them."""
    want = ids["id"].to_list()
    rows = run.frame("kept", narrow=True).filter(pl.col("id").is_in(want)).select("id", "url", "_shard").unique(
        "id", keep="first").collect(engine="streaming")
    texts = snippets(run, "kept", rows) if rows.height else {}
    reasons = {}
    if other is not None and other.has_rejected:
        reasons = dict(other.frame("dropped", narrow=True).filter(pl.col("id").is_in(want)).select(
            "id", "drop_reason").collect(engine="streaming").iter_rows())
    found = {r["id"]: r for r in rows.iter_rows(named=True)}
    return [{**r, "url": found.get(r["id"], {}).get("url"), "snippet": texts.get(r["id"], {}).get("snippet"),
             "other_reason": reasons.get(r["id"])} for r in ids.iter_rows(named=True)]


def compare(a: Run, b: Run, kind: str, page: int) -> Comparison:
    """Counts of the three kinds and one page of `kind`, in id order (stable across pages): one full join of the
    two runs' ids and hashes gives both; then only the page's documents are looked up for URL, text and reason."""
    if kind not in KINDS:
        raise ViewError(f"unknown comparison {kind!r}: one of {', '.join(KINDS)}")
    full = _kept(a, "_a").join(_kept(b, "_b"), on="id", how="full", coalesce=True)
    counts = full.select(**{k: _KINDS[k].sum() for k in KINDS})
    side = "_b" if kind == "only_b" else "_a"
    ids = full.filter(_KINDS[kind]).select("id", n=f"n{side}", n_b="n_b").sort("id").slice(page * PAGE, PAGE)
    with guarded(f"{a.path} and {b.path}"):
        totals, ids = pl.collect_all([counts, ids], engine="streaming")
        rows = _page_rows(b if kind == "only_b" else a, {"only_a": b, "only_b": a}.get(kind), ids)
    return Comparison({k: int(totals[k].item() or 0) for k in KINDS}, rows, kind)


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
