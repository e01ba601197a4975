"""Fixed costs (issue 45): what a `curate` command costs before its work, and what a task pays before its records.

    .venv/bin/python benchmarks/startup.py --reps 5 --json benchmarks/startup.json
    .venv/bin/python benchmarks/startup.py --reps 5 --hide pandas --json benchmarks/startup.json   # as a plain install
    .venv/bin/python benchmarks/startup.py --markdown benchmarks/startup.json   # the docs' tables

Every figure is one fresh process's own CPU seconds (user + sys) and peak RSS, from `os.wait4`, the median of
`--reps` runs: CPU, not wall, because the machine these numbers come from is shared with other jobs. Python
writes no bytecode cache where PYTHONDONTWRITEBYTECODE is set and then compiles every module whose cache is
stale at each start, which no installed wheel does: the variable is removed from the children's environment
and a warm-up run of each measured command writes the caches first.

1. CLI start-up: `curate --help`, every command's `--help`, and `stats`, `status`, `inspect -n 3`, `report` on
   the run of part 2; beside them the interpreter's floor (`python -c pass`).
2. A task's fixed cost, the web chain (pipelines/web.py) on one WARC file with one worker: the whole `curate run`
   process, against the same file run in a process that has run the chain on another file before (the work and
   the run's own bookkeeping alone; not the same file again, whose pages would meet the tokenizer's caches warm).
   The difference is what a process pays before its first record. Where it goes, measured in a fresh process:
   the run machinery's imports, Arrow's first array (pyarrow imports pandas then, where pandas is installed:
   the dev venv has it through `datasets`, a plain `pip install peneira` does not), the pipeline file, each
   step's `setup()` (once per worker process: `run.pipeline._load_stage`).
   2b. A dedup worker before its first MinHash signature: importing curate.dedup, the per-code-point Unicode
   tables, the first call of the compiled kernels; with them cached on disk, and with an empty cache folder
   (NUMBA_CACHE_DIR of its own: numba compiles, the tables are built).
3. A Slurm task's own cost, beyond Slurm's: `python -m curate.run.executors._slurm_task BATCH 0`, what every
   array element runs, by hand on a batch of one no-op task and on a batch of one web-chain task recorded from
   part 2's run (scheduling itself is `benchmarks/slurm_overhead.py`, which needs a running Slurm); and 4 small
   WARC files' tasks run as 4 elements against one element of all 4 (`--slurm-tasks-per-element 4`), per task.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _data

ROOT, DATA = _data.ROOT, _data.DATA
WARC = DATA / "warc/wget/dolma_sample-0000.warc.gz"  # 22 HTML pages: a task whose work is small
OTHER = DATA / "warc/wget/dolma_sample-0001.warc.gz"  # what a warm process ran before it
LID = DATA / "models/lid.176.ftz"
CURATE = [sys.executable, "-c", "import sys; from curate.cli.main import main; sys.exit(main())"]
LIGHT = ["stats", "status", "inspect", "report"]


HIDDEN: list[str] = []  # --hide pandas: folders of stub packages first on the children's path


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("PENEIRA_LID_MODEL", str(LID))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [*HIDDEN, str(ROOT), env.get("PYTHONPATH")]))
    return env


def hide(packages: list[str], tmp: str) -> None:
    """Make `packages` unimportable in the children, as in an install without them (pyarrow, for one, then goes
    without pandas): a stub package that raises ImportError, first on their path."""
    for name in packages:
        os.makedirs(os.path.join(tmp, "hidden", name), exist_ok=True)
        Path(tmp, "hidden", name, "__init__.py").write_text(f"raise ImportError('{name}: hidden by the benchmark')\n")
    HIDDEN[:] = [os.path.join(tmp, "hidden")] if packages else []


# Spawns the command and reports its rusage: a small parent, so the child's peak RSS is not the forked image of a
# driver that has grown (Linux counts a child's pages from the fork on).
WRAP = ("import json, os, subprocess, sys; p = subprocess.Popen(sys.argv[1:], stderr=subprocess.STDOUT); "
        "_, s, r = os.wait4(p.pid, 0); "
        "print(json.dumps([os.waitstatus_to_exitcode(s), r.ru_utime + r.ru_stime, r.ru_maxrss]), file=sys.stderr)")


def measure(argv: list[str], cwd: str | None = None, **env: str) -> tuple[float, float, str]:
    """One fresh process: its CPU seconds (user + sys), peak RSS in MiB, and what it printed."""
    p = subprocess.run([sys.executable, "-c", WRAP, *argv], capture_output=True, text=True, env={**child_env(), **env},
                       cwd=cwd, check=True)
    code, cpu, rss = json.loads(p.stderr.strip().splitlines()[-1])
    if code != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{p.stdout[-2000:]}")
    return cpu, rss / 1024, p.stdout


def median_of(argv: list[str], reps: int, cwd: str | None = None) -> dict:
    """The median CPU and RSS of `reps` fresh runs, after one warm-up run that writes the bytecode caches."""
    measure(argv, cwd)
    runs = [measure(argv, cwd)[:2] for _ in range(reps)]
    return {"cpu_s": round(statistics.median(r[0] for r in runs), 3),
            "rss_mib": round(statistics.median(r[1] for r in runs), 1)}


def web_run(out: str) -> list[str]:
    return [*CURATE, "run", str(ROOT / "pipelines/web.py"), "--input", str(WARC), "--output", out, "--workers", "1",
            "--no-progress", "--overwrite"]


def cli_startup(reps: int, run_dir: str) -> dict:
    """Part 1: each command in a fresh process, median CPU and RSS; `report` writes into a copy of the run."""
    from curate.cli.main import COMMANDS

    rows = {"python -c pass": median_of([sys.executable, "-c", "pass"], reps), "curate --help": median_of(
        [*CURATE, "--help"], reps)}
    for name in COMMANDS:
        rows[f"curate {name} --help"] = median_of([*CURATE, name, "--help"], reps)
    for name in LIGHT:
        target = run_dir
        if name == "report":
            target = run_dir + "-report"
            shutil.copytree(run_dir, target, dirs_exist_ok=True)
        rows[f"curate {name} RUN" + (" -n 3" if name == "inspect" else "")] = median_of(
            [*CURATE, name, target, *(["-n", "3"] if name == "inspect" else [])], reps)
    return rows


# The work alone: the run on the task's file in a process that has already run the pipeline on another file (so
# every one-time cost is paid, while the task's own pages still meet caches, e.g. the word tokenizer's, cold).
WARM = """
import json, shutil, sys, time
from curate.run.pipeline import Pipeline
p = Pipeline.from_file(sys.argv[1])
times = []
for inputs in sys.argv[2:4]:
    shutil.rmtree(sys.argv[4], ignore_errors=True)
    t = time.process_time()
    p.run(inputs=inputs, output=sys.argv[4], progress=False)
    times.append(time.process_time() - t)
