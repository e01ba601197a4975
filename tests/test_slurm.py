"""SlurmExecutor on a real one-node Slurm cluster (slurmctld + slurmd on 127.0.0.1, scripts/slurm-setup.sh).

Where `sbatch` is absent the setup script installs and starts Slurm (root and apt needed); only where neither
is possible are these tests skipped. Functions defined here reach the array tasks by reference, so the tasks
get this directory on PYTHONPATH (sbatch passes the submitting environment on).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate.core.errors import StepFailed, UsageError
from curate.run.executors.base import TaskFailures
from curate.run.executors.slurm import SlurmExecutor, _ranges

ROOT = Path(__file__).resolve().parents[1]
CURATE = [sys.executable, "-m", "curate.cli.main"]
pytestmark = pytest.mark.timeout(600)


def _slurm_up() -> bool:
    try:
        p = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return any(s.strip() in {"idle", "mixed", "allocated"} for s in p.stdout.splitlines())


@pytest.fixture(scope="module", autouse=True)
def slurm():
    if not _slurm_up():
        if os.geteuid() != 0 or not shutil.which("apt-get") and not shutil.which("sbatch"):
            pytest.skip("no running Slurm, and scripts/slurm-setup.sh cannot start one here (it needs root and "
                        "apt-get, or Slurm already installed)")
        p = subprocess.run(["bash", str(ROOT / "scripts" / "slurm-setup.sh")], capture_output=True, text=True,
                           timeout=900, check=False)
        assert p.returncode == 0, f"scripts/slurm-setup.sh failed:\n{p.stdout}\n{p.stderr}"  # loud, not a skip
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "tests"), old]))
    yield
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old


def assert_same_run(a: Path, b: Path) -> None:
    """Same shards byte for byte (read back with pyarrow: real rows, unique ids), same counts, same markers."""
    names = sorted(p.name for p in (a / "data").glob("*.parquet"))
    assert names and names == sorted(p.name for p in (b / "data").glob("*.parquet"))
    ids = [i for n in names for i in pq.read_table(a / "data" / n, columns=["id"]).column("id").to_pylist()]
    assert ids and len(ids) == len(set(ids))
    for n in names:
        assert (a / "data" / n).read_bytes() == (b / "data" / n).read_bytes(), n
    steps = [json.loads((r / "stats.json").read_text())["steps"] for r in (a, b)]
    for s in steps[0] + steps[1]:
        s.pop("seconds")
        s["extra"].pop("seconds", None)
        s["extra"].pop("cpu_seconds", None)  # dedup.Substrings' phases' CPU time
    assert steps[0] == steps[1]
    assert sorted(os.listdir(a / "_done")) == sorted(os.listdir(b / "_done"))
    assert not [p for p in (b / "data").iterdir() if p.name.startswith(".")], "temp files left behind"


# ---------------------------------------------------------------- functions the array tasks run


def flaky(item: tuple[str, str, int]) -> str:
    """Log the attempt, then fail the first `fails` attempts of this item (`fails` < 0: always)."""
    log_dir, name, fails = item
    with open(os.path.join(log_dir, name), "a") as f:
        f.write("x")
    attempts = len(Path(log_dir, name).read_text())
    if name == "verdict":
        raise StepFailed("step 'x' failed on all 10 documents")
    if name == "usage":
        raise UsageError("no such model: lid")
    if fails < 0 or attempts <= fails:
        raise OSError(f"transient failure of {name}")
    return name


def square(i: int) -> int:
    return i * i


def square_in(item: tuple[str, int]) -> tuple[int, int]:
    """i*i and the process that computed it; item 3's first attempt fails (a marker file remembers it)."""
    folder, i = item
    if i == 3 and not os.path.exists(os.path.join(folder, "3.failed")):
        Path(folder, "3.failed").touch()
        raise OSError("transient failure of item 3")
    return i * i, os.getpid()


def sleep_first_attempt(item: tuple[str, int]) -> int:
    """The first attempt records its job, array index and pid, then sleeps (to be killed); later ones return."""
    folder, i = item
    marker = Path(folder, f"{i}.first")
    if not marker.exists():
        marker.write_text(f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ['SLURM_ARRAY_TASK_ID']} {os.getpid()}")
        time.sleep(120)
    return i * i


# ---------------------------------------------------------------- the executor itself


def test_array_spec_ranges():
    assert _ranges([0, 1, 2, 3, 5, 7, 8]) == "0-3,5,7-8"
    assert _ranges([4]) == "4"


