"""The chaos lane for `curate run` and the local executor (issue 29: items 11, 12, 18; mechanisms 3 and 4).

Real subprocesses, real signals, a real full disk: two runs into one output (the second is refused with one
line, the first completes); SIGTERM, SIGINT and SIGKILL to the driver alone (`kill PID`), after which no process
of the run may be left (the forkserver and the pool workers are not the driver's to lose); signals at seeded
random moments; a disk that fills up at a few sizes. After each, a rerun must end with shards byte-identical
to an uninterrupted run's.

The processes of a command are found by an environment variable only its processes carry (the forkserver and
its workers inherit it), so nothing else on the machine is counted or touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from _chaos import kill_after, small_disk

CURATE = [sys.executable, "-m", "curate"]
FILES, DOCS = 8, 40  # 8 tasks of 40 documents, 10 ms each: about 1 s of work per worker with 2 workers

SLOW = """
import time
from curate import Pipeline, readers

def slow(doc):  # sleeps, so that a run lasts long enough to be signalled mid-run without burning CPU
    time.sleep(0.01)
    return True

pipeline = Pipeline(name="slow", reader=readers.Jsonl(), steps=[slow])
"""


def _tag() -> str:
    return uuid.uuid4().hex


def _env(tag: str) -> dict:
    return {**os.environ, "PENEIRA_CHAOS_TAG": tag}


def processes_of(tag: str) -> list[int]:
    """Live processes whose environment carries `PENEIRA_CHAOS_TAG=tag` (zombies have none to read)."""
    want = f"PENEIRA_CHAOS_TAG={tag}".encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if want in env:
            found.append(int(d))
    return found


def assert_none_left(tag: str, within: float = 10) -> None:
    """Every process of the command has ended within `within` seconds of the driver's end."""
    deadline = time.monotonic() + within
    while (left := processes_of(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    if left:
        cmds = []
        for pid in left:
            with contextlib.suppress(OSError):
                cmds.append(f"{pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:100].decode())
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)  # ours (they carry the test's tag): do not leave them to the next test
        pytest.fail("processes of the command outlived it:\n" + "\n".join(cmds))


def shards(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "data").glob("*.parquet"))}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The slow pipeline, its inputs, and `ref`: the output of an uninterrupted run."""
    root = tmp_path_factory.mktemp("chaos")
    (root / "pipe.py").write_text(SLOW)
    (root / "in").mkdir()
    for f in range(FILES):
        rows = [json.dumps({"text": f"file {f} document {i} " + "word " * (i % 50 + 5)}) for i in range(DOCS)]
        (root / "in" / f"f{f}.jsonl").write_text("\n".join(rows) + "\n")
    done = subprocess.run(_run_cmd(root, root / "ref"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return root


def _run_cmd(root: Path, out: Path) -> list[str]:
    return [*CURATE, "run", str(root / "pipe.py"), "--input", str(root / "in" / "*.jsonl"), "--output", str(out),
            "--workers", "2", "--no-progress"]


def _done(out: Path) -> int:
    d = out / "_done"
    return len(list(d.iterdir())) if d.is_dir() else 0


def _rerun_identical(corpus: Path, out: Path, tag: str) -> None:
    done = subprocess.run(_run_cmd(corpus, out), capture_output=True, text=True, timeout=300, env=_env(tag))
    assert done.returncode == 0, done.stderr
    assert shards(out) == shards(corpus / "ref")
    assert_none_left(tag)


# ---------------------------------------------------------------- 29.18: one writer per output folder


def test_a_second_run_into_the_same_output_is_refused_with_one_line_and_the_first_completes(corpus, tmp_path):
    out, tag = tmp_path / "out", _tag()
    first = subprocess.Popen(_run_cmd(corpus, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=_env(tag))
    deadline = time.monotonic() + 60
    while not (out / "_work" / "config.json").exists():  # it holds the lock from before it writes the config
        assert first.poll() is None, first.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    second = subprocess.run(_run_cmd(corpus, out), capture_output=True, text=True, timeout=120, env=_env(tag))
    assert first.poll() is None, "the first run ended before the second was refused: make the pipeline slower"
    err = second.stderr.strip().splitlines()
    assert second.returncode == 2 and len(err) == 1, second.stderr
    assert f"is in use by `curate run` (pid {first.pid} " in err[0]
    assert first.wait(timeout=120) == 0, first.stderr.read()
    assert shards(out) == shards(corpus / "ref")
    assert_none_left(tag)


def test_two_runs_started_together_never_both_write(corpus, tmp_path):
    """Started in the same instant: one runs, the other is refused (or, if it comes after the end, finds the
    finished run and does nothing); never a FileNotFoundError, never a mixed output."""
    out, tag = tmp_path / "out", _tag()
    procs = [subprocess.Popen(_run_cmd(corpus, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=_env(tag)) for _ in range(2)]
    results = [(p.wait(timeout=180), p.stderr.read()) for p in procs]
    assert sorted(rc for rc, _ in results)[0] == 0, results
    for rc, err in results:
        assert rc in (0, 2), err
        if rc == 2:
            assert len(err.strip().splitlines()) == 1 and "is in use by `curate run`" in err, err
    assert shards(out) == shards(corpus / "ref")
    assert_none_left(tag)


# ---------------------------------------------------------------- 29.12: signals to the driver alone


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_a_signal_to_the_driver_ends_every_process_of_the_run_and_a_rerun_completes(corpus, tmp_path, sig):
    out, tag = tmp_path / "out", _tag()
    done = kill_after(_run_cmd(corpus, out), lambda: _done(out) >= 1, sig, env=_env(tag))
    assert done.returncode != 0, "the run ended before the signal: make the pipeline slower"
    if sig == signal.SIGKILL:
        assert done.returncode == -signal.SIGKILL
    else:
        assert done.returncode == 128 + sig, done.stderr
        assert f"stopped by {sig.name}: rerun the same command to resume" in done.stderr.splitlines()
        assert "Traceback" not in done.stderr, done.stderr
    assert_none_left(tag)
    assert 0 < _done(out) < FILES + 1
    _rerun_identical(corpus, out, tag)


def test_ctrl_c_to_the_whole_group_is_one_line_not_a_traceback_per_worker(corpus, tmp_path):
    """A terminal's Ctrl-C reaches every process of the foreground group: the workers ignore it (the driver
    stops them), so the command prints its one line, not a KeyboardInterrupt from each worker."""
    out, tag = tmp_path / "out", _tag()
    done = kill_after(_run_cmd(corpus, out), lambda: _done(out) >= 1, signal.SIGINT, group=True, env=_env(tag))
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "stopped by SIGINT: rerun the same command to resume"
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr
    assert_none_left(tag)
    _rerun_identical(corpus, out, tag)


STUCK = """
import hashlib, sys
from curate.core.errors import Stopped
from curate.run.stopping import stop_on_signals
with stop_on_signals():
    print("ready", flush=True)
    try:
        hashlib.pbkdf2_hmac("sha256", b"x", b"y", 200_000_000)  # minutes in one C call (the GIL released)
    except Stopped:
        sys.exit("the handler ran: the call was not stuck")
