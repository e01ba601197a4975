"""Scale benchmark: how the driver's and each task's memory grow with the document count.

    .venv/bin/python benchmarks/scale.py generate --docs 5000000 --dir /tmp/peneira-scale/corpus
    .venv/bin/python benchmarks/scale.py run --docs 1000000 --dir /tmp/peneira-scale/corpus --workers 2
    .venv/bin/python benchmarks/scale.py run --docs 5000000 --skip-tokens ...; ... tokens --docs 5000000
    .venv/bin/python benchmarks/scale.py tasks --docs 1000000   # one task per phase, alone, on a finished run
    .venv/bin/python benchmarks/scale.py token-files --files 60 --work /tmp/peneira-tokmem   # mix/tokenize vs files
    .venv/bin/python benchmarks/scale.py lines --docs 1000000 --dir /tmp/peneira-scale/corpus   # dedup.Lines alone

`generate` writes a corpus of short documents (40-70 words, about 300 characters) in Parquet shards
of 100,000: words drawn i.i.d. from the unigram frequencies of real text (WikiText, Botchan for the
"good" half; SMS spam and web chat logs for the "bad" half, so the quality model has something to
separate), and in every shard after the first, 5% near-duplicates (one word replaced: true Jaccard
about 0.8) and 2% exact copies (uppercased) of documents of the shard before. It holds one shard in
memory at a time, so 5 M documents take a few minutes and about 1.5 GB of disk.

`run` reads the first `--docs` documents (whole shards) through `dedup.Exact`, `dedup.MinHash` and
`quality.TopFraction` on a `LocalExecutor(--workers)`, then `curate.tokens.mix` and
`curate.tokens.tokenize` on the result, and prints the peak RSS of the driver process and of the
largest task of each phase. Every phase runs in pool processes (never in the driver, even when it has
one task), so the driver's figure is its own state only. A task's figure is its worker process's
peak (`ru_maxrss`), which includes the interpreter and imported libraries (~150-250 MiB).

`token-files` isolates mix and tokenize: `--files` Parquet files of `--file-docs` documents each (the
same generator's words, no duplicates), a 4,096-token BPE trained on the first, then mix + tokenize
on a `LocalExecutor(--workers)` as `run` calls them, and each of their phases' first task again alone
in a fresh process. Every file is the same size, so no figure should move with `--files`.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import _data  # noqa: F401  (puts the checkout first on sys.path)
import numpy as np
from _data import DATA

SHARD_DOCS = 100_000
NEAR_FRAC, EXACT_FRAC = 0.05, 0.02


# ---------------------------------------------------------------- the corpus


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z']+|[.,!?]", text)


def vocabularies() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(words, probabilities) of the good and the bad half, from real text in the shared data."""
    good = (DATA / "text/clean_en/wikitext-2-test.txt").read_text(encoding="utf-8")
    good += (DATA / "text/clean_en/botchan_gutenberg8868.txt").read_text(encoding="utf-8")
    rows = (DATA / "text/low_quality/SMSSpamCollection.tsv").read_text(encoding="utf-8").splitlines()[1:]
    bad = "\n".join(r.split("\t", 1)[-1] for r in rows)
    with zipfile.ZipFile(DATA / "text/low_quality/nltk_webtext.zip") as z:
        bad += "\n".join(z.read(n).decode("latin-1") for n in z.namelist() if n.endswith(".txt"))

    def table(text: str) -> tuple[np.ndarray, np.ndarray]:
        counts = collections.Counter(w for w in _words(text.replace("<unk>", " ")))
        words = np.array(list(counts), dtype=object)
        freq = np.array(list(counts.values()), dtype=np.float64)
        return words, freq / freq.sum()

    return table(good), table(bad)


def _texts(words: np.ndarray, idx: np.ndarray, lengths: np.ndarray) -> list[str]:
    return [" ".join(words[row[:n]]) for row, n in zip(idx, lengths, strict=True)]


