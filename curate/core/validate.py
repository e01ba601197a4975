"""Config checks and descriptions for steps, readers and writers.

`check*` turn a bad constructor argument into one clear `UsageError` when the pipeline is built, before any
work; `describe` gives the stable text of a configuration (resume's fingerprints: `curate.run.fingerprint`).
"""

from __future__ import annotations

import inspect
import math
import numbers
import os
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from curate.core.errors import UsageError


def _param(value: Any) -> str:
    """A repr that is the same in every process: sets sorted, no addresses, functions by their name.

    What resume compares is more than this text (function code, file contents): `curate.run.fingerprint`."""
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_param(v) for v in value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_param(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_param(k)}: {_param(v)}" for k, v in sorted(value.items(), key=str)) + "}"
    if inspect.isfunction(value):
        return f"<{value.__module__}.{value.__qualname__}>"
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


def describe(obj: Any) -> str:
    """`Class(param=value, ...)` from public attributes: the config of a reader or step as people read it."""
    params = ", ".join(f"{k}={_param(v)}" for k, v in vars(obj).items() if not k.startswith("_"))
    return f"{type(obj).__name__}({params})"


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
