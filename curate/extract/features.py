"""What the block classifier of `extract.Main` sees of each block: numbers computed from its text and place.

Two stages. `local` describes a block on its own (length, stop-word and link density, punctuation,
capitalisation, the cues of its tags and ancestors, its position); stage 1 scores those. `context`
adds what the page around it says: the stage-1 scores of its neighbours and whether it lies in the
main-content region, the container element whose blocks carry the most stage-1 evidence.
Stop words come from jusText's lists (a trafilatura dependency) in the language the page's own
frequent words point to; a page whose language has no list gets a neutral stop-word density.
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np

from curate.extract._walk import block_stats, flat_paths, top_words
from curate.extract.blocks import Block

_END = ".!?\"”’:;。)…"  # a block that ends with one of these ends like a sentence
KINDS = ("p", "h", "li", "td", "pre", "cap")
LOCAL = ("bias", "log_chars", "stop", "link", "punct", "ends", "caps", "digits", "neg", "pos",
         *(f"kind_{k}" for k in KINDS), "position", "share", "neg_any", "link_sq", "stop_x_len", "stop_rel", "comments",
         "comments_share")
CONTEXT = ("p1_prev", "p1_next", "p1_window", "region", "region_share", "region_neg", "region_dist", "headline")
NEUTRAL_STOP = 0.3  # a typical density of running text, for languages without a list

_stoplists: list[frozenset[str]] = []  # jusText's lists, in the order of their language names
_word_langs: dict[str, np.ndarray] = {}  # word -> indices of the lists that hold it


def _load_stoplists() -> None:
    import justext

    langs: dict[str, list[int]] = {}
    for i, name in enumerate(sorted(justext.get_stoplists())):
        words = frozenset(justext.get_stoplist(name))
        _stoplists.append(words)
        for w in words:
            langs.setdefault(w, []).append(i)
    _word_langs.update((w, np.array(v, dtype=np.int64)) for w, v in langs.items())


def stoplist(top: list[str]) -> frozenset[str] | None:
    """The stop words of the page's language: the list that holds most of `top`, the page's 40 most frequent
    words among its first 1,500 (`_walk.top_words`), if it holds at least 4; ties go to the list met first."""
    if not _stoplists:
        _load_stoplists()
    found = [_word_langs[w] for w in top if w in _word_langs]
    if not found:
        return None
    seq = np.concatenate(found)
    votes = np.bincount(seq)
    most = votes.max()
    if most < 4:
        return None
    best = np.flatnonzero(votes == most)
    return _stoplists[int(best[0] if len(best) == 1 else seq[np.isin(seq, best)][0])]


def local(blocks: list[Block]) -> tuple[np.ndarray, np.ndarray]:
    """Stage-1 features, one row per block, and each block's number of words (\\w+ tokens of its text, which
    is lower-cased a code point at a time to be matched with the stop words). The per-block quantities come
    from one C pass (`_walk.block_stats`); what is computed here is page-level and vectorised."""
    stop = stoplist(top_words(blocks, 1500, 40))
    (chars, link, neg, pos, com, kind, words, stops, punct, caps, nums, spaces, ends) = np.frombuffer(
        block_stats(blocks, stop, KINDS, _END), dtype=np.float64).reshape(-1, 13).T
    nw = np.maximum(words, 1.0)
    lc = np.log1p(chars)
    ld = link / chars
    sd = stops / nw if stop is not None else np.full(len(blocks), NEUTRAL_STOP)
    com = (com > 0).astype(np.float64)
    n = len(blocks)
    cols = [np.ones(n), lc, sd, ld, np.minimum(punct / nw, 1.0), ends, caps / (spaces + 1), nums / nw,
            np.minimum(neg, 3), np.minimum(pos, 2), *(kind == np.arange(len(KINDS))[:, None]).astype(np.float64),
            np.arange(n) / max(n - 1, 1), chars / (chars.sum() or 1.0), (neg > 0).astype(np.float64), ld * ld,
            sd * lc, sd / _prose_stop(sd, nw), com, com * _comments_share(chars, com)]
    return np.column_stack(cols).reshape(n, len(LOCAL)), words.astype(np.int64)


def _comments_share(chars: np.ndarray, com: np.ndarray) -> float:
    """The share of the page's characters under a comment-section cue. The gold sets disagree on comments
    (Dragnet's gold keeps them, CleanPortalEval's drops them), and a wrong call costs a page in proportion
    to this share: with it the fit keeps comments that are most of the page (a short post under a long
    discussion) and drops a few under a full article."""
    return float(chars @ com) / (chars.sum() or 1.0)


def _prose_stop(sd: np.ndarray, nw: np.ndarray) -> float:
    """The page's typical stop-word density of prose (median over blocks of 10+ words): stop-word lists fit
    languages unevenly (Aragonese read with the Spanish list), so a block is also judged against its page."""
    prose = sd[nw >= 10]
    return max(float(np.median(prose)), 0.05) if len(prose) else NEUTRAL_STOP


def region(blocks: list[Block], p1: np.ndarray, chars: np.ndarray | None = None) -> tuple[int, np.ndarray]:
    """The container whose blocks have the largest sum of (p1 - 0.5) x chars, and which blocks lie in it.
    Sums over every block's container path at once: the paths' ids flattened, each weighted by its block's
    value."""
    if chars is None:
        chars = _column(blocks, "chars")
    flat, lens = (np.frombuffer(b, dtype=np.int64) for b in flat_paths(blocks))
    owner = np.repeat(np.arange(len(blocks)), lens)
    sums = np.bincount(flat, weights=((p1 - 0.5) * chars)[owner])
    sums[np.bincount(flat) == 0] = -np.inf
    best = int(np.flatnonzero(sums == sums.max())[-1])  # ties: the deepest (numbered last in document order)
    inside = np.zeros(len(blocks), dtype=bool)
    inside[owner[flat == best]] = True
    return best, inside


def _column(blocks: list[Block], name: str) -> np.ndarray:
    """One numeric field of every block as floats (fromiter: np.array of a list of ints is ~10x slower)."""
    return np.fromiter(map(attrgetter(name), blocks), dtype=np.float64, count=len(blocks))


def _window(x: np.ndarray, k: int) -> np.ndarray:
    """Sum of x over positions i-k..i+k, for every i."""
    c = np.concatenate(([0.0], np.cumsum(x)))
    i = np.arange(len(x))
    return c[np.minimum(i + k + 1, len(x))] - c[np.maximum(i - k, 0)]


def context(blocks: list[Block], p1: np.ndarray) -> np.ndarray:
    """Stage-2 extra features: neighbours' stage-1 scores (chars-weighted window of 3 each side), the region
    and the distance to it, and the headline above it."""
    n = len(blocks)
    chars = _column(blocks, "chars")
    _, inside = region(blocks, p1, chars)
    prev = np.concatenate(([0.0], p1[:-1]))
    nxt = np.concatenate((p1[1:], [0.0]))
    wp, wc = _window(p1 * chars, 3), _window(chars, 3)
    window = (wp - p1 * chars) / np.maximum(wc - chars, 1.0)
    share = chars[inside].sum() / (chars.sum() or 1.0)
    # Cues met inside the region (a comment section within the article's container) count, those above it don't.
    neg = _column(blocks, "neg")
    base = neg[inside].min() if inside.any() else 0.0
    rel = np.minimum(np.where(inside, neg - base, neg), 3)
    return np.column_stack([prev, nxt, window, inside.astype(np.float64), np.full(n, share), rel,
                            _distance(inside), _headline(blocks, inside)])


def _distance(inside: np.ndarray) -> np.ndarray:
    """log(1 + blocks to the nearest block of the region) / 3: a block just outside the region's container
    (the article's list of facts in a sibling box) is more likely content than one far off in the footer."""
    idx = np.flatnonzero(inside)
    i = np.arange(len(inside))
    if not len(idx):
        return np.zeros(len(inside))
    at = np.searchsorted(idx, i)
    d = np.minimum(np.abs(i - idx[np.maximum(at - 1, 0)]), np.abs(idx[np.minimum(at, len(idx) - 1)] - i))
    return np.log1p(d) / 3


def _headline(blocks: list[Block], inside: np.ndarray, reach: int = 30) -> np.ndarray:
    """1 for the last heading in the `reach` blocks before the region: the article's headline, which
    templates often put in a header box above the article's container, with share buttons in between."""
    out = np.zeros(len(blocks))
    idx = np.flatnonzero(inside)
    start = int(idx[0]) if len(idx) else 0
    for i in range(start - 1, max(start - reach, 0) - 1, -1):
        if blocks[i].kind == "h":
            out[i] = 1.0
            break
    return out
