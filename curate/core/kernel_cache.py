"""Where compiled kernels and their tables are kept between processes (issue 45: a worker's fixed cost).

curate.dedup compiles its kernels with numba (`cache=True`) and builds per-code-point tables from `unicodedata`;
both cost a worker process ~0.5 CPU s each when made afresh, and ~10 ms when loaded from disk. numba writes its
cache beside the source (the package's __pycache__), else under ~/.cache/numba, and raises at import when it can
write to neither: a read-only install whose home is read-only too (a container image, a cluster's shared software
tree) could not import curate.dedup at all. `numba_cache_dir` names a folder of the temporary directory for that
case (`import curate` hands it to numba as NUMBA_CACHE_DIR before any kernel is defined), and `folder` is where
the tables go: the same place numba's cache is.
"""

from __future__ import annotations

import os


def numba_cache_dir(package: str, user: str, environ: os._Environ | dict) -> str | None:
    """The NUMBA_CACHE_DIR to set, or None where numba finds a writable place itself (`package`/__pycache__ or
    `user`) or the user has set one."""
    if environ.get("NUMBA_CACHE_DIR") or writable(os.path.join(package, "__pycache__")) or writable(user):
        return None
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"peneira-numba-{os.getuid() if hasattr(os, 'getuid') else 0}")


def user_numba_dir() -> str:
    """numba's user-wide cache folder (its `appdirs.user_cache_dir` on Linux)."""
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "numba")


def folder(package: str) -> str:
    """Where a package's cached tables go: NUMBA_CACHE_DIR where set, else its __pycache__ where that can be
    written, else numba's user-wide folder, as numba chooses for its kernels."""
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given:
        return os.path.join(given, "peneira-tables")
    here = os.path.join(package, "__pycache__")
    return here if writable(here) else os.path.join(user_numba_dir(), "peneira-tables")


def writable(path: str) -> bool:
    """Whether folder `path` can be written, or created: its nearest existing ancestor is a folder we may write."""
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    return os.path.isdir(path) and os.access(path, os.W_OK)
