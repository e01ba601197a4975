"""The default web pipeline end to end against datatrove's equivalent, on the same WARC files, one core each.

Peneira runs `pipelines/web.py` as `curate run` does (`Pipeline.run`, one worker, so in one process: read,
HttpStatus, extract.Main, Language, GopherRepetition, C4, GopherQuality, FineWeb, Pii, Parquet writer).
datatrove runs the same chain of its own steps through its `LocalPipelineExecutor` (one task, one worker):
`WarcReader` (warcio), `Trafilatura` (its default extractor, which runs in a sandbox process), `LanguageFilter`
(en + pt at 0.65 on the same lid.176.ftz file), `GopherRepetitionFilter`, `C4QualityFilter` (C4's own
settings, as web.py: 5 words a line, 3 sentences, terminal punctuation), `GopherQualityFilter`,
`FineWebQualityFilter`, `PIIFormatter`, `ParquetWriter`. What differs by design: datatrove has no HTTP-status
step, picks records by `WARC-Identified-Payload-Type` (or libmagic) rather than the HTTP Content-Type, and its
Gopher stop words are English-only.

Input: the WARC and WET files of ../shared/data/warc, copied `--copies` times under new names into a temporary
folder (the copies amortise the start-up of each side). Each side runs in its own fresh process, one
after the other; the CPU seconds are the process's and its children's (`RUSAGE_CHILDREN` of this driver, so the
trafilatura sandbox process is counted), the wall seconds the process's, interpreter start-up included; the
`run` columns count only the run call, after the imports. Documents kept are matched by (WARC-Record-ID, URL),
as multisets over the copies.

    .venv/bin/python benchmarks/pipeline.py --copies 8 --base-copies 1 --json benchmarks/pipeline.json

    .venv/bin/python benchmarks/pipeline.py --copies 0 --gold   # extraction F1 and CPU per gold set, both chains

    .venv/bin/python benchmarks/pipeline.py --files 12,60,120 --datatrove-python /tmp/dtvenv/bin/python \\
        --json benchmarks/pipeline_files.json   # whole processes, start-up included, and per further file

(/tmp/dtvenv: `python3 -m venv /tmp/dtvenv && /tmp/dtvenv/bin/pip install "datatrove[processing]" fasteners
faust-cchardet python-magic lxml_html_clean warcio spacy nltk pyarrow`; the datatrove side then runs in that venv.)

`--base-copies` runs both sides a second time on fewer copies: the difference is the CPU seconds per further
copy, the rate with start-up fully amortised, which the cost table (`--markdown`) projects from.

Needs, beside the project, the `bench` extra: datatrove and its WARC reader's dependencies (`pip install datatrove
faust-cchardet python-magic trafilatura fasttext-community fasteners`); FastWARC for `--reader fastwarc` (extra `fast`).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("PENEIRA_SHARED_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
LID = os.path.join(DATA, "models", "lid.176.ftz")
NEEDS = {"datatrove": "datatrove", "cchardet": "faust-cchardet", "magic": "python-magic",
         "trafilatura": "trafilatura", "fasttext": "fasttext-community", "fasteners": "fasteners"}


def input_files() -> list[str]:
    """The WARC and WET files of the shared data (WAT holds no page), sorted."""
    found = glob.glob(os.path.join(DATA, "warc", "**", "*.warc.gz"), recursive=True)
    found += glob.glob(os.path.join(DATA, "warc", "**", "*.warc.wet.gz"), recursive=True)
    return sorted(found)


def link_copies(folder: str, copies: int) -> list[str]:
    """`copies` copies of each input under distinct names, in a temporary folder: every copy is read and
    processed again (a run reads a file linked twice once, so these are real copies)."""
    paths = []
    for k in range(copies):
        for src in input_files():
            dst = os.path.join(folder, f"c{k:02d}_{os.path.basename(src)}")
            shutil.copyfile(src, dst)
            paths.append(dst)
    return paths


# ------------------------------------------------------------------ the two sides, each in its own process

def timed_iter(it, cpu: dict, key: str):
    """`it`, with the CPU seconds spent in each of its `next` calls added to cpu[key] (upstream work included)."""
    it = iter(it)
    while True:
        t = time.process_time()
        try:
            x = next(it)
        except StopIteration:
            cpu[key] = cpu.get(key, 0.0) + time.process_time() - t
            return
        cpu[key] = cpu.get(key, 0.0) + time.process_time() - t
        yield x


def time_peneira_classes(pipeline, cpu: dict) -> None:
    """CPU seconds per step (`apply_batch`) and of the reader (`read`), patched on the classes: each task
    unpickles its own copy of the stage, so instances patched here would not be the ones that run."""
    def wrap_batch(cls, name):
        plain = cls.apply_batch

        def apply_batch(self, docs, _plain=plain, _name=name):
            t = time.process_time()
            try:
                return _plain(self, docs)
            finally:
                cpu[_name] = cpu.get(_name, 0.0) + time.process_time() - t
        cls.apply_batch = apply_batch

    for step in pipeline.steps:
        wrap_batch(type(step), step.name)
    rcls = type(pipeline.reader)
    plain_read = rcls.read
    rcls.read = lambda self, *a, _plain=plain_read, **k: timed_iter(_plain(self, *a, **k), cpu, "read")


def run_peneira(inputs: str, out: str, reader: str) -> dict:
    """pipelines/web.py through `Pipeline.run` with one worker: the kept (file, url) pairs and its step times."""
    import pyarrow.parquet as pq

    sys.path.insert(0, ROOT)
    from curate import Pipeline, readers

    pipeline = Pipeline.from_file(os.path.join(ROOT, "pipelines", "web.py"))
    if reader != "web":
        pipeline.reader = (readers.FastWarc if reader == "fastwarc" else readers.Warc)(source="web")
    files = sorted(glob.glob(os.path.join(inputs, "*")))
    cpu: dict = {}
    time_peneira_classes(pipeline, cpu)
    t0, w0 = time.process_time(), time.perf_counter()
    pipeline.run(inputs=files, output=out, workers=1, progress=False)
    run_cpu, run_wall = time.process_time() - t0, time.perf_counter() - w0
    cpu["write and runner"] = run_cpu - sum(cpu.values())
    with open(os.path.join(out, "stats.json")) as f:
        stats = json.load(f)
    kept = []
    for shard in sorted(glob.glob(os.path.join(out, "data", "*.parquet"))):
        for row in pq.read_table(shard, columns=["url", "metadata"]).to_pylist():
            kept.append([json.loads(row["metadata"] or "{}").get("warc_record_id"), row["url"]])
    return {"run_cpu": run_cpu, "run_wall": run_wall, "kept": kept, "stats": stats, "step_cpu": cpu,
            "reader_class": type(pipeline.reader).__name__}


def accept_fasttext_community() -> None:
    """datatrove asks for the `fasttext-numpy2-wheel` distribution by name; the project's venv has the same
    `fasttext` module from `fasttext-community` (installing both would overwrite one with the other)."""
    from datatrove.utils import _import_utils

    plain = _import_utils._is_distribution_available
    _import_utils._is_distribution_available = lambda name: name == "fasttext-numpy2-wheel" or plain(name)


def datatrove_steps(inputs: str, out: str) -> list:
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.formatters import PIIFormatter
    from datatrove.pipeline.readers import WarcReader
    from datatrove.pipeline.writers import ParquetWriter
    from datatrove.utils import lid

    accept_fasttext_community()
    lid.cached_asset_path_or_download = lambda *a, **k: LID  # our model file (its lid.176.bin needs the internet)
    lang = LanguageFilter(languages=["en", "pt"], language_threshold=0.65)
    return [WarcReader(inputs, glob_pattern="*.gz"), Trafilatura(), lang, GopherRepetitionFilter(),
            C4QualityFilter(min_num_sentences=3, min_words_per_line=5), GopherQualityFilter(),
            FineWebQualityFilter(), PIIFormatter(), ParquetWriter(os.path.join(out, "data"))]


def run_datatrove(inputs: str, out: str) -> dict:
    """The same chain in datatrove, through its executor (one task, one worker: in this process)."""
    import pyarrow.parquet as pq
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.base import PipelineStep

    steps = datatrove_steps(inputs, out)
    names = [s.name for s in steps]
    incl: dict = {}  # CPU seconds inside each step's generator, its upstream steps included
    plain = PipelineStep.__call__
    PipelineStep.__call__ = lambda self, data, rank=0, world_size=1: timed_iter(
        plain(self, data, rank, world_size), incl, self.name)
    ex = LocalPipelineExecutor(pipeline=steps, tasks=1, workers=1, logging_dir=os.path.join(out, "logs"))
    t0, w0 = time.process_time(), time.perf_counter()
    ex.run()
    run_cpu, run_wall = time.process_time() - t0, time.perf_counter() - w0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the extractor's sandbox processes, reaped
    child_cpu = children.ru_utime + children.ru_stime
    cpu = {n: incl.get(n, 0.0) - (incl.get(names[i - 1], 0.0) if i else 0.0) for i, n in enumerate(names)}
    cpu[names[1]] += child_cpu  # the extraction itself runs in the sandbox process
    cpu["executor"] = run_cpu + child_cpu - sum(cpu.values())
    kept = []
    for shard in sorted(glob.glob(os.path.join(out, "data", "*.parquet"))):
        for row in pq.read_table(shard, columns=["id", "metadata"]).to_pylist():
            kept.append([row["id"], row["metadata"].get("url")])
    with open(os.path.join(out, "logs", "stats.json")) as f:  # the executor's merged stats, one entry per step
        step_secs = {s["name"].split(": ", 1)[-1]: (t["total"] if isinstance(t := s["time_stats"], dict) else t)
                     for s in json.load(f)}  # datatrove 0.10.1 writes the total alone
    return {"run_cpu": run_cpu + child_cpu, "run_wall": run_wall, "kept": kept, "steps": step_secs,
            "step_cpu": cpu}


PYTHON = {"peneira": sys.executable, "datatrove": sys.executable}  # --datatrove-python: datatrove in its own venv


def side(name: str, inputs: str, reader: str) -> dict:
    """One side in a fresh interpreter: its result, the CPU and wall seconds of the whole process tree, and its
    peak RSS (`wait4`: the process's own, or a child's it reaped if larger)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # no PYTHONDONTWRITEBYTECODE: with it every stale bytecode cache is compiled again at each start (issue 45)
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PENEIRA_LID_MODEL": LID,
           "PENEIRA_SHARED_DATA": DATA, "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se:
        w0 = time.perf_counter()
        proc = subprocess.Popen([PYTHON[name], os.path.abspath(__file__), "--worker", name, "--inputs", inputs,
                                 "--out", os.path.join(out, "run"), "--reader", reader], stdout=so, stderr=se, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - w0
        so.seek(0), se.seek(0)
        stdout, stderr = so.read(), se.read()
    if proc.returncode:
        sys.exit(f"{name} side failed:\n{stderr[-4000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = json.loads(stdout.strip().splitlines()[-1])
    res["cpu"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    res["wall"] = wall
    res["rss_mib"] = usage.ru_maxrss / 1024
    return res


# ------------------------------------------------------------------ report

def agreement(a: list, b: list) -> dict:
    """Kept documents in common, matched by (record id, url) as multisets, and their Jaccard."""
    ca, cb = Counter(map(tuple, a)), Counter(map(tuple, b))
    both = sum((ca & cb).values())
    union = sum((ca | cb).values())
    return {"both": both, "only_peneira": sum(ca.values()) - both, "only_datatrove": sum(cb.values()) - both,
            "jaccard": both / union if union else 1.0}


def stage_seconds(stats: dict) -> dict:
    """Seconds per step of the Peneira run (stats.json: read, then each step in order)."""
    return {s["name"]: s["seconds"] for s in stats["steps"]}


def report(res: dict) -> None:
    print(f"{res['files']} WARC/WET files, one process each side, Peneira's reader {res['reader_class']}\n")
    print(f"{'copies':>6} {'MiB':>6}  {'side':<10}{'CPU s':>9}{'run CPU s':>11}{'wall s':>9}{'kept':>7}")
    for n, run in res["runs"].items():
        for name in ("peneira", "datatrove"):
            r = run[name]
            print(f"{n:>6} {run['mib']:>6.1f}  {name:<10}{r['cpu']:>9.2f}{r['run_cpu']:>11.2f}{r['wall']:>9.2f}"
                  f"{r['kept']:>7}")
    top = res["runs"][str(res["copies"])]
    p, d, a = top["peneira"], top["datatrove"], top["agreement"]
    print(f"\nat {res['copies']} copies, datatrove / Peneira: CPU {d['cpu'] / p['cpu']:.1f}x (whole process), "
          f"{d['run_cpu'] / p['run_cpu']:.1f}x (run only); wall {d['wall'] / p['wall']:.1f}x")
    if "marginal" in res:
        m = res["marginal"]
        print(f"per further copy (CPU s): Peneira {m['peneira']:.3f}, datatrove {m['datatrove']:.3f}: "
              f"{m['datatrove'] / m['peneira']:.1f}x (start-up fully amortised)")
    print(f"kept: Peneira {p['kept']}, datatrove {d['kept']}; both {a['both']}, only Peneira "
          f"{a['only_peneira']}, only datatrove {a['only_datatrove']}, Jaccard {a['jaccard']:.3f}")
    print(f"\nCPU seconds per step at {res['copies']} copies (each step's own; datatrove's extractor includes its "
          "sandbox process):")
    for name in ("peneira", "datatrove"):
        for step, secs in top[name]["step_cpu"].items():
            print(f"  {name:<10}{step:<22}{secs:>8.3f}  {secs / top[name]['run_cpu']:>6.1%}")


# ------------------------------------------------------------------ markdown for the docs, from the JSON

STAGES = {  # each side's steps by the stage of the cost table
    "read": ("read", "Warc"),
    "extract": ("http_status", "extract", "Trafilatura"),
    "filters": ("language", "gopher_repetition", "c4", "gopher_quality", "fineweb", "pii", "Language ID",
                "Gopher Repetition", "C4 Quality", "Gopher Quality", "FineWeb Quality", "PII"),
    "write (and the runner)": ("write and runner", "Parquet", "executor"),
}
TB = 1e12  # bytes of .warc.gz input


def stage_of(step: str) -> str:
    bare = step.split(" ", 1)[-1] if not step[:1].isascii() else step  # datatrove's names start with an emoji
    return next(k for k, names in STAGES.items() if step in names or bare in names)


def per_copy_stages(res: dict, side_: str) -> dict:
    """CPU seconds per further copy of the inputs, by stage: the top run's minus the base run's, per copy."""
    lo, hi = res["runs"][str(min(map(int, res["runs"])))], res["runs"][str(res["copies"])]
    n = res["copies"] - min(map(int, res["runs"]))
    out = dict.fromkeys(STAGES, 0.0)
    for step, secs in hi[side_]["step_cpu"].items():
        out[stage_of(step)] += (secs - lo[side_]["step_cpu"].get(step, 0.0)) / n
    return out


def step_table(res: dict) -> list[str]:
    """Each side's steps in its own order: CPU seconds at the top run and per further copy (the top run's minus
    the base run's, per copy), so one-off set-up shows in the first column and not in the second."""
    lo, hi = res["runs"][str(min(map(int, res["runs"])))], res["runs"][str(res["copies"])]
    n = res["copies"] - min(map(int, res["runs"]))
    out = [f"CPU seconds per step, at {res['copies']} copies and per further copy:", "",
           "| side | step | CPU s | share | CPU s per further copy |", "|---|---|---:|---:|---:|"]
    for side_ in ("peneira", "datatrove"):
        for step, secs in hi[side_]["step_cpu"].items():
            per = (secs - lo[side_]["step_cpu"].get(step, 0.0)) / n
            bare = step.split(" ", 1)[-1] if not step[:1].isascii() else step
            out.append(f"| {side_} | {bare} | {secs:.3f} | {secs / hi[side_]['run_cpu']:.1%} | {per:.4f} |")
    return out


def markdown(res: dict, usd: float, instance: str, dedup_ms: float, tok_per_s: float, chars_per_tok: float) -> str:
    lines = [f"Command: `.venv/bin/python {res['command']}`; Peneira's reader: `{res['reader_class']}`.", "",
             "| copies | MiB of .warc.gz | side | CPU s (process) | CPU s (run) | wall s | kept |",
             "|---:|---:|---|---:|---:|---:|---:|"]
    for n, run in res["runs"].items():
        for name in ("peneira", "datatrove"):
            r = run[name]
            lines.append(f"| {n} | {run['mib']:.1f} | {name} | {r['cpu']:.2f} | {r['run_cpu']:.2f} | {r['wall']:.2f} "
                         f"| {r['kept']} |")
    top = res["runs"][str(res["copies"])]
    p, d, a = top["peneira"], top["datatrove"], top["agreement"]
    lines += ["", f"- datatrove / Peneira CPU seconds at {res['copies']} copies: **{d['cpu'] / p['cpu']:.1f}x** "
              f"(whole processes, start-up included), {d['run_cpu'] / p['run_cpu']:.1f}x (run call only)"
              + (f"; per further copy (start-up amortised): **{res['marginal']['datatrove'] / res['marginal']['peneira']:.1f}x**"
                 f" ({res['marginal']['peneira']:.3f} vs {res['marginal']['datatrove']:.3f} s)" if "marginal" in res else ""),
              f"- kept at {res['copies']} copies: Peneira {p['kept']}, datatrove {d['kept']}; in both {a['both']}, only "
              f"Peneira {a['only_peneira']}, only datatrove {a['only_datatrove']} (Jaccard {a['jaccard']:.3f})"]
    if "marginal" not in res:
        return "\n".join(lines)
    lines += ["", ""] + step_table(res)
    ps, ds = per_copy_stages(res, "peneira"), per_copy_stages(res, "datatrove")
    gib = res["marginal_mib"] / 1024
    hours = lambda sec: sec / gib * (TB / 2**30) / 3600  # noqa: E731  CPU-hours per TB of input
    lines += ["", "", f"Cost per TB of .warc.gz input (projection; {instance}, ${usd:.4f} per core-hour):", "",
              "| stage | Peneira CPU s per GiB | datatrove CPU s per GiB | Peneira core-hours / TB | datatrove "
              "core-hours / TB | Peneira $ / TB | datatrove $ / TB |", "|---|---:|---:|---:|---:|---:|---:|"]
    for k in STAGES:
        lines.append(f"| {k} | {ps[k] / gib:.2f} | {ds[k] / gib:.2f} | {hours(ps[k]):.1f} | {hours(ds[k]):.1f} "
                     f"| {hours(ps[k]) * usd:.2f} | {hours(ds[k]) * usd:.2f} |")
    pt, dt = sum(ps.values()), sum(ds.values())
    docs_tb = p["kept"] / (top["mib"] / 1024) * (TB / 2**30)
    chars_tb = p["kept_chars"] / (top["mib"] / 1024) * (TB / 2**30)
    dd = docs_tb * dedup_ms / 1e3 / 3600
    tk = chars_tb / chars_per_tok / tok_per_s / 3600
    lines += [f"| **read to write** | {pt / gib:.2f} | {dt / gib:.2f} | **{hours(pt):.1f}** | **{hours(dt):.1f}** | "
              f"**{hours(pt) * usd:.2f}** | **{hours(dt) * usd:.2f}** |",
              f"| dedup, Exact + MinHash, all phases ({docs_tb / 1e6:.1f} M kept documents / TB at {dedup_ms} ms each) "
              f"| | not run | {dd:.2f} | | {dd * usd:.3f} | |",
              f"| tokenize ({chars_tb / chars_per_tok / 1e9:.2f} B tokens / TB at {tok_per_s:,.0f} tokens/s) "
              f"| | not run | {tk:.2f} | | {tk * usd:.3f} | |",
              f"| **pipeline** | | | **{hours(pt) + dd + tk:.1f}** | {hours(dt):.1f} + dedup + tokenize "
              f"| **{(hours(pt) + dd + tk) * usd:.2f}** | |"]
    if "pages" in top:
        pages = (top["pages"] - res["runs"][str(min(map(int, res["runs"])))]["pages"]) / (
            res["copies"] - min(map(int, res["runs"])))
        crawl = 2.7e9  # pages of one Common Crawl snapshot, the assumption of the projection above it
        lines += ["", f"Per page read ({pages:.0f} a copy): Peneira {pt / pages * 1e3:.2f} ms, datatrove "
                  f"{dt / pages * 1e3:.2f} ms of CPU, read to write; for a crawl of {crawl / 1e9:.1f} B pages: "
                  f"Peneira {pt / pages * crawl / 3600:,.0f} core-hours (${pt / pages * crawl / 3600 * usd:,.0f}), "
                  f"datatrove {dt / pages * crawl / 3600:,.0f} (${dt / pages * crawl / 3600 * usd:,.0f})."]
    return "\n".join(lines)


# ------------------------------------------------------------------ extraction quality of the two chains

def gold_quality() -> dict:
    """Per gold set of ../shared/data/extraction: mean token F1, pages under F1 0.5 and CPU seconds of the two
    chains' extractors as their pipelines configure them: web.py's `extract.Main()` (through `Step.apply`, as the
    run calls it) and datatrove's `Trafilatura()` (its `extract`, called directly: no sandbox process)."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from _gold import SETS, bag, pages, prf
    from datatrove.pipeline.extractors import Trafilatura

    from curate import Document, extract

    ours, theirs = extract.Main(), Trafilatura()
    ours.setup()
    out = {}
    for name in SETS:
        items = list(pages(name))
        res = {}
        for label, fn in (("peneira", lambda html, url: _main_text(ours, html, url, Document)),
                          ("datatrove", lambda html, _url: theirs.extract(html) or "")):
            t0, f1 = time.process_time(), []
            texts = [fn(html, url) for _, html, url, _ in items]
            cpu = time.process_time() - t0
            f1 = [prf(bag(t), bag(gold))[2] for t, (_, _, _, gold) in zip(texts, items, strict=True)]
            res[label] = {"f1": sum(f1) / len(f1), "under_half": sum(x < 0.5 for x in f1), "cpu": cpu}
        out[name] = {"pages": len(items), **res}
    return out


def _main_text(step, html: str, url: str | None, document) -> str:
    from curate import Reject

    res = step.apply(document(id="g", text="", source="web", url=url, html=html))
    return "" if isinstance(res, Reject) else res.text


def print_gold(gold: dict) -> None:
    print(f"\n{'gold set':<17}{'pages':>6}{'F1 P':>8}{'F1 dt':>8}{'<0.5 P':>8}{'<0.5 dt':>8}"
          f"{'CPU s P':>9}{'CPU s dt':>10}{'speed':>8}")
    for name, g in gold.items():
        p, d = g["peneira"], g["datatrove"]
        print(f"{name:<17}{g['pages']:>6}{p['f1']:>8.4f}{d['f1']:>8.4f}{p['under_half']:>8}{d['under_half']:>8}"
              f"{p['cpu']:>9.2f}{d['cpu']:>10.2f}{d['cpu'] / p['cpu']:>7.1f}x")


def link_files(folder: str, n: int) -> list[str]:
    """`n` files: the inputs in order, again and again under new names (as `link_copies`, cut at `n`)."""
    paths = link_copies(folder, -(-n // len(input_files())))
    for extra in paths[n:]:
        os.remove(extra)
    return paths[:n]


def measure(copies: int, reader: str, files: int = 0) -> dict:
    """Both sides over `copies` copies of the inputs (or the first `files` files of as many copies), datatrove
    first."""
    with tempfile.TemporaryDirectory() as inputs:
        paths = link_files(inputs, files) if files else link_copies(inputs, copies)
        run = {"mib": sum(os.path.getsize(p) for p in paths) / 2**20}
        run["datatrove"] = side("datatrove", inputs, reader)
        run["peneira"] = side("peneira", inputs, reader)
    stats = run["peneira"].pop("stats")
    run["peneira"]["steps"] = stage_seconds(stats)
    run["peneira"]["kept_chars"] = stats["steps"][-1]["chars_out"]
    run["pages"] = stats["steps"][0]["docs_out"]  # documents the reader made (HTML responses and WET records)
    run["agreement"] = agreement(run["peneira"]["kept"], run["datatrove"]["kept"])
    for name in ("peneira", "datatrove"):  # counts only in the JSON: the (id, url) lists are long
        run[name]["kept"] = len(run[name]["kept"])
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=4,
                    help="times each input file is read (as a new file); 0: no pipeline run (with --gold: that alone)")
    ap.add_argument("--base-copies", type=int, default=0,
                    help="also run at this many copies; the difference gives the CPU seconds per further copy")
    ap.add_argument("--reader", choices=("web", "warc", "fastwarc"), default="web",
                    help="Peneira's WARC reader: web.py's own (readers.fastest_warc), or this one")
    ap.add_argument("--json", help="write the results here (docs are generated from it)")
    ap.add_argument("--gold", action="store_true",
                    help="also score both chains' extractors on the extraction gold sets (F1, CPU per set)")
    ap.add_argument("--markdown", metavar="JSON", help="print the docs' tables from a results JSON, run nothing")
    ap.add_argument("--usd-per-core-hour", type=float, default=0.03825,
                    help="price of one core (vCPU) hour: AWS c6a.large on demand, us-east-1, $0.0765/h for 2 vCPU")
    ap.add_argument("--instance", default="AWS c6a (AMD EPYC Zen 3), on demand, us-east-1")
    ap.add_argument("--dedup-ms-per-doc", type=float, default=0.208,
                    help="CPU ms per document of Exact + MinHash, all phases (benchmarks/minhash.py, 1 M documents)")
    ap.add_argument("--tokens-per-s", type=float, default=416_269,
                    help="tokens per CPU second of curate tokenize (benchmarks/tokenization.py)")
    ap.add_argument("--chars-per-token", type=float, default=2.55,
                    help="characters per token (benchmarks/tokenization.py: 2.8 M characters, 1.1 M tokens)")
    ap.add_argument("--files", help="whole processes at these numbers of input files (e.g. 12,60,120: the inputs "
                    "copied in turn), start-up included, and per further file between the two largest; not with --copies")
    ap.add_argument("--datatrove-python", help="the interpreter of a venv with datatrove (e.g. /tmp/dtvenv/bin/python): "
                    "its side runs there, so datatrove's dependencies need not share the project's venv")
    ap.add_argument("--worker", choices=("peneira", "datatrove"), help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.markdown:
        with open(args.markdown) as f:
            res = json.load(f)
        if res.get("files_mode"):
            print(files_markdown(res))
            return
        with open(args.markdown) as f:
            print(markdown(json.load(f), args.usd_per_core_hour, args.instance, args.dedup_ms_per_doc,
                           args.tokens_per_s, args.chars_per_token))
        return
    if args.worker:
        fn = run_peneira if args.worker == "peneira" else (lambda i, o, _r: run_datatrove(i, o))
        print(json.dumps(fn(args.inputs, args.out, args.reader)))
        return
    if args.datatrove_python:
        PYTHON["datatrove"] = args.datatrove_python
        if args.gold:
            sys.exit("--gold runs datatrove's extractor in this interpreter: not with --datatrove-python")
    missing = [pip for mod, pip in NEEDS.items() if not _importable(mod, PYTHON["datatrove"])]
    if missing:
        sys.exit(f"benchmarks/pipeline.py needs: pip install {' '.join(missing)} (benchmark only; or the "
                 "project's bench extra)")
    if args.files:
        return files_mode(args)
    if args.copies == 0:  # --copies 0 --gold: the gold sets alone
        print_gold(gold_quality() if args.gold else {})
        return
    res = {"copies": args.copies, "files": len(input_files()), "reader": args.reader,
           "command": " ".join(["benchmarks/pipeline.py", *sys.argv[1:]]), "runs": {}}
    for n in sorted({args.copies, args.base_copies} - {0}):
        res["runs"][str(n)] = measure(n, args.reader)
    res["reader_class"] = res["runs"][str(args.copies)]["peneira"]["reader_class"]
    if args.base_copies and args.base_copies != args.copies:
        lo, hi = res["runs"][str(args.base_copies)], res["runs"][str(args.copies)]
        res["marginal"] = {k: (hi[k]["cpu"] - lo[k]["cpu"]) / (args.copies - args.base_copies)
                           for k in ("peneira", "datatrove")}
        res["marginal_mib"] = (hi["mib"] - lo["mib"]) / (args.copies - args.base_copies)
    report(res)
    if args.gold:
        res["gold"] = gold_quality()
        print_gold(res["gold"])
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


def _importable(mod: str, python: str = sys.executable) -> bool:
    import importlib.util

    if python == sys.executable:
        return importlib.util.find_spec(mod) is not None
    return subprocess.run([python, "-c", f"import importlib.util, sys; sys.exit(importlib.util.find_spec({mod!r}) is None)"],
                          check=False).returncode == 0


def files_mode(args) -> None:
    """Whole processes at each number of files (`--files`), and the CPU seconds per further file between the two
    largest: the fixed cost of each side is in the first figures, not in the last (issue 45)."""
    counts = sorted(int(n) for n in args.files.split(","))
    cpu = Path("/proc/cpuinfo")
    model = next((ln.split(":", 1)[1].strip() for ln in cpu.read_text().splitlines() if ln.startswith("model name")),
                 "") if cpu.exists() else ""
    res = {"files_mode": True, "counts": counts, "distinct_inputs": len(input_files()), "reader": args.reader,
           "machine": f"{model}, {os.cpu_count()} cores", "load_1min_before": round(os.getloadavg()[0], 2),
           "command": " ".join(["benchmarks/pipeline.py", *sys.argv[1:]]), "runs": {}}
    for n in counts:
        res["runs"][str(n)] = run = measure(0, args.reader, files=n)
        run.pop("agreement", None)
        for name in ("peneira", "datatrove"):
            run[name] = {k: run[name][k] for k in ("cpu", "run_cpu", "wall", "rss_mib", "kept")}
        print(json.dumps({n: {k: run[k]["cpu"] for k in ("peneira", "datatrove")}}), flush=True)
    lo, hi = res["runs"][str(counts[-2])], res["runs"][str(counts[-1])]
    res["per_further_file"] = {k: (hi[k]["cpu"] - lo[k]["cpu"]) / (counts[-1] - counts[-2])
                               for k in ("peneira", "datatrove")}
    res["load_1min_after"] = round(os.getloadavg()[0], 2)
    print(files_markdown(res))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


def files_markdown(res: dict) -> str:
    """The docs' table of `--files` results: whole processes, start-up included, and per further file."""
    m = res["per_further_file"]
    rows = [f"Machine: {res['machine']}, load average {res['load_1min_before']} before, {res['load_1min_after']} after "
            f"(shared: CPU seconds, user + sys of each side's process tree, not wall). Command: `.venv/bin/python "
            f"{res['command']}`; the {res['distinct_inputs']} WARC/WET files of ../shared/data/warc copied in turn.",
            "", "| files | MiB of input | Peneira CPU s | datatrove CPU s | datatrove / Peneira | Peneira peak RSS MiB "
            "| datatrove peak RSS MiB |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for n, r in res["runs"].items():
        p, d = r["peneira"], r["datatrove"]
        rows.append(f"| {n} | {r['mib']:.1f} | {p['cpu']:.2f} | {d['cpu']:.2f} | **{d['cpu'] / p['cpu']:.1f}x** | "
                    f"{p['rss_mib']:.0f} | {d['rss_mib']:.0f} |")
    lo, hi = res["counts"][-2], res["counts"][-1]
    rows.append(f"| per further file ({lo} to {hi}) | | {m['peneira']:.3f} | {m['datatrove']:.3f} | "
                f"**{m['datatrove'] / m['peneira']:.1f}x** | | |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
