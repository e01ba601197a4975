"""dedup.Lines(unit="sentence", span=3) against datatrove's SentenceDedup(n_sentences=3): same kept text, speed.

Corpus: the Common Crawl text of ../shared/data/text/web_cc and the gold texts of the extraction sets,
plus, with --plant, copies of real boilerplate: lines and paragraphs that occur in two or more of those
documents, inserted into a third of the documents. Documents are given to datatrove sorted by id, so
its "first occurrence" is ours, "smallest id". datatrove runs with min_doc_words=0 and
min_num_sentences=0 (its only drop is then an emptied document, as ours with min_words=0).

    .venv/bin/python benchmarks/lines.py --plant --out /tmp/lines-bench.json

Needs datatrove and spaCy (`pip install datatrove spacy`), which the project does not depend on.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import resource
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from _data import DATA

from curate import Pipeline, dedup, readers
from curate.dedup.text import match_form
from curate.run.executors.local import LocalExecutor


def load() -> list[dict]:
    docs = []
    for path in sorted((DATA / "text/web_cc").glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            docs += [{"id": f"cc-{path.name[:30]}-{i:05d}", "text": json.loads(line)["text"]} for i, line in enumerate(f)]
    for gold in sorted((DATA / "extraction").glob("*/gold.jsonl")):
        with open(gold, encoding="utf-8") as f:
            docs += [{"id": f"gold-{gold.parent.name}-{json.loads(line)['id']}", "text": json.loads(line)["text"]}
                     for line in f]
    return [d for d in docs if d["text"] and d["text"].strip()]


def plant(docs: list[dict], seed: int = 0) -> list[dict]:
    """Insert copies of real boilerplate (lines and paragraphs found in 2+ documents) into a third of the documents."""
    rng = random.Random(seed)
    seen_in: Counter = Counter()
    for d in docs:
        units = {ln.strip() for ln in d["text"].split("\n") if len(ln.split()) >= 4}
        units |= {p.strip() for p in d["text"].split("\n\n") if len(p.split()) >= 8}
        seen_in.update({match_form(u): u for u in sorted(units)}.values())  # sorted: the same set every run
    boiler = sorted(u for u, n in seen_in.items() if n >= 2)
    out = []
    for d in docs:
        text = d["text"]
        if boiler and rng.random() < 1 / 3:
            paras = text.split("\n")
            for _ in range(rng.randint(1, 3)):
                paras.insert(rng.randint(0, len(paras)), rng.choice(boiler))
            text = "\n".join(paras)
        out.append({"id": d["id"], "text": text})
    return out


def run_datatrove(docs: list[dict], work: Path) -> tuple[dict[str, str], dict[str, float]]:
    from datatrove.data import Document
    from datatrove.pipeline.dedup.sentence_dedup import (
        SentDedupConfig,
        SentenceDedupFilter,
        SentenceDedupSignature,
        SentenceFindDedups,
    )
    from datatrove.utils.hashing import HashConfig

    # sha1: datatrove 0.10's xxhash route passes str, which xxhash 4 (our pin) refuses
    cfg = SentDedupConfig(n_sentences=3, split_sentences=True, min_doc_words=0, min_num_sentences=0,
                          hash_config=HashConfig(precision=64, hash_fc="sha1"))
    ordered = sorted(docs, key=lambda d: d["id"])
    seconds = {}
    t = time.perf_counter()
    SentenceDedupSignature(str(work / "sigs"), config=cfg, language="en").run(
        (Document(text=d["text"], id=d["id"]) for d in ordered), rank=0, world_size=1)
    seconds["signature"] = time.perf_counter() - t
    t = time.perf_counter()
    SentenceFindDedups(str(work / "sigs"), str(work / "dups"), config=cfg).run(rank=0, world_size=1)
    seconds["find"] = time.perf_counter() - t
    t = time.perf_counter()
    kept = {d.id: d.text for d in SentenceDedupFilter(str(work / "dups"), config=cfg, language="en").run(
        (Document(text=d["text"], id=d["id"]) for d in ordered), rank=0, world_size=1)}
    seconds["filter"] = time.perf_counter() - t
    return kept, seconds


def run_ours(docs: list[dict], work: Path) -> tuple[dict[str, str], dict[str, float], dict]:
    import pyarrow.parquet as pq

    work.mkdir(parents=True, exist_ok=True)
    src = work / "in.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs))
    out = work / "out"
    Pipeline(name="lines", reader=readers.Jsonl(), steps=[dedup.Lines(unit="sentence", span=3)]).run(
        inputs=str(src), output=str(out), executor=LocalExecutor(1, progress=False), progress=False)
    kept = {r["id"].rsplit("#", 1)[0]: r["text"] for p in sorted(out.glob("data/*.parquet"))
            for r in pq.read_table(p, columns=["id", "text"]).to_pylist()}
    st = json.loads((out / "stats.json").read_text())["steps"][-1]
    return kept, st["extra"]["seconds"], st["extra"]


def compare(docs: list[dict], theirs: dict[str, str], ours: dict[str, str]) -> dict:
    same = same_ws = 0
    diffs = []
    for d in docs:
        a, b = theirs.get(d["id"]), ours.get(d["id"])
        if a == b:
            same += 1
        elif a is not None and b is not None and a.split() == b.split():
            same_ws += 1
        else:
            diffs.append(d["id"])
    return {"docs": len(docs), "identical": same, "identical_but_whitespace": same_ws, "different": len(diffs),
            "identical_share": round(same / len(docs), 5),
            "changed_by_datatrove": sum(theirs.get(d["id"]) != d["text"] for d in docs),
            "changed_by_ours": sum(ours.get(d["id"]) != d["text"] for d in docs), "different_ids": diffs}


def bloom_check(docs: list[dict]) -> dict:
    """The Bloom filter's measured false-positive rate at its sized count, and the Bloom mode (DCLM's settings,
    sized from the text) against the same run with a ~exact filter (fp 1e-9) on the corpus."""
    import numpy as np

    from curate.dedup.bloom import Filter

    out = {"filter": {}}
    rng = np.random.default_rng(0)
    for p in (0.01, 0.001):
        f = Filter.sized(1_000_000, p)
        f.insert(rng.integers(0, 2**63, 1_000_000, dtype=np.uint64))
        measured = float(f.contains(rng.integers(0, 2**63, 2_000_000, dtype=np.uint64)).mean())
        out["filter"][str(p)] = {"measured": measured, "estimated": f.fp_rate(), "bytes": f.bytes}
    kept = {}
    for name, fp in (("bloom_0.01", 0.01), ("exact_set", 1e-9)):
        work = Path(tempfile.mkdtemp(prefix="lines-bloom-"))
        try:
            src = work / "in.jsonl"
            src.write_text("".join(json.dumps(d) + "\n" for d in docs))
            step = dedup.Lines(method="bloom", ngram=13, threshold=0.8, fp_rate=fp)
            Pipeline(name="b", reader=readers.Jsonl(), steps=[step]).run(
                inputs=str(src), output=str(work / "out"), executor=LocalExecutor(1, progress=False), progress=False)
            import pyarrow.parquet as pq

            kept[name] = {r["id"]: r["text"] for p in (work / "out").glob("data/*.parquet")
                          for r in pq.read_table(p, columns=["id", "text"]).to_pylist()}
            out[name] = json.loads((work / "out" / "stats.json").read_text())["steps"][-1]["extra"]
        finally:
            shutil.rmtree(work, ignore_errors=True)
    a, b = kept["bloom_0.01"], kept["exact_set"]
    out["docs_identical_to_exact_set"] = sum(a.get(i) == b.get(i) for i in set(a) | set(b))
    out["docs"] = len(set(a) | set(b))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plant", action="store_true", help="also the set with planted boilerplate copies")
    ap.add_argument("--out", default=None, help="write the results here (JSON)")
    ap.add_argument("--dump", action="store_true", help="with --out: also each differing document's three texts")
    ap.add_argument("--only-planted", action="store_true", help="skip the set without planted copies")
    ap.add_argument("--bloom", action="store_true", help="only the Bloom mode's false-positive check (no datatrove)")
    args = ap.parse_args()
    base = load()
    if args.bloom:
        res = bloom_check(plant(base))
        print(json.dumps(res, indent=1))
        if args.out:
            Path(args.out).write_text(json.dumps(res, indent=1))
        return
    sets = {"real": base, **({"planted": plant(base)} if args.plant or args.only_planted else {})}
    if args.only_planted:
        del sets["real"]
    results = {}
    for name, docs in sets.items():
        work = Path(tempfile.mkdtemp(prefix="lines-bench-"))
        try:
            ours, our_s, extra = run_ours(docs, work / "ours")
            theirs, their_s = run_datatrove(docs, work / "dt")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        res = compare(docs, theirs, ours)
        res.update({"chars": sum(len(d["text"]) for d in docs), "seconds_ours": our_s, "seconds_datatrove": their_s,
                    "speedup": round(sum(their_s.values()) / sum(our_s.values()), 2),
                    "lines_removed": extra["lines_removed"], "docs_changed": extra["docs_changed"]})
        if args.dump:
            by_id = {d["id"]: d["text"] for d in docs}
            res["dumped"] = {i: {"original": by_id[i], "datatrove": theirs.get(i), "ours": ours.get(i)}
                             for i in res["different_ids"]}
        results[name] = res
        print(name, {k: v for k, v in res.items() if k != "different_ids"}, "first differences:",
              res["different_ids"][:10])
    results["max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