def test_tasks_per_element_option_reaches_the_executor(tmp_path):
    """`--slurm-tasks-per-element N` builds a SlurmExecutor packing N items an element, whose array task script
    passes the packing on (`task.sh OFFSET PER`); N < 1 is refused."""
    import argparse

    from curate.cli.common import add_executor, executor_from_args

    parser = argparse.ArgumentParser()
    add_executor(parser)
    parser.add_argument("--progress", default=False)
    args = parser.parse_args(["--executor", "slurm", "--slurm-tasks-per-element", "4"])
    ex = executor_from_args(args, str(tmp_path / "out"))
    assert isinstance(ex, SlurmExecutor) and ex.tasks_per_element == 4
    assert ex.sbatch_command("task.sh", "0-2", 0, "log", per=4)[-3:] == ["task.sh", "0", "4"]
    with pytest.raises(UsageError):
        SlurmExecutor(str(tmp_path / "w"), tasks_per_element=0)


def test_damaged_outcome_file_is_a_retryable_failure(tmp_path):
    """An outcome file that cannot be unpickled (a damaged disk: the task writes it atomically) is not a result
    and not a crash of the driver: the task counts as failed and worth retrying."""
    from curate.run.executors.slurm import _Batch

    batch = _Batch.__new__(_Batch)
    batch.dir = str(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "3.pkl").write_bytes(b"\x80\x05garbage")
    ok, (error, _), retry = batch._read(3)
    assert (ok, retry) == (False, True) and "cannot be read" in error
    assert not (tmp_path / "out" / "3.pkl").exists()


def test_results_in_order_retries_and_verdicts_once(tmp_path):
    """A raising task is resubmitted up to max_retries; StepFailed and UsageError fail the run at once, with
    their message; results come back in item order."""
    log = tmp_path / "log"
    log.mkdir()
    items = [(str(log), name, fails) for name, fails in
             (("ok", 0), ("flaky", 1), ("broken", -1), ("verdict", 0), ("usage", 0))]
    ex = SlurmExecutor(str(tmp_path / "work"), workers=2, progress=False, max_retries=1)
    with pytest.raises(TaskFailures) as info:
        ex.map(flaky, items, labels=[name for _, name, _ in items])
    errors = {e.label: e for e in info.value.errors}
    assert sorted(errors) == ["broken", "usage", "verdict"]
    assert errors["broken"].error == "OSError: transient failure of broken (after 2 attempts)"
    assert errors["usage"].error == "UsageError: no such model: lid"
    assert isinstance(errors["verdict"].cause, StepFailed)
    attempts = {name: len((log / name).read_text()) for _, name, _ in items}
    assert attempts == {"ok": 1, "flaky": 2, "broken": 2, "verdict": 1, "usage": 1}
    small = SlurmExecutor(str(tmp_path / "w2"), progress=False)
    small._max_array = 3  # as if the cluster's MaxArraySize were 3: items 0-2 in one array, item 3 in another
    assert small.map(square, [3, 1, 2, 0]) == [9, 1, 4, 0]
    assert len((tmp_path / "w2" / "jobs.txt").read_text().split()) == 2
    # issue 45: two items an array element, in one process; MaxArraySize 2 splits the 3 elements into 2 arrays; the
    # item that failed inside a packed element is retried alone (a third array), the others are not run again
    packed = SlurmExecutor(str(tmp_path / "w3"), progress=False, max_retries=1, tasks_per_element=2)
    packed._max_array = 2
    out = packed.map(square_in, [(str(log), i) for i in range(5)])
    assert [sq for sq, _ in out] == [0, 1, 4, 9, 16]
    pids = [pid for _, pid in out]
    assert pids[0] == pids[1] and len({pids[0], pids[2], pids[3], pids[4]}) == 4
    assert len((tmp_path / "w3" / "jobs.txt").read_text().split()) == 3


def test_scancel_and_kill9_of_tasks_are_retried(tmp_path):
    """One array task cancelled with scancel, another's process killed with SIGKILL: both are resubmitted and
    the results are those of an undisturbed run."""
    folder = tmp_path / "marks"
    folder.mkdir()
    ex = SlurmExecutor(str(tmp_path / "work"), progress=False, max_retries=2)
    import threading

    result: dict = {}
    t = threading.Thread(target=lambda: result.update(out=ex.map(sleep_first_attempt, [(str(folder), i) for i in (0, 1)])))
    t.start()
    marks = [folder / "0.first", folder / "1.first"]
    deadline = time.time() + 120
    while not all(m.exists() and m.read_text() for m in marks) and time.time() < deadline:
        time.sleep(0.2)
    task0, _ = marks[0].read_text().split()
    _, pid1 = marks[1].read_text().split()
    subprocess.run(["scancel", task0], check=True)
    os.kill(int(pid1), signal.SIGKILL)
    t.join(180)
    assert result.get("out") == [0, 1]