def generate(docs: int, out: Path, seed: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    (gw, gp), (bw, bp) = vocabularies()
    prev: list[str] | None = None
    t0 = time.perf_counter()
    for s in range(0, (docs + SHARD_DOCS - 1) // SHARD_DOCS):
        rng = np.random.default_rng([seed, s])
        n = min(SHARD_DOCS, docs - s * SHARD_DOCS)
        lengths = rng.integers(40, 71, n)
        good = rng.random(n) < 0.5
        texts = [""] * n
        for flag, (w, p) in ((True, (gw, gp)), (False, (bw, bp))):
            sel = np.flatnonzero(good == flag)
            idx = rng.choice(len(w), size=(len(sel), 70), p=p)
            for i, t in zip(sel.tolist(), _texts(w, idx, lengths[sel]), strict=True):
                texts[i] = t
        planted = np.zeros(n, dtype=np.int8)  # 0 fresh, 1 near copy, 2 exact copy (uppercased)
        if prev is not None:
            kind = rng.random(n)
            src = rng.integers(0, len(prev), n)
            for i in np.flatnonzero(kind < NEAR_FRAC + EXACT_FRAC).tolist():
                words = prev[src[i]].split(" ")
                if kind[i] < NEAR_FRAC:
                    words[rng.integers(len(words))] = f"edit{rng.integers(10**9)}"
                    texts[i], planted[i] = " ".join(words), 1
                else:
                    texts[i], planted[i] = prev[src[i]].upper(), 2
        ids = [f"d{s * SHARD_DOCS + i:09d}" for i in range(n)]
        table = pa.table({"id": ids, "text": texts, "planted": planted})
        pq.write_table(table, out / f"shard-{s:05d}.parquet", compression="zstd", row_group_size=10_000)
        prev = texts
        print(f"shard {s}: {n:,} docs, {time.perf_counter() - t0:.0f} s", flush=True)


# ---------------------------------------------------------------- measuring


def _kib_to_mib(kib: int) -> float:
    return kib / 1024  # Linux ru_maxrss is in KiB


def _measured(fn, rss_dir: str, phase: str, item, progress=None):
    """Run one task, then record this worker's peak RSS so far (a fresh pool per phase: the phase's peak)."""
    from curate.run.executors.base import accepts_progress

    result = fn(item, progress=progress) if progress is not None and accepts_progress(fn) else fn(item)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with open(os.path.join(rss_dir, f"{os.getpid()}-{time.monotonic_ns()}.json"), "w") as f:
        json.dump({"phase": phase, "kib": peak}, f)
    return result


def fresh_executor(workers: int, rss_dir: Path, *stale: Path):
    """A measured executor writing its peaks to an empty `rss_dir`, the `stale` outputs of a former run removed."""
    for d in (*stale, rss_dir):
        shutil.rmtree(d, ignore_errors=True)
    rss_dir.mkdir(parents=True)
    return measured_executor(workers, str(rss_dir))


def measured_executor(workers: int, rss_dir: str):
    """A LocalExecutor that runs every phase in a fresh pool, even a one-task phase, and records peaks per phase."""
    from curate.run.executors.base import Progress, accepts_progress
    from curate.run.executors.local import LocalExecutor

    class Measured(LocalExecutor):
        phases: list[tuple[str, float, int]] = []  # (phase, seconds, tasks), in order

        def map(self, fn, items, desc="tasks", labels=()):
            wrapped = functools.partial(_measured, fn, rss_dir, desc)
            bar = Progress(len(items), desc, self.progress, live=accepts_progress(wrapped))
            outcomes = [(False, ("not run", ""))] * len(items)
            t = time.perf_counter()
            try:
                if items:
                    self._pool_map(wrapped, items, outcomes, bar, True)
            finally:
                bar.close()
            self.phases.append((desc, time.perf_counter() - t, len(items)))
            driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            with open(os.path.join(rss_dir, f"driver-{time.monotonic_ns()}.json"), "w") as f:
                json.dump({"phase": desc, "kib": driver, "driver": True}, f)
            return self._collect(outcomes, labels)

    return Measured(workers, progress=False)


def phase_peaks(rss_dir: str) -> dict[str, dict[str, float]]:
    """Per phase: the largest task's peak and the driver's peak so far, in MiB."""
    out: dict[str, dict[str, float]] = {}
    for name in sorted(os.listdir(rss_dir)):
        with open(os.path.join(rss_dir, name)) as f:
            r = json.load(f)
        row = out.setdefault(_phase_name(r["phase"]), {"task": 0.0, "driver": 0.0, "tasks": 0})
        key = "driver" if r.get("driver") else "task"
        row[key] = max(row[key], _kib_to_mib(r["kib"]))
        row["tasks"] += 0 if r.get("driver") else 1
    return out


def _phase_name(desc: str) -> str:
    """One row per kind of phase: the rounds of connected components and the streaming stages merge."""
    desc = re.sub(r"components-\d+-", "components-", desc)
    return re.sub(r"stage \d+", "stage", desc)


# ---------------------------------------------------------------- the run


def prepare(work: Path, corpus: Path) -> None:
    """The quality model (trained as tests/test_quality.py does: WikiText, Botchan, ... vs web, webtext, SMS) and
    a 4,096-token BPE trained on the corpus's first shard. Run in its own process: training is not the driver's state."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_quality import _prepare

    from curate import quality
    from curate.tokens.tokenize import train_tokenizer

    work.mkdir(parents=True, exist_ok=True)
    if not (work / "quality.bin").exists():
        pos, neg = _prepare(DATA, work)
        quality.train(pos, neg, str(work / "quality.bin"))
    if not (work / "tokenizer.json").exists():
        train_tokenizer(str(sorted(corpus.glob("shard-*.parquet"))[0]), 4096, str(work / "tokenizer.json"))


def partitions(docs: int) -> int:
    """Hash partitions for ~150,000 documents each (a power of two), so a task's share stays the same at every size."""
    parts = 1
    while docs / parts > 200_000:
        parts *= 2
    return parts


def run(docs: int, corpus: Path, workers: int, work: Path, tokens: bool = True) -> dict:
    from curate import Pipeline, dedup, quality, readers

    shards = sorted(corpus.glob("shard-*.parquet"))[: (docs + SHARD_DOCS - 1) // SHARD_DOCS]
    if len(shards) * SHARD_DOCS < docs:
        raise SystemExit(f"{corpus} has {len(shards)} shards; generate --docs {docs} first")
    subprocess.run([sys.executable, __file__, "prepare", "--dir", str(corpus), "--work", str(work)], check=True)
    model = str(work / "quality.bin")
    out = work / f"run-{docs}"
    rss_dir = work / f"rss-{docs}"
    ex = fresh_executor(workers, rss_dir, out)
    parts = partitions(docs)
    pipe = Pipeline(name="scale", reader=readers.Parquet(source="web"), steps=[
        dedup.Exact(partitions=parts), dedup.MinHash(partitions=parts), quality.TopFraction(model, fraction=0.5)])
    t0 = time.perf_counter()
    pipe.run(inputs=[str(p) for p in shards], output=str(out), executor=ex, progress=False)
    seconds = {"pipeline": time.perf_counter() - t0}
    tokens_note = run_tokens(out, work, ex, seconds) if tokens else "mix/tokenize not run (--skip-tokens)"
    stats = json.loads((out / "stats.json").read_text())
    return {"docs": docs, "parts": parts, "shards": len(shards), "seconds": seconds, "tokens": tokens_note,
            "phases": phase_peaks(str(rss_dir)), "timeline": ex.phases,
            "steps": {s["name"]: {"docs_in": s["docs_in"], "docs_out": s["docs_out"], "extra": s.get("extra", {})}
                      for s in stats["steps"]},
            "driver_peak_mib": _kib_to_mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)}


def run_lines(docs: int, corpus: Path, workers: int, work: Path, methods: tuple[str, ...] = ("exact", "bloom")) -> dict:
    """`dedup.Lines(unit="sentence", span=3)` (partitions as `run`), then its Bloom mode, alone on the corpus."""
    from curate import Pipeline, dedup, readers

    shards = sorted(corpus.glob("shard-*.parquet"))[: (docs + SHARD_DOCS - 1) // SHARD_DOCS]
    if len(shards) * SHARD_DOCS < docs:
        raise SystemExit(f"{corpus} has {len(shards)} shards; generate --docs {docs} first")
    rss_dir = work / f"rss-lines-{docs}"
    ex = fresh_executor(workers, rss_dir, *(work / f"lines-{m}-{docs}" for m in ("exact", "bloom")))
    parts, seconds, steps = partitions(docs), {}, {}
    steps_by_method = {"exact": dedup.Lines(unit="sentence", span=3, partitions=parts),
                       "bloom": dedup.Lines(method="bloom", ngram=13, threshold=0.8, fp_rate=0.01)}
    for method in methods:
        step = steps_by_method[method]
        out = work / f"lines-{method}-{docs}"
        t0 = time.perf_counter()
        Pipeline(name="scale", reader=readers.Parquet(source="web"), steps=[step]).run(
            inputs=[str(p) for p in shards], output=str(out), executor=ex, progress=False)
        seconds[method] = time.perf_counter() - t0
        s = json.loads((out / "stats.json").read_text())["steps"][-1]
        steps[f"lines-{method}"] = {"docs_in": s["docs_in"], "docs_out": s["docs_out"], "extra": s.get("extra", {})}
        shutil.rmtree(out / "data", ignore_errors=True)  # the outputs are not needed, only the figures
    return {"docs": docs, "parts": parts, "shards": len(shards), "seconds": seconds, "tokens": "lines only",
            "phases": phase_peaks(str(rss_dir)), "timeline": ex.phases, "steps": steps,
            "driver_peak_mib": _kib_to_mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)}


def run_tokens(out: Path, work: Path, ex, seconds: dict, data: Path | None = None, chars: int | None = None) -> str:
    """`curate.tokens.mix` then `tokenize` on the curated shards (OUT/data, or `data` holding `chars` characters)
    to 80% of its tokens at 4 characters per token (the token engineer's API; skipped if it fails)."""
    try:
        from curate.tokens.mix import mix
        from curate.tokens.tokenize import tokenize

        tok = str(work / "tokenizer.json")
        if chars is None:
            chars = sum(s["chars_out"] for s in json.loads((out / "stats.json").read_text())["steps"][-1:])
        t = time.perf_counter()
        mix({"web": (str(data or out / "data"), 1.0)}, tokens=int(chars / 4 * 0.8), out=str(out / "mix"),
            tokenizer=tok, executor=ex)
        seconds["mix"] = time.perf_counter() - t
        t = time.perf_counter()
        tokenize(str(out / "mix" / "data"), tok, str(out / "tokens"), executor=ex)
        seconds["tokenize"] = time.perf_counter() - t
        return "mix + tokenize measured"
    except Exception as e:  # the token API is being reworked in parallel: report, do not hide
        return f"mix/tokenize not measured: {type(e).__name__}: {e}"


def run_tokens_only(docs: int, workers: int, work: Path) -> dict:
    """mix + tokenize on the output of an earlier `run --skip-tokens`, in a process of their own."""
    out = work / f"run-{docs}"
    rss_dir = work / f"rss-{docs}-tokens"
    ex = fresh_executor(workers, rss_dir, out / "mix", out / "tokens")
    seconds: dict[str, float] = {}
    note = run_tokens(out, work, ex, seconds)
    return {"docs": docs, "parts": partitions(docs), "shards": len(list(out.glob("data/*.parquet"))),
            "seconds": seconds, "tokens": note, "phases": phase_peaks(str(rss_dir)), "timeline": ex.phases, "steps": {},
            "driver_peak_mib": _kib_to_mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)}


# ---------------------------------------------------------------- mix and tokenize against the number of files


def file_corpus(files: int, file_docs: int, work: Path) -> tuple[Path, int]:
    """WORK/in-FILES/: the first `files` of WORK/files-DOCS/part-*.parquet (hard links; made as needed, in the
    text contract), and their characters. The 4,096-token BPE of the first file goes to WORK/tokenizer.json."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from curate.core.document import TEXT_SCHEMA
    from curate.tokens.tokenize import train_tokenizer

    pool = work / f"files-{file_docs}"
    pool.mkdir(parents=True, exist_ok=True)
    (words, p), _ = vocabularies()
    for s in range(files):
        path = pool / f"part-{s:05d}.parquet"
        if not path.exists():
            rng = np.random.default_rng([1, s])
            lengths = rng.integers(40, 71, file_docs)
            texts = _texts(words, rng.choice(len(words), size=(file_docs, 70), p=p), lengths)
            cols = {"id": [f"f{s:05d}-{i:07d}" for i in range(file_docs)], "text": texts, "source": ["web"] * file_docs}
            table = pa.table({f.name: cols.get(f.name, pa.nulls(file_docs, f.type)) for f in TEXT_SCHEMA}, schema=TEXT_SCHEMA)
            pq.write_table(table, path, compression="zstd", row_group_size=10_000)
    if not (work / "tokenizer.json").exists():
        train_tokenizer(str(pool / "part-00000.parquet"), 4096, str(work / "tokenizer.json"))
    inputs = work / f"in-{files}"
    shutil.rmtree(inputs, ignore_errors=True)
    inputs.mkdir()
    chars = 0
    for s in range(files):
        os.link(pool / f"part-{s:05d}.parquet", inputs / f"part-{s:05d}.parquet")
        text = pq.read_table(inputs / f"part-{s:05d}.parquet", columns=["text"])["text"]
        chars += pc.sum(pc.utf8_length(text)).as_py()
    return inputs, chars


TOKEN_PHASES = ("measure", "write", "tokenize")


def token_files(files: int, file_docs: int, workers: int, work: Path) -> dict:
    """mix + tokenize over `files` files on a pool, then each phase's first task alone in a fresh process. The
    corpus is made in a process of its own: the driver's figure is mix's and tokenize's."""
    got = subprocess.run([sys.executable, __file__, "token-corpus", "--files", str(files), "--file-docs",
                          str(file_docs), "--work", str(work)], check=True, capture_output=True, text=True)
    inputs, chars = work / f"in-{files}", int(got.stdout.split()[-1])
    out = work / f"run-{files}"
    rss_dir = work / f"rss-{files}"
    ex = fresh_executor(workers, rss_dir, out)
    seconds: dict[str, float] = {}
    note = run_tokens(out, work, ex, seconds, data=inputs, chars=chars)
    alone = {}
    for phase in TOKEN_PHASES:
        got = subprocess.run([sys.executable, __file__, "one-token-task", "--phase", phase, "--files", str(files),
                              "--work", str(work)], check=True, capture_output=True, text=True)
        alone[phase] = json.loads(got.stdout.splitlines()[-1])
    return {"docs": files * file_docs, "parts": 0, "shards": files, "seconds": seconds, "tokens": note,
            "phases": phase_peaks(str(rss_dir)), "timeline": ex.phases, "steps": {}, "alone": alone,
            "driver_peak_mib": _kib_to_mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)}


