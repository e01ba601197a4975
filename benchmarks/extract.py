"""Extraction quality and speed on the gold sets, and reading + extraction throughput on the real crawls.

    .venv/bin/python benchmarks/extract.py [--data ../shared/data] [--repeat 5] [--sets dragnet,...]

Part 1, quality: every extractor (trafilatura with favor_precision, Resiliparse main_content,
extract.Main, and extract.Main with the weights fitted without the set it scores, "left out", from
benchmarks/extract_left_out.json) on every gold set of ../shared/data/extraction and on the hand-made
gold of 10 WARC pages (tests/data/warc_gold.jsonl, never fitted on): mean per-page token F1, pages under
F1 0.5, precision and recall over bags of lower-cased \\w+ tokens, for extract.Main's tuning split and
held-out split separately (`_gold.is_tune`), each set under its gold's comment convention
(`_gold.KEEP_COMMENTS`: every extractor keeps comments on Dragnet, none elsewhere), and pages per CPU-second (one process, so per core; CPU time, not wall time, because the machine
is shared; the median of `--rounds` passes, the extractors taking turns every 20 pages so that the
machine's drift weighs on all alike), with the ratio to trafilatura measured in the same run, per set
and pooled over the gold sets. Pages are decoded before timing.

Part 2, throughput on the WARC set: docs/s per core for read-only (each reader over the WARC set,
`--repeat` times) and for read+extract with each extractor, the speed ratio against the baseline
measured in the same run (warcio, trafilatura), how far the extractors agree with trafilatura, and
peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from _data import DATA, ROOT
from _gold import KEEP_COMMENTS, SETS, bag, is_tune, pages, prf
from warcio.archiveiterator import ArchiveIterator

from curate import Document, extract
from curate.core.stats import StepStats
from curate.extract import features as F
from curate.extract import main as M
from curate.io import readers
from curate.io.readers import decode_html

EXTRACTORS = (("trafilatura", extract.Trafilatura), ("resiliparse", extract.Resiliparse), ("main", extract.Main))
LEFT_OUT = ROOT / "benchmarks" / "extract_left_out.json"


class LeftOut(extract.Main):
    """extract.Main with the weights and threshold that benchmarks/extract_fit.py fitted without one gold set."""

    def __init__(self, model: dict, **kw):
        super().__init__(threshold=model["threshold"], **kw)
        self.weights = tuple(np.array([model[stage][k] for k in names]) for stage, names
                             in (("stage1", F.LOCAL), ("stage2", F.LOCAL + F.CONTEXT)))

    def extract(self, doc: Document) -> str | None:
        return M.extract_text(doc.html, self.threshold, self.min_words, self.title, self.max_depth,
                              self.keep_comments, self.weights)


def extractors_for(name: str) -> list[tuple[str, extract.Extractor]]:
    """The extractors that score one set: under its gold's comment convention, and with the left-out model."""
    keep = KEEP_COMMENTS.get(name, False)
    out = [(label, cls(keep_comments=keep)) for label, cls in EXTRACTORS]
    left_out = json.loads(LEFT_OUT.read_text()) if LEFT_OUT.exists() else {}
    if name in left_out:
        out.append(("main left out", LeftOut(left_out[name], keep_comments=keep)))
    for _, ex in out:
        ex.setup()
    return out


def read_all(reader: readers.Reader, files: list[Path]) -> list[Document]:
    return [d for f in files for d in reader.read(str(f), StepStats("read"))]