# ---------------------------------------------------------------- whole commands, compared with local

PIPELINE = '''
import os, time
from curate import Pipeline, Step, dedup, extract, readers, writers

class SleepFirst(Step):
    """With SLEEP_DIR set: the first attempt of each task sleeps at its first document (to be killed)."""
    name = "sleep_first"
    def __init__(self, folder):
        self.folder = folder
    def setup(self):
        self.slept = False
    def apply(self, doc):
        if self.folder and not self.slept:
            self.slept = True
            mark = os.path.join(self.folder, doc.id.replace("/", "_"))
            if not os.path.exists(mark):
                open(mark, "w").close()
                time.sleep(10)
        return doc

DEDUP = [dedup.Exact(), dedup.MinHash(bands=4, rows=4, partitions=1), dedup.Lines()] if os.environ.get("DEDUP") != "0" else []
SELECT = []
if os.environ.get("TARGET"):  # quality imported only here: the runs without it start their tasks as before
    from curate import quality
    SELECT = [dedup.Substrings(min_length=100), quality.Importance(os.environ["TARGET"], fraction=0.8)]
pipeline = Pipeline(name="slurm_test", reader=readers.Warc(source="web"),
    steps=[SleepFirst(os.environ.get("SLEEP_DIR", "")), extract.Main(), *DEDUP, *SELECT], writer=writers.Parquet())
'''


def warcs(shared: Path, few: bool = False) -> list[str]:
    """--input arguments: the 5 real WARC files (the 2 wget ones share exact duplicates), or (`few`) the 2 wget
    files and one Common Crawl file: every phase has a task per shard, each a Python process of ~1 s."""
    cc = sorted((shared / "warc" / "cc").glob("*.warc.gz"))
    files = sorted((shared / "warc" / "wget").glob("*.warc.gz")) + ([shared / "warc" / "cc" /
                                                                      "whirlwind.CC-MAIN-2024-22.warc.gz"] if few else cc)
    return [a for p in files for a in ("--input", str(p))]


def curate(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([*CURATE, *args], capture_output=True, text=True, env={**os.environ, **(env or {})},
                       timeout=500, check=False)
    assert not check or p.returncode == 0, p.stderr
    return p


def _job_state(job: str) -> str:
    """The Slurm state of a job ("" once the controller has forgotten it: MinJobAge after it ended)."""
    p = subprocess.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T %j"], capture_output=True, text=True,
                       timeout=30, check=False)
    return p.stdout.strip()


