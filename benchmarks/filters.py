"""Heuristic filters against datatrove: the same keep/drop decision per document, and speed, per filter.

Fidelity: every filter of the published recipes runs over 2,313 real documents (the 697 Common Crawl
pages of shared/data/text/web_cc and the 1,616 hand-made gold texts of shared/data/extraction), here and
in datatrove, with the recipe's settings on both sides, and the share of documents given the same
decision is printed per filter (`agree`, target >= 99%). C4 is compared twice: FineWeb's settings
(3 words a line, 5 sentences, no terminal-punctuation rule) and C4's own (5 words, 3 sentences, the
rule on), both without bad words (datatrove's C4QualityFilter has none). PII compares the redacted
text (one placeholder each side). Language ID runs datatrove's LanguageFilter on the same quantised
lid.176.ftz model file (its own download of lid.176.bin needs the internet), so it compares the rule,
not the model; it needs fasttext in datatrove's venv. The URL filter runs on the documents that have a
URL with datatrove's own lists on both sides; it needs tldextract and pyahocorasick there.

Speed: docs/s per core (CPU seconds of the process) over the web_cc pages, `--reps` passes here and
`--datatrove-reps` there, and for the whole Gopher > C4 > FineWeb chain.

    .venv/bin/python benchmarks/filters.py --reps 3 --datatrove-python /tmp/dtvenv/bin/python

(/tmp/dtvenv: `python3 -m venv /tmp/dtvenv && /tmp/dtvenv/bin/pip install datatrove spacy nltk
fasttext-numpy2-wheel tldextract pyahocorasick fasteners`, apart from the project's venv.)
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("PENEIRA_SHARED_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
WEB_CC = os.path.join(DATA, "text", "web_cc", "dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz")
LID = os.path.join(DATA, "models", "lid.176.ftz")
EMAIL, IP = "email@example.com", "22.214.171.124"


def load_documents() -> list[tuple[str, str, str | None]]:
    """(set, text, url) of the web_cc pages, then the extraction gold texts in sorted path order."""
    with gzip.open(WEB_CC, "rt", encoding="utf-8") as f:
        docs = [("web_cc", r["text"], r.get("metadata", {}).get("url")) for r in map(json.loads, f)]
    for gold in sorted(glob.glob(os.path.join(DATA, "extraction", "*", "gold.jsonl"))):
        with open(gold, encoding="utf-8") as f:
            docs += [(gold.split(os.sep)[-2], r["text"], r.get("url")) for r in map(json.loads, f)]
    return docs


# ------------------------------------------------------------------ datatrove side (runs in its own venv)

def datatrove_filters() -> dict:
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )

    out = {
        "gopher_quality": GopherQualityFilter(),
        "gopher_repetition": GopherRepetitionFilter(),
        "c4 (FineWeb)": C4QualityFilter(filter_no_terminal_punct=False),
        "c4 (C4)": C4QualityFilter(min_num_sentences=3, min_words_per_line=5),
        "fineweb": FineWebQualityFilter(),
    }
    try:
        from datatrove.pipeline.filters import LanguageFilter
        from fasttext.FastText import _FastText

        lang = LanguageFilter(languages=["en"], language_threshold=0.65)
        lang.model._model = _FastText(LID)  # the same model file as ours, instead of downloading lid.176.bin
        out["language"] = lang
    except ImportError as e:
        print(f"datatrove language filter skipped: {e}", file=sys.stderr)
    try:
        import tldextract
        from datatrove.pipeline.filters import URLFilter

        url = URLFilter()
        url.tldextractor = tldextract.TLDExtract(suffix_list_urls=())  # its bundled suffix list: no network
        out["url"] = url
    except ImportError as e:
        print(f"datatrove URL filter skipped: {e}", file=sys.stderr)
    return out


def datatrove_worker(reps: int) -> dict:
    """Decisions over every document and docs/s over web_cc; imports nothing from this project."""
    from datatrove.data import Document
    from datatrove.pipeline.formatters import PIIFormatter
    from datatrove.utils._import_utils import ASSETS_PATH

    docs = load_documents()
    web = [t for s, t, _ in docs if s == "web_cc"]
    out: dict = {"decisions": {}, "docs_per_s": {}, "assets": ASSETS_PATH}
    for name, f in datatrove_filters().items():
        def keep(i: int, text: str, url: str | None, f=f, name=name) -> bool | None:
            if name == "url" and not url:
                return None
            return f.filter(Document(text=text, id=str(i), metadata={"url": url})) is True
        out["decisions"][name] = [keep(i, t, u) for i, (_, t, u) in enumerate(docs)]
        t0 = time.process_time()
        for _ in range(reps):
            for i, text in enumerate(web):
                keep(i, text, docs[i][2])
        out["docs_per_s"][name] = reps * len(web) / (time.process_time() - t0)
    pii = PIIFormatter(email_replacement=EMAIL, ip_replacement=IP)
    out["pii_text"] = [pii.format(t) for _, t, _ in docs]
    chain = [datatrove_filters()[n] for n in ("gopher_quality", "gopher_repetition", "c4 (FineWeb)", "fineweb")]
    t0 = time.process_time()
    for _ in range(reps):
        for i, text in enumerate(web):
            doc = Document(text=text, id=str(i))
            all(f.filter(doc) is True for f in chain)
    out["docs_per_s"]["chain"] = reps * len(web) / (time.process_time() - t0)
    return out


# ------------------------------------------------------------------ our side

def our_filters(assets: str | None, tmp: str) -> dict:
    from curate import filters

    out = {
        "gopher_quality": filters.GopherQuality(),
        "gopher_repetition": filters.GopherRepetition(),
        "c4 (FineWeb)": filters.C4(min_words_per_line=3, min_sentences=5, require_terminal_punct=False,
                                   bad_words_languages=()),
        "c4 (C4)": filters.C4(bad_words_languages=()),
        "fineweb": filters.FineWeb(),
        "language": filters.Language(["en"], threshold=0.65, model_path=LID),
    }
    if assets:  # datatrove's URL lists, unpacked as pipelines/fineweb.py expects them ($PENEIRA_URL_LISTS)
        with tarfile.open(os.path.join(assets, "url_filterblacklistsv0_3_0.tar.gz")) as tar:
            tar.extractall(tmp, filter="data")
        out["url"] = filters.Url(
            blocked_domains=os.path.join(tmp, "domains"), blocked_urls=os.path.join(tmp, "urls"),
            banned_words=os.path.join(assets, "banned_words.txt"),
            banned_subwords=os.path.join(assets, "banned_subwords.txt"),
            soft_banned_words=os.path.join(assets, "soft_banned_words.txt"))
    for f in out.values():
        if hasattr(f, "setup"):
            f.setup()
    return out


def run_ours(reps: int, assets: str | None) -> dict:
    from curate import Document, Reject, filters
    from curate.filters import _text

    docs = load_documents()
    web = [(t, u) for s, t, u in docs if s == "web_cc"]
    out: dict = {"decisions": {}, "docs_per_s": {}}

    def decide(step, batch: list[tuple[str, str | None]], name: str) -> list[bool | None]:
        _text._cache.clear()
        res = step.apply_batch([Document(id=str(i), text=t, source="web", url=u) for i, (t, u) in enumerate(batch)])
        return [None if name == "url" and not u else not isinstance(r, Reject) for r, (_, u) in zip(res, batch, strict=True)]

    with tempfile.TemporaryDirectory() as tmp:
        steps = our_filters(assets, tmp)
        for name, step in steps.items():
            pairs = [(t, u) for _, t, u in docs]
            out["decisions"][name] = [d for k in range(0, len(pairs), 64) for d in decide(step, pairs[k : k + 64], name)]
            t0 = time.process_time()
            for _ in range(reps):
                for k in range(0, len(web), 64):  # the runner's batch size
                    decide(step, web[k : k + 64], name)
            out["docs_per_s"][name] = reps * len(web) / (time.process_time() - t0)
        pii = filters.Pii(email_placeholder=EMAIL, ip_placeholder=IP)
        out["pii_text"] = [pii.redact(t)[0] for _, t, _ in docs]
        chain = [steps[n] for n in ("gopher_quality", "gopher_repetition", "c4 (FineWeb)", "fineweb")]
        t0 = time.process_time()
        for _ in range(reps):
            _text._cache.clear()
            for k in range(0, len(web), 64):
                alive = [Document(id=str(i), text=t, source="web") for i, (t, _) in enumerate(web[k : k + 64])]
                for step in chain:
                    alive = [d for d, r in zip(alive, step.apply_batch(alive), strict=True) if not isinstance(r, Reject)]
        out["docs_per_s"]["chain"] = reps * len(web) / (time.process_time() - t0)
    return out


def markdown(res: dict) -> str:
    """The docs' table from a results file (`--json`)."""
    out = ["| filter | Peneira docs/s | datatrove docs/s | speedup | kept (P / dt) | agree |", "|---|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        ours, theirs = r.get("peneira_docs_per_s"), r.get("datatrove_docs_per_s")
        speed = f"{ours:,.0f} | {theirs:,.0f} | {ours / theirs:.1f}x" if ours and theirs else (
            f"{ours:,.0f} | | " if ours else " | | ")
        kept = f"{r['kept']:,} / {r['datatrove_kept']:,}" if "kept" in r else (
            f"{r['redacted']:,} redacted" if "redacted" in r else "")
        agree = f"{r['agree']:.2%}" if "agree" in r else ""
        out.append(f"| {r['filter']} | {speed} | {kept} | {agree} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--datatrove-python", help="interpreter with datatrove + spaCy installed")
    ap.add_argument("--datatrove-reps", type=int, default=1, help="repetitions on the (slow) datatrove side")
    ap.add_argument("--datatrove-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json", metavar="PATH", help="also write this run's table rows to a results file")
    ap.add_argument("--markdown", metavar="PATH", help="print the docs' table from a results file, run nothing")
    args = ap.parse_args()
    if args.datatrove_worker:
        json.dump(datatrove_worker(args.reps), sys.stdout)
        return
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())))
        return
    theirs = None
    if args.datatrove_python:
        proc = subprocess.run(
            [args.datatrove_python, os.path.abspath(__file__), "--datatrove-worker", "--reps", str(args.datatrove_reps)],
            capture_output=True, text=True, check=True, env={**os.environ, "PENEIRA_SHARED_DATA": DATA},
        )
        theirs = json.loads(proc.stdout)
    sys.path.insert(0, ROOT)
    ours = run_ours(args.reps, theirs and theirs["assets"])
    docs = load_documents()
    n_web = sum(s == "web_cc" for s, _, _ in docs)
    print(f"{len(docs):,} documents ({n_web} web_cc pages, {len(docs) - n_web:,} extraction gold texts); "
          f"speed over the web_cc pages, one process, docs/s per core\n")
    print(f"{'filter':<20}{'peneira':>9}{'datatrove':>11}{'speedup':>9}{'docs':>7}{'kept':>7}{'dt kept':>9}{'agree':>8}")
    rows = []
    for name, rate in ours["docs_per_s"].items():
        dt = theirs and theirs["docs_per_s"].get(name)
        row = f"{name:<20}{rate:>9.0f}" + (f"{dt:>11.0f}{rate / dt:>8.1f}x" if dt else f"{'-':>11}{'-':>9}")
        record = {"filter": name, "peneira_docs_per_s": rate, "datatrove_docs_per_s": dt or None}
        a = ours["decisions"].get(name)
        b = theirs and theirs["decisions"].get(name)
        if a is not None and b is not None:
            pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
            same = sum(x == y for x, y in pairs) / len(pairs)
            row += f"{len(pairs):>7}{sum(x for x, _ in pairs):>7}{sum(y for _, y in pairs):>9}{same:>8.2%}"
            record |= {"docs": len(pairs), "kept": sum(x for x, _ in pairs), "datatrove_kept": sum(y for _, y in pairs),
                       "agree": same}
        rows.append(record)
        print(row)
    if theirs:
        same = sum(x == y for x, y in zip(ours["pii_text"], theirs["pii_text"], strict=True)) / len(docs)
        changed = sum(x != t for x, (_, t, _) in zip(ours["pii_text"], docs, strict=True))
        print(f"{'pii (same text)':<20}{'':>29}{len(docs):>7}{changed:>7}{'redacted':>9}{same:>8.2%}")
        rows.append({"filter": "pii (same redacted text)", "docs": len(docs), "redacted": changed, "agree": same})
    print("\nchain = gopher_quality > gopher_repetition > c4 (FineWeb) > fineweb, both sides")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "load_1min": round(os.getloadavg()[0], 2), "documents": len(docs),
                       "web_cc": n_web, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
