"""Paths for runs: plain local paths as before, URLs (`file://`, `s3://`, `gs://`, `memory://`, …) through fsspec.

Every function takes either a local path or a URL. A path without `://` never touches fsspec: it
goes to `os` and `open` exactly as the code did before this module existed. A URL is resolved with
`fsspec.core.url_to_fs`; results that name files (`glob`, `listdir`) keep the URL form, so a path
that goes in as a URL comes back as one and can be handed to another process or node.

Atomic publish (`Staged`, `atomic_open`, `atomic_write_text`): a writer writes a *local* temporary
file, and `commit` makes it visible under the final name in one step. What "one step" means:

| backend | temporary file | commit | a reader or a rerun sees |
|---|---|---|---|
| local path, `file://` | beside the final file (same directory, hidden name) | `rename` (atomic on POSIX) | the old file or the whole new one |
| object stores (`s3://`, `gs://`, `az://`, …) | local spool directory (`$PENEIRA_SPOOL`, else the system temp dir) | one upload of the final object (`put_file`) | no object, or the whole object: stores publish an object only when its upload completes (a single PUT, or a multipart upload at its completion call) |
| `memory://` (tests) | local spool | one `put_file` | no object, or the whole object |

Nothing is ever renamed on an object store (a rename there is a copy plus a delete, neither atomic
nor cheap). A writer that raises before commit leaves nothing under the final name (`discard`).
A task killed mid-write leaves at most a temporary file: beside the final one on a local disk
(hidden, never matched by `*.parquet`), or in the node's spool directory for object stores.
Completion markers are still written last, so a marker present means every file before it is whole.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import posixpath
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from curate.core.errors import UsageError
from curate.io.retry import Exhausted, Policy, Refused, is_throttle, transient_errors

__all__ = [
    "Staged", "atomic_open", "atomic_write_text", "basename", "cat_files", "dataset", "exists", "glob", "is_url", "isdir", "isfile", "join", "listdir",
    "listdir_prefix", "unique_files",
    "load_npy", "local_path", "makedirs", "open", "parquet_file", "read_bytes", "read_table", "relpath", "remove", "remove_temp_files", "retrying",
    "size", "url_to_fs", "without_protocol",
]


def is_url(path: str | os.PathLike) -> bool:
    """A path with a protocol (`scheme://…`): handled by fsspec. Anything else is a plain local path."""
    return "://" in os.fspath(path)


def url_to_fs(path: str) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) for a URL. The instances are cached by fsspec.

    Without the listings cache (`use_listings_cache=False`, a documented fsspec/s3fs option): s3fs
    otherwise answers `info`, hence `open`, `exists`, `isfile` and `size`, from the last listing of
    the parent folder, so a completion marker a worker process wrote after the driver listed `_done/`
    was "missing" (issue 22.1). Every answer here comes from the store. Chained URLs
    (`simplecache::s3://…`) keep their filesystems' defaults.
    """
    from fsspec.core import url_to_fs as _url_to_fs

    if "::" in path:
        return _url_to_fs(path)
    try:
        return _url_to_fs(path, use_listings_cache=False)
    except TypeError:  # an implementation whose constructor takes no listing options (it caches none)
        return _url_to_fs(path)


def _is_local_fs(fs: Any) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def local_path(path: str | os.PathLike) -> str | None:
    """The OS path of a plain path or a `file://` URL; None for any other filesystem."""
    path = os.fspath(path)
    if not is_url(path):
        return path
    fs, inner = url_to_fs(path)
    return inner if _is_local_fs(fs) else None


def without_protocol(path: str | os.PathLike) -> str:
    """A URL's part after its protocol (`s3://b/k` -> `b/k`, `http://h/p` -> `h/p`), a `file://` URL's OS path,
    a plain path as given: how a file is named the same wherever it is stored (`plan.input_keys`)."""
    path = os.fspath(path)
    if not is_url(path):
        return path
    return local_path(path) or path.split("://", 1)[1]


def join(base: str, *parts: str) -> str:
    """Join path components; URLs with `/` whatever the OS."""
    return posixpath.join(base, *parts) if is_url(base) else os.path.join(base, *parts)


def basename(path: str) -> str:
    return posixpath.basename(path) if is_url(path) else os.path.basename(path)


