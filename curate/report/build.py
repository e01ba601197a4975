"""The run report: what a pipeline kept, what each rule removed, and what the kept corpus looks like.

`write_report(OUT)` reads OUT/stats.json and the kept shards in OUT/data (only the columns it plots,
a batch of rows at a time, kept as counts), and writes OUT/report.md (charts as PNG files in OUT/report/) and OUT/report.html,
which embeds the same PNGs as base64 so it can be mailed or attached on its own.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass, field

import numpy as np
import pyarrow.compute as pc

from curate.core.shown import for_html, for_markdown, neutral
from curate.core.stats import StepStats, stage_labels, text_start
from curate.io import fs
from curate.io.batching import iter_batches
from curate.io.state import DAMAGED_SHARD, reading
from curate.io.writers import parquet_shards
from curate.report.inputs import by_input
from curate.report.languages import language_funnel, rejected_by_step

MAX_REASONS = 20  # drop reasons shown in the chart; the table lists all of them


SCORE_EDGES = np.linspace(0, 1, 41)  # bins of the language and quality score histograms
BATCH_ROWS = 8192  # rows decoded at a time: memory is one batch of the narrow columns, whatever the corpus


@dataclass
class Corpus:
    """What the histograms need, as counts accumulated batch by batch: never one value per document.

    `lengths` holds every distinct document length (characters) and `length_counts` how many documents
    have it: exact (the median too), and bounded by the longest document, not by how many there are.
    The score histograms are counts per bin of `SCORE_EDGES`; `langs` counts documents per language.
    """

    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    length_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    lang_hist: np.ndarray = field(default_factory=lambda: np.zeros(len(SCORE_EDGES) - 1, np.int64))
    quality_hist: np.ndarray = field(default_factory=lambda: np.zeros(len(SCORE_EDGES) - 1, np.int64))
    langs: dict[str, int] = field(default_factory=dict)

    @property
    def docs(self) -> int:
        return int(self.length_counts.sum())

    def median_length(self) -> float:
        """The median document length, as `np.median` of every length would give it."""
        order = np.cumsum(self.length_counts)
        n = int(order[-1])
        lo, hi = (np.searchsorted(order, k, side="right") for k in ((n - 1) // 2, n // 2))
        return (float(self.lengths[lo]) + float(self.lengths[hi])) / 2


def load_stats(out: str) -> tuple[str, list[StepStats]]:
    path = fs.join(out, "stats.json")
    if not fs.exists(path):
        raise FileNotFoundError(f"{out} has no stats.json (not a finished run?)")
    with fs.open(path, "r", encoding="utf-8") as f:
        doc = json.load(f)
    return doc.get("pipeline", fs.basename(out.rstrip("/"))), [StepStats.from_dict(d) for d in doc["steps"]]


def load_corpus(out: str) -> Corpus:
    """Figures of the kept shards, read `BATCH_ROWS` rows of the plotted columns at a time (text only to
    measure it): memory holds one batch and the counts, never a shard's text or a value per document."""
    lengths: dict[int, int] = {}
    corpus = Corpus()
    shards = parquet_shards(fs.join(out, "data"), "curate report") if fs.isdir(fs.join(out, "data")) else []
    for path in shards:
        with reading(path, DAMAGED_SHARD):
            pf = fs.parquet_file(path)
            cols = [c for c in ("text", "lang", "lang_score", "quality_score") if c in pf.schema_arrow.names]
            for batch in iter_batches(pf, columns=cols, max_rows=BATCH_ROWS):
                _add_batch(corpus, lengths, batch)
    if lengths:
        corpus.lengths, corpus.length_counts = (np.array(v, np.int64) for v in zip(*sorted(lengths.items()), strict=True))
    corpus.langs = dict(sorted(corpus.langs.items(), key=lambda kv: -kv[1]))
    return corpus


def _add_batch(corpus: Corpus, lengths: dict[int, int], batch) -> None:
    names = batch.schema.names
    values, counts = np.unique(pc.utf8_length(batch.column(names.index("text"))).to_numpy(zero_copy_only=False),
                               return_counts=True)
    for v, n in zip(values.tolist(), counts.tolist(), strict=True):
        lengths[v] = lengths.get(v, 0) + n
    for name, hist in (("lang_score", corpus.lang_hist), ("quality_score", corpus.quality_hist)):
        if name in names:
            scores = pc.drop_null(batch.column(names.index(name))).to_numpy(zero_copy_only=False)
            hist += np.histogram(scores, bins=SCORE_EDGES)[0]
    if "lang" in names:
        for row in pc.value_counts(pc.drop_null(batch.column(names.index("lang")))).to_pylist():
            corpus.langs[row["values"]] = corpus.langs.get(row["values"], 0) + row["counts"]


