"""Differences between the two training classes that a classifier can learn instead of quality.

A fastText model separates whatever separates its two classes. If the positives are mostly Portuguese
and the negatives English, it learns language; if one book is most of the positive text, it learns
that book's names and topic; if negatives are SMS-length and positives page-length, length-linked
tokens decide. Held-out metrics cannot show this (the held-out split has the same confound), so
`curate quality train` measures these three and warns with the figures.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

from curate.core.errors import UsageError
from curate.filters._text import TOKEN_RE, shipped_languages, shipped_words
from curate.quality.text import Examples

LANGUAGE_GAP = 0.25  # warn when a language's share of text differs this much between the classes
LENGTH_RATIO = 2.0  # warn when one class's median example is this many times longer
SOURCE_SHARE = 0.5  # warn when one input file holds this much of a class's text


def guess_language(line: str, lists: dict[str, frozenset[str]]) -> str:
    """The shipped stop-word list with most hits among the first 200 words ("?" with none)."""
    words = TOKEN_RE.findall(line)[:200]
    hits = {lang: sum(w in stop for w in words) for lang, stop in lists.items()}
    best = max(hits, key=hits.get)
    return best if hits[best] else "?"


def language_shares(ex: Examples, lists: dict[str, frozenset[str]]) -> dict[str, float]:
    """Share of the class's words in each guessed language."""
    words = Counter()
    for line, n in zip(ex.lines, ex.words(), strict=True):
        words[guess_language(line, lists)] += n
    total = sum(words.values()) or 1
    return {lang: n / total for lang, n in words.most_common()}


def source_shares(ex: Examples) -> dict[str, float]:
    """Share of the class's words from each input file."""
    words = Counter()
    for src, n in zip(ex.source, ex.words(), strict=True):
        words[os.path.basename(ex.files[src])] += n
    total = sum(words.values()) or 1
    return {name: n / total for name, n in words.most_common()}


def _pct(shares: dict[str, float], k: int = 3) -> str:
    return ", ".join(f"{v:.0%} {name}" for name, v in list(shares.items())[:k] if v >= 0.005)


def confounds(pos: Examples, neg: Examples) -> tuple[dict, list[str]]:
    """(figures, warnings): language mix, example length and biggest source of each class."""
    for name, ex in (("positive", pos), ("negative", neg)):
        if not ex.lines:  # nothing to compare; `quality.train` refuses this earlier, with the reason
            raise UsageError(f"the {name} class has no examples: {ex.summary()}")
    lists = {lang: shipped_words("stopwords", lang) for lang in shipped_languages("stopwords")}
    figures: dict = {}
    warnings: list[str] = []
    langs = {"positive": language_shares(pos, lists), "negative": language_shares(neg, lists)}
    figures["language_share_of_words"] = {k: {lang: round(v, 3) for lang, v in s.items()} for k, s in langs.items()}
    gap = max((abs(langs["positive"].get(x, 0) - langs["negative"].get(x, 0)), x)
              for x in set(langs["positive"]) | set(langs["negative"]))
    if gap[0] >= LANGUAGE_GAP:
        warnings.append(f"language: positives are {_pct(langs['positive'])}; negatives are {_pct(langs['negative'])} "
                        f"(by words): the model can learn language ({gap[1]}) instead of quality; give both classes "
                        "the same language mix, or train one model per language")
    med = {k: float(np.median(e.words())) for k, e in (("positive", pos), ("negative", neg))}
    figures["median_example_words"] = med
    lo, hi = sorted(med.values())
    if hi > LENGTH_RATIO * max(lo, 1):
        warnings.append(f"length: the median positive example has {med['positive']:.0f} words, the median negative "
                        f"{med['negative']:.0f}: the model can learn length-linked tokens instead of quality; cut both "
                        "into chunks of one size (--chunk-words) or give examples of like length")
    for name, ex in (("positive", pos), ("negative", neg)):
        shares = source_shares(ex)
        figures[f"{name}_sources"] = {k: round(v, 3) for k, v in list(shares.items())[:5]}
        top, share = next(iter(shares.items()))
        top_groups = {g for g, s in zip(ex.group, ex.source, strict=True) if os.path.basename(ex.files[s]) == top}
        if share >= SOURCE_SHARE and len(top_groups) == 1:  # one document (a book, one text file) is most of a class
            warnings.append(f"source: {share:.0%} of the {name} text is one document, {top}: the model can learn its "
                            "topic and names instead of quality; add other documents of the same kind")
    return figures, warnings