def relpath(path: str, start: str) -> str:
    """`path` relative to `start` (a directory holding it)."""
    if not is_url(path):
        return os.path.relpath(path, start)
    fs, p = url_to_fs(path)
    _, s = url_to_fs(start)
    return posixpath.relpath(p, s)


def _unstrip(fs: Any, inner: str, like: str) -> str:
    """A path inside `fs` back as a URL with the protocol of `like`."""
    stripped = fs._strip_protocol(inner)
    if is_url(stripped):  # HTTP's filesystem keeps the whole URL as its path: `http://` once (issue 42.4)
        return stripped
    proto, rest = like.split("://", 1)  # chained URLs (`simplecache::s3://…`) keep their chain
    if stripped.startswith("/") and not rest.startswith("/"):  # `memory://a/b` stays so, not `memory:///a/b`:
        stripped = stripped[1:]  # the name mix and tokenize keep, so every command gives a file one name
    return f"{proto}://{stripped}"


# ---------------------------------------------------------------- transient faults

# Attempts of one operation on a store (each itself retried by s3fs/botocore for what they know to be
# transient): waits of 0.2, 0.4, 0.8, 1.6 s between them, 3 s in all. PENEIRA_IO_TRIES changes it.
TRIES = int(os.environ.get("PENEIRA_IO_TRIES", "5"))
_THROTTLED = Policy(throttle_base=2.0, cap=30.0)  # waits after a throttle: 5 tries then wait up to 2+4+8+16 s
_PERMANENT = (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError, NotADirectoryError,
              Exhausted, Refused)  # the last two: a checked HTTP read (commoncrawl.open_http) that retried or refused


_transient_errors = transient_errors  # its home is curate.io.retry, which curate.io.commoncrawl also uses


def retrying(fn: Callable[..., Any], *args: Any, tries: int | None = None) -> Any:
    """`fn(*args)`, called again after a transient fault (bounded, with exponential backoff), else raised.

    A missing file (FileNotFoundError) and the other permanent errors are raised at once: a caller
    that needs the file says so loudly, one that may do without it decides. Call it around a whole
    operation (read a small file, upload one, read a Parquet file's rows), so a retry starts clean.
    """
    transient = _transient_errors()
    tries = max(1, tries or TRIES)
    for attempt in range(tries):
        try:
            return fn(*args)
        except _PERMANENT:
            raise
        except transient as e:
            if attempt == tries - 1:
                raise
            # a throttle (503 SlowDown, 429) waits as `retry.Policy` says (from 2 s, jittered); other faults 0.2 s doubling
            time.sleep(_THROTTLED.delay(attempt, e) if is_throttle(e) else 0.2 * 2**attempt)
    raise AssertionError("unreachable")


def _store_info(filesystem: Any, inner: str) -> dict | None:
    """The store's entry for a path, None when there is none. Unlike fsspec's `exists`/`isfile`, which
    answer False to *any* error, a fault that outlasts the retries is raised (issue 22.2): a read fault
    taken for "no such file" made a dedup phase read no decisions and keep every duplicate."""
    try:
        return retrying(filesystem.info, inner)
    except FileNotFoundError:
        return None


# ---------------------------------------------------------------- reading and inspecting


def open(path: str | os.PathLike, mode: str = "rb", **kwargs) -> IO:  # noqa: A001 (shadows the builtin on purpose)
    """Open a file; text modes take encoding= / errors= / newline= as the builtin does."""
    path = os.fspath(path)
    if not is_url(path):
        return builtins.open(path, mode, **kwargs)
    if mode == "rb" and not kwargs and path.lower().startswith(("http://", "https://")):
        from curate.io.commoncrawl import open_http  # every reply checked against the range asked (issue 42.2)

        return open_http(path)
    fs, inner = url_to_fs(path)
    return retrying(lambda: fs.open(inner, mode, **kwargs))


def read_bytes(path: str | os.PathLike) -> bytes:
    """The whole content of a (small) file; on a store the read is retried as a whole after a transient fault."""
    path = os.fspath(path)
    if not is_url(path):
        with builtins.open(path, "rb") as f:
            return f.read()
    filesystem, inner = url_to_fs(path)
    return retrying(filesystem.cat_file, inner)


