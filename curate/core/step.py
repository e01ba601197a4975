"""Steps: the unit of work. A streaming step sees documents in batches; a global step sees the corpus."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from curate.core.document import Document
from curate.core.validate import describe

if TYPE_CHECKING:
    from curate.core.stats import StepStats
    from curate.io.writers import Parquet  # types only: core never imports the layers above it at run time
    from curate.run.executors.base import Executor


@dataclass(frozen=True, slots=True)
class Reject:
    """Returned by a step to drop a document; `rule` becomes the drop reason `step:rule`.

    `measured` and `limit` are the evidence, where the rule compares a number with a threshold: the value this
    document had (a ratio, a count, a score) and the threshold it crossed. They go beside the reason into the
    rejected shards (`drop_measured`, `drop_limit`) and the limit into the step's stats, so `alpha_words` says
    0.62 against 0.80 instead of only naming the rule."""

    rule: str
    measured: float | None = None
    limit: float | None = None


# What a step returns for one document: the document (maybe rewritten) to keep it, `Reject` or None to drop
# it, or a list of documents to replace it with several (a split: paragraph windows, long-document chunks;
# an empty list drops it as `<step>:rejected`). Children of a split need their own ids: `Document.child`.
Result = Document | Reject | list[Document] | None


class Step:
    """A streaming step: keeps, rewrites or drops each document.

    Subclasses implement `apply` (one document) or, for vectorised work such as model inference,
    `apply_batch`. Expensive state (models, indexes) is loaded in `setup`, which runs once per worker
    process before the first batch, never in `__init__`, so pipelines stay cheap to build and pickle.
    """

    name: ClassVar[str] = "step"
    columns: ClassVar[dict[str, pa.DataType]] = {}  # flat columns this step adds to the shards
    # Parameters that name a file, model or index directory (a path or URL; in a dict, its values): resume
    # compares their content, not their name (`curate.run.fingerprint`). No other string is taken for a path.
    file_params: ClassVar[tuple[str, ...]] = ()

    def setup(self) -> None:
        """Load models or indexes. Runs once per worker process."""

    def check_ready(self) -> None:
        """Raise a `UsageError` saying what to do if something `setup` needs is missing (a model never
        fetched). A run calls it once before any task, so a missing model fails the run once, early,
        not every task. Cheap: a file check, never a load."""

    def apply(self, doc: Document) -> Result:
        raise NotImplementedError

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        return [self.apply(d) for d in docs]

    def finish(self, stats: StepStats) -> None:
        """Called at the end of each task with this step's stats, to record step-specific figures."""

    def resources(self) -> dict[str, float]:
        """What each task of this step needs beyond a CPU: `{"gpus": 1}` for a model on a GPU, else nothing
        (`curate.core.resources`: the executors place tasks by it). Decided in the driver, before `setup`."""
        return {}

    def __repr__(self) -> str:
        return describe(self)


class Filter(Step):
    """A step that only keeps or drops: implement `reject_rule`, returning a rule name or None to keep."""

    def reject_rule(self, doc: Document) -> str | Reject | None:
        """A rule name, or a `Reject` carrying the measured value and the limit, or None to keep."""
        raise NotImplementedError

    def apply(self, doc: Document) -> Result:
        rule = self.reject_rule(doc)
        return doc if rule is None else rule if isinstance(rule, Reject) else Reject(rule)


class FunctionStep(Step):
    """Wraps a plain function `doc -> bool | Document | list[Document] | None` so that any callable is a step.

    A generator function works too: what it yields replaces the document (a split)."""

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
        if isinstance(out, (list, tuple)) or inspect.isgenerator(out):
            docs = list(out)
            if all(isinstance(d, Document) for d in docs):
                return docs
        raise TypeError(f"step {self.name!r} returned {type(out).__name__}; "
                        "expected bool, Document, a list of Documents or None")


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
    writer: Parquet  # the pipeline's writer: global steps write their shards with its settings (`open_file`)
    rejected_dir: str | None = None


class GlobalStep(Step):
    """A step that needs the whole corpus (dedup, mixing). It runs as phases between streaming stages."""

    # What the step does with documents that share an id (one shard given twice, two runs over one crawl
    # unioned, a split that reused its parent's id). "refuse" (the default): the run checks the ids of the
    # step's input first and stops with one line naming a repeated id and the two inputs holding it, as a
    # step that finds documents by id would take two for one. "keep_one": the step tells rows apart by
    # (shard, row) itself and keeps exactly one of each group of copies (the dedup steps). `curate.dedup.ids`.
    repeated_ids: ClassVar[str] = "refuse"

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
