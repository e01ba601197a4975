"""Chaos lane for issue 42: a server that answers ranges wrongly, and a Slurm driver cancelled while pending.

* `curate run --input http://… --tasks 5` over real WARC files behind a proxy that answers every range's first
  request with another range, a short or long body, or a 503: the output is the local run's, byte for byte.
* `curate run --detach` while the one-node cluster is full (a blocker job holds every CPU): the driver is
  pending, yet `curate status` lists it (its id was recorded before it could start: submitted held, recorded,
  released); `curate cancel` waits for Slurm to confirm and says it stopped a pending job; and a driver that
  starts after a cancel (its scancel lost) exits without work.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from _ccserver import FaultProxy, RangeServer, planned
from test_slurm import CURATE, PIPELINE, _job_state, curate, slurm, warcs  # noqa: F401 (slurm: autouse fixture)

pytestmark = pytest.mark.timeout(600)


def _shards(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "data").glob("*.parquet"))}


@pytest.mark.slow  # ~18 s on 2 cores: two runs of the test pipeline over real WARC files
def test_curate_run_over_a_server_that_answers_wrong_ranges_writes_the_local_output(shared, tmp_path):
    root = shared / "warc" / "wget"
    (tmp_path / "pipe.py").write_text(PIPELINE)
    server = RangeServer(root)
    proxy = FaultProxy(server.url, planned(every=1, kinds=("shifted", "short", "long", "503"), only=".warc"))
    env = {"DEDUP": "0", "PENEIRA_CC_BACKOFF_BASE": "0.01", "PENEIRA_CC_BACKOFF_CAP": "0.05"}
    try:
        names = sorted(p.name for p in root.glob("*.warc.gz"))
        for out, inputs in (("http", [proxy.url + n for n in names]), ("local", [str(root / n) for n in names])):
            curate("run", str(tmp_path / "pipe.py"), *[a for i in inputs for a in ("--input", i)], "--output",
                   str(tmp_path / out), "--tasks", "5", "--workers", "2", "--no-progress", env=env)
    finally:
        proxy.close()
        server.close()
    assert _shards(tmp_path / "http") == _shards(tmp_path / "local") and _shards(tmp_path / "local")
    ranged = [k for k in proxy.attempts if k[1]]  # every range's first reply was a fault
    assert sum(proxy.faults.values()) == len(ranged) > 5 and len(set(proxy.faults) - {"503"}) >= 2, proxy.faults


def _blocker() -> str:
    """A job holding every CPU of the one node, so that the next job stays pending (reason Resources)."""
    p = subprocess.run(["sbatch", "--parsable", "--exclusive", "--job-name=blocker", "--output=/dev/null",
                        "--wrap=sleep 300"], capture_output=True, text=True, check=True)
    job = p.stdout.strip().split(";")[0]
    deadline = time.time() + 60
    while not _job_state(job).startswith("RUNNING"):
        assert time.time() < deadline, f"the blocker job {job} did not start: {_job_state(job)}"
        time.sleep(0.3)
    return job


@pytest.mark.slow
def test_a_pending_driver_is_seen_cancelled_and_a_late_start_does_no_work(shared, tmp_path):
    (tmp_path / "pipe.py").write_text(PIPELINE)
    args = ["run", str(tmp_path / "pipe.py"), *warcs(shared, few=True), "--executor", "slurm", "--detach",
            "--no-progress", "--log-dir", str(tmp_path / "logs")]
    blocker = _blocker()
    try:
        out = tmp_path / "out"  # a fresh output: before, `curate cancel` said "no such folder"
        job = curate(*args, "--output", str(out)).stdout.split("as Slurm job ")[1].split(";")[0]
        assert _job_state(job).startswith("PENDING")
        assert "1 job(s) submitted; tasks: 1 pending" in curate("status", str(out)).stdout
        said = curate("cancel", str(out)).stdout
        assert f"stopped job {job} (pending)" in said, said
        assert _job_state(job).startswith("CANCELLED") or not _job_state(job)

        late = tmp_path / "late"  # the cancel file written while pending, its scancel lost: the driver starts
        job = curate(*args, "--output", str(late)).stdout.split("as Slurm job ")[1].split(";")[0]
        (late / "_work" / "slurm" / "cancel").write_text(f"{time.time()}\n")
    finally:
        subprocess.run(["scancel", blocker], check=False)
    deadline = time.time() + 120
    while not (state := _job_state(job)).startswith(("COMPLETED", "FAILED", "CANCELLED")) and state:
        assert time.time() < deadline, f"the late driver {job} did not end: {state}"
        time.sleep(0.5)
    log = (tmp_path / "logs" / f"curate-driver-{job}.log").read_text()
    assert log.strip().endswith("stopped by SIGTERM: rerun the same command to resume"), log
    assert sorted(os.listdir(late)) == ["_work"] and sorted(os.listdir(late / "_work")) == ["slurm"], "no work done"