def _either(path: str | os.PathLike, local: Callable[[str], Any], remote: Callable[[Any, str], Any]) -> Any:
    """`local(path)` for a plain path (no fsspec in the way), else `remote(filesystem, path_inside_it)`."""
    path = os.fspath(path)
    if not is_url(path):
        return local(path)
    fs, inner = url_to_fs(path)
    return remote(fs, inner)


def exists(path: str | os.PathLike) -> bool:
    return _either(path, os.path.exists, lambda fs, p: _store_info(fs, p) is not None)


def isfile(path: str | os.PathLike) -> bool:
    return _either(path, os.path.isfile, lambda fs, p: (_store_info(fs, p) or {}).get("type") == "file")


def isdir(path: str | os.PathLike) -> bool:
    """A directory; on object stores a prefix with objects under it (faults raised, as for `isfile`)."""
    return _either(path, os.path.isdir, lambda fs, p: (_store_info(fs, p) or {}).get("type") == "directory")


def size(path: str | os.PathLike) -> int:
    return _either(path, os.path.getsize, lambda fs, p: retrying(fs.size, p))


def makedirs(path: str | os.PathLike) -> None:
    """Create a directory and its parents if missing (on object stores, where folders are implicit, a no-op)."""
    _either(path, lambda p: os.makedirs(p, exist_ok=True), lambda fs, p: fs.makedirs(p, exist_ok=True))


def listdir(path: str | os.PathLike) -> list[str]:
    """Names (not paths) of the entries of a directory; [] for a directory that does not exist.

    On an object store this is one LIST request per 1,000 entries (no existence check first)."""
    path = os.fspath(path)
    if not is_url(path):
        return os.listdir(path) if os.path.isdir(path) else []
    fs, inner = url_to_fs(path)
    fs.invalidate_cache(inner)  # another process may have written since we last listed
    try:
        found = retrying(lambda: fs.ls(inner, detail=False))
    except FileNotFoundError:
        return []
    return [posixpath.basename(p.rstrip("/")) for p in found if p.rstrip("/") != inner.rstrip("/")]


def listdir_prefix(path: str | os.PathLike, prefix: str) -> list[str]:
    """Names of the files (not subdirectories) of a directory that start with `prefix`, without listing
    the whole directory where the store can filter: s3fs and gcsfs send the prefix with the LIST request,
    so a task that looks for its own files costs one request however many other tasks wrote beside it.
    Elsewhere the directory is listed and filtered here (a local scandir is cheap)."""
    path = os.fspath(path)
    if not is_url(path):
        if not os.path.isdir(path):
            return []
        with os.scandir(path) as it:
            return [e.name for e in it if e.name.startswith(prefix) and e.is_file()]
    fs, inner = url_to_fs(path)
    fs.invalidate_cache(inner)  # else s3fs answers from a cached listing of the whole directory, maybe stale
    try:
        if _filters_prefix(fs):
            found = retrying(lambda: fs.find(inner, maxdepth=1, prefix=prefix))  # files only, never cached
        else:
            found = [e["name"] for e in retrying(lambda: fs.ls(inner, detail=True)) if e.get("type") == "file"]
    except FileNotFoundError:
        return []
    names = (posixpath.basename(p) for p in found if posixpath.dirname(p).rstrip("/") == inner.rstrip("/"))
    return [n for n in names if n.startswith(prefix)]


def _filters_prefix(fs: Any) -> bool:
    """Whether `fs.find` takes `prefix=` (a server-side filter: s3fs, gcsfs), rather than ignoring it."""
    import inspect

    try:
        return "prefix" in inspect.signature(fs.find).parameters
    except (TypeError, ValueError):
        return False