print(json.dumps(times))
"""

PHASES = """
import json, sys, time
marks, t0 = {}, time.process_time()
def mark(name):
    global t0
    t = time.process_time(); marks[name] = marks.get(name, 0) + t - t0; t0 = t
from curate.cli.main import build_parser; build_parser(load=["run"]); mark("the CLI (argparse, curate.cli.run)")
import curate.run.pipeline, cloudpickle; mark("import the run machinery (curate.run.pipeline: numpy, Arrow, Arrow's compute functions)")
import pyarrow; pyarrow.array(["x"]); mark("Arrow's first array (pyarrow imports pandas then, where it is installed)")
import curate.lang.units; mark("curate.lang.units: every script's sentence ends from the Unicode tables, ICU")
import curate.filters; mark("curate.filters: the filters' modules (their regexes compiled at import)")
p = curate.run.pipeline.Pipeline.from_file(sys.argv[1]); mark("the rest of the pipeline file (extract, the steps' objects)")
stage = cloudpickle.loads(cloudpickle.dumps(p.stages()[0])); mark("the stage pickled and unpickled")
for s in stage.steps:
    s.setup(); mark(f"setup(): {s.name}")
print(json.dumps(marks))
"""

# What pandas would cost the run: pyarrow's first array where pandas is installed and not skipped.
PANDAS = """
import json, time
import pyarrow
t = time.process_time(); pyarrow.array(["x"]); print(json.dumps(time.process_time() - t))
"""


def task_fixed_cost(reps: int, tmp: str) -> dict:
    """Part 2: the whole one-file run against the same work in a warm process, and the phases before it."""
    whole = median_of(web_run(os.path.join(tmp, "whole")), reps)
    pipe, out = str(ROOT / "pipelines/web.py"), os.path.join(tmp, "warm")
    warm = statistics.median(json.loads(measure([sys.executable, "-c", WARM, pipe, str(OTHER), str(WARC), out])[2]
                                        .splitlines()[-1])[1] for _ in range(reps))
    phases: dict[str, list[float]] = {}
    for _ in range(reps):
        for k, v in json.loads(measure([sys.executable, "-c", PHASES, pipe])[2].splitlines()[-1]).items():
            phases.setdefault(k, []).append(v)
    docs = json.loads(Path(tmp, "whole", "stats.json").read_text())["steps"][0]["docs_out"]
    pandas = statistics.median(json.loads(measure([sys.executable, "-c", PANDAS])[2].splitlines()[-1])
                               for _ in range(reps))
    floor = median_of([sys.executable, "-c", "pass"], reps)["cpu_s"]
    return {"input": str(WARC.relative_to(DATA)), "documents": docs, "whole": whole, "warm_work_cpu_s": round(warm, 3),
            "fixed_cpu_s": round(whole["cpu_s"] - warm, 3), "interpreter_cpu_s": floor,
            "pandas_first_array_cpu_s": round(pandas, 3),
            "phases_cpu_s": {k: round(statistics.median(v), 3) for k, v in phases.items() if statistics.median(v) >= 0.002}}


DEDUP = """
import json, time
marks, t0 = {}, time.process_time()
def mark(name):
    global t0
    t = time.process_time(); marks[name] = t - t0; t0 = t
