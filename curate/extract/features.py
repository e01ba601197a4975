"""What the block classifier of `extract.Main` sees of each block: numbers computed from its text and place.

Two stages. `local` describes a block on its own (length, stop-word and link density, punctuation,
capitalisation, the cues of its tags and ancestors, its position); stage 1 scores those. `context`
adds what the page around it says: the stage-1 scores of its neighbours and whether it lies in the
main-content region, the container element whose blocks carry the most stage-1 evidence with the runs of
text beside it. Comment sections (`comments`) are left to the user's `keep_comments`, not to the model.
Stop words come from jusText's lists (shipped in stoplists/ with their licence) in the language the page's own
frequent words point to; a page whose language has no list gets a neutral stop-word density.

The features and both models' products are computed in C (`_score.c`: `_walk.local`, `context`, `scores`),
one call per page: a page has ~170 blocks, and numpy operations on columns that short cost more in per-call overhead
than in arithmetic (the ~40 of them and the two products took ~500 us of a Dragnet page; the one C call takes
~190, most of it the pass over the text that was C before too). This module holds what C reads: the
column names (LOCAL, CONTEXT), in the order of the matrices, which C maps to what it computes at import
(an unknown or missing name is an error there), and the stop-word lists, whose language vote stays Python.
tests/_features_ref.py keeps the numpy implementation as the reference the C code is checked against.
"""

from __future__ import annotations

import gzip
from collections import Counter
from importlib import resources

import numpy as np

import curate.extract._walk as _walk
from curate.extract.blocks import Block

_END = ".!?\"”’:;。)…"  # a block that ends with one of these ends like a sentence
KINDS = ("p", "h", "li", "td", "pre", "cap")
LOCAL = ("bias", "log_chars", "stop", "link", "punct", "ends", "caps", "digits", "neg", "pos",
         *(f"kind_{k}" for k in KINDS), "position", "share", "neg_any", "link_sq", "stop_x_len", "stop_rel",
         "neg_rel")
CONTEXT = ("p1_prev", "p1_next", "p1_window", "region", "region_share", "region_neg", "region_dist", "headline")
NEUTRAL_STOP = 0.3  # a typical density of running text, for languages without a list
_TOP = (1500, 40)  # the language vote reads the 40 most frequent of the page's first 1,500 words

_stoplists: list[frozenset[str]] = []  # jusText's lists, in the order of their language names (file names)
_word_langs: dict[str, tuple[int, ...]] = {}  # word -> the lists that hold it, filled as words are met
_WORDS_MAX = 1 << 17  # entries; the memo is dropped and refilled past this, so memory stays bounded


def _load_stoplists() -> None:
    """jusText's lists, shipped in stoplists/ (one gzipped file a language), read as jusText's get_stoplist reads
    them: the bytes' lines (\n, \r, \r\n), decoded and lower-cased.

    Every worker process pays this before its first page (issue 45): 0.07 CPU s. An index of all 154,000 words
    to their lists cost 0.42 s more as a numpy array a word, 0.07 s as an int; `_langs_of` looks a word up in the
    102 lists when a page first asks for it instead (a page's top words are mostly the same few thousand)."""
    files = [f for f in resources.files("curate.extract").joinpath("stoplists").iterdir() if f.name.endswith(".txt.gz")]
    for f in sorted(files, key=lambda f: f.name.removesuffix(".txt.gz")):  # by language name
        _stoplists.append(frozenset(w.decode("utf8").lower() for w in gzip.decompress(f.read_bytes()).splitlines()))


def _langs_of(word: str) -> tuple[int, ...]:
    """The indices of the lists that hold `word`, in order (memoised)."""
    langs = _word_langs.get(word)
    if langs is None:
        if len(_word_langs) >= _WORDS_MAX:
            _word_langs.clear()
        langs = _word_langs[word] = tuple(i for i, words in enumerate(_stoplists) if word in words)
    return langs


def stoplist(top: list[str]) -> frozenset[str] | None:
    """The stop words of the page's language: the list that holds most of `top`, the page's 40 most frequent
    words among its first 1,500 (lower-cased; C passes them), if it holds at least 4; ties go to the list met
    first (in the order of `top`, a word's lists by index)."""
    if not _stoplists:
        _load_stoplists()
    seq = [i for w in top for i in _langs_of(w)]
    if not seq:
        return None
    votes = Counter(seq)
    most = max(votes.values())
    if most < 4:
        return None
    return _stoplists[next(i for i in seq if votes[i] == most)]


_walk.configure_scores(LOCAL, CONTEXT, KINDS, _END, NEUTRAL_STOP, *_TOP)