def glob(pattern: str | os.PathLike, files_only: bool = True) -> list[str]:
    """Sorted matches of a glob pattern (`**` recurses); with `files_only`, directories are left out.

    On a local disk `**` follows symlinked folders, as Python's glob does, but never twice into one folder:
    a link to a folder the walk reaches by its own path (`crawl/latest -> 2024-10`) is not descended, and
    a link back to a folder above it (a loop) is cut and reported on stderr, once per pattern. A file
    matched under two names (a symlink or hard link to it) is listed once, by the name without a symlink
    in it when there is one (`unique_files`). Python's glob followed every link: a loop listed each file
    under every path up to the kernel's 40-link limit.
    """
    pattern = os.fspath(pattern)
    if not is_url(pattern):
        loops: list[str] = []
        hits = _local_glob(os.path.expanduser(pattern), loops)
        loops = list(dict.fromkeys(loops))
        if loops:
            _warn(f"{pattern!r}: {len(loops)} symlink loop{'s' * (len(loops) > 1)} not followed "
                  f"({'; '.join(loops[:3])}{'; …' if len(loops) > 3 else ''}); each file under it is listed once")
        return unique_files(sorted(p for p in set(hits) if not files_only or os.path.isfile(p)))
    fs, inner = url_to_fs(pattern)
    fs.invalidate_cache()
    found = retrying(lambda: fs.glob(inner, detail=True))
    return sorted(_unstrip(fs, p, pattern) for p, info in found.items() if not files_only or info.get("type") == "file")


def _warn(message: str) -> None:
    import sys

    print(f"curate: warning: {message}", file=sys.stderr)


def _local_glob(pattern: str, loops: list[str]) -> list[str]:
    """Python's recursive glob, with `**` walked by `_walk_dirs` (each folder once, loops cut)."""
    import glob as _glob

    parts = pattern.split(os.sep)
    if "**" not in parts:
        return _glob.glob(pattern, recursive=True)
    k = parts.index("**")
    head, tail = os.sep.join(parts[:k]), os.sep.join(parts[k + 1:])
    if k == 1 and parts[0] == "":
        head = os.sep  # "/**/…"
    if not head:
        bases = [""]  # "**/…": the current folder, paths relative as glob gives them
    elif _glob.has_magic(head):
        bases = [b for b in _glob.glob(head) if os.path.isdir(b)]
    else:
        bases = [head] if os.path.isdir(head) else []
    hits: list[str] = []
    for base in bases:
        for d in _walk_dirs(base, loops):
            if tail:
                hits.extend(_local_glob(os.path.join(_glob.escape(d), tail), loops))
            else:  # "…/**": everything under the folder, itself included (as glob gives it)
                hits.append(os.path.join(d, ""))
                with contextlib.suppress(OSError), os.scandir(d or os.curdir) as it:
                    hits.extend(os.path.join(d, e.name) for e in it if not e.name.startswith("."))
    return hits


def _walk_dirs(base: str, loops: list[str]) -> Iterator[str]:
    """`base` and every folder under it that `**` matches (hidden ones left out), depth first in name order.

    Symlinked folders are followed, each folder once: one whose (device, inode) is above it on the path
    is a loop (its link is added to `loops`, not followed); a link to a folder under `base` that the walk
    reaches by its own path is not followed (its files would come twice); any other folder already
    walked is not walked again."""
    try:
        st = os.stat(base or os.curdir)
    except OSError:
        return
    root = os.path.realpath(base or os.curdir)
    visited = {(st.st_dev, st.st_ino)}
    stack = [(base, ((st.st_dev, st.st_ino),))]
    while stack:
        d, above = stack.pop()
        yield d
        try:
            with os.scandir(d or os.curdir) as it:
                entries = sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
        except OSError:
            continue
        below = []
        for e in entries:
            path = os.path.join(d, e.name)
            try:
                if not e.is_dir():
                    continue
                est = os.stat(path)
            except OSError:  # a broken link, or one the kernel already finds looping (ELOOP)
                continue
            key = (est.st_dev, est.st_ino)
            if key in above:  # the link, as `ls -l` shows it, or the folder it comes back to
                loops.append(f"{path} -> {os.readlink(path) if e.is_symlink() else os.path.realpath(path)}")
                continue
            if key in visited or (e.is_symlink() and _walked_by_own_path(os.path.realpath(path), root)):
                continue
            visited.add(key)
            below.append((path, (*above, key)))
        stack.extend(reversed(below))


def _walked_by_own_path(real: str, root: str) -> bool:
    """Whether the walk from `root` (a real path) reaches the folder `real` through real folders: it lies
    under `root` and no folder on the way is hidden."""
    try:
        rel = os.path.relpath(real, root)
    except ValueError:
        return False
    return rel != os.curdir and not rel.startswith(os.pardir) and not any(p.startswith(".") for p in rel.split(os.sep))


