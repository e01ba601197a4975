"""Steps: the unit of work. A streaming step sees documents in batches; a global step sees the corpus."""

from __future__ import annotations

import inspect
import math
import numbers
import os
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from curate.document import Document

if TYPE_CHECKING:
    from curate.executor import Executor
    from curate.stats import StepStats


@dataclass(frozen=True, slots=True)
class Reject:
    """Returned by a step to drop a document; `rule` becomes the drop reason `step:rule`."""

    rule: str


Result = Document | Reject | None  # None drops with the rule "dropped"


class Step:
    """A streaming step: keeps, rewrites or drops each document.

    Subclasses implement `apply` (one document) or, for vectorised work such as model inference,
    `apply_batch`. Expensive state (models, indexes) is loaded in `setup`, which runs once per worker
    process before the first batch, never in `__init__`, so pipelines stay cheap to build and pickle.
    """

    name: ClassVar[str] = "step"
    columns: ClassVar[dict[str, pa.DataType]] = {}  # flat columns this step adds to the shards

    def setup(self) -> None:
        """Load models or indexes. Runs once per worker process."""

    def apply(self, doc: Document) -> Result:
        raise NotImplementedError

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        return [self.apply(d) for d in docs]

    def finish(self, stats: StepStats) -> None:
        """Called at the end of each task with this step's stats, to record step-specific figures."""

    def __repr__(self) -> str:
        return describe(self)


class Filter(Step):
    """A step that only keeps or drops: implement `reject_rule`, returning a rule name or None to keep."""

    def reject_rule(self, doc: Document) -> str | None:
        raise NotImplementedError

    def apply(self, doc: Document) -> Result:
        rule = self.reject_rule(doc)
        return doc if rule is None else Reject(rule)


class FunctionStep(Step):
    """Wraps a plain function `doc -> bool | Document | None` so that any callable is a step."""

    def __init__(self, fn: Callable[[Document], Any], name: str | None = None):
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "function").replace("<lambda>", "lambda")

    def apply(self, doc: Document) -> Result:
        out = self.fn(doc)
        if out is True:
            return doc
        if out is False or out is None:
            return Reject("rejected")
        if isinstance(out, (Document, Reject)):
            return out
        raise TypeError(f"step {self.name!r} returned {type(out).__name__}; expected bool, Document or None")


@dataclass
class GlobalContext:
    """What a global step gets: the corpus so far as shards, and where to put its result.

    Outputs must be written atomically, one output shard per input shard with the same file name,
    so that later streaming stages keep a one-task-per-shard layout.
    """

    inputs: list[str]
    output_dir: str
    work_dir: str
    executor: Executor
    schema: pa.Schema
    rejected_dir: str | None = None


class GlobalStep(Step):
    """A step that needs the whole corpus (dedup, mixing). It runs as phases between streaming stages."""

    def run_global(self, ctx: GlobalContext) -> list[StepStats]:
        raise NotImplementedError

    def apply(self, doc: Document) -> Result:
        raise TypeError(f"{type(self).__name__} is a global step and cannot run per document")


def as_step(obj: Any) -> Step:
    if isinstance(obj, Step):
        return obj
    if callable(obj):
        if inspect.isclass(obj):
            raise TypeError(f"{obj.__name__} is a class; put an instance in the steps list: {obj.__name__}()")
        return FunctionStep(obj)
    raise TypeError(f"pipeline step {obj!r} is neither a Step nor a callable")


def _param(value: Any) -> str:
    """A repr that is the same in every process: sets sorted, functions by name and line, no addresses."""
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_param(v) for v in value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_param(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_param(k)}: {_param(v)}" for k, v in sorted(value.items(), key=str)) + "}"
    if inspect.isfunction(value):
        return f"<{value.__module__}.{value.__qualname__}:{value.__code__.co_firstlineno}>"
    text = repr(value)
    return re.sub(r" at 0x[0-9a-f]+", "", text)


def describe(obj: Any) -> str:
    """`Class(param=value, ...)` from public attributes: the config of a reader or step, stable across runs."""
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
    from curate.pipeline import UsageError  # imported here: curate.pipeline imports this module

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
    """A path to an existing local file, returned as a string."""
    if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
        shown = os.fspath(path) if isinstance(path, os.PathLike) else path
        raise config_error(owner, f"{name} must be an existing file, got {shown!r}")
    return os.fspath(path)
