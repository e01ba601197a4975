"""The chaos lane for `curate tokenize` and `curate mix` (issue 29): two commands into one output, SIGKILL at
random moments then a rerun, a full disk at several sizes then a rerun on a larger one. The rule for each:
the same bytes as an uninterrupted run, or one loud line and a rerun that gives them."""

from __future__ import annotations

import gzip
import json
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _chaos import kill_after, small_disk
from _tokdata import PT, WEB

from curate.io.fs import TEMP_NAME
from curate.io.outputs import LOCK_NAME

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CURATE = [sys.executable, "-m", "curate"]


def _docs(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def corpus(shared, tmp_path_factory):
    """Six JSONL files (web_cc and Bosque), a 1,024-token tokenizer, and the uninterrupted outputs of the two
    commands, made by the CLI as the tests run it."""
    tmp = tmp_path_factory.mktemp("chaos_tokens")
    docs = {"web": _docs(shared / WEB), "pt": _docs(shared / PT)}
    (tmp / "in").mkdir()
    for name, rows in docs.items():
        k = 4 if name == "web" else 2
        for i in range(k):
            with open(tmp / "in" / f"{name}-{i}.jsonl", "w", encoding="utf-8") as f:
                for d in rows[i::k]:
                    f.write(json.dumps({"id": str(d["id"]), "text": d["text"]}) + "\n")
    from curate.tokens.tokenize import train_tokenizer

    train_tokenizer(str(tmp / "in"), 1024, tmp / "tok.json", sample_chars=2_000_000)
    t0 = time.monotonic()
    done = subprocess.run(tokenize_cmd(tmp, tmp / "ref-tokens"), capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    seconds = time.monotonic() - t0
    done = subprocess.run(mix_cmd(tmp, tmp / "ref-mix"), capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return tmp, seconds


def tokenize_cmd(tmp: Path, out: Path, workers: int = 1) -> list[str]:
    return [*CURATE, "tokenize", str(tmp / "in"), "--tokenizer", str(tmp / "tok.json"), "--out", str(out),
            "--val-fraction", "0.05", "--workers", str(workers), "--no-progress"]


def mix_cmd(tmp: Path, out: Path, workers: int = 2) -> list[str]:
    return [*CURATE, "mix", "--source", f"web={tmp / 'in'}/web-*.jsonl:0.6", "--source", f"pt={tmp / 'in'}/pt-*.jsonl:0.4",
            "--tokens", "600K", "--chars-per-token", "4", "--out", str(out), "--workers", str(workers), "--no-progress"]


def snapshot(out: Path) -> dict[str, bytes]:
    """Every file under `out` but the lock, by relative path; the manifests without their timing."""
    files = {}
    for p in sorted(out.rglob("*")):
        if p.is_file() and p.name != LOCK_NAME:
            rel, data = p.relative_to(out).as_posix(), p.read_bytes()
            if rel == "manifest.json":
                m = json.loads(data)
                m.pop("seconds", None)
                data = json.dumps(m, sort_keys=True).encode()
            files[rel] = data
    return files


def published_are_whole(out: Path, ref: dict[str, bytes], folders: tuple[str, ...]) -> None:
    """What a reader can see at any moment (the final names under `folders`) is byte for byte the reference's:
    a file is either absent or whole, whatever was killed when."""
    for rel, data in snapshot(out).items():
        if rel.startswith(folders) and not TEMP_NAME.fullmatch(rel.rsplit("/", 1)[-1]):
            assert data == ref[rel], f"{rel} is published but differs from an uninterrupted run's"


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# ---------------------------------------------------------------------------------------------- two writers


@pytest.mark.parametrize("command", ["tokenize", "mix"])
def test_a_second_command_into_a_busy_output_is_refused_with_one_line(corpus, tmp_path, command):
    """Case 29.3: the second command is refused before it reads or deletes anything (the first one's lock), and
    the first completes with the bytes of an uninterrupted run. The first is paused (SIGSTOP) once it holds the
    folder, so the second always meets it there, however fast the machine."""
    import os

    tmp, _ = corpus
    out = tmp_path / "out"
    cmd = tokenize_cmd(tmp, out) if command == "tokenize" else mix_cmd(tmp, out, workers=1)
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    started = out / ("_done/config.json" if command == "tokenize" else "manifest.json")
    deadline = time.monotonic() + 60
    while not started.exists() and first.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(first.pid, signal.SIGSTOP)
    try:
        assert first.poll() is None, "the first command ended before it could be paused"
        before = snapshot(out)
        second = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        assert snapshot(out) == before  # the refused command touched nothing
    finally:
        os.kill(first.pid, signal.SIGCONT)
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert second.returncode == 2
    line = one_line(second.stderr)
    assert f"is in use by `curate {command}` (pid {first.pid} " in line and str(out) in line
    assert snapshot(out) == snapshot(tmp / f"ref-{'tokens' if command == 'tokenize' else 'mix'}")


def test_two_writers_of_one_shard_never_share_a_temporary_file(tmp_path):
    """Case 29.3 at its root: a second writer of the same shard (killed, or an orphaned worker) writes its own
    temporary file; the first publishes exactly its own tokens."""
    import numpy as np

    from curate.tokens.tokenize import _ShardWriter

    a = _ShardWriter(str(tmp_path), "train", "part-00000", "uint16")
    b = _ShardWriter(str(tmp_path), "train", "part-00000", "uint16")
    assert a.bin.tmp != b.bin.tmp and a.idx.tmp != b.idx.tmp
    assert TEMP_NAME.fullmatch(Path(a.bin.tmp).name) and TEMP_NAME.fullmatch(Path(b.idx.tmp).name)
    ids = np.arange(1, 1001, dtype=np.uint16)
    a.add(ids, np.array([500, 500]), ["web", "web"])
    b.add(np.zeros(10_000, np.uint16), np.array([10_000]), ["web"])  # a second writer, then killed
    entry = a.commit()
    assert (tmp_path / "train" / "part-00000.bin").read_bytes() == ids.astype("<u2").tobytes()
    assert entry["max_id"] == 1000 and set(entry["xxh3_64"]) == {"file", "index"}
    b.file.close()  # what a SIGKILL leaves: b's temporary file, never the published one
    assert (tmp_path / "train" / "part-00000.bin").read_bytes() == ids.astype("<u2").tobytes()


# ---------------------------------------------------------------------------------------------- SIGKILL


def _kill_points(seconds: float, seed: int, events: dict) -> list:
    """Named events, then random moments within an uninterrupted run's duration."""
    rng = random.Random(seed)
    def after(t: float):
        return lambda start: time.monotonic() - start > t

    moments = [(f"after {t:.2f} s", after(t)) for t in sorted(rng.uniform(0.3, seconds) for _ in range(2))]
    return [*events.items(), *moments]


def _chaos_kill(cmd: list[str], out: Path, ref: dict[str, bytes], points: list, folders: tuple[str, ...],
                sig: int = signal.SIGKILL) -> None:
    """Signal the command at each point (SIGKILL: it dies; SIGTERM: it stops, with one line and exit 128 + 15),
    check what it published, then a final rerun: the reference's bytes."""
    killed = 0
    for name, ready in points:
        start = time.monotonic()
        done = kill_after(cmd, lambda ready=ready, start=start: ready(start), sig=sig, cwd=ROOT)
        if sig == signal.SIGKILL:
            assert done.returncode in (0, -9), (name, done.stderr)
            killed += done.returncode == -9
        else:  # -sig: signalled during start-up, before the command installs its handler (nothing written yet)
            assert done.returncode in (0, -sig, 128 + sig), (name, done.stderr)
            if done.returncode == 128 + sig:
                killed += 1
                assert one_line(done.stderr).startswith(f"stopped by {signal.Signals(sig).name}"), done.stderr
        published_are_whole(out, ref, folders)
    assert killed >= 2, "fewer than two runs were killed before they finished"
    final = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert final.returncode == 0, final.stderr
    assert snapshot(out) == ref  # the same bytes, and no temporary file left


@pytest.mark.parametrize(("workers", "sig"), [(1, signal.SIGKILL), (2, signal.SIGKILL), (2, signal.SIGTERM)],
                         ids=["1-SIGKILL", "2-SIGKILL", "2-SIGTERM"])
def test_tokenize_killed_at_random_moments_then_rerun_gives_the_same_bytes(corpus, tmp_path, workers, sig):
    tmp, seconds = corpus
    out = tmp_path / "out"
    events = {
        "config written": lambda start: (out / "_done" / "config.json").exists(),
        "a shard being written": lambda start: any(TEMP_NAME.fullmatch(p.name) for p in out.glob("*/.part-*")),
        "first file done": lambda start: any(out.glob("_done/part-*.json")),
    }
    _chaos_kill(tokenize_cmd(tmp, out, workers), out, snapshot(tmp / "ref-tokens"),
                _kill_points(seconds, 29 + workers, events), ("train/", "val/", "_done/part-"), sig)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=lambda s: s.name)
def test_mix_killed_at_random_moments_then_rerun_gives_the_same_bytes(corpus, tmp_path, sig):
    tmp, seconds = corpus
    out = tmp_path / "out"
    events = {
        "measuring": lambda start: any(out.glob("_work/counts-*")),
        "a shard being written": lambda start: any(out.glob("data/.part-*")),
        "first shard published": lambda start: any(out.glob("data/part-*")),
    }
    _chaos_kill(mix_cmd(tmp, out), out, snapshot(tmp / "ref-mix"), _kill_points(seconds / 2, 7, events), ("data/",),
                sig)


# ---------------------------------------------------------------------------------------------- disk full


def _remount(where: Path, size: str) -> None:
    done = subprocess.run(["mount", "-o", f"remount,size={size}", str(where)], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot grow the tmpfs: {done.stderr.strip()}")


# where each size fills up: tokenize's _done/config.json, tokenizer.json, a shard; mix's counts, a shard
@pytest.mark.parametrize(("command", "size"), [("tokenize", "4k"), ("tokenize", "12k"), ("tokenize", "400k"),
                                               ("mix", "12k"), ("mix", "400k")])
def test_a_full_disk_is_one_line_naming_the_file_and_a_rerun_on_a_larger_disk_completes(corpus, tmp_path, command,
                                                                                      size):
    """Case 29.11: no traceback, one line naming a file under --out (exit 1); then the same disk grown (a tmpfs
    remounted larger, the same path) and the same command: the bytes of an uninterrupted run."""
    tmp, _ = corpus
    with small_disk(tmp_path / "disk", size) as disk:
        out = disk / "out"
        workers = 2 if size == "400k" else 1  # two workers: each task's failure, still one line
        cmd = tokenize_cmd(tmp, out, workers) if command == "tokenize" else mix_cmd(tmp, out, workers)
        failed = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        assert failed.returncode == 1, failed.stderr
        line = one_line(failed.stderr)
        assert re.match(rf"curate {command}: no space left on the device writing {re.escape(str(out))}", line), line
        _remount(disk, "64m")
        again = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        assert again.returncode == 0, again.stderr
        assert snapshot(out) == snapshot(tmp / f"ref-{'tokens' if command == 'tokenize' else 'mix'}")
        shutil.rmtree(out)