def unique_files(paths: list[str]) -> list[str]:
    """`paths` without a second name for one local file (same device and inode: a symlink, a hard link, a
    folder reached through a link), in order. Of the names of one file the one kept is the first with no
    symlink in it (its real path), else the first; URLs other than `file://` are kept as they are."""
    keys: list[tuple[int, int] | None] = []
    for p in paths:
        local = p if not is_url(p) else local_path(p) if p.split("://", 1)[0].split("::")[-1] == "file" else None
        try:
            st = os.stat(local) if local is not None else None
        except OSError:
            st = None
        keys.append((st.st_dev, st.st_ino) if st is not None else None)
    chosen: dict[tuple[int, int], int] = {}
    for i, (p, key) in enumerate(zip(paths, keys, strict=True)):
        if key is None:
            continue
        if key not in chosen or (not _is_real(paths[chosen[key]]) and _is_real(p)):
            chosen[key] = i
    keep = set(chosen.values())
    return [p for i, (p, key) in enumerate(zip(paths, keys, strict=True)) if key is None or i in keep]


def _is_real(path: str) -> bool:
    local = local_path(path)
    if local is None:
        return False
    absolute = os.path.abspath(local)
    return os.path.realpath(absolute) == absolute


def remove(path: str | os.PathLike, missing_ok: bool = True) -> None:
    path = os.fspath(path)
    try:
        if not is_url(path):
            os.remove(path)
        else:
            fs, inner = url_to_fs(path)
            fs.rm_file(inner)
    except FileNotFoundError:
        if not missing_ok:
            raise


def cat_files(paths: list[str]) -> list[bytes]:
    """The bytes of many small files (stats records), in order. On an async store (s3fs, gcsfs) they are
    fetched concurrently in one call, so reading a stage's records is not one serial round trip per task."""
    if not paths:
        return []
    if not is_url(paths[0]):
        out = []
        for p in paths:
            with builtins.open(p, "rb") as f:
                out.append(f.read())
        return out
    fs, _ = url_to_fs(paths[0])
    inner = [url_to_fs(p)[1] for p in paths]
    got = retrying(lambda: fs.cat(inner, on_error="raise"))
    return [got[p] for p in inner]


def _arrow_fs(filesystem: Any):
    """An fsspec filesystem as a pyarrow one whose opens raise the store's real error.

    pyarrow's `FSSpecHandler` asks `fs.isfile` before opening, and fsspec's `isfile` answers False to
    any error, so a connection reset became FileNotFoundError, which readers of optional files took
    for "no rows" (issue 22.2). This handler opens directly: a missing file is FileNotFoundError, a
    fault is the fault."""
    from pyarrow import PythonFile
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    class Handler(FSSpecHandler):
        def open_input_file(self, path):
            return PythonFile(retrying(self.fs.open, path, "rb"), mode="r")

        open_input_stream = open_input_file

    return PyFileSystem(Handler(filesystem))


def parquet_file(path: str | os.PathLike):
    """`pyarrow.parquet.ParquetFile` of a local path or URL (read through fsspec, seekable; its footer read
    is retried after a transient fault, the row groups a caller reads later are not: see `retrying`). Page
    checksums are verified where the file has them: every Parquet file the project writes carries them, so a
    page damaged after it was written is an error when read, never other data (issue 29, mechanism 5)."""
    import pyarrow.parquet as pq

    path = os.fspath(path)
    if not is_url(path):
        return pq.ParquetFile(path, page_checksum_verification=True)
    fs, inner = url_to_fs(path)
    return retrying(lambda: pq.ParquetFile(inner, filesystem=_arrow_fs(fs), page_checksum_verification=True))


def read_table(path: str | os.PathLike, **kwargs):
    """`pyarrow.parquet.read_table` of a local path or URL (on a store, retried whole after a transient fault).
    Page checksums are verified where the file has them (every Parquet file the project writes does)."""
    import pyarrow.parquet as pq

    kwargs.setdefault("page_checksum_verification", True)
    path = os.fspath(path)
    if not is_url(path):
        return pq.read_table(path, **kwargs)
    fs, inner = url_to_fs(path)
    return retrying(lambda: pq.read_table(inner, filesystem=_arrow_fs(fs), **kwargs))