PROSE_CHARS = 150  # the first block this long, under half link text, ending like a sentence, is prose


def comments(blocks: list[Block]) -> np.ndarray:
    """Which blocks lie in a comment section: under more comment-section cues (`Block.com`: class/id words such as
    "comment", "disqus", "reply") than the page's first prose block (PROSE_CHARS characters or more, under half of
    them link text, ending like a sentence; with none, the page's least-cued block). An article comes before its
    comments, and templates name the article's own element after them too ("commented", "comments-wrap"), so only
    the cues beyond the article's count. Whether comments are kept is the user's choice
    (`Main(keep_comments=...)`), not the model's: the gold sets disagree (Dragnet's keeps comment threads, the
    others and most pretraining pipelines do not), so the fit never learns from comment blocks. C (`_score.c`,
    mark_comments) applies the same rule."""
    com = np.array([b.com for b in blocks], dtype=np.int64)
    if not len(com):
        return np.zeros(0, dtype=bool)
    prose = [b.com for b in blocks if b.chars >= PROSE_CHARS and b.link_chars * 2 < b.chars and b.text.endswith(tuple(_END))]
    return com > (prose[0] if prose else com.min())


def local(blocks: list[Block], keep_comments: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Stage-1 features, one row per block (LOCAL's columns), and each block's number of words (\\w+ tokens of
    its text, which is lower-cased a code point at a time to be matched with the stop words).

    What the columns say, beyond their names: `stop` is the share of words in the page language's stop-word
    list (NEUTRAL_STOP without one); `stop_rel` is it over the page's typical density of prose, the median
    over blocks of 10+ words, at least 0.05, because stop-word lists fit languages unevenly (Aragonese read
    with the Spanish list), so a block is also judged against its page. `neg_rel` is a block's boilerplate cues
    (min(neg, 3)) beyond the page's typical count, the chars-weighted median of min(neg, 3) over its blocks: a
    page builder that names every element of the page after a cue word ("elementor-widget" holds "widget")
    puts the article under boilerplate cues too, and then only the cues beyond the page's own say anything.
    With `keep_comments` no comment-section cue counts in the boilerplate count `neg`: comments are then text the
    user asked for, and a thread is judged as text even on a page whose first prose block is itself a comment
    (where `comments` cannot tell the thread from the article)."""
    x, words = _walk.local(blocks, stoplist, keep_comments)
    return np.frombuffer(x).reshape(len(blocks), len(LOCAL)), np.frombuffer(words, dtype=np.int64)


def context(blocks: list[Block], p1: np.ndarray, keep_comments: bool = False) -> np.ndarray:
    """Stage-2 extra features (CONTEXT's columns) given the stage-1 probabilities `p1` (a comment block's read as
    0 unless `keep_comments`, see `comments`).

    `p1_window` is the neighbours' stage-1 scores weighted by their characters, 3 blocks each side. The
    region is the container element whose blocks have the largest sum of (p1 - 0.5) x chars (ties: the
    deepest), with the runs beside it: going up from it to the first ancestor that holds more than one
    container (the hub), every child of the hub with a positive sum (an article interrupted by ads, embeds,
    notices, recipe cards, galleries or data tables is several runs of blocks under one parent, and one
    interruption's negative evidence must not shrink the region to one of them); `region_neg` counts a block's boilerplate cues less those of the region's least-cued block when
    it lies inside (a comment section within the article's container counts, a menu above it doesn't);
    `region_dist` is log(1 + blocks to the nearest block of the region) / 3, since a block just outside the
    region's container (the article's list of facts in a sibling box) is more likely content than one far
    off in the footer; `headline` is 1 for the last heading in the 30 blocks before the best container (not its runs), the
    article's headline, which templates often put in a header box above the article's container, with share
    buttons in between."""
    ctx = _walk.context(blocks, np.ascontiguousarray(p1, dtype=np.float64), keep_comments)
    return np.frombuffer(ctx).reshape(len(blocks), len(CONTEXT))


def scores(blocks: list[Block], w1: np.ndarray, w2: np.ndarray, keep_comments: bool = False
           ) -> tuple[np.ndarray, np.ndarray]:
    """Stage-2 probability of each block (weights `w1` of LOCAL, `w2` of LOCAL + CONTEXT; 0 for a comment block
    unless `keep_comments`) and its number of words: `local`, the stage-1 model, `context` and the stage-2 model
    in one C call, no array in between."""
    p, words = _walk.scores(blocks, stoplist, w1, w2, keep_comments)
    return np.frombuffer(p), np.frombuffer(words, dtype=np.int64)
