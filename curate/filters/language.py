"""Language identification with fastText's lid.176 model (Joulin et al. 2016, 176 languages), or any
fastText LID model fetched under a name (`curate models fetch glotlid --from model.bin`; GlotLID covers
2,000+ languages), with per-language confidence thresholds and the text's script as a cheap first signal."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping

from curate.core.document import Document
from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.core.step import Reject, Result, Step
from curate.core.validate import check, check_strings, config_error
from curate.filters._text import HAS_LETTER
from curate.io import fs, models
from curate.lang.config import LID176_LANGUAGES, dominant_script, script_of_language

__all__ = ["LID176_LANGUAGES", "Language"]  # the labels' home is curate.lang.config; named here as before


class Language(Step):
    """Sets `doc.lang` and `doc.lang_score` (the top prediction) and keeps documents whose top language is
    listed with a score of at least its threshold. `languages=None` labels every document and drops none.

    Reasons: `empty` (no letters to judge), `script` (with `scripts=True`: the text's dominant script is
    none of the listed languages' scripts, decided without the model), `unlisted` (top language not in the
    list), `low_score` (listed, but below its threshold). `threshold` is one number or a dict per language
    (`{"pt": 0.65, "sw": 0.5, "*": 0.65}`; `*` for the rest, else 0.65). `model` names the model in the
    cache: `lid` (lid.176, the default) or any name given to `curate models fetch NAME --from FILE`; its
    labels, with `__label__` removed, are the codes (`por_Latn` for GlotLID). The model is resolved in
    `setup()`, once per worker: `model_path`, else $PENEIRA_LID_MODEL (for `lid`), else the user cache.
    Predictions run one batch per call, on the text with newlines replaced by spaces (fastText reads one
    line) and cut to `max_chars`: the first few thousand characters decide the language as well as the
    whole page does, at a fraction of the cost. Per-language document counts go to `stats.extra` as
    `lang:<code>`.
    """

    name = "language"
    file_params = ("model_path",)

    def __init__(
        self,
        languages: Iterable[str] | None = ("en",),
        threshold: float | Mapping[str, float] = 0.65,
        model_path: str | os.PathLike | None = None,
        max_chars: int = 10_000,
        model: str = "lid",
        scripts: bool = False,
    ):
        if model_path is not None and not isinstance(model_path, (str, os.PathLike)):
            raise config_error(self, f"model_path must be a path or None, got {model_path!r}")
        self.model = check(self, "model", model, str)
        try:
            spec = models.model_spec(model)
        except ValueError as e:
            raise config_error(self, str(e)) from None
        # another model (model_path, $PENEIRA_LID_MODEL, a named one) may have other labels: then any code goes
        known = LID176_LANGUAGES if model == "lid" and model_path is None and not os.environ.get(spec.env) else None
        self.languages = None if languages is None else check_strings(self, "languages", languages, choices=known,
                                                                      empty=False)
        self._min_score = _thresholds(self, threshold)
        self.threshold = threshold if not isinstance(threshold, Mapping) else dict(threshold)
        self.model_path = model_path
        self.max_chars = check(self, "max_chars", max_chars, int, lo=1)
        self.scripts = check(self, "scripts", scripts, bool)
        self._scripts = None if not scripts or self.languages is None else frozenset(
            script_of_language(lang) for lang in self.languages)
        self._model = None
        self._seen: Counter = Counter()

    def threshold_for(self, lang: str) -> float:
        """The minimum score for `lang`: its own threshold, else the `*` one."""
        return self._min_score.get(lang, self._min_score["*"])

    def check_ready(self) -> None:
        if self.model_path is not None and fs.is_url(self.model_path):  # workers copy it; the driver need not
            if not fs.exists(self.model_path):
                raise UsageError(f"Language: model_path {self.model_path} does not exist")
            return
        try:
            models.resolve(self.model, self.model_path)
        except models.ModelMissing as e:
            raise UsageError(str(e)) from None

    def setup(self) -> None:
        import fasttext

        path = models.resolve(self.model, self.model_path)
        self._model = fasttext.load_model(str(path))

    def predict(self, texts: list[str]) -> list[tuple[str, float]]:
        """(language code, probability) of each text's top prediction."""
        if self._model is None:
            self.setup()
        lines = [t[: self.max_chars].replace("\n", " ").replace("\r", " ") for t in texts]
        labels, probs = self._model.predict(lines, k=1)
        return [(lab[0].removeprefix("__label__"), min(float(p[0]), 1.0)) for lab, p in zip(labels, probs, strict=True)]

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        todo = [d for d in docs if HAS_LETTER.search(d.text) and self._script_ok(d.text)]
        preds = dict(zip(map(id, todo), self.predict([d.text for d in todo]), strict=True)) if todo else {}
        out: list[Result] = []
        for doc in docs:
            pred = preds.get(id(doc))
            if pred is None:
                if self.languages is None:
                    out.append(doc)
                else:
                    out.append(Reject("script" if HAS_LETTER.search(doc.text) else "empty"))
                continue
            doc.lang, doc.lang_score = pred
            self._seen[doc.lang] += 1
            if self.languages is None:
                out.append(doc)
            elif doc.lang not in self.languages:
                out.append(Reject("unlisted"))
            elif doc.lang_score < (limit := self.threshold_for(doc.lang)):
                out.append(Reject("low_score", doc.lang_score, limit))
            else:
                out.append(doc)
        return out

    def _script_ok(self, text: str) -> bool:
        """Whether the text's dominant script (of its first `max_chars`) is one of the listed languages'."""
        if self._scripts is None:
            return True
        return dominant_script(text[: self.max_chars], max_letters=500) in self._scripts

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def finish(self, stats: StepStats) -> None:
        for lang, n in self._seen.most_common():
            stats.extra[f"lang:{lang}"] = n
        self._seen = Counter()


def _thresholds(owner: Step, threshold: float | Mapping[str, float]) -> dict[str, float]:
    """{language: minimum score}, with `*` for every other language (0.65 unless given)."""
    if isinstance(threshold, Mapping):
        table = {check(owner, "threshold language", k, str): check(owner, f"threshold[{k!r}]", v, float, lo=0, hi=1)
                 for k, v in threshold.items()}
        table.setdefault("*", 0.65)
        return table
    return {"*": check(owner, "threshold", threshold, float, lo=0, hi=1)}
