"""Speed and memory of quality.Importance (DSIR) on the shared real text (issue 40, item 3).

Documents: the 697 Common Crawl documents and 486 Portuguese news documents of ../shared/data (`_data.WEB_AND_PT`),
repeated `--copies` times; the target is the clean English of ../shared/data (Botchan and WikiText-2's test split,
as plain text). CPU seconds (time.process_time, one core, best of `--repeat`) for:

  words      `curate.lang.words` alone: the floor every word-based step pays (the baseline of the ratios);
  featurize  the hashed unigram and bigram buckets of each document (`importance.featurize`);
  weigh      featurize + the log weight (one bincount over the buckets) + the Gumbel key: phase `weigh`'s work.

Then the whole step in a pipeline (`--workers`, default 1: in this process, so its CPU seconds are the run's):
documents per CPU second of the whole run (reading, the target's phase included), and the peak RSS of this process and of its worker processes (ru_maxrss), which stays flat as the
pool grows: a phase holds one batch of texts and one shard's keys (25 bytes a document), the driver 2^16 bins.

    .venv/bin/python benchmarks/dsir.py [--copies 4] [--repeat 3] [--workers 1] [--json benchmarks/dsir.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _data

from curate import Pipeline, quality, readers
from curate.core.stats import StepStats
from curate.io.readers import Jsonl
from curate.lang import words
from curate.quality import importance

TARGET = [_data.DATA / "text/clean_en/botchan_gutenberg8868.txt", _data.DATA / "text/clean_en/wikitext-2-test.txt"]


def load() -> list[tuple[str, str, str | None]]:
    """(id, text, lang) of the pool: web (language unknown, as before a language step) and Portuguese news."""
    out = []
    for path in _data.WEB_AND_PT:
        lang = "pt" if "bosque" in path.name else None
        out += [(d.id, d.text, lang) for d in Jsonl(unique_ids=False).read(str(path), StepStats("read"))]
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def micro(docs: list[tuple[str, str, str | None]], repeat: int) -> dict:
    texts, langs, ids = [d[1] for d in docs], [d[2] for d in docs], [d[0] for d in docs]
    diff = importance.log_probs(importance.np.ones(10_000), 1.0)

    def weigh() -> None:
        for i in range(0, len(texts), importance.READ_BATCH):
            flat, owner, _ = importance.featurize(texts[i:i + 1024], langs[i:i + 1024], 10_000)
            w = importance.np.bincount(owner, weights=diff[flat], minlength=len(texts[i:i + 1024]))
            importance.order_key(w + importance.gumbel(ids[i:i + 1024], 0))

    secs = {
        "words": best(lambda: [words(t, lang) for t, lang in zip(texts, langs, strict=True)], repeat),
        "featurize": best(lambda: importance.featurize(texts, langs, 10_000), repeat),
        "weigh": best(weigh, repeat),
    }
    n = len(docs)
    return {k: {"cpu_s": round(v, 3), "docs_per_s": round(n / v, 1), "x_words": round(v / secs["words"], 2)}
            for k, v in secs.items()}


def pipeline(docs: list[tuple[str, str, str | None]], workers: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="dsir-bench-"))
    try:
        pool = tmp / "pool.jsonl"
        with pool.open("w", encoding="utf-8") as f:
            for i, t, lang in docs:
                f.write(json.dumps({"id": i, "text": t, "lang": lang}) + "\n")
        step = quality.Importance([str(p) for p in TARGET], fraction=0.1, target_lang="en")
        pipe = Pipeline(name="dsir", reader=readers.Jsonl(unique_ids=False), steps=[step])
        t, cpu = time.perf_counter(), time.process_time()
        pipe.run(inputs=[str(pool)], output=str(tmp / "out"), workers=workers, progress=False)
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu  # CPU of this process: workers=1 runs here
        st = {s["name"]: s for s in json.loads((tmp / "out/stats.json").read_text())["steps"]}["importance"]
        secs = st["extra"]["seconds"]
        return {"docs": len(docs), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "phase_wall_s": secs,
                "docs_per_cpu_s": round(len(docs) / cpu, 1) if workers == 1 else None,
                "step_docs_per_s": round(len(docs) / sum(secs.values()), 1),
                "target_tokens": st["extra"]["target"]["tokens"], "kept": st["extra"]["kept"]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=4, help="the pool repeated this many times (ids made unique)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", help="append this run's figures to a JSON results file")
    args = ap.parse_args()
    base = load()
    docs = [(f"{i}~{c}", t, lang) for c in range(args.copies) for i, t, lang in base]
    result = {
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(), "python": sys.version.split()[0],
        "command": "python benchmarks/dsir.py " + " ".join(sys.argv[1:]),
        "micro_one_core": micro(base, args.repeat),
        "peak_rss_mib_before_pipeline": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "pipeline": pipeline(docs, args.workers),
        "peak_rss_mib": {"self": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                         "children": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)},
    }
    print(json.dumps(result, indent=1))
    if args.json:
        path = Path(args.json)
        runs = json.loads(path.read_text()) if path.exists() else []
        path.write_text(json.dumps([*runs, result], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
