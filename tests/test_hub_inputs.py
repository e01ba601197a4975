"""Hub inputs (issue 33): `--input hf://datasets/ORG/NAME/...` read through fsspec's Hugging Face filesystem
(`huggingface_hub.HfFileSystem`), against a local stand-in for the Hub's API (tests/_fakehub.py, 127.0.0.1 only,
`HF_ENDPOINT` pointed at it): the same documents as the same files read locally, the same resume fingerprints (a
file rewritten on the Hub is refused on resume), and a storage fault is a loud failure, never a silent difference."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _fakehub import FakeHub

pytest.importorskip("huggingface_hub", reason="huggingface_hub is not installed (HfFileSystem serves hf:// URLs)")

PIPE = """
from curate import Pipeline, dedup, readers, writers

pipeline = Pipeline(name="hub", reader=readers.Jsonl(source="pt"), steps=[dedup.Exact()], writer=writers.Parquet())
"""
CURATE = [str(Path(sys.executable).parent / "curate")]


def _curate(hub: FakeHub, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "0",
           "HF_HOME": str(Path(args[-1]).parent / "hf-home")}
    env.pop("HF_TOKEN", None)
    return subprocess.run([*CURATE, *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def repo(shared, tmp_path) -> Path:
    """A dataset repository in the Hub's layout: JSONL documents and the same documents as Parquet."""
    root = tmp_path / "hub"
    data = root / "datasets" / "org" / "corpus" / "data"
    data.mkdir(parents=True)
    lines = (shared / "text/pt/bosque_docs.jsonl").read_text(encoding="utf-8").splitlines()[:120]
    (data / "a.jsonl").write_text("\n".join(lines[:60]) + "\n", encoding="utf-8")
    (data / "b.jsonl").write_text("\n".join(lines[60:]) + "\n", encoding="utf-8")
    rows = [json.loads(x) for x in lines]
    pq.write_table(pa.table({"id": [r["id"] for r in rows], "text": [r["text"] for r in rows]}),
                   root / "datasets" / "org" / "corpus" / "docs.parquet")
    (tmp_path / "pipe.py").write_text(PIPE)
    return root


def _texts(out: Path) -> list[str]:
    return sorted(t for f in sorted((out / "data").glob("*.parquet")) for t in pq.read_table(f)["text"].to_pylist())


