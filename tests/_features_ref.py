"""The numpy implementation of extract.Main's block features and logistic models that _score.c replaced, kept as
the independent reference tests/test_extract_features.py compares the C code with (as tests/_tree_walk.py is
for the walk). The per-block counts are regexes and collections.Counter here, the page-level quantities numpy
operations on columns, as features.py computed them before they moved to C; the stop-word vote is
features.stoplist itself (Python in both)."""

from __future__ import annotations

import re
from collections import Counter
from itertools import chain, islice

import numpy as np

from curate.extract import features as F

_WORD = re.compile(r"\w+")
_PUNCT = re.compile(r"[.,;:!?。、，]")
_CAP = re.compile(r"(?<!\S)[A-ZÀ-ÖØ-ÞА-ЯΑ-Ω]")
_NUM = re.compile(r"\b\d+\b")


def simple_lower(text: str) -> str:
    """Lower case a code point at a time (Unicode's simple mapping), as the C code does: str.lower() writes
    "i̇" for "İ" and applies the final-sigma rule."""
    return "".join(c.lower()[0] for c in text)


def top_words(tokens: list[list[str]], limit: int = F._TOP[0], n: int = F._TOP[1]) -> list[str]:
    return [w for w, _ in Counter(islice(chain.from_iterable(tokens), limit)).most_common(n)]


def block_stats(blocks, stop) -> np.ndarray:
    """Per block: chars, link_chars, neg, pos, com, kind index, words, stop words, punctuation, capitals, numbers,
    spaces, ends like a sentence."""
    rows = []
    for b in blocks:
        ws = _WORD.findall(simple_lower(b.text))
        rows.append([b.chars, b.link_chars, b.neg, b.pos, b.com, F.KINDS.index(b.kind) if b.kind in F.KINDS else -1,
                     len(ws), sum(w in stop for w in ws) if stop is not None else 0, len(_PUNCT.findall(b.text)),
                     len(_CAP.findall(b.text)), len(_NUM.findall(b.text)), b.text.count(" "), b.text.endswith(tuple(F._END))])
    return np.array(rows, dtype=np.float64).reshape(-1, 13)


def comment_base(blocks) -> float:
    """The comment cues of the page's first prose block (150+ chars, under half link text, ends like a sentence),
    else the page's least-cued block's: features.comments' rule."""
    for b in blocks:
        if b.chars >= 150 and b.link_chars * 2 < b.chars and b.text.endswith(tuple(F._END)):
            return float(b.com)
    return float(min(b.com for b in blocks))


def comment_blocks(blocks) -> np.ndarray:
    com = np.array([b.com for b in blocks], dtype=np.float64)
    return com > comment_base(blocks)


def local(blocks, stoplist=F.stoplist, keep_comments: bool = False) -> tuple[np.ndarray, np.ndarray]:
    stop = stoplist(top_words([_WORD.findall(simple_lower(b.text)) for b in blocks]))
    (chars, link, neg, pos, com, kind, words, stops, punct, caps, nums, spaces, ends) = block_stats(blocks, stop).T
    if keep_comments:  # comment cues are read as text: none of them counts as boilerplate
        neg = neg - com
    nw = np.maximum(words, 1.0)
    lc = np.log1p(chars)
    ld = link / chars
    sd = stops / nw if stop is not None else np.full(len(blocks), F.NEUTRAL_STOP)
    n = len(blocks)
    cols = [np.ones(n), lc, sd, ld, np.minimum(punct / nw, 1.0), ends, caps / (spaces + 1), nums / nw,
            np.minimum(neg, 3), np.minimum(pos, 2), *(kind == np.arange(len(F.KINDS))[:, None]).astype(np.float64),
            np.arange(n) / max(n - 1, 1), chars / (chars.sum() or 1.0), (neg > 0).astype(np.float64), ld * ld,
            sd * lc, sd / _prose_stop(sd, nw), np.maximum(np.minimum(neg, 3) - _typical_neg(neg, chars), 0)]
    return np.column_stack(cols).reshape(n, len(F.LOCAL)), words.astype(np.int64)


def _typical_neg(neg: np.ndarray, chars: np.ndarray) -> float:
    """The chars-weighted median of min(neg, 3): the smallest count whose blocks (with fewer-cued ones) hold half
    the page's characters."""
    capped = np.minimum(neg, 3)
    for k in range(4):
        if chars[capped <= k].sum() * 2 >= chars.sum():
            return float(k)
    return 3.0


