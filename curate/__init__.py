"""Peneira curation: pipelines that turn raw crawls into clean, deduplicated, tokenized pretraining data."""

from __future__ import annotations

import importlib
from typing import Any

from curate.document import Document
from curate.pipeline import Pipeline
from curate.step import Filter, GlobalStep, Reject, Step

__version__ = "0.1.0"
__all__ = ["Document", "Filter", "GlobalStep", "Pipeline", "Reject", "Step", "__version__"]

# Step families load on first use, so `import curate` stays fast and a missing optional
# dependency only matters to the pipelines that use it.
_MODULES = {"readers", "extract", "filters", "quality", "decontam", "dedup", "writers", "mix", "tokenize"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(f"curate.{name}")
    raise AttributeError(f"module 'curate' has no attribute {name!r}")
