"""Peneira curation: pipelines that turn raw crawls into clean, deduplicated, tokenized pretraining data."""

from __future__ import annotations

import importlib
import os
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


def _numba_cache_dir(package: str, user: str, environ: os._Environ | dict) -> str | None:
    """Where numba must cache the compiled kernels of curate.dedup (`cache=True`), if not where it would.

    numba writes its cache beside the source (`package`/__pycache__), else under the user's cache folder (`user`,
    ~/.cache/numba), and raises at import when it can write to neither: a read-only install whose home is
    read-only too (a container image, a cluster's shared software tree) could not import curate.dedup at all.
    There, and only there, the kernels go to the temporary folder (compiled once per machine, then loaded);
    NUMBA_CACHE_DIR, when set, is left to decide."""
    if environ.get("NUMBA_CACHE_DIR") or _writable(os.path.join(package, "__pycache__")) or _writable(user):
        return None
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"peneira-numba-{os.getuid() if hasattr(os, 'getuid') else 0}")


def _writable(folder: str) -> bool:
    """Whether `folder` can be written, or created: its nearest existing ancestor is a folder we may write."""
    while not os.path.exists(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
    return os.path.isdir(folder) and os.access(folder, os.W_OK)


_cache = _numba_cache_dir(os.path.join(os.path.dirname(__file__), "dedup"), os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "numba"), os.environ)
if _cache:
    os.environ["NUMBA_CACHE_DIR"] = _cache


def __getattr__(name: str) -> Any:
    if name == "__version__":  # one home: pyproject.toml; read on first use, as importlib.metadata costs ~20 ms
        from importlib.metadata import version

        return version("peneira")
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'curate' has no attribute {name!r}")