def _hwm_kib() -> int:
    """This process's peak RSS since its exec (VmHWM; ru_maxrss would carry the parent's over a fork + exec)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def one_token_task(files: int, phase: str, work: Path) -> dict:
    """The first task of a mix or tokenize phase of a finished `token-files` run, alone in this process: its
    peak above the process's baseline (imports done, and for `write` its counts made) is its own memory."""
    from curate.tokens import mix, tokenize

    first = str(work / f"in-{files}" / "part-00000.parquet")
    tok = str(work / "tokenizer.json")
    tmp = work / "one-token-task"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "_done").mkdir(parents=True)
    counts = str(tmp / "counts.npy")
    if phase == "write":  # counts by characters (4 per token), made before the baseline: the task reads them
        mix._measure(mix._Measure(first, "web", counts, None, 0.0, 0))
    base = _hwm_kib()
    if phase == "measure":
        mix._measure(mix._Measure(first, "web", counts, tok, 0.0, 0))
    elif phase == "write":
        target = 0.8 * float(np.load(counts).sum()) / 4
        mix._write(mix._Write(first, "web", counts, 4.0, 1.0, target, str(tmp / "part.parquet"), 0))
    else:
        mixed = sorted((work / f"run-{files}" / "mix" / "data").glob("*.parquet"))[0]
        tokenize._tokenize_file(tokenize._Task(0, str(mixed), str(tmp), tok, "uint16", 0.005, 1000, 1))
    peak = _hwm_kib()
    return {"phase": phase, "base_mib": _kib_to_mib(base), "peak_mib": _kib_to_mib(peak),
            "task_mib": _kib_to_mib(peak - base)}


