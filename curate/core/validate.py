"""Config checks and descriptions for steps, readers and writers.

`check*` turn a bad constructor argument into one clear `UsageError` when the pipeline is built, before any
work; `describe` gives the stable text of a configuration that resume compares across runs.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import math
import numbers
import os
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from curate.core.errors import UsageError


def _param(value: Any) -> str:
    """A repr that is the same in every process: sets sorted, no addresses, functions by their code,
    and files (a string or path naming an existing local file) by their content."""
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_param(v) for v in value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_param(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_param(k)}: {_param(v)}" for k, v in sorted(value.items(), key=str)) + "}"
    if inspect.isfunction(value):
        return f"<{value.__module__}.{value.__qualname__}#{code_digest(value)}>"
    if isinstance(value, (str, os.PathLike)) and _is_file(value):
        return f"{os.fspath(value)!r}#{file_digest(os.fspath(value))}"
    if isinstance(value, (str, os.PathLike)) and _is_dir(value):  # an index directory (decontam)
        return f"{os.fspath(value)!r}#{dir_digest(os.fspath(value))}"
    text = repr(value)
    return re.sub(r" at 0x[0-9a-f]+", "", text)


def describe(obj: Any) -> str:
    """`Class(param=value, ...)` from public attributes: the config of a reader or step, stable across runs.

    A class defined outside curate (a step in the user's pipeline file) also gets the digest of its
    methods' code, so that editing its `apply` is a different pipeline for resume.
    """
    params = ", ".join(f"{k}={_param(v)}" for k, v in vars(obj).items() if not k.startswith("_"))
    own = [c for c in type(obj).__mro__ if not c.__module__.startswith(("curate.", "builtins"))]
    code = ""
    if own:
        fns = [f for c in own for _, f in sorted(vars(c).items()) if inspect.isfunction(f)]
        code = "#" + hashlib.blake2b("".join(code_digest(f) for f in fns).encode(), digest_size=8).hexdigest()
    return f"{type(obj).__name__}{code}({params})"


# Fingerprints: what resume compares, so that a changed function or model file is a different pipeline.

_SIMPLE = (int, float, complex, str, bytes, bool, type(None))


def code_digest(fn: Any) -> str:
    """A digest of what a function computes: its bytecode and constants (nested functions included), the
    values of its defaults and closure cells, and the functions and plain constants it reads from its
    module's globals, recursively. Line numbers and comments are left out: moving a function is no change.
    """
    h = hashlib.blake2b(digest_size=8)
    _feed_function(fn, h, set())
    return h.hexdigest()


def _feed_function(fn: Any, h: Any, seen: set) -> None:
    if id(fn.__code__) in seen:  # recursion: the name is enough
        h.update(fn.__qualname__.encode())
        return
    seen.add(id(fn.__code__))
    names = _feed_code(fn.__code__, h)
    h.update(_param_plain(fn.__defaults__).encode() + _param_plain(fn.__kwdefaults__).encode())
    for cell in fn.__closure__ or ():
        try:
            _feed_value(cell.cell_contents, h, seen)
        except ValueError:  # an empty cell (a name bound later)
            h.update(b"<empty>")
    g = fn.__globals__
    for name in sorted(names):
        if name in g and (inspect.isfunction(g[name]) or isinstance(g[name], _SIMPLE + (tuple, frozenset))):
            h.update(name.encode())
            _feed_value(g[name], h, seen)


def _feed_code(code: Any, h: Any) -> set[str]:
    """Bytecode, constants and names of a code object and the code objects nested in it; the global names read."""
    h.update(code.co_code)
    h.update(" ".join(code.co_names + code.co_varnames + code.co_freevars).encode())
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _feed_code(const, h)
        else:
            h.update(_param_plain(const).encode())
    return names


def _feed_value(value: Any, h: Any, seen: set) -> None:
    if inspect.isfunction(value):
        _feed_function(value, h, seen)
    else:
        h.update(_param(value).encode())


def _param_plain(value: Any) -> str:
    """`_param` without looking for files: constants inside code are never paths to fingerprint."""
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_param_plain(v) for v in value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_param_plain(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_param_plain(k)}: {_param_plain(v)}" for k, v in sorted(value.items(), key=str)) + "}"
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


def _is_file(value: str | os.PathLike) -> bool:
    path = os.fspath(value)
    return 0 < len(path) < 4096 and "\n" not in path and "://" not in path and os.path.isfile(path)


def _is_dir(value: str | os.PathLike) -> bool:
    path = os.fspath(value)
    return 0 < len(path) < 4096 and "\n" not in path and "://" not in path and os.path.isdir(path)


MAX_DIR_FILES = 100  # a directory parameter with more files is a data directory: fingerprinted by its listing


def dir_digest(path: str) -> str:
    """Digest of a directory: its files by content (`file_digest`) for an index-sized directory (at most
    MAX_DIR_FILES files), else only the names, sizes and mtimes of its top level (reading or walking a
    whole data directory at every run would be slow)."""
    walk = (os.path.join(d, f) for d, _, names in os.walk(path) for f in names)
    files = sorted(itertools.islice(walk, MAX_DIR_FILES + 1))
    h = hashlib.blake2b(digest_size=16)
    if len(files) > MAX_DIR_FILES:
        files = sorted(e.path for e in os.scandir(path))
        parts = [f"{os.stat(f).st_size}:{os.stat(f).st_mtime_ns}" for f in files]
    else:
        parts = [file_digest(f) for f in files]
    for f, part in zip(files, parts, strict=True):
        h.update(f"{os.path.relpath(f, path)}\0{part}\0".encode())
    return h.hexdigest()


_DIGESTS: dict[tuple[str, int, int], str] = {}  # (real path, size, mtime_ns) -> content digest


def file_digest(path: str) -> str:
    """blake2b of a file's bytes, cached by (path, size, mtime) so that a rerun does not read a model again.

    The cache lives in this process and is seeded from the previous run's config (`seed_file_digests`).
    """
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        h = hashlib.blake2b(digest_size=16)
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def file_digests() -> list[list]:
    """The cached digests, as JSON-able [path, size, mtime_ns, digest] rows (stored with a run's config)."""
    return [[*k, v] for k, v in sorted(_DIGESTS.items())]


def seed_file_digests(rows: list[list]) -> None:
    """Trust digests computed by an earlier run for files whose path, size and mtime are unchanged."""
    for path, size, mtime, digest in rows:
        _DIGESTS.setdefault((path, size, mtime), digest)


# Constructor checks: a bad config value is a clear error when the pipeline is built, before any work.

_KINDS = {int: "an integer", float: "a number", bool: "true or false", str: "a non-empty string"}


def _fails(kind: type, value: Any) -> bool:
    if kind is bool:
        return not isinstance(value, bool)
    if kind is str:
        return not isinstance(value, str) or not value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return True
    return (kind is int and not isinstance(value, numbers.Integral)) or not math.isfinite(value)


def config_error(owner: Any, message: str) -> Exception:
    """The error for a bad constructor argument: `UsageError` (a `ValueError`), so `curate` prints one line."""
    return UsageError(f"{owner if isinstance(owner, str) else type(owner).__name__}: {message}")


def check(owner: Any, name: str, value: Any, kind: type = int, *, lo: float | None = None, hi: float | None = None,
          lo_open: bool = False, optional: bool = False, choices: Sequence | None = None) -> Any:
    """Return `value` if it is a `kind` (int, float, bool or str) within [lo, hi] (or (lo, hi] with `lo_open`)
    and among `choices`, else raise e.g. "GopherQuality: min_words must be an integer >= 0, got -5".
    `owner` is the step (or its name); `optional` also accepts None."""
    if value is None and optional:
        return value
    if choices is not None:
        if value not in choices:
            raise config_error(owner, f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
        return value
    if lo is not None and hi is not None:
        want = f"{_KINDS[kind]} in {'(' if lo_open else '['}{lo}, {hi}]"
    elif lo is not None:
        want = f"{_KINDS[kind]} {'>' if lo_open else '>='} {lo}"
    else:
        want = _KINDS[kind]
    if (_fails(kind, value) or (lo is not None and (value <= lo if lo_open else value < lo))
            or (hi is not None and value > hi)):
        raise config_error(owner, f"{name} must be {want}{' or None' if optional else ''}, got {value!r}")
    return value


def check_order(owner: Any, lo_name: str, lo: float, hi_name: str, hi: float) -> None:
    """A (min, max) pair: raise unless lo <= hi."""
    if lo > hi:
        raise config_error(owner, f"{lo_name} must be <= {hi_name}, got {lo!r} > {hi!r}")


def check_strings(owner: Any, name: str, values: Any, *, choices: Collection[str] | None = None,
                  empty: bool = True) -> tuple[str, ...]:
    """A list of non-empty strings (never one bare string, which would iterate by character), optionally
    each among `choices`; returned as a tuple."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise config_error(owner, f"{name} must be a list of strings, got {values!r}"
                           + (" (one string, not a list)" if isinstance(values, str) else ""))
    out = tuple(values)
    bad = [v for v in out if not isinstance(v, str) or not v]
    if bad:
        raise config_error(owner, f"{name} must hold non-empty strings, got {bad[0]!r}")
    if not out and not empty:
        raise config_error(owner, f"{name} must not be empty")
    unknown = [v for v in out if choices is not None and v not in choices]
    if unknown:
        known = ", ".join(sorted(choices)) if len(choices) <= 12 else f"{', '.join(sorted(choices)[:8])}, … ({len(choices)} in all)"
        raise config_error(owner, f"{name}: unknown {', '.join(map(repr, unknown))} (known: {known})")
    return out


def check_file(owner: Any, name: str, path: Any) -> str:
    """A path to an existing file, local or an fsspec URL (`s3://…`: one HEAD request), returned as a string."""
    if not isinstance(path, (str, os.PathLike)) or not _isfile(os.fspath(path)):
        shown = os.fspath(path) if isinstance(path, os.PathLike) else path
        raise config_error(owner, f"{name} must be an existing file, got {shown!r}")
    return os.fspath(path)


def _isfile(path: str) -> bool:
    """`os.path.isfile`, or for a URL the store's answer (fsspec directly: core imports nothing of curate.io)."""
    if "://" not in path:
        return os.path.isfile(path)
    from fsspec.core import url_to_fs

    store, inner = url_to_fs(path)
    try:  # not `store.isfile`: fsspec's answers False to any error, so a network fault read as "no such file"
        return store.info(inner)["type"] == "file"
    except FileNotFoundError:
        return False
