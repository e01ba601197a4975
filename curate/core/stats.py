"""Per-step counters: documents and characters in, out, and dropped by reason."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from curate.core.shown import for_terminal


@dataclass
class StepStats:
    name: str
    docs_in: int = 0
    docs_out: int = 0
    chars_in: int = 0
    chars_out: int = 0
    seconds: float = 0.0
    dropped: Counter = field(default_factory=Counter)  # reason -> documents
    dropped_chars: Counter = field(default_factory=Counter)  # reason -> characters
    errors: int = 0
    error_sample: str | None = None  # the first exception seen, for the summary
    extra: dict[str, Any] = field(default_factory=dict)  # step-specific figures (e.g. a quality cut)
    limits: dict[str, float] = field(default_factory=dict)  # reason -> the threshold it crossed (`Reject.limit`)

    def drop(self, reason: str, chars: int = 0, limit: float | None = None) -> None:
        self.dropped[reason] += 1
        self.dropped_chars[reason] += chars
        if limit is not None:
            self.limits[reason] = limit

    def merge(self, other: StepStats) -> None:
        self.docs_in += other.docs_in
        self.docs_out += other.docs_out
        self.chars_in += other.chars_in
        self.chars_out += other.chars_out
        self.seconds += other.seconds
        self.dropped.update(other.dropped)
        self.dropped_chars.update(other.dropped_chars)
        self.errors += other.errors
        self.error_sample = self.error_sample or other.error_sample
        self.limits = {**other.limits, **self.limits}  # a reason's threshold is the same in every task
        for k, v in other.extra.items():
            if isinstance(v, (int, float)) and isinstance(self.extra.get(k), (int, float)):
                self.extra[k] += v
            elif k.startswith("throughput") and isinstance(v, dict) and isinstance(self.extra.get(k), dict):
                mine = self.extra[k]
                self.extra[k] = throughput({c: mine.get(c, 0) + v.get(c, 0) for c in THROUGHPUT_COUNTS})
            else:
                self.extra.setdefault(k, v)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "docs_in": self.docs_in,
            "docs_out": self.docs_out,
            "chars_in": self.chars_in,
            "chars_out": self.chars_out,
            "seconds": round(self.seconds, 4),
            "dropped": dict(sorted(self.dropped.items())),
            "dropped_chars": dict(sorted(self.dropped_chars.items())),
            "errors": self.errors,
            "error_sample": self.error_sample,
            "extra": self.extra,
            **({"limits": dict(sorted(self.limits.items()))} if self.limits else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepStats:
        return cls(
            name=d["name"],
            docs_in=d["docs_in"],
            docs_out=d["docs_out"],
            chars_in=d["chars_in"],
            chars_out=d["chars_out"],
            seconds=d["seconds"],
            dropped=Counter(d["dropped"]),
            dropped_chars=Counter(d.get("dropped_chars", {})),
            errors=d.get("errors", 0),
            error_sample=d.get("error_sample"),
            extra=dict(d.get("extra", {})),
            limits=dict(d.get("limits", {})),
        )


THROUGHPUT_COUNTS = ("docs", "tokens", "padding", "truncated", "seconds")


def throughput(counts: dict[str, Any]) -> dict[str, Any]:
    """A throughput record for `StepStats.extra` (under a key starting `throughput`, which `merge` adds up across
    tasks and workers, rates recomputed): documents, tokens (without padding), padding tokens, truncated documents
    and the seconds spent (summed over workers), with documents/s, tokens/s per worker and the padding share."""
    c = {k: counts.get(k, 0) for k in THROUGHPUT_COUNTS}
    c["seconds"] = round(float(c["seconds"]), 4)
    secs = c["seconds"] or 1e-9
    positions = c["tokens"] + c["padding"]
    return {**c, "docs_per_s": round(c["docs"] / secs, 2), "tokens_per_s": round(c["tokens"] / secs, 1),
            "padding_share": round(c["padding"] / positions, 4) if positions else 0.0}


class Throughput(Counter):
    """What a step's model calls did (`curate.models.inference` counts into it): docs, tokens (without padding),
    padding (pad positions), truncated (texts cut) and seconds. A Counter, so it adds up, pickles, and is put back
    by the runner when a batch is retried document by document (a step's `_`-prefixed Counters)."""

    def record(self) -> dict[str, Any]:
        """The counts and their rates, for `StepStats.extra["throughput"]` (merged across tasks and workers)."""
        return throughput(dict(self))


def merge_step_lists(lists: list[list[StepStats]]) -> list[StepStats]:
    """Merge per-task stats lists step by step (by position and name, keeping pipeline order)."""
    merged: dict[str, StepStats] = {}
    for stats in lists:
        for s in stats:
            if s.name not in merged:
                merged[s.name] = StepStats(s.name)
            merged[s.name].merge(s)
    return list(merged.values())


def stage_labels(stats: list[StepStats]) -> list[str]:
    """One label per stats row, unique: a run lists a step again where a later stage starts (the `read` of the shards
    a global step wrote), and two rows under one name read as one step (a chart even draws them as one bar)."""
    labels, seen = [], Counter()
    for i, s in enumerate(stats):
        seen[s.name] += 1
        if seen[s.name] == 1:
            labels.append(s.name)
        elif s.name == "read" and i:
            labels.append(f"read (shards after {stats[i - 1].name})")
        else:
            labels.append(f"{s.name} #{seen[s.name]}")
    return labels


def text_start(stats: list[StepStats]) -> int | None:
    """The row from which characters are of text: the extractor's (its input was markup: the reader counts raw
    records, and the steps before it see pages with no text yet); None when the run reads text from the start."""
    return next((i for i, s in enumerate(stats) if s.name == "extract"), None)


def format_table(stats: list[StepStats]) -> str:
    """A plain-text table for the terminal: one row per step, then drop reasons indented below it."""
    head = f"{'step':<34}{'docs in':>10}{'docs out':>10}{'dropped':>10}{'chars in':>14}{'chars out':>14}{'sec':>9}"
    lines = [head, "-" * len(head)]
    for s, label in zip(stats, stage_labels(stats), strict=True):
        lines.append(
            f"{for_terminal(label, lines=False):<34}{s.docs_in:>10,}{s.docs_out:>10,}{sum(s.dropped.values()):>10,}"
            f"{s.chars_in:>14,}{s.chars_out:>14,}{s.seconds:>9.2f}"
        )
        for reason, n in s.dropped.most_common():
            lines.append(f"    {for_terminal(reason, lines=False):<40}{n:>10,}")
        if s.errors:
            lines.append(f"    errors: {s.errors:,} (first: {for_terminal(s.error_sample, lines=False)})")
        t = s.extra.get("throughput")
        if isinstance(t, dict) and t.get("docs"):
            lines.append(f"    model: {t['docs']:,} docs, {t['docs_per_s']:,} docs/s and {t['tokens_per_s']:,.0f} tokens/s "
                         f"per worker, {t.get('truncated', 0):,} truncated, padding {t['padding_share']:.1%}")
    if text_start(stats):
        lines.append("characters: `read` counts the raw records (markup included); the steps before `extract` see "
                     "pages with no text yet; from `extract` on they are characters of text")
    return "\n".join(lines)
