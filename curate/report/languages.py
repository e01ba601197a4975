"""The funnel per language: how many documents of each language the language step identified, how many
each later step dropped, and how many were kept.

Identified counts are the language step's `lang:<code>` figures (stats.json); kept counts are the kept
shards' `lang` column; drops per step come from the rejected shards (`OUT/rejected`, written by
`curate run --rejected`), which carry each dropped document's language and `drop_reason`. Without them
the table has one column for everything removed after identification (identified minus kept).
"""

from __future__ import annotations

from collections import Counter

import pyarrow.compute as pc

from curate.core.stats import StepStats
from curate.io import fs
from curate.io.batching import iter_batches
from curate.io.state import DAMAGED_SHARD, reading
from curate.io.writers import parquet_shards

MAX_LANGUAGES = 40  # rows shown; the rest are summed into one "other" row
BATCH_ROWS = 8192


def identified(stats: list[StepStats]) -> Counter:
    """Documents per language as the language step(s) labelled them (`lang:<code>` figures)."""
    out: Counter = Counter()
    for s in stats:
        for k, v in s.extra.items():
            if k.startswith("lang:") and isinstance(v, int):
                out[k.removeprefix("lang:")] += v
    return out


def rejected_by_step(out: str) -> dict[str, Counter] | None:
    """{step: documents dropped per language} from OUT/rejected, or None when the run kept no rejected shards."""
    folder = fs.join(out, "rejected")
    if not fs.isdir(folder):
        return None
    drops: dict[str, Counter] = {}
    for path in parquet_shards(folder, "curate report"):
        with reading(path, DAMAGED_SHARD):
            pf = fs.parquet_file(path)
            if not {"lang", "drop_reason"} <= set(pf.schema_arrow.names):
                continue
            for batch in iter_batches(pf, columns=["lang", "drop_reason"], max_rows=BATCH_ROWS):
                steps = pc.split_pattern(batch.column(1), ":", max_splits=1)
                pairs = zip(batch.column(0).to_pylist(), pc.list_element(steps, 0).to_pylist(), strict=True)
                for lang, step in pairs:
                    drops.setdefault(step, Counter())[lang or "(none)"] += 1
    return drops


def language_funnel(stats: list[StepStats], kept: dict[str, int],
                    drops: dict[str, Counter] | None) -> tuple[list[str], list[list[str]]] | None:
    """(header, rows) of the per-language funnel, or None when no language was identified or kept."""
    ident = identified(stats)
    langs = Counter(ident)
    for lang, n in kept.items():
        langs[lang] = max(langs[lang], n)
    if not langs:
        return None
    order = [s.name for s in stats if drops and s.name in drops]
    head = ["language", "identified", *(f"dropped: {s}" for s in order)] if drops is not None else \
        ["language", "identified", "removed after ID"]
    head += ["kept", "kept of identified"]

    def row(name: str, members: list[str]) -> list[str]:
        n_id = sum(ident[m] for m in members)
        n_kept = sum(kept.get(m, 0) for m in members)
        cells = [name, f"{n_id:,}"]
        if drops is not None:
            cells += [f"{sum(drops[s][m] for m in members):,}" for s in order]
        else:
            cells.append(f"{max(n_id - n_kept, 0):,}")
        return [*cells, f"{n_kept:,}", f"{100 * n_kept / n_id:.1f}%" if n_id else "-"]

    ranked = [lang for lang, _ in sorted(langs.items(), key=lambda kv: (-kv[1], kv[0]))]
    rows = [row(lang, [lang]) for lang in ranked[:MAX_LANGUAGES]]
    if len(ranked) > MAX_LANGUAGES:
        rows.append(row(f"other ({len(ranked) - MAX_LANGUAGES} languages)", ranked[MAX_LANGUAGES:]))
    return head, rows
