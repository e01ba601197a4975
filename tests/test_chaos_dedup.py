"""Issue 29, case 10: a disk that fills up while dedup writes its work files.

MinHash wrote its signatures into a sparse memory map (`np.lib.format.open_memmap(mode="w+")`): the file's
size was promised but no block was taken, so the page fault of a write past the free space was a SIGBUS,
exit 135 and no message (with two workers, a `BrokenProcessPool` that never said "disk full"). Now every
dedup work file is written with `write`, its space reserved first where the filesystem can
(`posix_fallocate`), and a full disk is an OSError naming the file; a rerun after the disk grows resumes
and ends with the documents of a run that never ran out of space.

The disks are real tmpfs mounts (`tests/_chaos.py::small_disk`: root only; skipped, never passed, elsewhere).
"""

from __future__ import annotations

import errno
import glob
import json
import os
import random
import re
import signal
import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _chaos import small_disk

from curate import Pipeline, readers
from curate.dedup import common, minhash
from curate.run.executors.local import LocalExecutor

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = "from curate import Pipeline, dedup, readers\n" \
           "pipeline = Pipeline(name='mh', reader=readers.Jsonl(), steps=[dedup.MinHash()])\n"


def corpus(path: Path, docs: int = 8000) -> Path:
    """`docs` pages of 12 words drawn from 3,000 made-up words, and a near copy of every 10th one."""
    rng = random.Random(0)
    vocab = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9))) for _ in range(3000)]
    texts = [" ".join(rng.choice(vocab) for _ in range(12)) for _ in range(docs)]
    texts += [t + " again" for t in texts[::10]]
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    return path


def shard(tmp_path: Path, docs: int) -> str:
    """One text shard of a run (what a global step reads) of `docs` documents."""
    Pipeline(name="s", reader=readers.Jsonl(), steps=[]).run(
        inputs=str(corpus(tmp_path / "in.jsonl", docs)), output=str(tmp_path / "shard"),
        executor=LocalExecutor(1, progress=False), progress=False)
    [path] = glob.glob(str(tmp_path / "shard" / "data" / "*.parquet"))
    return path


def data_rows(out: Path) -> list[tuple]:
    return sorted(tuple(r.values()) for p in sorted(glob.glob(f"{out}/data/*.parquet")) for r in pq.read_table(p).to_pylist())


def curate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "curate", *args], capture_output=True, text=True, timeout=600,
                          cwd=ROOT)


def test_dedup_writes_no_sparse_memory_map():
    """A memory map opened for writing promises space it never takes: a full disk is then a SIGBUS."""
    found = []
    for path in sorted((ROOT / "curate" / "dedup").glob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"open_memmap|np\.memmap|mmap\.mmap|mode=[\"'](w\+|r\+)", line):
                found.append(f"{path.name}:{n}: {line.strip()}")
    assert found == []


def test_signatures_on_a_full_disk_are_an_oserror_naming_the_file_before_any_is_computed(tmp_path):
    path = shard(tmp_path, 4000)  # 4,000 x 112 x 4 bytes of signatures: 1.7 MiB, on a disk of 1 MiB
    with small_disk(tmp_path / "disk", "1m") as disk:
        task = minhash.SignatureTask(0, path, str(disk / "work"), 112, 1, 5, 14, 8, 1, 4096)
        with pytest.raises(OSError) as e:
            minhash.signature_shard(task)
        assert e.value.errno == errno.ENOSPC
        assert re.fullmatch(re.escape(str(disk / "work" / "sigs")) + r"/00000\.npy\.tmp\.\d+\.npy", e.value.filename)
        assert os.listdir(disk / "work" / "sigs") == []  # the temporary file is gone, the space free again


def test_band_and_table_files_on_a_full_disk_name_the_file(tmp_path):
    """np.save (`tofile`) said "N requested and M written" and pyarrow "Error writing bytes", naming nothing."""
    rows = np.arange(3 * 60_000, dtype=np.uint64).reshape(-1, 3)  # 1.4 MiB
    with small_disk(tmp_path / "disk", "1m") as disk:
        with pytest.raises(OSError) as e:
            minhash.write_bands([(np.zeros(len(rows), np.int64), rows)], 1, str(disk / "bands" / "00000.npy"))
        assert e.value.errno == errno.ENOSPC and e.value.filename.startswith(str(disk / "bands" / "00000.npy.tmp."))
        table = pa.table({"x": np.random.default_rng(0).integers(0, 2**63, 300_000, dtype=np.uint64)})  # 2.3 MiB
        with pytest.raises(OSError) as e:
            common.write_table(table, str(disk / "t.parquet"))
        assert e.value.errno == errno.ENOSPC and e.value.filename.startswith(str(disk / "t.parquet.tmp."))
        assert sorted(os.listdir(disk)) == ["bands"] and os.listdir(disk / "bands") == []


@pytest.mark.parametrize("workers", [1, 2])
def test_minhash_run_on_a_full_disk_says_so_and_a_rerun_on_a_larger_disk_completes_identically(tmp_path, workers):
    """`curate run` with MinHash, its output on a 2 MiB disk: the stage-0 shard fits, the signatures (3.9 MiB)
    do not. Before issue 29: exit 135 (SIGBUS) with one worker, BrokenProcessPool with two."""
    src = corpus(tmp_path / "in.jsonl")
    pipe = tmp_path / "pipe.py"
    pipe.write_text(PIPELINE)
    ref = Pipeline.from_file(pipe).run(inputs=str(src), output=str(tmp_path / "ref"),
                                       executor=LocalExecutor(1, progress=False), progress=False)
    assert 0 < ref["docs_written"] < ref["docs_read"] == 8800
    with small_disk(tmp_path / "disk", "2m") as disk:
        out = disk / "out"
        full = curate("run", str(pipe), "--input", str(src), "--output", str(out), "--workers", str(workers))
        assert full.returncode not in (0, 128 + signal.SIGBUS, -signal.SIGBUS), full.stderr[-2000:]
        assert "BrokenProcessPool" not in full.stderr and "Traceback" not in full.stderr
        last = full.stderr.strip().splitlines()[-1]
        assert "no space left" in last.lower() and f"{out}/_work/global1/sigs/00000.npy.tmp." in last, last
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)  # the disk grows
        again = curate("run", str(pipe), "--input", str(src), "--output", str(out), "--workers", str(workers))
        assert again.returncode == 0, again.stderr[-2000:]
        assert data_rows(out) == data_rows(tmp_path / "ref")
        stats = json.loads((out / "stats.json").read_text())
        assert stats == json.loads((tmp_path / "ref" / "stats.json").read_text()) | {"steps": stats["steps"]}
        assert [(s["docs_in"], s["docs_out"]) for s in stats["steps"]] == [(8800, 8800), (8800, ref["docs_written"])]
