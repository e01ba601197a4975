"""benchmarks/pipeline.py's arithmetic, on made-up results: the kept-set agreement (multisets), the CPU seconds
per further copy by stage, and the cost table's core-hours per TB, each against a hand computation."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("pipeline_bench", ROOT / "benchmarks" / "pipeline.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_agreement_counts_copies_as_a_multiset(bench):
    a = [["r1", "u1"], ["r1", "u1"], ["r2", "u2"], ["r3", "u3"]]
    b = [["r1", "u1"], ["r2", "u2"], ["r2", "u2"], ["r4", "u4"]]
    got = bench.agreement(a, b)
    assert got == {"both": 2, "only_peneira": 2, "only_datatrove": 2, "jaccard": 2 / 6}


def _results() -> dict:
    def side(step_cpu, kept):
        return {"cpu": sum(step_cpu.values()) + 1, "run_cpu": sum(step_cpu.values()), "wall": 1.0, "kept": kept,
                "step_cpu": step_cpu}

    p1 = {"read": 1.0, "extract": 2.0, "c4": 0.5, "write and runner": 3.0}
    p3 = {"read": 3.0, "extract": 6.0, "c4": 1.5, "write and runner": 4.0}
    d1 = {"🕷 Warc": 2.0, "⛏ Trafilatura": 20.0, "⛰ C4 Quality": 1.0, "📒 Parquet": 0.5, "executor": 0.1}
    d3 = {"🕷 Warc": 6.0, "⛏ Trafilatura": 60.0, "⛰ C4 Quality": 3.0, "📒 Parquet": 0.5, "executor": 0.1}
    runs = {"1": {"mib": 512.0, "pages": 100, "peneira": side(p1, 10), "datatrove": side(d1, 8),
                  "agreement": {"both": 7, "only_peneira": 3, "only_datatrove": 1, "jaccard": 7 / 11}},
            "3": {"mib": 1536.0, "pages": 300, "peneira": {**side(p3, 30), "kept_chars": 3_000_000},
                  "datatrove": side(d3, 24),
                  "agreement": {"both": 21, "only_peneira": 9, "only_datatrove": 3, "jaccard": 21 / 33}}}
    return {"copies": 3, "runs": runs, "command": "benchmarks/pipeline.py", "reader_class": "FastWarc",
            "marginal": {"peneira": 4.5, "datatrove": 42.0}, "marginal_mib": 512.0}


def test_per_copy_stages(bench):
    res = _results()
    assert bench.per_copy_stages(res, "peneira") == {"read": 1.0, "extract": 2.0, "filters": 0.5,
                                                     "write (and the runner)": 0.5}
    assert bench.per_copy_stages(res, "datatrove") == pytest.approx(
        {"read": 2.0, "extract": 20.0, "filters": 1.0, "write (and the runner)": 0.0})


def test_cost_table_core_hours_per_tb(bench):
    res = _results()
    text = bench.markdown(res, usd=0.5, instance="test", dedup_ms=1.0, tok_per_s=1000.0, chars_per_tok=2.0)
    gib_per_tb = 1e12 / 2**30
    # Peneira read to write: 4 CPU s per further copy of 0.5 GiB -> 8 s per GiB
    hours = 8 * gib_per_tb / 3600
    row = next(line for line in text.splitlines() if line.startswith("| **read to write**"))
    assert row.split("|")[1:8] == [" **read to write** ", " 8.00 ", " 46.00 ", f" **{hours:.1f}** ",
                                   f" **{46 * gib_per_tb / 3600:.1f}** ", f" **{hours * 0.5:.2f}** ",
                                   f" **{46 * gib_per_tb / 3600 * 0.5:.2f}** "]
    assert "per further copy (start-up amortised): **9.3x**" in text  # 42 / 4.5
    pages = next(line for line in text.splitlines() if line.startswith("Per page read"))
    assert pages.startswith("Per page read (100 a copy): Peneira 40.00 ms, datatrove 230.00 ms")