@pytest.fixture(scope="module")
def runs(shared, tmp_path_factory) -> tuple[Path, Path, dict]:
    """The test pipeline (extract, Exact, MinHash, Lines, then Substrings and Importance toward a clean book) over
    3 real WARC files, locally and on Slurm with `--detach`: the driver itself a Slurm job, which this fixture
    waits for (the local run meanwhile); then what Slurm says each array of the selection phases was given."""
    root = tmp_path_factory.mktemp("slurm_runs")
    (root / "pipe.py").write_text(PIPELINE)
    args = ["run", str(root / "pipe.py"), *warcs(shared, few=True), "--no-progress", "--workers", "2"]
    env = {"TARGET": str(shared / "text" / "clean_en" / "botchan_gutenberg8868.txt")}
    detached = curate(*args, "--output", str(root / "slurm"), "--executor", "slurm", "--detach",
                      "--log-dir", str(root / "driver"), env=env)
    job = detached.stdout.split("as Slurm job ")[1].split(";")[0]
    states = {_job_state(job)}
    local = subprocess.Popen([*CURATE, *args, "--output", str(root / "local"), "--executor", "local"],
                             env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, err = local.communicate(timeout=300)
    assert local.returncode == 0, err
    deadline = time.time() + 400
    while (state := _job_state(job)) and not state.startswith(("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")):
        states.add(state)
        assert time.time() < deadline, f"the detached driver (job {job}) did not end: {state}"
        time.sleep(0.5)
    states.add(state)
    return root / "local", root / "slurm", {"job": job, "stdout": detached.stdout, "states": states,
                                           "log": root / "driver" / f"curate-driver-{job}.log",
                                           "gres": _phase_gres(root / "slurm", SELECTION_PHASES)}


SELECTION_PHASES = ("text", "pairs", "rewrite", "top", "target", "count", "weigh", "select0", "filter")


def _phase_gres(out: Path, phases: tuple[str, ...]) -> dict[str, set[str]]:
    """Per phase, the generic resources (`squeue %b`: "N/A" for none) of the array jobs that ran it, asked
    of the controller before it forgets them (MinJobAge)."""
    gres: dict[str, set[str]] = {}
    for meta in (out / "_work" / "slurm" / "batches").glob("*/meta.json"):
        m = json.loads(meta.read_text())
        if m["desc"] in phases:
            p = subprocess.run(["squeue", "-h", "-t", "all", "-j", ",".join(m["jobs"]), "-o", "%b"],
                               capture_output=True, text=True, timeout=30, check=True)
            gres.setdefault(m["desc"], set()).update(p.stdout.split())
    return gres


@pytest.mark.slow
def test_pipeline_same_on_local_and_slurm(runs):
    local, slurm_out, d = runs
    assert_same_run(local, slurm_out)
    steps = {s["name"]: s for s in json.loads((slurm_out / "stats.json").read_text())["steps"]}
    assert steps["exact"]["dropped"]  # real duplicates were removed, by tasks that ran as Slurm arrays
    assert steps["substrings"]["extra"]["chars_struck"] > 0  # issue 43: repeated spans struck in array tasks
    assert steps["importance"]["dropped"]["importance:not_sampled"]  # issue 40.3: a sample drawn in array tasks
    assert set(d["gres"]) == set(SELECTION_PHASES)  # every phase of both ran as arrays, none asking for a GPU
    assert all(g == {"N/A"} for g in d["gres"].values()), d["gres"]
    logs = list((slurm_out.parent / "driver").glob("*.log"))  # --log-dir: the tasks' logs and the driver's
    assert any(p.name.startswith("slurm_test-stage-0-") for p in logs)  # named by stage and task
    status = curate("status", str(slurm_out)).stdout
    assert "finished: " in status and "3 of 3 task(s) done" in status


@pytest.mark.slow
def test_detached_driver_is_a_slurm_job_that_finishes_the_run(runs):
    """`--detach` returned at once with the job id; the driver ran as the job `curate-driver` (seen in squeue),
    ended COMPLETED, logged its run outside the output folder, and wrote what a local run writes (above)."""
    _, slurm_out, d = runs
    assert d["stdout"].startswith(f"submitted the driver as Slurm job {d['job']}; follow it with `curate status")
    assert any(s.endswith(" curate-driver") for s in d["states"]) and "COMPLETED curate-driver" in d["states"]
    assert "kept in 3 shard(s)" in d["log"].read_text()  # the driver's summary, in its log
    assert d["job"] in (slurm_out / "_work" / "slurm" / "jobs.txt").read_text().split()  # `curate cancel` stops it
    assert (slurm_out / "manifest.json").exists()


@pytest.mark.slow
def test_tokenize_and_mix_same_on_local_and_slurm(runs, tmp_path):
    from curate.tokens.tokenize import train_tokenizer

    local, _, _ = runs
    shards = sorted(str(p) for p in (local / "data").glob("*.parquet"))
    tok = tmp_path / "tok.json"
    train_tokenizer(shards, 512, tok, sample_chars=200_000)
    for ex in ("local", "slurm"):
        curate("tokenize", str(local), "--tokenizer", str(tok), "--out", str(tmp_path / f"tok-{ex}"),
               "--executor", ex, "--val-fraction", "0.1", "--no-progress")
        curate("mix", "--source", f"web={local}:1", "--tokens", "20K", "--chars-per-token", "4",
               "--out", str(tmp_path / f"mix-{ex}"), "--executor", ex, "--no-progress")
    for kind in ("tok", "mix"):
        a, b = tmp_path / f"{kind}-local", tmp_path / f"{kind}-slurm"
        files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and "_work" not in p.parts
                       and p.name != "manifest.json")
        assert len(files) > 1
        assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and "_work" not in p.parts
                               and p.name != "manifest.json")
        for f in files:
            assert (a / f).read_bytes() == (b / f).read_bytes(), f


