"""Issue 45: what curate.dedup compiles or builds at run time is kept on disk, in a read-only install too.

numba caches kernels (`cache=True`) beside the source, else in ~/.cache/numba, and raises at import when it can
write to neither (checked by hand on a read-only bind mount: `RuntimeError: cannot cache function ...: no locator
available`); `kernel_cache.numba_cache_dir` then names a folder of the temporary directory, which `import curate`
hands to numba as NUMBA_CACHE_DIR. Root writes everywhere but on a read-only mount, so a folder that cannot be
written is stood in for by one whose path runs through a regular file (it cannot be created). The per-code-point
tables (`text.kept_on_disk`) are checked against building them afresh.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import numpy as np

from curate.core.kernel_cache import numba_cache_dir


def _blocked(tmp_path) -> str:
    path = str(tmp_path / "file")
    open(path, "w").close()
    return path


def test_a_writable_install_keeps_numbas_own_choice(tmp_path):
    blocked = _blocked(tmp_path)
    assert numba_cache_dir(str(tmp_path / "pkg"), os.path.join(blocked, "numba"), {}) is None  # beside the source
    assert numba_cache_dir(os.path.join(blocked, "pkg"), str(tmp_path / "home/.cache/numba"), {}) is None  # user's


def test_read_only_install_and_home_cache_in_the_temporary_folder(tmp_path):
    blocked = _blocked(tmp_path)
    chosen = numba_cache_dir(os.path.join(blocked, "pkg"), os.path.join(blocked, "home/.cache/numba"), {})
    assert chosen is not None and os.path.dirname(chosen) == tempfile.gettempdir()
    # a NUMBA_CACHE_DIR of the user's is theirs to set, whatever can be written
    assert numba_cache_dir(os.path.join(blocked, "pkg"), blocked, {"NUMBA_CACHE_DIR": "/x"}) is None


def test_numba_caches_a_kernel_where_the_chosen_folder_says(tmp_path):
    """The reference for the choice above: numba itself, in a fresh process, writes its index file there."""
    (tmp_path / "kern.py").write_text("import numba\n@numba.njit(cache=True)\ndef f(x):\n    return x + 1\n")
    cache = tmp_path / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(tmp_path)}
    subprocess.run([sys.executable, "-c", "import curate, kern; assert kern.f(1) == 2"], env=env, check=True)
    assert any(p.suffix == ".nbi" for p in cache.rglob("*"))


def test_kept_on_disk_builds_once_then_loads(tmp_path, monkeypatch):
    from curate.dedup.text import kept_on_disk

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    calls = []

    def tables():
        calls.append(1)
        return np.arange(5, dtype=np.int32), np.ones(3, dtype=np.uint8)

    first = kept_on_disk(tables)()
    again = kept_on_disk(tables)()  # a new process's first call: loaded, not built
    assert len(calls) == 1 and all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(first, again, strict=True))
    (saved,) = (tmp_path / "peneira-tables").glob("*tables-*.npz")
    saved.write_bytes(saved.read_bytes()[:100])  # a damaged file is built again, not an error
    assert np.array_equal(kept_on_disk(tables)()[0], first[0]) and len(calls) == 2


CHECK = """
import numpy as np
from curate.dedup import sketch, text
for f in (text.char_classes, text._tables, sketch._fast_tables):
    got, ref = f(), f.build()
    got, ref = (got, ref) if isinstance(got, tuple) else ((got,), (ref,))
    assert len(got) == len(ref) and all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(got, ref)), f
"""


def test_the_loaded_unicode_tables_are_the_built_ones(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    build = subprocess.run([sys.executable, "-c", "from curate.dedup import sketch; sketch._fast_tables()"], env=env,
                           check=True)
    assert build.returncode == 0 and len(list((tmp_path / "peneira-tables").glob("*.npz"))) == 3
    subprocess.run([sys.executable, "-c", CHECK], env=env, check=True)
