"""What the block classifier of `extract.Main` sees of each block: numbers computed from its text and place.

Two stages. `local` describes a block on its own (length, stop-word and link density, punctuation,
capitalisation, the cues of its tags and ancestors, its position); stage 1 scores those. `context`
adds what the page around it says: the stage-1 scores of its neighbours and whether it lies in the
main-content region, the container element whose blocks carry the most stage-1 evidence.
Stop words come from jusText's lists (a trafilatura dependency) in the language the page's own
frequent words point to; a page whose language has no list gets a neutral stop-word density.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from curate.extract.blocks import Block

WORD = re.compile(r"\w+")
_PUNCT = re.compile(r"[.,;:!?。、，]")
_END = (".", "!", "?", '"', "”", "’", ":", ";", "。", ")", "…")
KINDS = ("p", "h", "li", "td", "pre", "cap")
LOCAL = ("bias", "log_chars", "stop", "link", "punct", "ends", "caps", "digits", "neg", "pos",
         *(f"kind_{k}" for k in KINDS), "position", "share", "neg_any", "link_sq", "stop_x_len")
CONTEXT = ("p1_prev", "p1_next", "p1_window", "region", "region_share", "region_neg")
NEUTRAL_STOP = 0.3  # a typical density of running text, for languages without a list

_stoplists: dict[str, frozenset[str]] = {}
_word_langs: dict[str, tuple[str, ...]] = {}


def _load_stoplists() -> None:
    import justext

    langs: dict[str, list[str]] = {}
    for name in sorted(justext.get_stoplists()):
        words = frozenset(justext.get_stoplist(name))
        _stoplists[name] = words
        for w in words:
            langs.setdefault(w, []).append(name)
    _word_langs.update((w, tuple(v)) for w, v in langs.items())


def stoplist(tokens: list[list[str]]) -> frozenset[str] | None:
    """The stop words of the page's language: the list that covers most of its 40 most frequent words."""
    if not _stoplists:
        _load_stoplists()
    freq = Counter(w for ws in tokens for w in ws)
    votes: Counter[str] = Counter()
    for w, _ in freq.most_common(40):
        for lang in _word_langs.get(w, ()):
            votes[lang] += 1
    if not votes:
        return None
    lang, n = votes.most_common(1)[0]
    return _stoplists[lang] if n >= 4 else None


def local(blocks: list[Block]) -> tuple[np.ndarray, list[list[str]]]:
    """Stage-1 features, one row per block, and each block's lower-cased tokens."""
    tokens = [WORD.findall(b.text.lower()) for b in blocks]
    stop = stoplist(tokens)
    total = sum(b.chars for b in blocks) or 1
    n = max(len(blocks) - 1, 1)
    rows = []
    for b, ws in zip(blocks, tokens, strict=True):
        nw = len(ws) or 1
        text = b.text
        sd = sum(w in stop for w in ws) / nw if stop is not None else NEUTRAL_STOP
        caps = sum(w[:1].isupper() for w in text.split()) / max(text.count(" ") + 1, 1)
        digits = sum(w.isdigit() for w in ws) / nw
        kind = b.kind
        ld, lc = b.link_chars / b.chars, math.log1p(b.chars)
        rows.append([
            1.0, lc, sd, ld, min(len(_PUNCT.findall(text)) / nw, 1.0),
            float(text.endswith(_END)), caps, digits, min(b.neg, 3), min(b.pos, 2),
            *(float(kind == k) for k in KINDS), b.index / n, b.chars / total, float(b.neg > 0), ld * ld, sd * lc,
        ])
    return np.array(rows, dtype=np.float64).reshape(len(blocks), len(LOCAL)), tokens


def region(blocks: list[Block], p1: np.ndarray) -> tuple[int, float]:
    """The container whose blocks have the largest sum of (p1 - 0.5) x chars, and its share of the page."""
    sums: dict[int, float] = {}
    for b, p in zip(blocks, p1, strict=True):
        v = (p - 0.5) * b.chars
        for node in b.path:
            sums[node] = sums.get(node, 0.0) + v
    best = max(sums, key=lambda k: (sums[k], k)) if sums else 0
    inside = sum(b.chars for b in blocks if best in b.path)
    return best, inside / (sum(b.chars for b in blocks) or 1)


def _window(x: np.ndarray, k: int) -> np.ndarray:
    """Sum of x over positions i-k..i+k, for every i."""
    c = np.concatenate(([0.0], np.cumsum(x)))
    i = np.arange(len(x))
    return c[np.minimum(i + k + 1, len(x))] - c[np.maximum(i - k, 0)]


def context(blocks: list[Block], p1: np.ndarray) -> np.ndarray:
    """Stage-2 extra features: neighbours' stage-1 scores (chars-weighted window of 3 each side) and the region."""
    n = len(blocks)
    best, share = region(blocks, p1)
    chars = np.array([b.chars for b in blocks], dtype=np.float64)
    prev = np.concatenate(([0.0], p1[:-1]))
    nxt = np.concatenate((p1[1:], [0.0]))
    wp, wc = _window(p1 * chars, 3), _window(chars, 3)
    window = (wp - p1 * chars) / np.maximum(wc - chars, 1.0)
    inreg = np.array([float(best in b.path) for b in blocks])
    # Cues met inside the region (a comment section within the article's container) count, those above it don't.
    base = min((b.neg for b in blocks if best in b.path), default=0)
    rel = np.array([min(b.neg - base, 3) if best in b.path else min(b.neg, 3) for b in blocks], dtype=np.float64)
    return np.column_stack([prev, nxt, window, inreg, np.full(n, share), rel])
