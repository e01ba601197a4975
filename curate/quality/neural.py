"""Neural quality classifiers as pipeline steps: `NeuralClassifier` scores every document with a Hugging Face
sequence-classification or regression model (FineWeb-Edu's classifier: an encoder and a one-output regression
head, kept at an integer score of 3 or more), or with a head `curate quality fit` trained on frozen embeddings;
`MaxScore` combines several classifiers' integer scores by their maximum, as Nemotron-CC buckets its corpus.

The model runs through the inference layer (`curate.models.inference`): loaded once per worker process in
`setup`, documents batched by a token budget, truncated at the model's context (counted), throughput in the
step's stats. torch and transformers are imported only in `setup`.

How a model's outputs become the score column (`column`, float32) and its integer companion (`column_int`):

* one output (a regression head): the value itself;
* several outputs (one logit per label), by `reduce`: `"expected"` (default: the softmax-weighted mean of the
  labels' values: numeric label names such as "0".."5", else their indices), `"argmax"` (the value of the most
  likely label), or a label name (that label's softmax probability);
* the integer score is the score rounded half to even and clamped to `[low, high]`, FineWeb-Edu's
  `int(round(max(0, min(score, 5))))`. With `threshold`, a document whose integer score is below it is dropped
  (`<name>:below_threshold`).
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from curate.core.document import Document
from curate.core.errors import UsageError
from curate.core.stats import StepStats, Throughput
from curate.core.step import Reject, Result, Step
from curate.core.validate import check, config_error
from curate.quality.head import is_head, load_head

BELOW = "below_threshold"


def int_scores(scores: np.ndarray, low: float, high: float) -> np.ndarray:
    """Rounded half to even, clamped to [low, high]: FineWeb-Edu's integer score."""
    return np.clip(np.rint(scores), low, high).astype(np.int32)


def reduce_outputs(outputs: np.ndarray, labels: list[str], reduce: str) -> np.ndarray:
    """One score per row of a head's outputs (N, k), by the rules of the module docstring."""
    if outputs.shape[1] == 1:
        return outputs[:, 0].astype(np.float64)
    z = outputs.astype(np.float64)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    try:
        values = np.array([float(x) for x in labels], dtype=np.float64)
    except ValueError:
        values = np.arange(outputs.shape[1], dtype=np.float64)
    if reduce == "expected":
        return p @ values
    if reduce == "argmax":
        return values[p.argmax(axis=1)]
    if reduce not in labels:
        raise UsageError(f"reduce={reduce!r}: the model's labels are {labels}; give one of them, 'expected' or "
                         "'argmax'")
    return p[:, labels.index(reduce)]


class NeuralClassifier(Step):
    """`NeuralClassifier(model, column="edu_score", threshold=3)`: scores with a sequence-classification model
    (a local folder or a hub id) or a `curate quality fit` head folder; keeps by integer score when `threshold`
    is given. `name` (default: `column`) names the stats row and the drop reason, so several classifiers can
    sit in one pipeline."""

    file_params = ("model",)

    def __init__(self, model: str | os.PathLike, *, column: str = "classifier_score", threshold: float | None = None,
                 low: float = 0, high: float = 5, reduce: str = "expected", device: str = "auto",
                 max_tokens: int | None = None, token_budget: int | None = None, threads: int | None = None,
                 revision: str | None = None, name: str | None = None):
        if not isinstance(model, (str, os.PathLike)) or not os.fspath(model):
            raise config_error("NeuralClassifier", f"model must be a folder or a hub id, got {model!r}")
        if not isinstance(column, str) or not column.isidentifier():
            raise config_error("NeuralClassifier", f"column must be a plain column name, got {column!r}")
        self.model, self.column, self.reduce = os.fspath(model), column, reduce
        self.threshold = None if threshold is None else check("NeuralClassifier", "threshold", threshold, float)
        self.low, self.high = check("NeuralClassifier", "low", low, float), check("NeuralClassifier", "high", high, float)
        if self.low > self.high:
            raise config_error("NeuralClassifier", f"low ({low}) must be <= high ({high})")
        self.device, self.max_tokens, self.token_budget = device, max_tokens, token_budget
        self.threads, self.revision = threads, revision
        self.name = name or column
        self.columns = {column: pa.float32(), f"{column}_int": pa.int32()}
        self._model = self._head = None
        self._throughput = Throughput()

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_model": None, "_head": None}  # workers load their own in setup

    def _spec(self):
        from curate.models import ModelSpec

        if is_head(self.model):
            head = load_head(self.model)
            return ModelSpec(head.encoder, task="embed", device=self.device, revision=head.encoder_revision,
                             threads=self.threads)
        return ModelSpec(self.model, task="classify", device=self.device, revision=self.revision, threads=self.threads)

    def check_ready(self) -> None:
        self._spec().check_ready()

    def resources(self) -> dict[str, float]:
        return self._spec().resources()

    def setup(self) -> None:
        from curate.models.inference import get_model

        self._head = load_head(self.model) if is_head(self.model) else None
        self._model = get_model(self._spec())

    def scores(self, texts: list[str]) -> np.ndarray:
        """The float score of each text (what the `column` holds)."""
        if self._model is None:
            self.setup()
        kw = {"max_tokens": self.max_tokens, "counter": self._throughput}
        if self.token_budget:
            kw["token_budget"] = self.token_budget
        if self._head is not None:
            outputs, labels = self._head.outputs(self._model.embed(texts, **kw)), self._head.labels
        else:
            outputs, labels = self._model.classify(texts, **kw), self._model.labels
        return reduce_outputs(outputs, labels, self.reduce)

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        scores = self.scores([d.text for d in docs])
        ints = int_scores(scores, self.low, self.high)
        out: list[Result] = []
        for doc, s, i in zip(docs, scores.tolist(), ints.tolist(), strict=True):
            doc.extra[self.column], doc.extra[f"{self.column}_int"] = float(s), int(i)
            out.append(Reject(BELOW, i, self.threshold) if self.threshold is not None and i < self.threshold else doc)
        return out

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def finish(self, stats: StepStats) -> None:
        stats.extra["throughput"] = self._throughput.record()
        self._throughput.clear()  # the step lives on in its worker for the next task
        stats.extra["cut"] = {"column": self.column, "threshold": self.threshold, "low": self.low, "high": self.high}


class MaxScore(Step):
    """`MaxScore(["edu_score_int", "dclm_score_int"], column="quality_bucket", threshold=None)`: the largest of
    several integer score columns (written by earlier `NeuralClassifier` steps), Nemotron-CC's way of combining
    classifiers: a document is in bucket k when its best classifier gives it k. A document missing a column
    (a step that did not score it) is an error, not a zero. `threshold` keeps buckets at or above it."""

    def __init__(self, inputs: list[str], *, column: str = "quality_bucket", threshold: int | None = None,
                 name: str | None = None):
        if not inputs or not all(isinstance(c, str) for c in inputs):
            raise config_error("MaxScore", f"inputs must be a non-empty list of column names, got {inputs!r}")
        self.inputs, self.column, self.threshold = list(inputs), column, threshold
        self.name = name or column
        self.columns = {column: pa.int32()}

    def apply(self, doc: Document) -> Result:
        missing = [c for c in self.inputs if doc.extra.get(c) is None]
        if missing:
            raise KeyError(f"no {', '.join(missing)} on document {doc.id}: put the classifiers that write them "
                           "before MaxScore")
        bucket = max(int(doc.extra[c]) for c in self.inputs)
        doc.extra[self.column] = bucket
        return Reject(BELOW, bucket, self.threshold) if self.threshold is not None and bucket < self.threshold else doc