def _wait(predicate, what: str, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while not predicate():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


@pytest.mark.slow
def test_driver_killed_cancelled_and_rerun_gives_identical_output(shared, tmp_path):
    """The waiting driver killed with SIGKILL, then `curate cancel` of a second driver: each time `curate status`
    says what it sees, and the same command run again finishes with the output of the uninterrupted run."""
    (tmp_path / "pipe.py").write_text(PIPELINE)
    out, sleep_dir, local = tmp_path / "out", tmp_path / "sleep", tmp_path / "local"
    sleep_dir.mkdir()
    cmd = [*CURATE, "run", str(tmp_path / "pipe.py"), *warcs(shared), "--executor", "slurm", "--no-progress",
           "--workers", "2"]
    env = {**os.environ, "SLEEP_DIR": str(sleep_dir), "DEDUP": "0"}  # the stream stage only: the test's time
    reference = subprocess.Popen([*cmd, "--output", str(local), "--executor", "local"], env={**os.environ, "DEDUP": "0"},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # meanwhile
    cmd += ["--output", str(out)]

    driver = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait(lambda: len(os.listdir(sleep_dir)) >= 1, "a task to start")
    assert "running (held by `curate run`" in curate("status", str(out)).stdout
    driver.kill()
    driver.wait()
    status = curate("status", str(out)).stdout
    assert "no command holds it" in status and "slurm: " in status

    driver = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait(lambda: len(os.listdir(sleep_dir)) >= 3, "the rerun's tasks to start")
    assert "cancelled" in curate("cancel", str(out)).stdout
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 143, err  # stopped, resumable
    assert not (out / "manifest.json").exists()

    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=500, check=False)
    assert p.returncode == 0, p.stderr
    _, err = reference.communicate(timeout=300)
    assert reference.returncode == 0, err
    assert_same_run(local, out)


@pytest.mark.slow
def test_an_object_store_output_with_a_shared_work_folder(shared, s3_bucket, tmp_path):
    """`--output s3://…` on Slurm: the batches, outcomes and job ids go to `--slurm-work-dir` (a folder the nodes
    share), the shards to the bucket, byte for byte those of a local run; `curate status` finds the jobs there.
    Without the option the command is refused in one line before anything is submitted."""
    import fsspec

    (tmp_path / "pipe.py").write_text(PIPELINE)
    args = ["run", str(tmp_path / "pipe.py"), *warcs(shared, few=True), "--no-progress", "--workers", "2"]
    env = {"DEDUP": "0"}
    url = f"{s3_bucket}/curated"
    refused = curate(*args, "--output", url, "--executor", "slurm", env=env, check=False)
    assert refused.returncode == 2 and "--slurm-work-dir" in refused.stderr and len(refused.stderr.splitlines()) == 1
    work = tmp_path / "work"
    curate(*args, "--output", url, "--executor", "slurm", "--slurm-work-dir", str(work), env=env)
    curate(*args, "--output", str(tmp_path / "local"), env=env)
    fsspec.filesystem("s3").get(url, str(tmp_path / "fetched"), recursive=True)
    assert_same_run(tmp_path / "local", tmp_path / "fetched")
    status = curate("status", url, "--slurm-work-dir", str(work)).stdout
    assert "finished: " in status and "slurm: 1 job(s) submitted; tasks: 3 completed" in status


def test_cancel_of_a_local_run_says_what_to_do(tmp_path):
    (tmp_path / "_done").mkdir()
    assert "is not a Slurm run" in curate("cancel", str(tmp_path)).stdout
    assert "not finished and no command holds it" in curate("status", str(tmp_path)).stdout
    assert "no run has started here" in curate("status", str(tmp_path / "_done")).stdout


@pytest.mark.slow
def test_perplexity_buckets_run_as_slurm_arrays(shared, tmp_path):
    """issue 40: a model step on Slurm: each shard scored by an array task (model loaded in the task), the buckets
    the same as a local run's. On CPU: this one-node cluster has no GPUs to give (`--gres` is checked in
    tests/test_perplexity.py from the sbatch command line)."""
    from _models import bpe, clean_texts, train_gpt

    from curate import Pipeline, quality, readers

    texts = clean_texts(shared)[:90]
    ref = train_gpt(texts[:40], bpe(texts[:40]), tmp_path / "ref", steps=10)
    for k in range(3):
        (tmp_path / f"in{k}.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n"
                                                       for i, t in enumerate(texts) if i % 3 == k))
    p = Pipeline(name="ppl", reader=readers.Jsonl(),
                 steps=[quality.PerplexityBuckets(ref, device="cpu", threads=1, per_language=False)])
    inputs = [str(tmp_path / f"in{k}.jsonl") for k in range(3)]
    p.run(inputs=inputs, output=str(tmp_path / "local"), progress=False)
    p.run(inputs=inputs, output=str(tmp_path / "slurm"), progress=False,
          executor=SlurmExecutor(str(tmp_path / "work"), progress=False))
    read = lambda out: sorted((r["id"], r["perplexity_bucket"], round(r["perplexity_bpb"], 5))  # noqa: E731
                              for f in sorted((out / "data").glob("*.parquet")) for r in pq.read_table(f).to_pylist())
    assert read(tmp_path / "slurm") == read(tmp_path / "local") and len(read(tmp_path / "local")) == 54  # 60% kept
    assert list((tmp_path / "work" / "batches").glob("*perplexity-score*"))  # the scoring ran as an array


