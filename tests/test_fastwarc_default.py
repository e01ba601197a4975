"""pipelines/web.py reads with FastWARC where it is installed (`readers.fastest_warc`), and that changes nothing
it keeps: the web pipeline over the shared WARC and WET files writes the same shards with either reader. The
reference is `readers.Warc` (warcio); tests/test_readers.py checks the two readers document by document."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate import Pipeline
from curate.io import readers

ROOT = Path(__file__).resolve().parents[1]


def test_fastest_warc_is_fastwarc_where_installed_else_warc(monkeypatch):
    pytest.importorskip("fastwarc")
    assert type(readers.fastest_warc(source="web")) is readers.FastWarc
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "fastwarc" else real(name, *a))
    picked = readers.fastest_warc(source="web")
    assert type(picked) is readers.Warc and picked.source == "web"


def _kept(reader: readers.Warc, inputs: list[str], out: Path) -> list[dict]:
    pipeline = Pipeline.from_file(str(ROOT / "pipelines" / "web.py"))
    pipeline.reader = reader
    pipeline.run(inputs=inputs, output=str(out), workers=1, progress=False)
    rows = [r for p in sorted((out / "data").rglob("*.parquet")) for r in pq.read_table(p).to_pylist()]
    return sorted(rows, key=lambda r: r["id"])


def test_web_pipeline_keeps_the_same_documents_with_either_reader(shared, tmp_path, monkeypatch):
    pytest.importorskip("fastwarc")
    monkeypatch.setenv("PENEIRA_LID_MODEL", str(shared / "models" / "lid.176.ftz"))
    assert type(Pipeline.from_file(str(ROOT / "pipelines" / "web.py")).reader) is readers.FastWarc
    inputs = sorted(str(p) for p in (shared / "warc").rglob("*.warc*.gz") if not p.name.endswith(".wat.gz"))
    warcio = _kept(readers.Warc(source="web"), inputs, tmp_path / "warcio")
    fast = _kept(readers.FastWarc(source="web"), inputs, tmp_path / "fastwarc")
    assert len(warcio) > 40  # the shared crawls: 59 pages kept when this was written
    assert fast == warcio
