"""Issue 45: curate.dedup's compiled kernels are cached on disk (numba `cache=True`) in a read-only install too.

numba caches beside the source, else in ~/.cache/numba, and raises at import when it can write to neither
(checked by hand on a read-only bind mount: `RuntimeError: cannot cache function ...: no locator available`).
`curate._numba_cache_dir` then names a folder of the temporary directory, which `import curate` hands to numba
as NUMBA_CACHE_DIR before any kernel is defined. Root writes everywhere but on a read-only mount, so a folder
that cannot be written is stood in for by one whose path runs through a regular file (it cannot be created).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from curate import _numba_cache_dir


def test_a_writable_install_keeps_numbas_own_choice(tmp_path):
    blocked = str(tmp_path / "file")
    open(blocked, "w").close()
    assert _numba_cache_dir(str(tmp_path / "pkg"), os.path.join(blocked, "numba"), {}) is None  # beside the source
    assert _numba_cache_dir(os.path.join(blocked, "pkg"), str(tmp_path / "home/.cache/numba"), {}) is None  # user's


def test_read_only_install_and_home_cache_in_the_temporary_folder(tmp_path):
    blocked = str(tmp_path / "file")
    open(blocked, "w").close()
    chosen = _numba_cache_dir(os.path.join(blocked, "pkg"), os.path.join(blocked, "home/.cache/numba"), {})
    assert chosen is not None and os.path.dirname(chosen) == tempfile.gettempdir()
    # a NUMBA_CACHE_DIR of the user's is theirs to set, whatever can be written
    assert _numba_cache_dir(os.path.join(blocked, "pkg"), blocked, {"NUMBA_CACHE_DIR": "/x"}) is None


def test_numba_caches_a_kernel_where_the_chosen_folder_says(tmp_path):
    """The reference for the choice above: numba itself, in a fresh process, writes its index file there."""
    (tmp_path / "kern.py").write_text("import numba\n@numba.njit(cache=True)\ndef f(x):\n    return x + 1\n")
    cache = tmp_path / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(tmp_path)}
    subprocess.run([sys.executable, "-c", "import curate, kern; assert kern.f(1) == 2"], env=env, check=True)
    assert any(p.suffix == ".nbi" for p in cache.rglob("*"))