def test_a_run_reads_hub_jsonl_as_it_reads_the_same_files_locally(repo, tmp_path):
    with FakeHub(repo) as hub:
        r = _curate(hub, "run", str(tmp_path / "pipe.py"), "--input", "hf://datasets/org/corpus/data/*.jsonl",
                    "--output", str(tmp_path / "hub-run"), "--workers", "1", "--no-progress")
        assert r.returncode == 0, r.stderr
        assert any(q.startswith("GET /datasets/org/corpus/resolve/") for q in hub.requests)  # read over HTTP
    local = shutil.copytree(repo / "datasets" / "org" / "corpus" / "data", tmp_path / "local")
    r = subprocess.run([*CURATE, "run", str(tmp_path / "pipe.py"), "--input", f"{local}/*.jsonl", "--output",
                        str(tmp_path / "local-run"), "--workers", "1", "--no-progress"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert _texts(tmp_path / "hub-run") == _texts(tmp_path / "local-run") and len(_texts(tmp_path / "local-run")) > 50


def test_a_hub_file_rewritten_between_attempts_is_refused_on_resume(repo, tmp_path):
    """Same size, other bytes: only the Hub's blob id tells them apart (its listing has no ETag or mtime)."""
    args = ["run", str(tmp_path / "pipe.py"), "--input", "hf://datasets/org/corpus/data/*.jsonl", "--output",
            str(tmp_path / "out"), "--workers", "1", "--no-progress"]
    with FakeHub(repo) as hub:
        assert _curate(hub, *args).returncode == 0
        f = repo / "datasets" / "org" / "corpus" / "data" / "a.jsonl"
        raw = f.read_bytes()
        i = raw.index(b'"text": "') + 9
        f.write_bytes(raw[:i] + (b"X" if raw[i:i + 1] != b"X" else b"Y") + raw[i + 1 :])
        r = _curate(hub, *args)
    assert r.returncode != 0
    assert "a.jsonl" in r.stderr and "rewritten" in r.stderr, r.stderr


def test_tokenize_reads_hub_parquet(repo, tmp_path):
    from curate.tokens.tokenize import train_tokenizer

    local = repo / "datasets" / "org" / "corpus" / "docs.parquet"
    train_tokenizer([str(local)], 300, tmp_path / "tok.json", sample_chars=200_000)
    with FakeHub(repo) as hub:
        r = _curate(hub, "tokenize", "hf://datasets/org/corpus/docs.parquet", "--tokenizer", str(tmp_path / "tok.json"),
                    "--val-fraction", "0", "--workers", "1", "--no-progress", "--out", str(tmp_path / "hub-tok"))
        assert r.returncode == 0, r.stderr
    r = subprocess.run([*CURATE, "tokenize", str(local), "--tokenizer", str(tmp_path / "tok.json"), "--val-fraction",
                        "0", "--workers", "1", "--no-progress", "--out", str(tmp_path / "local-tok")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert ((tmp_path / "hub-tok" / "train" / "part-00000.bin").read_bytes()
            == (tmp_path / "local-tok" / "train" / "part-00000.bin").read_bytes())


def test_a_transient_hub_fault_gives_the_same_output(repo, tmp_path):
    """One file read answered 500: huggingface_hub's retry reads it again, and the run holds every document."""
    args = ["run", str(tmp_path / "pipe.py"), "--input", "hf://datasets/org/corpus/data/*.jsonl", "--workers", "1",
            "--no-progress", "--output"]
    with FakeHub(repo) as hub:
        assert _curate(hub, *args, str(tmp_path / "clean")).returncode == 0
        hub.faults["resolve"] = 1
        r = _curate(hub, *args, str(tmp_path / "faulty"))
    assert r.returncode == 0, r.stderr
    assert hub.faults["resolve"] == 0  # the fault was hit
    assert _texts(tmp_path / "faulty") == _texts(tmp_path / "clean")


@pytest.mark.slow  # huggingface_hub backs off ~23 s per request before it gives up
def test_a_hub_that_fails_every_read_is_a_loud_failure(repo, tmp_path):
    with FakeHub(repo) as hub:
        hub.faults["resolve"] = 10**6
        r = _curate(hub, "run", str(tmp_path / "pipe.py"), "--input", "hf://datasets/org/corpus/data/*.jsonl",
                    "--output", str(tmp_path / "out"), "--workers", "1", "--no-progress")
    assert r.returncode != 0
    assert not (tmp_path / "out" / "manifest.json").exists()
    assert "500" in r.stderr or "error" in r.stderr.lower()


def test_a_hub_file_with_an_overlong_line_is_counted_and_the_next_line_read(repo, tmp_path):
    """Hostile input over hf://: a 200 KB line past the reader's `max_line_bytes` (100 KB here) is passed over
    without being held (`read:too_large`, counted per record) and every other document is read."""
    data = repo / "datasets" / "org" / "corpus" / "data"
    lines = (data / "a.jsonl").read_text(encoding="utf-8").splitlines()
    big = json.dumps({"id": "huge", "text": "word " * 40_000})
    (data / "a.jsonl").write_text("\n".join([lines[0], big, *lines[1:]]) + "\n", encoding="utf-8")
    (tmp_path / "pipe.py").write_text(PIPE.replace('readers.Jsonl(source="pt")',
                                                   'readers.Jsonl(source="pt", max_line_bytes=100_000)'))
    with FakeHub(repo) as hub:
        r = _curate(hub, "run", str(tmp_path / "pipe.py"), "--input", "hf://datasets/org/corpus/data/a.jsonl",
                    "--output", str(tmp_path / "out"), "--workers", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    read = json.loads((tmp_path / "out" / "stats.json").read_text())["steps"][0]
    assert read["dropped"] == {"read:too_large": 1}, read
    ids = {i for f in (tmp_path / "out" / "data").glob("*.parquet") for i in pq.read_table(f)["text"].to_pylist()}
    assert read["docs_out"] == len(lines) and not any(t.startswith("word word") for t in ids)
