"""`curate decontam report OUT`: which benchmark items a run found, and where.

Counts come from the run's `stats.json` (every task, so they hold even when dropped documents were
not written); the per-item and per-document detail comes from `metadata["decontam"]` of the shards in
`OUT/data` (redacted documents) and `OUT/rejected` (dropped ones, written with `--rejected`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from curate.core.errors import UsageError
from curate.core.shown import for_terminal
from curate.io import fs


def _step_extra(out: str) -> dict[str, Any] | None:
    path = fs.join(out, "stats.json")
    if not fs.exists(path):
        raise UsageError(f"{out} has no stats.json (not a finished run?)")
    with fs.open(path, "r", encoding="utf-8") as f:
        steps = json.load(f)["steps"]
    extras = [s["extra"] for s in steps if s["name"].startswith("decontam")]
    if not extras:
        return None
    merged: dict[str, Any] = {}
    for e in extras:  # a pipeline with two Decontaminate steps (numbered decontam_0, decontam_1)
        for k, v in e.items():
            merged[k] = merged.get(k, 0) + v if isinstance(v, (int, float)) else merged.get(k, v)
    return merged


def _hit_rows(out: str) -> list[dict[str, Any]]:
    rows = []
    for where in ("data", "rejected"):
        for path in fs.glob(fs.join(out, where, "*.parquet")):  # a run may live at an fsspec URL
            names = fs.parquet_file(path).schema_arrow.names
            cols = [c for c in ("id", "url", "metadata", "drop_reason") if c in names]
            for rec in fs.read_table(path, columns=cols).to_pylist():
                meta = rec.get("metadata")
                if not meta or '"decontam"' not in meta:
                    continue
                entries = json.loads(meta).get("decontam") or []
                rows.append({"id": rec["id"], "url": rec.get("url"), "where": rec.get("drop_reason") or "kept (redacted)",
                             "matches": entries})
    return rows


def build_report(out: str, examples: int = 3) -> dict[str, Any]:
    """The report as data: per benchmark, items hit / total, documents, matches per document, examples."""
    extra = _step_extra(out)
    if extra is None:
        raise UsageError(f"{out}: the run has no decontam step")
    totals: dict[str, int] = extra.get("benchmarks", {})
    rows = _hit_rows(out)
    per: dict[str, dict[str, Any]] = defaultdict(lambda: {"items": set(), "docs": [], "examples": []})
    for row in rows:
        by_bench: dict[str, list[dict]] = defaultdict(list)
        for m in row["matches"]:
            by_bench[m["benchmark"]].append(m)
        for bench, ms in by_bench.items():
            p = per[bench]
            p["items"].update(m["item"] for m in ms)
            p["docs"].append({"id": row["id"], "url": row["url"], "where": row["where"], "matches": len(ms),
                              "items": sorted({m["item"] for m in ms})})
            for m in ms:
                if len(p["examples"]) < examples and "text" in m:
                    p["examples"].append({"doc": row["id"], "url": row["url"], "item": m["item"],
                                          "span": m["span"], "text": m["text"]})
    benchmarks = {}
    for bench in sorted(set(totals) | set(per)):
        p = per.get(bench, {"items": set(), "docs": [], "examples": []})
        docs = sorted(p["docs"], key=lambda d: -d["matches"])
        benchmarks[bench] = {
            "items_total": totals.get(bench),
            "items_hit": len(p["items"]),
            "docs_hit": extra.get(f"docs_hit:{bench}", 0),
            "docs_listed": len(docs),
            # items_hit counts the items of the listed documents: all of them only when every hit document was kept
            "items_hit_complete": len(docs) >= extra.get(f"docs_hit:{bench}", 0),
            "matches": extra.get(f"matches:{bench}", 0),
            "docs": docs,
            "examples": p["examples"],
        }
    notes = []
    for name, b in benchmarks.items():
        if b["items_hit_complete"]:
            continue
        unlisted = b["docs_hit"] - b["docs_listed"]
        which = "the" if not b["docs_listed"] else f"{unlisted:,} of the"
        notes.append(f"{name}: {which} {b['docs_hit']:,} documents with hits were dropped and not kept, so which "
                     f"items they hold is unknown (items hit shows {'?' if not b['docs_listed'] else 'a lower bound, ≥'}): "
                     "rerun with --rejected to see them")
    return {"index": extra.get("index"), "benchmarks": benchmarks, "notes": notes,
            "docs_redacted": extra.get("docs_redacted", 0), "chars_redacted": extra.get("chars_redacted", 0)}


def _t(value: Any) -> str:
    """A value from the run's documents or index on one row of the terminal (curate.core.shown)."""
    return for_terminal(value, lines=False)


def format_report(rep: dict[str, Any], docs: int = 5) -> str:
    lines = [f"decontamination index: {_t(rep['index'])}", ""]
    head = f"{'benchmark':<24}{'items hit':>11}{'of':>8}{'docs hit':>10}{'matches':>9}{'per doc':>9}"
    lines += [head, "-" * len(head)]
    for name, b in rep["benchmarks"].items():
        per_doc = b["matches"] / b["docs_hit"] if b["docs_hit"] else 0.0
        total = "?" if b["items_total"] is None else f"{b['items_total']:,}"
        hit = f"{b['items_hit']:,}" if b.get("items_hit_complete", True) else f"≥{b['items_hit']:,}" if b["docs_listed"] else "?"
        lines.append(f"{_t(name):<24}{hit:>11}{total:>8}{b['docs_hit']:>10,}{b['matches']:>9,}{per_doc:>9.1f}")
    if rep["docs_redacted"]:
        lines.append(f"\nredacted documents: {rep['docs_redacted']:,} ({rep['chars_redacted']:,} characters cut)")
    for name, b in rep["benchmarks"].items():
        if not b["docs"]:
            continue
        lines += ["", f"== {_t(name)}: documents with the most matches"]
        for d in b["docs"][:docs]:
            items = ", ".join(map(_t, d["items"][:5])) + (" …" if len(d["items"]) > 5 else "")
            lines.append(f"  {_t(d['id'])}  {_t(d['url'] or '')}  [{_t(d['where'])}]  {d['matches']} match(es): {items}")
        for ex in b["examples"]:
            lines.append(f"  e.g. item {_t(ex['item'])} at {ex['span'][0]}-{ex['span'][1]} of {_t(ex['doc'])}: "
                         f"{_t(repr(ex['text']))}")
    lines += [f"\nnote: {_t(n)}" for n in rep["notes"]]
    return "\n".join(lines)