import curate.dedup; mark("import curate.dedup (numba, polars)")
from curate.dedup import sketch, text
text.char_classes(); text._tables(); sketch._fast_tables(); mark("per-code-point Unicode tables")
curate.dedup.signatures(["a first document to sign, long enough for a few shingles"]); mark("first signatures (kernels)")
print(json.dumps(marks))
"""


def dedup_first_document(reps: int, tmp: str) -> dict:
    """Part 2b: a dedup worker's fixed cost before its first signature, with the kernels and tables on disk (warm)
    and in a cache folder of its own each time (cold: numba compiles, the tables are built)."""
    out = {}
    for name in ("warm", "cold"):
        phases: dict[str, list[float]] = {}
        for i in range(reps + (name == "warm")):  # the warm side's first run fills the caches
            env = {"NUMBA_CACHE_DIR": os.path.join(tmp, f"cold{i}")} if name == "cold" else {}
            cpu, rss, text = measure([sys.executable, "-c", DEDUP], **env)
            if name == "warm" and i == 0:
                continue
            for k, v in {**json.loads(text.splitlines()[-1]), "whole process": cpu, "peak RSS MiB": rss}.items():
                phases.setdefault(k, []).append(v)
        out[name] = {k: round(statistics.median(v), 3) for k, v in phases.items()}
    return out


def noop(i: int) -> int:
    return i


def write_batch(folder: str, fn, items: list) -> str:
    """A Slurm batch folder as `SlurmExecutor` writes it (tasks.pkl, out/), for `_slurm_task` to run by hand."""
    import cloudpickle

    os.makedirs(os.path.join(folder, "out"), exist_ok=True)
    Path(folder, "tasks.pkl").write_bytes(cloudpickle.dumps((fn, list(items), True)))
    return folder


PACKED = [DATA / "warc/wget/dolma_sample-0000.warc.gz", DATA / "warc/wget/dolma_sample-0001.warc.gz",
          DATA / "warc/cc/cmoncrawl_mini.CC-MAIN-2022-05.warc.gz", DATA / "warc/cc/whirlwind.CC-MAIN-2024-22.warc.gz"]


def record_batch(tmp: str, name: str, inputs: list[str], keep: int) -> str:
    """Run the web chain here on `inputs` and keep the first `keep` tasks of its streaming map as a Slurm batch."""
    from curate.run.executors.local import LocalExecutor
    from curate.run.pipeline import Pipeline

    class Recording(LocalExecutor):
        """Runs in this process and keeps the first streaming map's tasks as a Slurm batch."""
        batch: str | None = None

        def map(self, fn, items, desc="tasks", labels=()):
            if self.batch is None and items:
                self.batch = write_batch(os.path.join(tmp, f"batch-{name}"), fn, items[:keep])
            return super().map(fn, items, desc, labels)

    os.environ.setdefault("PENEIRA_LID_MODEL", str(LID))
    rec = Recording(1, progress=False)
    Pipeline.from_file(str(ROOT / "pipelines/web.py")).run(inputs=inputs, output=os.path.join(tmp, f"recorded-{name}"),
                                                           executor=rec, progress=False)
    return rec.batch