def _prose_stop(sd: np.ndarray, nw: np.ndarray) -> float:
    prose = sd[nw >= 10]
    return max(float(np.median(prose)), 0.05) if len(prose) else F.NEUTRAL_STOP


def region(blocks, p1: np.ndarray) -> tuple[int, np.ndarray]:
    """The container with the largest sum of (p1 - 0.5) x chars, a block's weighed 1 in its own element and its
    parent and 1/sqrt(d - 1) in the ancestor d levels up (ties: the deepest), and the positive runs beside it:
    every child with a positive (unweighed) sum of the first ancestor holding more than one container (the hub)."""
    chars = np.array([b.chars for b in blocks], dtype=np.float64)
    flat = np.array([v for b in blocks for v in b.path], dtype=np.int64)
    owner = np.repeat(np.arange(len(blocks)), [len(b.path) for b in blocks])
    up = np.array([len(b.path) - 1 - k for b in blocks for k in range(len(b.path))], dtype=np.float64)
    sums = np.bincount(flat, weights=((p1 - 0.5) * chars)[owner])
    near = np.bincount(flat, weights=((p1 - 0.5) * chars)[owner] / np.sqrt(np.maximum(up - 1, 1)))
    near[np.bincount(flat) == 0] = -np.inf
    best = int(np.flatnonzero(near == near.max())[-1])
    parent = {b.path[k]: b.path[k - 1] for b in blocks for k in range(1, len(b.path))}
    kids = Counter(parent.values())
    via, hub = best, parent.get(best)
    while hub is not None and kids[hub] < 2:
        via, hub = hub, parent.get(hub)
    inside = np.zeros(len(blocks), dtype=bool)
    for i, b in enumerate(blocks):
        if best in b.path:
            inside[i] = True
        elif hub in b.path:
            k = b.path.index(hub)
            inside[i] = p1[i] > 0.5 if k + 1 == len(b.path) else b.path[k + 1] == via or sums[b.path[k + 1]] > 0
    return best, inside


def core(blocks, best: int) -> np.ndarray:
    """The blocks of the best container itself (the region less the runs beside it)."""
    return np.array([best in b.path for b in blocks], dtype=bool)


def _window(x: np.ndarray, k: int) -> np.ndarray:
    c = np.concatenate(([0.0], np.cumsum(x)))
    i = np.arange(len(x))
    return c[np.minimum(i + k + 1, len(x))] - c[np.maximum(i - k, 0)]


def context(blocks, p1: np.ndarray, keep_comments: bool = False) -> np.ndarray:
    n = len(blocks)
    if not keep_comments:  # a comment block's stage-1 probability is read as 0
        p1 = np.where(comment_blocks(blocks), 0.0, p1)
    chars = np.array([b.chars for b in blocks], dtype=np.float64)
    best, inside = region(blocks, p1)
    prev = np.concatenate(([0.0], p1[:-1]))
    nxt = np.concatenate((p1[1:], [0.0]))
    wp, wc = _window(p1 * chars, 3), _window(chars, 3)
    window = (wp - p1 * chars) / np.maximum(wc - chars, 1.0)
    share = chars[inside].sum() / (chars.sum() or 1.0)
    neg = np.array([b.neg for b in blocks], dtype=np.float64)
    if keep_comments:
        neg = neg - np.array([b.com for b in blocks], dtype=np.float64)
    base = neg[inside].min() if inside.any() else 0.0
    rel = np.minimum(np.where(inside, neg - base, neg), 3)
    return np.column_stack([prev, nxt, window, inside.astype(np.float64), np.full(n, share), rel,
                            _distance(inside), _headline(blocks, core(blocks, best))])


def _distance(inside: np.ndarray) -> np.ndarray:
    idx = np.flatnonzero(inside)
    i = np.arange(len(inside))
    if not len(idx):
        return np.zeros(len(inside))
    at = np.searchsorted(idx, i)
    d = np.minimum(np.abs(i - idx[np.maximum(at - 1, 0)]), np.abs(idx[np.minimum(at, len(idx) - 1)] - i))
    return np.log1p(d) / 3


def _headline(blocks, inside: np.ndarray, reach: int = 30) -> np.ndarray:
    out = np.zeros(len(blocks))
    idx = np.flatnonzero(inside)
    start = int(idx[0]) if len(idx) else 0
    for i in range(start - 1, max(start - reach, 0) - 1, -1):
        if blocks[i].kind == "h":
            out[i] = 1.0
            break
    return out


def probability(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(np.einsum("ij,j->i", x, w), -30.0, 30.0)))
