"""Shared test fixtures. Real data lives in ../shared/data beside the repository (PENEIRA_SHARED_DATA overrides)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PENEIRA_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"shared test data not found at {SHARED} (set PENEIRA_SHARED_DATA)")
    return SHARED
