"""`curate status` counts a run's first stage in the units its plan made (issue 42.4): byte ranges of a split
file, not input files (it said "6 of 2 task(s) done")."""

from __future__ import annotations

from pathlib import Path

import pytest

from curate.cli.status import status_lines
from curate.io import readers
from curate.io.plan import plan_splits
from curate.run.pipeline import Pipeline

GSM8K = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "benchmarks/gsm8k/test.jsonl"

pytestmark = pytest.mark.skipif(not GSM8K.exists(), reason="needs /work/shared/data (the real test data)")


def test_status_counts_the_ranges_the_plan_made(tmp_path):
    planned = len(plan_splits(str(GSM8K), tasks=7))  # the reference: the planner's own count
    assert planned == 7
    pipe = Pipeline(name="units", reader=readers.Jsonl(text_key="question"), steps=[])
    pipe.run(inputs=[str(GSM8K)], output=str(tmp_path / "out"), workers=1, progress=False, tasks=7)
    lines = status_lines(str(tmp_path / "out"))
    assert any(f"stage 0: {planned} of {planned} task(s) done" in line for line in lines), lines