def _funnel(stats: list[StepStats]) -> list[tuple[str, int, int]]:
    """(label, docs, chars) after each stage's step, labelled uniquely (`stage_labels`: the second `read` of a run
    with a global step is its own row). The first step is the reader: its input counts records (WARC requests,
    metadata), not documents, so the funnel starts at what it read."""
    return [(label, s.docs_out, s.chars_out) for s, label in zip(stats, stage_labels(stats), strict=True)]


def _base(values: list[int]) -> int:
    """What document percentages are of: the first non-zero value."""
    return next((v for v in values if v), 0)


def _text_base(stats: list[StepStats]) -> tuple[int, int]:
    """(characters of text, characters read): what character shares are of. A reader of WARC or HTML counts the
    raw page (markup included) and an extractor (a step named `extract`) turns it into text, so text shares
    are relative to the extractor's output; without an extractor the reader's characters are already text."""
    if not stats:
        return 0, 0
    raw = stats[0].chars_out
    extracted = next((s.chars_out for s in stats if s.name == "extract"), None)
    return (raw if extracted is None else extracted), raw


def _char_bases(stats: list[StepStats]) -> list[int | None]:
    """Per funnel row, what its character share is of: one base, the text (the extractor's output, or what the
    reader read when the input is text). Rows before the extractor hold markup or pages with no text yet: None,
    no share (a share of raw bytes beside shares of text read as a 100x cut where there was none)."""
    text, _ = _text_base(stats)
    first = text_start(stats) or 0
    return [None if i < first else text for i in range(len(stats))]


def _reasons(stats: list[StepStats]) -> list[tuple[str, int, int]]:
    rows = [(r, n, s.dropped_chars.get(r, 0)) for s in stats for r, n in s.dropped.items()]
    return sorted(rows, key=lambda r: -r[1])


def _pct(a: float, b: float | None) -> str:
    return f"{100 * a / b:.1f}%" if b else "-"


def _code(value: str) -> str:
    return f"`{value}`"


def summary(name: str, stats: list[StepStats], quote=_code) -> str:
    """One sentence a person reads first; `quote` shows a value from the run (its name, a reason, a step) on the
    surface the sentence goes to (a code span by default; `for_markdown(code=True)`, or `str` before `for_html`)."""
    funnel = _funnel(stats)
    if not funnel:
        return f"Run {quote(name)} processed no documents."
    (_, d0, _), (_, d1, c1) = funnel[0], funnel[-1]
    c0, raw = _text_base(stats)
    skipped = sum(stats[0].dropped.values())
    text = f"Run {quote(name)} read {d0:,} documents" + (f" ({skipped:,} other input records skipped)" if skipped else "")
    if c0 != raw:
        text += (f" and kept {d1:,} ({_pct(d1, d0)}), with {_pct(c1, c0)} of the extracted text's characters "
                 f"({_pct(c1, raw)} of the raw input's, markup included).")
    else:
        text += f" and kept {d1:,} ({_pct(d1, d0)}), with {_pct(c1, c0)} of their characters."
    reasons = _reasons(stats[1:])
    if reasons:
        r, n, _ = reasons[0]
        text += f" The largest cut is {quote(r)} ({n:,} documents, {_pct(n, d0)} of the input)."
    steps = [s for s in stats[1:] if sum(s.dropped.values())]
    if steps:
        worst = max(steps, key=lambda s: sum(s.dropped.values()))
        text += f" Step {quote(worst.name)} removes the most: {sum(worst.dropped.values()):,} documents."
    return text


# ------------------------------------------------------------------ charts