"""


def test_a_command_inside_a_long_c_call_still_stops_after_the_grace(tmp_path):
    """Python runs its handler only between instructions; the watcher thread ends the process anyway."""
    proc = subprocess.Popen([sys.executable, "-c", STUCK], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PENEIRA_STOP_GRACE_SECONDS": "1"})
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.5)  # inside the call by now
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.strip() == "stopped by SIGTERM: rerun the same command to resume"
    assert time.monotonic() - t0 < 20


@pytest.mark.slow
def test_signals_at_seeded_random_moments_then_a_rerun_gives_the_uninterrupted_shards(corpus, tmp_path):
    out, tag = tmp_path / "out", _tag()
    rng = random.Random(29)
    for _ in range(4):
        sig, delay = rng.choice([signal.SIGKILL, signal.SIGTERM]), rng.uniform(0.3, 3.0)
        t0 = time.monotonic()
        kill_after(_run_cmd(corpus, out), lambda: time.monotonic() - t0 > delay, sig, env=_env(tag))  # noqa: B023
        assert_none_left(tag)
    _rerun_identical(corpus, out, tag)


# ---------------------------------------------------------------- curate tokenize: the same executor

TOKENIZE_FILES = 8


@pytest.fixture(scope="module")
def tok_corpus(shared, tmp_path_factory) -> Path:
    """8 JSONL files of Shakespeare, a small BPE trained on one, and `ref`: an uninterrupted tokenization."""
    root = tmp_path_factory.mktemp("tok")
    text = (shared / "text/clean_en/tinyshakespeare.txt").read_text(encoding="utf-8")[:400_000]
    docs = [text[i:i + 2000] for i in range(0, len(text), 2000)]
    (root / "in").mkdir()
    for f in range(TOKENIZE_FILES):
        rows = [json.dumps({"id": f"{f}-{i}", "text": d}) for i, d in enumerate(docs)]
        (root / "in" / f"f{f}.jsonl").write_text("\n".join(rows) + "\n")
    train = subprocess.run([*CURATE, "tokenizer", "train", str(root / "in" / "f0.jsonl"), "--vocab-size", "512",
                            "--out", str(root / "tok.json"), "--sample-chars", "200000"],
                           capture_output=True, text=True, timeout=300)
    assert train.returncode == 0, train.stderr
    done = subprocess.run(_tokenize_cmd(root, root / "ref"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return root


def _tokenize_cmd(root: Path, out: Path) -> list[str]:
    return [*CURATE, "tokenize", str(root / "in" / "*.jsonl"), "--tokenizer", str(root / "tok.json"), "--out",
            str(out), "--workers", "2", "--no-progress"]


def _token_files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*")) if p.suffix in (".bin", ".idx")}


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_a_signal_to_the_driver_of_tokenize_ends_its_workers_and_a_rerun_completes(tok_corpus, tmp_path, sig):
    out, tag = tmp_path / "tokens", _tag()
    started = lambda: (out / "_done").is_dir() and any((out / "_done").iterdir())  # noqa: E731
    done = kill_after(_tokenize_cmd(tok_corpus, out), started, sig, env=_env(tag))
    assert done.returncode != 0, "tokenize ended before the signal: give it more text"
    if sig != signal.SIGKILL:
        assert done.returncode == 128 + sig, done.stderr
        assert f"stopped by {sig.name}: rerun the same command to resume" in done.stderr.splitlines()
    assert_none_left(tag)
    rerun = subprocess.run(_tokenize_cmd(tok_corpus, out), capture_output=True, text=True, timeout=300,
                           env=_env(tag))
    assert rerun.returncode == 0, rerun.stderr
    assert _token_files(out) == _token_files(tok_corpus / "ref")
    assert_none_left(tag)


# ---------------------------------------------------------------- 29.11: a full disk


@pytest.mark.parametrize("size", ["8k", "24k", "40k"])
def test_a_full_disk_is_one_line_naming_the_output_and_a_rerun_on_more_space_is_identical(corpus, tmp_path, size):
    """The output alone is ~55 KB: the disk fills at the lock or config (8k), among the stats and first shards
    (24k), or late (40k). Each time one line; grown, the same disk takes the rerun to the uninterrupted shards."""
    tag = _tag()
    with small_disk(tmp_path / "disk", size) as disk:
        out = disk / "out"
        done = subprocess.run(_run_cmd(corpus, out), capture_output=True, text=True, timeout=300, env=_env(tag))
        err = done.stderr.strip().splitlines()
        assert done.returncode == 1 and len(err) == 1, done.stderr
        assert "no space left on the device" in err[0] and str(out) in err[0]
        assert_none_left(tag)
        subprocess.run(["mount", "-o", "remount,size=8m", str(disk)], check=True)
        _rerun_identical(corpus, out, tag)