TASK_PHASES = ("group", "buckets", "components-large", "members", "keep")


def one_task(docs: int, phase: str, work: Path) -> dict:
    """Run the first task of one phase again, alone in this fresh process, on the files of a finished run:
    its peak RSS above the process's baseline (imports done) is that task's own memory, free of what a
    long-lived pool worker keeps from earlier tasks."""
    from curate.dedup import components, exact, minhash

    root = work / f"run-{docs}" / "_work"
    ex_dir, mh = root / "global1", root / "global2"
    parts = partitions(docs)
    names = sorted(p.stem for p in (mh / "docs").glob("*.parquet"))
    tmp = work / "one-task"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    stats = json.loads((work / f"run-{docs}" / "stats.json").read_text())["steps"]
    rounds = next(s for s in stats if s["name"] == "minhash")["extra"]["component_rounds"]
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if phase == "group":
        exact.group_part(exact.GroupTask(0, [str(ex_dir / "keys" / f"{n}.parquet") for n in names], str(tmp / "g"),
                                         "smallest_id"))
    elif phase == "buckets":
        minhash.bucket_band(minhash.BucketTask(0, 0, parts, [str(mh / "bands" / f"{n}.parquet") for n in names],
                                               str(mh), str(tmp / "e"), 0.719))
    elif phase == "components-large":
        edges = sorted(str(p) for p in (mh / "edges").glob("*.parquet"))
        components.large_star(components.StarTask(0, parts, edges, str(tmp / "l"), str(tmp / "lab")))
    elif phase == "members":
        labels = sorted(str(p) for p in (mh / "components").glob(f"{rounds - 1:02d}-labels-*.parquet"))
        minhash.member_shard(minhash.MembersTask(0, labels, str(mh), parts, str(tmp / "m")))
    elif phase == "keep":
        members = sorted(str(p) for p in (mh / "members").glob("*.parquet"))
        minhash.keep_part(minhash.KeepTask(0, members, str(tmp / "k"), "smallest_id"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"phase": phase, "base_mib": _kib_to_mib(base), "peak_mib": _kib_to_mib(peak),
            "task_mib": _kib_to_mib(peak - base)}


def report(r: dict) -> None:
    print(f"\n{r['docs']:,} documents, {r['shards']} shards, {r['parts']} hash partitions; {r['tokens']}")
    print("seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in r["seconds"].items()))
    for name, s in r["steps"].items():
        print(f"  {name}: {s['docs_in']:,} -> {s['docs_out']:,}")
    print(f"{'phase':<28} {'tasks':>6} {'largest task MiB':>17} {'driver MiB so far':>18}")
    for phase, p in r["phases"].items():
        print(f"{phase:<28} {p['tasks']:>6} {p['task']:>17.0f} {p['driver']:>18.0f}")
    print(f"driver peak: {r['driver_peak_mib']:.0f} MiB")
    for phase, a in r.get("alone", {}).items():
        print(f"  {phase} alone in a fresh process: peak {a['peak_mib']:.0f} MiB, {a['task_mib']:.0f} above its baseline")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["generate", "prepare", "run", "tokens", "tasks", "one-task", "token-files",
                                     "token-corpus", "one-token-task", "lines"])
    ap.add_argument("--phase", choices=TASK_PHASES + TOKEN_PHASES, help="one-task, one-token-task: which phase")
    ap.add_argument("--files", type=int, default=10, help="token-files: how many input files")
    ap.add_argument("--file-docs", type=int, default=20_000, help="token-files: documents per file")
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/peneira-scale/corpus"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path("/tmp/peneira-scale"))
    ap.add_argument("--methods", default="exact,bloom", help="lines: which modes of dedup.Lines")
    ap.add_argument("--skip-tokens", action="store_true", help="run: stop after the pipeline (then `tokens`)")
    args = ap.parse_args()
    if args.what == "generate":
        generate(args.docs, args.dir)
        return 0
    if args.what == "prepare":
        prepare(args.work, args.dir)
        return 0
    if args.what == "one-task":
        print(json.dumps(one_task(args.docs, args.phase, args.work)))
        return 0
    if args.what == "token-corpus":
        print(file_corpus(args.files, args.file_docs, args.work)[1])
        return 0
    if args.what == "one-token-task":
        print(json.dumps(one_token_task(args.files, args.phase, args.work)))
        return 0
    if args.what == "tasks":  # each phase's first task alone in a fresh process
        for phase in TASK_PHASES:
            subprocess.run([sys.executable, __file__, "one-task", "--phase", phase, "--docs", str(args.docs),
                            "--work", str(args.work)], check=True)
        return 0
    if args.what == "tokens":
        result = run_tokens_only(args.docs, args.workers, args.work)
    elif args.what == "lines":
        result = run_lines(args.docs, args.dir, args.workers, args.work, tuple(args.methods.split(",")))
    elif args.what == "token-files":
        result = token_files(args.files, args.file_docs, args.workers, args.work)
    else:
        result = run(args.docs, args.dir, args.workers, args.work, tokens=not args.skip_tokens)
    report(result)
    size = args.files if args.what == "token-files" else args.docs
    what = f"lines-{args.methods.replace(',', '-')}" if args.what == "lines" else args.what
    with open(args.work / f"result-{size}-{what}.json", "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