def dataset(paths: list[str], **kwargs):
    """`pyarrow.dataset.dataset` over files that all live on one filesystem (local paths or URLs)."""
    import pyarrow.dataset as ds

    if not paths or not is_url(paths[0]):
        return ds.dataset(paths, **kwargs)
    fs, _ = url_to_fs(paths[0])
    return ds.dataset([url_to_fs(p)[1] for p in paths], filesystem=_arrow_fs(fs), **kwargs)


def load_npy(path: str | os.PathLike, mmap: bool = False):
    """`numpy.load` of a local path (memory-mapped with `mmap`) or a URL (read whole into memory)."""
    import numpy as np

    path = os.fspath(path)
    if not is_url(path):
        return np.load(path, mmap_mode="r" if mmap else None)
    import io

    return np.load(io.BytesIO(read_bytes(path)))


# ---------------------------------------------------------------- atomic publish


# The names this package gives temporary files beside their final one on a local disk: `Staged`'s default
# `.NAME.tmp.PID`, `NAME.tmp.PID` (atomic_write_text, dedup tables, quality scores), `NAME.npy.tmp.PID.npy`
# (MinHash signatures) and the Parquet writers' `.STEM-NNN.PID.parquet.tmp` and `.NAME.PID.tmp`.
TEMP_NAME = re.compile(r".+\.tmp\.\d+(\.npy)?|\..+\.\d+(\.parquet)?\.tmp")


def remove_temp_files(root: str | os.PathLike) -> list[str]:
    """Delete the temporary files that killed attempts left under a folder of ours (issue 22.17); their paths.

    Only names of `TEMP_NAME`, only under `root` (links not followed), only on a local disk (on an object
    store they live in the spool, never under the output). Call it when no task writing under `root` runs:
    at the end of a run, when every task has finished.
    """
    local = local_path(root)
    if local is None or not os.path.isdir(local):
        return []
    gone = []
    for directory, _dirs, files in os.walk(local):
        for name in files:
            if TEMP_NAME.fullmatch(name):
                path = os.path.join(directory, name)
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
                    gone.append(path)
    return gone


def spool_dir() -> str:
    """Where temporary files bound for an object store are written first (local disk of this node)."""
    d = os.environ.get("PENEIRA_SPOOL") or os.path.join(tempfile.gettempdir(), "peneira-spool")
    os.makedirs(d, exist_ok=True)
    return d


