r"""Shared text statistics for the heuristic filters, computed once per document text.

The Gopher, FineWeb and bad-word filters all need the same tokens and lines. Tokenising is most of their
cost, so `text_stats(text, lang)` caches the split per (text object, language): the filters of one batch run one
after another over the same strings, and a rewrite (C4 dropping lines) makes a new string, hence a new entry.

Words are the language's words, punctuation included (`curate.lang.words`: spaCy-English-like tokens for
languages that space words, what datatrove counts; ICU's segmentation for Chinese, Japanese, Thai, Lao,
Khmer and Burmese). Bad-word and stop-word lookups use the finer `\w+` tokens of the lower-cased text, which
match like C4's `\W`-delimited regex, or in a segmented language the lower-cased segmented words with a
letter or digit. Every split here is linear in the text's length (tests/test_linear.py).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from functools import cache
from importlib import resources

from curate import lang as language
from curate.io import fs
from curate.lang.units import TERMINAL_PUNCTUATION

TOKEN_RE = re.compile(r"\w+")
HAS_LETTER = re.compile(r"[^\W\d_]")

__all__ = ["TERMINAL_PUNCTUATION", "TextStats", "find_duplicates", "read_word_file", "shipped_languages",
           "shipped_words", "text_stats"]

_CACHE_SIZE = 256  # more than a batch (64 documents), so every filter of a batch hits the cache


class TextStats:
    """Lazily computed splits of one text in one language; each property is computed on first use and kept."""

    __slots__ = ("text", "lang", "_lower", "_lines", "_word_tokens")

    def __init__(self, text: str, lang: str = "en"):
        self.text = text
        self.lang = lang
        self._lower: list[str] | None = None
        self._lines: list[str] | None = None
        self._word_tokens: list[str] | None = None

    @property
    def lower_tokens(self) -> list[str]:
        """`\\w+` runs of the lower-cased text (a segmented language: its lower-cased words with a letter or
        digit): for stop-word and bad-word lookups."""
        if self._lower is None:
            if language.is_segmented(self.lang):
                self._lower = [w.lower() for w in self.word_tokens if TOKEN_RE.search(w)]
            else:
                self._lower = TOKEN_RE.findall(self.text.lower())
        return self._lower

    @property
    def word_tokens(self) -> list[str]:
        """The language's words, punctuation included (`curate.lang.words`): what datatrove counts."""
        if self._word_tokens is None:
            self._word_tokens = language.words(self.text, self.lang)
        return self._word_tokens

    @property
    def lines(self) -> list[str]:
        """`str.splitlines()`: every line, blank ones included."""
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines


_cache: OrderedDict[tuple[int, str], TextStats] = OrderedDict()


def text_stats(text: str, lang: str | None = "en") -> TextStats:
    """The cached `TextStats` of this exact string object in this language (keyed by identity and the language's
    base code, checked by `is`): the same text has other words in another language."""
    code = language.language(lang)
    key = (id(text), code)
    st = _cache.get(key)
    if st is not None and st.text is text:
        return st
    st = TextStats(text, code)
    _cache[key] = st  # the entry keeps `text` alive, so its id cannot be reused while cached
    if len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return st


def find_duplicates(items: list[str]) -> tuple[int, int]:
    """(number of items that repeat an earlier one, characters in those repeats)."""
    seen: set[str] = set()
    dup_items = dup_chars = 0
    for x in items:
        if x in seen:
            dup_items += 1
            dup_chars += len(x)
        else:
            seen.add(x)
    return dup_items, dup_chars


@cache
def shipped_words(kind: str, lang: str) -> frozenset[str]:
    """A word list shipped in curate/filters/data/<kind>/<lang>.txt (one entry a line), lower-cased."""
    path = resources.files("curate.filters") / "data" / kind / f"{lang}.txt"
    if not path.is_file():
        raise KeyError(lang)
    return frozenset(w.strip().lower() for w in path.read_text(encoding="utf-8").splitlines() if w.strip())


def shipped_languages(kind: str) -> list[str]:
    root = resources.files("curate.filters") / "data" / kind
    return sorted(p.name.removesuffix(".txt") for p in root.iterdir() if p.name.endswith(".txt"))


def read_word_file(path: str) -> list[str]:
    """One entry a line; blank lines and lines starting with `#` are skipped."""
    with fs.open(path, "r", encoding="utf-8") as f:  # a local path or an fsspec URL
        return [s for line in f if (s := line.strip()) and not s.startswith("#")]