def _funnel_figure(plt, stats: list[StepStats]):
    """Documents and characters after each stage, one bar per stats row at its own position (labels are ticks:
    as categories, two rows named alike were drawn as one bar). Document shares are of what was read; character
    bars are drawn from the extractor on only, with shares of the extracted text, the one base the title names."""
    funnel = _funnel(stats)
    ys = list(range(len(funnel)))
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.35 * len(ys) + 1.6), sharey=True)
    docs = [r[1] for r in funnel]
    text_bases = _char_bases(stats)
    chars = [r[2] if b is not None else 0 for r, b in zip(funnel, text_bases, strict=True)]
    base = next((b for b in text_bases if b is not None), None)
    for ax, vals, bases, title in (
            (axes[0], docs, [_base(docs)] * len(ys), f"documents kept (share of the {_base(docs):,} read)"),
            (axes[1], chars, text_bases, f"characters of text kept (share of the {base or 0:,} extracted)")):
        ax.barh(ys, vals, color="#4C72B0")
        for y, v in zip(ys, vals, strict=True):
            ax.text(v, y, f" {_pct(v, bases[y]) if bases[y] is not None else 'markup, no text yet'}",
                    va="center", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_xlim(0, max(max(vals), 1) * 1.25)
    axes[0].set_yticks(ys, [_label(r[0]) for r in funnel])
    axes[0].invert_yaxis()
    return fig


def _label(value: str) -> str:
    """A chart label from the run's data: controls shown as escapes, `$` literal (not matplotlib's mathtext)."""
    return neutral(str(value), keep="").replace("$", r"\$")


def _charts(stats: list[StepStats], corpus: Corpus) -> dict[str, bytes]:
    """PNG bytes per chart name; charts without data are left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pngs: dict[str, bytes] = {}

    def save(fig, name: str) -> None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
        plt.close(fig)
        pngs[name] = buf.getvalue()

    funnel = _funnel(stats)
    if funnel:
        save(_funnel_figure(plt, stats), "funnel")

    reasons = _reasons(stats[1:])[:MAX_REASONS]
    if reasons:
        fig, ax = plt.subplots(figsize=(9, 0.3 * len(reasons) + 1.2))
        ax.barh([_label(r[0]) for r in reasons], [r[1] for r in reasons], color="#C44E52")
        ax.invert_yaxis()
        ax.set_title("documents dropped per reason")
        ax.set_xlabel("documents")
        save(fig, "drops")

    if corpus.docs:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        lo, hi = max(corpus.lengths.min(), 1), max(corpus.lengths.max(), 10)
        ax.hist(np.maximum(corpus.lengths, 1), bins=np.geomspace(lo, hi * 1.01, 40), weights=corpus.length_counts,
                color="#55A868")
        ax.set_xscale("log")
        ax.set_title(f"kept document length (median {corpus.median_length():,.0f} characters)")
        ax.set_xlabel("characters")
        save(fig, "length")

    for name, hist, title in (
        ("lang_score", corpus.lang_hist, "language score of kept documents"),
        ("quality_score", corpus.quality_hist, "quality score of kept documents"),
    ):
        if hist.sum():
            fig, ax = plt.subplots(figsize=(7, 3.2))
            ax.hist(SCORE_EDGES[:-1], bins=SCORE_EDGES, weights=hist, color="#8172B2")  # the counts, drawn as bars
            ax.set_title(title)
            ax.set_xlabel("score")
            save(fig, name)

    if corpus.langs:
        top = list(corpus.langs.items())[:15]
        fig, ax = plt.subplots(figsize=(7, 0.3 * len(top) + 1.2))
        ax.barh([_label(k) for k, _ in top], [v for _, v in top], color="#DD8452")
        ax.invert_yaxis()
        ax.set_title("languages of kept documents")
        save(fig, "languages")
    return pngs


CHART_TITLES = {
    "funnel": "Funnel",
    "drops": "Drops per reason",
    "length": "Document length",
    "lang_score": "Language score",
    "quality_score": "Quality score",
    "languages": "Languages",
}


# ------------------------------------------------------------------ writing


def _tables(stats: list[StepStats], corpus: Corpus) -> list[tuple[str, list[str], list[list[str]]]]:
    funnel_rows = _funnel(stats)
    d0 = funnel_rows[0][1] if funnel_rows else 0
    bases = _char_bases(stats)
    funnel = [[n, f"{d:,}", _pct(d, d0), f"{c:,}" + (" (markup)" if b is None else ""), _pct(c, b)]
              for (n, d, c), b in zip(funnel_rows, bases, strict=True)]
    limits = {r: v for s in stats for r, v in s.limits.items()}  # each reason's threshold (`Reject.limit`)
    reasons = [[r, f"{n:,}", _pct(n, d0), f"{c:,}", f"{limits[r]:g}" if r in limits else ""]
               for r, n, c in _reasons(stats[1:])]
    reasons += [[r, f"{n:,}", "(input records)", "", ""] for r, n, _ in _reasons(stats[:1])]
    extras = [[s.name, k, f"{v:,}" if isinstance(v, (int, float)) else str(v)] for s in stats for k, v in s.extra.items()]
    errors = [[s.name, f"{s.errors:,}", s.error_sample or ""] for s in stats if s.errors]
    out = [
        ("Funnel", ["after", "documents", "share of read", "characters", "share of the text"], funnel),
        ("Drops per reason", ["reason", "documents", "of read", "characters", "threshold"], reasons),
    ]
    if corpus.langs:
        n = sum(corpus.langs.values())
        out.append(("Languages", ["language", "documents", "share"], [[k, f"{v:,}", _pct(v, n)] for k, v in corpus.langs.items()]))
    if extras:
        out.append(("Step figures", ["step", "figure", "value"], extras))
    if errors:
        out.append(("Errors", ["step", "documents", "first error"], errors))
    return out


def _inputs_table(out: str) -> tuple[str, list[str], list[list[str]]]:
    """Documents read and kept per input file (`curate.report.inputs`), and the kept documents per source."""
    table = by_input(out)
    rows = [[k, f"{r['read']:,}", f"{r['kept']:,}", _pct(r["kept"], r["read"])] for k, r in table["inputs"].items()]
    total = sum(table["sources"].values())
    rows += [[f"source: {s}", "", f"{n:,}", _pct(n, total)] for s, n in table["sources"].most_common()]
    return "Inputs", ["input", "documents read", "kept", "kept share"], rows


def _md_table(head: list[str], rows: list[list[str]]) -> str:
    """A Markdown table whose cells (languages, reasons, step figures from the run's data) are escaped."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(for_markdown(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def write_report(out: str) -> dict[str, str]:
    """Write report.md (+ report/*.png) and a self-contained report.html into `out`; returns their paths.

    Each file is staged and published whole (`fs.atomic_open`), so a report interrupted half-way, or
    rerun over an older one, never leaves a truncated page next to the run."""
    name, stats = load_stats(out)
    corpus = load_corpus(out)
    pngs = _charts(stats, corpus)
    tables = _tables(stats, corpus)
    per_language = language_funnel(stats, corpus.langs, rejected_by_step(out))
    if per_language:  # after the funnel and the drops: the same funnel, language by language
        tables.insert(2, ("Funnel per language", *per_language))
    tables.insert(2, _inputs_table(out))
    head = summary(name, stats, lambda v: for_markdown(v, code=True))

    chart_dir = fs.join(out, "report")
    fs.makedirs(chart_dir)
    for chart, data in pngs.items():
        with fs.atomic_open(fs.join(chart_dir, f"{chart}.png"), "wb") as f:
            f.write(data)

    md = [f"# Report: {for_markdown(name)}", "", head, ""]
    md += [f"## {CHART_TITLES[c]}\n\n![{CHART_TITLES[c]}](report/{c}.png)\n" for c in pngs]
    md += [f"## {title} (table)\n\n{_md_table(h, rows)}\n" for title, h, rows in tables if rows]
    md_path = fs.join(out, "report.md")
    with fs.atomic_open(md_path, "w", encoding="utf-8") as f:
        f.write("\n".join(md))

    def html_table(h: list[str], rows: list[list[str]]) -> str:
        th = "".join(f"<th>{for_html(c)}</th>" for c in h)
        trs = "".join("<tr>" + "".join(f"<td>{for_html(c)}</td>" for c in r) + "</tr>" for r in rows)
        return f"<table><tr>{th}</tr>{trs}</table>"

    lead = for_html(summary(name, stats, quote=str))
    body = [f"<h1>Report: {for_html(name)}</h1>", f"<p class='lead'>{lead}</p>"]
    body += [
        f"<h2>{CHART_TITLES[c]}</h2><img alt='{c}' src='data:image/png;base64,{base64.b64encode(d).decode()}'>"
        for c, d in pngs.items()
    ]
    body += [f"<h2>{for_html(t)}</h2>{html_table(h, rows)}" for t, h, rows in tables if rows]
    style = (
        "body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;color:#222}"
        ".lead{font-size:1.15em;background:#f4f6fa;padding:.8em;border-radius:6px}"
        "table{border-collapse:collapse;margin-bottom:1em}td,th{border:1px solid #ccc;padding:2px 8px;"
        "text-align:left;font-size:.9em}img{max-width:100%}"
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>Report: {for_html(name)}</title>"
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>"
    )
    html_path = fs.join(out, "report.html")
    with fs.atomic_open(html_path, "w", encoding="utf-8") as f:
        f.write(page)
    return {"md": md_path, "html": html_path, "charts": chart_dir}