def time_reads(reader: readers.Reader, files: list[Path], repeat: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = sum(len(read_all(reader, files)) for _ in range(repeat))
    return time.perf_counter() - t0, n


def time_extract(ex: extract.Extractor, docs: list[Document]) -> tuple[float, dict[str, str]]:
    ex.setup()
    out: dict[str, str] = {}
    t0 = time.perf_counter()
    for d in docs:
        res = ex.apply(Document(id=d.id, text=d.text, source=d.source, url=d.url, html=d.html))
        out[d.id] = res.text if isinstance(res, Document) else ""
    return time.perf_counter() - t0, out


def run_set(extractors: list[tuple[str, extract.Extractor]], items: list[tuple[str, str, str | None, str]],
            rounds: int, chunk: int = 20) -> dict[str, tuple[float, list]]:
    """Per extractor: CPU seconds of one pass over the pages (the median of `rounds` passes) and (id,
    precision, recall, F1) per page. The extractors take turns chunk by chunk (`chunk` pages each, the order
    rotated from chunk to chunk), so a slow drift of the shared machine's speed, which moved one
    extractor's rate by 40% between runs when each set was timed in one piece, weighs on all of them alike
    and cancels out of the ratios."""
    seconds = {label: [0.0] * rounds for label, _ in extractors}
    outs: dict[str, list] = {label: [] for label, _ in extractors}
    for r in range(rounds):
        for c, start in enumerate(range(0, len(items), chunk)):
            part = items[start:start + chunk]
            for label, ex in extractors[c % len(extractors):] + extractors[:c % len(extractors)]:
                docs = [Document(id=i, text="", source="gold", url=u, html=h) for i, h, u, _ in part]
                t0 = time.process_time()
                done = [ex.apply(d) for d in docs]
                seconds[label][r] += time.process_time() - t0
                if r == rounds - 1:
                    outs[label] += done
    return {label: (statistics.median(seconds[label]),
                    [(i, *prf(bag(o.text) if isinstance(o, Document) else bag(""), bag(g)))
                     for (i, _, _, g), o in zip(items, outs[label], strict=True)])
            for label, _ in extractors}


def mean(rows: list, k: int) -> float:
    return sum(r[k] for r in rows) / max(len(rows), 1)


def warc_gold(data: Path) -> list[tuple[str, str, str | None, str]]:
    """The WARC pages of tests/data/warc_gold.jsonl, found by record id, decoded as the readers do."""
    with open(ROOT / "tests" / "data" / "warc_gold.jsonl", encoding="utf-8") as f:
        gold = [json.loads(line) for line in f]
    want = {g["record_id"]: g for g in gold}
    items = []
    for warc in sorted({g["warc"] for g in gold}):
        with open(data / warc, "rb") as f:
            for rec in ArchiveIterator(f):
                g = want.get(rec.rec_headers.get_header("WARC-Record-ID"))
                if g is not None and rec.rec_type == "response":
                    html = decode_html(rec.content_stream().read(), rec.http_headers.get_header("Content-Type"))[0]
                    items.append((g["record_id"], html, g["url"], g["text"]))
    return items


def quality(data: Path, sets: list[str], rounds: int) -> None:
    print("| set | extractor | F1 | pages < 0.5 | F1 tune / held-out | precision | recall | pages/s per core "
          "| x trafilatura |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    pooled: dict[str, list[float]] = {label: [0, 0.0] for label, _ in EXTRACTORS}  # gold-set pages, seconds
    for name in [*sets, "warc-gold"]:
        items = warc_gold(data) if name == "warc-gold" else list(pages(name, data))
        results = run_set(extractors_for(name), items, rounds)
        base = len(items) / results["trafilatura"][0]
        for label, (sec, rows) in results.items():
            rate = len(items) / sec
            if name != "warc-gold" and label in pooled:
                pooled[label][0] += len(items)
                pooled[label][1] += sec
            tune = [r for r in rows if is_tune(r[0])]
            held = [r for r in rows if not is_tune(r[0])]
            low = sum(r[3] < 0.5 for r in rows)
            print(f"| {name} ({len(items)}) | {label} | {mean(rows, 3):.4f} | {low} | {mean(tune, 3):.4f} / "
                  f"{mean(held, 3):.4f} | {mean(rows, 1):.3f} | {mean(rows, 2):.3f} | {rate:,.0f} | {rate / base:.1f}x |",
                  flush=True)
    base = None
    for label, (n, sec) in pooled.items():  # every page of the gold sets, one pass each
        base = base or n / sec
        print(f"| all {len(sets)} gold sets ({n}) | {label} | | | | | | {n / sec:,.0f} | {n / sec / base:.1f}x |")


def jaccard(a: str, b: str) -> float:
    sa, sb = set(a.lower().split()), set(b.lower().split())
    return len(sa & sb) / max(len(sa | sb), 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--repeat", type=int, default=5, help="passes over the WARC set for the read-only figure")
    ap.add_argument("--sets", default=",".join(SETS), help="gold sets to score (comma-separated)")
    ap.add_argument("--no-throughput", action="store_true", help="skip part 2 (reading + extraction of the WARCs)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="passes of every extractor over each gold set, taking turns chunk by chunk; the median is reported")
    args = ap.parse_args()
    quality(Path(args.data), [s for s in args.sets.split(",") if s], args.rounds)
    if args.no_throughput:
        return 0
    files = sorted((Path(args.data) / "warc").rglob("*.warc*.gz"))
    if not files:
        sys.exit(f"no WARC files under {args.data}/warc")

    print(f"{len(files)} WARC files, read-only x{args.repeat}, one process")
    reads = {}
    for name, reader in (("warcio (readers.Warc)", readers.Warc()), ("FastWARC (readers.FastWarc)", readers.FastWarc())):
        sec, n = time_reads(reader, files, args.repeat)
        reads[name] = (sec / args.repeat, n // args.repeat)
        print(f"  read  {name:<30} {n / sec:>9,.0f} docs/s  ({n:,} docs in {sec:.2f}s)")
    base_read, fast_read = reads["warcio (readers.Warc)"][0], reads["FastWARC (readers.FastWarc)"][0]
    print(f"  ratio FastWARC / warcio: {base_read / fast_read:.1f}x")

    docs = [d for d in read_all(readers.Warc(), files) if d.html is not None]
    results = {}
    for name, ex in (("trafilatura", extract.Trafilatura()), ("resiliparse", extract.Resiliparse()),
                     ("main", extract.Main())):
        sec, texts = time_extract(ex, docs)
        results[name] = (sec, texts)
        kept = sum(bool(t) for t in texts.values())
        per_doc_read = (base_read if name == "trafilatura" else fast_read) / len(docs)
        rate = len(docs) / (sec + per_doc_read * len(docs))
        print(f"  read+extract {name:<13} {rate:>9,.1f} docs/s  (extract {len(docs) / sec:,.1f} docs/s, "
              f"{kept}/{len(docs)} pages with text)")
    t_sec, t_texts = results["trafilatura"]
    for name in ("resiliparse", "main"):
        sec, texts = results[name]
        both = [i for i in t_texts if t_texts[i] and texts[i]]
        agree = sum(jaccard(t_texts[i], texts[i]) for i in both) / max(len(both), 1)
        ratio = sum(len(texts[i]) for i in both) / max(sum(len(t_texts[i]) for i in both), 1)
        print(f"  {name} / trafilatura: extract-only speed {t_sec / sec:.1f}x; mean token-set Jaccard {agree:.3f} "
              f"over {len(both)} pages with text from both; chars {ratio:.2f}")
    print(f"  peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
