"""Throughput of the heuristic filters, per filter and for the whole chain, against datatrove.

Runs every filter, single-process, timed in CPU seconds of the process (docs/s per core, and steadier
than wall time on a shared machine), over the 697 Common Crawl documents of
shared/data/text/web_cc, repeated `--reps` times. With `--datatrove-python PY` (an interpreter that has
datatrove and spaCy installed, e.g. a separate venv), the same documents go through datatrove's Gopher,
C4 and FineWeb filters in a subprocess, and the script prints the speed ratio and the share of documents
that get the same keep/drop decision per filter. C4 is compared with the reference settings (5 words
per line, 3 sentences) on both sides. datatrove's language filter needs lid.176.bin, which is not
available offline, so language ID is timed but not compared.

    .venv/bin/python benchmarks/filters.py --reps 3 --datatrove-python /tmp/dtvenv/bin/python

(/tmp/dtvenv: `python -m venv /tmp/dtvenv && /tmp/dtvenv/bin/pip install datatrove spacy nltk`.)
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("PENEIRA_SHARED_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
WEB_CC = os.path.join(DATA, "text", "web_cc", "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz")
COMPARED = ["gopher_quality", "gopher_repetition", "c4", "fineweb"]


def load_texts() -> list[str]:
    with gzip.open(WEB_CC, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


# ------------------------------------------------------------------ datatrove side (runs in its own venv)

def datatrove_worker(reps: int) -> dict:
    """Decisions and docs/s of datatrove's filters; imports nothing from this project."""
    from datatrove.data import Document
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )

    texts = load_texts()
    filters = {
        "gopher_quality": GopherQualityFilter(),
        "gopher_repetition": GopherRepetitionFilter(),
        "c4": C4QualityFilter(min_num_sentences=3, min_words_per_line=5),
        "fineweb": FineWebQualityFilter(),
    }
    for f in filters.values():  # warm up (spaCy and punkt load lazily)
        f.filter(Document(text=texts[0], id="warm"))
    out: dict = {"decisions": {}, "docs_per_s": {}}
    for name, f in filters.items():
        t = time.process_time()
        for _ in range(reps):
            keep = [f.filter(Document(text=x, id=str(i))) is True for i, x in enumerate(texts)]
        out["docs_per_s"][name] = reps * len(texts) / (time.process_time() - t)
        out["decisions"][name] = keep
    t = time.process_time()
    for _ in range(reps):
        for i, x in enumerate(texts):
            doc = Document(text=x, id=str(i))
            all(f.filter(doc) is True for f in filters.values())
    out["docs_per_s"]["chain"] = reps * len(texts) / (time.process_time() - t)
    return out


# ------------------------------------------------------------------ our side

def run_ours(reps: int, model_path: str) -> dict:
    from curate import Document, Reject, filters
    from curate.filters import _text

    texts = load_texts()
    steps = {
        "language": filters.Language(["en", "pt"], model_path=model_path),
        "gopher_quality": filters.GopherQuality(),
        "gopher_repetition": filters.GopherRepetition(),
        "c4": filters.C4(bad_words_languages=()),  # datatrove's C4 filter has no bad words: timed apart
        "fineweb": filters.FineWeb(),
        "url": filters.Url(),
        "bad_words": filters.BadWords(),
        "pii": filters.Pii(),
    }
    for s in steps.values():
        s.setup()

    def docs() -> list[Document]:
        _text._cache.clear()  # no statistics carried over from a previous repetition
        return [Document(id=str(i), text=x, source="web", url=None) for i, x in enumerate(texts)]

    def run(chain: list, batch: list[Document]) -> list[bool]:
        alive = list(range(len(batch)))
        for step in chain:
            res = step.apply_batch([batch[i] for i in alive])
            alive = [i for i, r in zip(alive, res, strict=True) if not (r is None or isinstance(r, Reject))]
        keep = [False] * len(batch)
        for i in alive:
            keep[i] = True
        return keep

    def timed(chain: list) -> tuple[float, list[bool]]:
        elapsed, keep = 0.0, []
        for _ in range(reps):
            all_docs, keep = docs(), []
            t = time.process_time()
            for k in range(0, len(all_docs), 64):  # the runner's batch size
                keep += run(chain, all_docs[k : k + 64])
            elapsed += time.process_time() - t
        return reps * len(texts) / elapsed, keep

    out: dict = {"decisions": {}, "docs_per_s": {}}
    for name, step in steps.items():
        out["docs_per_s"][name], out["decisions"][name] = timed([step])
    out["docs_per_s"]["chain"], _ = timed([steps[n] for n in COMPARED])
    full = ["language", "gopher_quality", "gopher_repetition", "c4", "fineweb", "pii"]
    out["docs_per_s"]["web_chain"], keep = timed([steps[n] for n in full])
    out["kept"] = {name: sum(d) for name, d in out["decisions"].items()} | {"web_chain": sum(keep)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--datatrove-python", help="interpreter with datatrove + spaCy installed")
    ap.add_argument("--datatrove-reps", type=int, default=1, help="repetitions on the (slow) datatrove side")
    ap.add_argument("--model", default=os.path.join(DATA, "models", "lid.176.ftz"))
    ap.add_argument("--datatrove-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.datatrove_worker:
        json.dump(datatrove_worker(args.reps), sys.stdout)
        return

    ours = run_ours(args.reps, args.model)
    theirs = None
    if args.datatrove_python:
        proc = subprocess.run(
            [args.datatrove_python, os.path.abspath(__file__), "--datatrove-worker", "--reps", str(args.datatrove_reps)],
            capture_output=True, text=True, check=True, env={**os.environ, "PENEIRA_SHARED_DATA": DATA},
        )
        theirs = json.loads(proc.stdout)

    n = len(load_texts())
    print(f"{n} web_cc documents x {args.reps} reps, one process (docs/s per core)\n")
    print(f"{'filter':<20}{'peneira':>10}{'datatrove':>11}{'speedup':>9}{'kept':>7}{'dt kept':>9}{'agree':>8}")
    for name, rate in ours["docs_per_s"].items():
        row = f"{name:<20}{rate:>10.0f}"
        dt = theirs and theirs["docs_per_s"].get(name)
        row += f"{dt:>11.0f}{rate / dt:>8.1f}x" if dt else f"{'-':>11}{'-':>9}"
        kept = ours["kept"].get(name)
        row += f"{kept:>7}" if kept is not None else f"{'':>7}"
        if theirs and name in theirs["decisions"]:
            a, b = ours["decisions"][name], theirs["decisions"][name]
            same = sum(x == y for x, y in zip(a, b, strict=True)) / n
            row += f"{sum(b):>9}{same:>8.1%}"
        print(row)
    print("\nchain = gopher_quality > gopher_repetition > c4 > fineweb (both sides); "
          "web_chain = language(en,pt) > that chain > pii")


if __name__ == "__main__":
    main()
