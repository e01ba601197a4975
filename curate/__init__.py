"""Peneira curation: pipelines that turn raw crawls into clean, deduplicated, tokenized pretraining data."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from curate.core import kernel_cache
from curate.core.version import __version__

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


# numba's kernel cache where the install and the home are read-only (curate.core.kernel_cache): set before any
# module of curate.dedup defines a kernel, in every process that imports curate, workers included.
_cache = kernel_cache.numba_cache_dir(os.path.join(os.path.dirname(__file__), "dedup"), kernel_cache.user_numba_dir(),
                                      os.environ)
if _cache:
    os.environ["NUMBA_CACHE_DIR"] = _cache


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'curate' has no attribute {name!r}")
