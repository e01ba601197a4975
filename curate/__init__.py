"""Peneira curation: pipelines that turn raw crawls into clean, deduplicated, tokenized pretraining data."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curate.core.document import Document
    from curate.core.step import Filter, GlobalStep, Reject, Step
    from curate.run.pipeline import Pipeline

__all__ = ["Document", "Filter", "GlobalStep", "Pipeline", "Reject", "Step", "__version__"]

# Step families load on first use, so `import curate` stays fast and a missing optional
# dependency only matters to the pipelines that use it.
_MODULES = {"readers": "curate.io.readers", "writers": "curate.io.writers", "extract": "curate.extract",
            "filters": "curate.filters", "quality": "curate.quality", "decontam": "curate.decontam",
            "dedup": "curate.dedup", "mix": "curate.tokens.mix", "tokenize": "curate.tokens.tokenize"}


# The public classes load on first use too: `train/data.py` imports `curate.io.token_format` in every rank, which
# runs this file, and must not pay for the pipeline machinery (~30 MiB resident) it never uses.
_NAMES = {"Document": "curate.core.document", "Filter": "curate.core.step", "GlobalStep": "curate.core.step",
          "Reject": "curate.core.step", "Step": "curate.core.step", "Pipeline": "curate.run.pipeline"}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # one home: pyproject.toml; read on first use, as importlib.metadata costs ~20 ms
        from importlib.metadata import version

        return version("peneira")
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'curate' has no attribute {name!r}")