class Staged:
    """A file written under a local temporary name (`tmp`) and published at `path` by `commit`.

    `tmp` is always a real local file, so anything that writes files (pyarrow writers, numpy memory
    maps) writes it unchanged. For a local path or `file://` URL it lies beside the final file
    (`tmp_name` chooses its name there; default `.NAME.tmp.PID`) and `commit` renames it; for any
    other filesystem it lies in the spool directory and `commit` uploads it in one `put_file` (see
    the module docstring for what each backend guarantees). `discard` removes the temporary file.
    """

    def __init__(self, path: str | os.PathLike, tmp_name: str | None = None):
        self.path = os.fspath(path)
        local = local_path(self.path)
        self.local = local is not None
        if self.local:
            directory, name = os.path.split(local)
            os.makedirs(directory or ".", exist_ok=True)
            self.final = local
            self.tmp = os.path.join(directory, tmp_name or f".{name}.tmp.{os.getpid()}")
        else:
            fd, self.tmp = tempfile.mkstemp(prefix=f"{posixpath.basename(self.path)}.", suffix=".tmp", dir=spool_dir())
            os.close(fd)
            self.final = self.path

    def commit(self) -> str:
        if self.local:
            os.replace(self.tmp, self.final)
        else:
            fs, inner = url_to_fs(self.path)
            parent = posixpath.dirname(inner)
            try:
                try:
                    retrying(fs.put_file, self.tmp, inner)  # one whole object: an upload retried is the same upload
                except FileNotFoundError:  # a filesystem with real folders (sftp, hdfs): make them, once
                    fs.makedirs(parent, exist_ok=True)
                    retrying(fs.put_file, self.tmp, inner)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self.tmp)
            fs.invalidate_cache(parent)
        return self.path

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.tmp)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb", tmp_name: str | None = None, fsync: bool = False,
                **kwargs) -> Iterator[IO]:
    """Write a file that appears whole at `path` when the block ends, or not at all if it raises."""
    staged = Staged(path, tmp_name)
    try:
        with builtins.open(staged.tmp, mode, **kwargs) as f:
            yield f
            if fsync:
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        staged.discard()
        raise
    staged.commit()


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write a small text file (stats, markers, configs) atomically; on local disks it is fsynced first."""
    path = os.fspath(path)
    tmp_name = f"{os.path.basename(path)}.tmp.{os.getpid()}" if not is_url(path) else None  # the name it always had
    with atomic_open(path, "w", tmp_name=tmp_name, fsync=True, encoding="utf-8") as f:
        f.write(text)


def _glob_hint(pattern: str) -> str:
    """Why a glob may have matched nothing: `*` stays in one folder, `**/` descends into subfolders."""
    if "**" in pattern:
        return ""
    head, tail = posixpath.split(pattern)
    deeper = posixpath.join(head, "**", tail)
    if not is_url(pattern) and glob(deeper):
        return f" (files in its subfolders do: `*` stays in one folder; use {deeper!r})"
    return f" (`*` stays in one folder; to include subfolders use {deeper!r})"


# The file names each input format has: a folder given as an input contributes the files of its reader's format.
INPUT_SUFFIXES = {  # lowercased names; gzip also as `.gzip` / `.bgz`, as curate.io.kinds reads them (issue 42.1)
    "warc": (".warc", ".warc.gz", ".warc.gzip", ".warc.bgz", ".wet", ".wet.gz", ".wet.gzip"),
    "jsonl": (".jsonl", ".jsonl.gz", ".jsonl.gzip", ".jsonl.bgz", ".jsonl.zst", ".json", ".json.gz", ".json.zst",
              ".ndjson"),
    "parquet": (".parquet",),
    "text": (".txt", ".txt.gz"),
}


def expand_inputs(patterns: str | list[str], suffixes: tuple[str, ...] | None = None,
                  folders: list[dict] | None = None) -> list[str]:
    """Every file matching the glob patterns (local or URL), in order, each once; none is a `UsageError`.

    A pattern that names a folder stands for the files under it, recursively, whose names end in one of
    `suffixes` (the reader's format; default: every format of `INPUT_SUFFIXES`), so `--input crawl/` reads the
    crawl and not its README; what each folder gave and left out is appended to `folders` for the summary.
    "Once" is by the file, not by its name: the same local file matched under two names (two patterns
    spelling one folder, a symlinked folder or file, a hard link) is listed once (`unique_files`), so a run
    never reads it twice under two ids."""
    patterns = [patterns] if isinstance(patterns, str) else list(patterns)
    suffixes = suffixes or tuple(s for group in INPUT_SUFFIXES.values() for s in group)
    files: list[str] = []
    for pat in patterns:
        if not any(c in os.fspath(pat) for c in "*?[") and isdir(pat):
            files.extend(_folder_inputs(os.fspath(pat), suffixes, folders))
            continue
        hits = glob(pat)  # a URL (file://, s3://, …) is listed through fsspec and its matches stay URLs
        if not hits:
            raise UsageError(f"no input files match {pat!r}{_glob_hint(pat)}")
        files.extend(hits)
    return unique_files(list(dict.fromkeys(files)))  # keep order, drop repeats


def _folder_inputs(folder: str, suffixes: tuple[str, ...], folders: list[dict] | None) -> list[str]:
    """The files under `folder` (recursively, hidden ones left out) of the reader's format; none is a UsageError
    that says what the folder does hold."""
    every = [f for f in glob(join(folder.rstrip("/"), "**", "*"))
             if not any(part.startswith(".") for part in relpath(f, folder).split("/"))]
    kept = [f for f in every if f.lower().endswith(suffixes)]
    chosen = set(kept)
    left = [relpath(f, folder) for f in every if f not in chosen]
    if not kept:
        held = f"it holds {len(every)} other file(s): {', '.join(left[:3])}{', …' if len(left) > 3 else ''}" if every \
            else "it holds no files"
        raise UsageError(f"input folder {folder!r} holds no file of the reader's format ({', '.join(suffixes)}): "
                         f"{held}; name the files with a glob, or use the reader of their format")
    if folders is not None:
        kinds: dict[str, int] = {}
        for f in kept:
            kind = max((x for x in suffixes if f.lower().endswith(x)), key=len)
            kinds[kind] = kinds.get(kind, 0) + 1
        folders.append({"folder": folder, "files": len(kept), "by_suffix": kinds, "left_out": left})
    return kept
