"""The trainer under chaos (issue 29): killed at a random step, stopped by SIGTERM, raced by a second trainer into the
same --out, out of disk space at a checkpoint. Each time the run must be resumable and then end with the very
weights of a run that nothing interrupted; nothing half-written may ever be left where a reader looks.

Every trainer here is a real `python -m train` process (one thread, so the numbers are reproducible)."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from _chaos import kill_after, small_disk
from _traindata import token_shards

from curate.models import checkpoint as reader
from train import checkpoint

pytestmark = pytest.mark.slow

STEPS = 16
RUN = {"config": "tiny", "n_layer": 2, "n_head": 4, "n_embd": 64, "seq_len": 32, "micro_batch": 4, "batch_tokens": 128,
       "steps": STEPS, "warmup_steps": 2, "eval_every": 0, "ckpt_every": 2, "log_every": 1, "device": "cpu"}
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def command(tokens: Path, out: Path, *extra: str, **changes) -> list[str]:
    args = [a for k, v in {**RUN, **changes}.items() for a in (f"--{k}", str(v))]
    return [sys.executable, "-m", "train", *args, "--data", str(tokens), "--out", str(out), "--no-progress",
            "--no-plots", *extra]


def trainer(tokens: Path, out: Path, *extra: str, **changes) -> subprocess.CompletedProcess:
    return subprocess.run(command(tokens, out, *extra, **changes), env=ENV, capture_output=True, text=True,
                          timeout=300)


def logged_steps(out: Path) -> int:
    """The last step in metrics.jsonl (0 before any): a trainer's progress, seen from outside."""
    try:
        lines = (out / "metrics.jsonl").read_text().splitlines()
        return max((json.loads(line)["step"] for line in lines if line.endswith("}")), default=0)
    except (OSError, ValueError):
        return 0


def losses(out: Path) -> list[float]:
    return [json.loads(line)["loss"] for line in (out / "metrics.jsonl").read_text().splitlines()]


def leftovers(out: Path) -> list[str]:
    """Temporary files of a write that never finished (they are never read, but must not pile up)."""
    return sorted(p.name for p in out.rglob("*") if ".tmp" in p.name)


def same_weights(a: Path, b: Path) -> bool:
    wa, wb = reader.load(a / "ckpt.pt")["model"], reader.load(b / "ckpt.pt")["model"]
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


@pytest.fixture(scope="module")
def tokens(shared, tmp_path_factory):
    return token_shards(shared, tmp_path_factory)


@pytest.fixture(scope="module")
def whole(tokens, tmp_path_factory):
    """The uninterrupted run every interrupted one must end up equal to (in this process, with one thread as the
    trainers started here have: the same numbers)."""
    from train.config import load_config
    from train.loop import train

    out = tmp_path_factory.mktemp("whole") / "run"
    values = {k: v for k, v in RUN.items() if k != "config"}
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng():
            train(load_config(RUN["config"], {**values, "data": str(tokens), "out": str(out), "progress": False,
                                              "plots": False}))
    finally:
        torch.set_num_threads(n)
    assert reader.load(out / "ckpt.pt")["step"] == STEPS
    return out


def test_sigkill_at_a_random_step_then_resume_gives_the_same_weights(whole, tokens, tmp_path):
    """SIGKILL lands wherever it lands (mid-step, mid-checkpoint, mid-export): --resume continues from the last whole
    checkpoint and the run ends bit for bit where the uninterrupted one did, with one clean metrics log."""
    seed = int(os.environ.get("CHAOS_SEED", time.time_ns() % 10_000))
    at = random.Random(seed).randint(3, STEPS - 4)
    out = tmp_path / "run"
    killed = kill_after(command(tokens, out), lambda: logged_steps(out) >= at, env=ENV)
    assert killed.returncode == -signal.SIGKILL, f"CHAOS_SEED={seed}: {killed.stderr[-2000:]}"
    resumed = trainer(tokens, out, "--resume")
    assert resumed.returncode == 0, f"CHAOS_SEED={seed}: {resumed.stderr[-3000:]}"
    assert same_weights(out, whole), f"CHAOS_SEED={seed}: killed after step {at}"
    assert losses(out) == losses(whole)  # every step once, the resumed ones equal to the uninterrupted ones
    assert leftovers(out) == []  # a killed writer's temporary files are swept once the folder is locked again


def test_sigterm_checkpoints_at_a_step_and_resume_continues(whole, tokens, tmp_path):
    """SIGTERM (preemption, `kill`): the trainer ends the step it is in, saves a checkpoint there and exits with
    128 + 15; nothing is half-written, and --resume ends with the uninterrupted run's weights."""
    out = tmp_path / "run"
    stopped = kill_after(command(tokens, out, ckpt_every=0), lambda: logged_steps(out) >= 4, sig=signal.SIGTERM,
                         env=ENV)
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-3000:]
    state = checkpoint.latest(out)
    step = int(state.name.split("-")[1])
    assert 4 <= step < STEPS and f"stopped by SIGTERM at step {step}" in stopped.stdout
    checkpoint.verify(state)
    assert reader.load(out / "ckpt.pt")["step"] == step and leftovers(out) == []
    resumed = trainer(tokens, out, "--resume", ckpt_every=0)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert same_weights(out, whole) and losses(out) == losses(whole)