def slurm_task_cost(reps: int, tmp: str) -> dict:
    """Part 3: the process of one Slurm array element, on a no-op task and on recorded web-chain tasks: one task
    an element, and 4 tasks (4 small WARC files) as 4 elements against one element that runs all 4
    (`--slurm-tasks-per-element 4`), per task."""
    task = [sys.executable, "-m", "curate.run.executors._slurm_task"]
    one = record_batch(tmp, "web", [str(WARC)], 1)
    four = record_batch(tmp, "web4", [str(p) for p in PACKED], len(PACKED))
    alone = [median_of([*task, four, str(i)], reps) for i in range(len(PACKED))]
    packed = median_of([*task, four, "0", str(len(PACKED))], reps)
    n = len(PACKED)
    return {"no-op task": median_of([*task, write_batch(os.path.join(tmp, "batch-noop"), noop, [0]), "0"], reps),
            "web-chain task (one WARC file)": median_of([*task, one, "0"], reps),
            f"web-chain, {n} small WARC files, one element each: per task": {
                "cpu_s": round(sum(r["cpu_s"] for r in alone) / n, 3), "rss_mib": max(r["rss_mib"] for r in alone)},
            f"web-chain, the same {n} files in one element (--slurm-tasks-per-element {n}): per task": {
                "cpu_s": round(packed["cpu_s"] / n, 3), "rss_mib": packed["rss_mib"]}}


def save_run(path: Path, record: dict) -> None:
    """Append this run to the results file with its machine, load and command (as benchmarks/minhash.py does)."""
    import platform

    runs = json.loads(path.read_text())["runs"] if path.exists() else []
    cpu = Path("/proc/cpuinfo")
    model = next((ln.split(":", 1)[1].strip() for ln in cpu.read_text().splitlines() if ln.startswith("model name")),
                 "") if cpu.exists() else ""
    record = {"machine": f"{model or platform.machine()}, {os.cpu_count()} cores",
              "load_1min": round(os.getloadavg()[0], 2), "command": " ".join(["python", *sys.argv]), **record}
    path.write_text(json.dumps({"runs": runs + [record]}, indent=1) + "\n")