def planted_embedding(doc):
    """The document's embedding from its metadata (a vector near one of 3 directions; every 5th a near-copy)."""
    doc.extra["emb"] = doc.metadata.pop("emb")
    return doc


@pytest.mark.slow
def test_semantic_runs_as_slurm_arrays(tmp_path):
    """issue 43.3: dedup.Semantic's phases as array tasks (embed and assign per shard, k-means, pairs per group of
    clusters, filter): the same kept documents and groups as a local run."""
    import numpy as np

    from curate import Pipeline, dedup, readers

    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 16))[rng.integers(0, 3, 150)] + 0.5 * rng.normal(size=(150, 16))
    x[::5] = x[1::5] + 0.01 * rng.normal(size=(30, 16))
    for k in range(3):
        (tmp_path / f"in{k}.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "text": "t" * (i + 1),
                                                                   "emb": x[i].tolist()}) + "\n"
                                                       for i in range(150) if i % 3 == k))
    p = Pipeline(name="sem", reader=readers.Jsonl(), steps=[planted_embedding, dedup.Semantic(
        embeddings_column="emb", eps=0.01, clusters=3, partitions=2)])
    inputs = [str(tmp_path / f"in{k}.jsonl") for k in range(3)]
    p.run(inputs=inputs, output=str(tmp_path / "local"), progress=False)
    p.run(inputs=inputs, output=str(tmp_path / "slurm"), progress=False,
          executor=SlurmExecutor(str(tmp_path / "work"), progress=False))
    read = lambda out: sorted((r["id"], r["semantic_cluster"], r["semantic_cluster_size"])  # noqa: E731
                              for f in sorted((out / "data").glob("*.parquet")) for r in pq.read_table(f).to_pylist())
    assert read(tmp_path / "slurm") == read(tmp_path / "local") and len(read(tmp_path / "local")) == 120
    assert list((tmp_path / "work" / "batches").glob("*pairs*"))  # the pairs phase ran as an array


@pytest.mark.slow
def test_neural_classifier_and_percentile_buckets_run_as_slurm_arrays(shared, tmp_path):
    """issue 40.4: a Hugging Face classifier scoring in array tasks (loaded in each), then Nemotron-CC's percentile
    buckets as a global step whose count and assign phases are arrays: the same rows and scores as a local run."""
    from _models import bpe, clean_texts, hf_encoder

    from curate import Pipeline, quality, readers

    texts = clean_texts(shared)[:60]
    model = hf_encoder(bpe(texts[:30], vocab=300), tmp_path / "cls", labels=1)
    for k in range(3):
        (tmp_path / f"in{k}.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n"
                                                       for i, t in enumerate(texts) if i % 3 == k))
    p = Pipeline(name="edu", reader=readers.Jsonl(), steps=[
        quality.NeuralClassifier(str(model), column="edu", device="cpu", threads=1),
        quality.PercentileBuckets(["edu"], bins=4, threshold=2)])
    inputs = [str(tmp_path / f"in{k}.jsonl") for k in range(3)]
    p.run(inputs=inputs, output=str(tmp_path / "local"), progress=False)
    p.run(inputs=inputs, output=str(tmp_path / "slurm"), progress=False,
          executor=SlurmExecutor(str(tmp_path / "work"), progress=False))
    read = lambda out: sorted((r["id"], r["quality_bucket"], round(r["edu"], 5))  # noqa: E731
                              for f in sorted((out / "data").glob("*.parquet")) for r in pq.read_table(f).to_pylist())
    kept = read(tmp_path / "local")
    assert read(tmp_path / "slurm") == kept and 20 <= len(kept) <= 40  # the top half (scores tied in a bin go together)