def test_a_second_trainer_into_the_same_out_is_refused(tokens, tmp_path):
    """Two trainers into one --out: the second is refused with one line naming the first (with --overwrite too,
    which must not delete the run under the first), and the first goes on untouched."""
    out = tmp_path / "run"
    first = subprocess.Popen(command(tokens, out, steps=100_000, ckpt_every=5), env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (out / "checkpoint" / "latest").is_file():  # it holds the folder, and has written into it
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read()[-3000:]
            time.sleep(0.05)
        seconds = [subprocess.Popen(command(tokens, out, *extra, steps=100_000), env=ENV, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
                   for extra in ([], ["--overwrite"])]  # --overwrite would have deleted the first one's run
        for second in seconds:
            err = second.communicate(timeout=300)[1].strip()
            assert second.returncode == 2 and len(err.splitlines()) == 1, err[-3000:]
            assert f"{out} is in use by `python -m train` (pid {first.pid}" in err
        assert first.poll() is None  # still training
        assert (out / "ckpt.pt").is_file()
    finally:
        first.send_signal(signal.SIGTERM)
        stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    checkpoint.verify(checkpoint.latest(out))
    assert leftovers(out) == []


def test_disk_full_at_a_checkpoint_is_one_line_and_resume_works_after_freeing_space(whole, tokens, tmp_path):
    """A 5 MiB disk holds the first checkpoint (3 MiB of training state, 1 MiB of weights) but not the second:
    one line naming the checkpoint, no temporary directory left, the previous checkpoint whole; once there is space
    again, --resume ends with the uninterrupted run's weights."""
    with small_disk(tmp_path / "disk", "5m") as disk:
        out = disk / "run"
        full = trainer(tokens, out)
        err = full.stderr.strip()
        assert full.returncode == 2 and len(err.splitlines()) == 1, err[-3000:]
        assert f"disk full writing {out / 'checkpoint' / 'step-00000004'}" in err
        assert f"the previous checkpoint {out / 'checkpoint' / 'step-00000002'} is intact" in err
        assert "Traceback" not in err and "unexpected pos" not in err
        assert leftovers(out) == [] and sorted(p.name for p in (out / "checkpoint").iterdir()) == [
            "latest", "step-00000002"]
        checkpoint.verify(checkpoint.latest(out))
        assert reader.load(out / "ckpt.pt")["step"] == 2
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)  # space is freed
        resumed = trainer(tokens, out, "--resume")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert same_weights(out, whole) and losses(out) == losses(whole)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ranks(cmd: list[str], world: int = 2) -> list[subprocess.Popen]:
    """`world` processes of one job, as torchrun starts them (gloo on 127.0.0.1)."""
    port = free_port()
    return [subprocess.Popen(cmd, env={**ENV, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(r),
                                       "WORLD_SIZE": str(world), "LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": str(world)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(world)]


def test_under_torchrun_rank_0_locks_for_the_job_and_a_refusal_or_sigterm_stops_every_rank(tokens, tmp_path):
    """Rank 0 takes the folder's lock for the whole job; a job refused by it stops on every rank with the same line
    (none is left waiting in a collective). A SIGTERM to one rank stops every rank at the same step, checkpointed."""
    from curate.io.outputs import locked

    out = tmp_path / "run"
    with locked(str(out), what="another job"):
        procs = ranks(command(tokens, out, micro_batch=2))
        results = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 2 and len(err.strip().splitlines()) == 1, err[-3000:]
        assert f"{out} is in use by another job" in err
    assert not [p.name for p in out.iterdir() if p.name != ".peneira.lock"]  # nothing was written (the lock goes on release)

    procs = ranks(command(tokens, out, micro_batch=2, steps=100_000, ckpt_every=0))
    try:
        deadline = time.monotonic() + 180
        while logged_steps(out) < 3:
            assert all(p.poll() is None for p in procs) and time.monotonic() < deadline, procs[1].stderr.read()
            time.sleep(0.05)
    finally:
        procs[1].send_signal(signal.SIGTERM)  # one rank only, as when a node is preempted first
        results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [128 + signal.SIGTERM] * 2, results[0][1][-2000:] + results[1][1][-2000:]
    step = int(checkpoint.latest(out).name.split("-")[1])
    assert f"stopped by SIGTERM at step {step}" in results[0][0]
    checkpoint.verify(checkpoint.latest(out))
    assert reader.load(out / "ckpt.pt")["step"] == step and leftovers(out) == []
