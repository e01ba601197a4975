r"""Shared text statistics for the heuristic filters, computed once per document text.

The Gopher, FineWeb and bad-word filters all need the same tokens and lines. Tokenising is most of their
cost, so `text_stats(text)` caches the split per text object: the filters of one batch run one after
another over the same strings, and a rewrite (C4 dropping lines) makes a new string, hence a new entry.

Words are spaCy-English-like tokens, punctuation included (curate.filters._words: what datatrove counts).
Bad-word and stop-word lookups use the finer `\w+` tokens of the lower-cased text, which match like C4's
`\W`-delimited regex. Every split here is linear in the text's length (tests/test_linear.py).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from functools import cache
from importlib import resources

from curate.filters._words import word_tokens
from curate.io import fs

TOKEN_RE = re.compile(r"\w+")
HAS_LETTER = re.compile(r"[^\W\d_]")

# Characters that end a sentence, in the scripts our languages use and the common CJK/Indic ones.
TERMINAL_PUNCTUATION = tuple(".!?。！？．｡؟۔।॥።፧։‼⁇⁈⁉")

_CACHE_SIZE = 256  # more than a batch (64 documents), so every filter of a batch hits the cache


class TextStats:
    """Lazily computed splits of one text; each property is computed on first use and kept."""

    __slots__ = ("text", "_lower", "_lines", "_word_tokens")

    def __init__(self, text: str):
        self.text = text
        self._lower: list[str] | None = None
        self._lines: list[str] | None = None
        self._word_tokens: list[str] | None = None

    @property
    def lower_tokens(self) -> list[str]:
        """`\\w+` runs of the lower-cased text: for stop-word and bad-word lookups."""
        if self._lower is None:
            self._lower = TOKEN_RE.findall(self.text.lower())
        return self._lower

    @property
    def word_tokens(self) -> list[str]:
        """spaCy-English-like tokens, punctuation included (curate.filters._words): what datatrove counts."""
        if self._word_tokens is None:
            self._word_tokens = word_tokens(self.text)
        return self._word_tokens

    @property
    def lines(self) -> list[str]:
        """`str.splitlines()`: every line, blank ones included."""
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines


_cache: OrderedDict[int, TextStats] = OrderedDict()


def text_stats(text: str) -> TextStats:
    """The cached `TextStats` of this exact string object (keyed by identity, checked by `is`)."""
    key = id(text)
    st = _cache.get(key)
    if st is not None and st.text is text:
        return st
    st = TextStats(text)
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
