"""Issue 41.6 (item 1's test): every step with a word-based parameter takes its words from `curate.lang`.

The walk, like tests/test_layers.py's over imports: every Step class defined in the step packages whose constructor
has a parameter about words, n-grams, sentences or shingles must (1) live in a module that imports `curate.lang`,
and (2) keep `units_version()` as its `text_units` parameter (so its words are the language layer's and a change of
them re-runs a resumed pipeline instead of mixing two definitions). A step that cannot follow the rule is named in
EXEMPT with the reason; decontamination's index, which is no step, is checked by name.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap
from pathlib import Path

import pytest

from curate.core.step import Step
from curate.lang import units_version

PACKAGES = ["curate.filters", "curate.dedup", "curate.decontam", "curate.quality", "curate.extract"]
WORD_PARAM = re.compile(r"word|gram|sentence|shingle")
EXEMPT = {
    "curate.filters.url.Url": "its banned words are substrings of URLs, not words of a language",
    "curate.extract.main.Main": "extraction runs before language identification: its fallback's min_words counts "
                                "the blocks' whitespace words in the C walk (a floor for keeping a page, not a filter)",
}


def _step_classes() -> list[type]:
    found = []
    for pkg in PACKAGES:
        root = importlib.import_module(pkg)
        for info in pkgutil.walk_packages(root.__path__, pkg + "."):
            mod = importlib.import_module(info.name)
            found += [c for c in vars(mod).values()
                      if inspect.isclass(c) and issubclass(c, Step) and c.__module__ == mod.__name__]
    return sorted(set(found), key=lambda c: (c.__module__, c.__name__))


def _word_steps() -> list[type]:
    return [c for c in _step_classes() if any(WORD_PARAM.search(p) for p in inspect.signature(c.__init__).parameters)]


def _imports_lang(path: str) -> bool:
    tree = ast.parse(Path(path).read_text())
    return any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith("curate.lang") or
               isinstance(n, ast.Import) and any(a.name.startswith("curate.lang") for a in n.names)
               for n in ast.walk(tree))


def _sets_text_units(cls: type) -> bool:
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    return any(isinstance(n, ast.Assign) and any(ast.unparse(t) == "self.text_units" for t in n.targets)
               and ast.unparse(n.value) == "units_version()" for n in ast.walk(tree))


def test_the_walk_finds_the_word_steps():
    names = {f"{c.__module__}.{c.__name__}" for c in _word_steps()}
    assert {"curate.filters.gopher.GopherQuality", "curate.filters.c4.C4", "curate.dedup.minhash.MinHash",
            "curate.dedup.lines.Lines", "curate.dedup.substrings.Substrings"} <= names
    assert set(EXEMPT) <= names  # an exemption for a step that no longer has such a parameter is stale


@pytest.mark.parametrize("cls", _word_steps(), ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_word_steps_take_their_words_from_curate_lang(cls):
    name = f"{cls.__module__}.{cls.__name__}"
    if name in EXEMPT:
        pytest.skip(EXEMPT[name])
    assert _imports_lang(inspect.getsourcefile(cls)), f"{name}: its module does not import curate.lang"
    assert _sets_text_units(cls), f"{name}: no `self.text_units = units_version()` (the words it counts, fingerprinted)"
    try:
        step = cls()
    except TypeError:  # required arguments (a model, a target corpus): the source check above stands
        return
    assert step.text_units == units_version()


def test_decontamination_index_takes_units_and_scale_from_curate_lang():
    """The index's words (`decontam.text`) and its scaled sizes (`decontam.index`) come from curate.lang."""
    from curate.decontam import index, text

    assert _imports_lang(inspect.getsourcefile(text)) and _imports_lang(inspect.getsourcefile(index))
    assert text.UNIT is importlib.import_module("curate.lang").UNIT
    assert index.scaled is importlib.import_module("curate.lang").scaled
