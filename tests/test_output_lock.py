"""The output lock (issue 29.18): one writer per output folder, across processes, on disk and on a store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from curate.core.errors import UsageError
from curate.io import fs, outputs

HOLD = """
import sys, time
from curate.io import outputs
with outputs.locked(sys.argv[1], what="`curate run`"):
    print("held", flush=True)
    time.sleep(60)
"""


def _holder(out: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, out], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_process_is_refused_with_the_holder_named_and_a_kill_frees_it(tmp_path):
    out = str(tmp_path / "out")
    proc = _holder(out)
    try:
        with pytest.raises(UsageError, match=rf"in use by `curate run` \(pid {proc.pid} "), \
                outputs.locked(out, what="`curate mix`"):
            pass
    finally:
        proc.send_signal(signal.SIGKILL)  # no cleanup runs: the kernel must still drop the lock
        proc.wait()
    with outputs.locked(out, what="`curate mix`"):
        assert outputs.claim(out, what="`curate mix`", option="--out", own=lambda: False, layout=["x"]) is False


def test_the_lock_file_is_neither_foreign_nor_removed_by_overwrite(tmp_path):
    out = tmp_path / "out"
    with outputs.locked(str(out), what="`curate run`"):
        (out / "x").write_text("old")
        outputs.claim(str(out), what="`curate run`", option="--out", own=lambda: False, layout=["x"], overwrite=True)
        assert sorted(os.listdir(out)) == [outputs.LOCK_NAME]


def test_a_lease_on_a_store_refuses_while_live_and_is_taken_over_when_expired():
    out = f"memory://lock-test-{os.getpid()}/out"
    with outputs.locked(out, what="`curate tokenize`"):
        lease = json.loads(fs.read_bytes(fs.join(out, outputs.LOCK_NAME)))
        assert lease["expires"] > time.time()
        with pytest.raises(UsageError, match="in use by `curate tokenize`"), outputs.locked(out, what="x"):
            pass
    assert not fs.exists(fs.join(out, outputs.LOCK_NAME))  # released on exit
    # a holder that died leaves its lease behind; once expired it is taken over
    with fs.open(fs.join(out, outputs.LOCK_NAME), "w") as f:
        f.write(json.dumps({"what": "dead", "pid": 1, "host": "h", "token": "t", "expires": time.time() - 1}))
    with outputs.locked(out, what="`curate mix`"):
        assert json.loads(fs.read_bytes(fs.join(out, outputs.LOCK_NAME)))["what"] == "`curate mix`"


def test_on_s3_a_renewed_lease_outlives_its_ttl_and_a_killed_holders_lease_expires(s3_bucket, tmp_path):
    """Two processes and a real S3 API (moto): the holder renews its 1.5 s lease, so 3 s later the folder is still
    refused; killed, it renews no more and the lease is taken over once expired."""
    out = f"{s3_bucket}/out"
    env = {**os.environ, "PENEIRA_LEASE_SECONDS": "1.5"}
    proc = subprocess.Popen([sys.executable, "-c", HOLD, out], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "held"
        time.sleep(3)
        with pytest.raises(UsageError, match="in use by `curate run`"), outputs.locked(out, what="x"):
            pass
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 10
    while True:
        try:
            with outputs.locked(out, what="`curate mix`"):
                break
        except UsageError:
            assert time.monotonic() < deadline, "a dead holder's lease never expired"
            time.sleep(0.3)