def markdown(results: dict) -> str:
    """The docs' tables from the last run of a results file that hid no package, and a line per run."""
    run = [r for r in results["runs"] if not r.get("hidden")][-1]
    rows = [f"Machine: {run['machine']}, load average {run['load_1min']}. Command: `{run['command']}` "
            f"(median of {run['reps']} fresh processes, CPU seconds user + sys, peak RSS).", "",
            "| command | CPU s | peak RSS MiB |", "|---|---:|---:|"]
    rows += [f"| `{k}` | {v['cpu_s']:.3f} | {v['rss_mib']:.0f} |" for k, v in run["cli"].items()]
    t = run["task"]
    rows += ["", f"Web chain, one file (`{t['input']}`, {t['documents']} documents), `--workers 1`:", "",
             "| what | CPU s |", "|---|---:|",
             f"| whole `curate run` process (peak RSS {t['whole']['rss_mib']:.0f} MiB) | {t['whole']['cpu_s']:.3f} |",
             f"| the same file in a process that ran the chain on another file first (the work) | {t['warm_work_cpu_s']:.3f} |",
             f"| **fixed cost** (the difference) | **{t['fixed_cpu_s']:.3f}** |"]
    floor = t.get("interpreter_cpu_s", 0.0)
    if floor:
        rows.append(f"| of which: the interpreter (`python -c pass`) | {floor:.3f} |")
    rows += [f"| of which: {k} | {v:.3f} |" for k, v in t["phases_cpu_s"].items()]
    rest = t["fixed_cpu_s"] - floor - sum(t["phases_cpu_s"].values())
    rows += [f"| of which: the rest (the run's bookkeeping, first calls: lazy regexes, the tokenizer's caches) | {rest:.3f} |"]
    if "pandas_first_array_cpu_s" in t:
        rows += [f"| pandas alone, which pyarrow's first array imports where it is installed (not a dependency of "
                 f"Peneira: `--hide pandas` measures a plain install) | ({t['pandas_first_array_cpu_s']:.3f}) |"]
    d = run["dedup_worker"]
    rows += ["", "A dedup worker before its first MinHash signature (fresh process; CPU s):", "",
             "| phase | kernels and tables cached on disk | cold cache (compiled, built) |", "|---|---:|---:|"]
    rows += [f"| {k} | {d['warm'][k]:.3f} | {d['cold'][k]:.3f} |" for k in d["warm"] if k != "peak RSS MiB"]
    rows += ["", "| Slurm array element, run by hand (`python -m curate.run.executors._slurm_task BATCH ELEMENT [PER]`) "
             "| CPU s | peak RSS MiB |", "|---|---:|---:|"]
    rows += [f"| {k} | {v['cpu_s']:.3f} | {v['rss_mib']:.0f} |" for k, v in run["slurm_task"].items()]
    rows += ["", "Every run of the results file:", "",
             "| run | packages hidden | load | `curate --help` CPU s | web chain, one file: whole / work / **fixed** CPU s |"
             " dedup worker, cached CPU s | Slurm no-op task CPU s |", "|---|---|---:|---:|---|---:|---:|"]
    for k, r in enumerate(results["runs"], 1):
        t = r["task"]
        rows.append(f"| {k} | {', '.join(r.get('hidden', [])) or 'none'} | {r['load_1min']} | "
                    f"{r['cli']['curate --help']['cpu_s']:.3f} | {t['whole']['cpu_s']:.3f} / {t['warm_work_cpu_s']:.3f} / "
                    f"**{t['fixed_cpu_s']:.3f}** | {r['dedup_worker']['warm']['whole process']:.3f} | "
                    f"{r['slurm_task']['no-op task']['cpu_s']:.3f} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", type=Path, help="append this run to a results file")
    ap.add_argument("--markdown", type=Path, metavar="RESULTS", help="print the docs' tables from a results file")
    ap.add_argument("--hide", action="append", default=[], metavar="PACKAGE",
                    help="run the children as if PACKAGE were not installed (e.g. pandas, which pyarrow imports)")
    args = ap.parse_args()
    if args.markdown:
        print(markdown(json.loads(args.markdown.read_text())))
        return
    with tempfile.TemporaryDirectory() as tmp:
        hide(args.hide, tmp)
        task = task_fixed_cost(args.reps, tmp)
        record = {"reps": args.reps, "hidden": args.hide, "task": task, "cli": cli_startup(args.reps, os.path.join(tmp, "whole")),
                  "dedup_worker": dedup_first_document(args.reps, tmp),
                  "slurm_task": slurm_task_cost(args.reps, tmp)}
    print(json.dumps(record, indent=1))
    if args.json:
        save_run(args.json, record)


if __name__ == "__main__":
    main()
