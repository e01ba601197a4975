"""`ByLanguage(Step)`: a heuristic filter run with each document's own language's thresholds.

    filters.ByLanguage(filters.GopherQuality)                 # thresholds and stop words of doc.lang
    filters.ByLanguage(filters.FineWeb, max_dup_line_char_ratio=0.1)   # keyword arguments win over the data

The thresholds come from `curate.lang.config` (curate/lang/data/filters.json, derived by
scripts/derive_languages.py; docs/languages.md). English's are the published defaults, so on English
documents `ByLanguage(GopherQuality)` decides exactly as `GopherQuality()`. A language without a
configuration gets its script's fallback (no stop-word rule), never English's silently: each such document
is counted in `stats.extra["lang_config:fallback:<lang>"]`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from curate.core.document import Document
from curate.core.stats import StepStats
from curate.core.step import Result, Step
from curate.core.validate import check, config_error
from curate.lang import config as lang_config

# The steps whose thresholds the data holds, by their `name`.
CONFIGURABLE = ("gopher_quality", "gopher_repetition", "fineweb", "c4")


class ByLanguage(Step):
    """Runs one instance of `step` per language, each built with that language's configuration.

    Drop reasons and stats are the wrapped step's (`gopher_quality:stop_words`, …). The language is
    `doc.lang`, else `default_lang`. Instances are built on first use in each worker, so the pipeline
    pickles small; `data_version` (the data file's method and format) is a parameter, so a resumed run
    notices new thresholds.
    """

    def __init__(self, step: type[Step], default_lang: str = "en", **overrides: Any):
        if not (isinstance(step, type) and issubclass(step, Step)) or step.name not in CONFIGURABLE:
            raise config_error("ByLanguage", f"step must be GopherQuality, GopherRepetition, FineWeb or C4 "
                               f"(the steps whose thresholds curate.lang.config holds), got {step!r}")
        self.step = step
        self.name = step.name
        self.default_lang = check(self, "default_lang", default_lang, str)
        self.overrides = overrides
        self.data_version = lang_config.data_version()
        try:  # a bad keyword fails here, when the pipeline is built, not in a worker
            step(**overrides)
        except TypeError as e:
            raise config_error("ByLanguage", f"{step.__name__}: {e}") from None
        self._steps: dict[str, Step] = {}
        self._fallback: Counter = Counter()

    def for_language(self, lang: str) -> Step:
        """The step configured for `lang` (built and set up once per worker)."""
        code = lang_config.canonical(lang)
        step = self._steps.get(code)
        if step is None:
            kwargs = lang_config.config(lang).kwargs(self.name)
            kwargs.update(self.overrides)
            step = self.step(**kwargs)
            step.setup()
            self._steps[code] = step
        return step

    def apply(self, doc: Document) -> Result:
        lang = doc.lang or self.default_lang
        step = self.for_language(lang)
        if lang_config.config(lang).fallback:
            self._fallback[lang] += 1
        return step.apply(doc)

    def finish(self, stats: StepStats) -> None:
        for step in self._steps.values():  # each instance's figures, summed
            part = StepStats(self.name)
            step.finish(part)
            stats.merge(part)
        for lang, n in sorted(self._fallback.items()):
            stats.extra[f"lang_config:fallback:{lang}"] = n
        self._fallback = Counter()
