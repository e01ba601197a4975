"""`extract.Main`: main-content extraction as a two-stage block classifier on the Lexbor parser.

The page is parsed by Lexbor (C, HTML5-conformant, the fastest parser measured here; vendored and
compiled into the extension), and in the same C call one walk cuts the body into blocks, skipping the
elements that never hold main text
(`blocks.py`, `_walk.c`). A logistic model scores each block from its own features (stage 1); the
main-content region is the container with the most stage-1 evidence; a second logistic model
rescores each block with its neighbours' scores and its place relative to that region (stage 2,
`features.py`). Blocks over `threshold` are kept. When that keeps fewer than `min_words` words,
the extractor falls back to every block over half the threshold, then to every block with little
link text, so a page with text is not returned empty because the model was unsure.
The weights were fitted by benchmarks/extract_fit.py on the tuning split of the four gold sets, the
model chosen by leave-one-set-out (see docs/extract.md); benchmarks/extract.py scores every set with the
final weights and with the weights fitted without it. Comment sections are dropped unless `keep_comments`.

Output: one paragraph, heading or list item a line (the line rules of C4 and Gopher read lines);
a `<br>` inside a paragraph also ends a line; table cells of one row are joined by " | "; `<pre>`
keeps its line breaks and indentation.
"""

from __future__ import annotations

import numpy as np

import curate.extract._walk as _walk
from curate.core.document import Document
from curate.core.validate import check
from curate.extract import features as F
from curate.extract.base import Extractor
from curate.extract.blocks import Block
from curate.extract.weights import STAGE1, STAGE2, THRESHOLD


def probability(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A logistic model's probability for each row of `x`, sigmoid(x . w) with z clipped to [-30, 30] (C,
    `_walk.logistic`: `scores` computes the same inside its one call; the fit, benchmarks/extract_fit.py,
    calls this)."""
    return np.frombuffer(_walk.logistic(np.ascontiguousarray(x, dtype=np.float64), w))


W1 = np.array([STAGE1[k] for k in F.LOCAL])
W2 = np.array([STAGE2[k] for k in F.LOCAL + F.CONTEXT])


def parse(html: str, max_depth: int = 512, title: bool = False) -> tuple[list[Block], str]:
    """The page's blocks and, when asked, its <title> text; TooDeep past `max_depth` nested elements (one C call:
    Lexbor's parse, then the walk, which skips blocks.DROP (scripts, styles, ...) itself)."""
    blocks, page_title = _walk.parse(html, max_depth, title)
    return blocks, " ".join(page_title.split()) if page_title else ""


def scores(blocks: list[Block], keep_comments: bool = False, weights: tuple[np.ndarray, np.ndarray] = (W1, W2)
           ) -> tuple[np.ndarray, np.ndarray]:
    """Stage-2 probability that each block is main content (0 in a comment section unless `keep_comments`), and
    each block's number of words (features.py: both stages in one C call). `weights`: the two stages' weights
    (benchmarks/extract.py passes the ones fitted without the set it scores)."""
    return F.scores(blocks, *weights, keep_comments)


def _data_rows(blocks: list[Block], max_cell: int = 80) -> list[list[int]]:
    """Runs of two or more short one-line cells of one table row: a data table's rows (a layout table's
    cells are long, and are judged one by one)."""
    rows, run = [], []
    for i in [i for i, b in enumerate(blocks) if b.kind == "td" and b.chars <= max_cell and "\n" not in b.text]:
        if run and run[-1] == i - 1 and blocks[run[-1]].path[:-1] == blocks[i].path[:-1]:
            run.append(i)
            continue
        if len(run) > 1:
            rows.append(run)
        run = [i]
    if len(run) > 1:
        rows.append(run)
    return rows


def _keep_headings(blocks: list[Block], p: np.ndarray, keep: list[bool], floor: float, ahead: int = 3) -> None:
    """Keep a heading over `floor` when one of the next `ahead` blocks is kept and no other heading comes
    first (a byline or a photo caption often sits between): a heading is short, so it weighs little in the
    fit and often scores just under the threshold above its own section."""
    for i in [i for i, b in enumerate(blocks) if b.kind == "h"]:
        if keep[i] or p[i] <= floor:
            continue
        for j in range(i + 1, min(i + 1 + ahead, len(blocks))):
            if keep[j] or blocks[j].kind == "h":
                keep[i] = keep[j] and blocks[j].kind != "h"
                break


def select(blocks: list[Block], p: np.ndarray, words: np.ndarray, threshold: float,
           min_words: int, keep_comments: bool = False) -> list[bool]:
    """Which blocks to keep: those over `threshold`; the fallbacks when they hold under `min_words` words (comment
    sections never, unless `keep_comments`)."""
    keep = (p > threshold).tolist()
    for row in _data_rows(blocks):  # a row of short cells is kept or dropped whole
        chars = sum(blocks[i].chars for i in row)
        whole = sum(p[i] * blocks[i].chars for i in row) / chars > threshold
        for i in row:
            keep[i] = whole
    _keep_headings(blocks, p, keep, threshold / 2)
    if words[keep].sum() >= min_words:
        return keep
    # Fallback 1: every block at least half as probable as the threshold asks (a page in a language
    # whose stop words the model knows badly scores its prose low, but still above its menus).
    keep = (p > threshold / 2).tolist()
    if words[keep].sum() >= min_words:
        return keep
    # Fallback 2: everything that is not mostly link text (nor a comment, unless asked for).
    drop = np.zeros(len(blocks), dtype=bool) if keep_comments else F.comments(blocks)
    return [b.link_chars * 2 < b.chars and not d for b, d in zip(blocks, drop.tolist(), strict=True)]


def render(blocks: list[Block], keep: list[bool]) -> str:
    """The kept blocks as text, a line per block (cells of one table row share a line). A line's pieces are joined
    once at the end: appending each cell to the line's string copied the line so far, quadratic in a long row."""
    lines: list[list[str]] = []
    row = None
    for b, k in zip(blocks, keep, strict=True):
        if not k:
            row = None
            continue
        if b.kind == "td" and row is not None and b.path[:-1] == row and "\n" not in b.text:
            lines[-1].append(b.text)
            continue
        row = b.path[:-1] if b.kind == "td" and "\n" not in b.text else None
        lines.append([b.text])
    return "\n".join(" | ".join(parts) for parts in lines)


def extract_text(html: str, threshold: float = THRESHOLD, min_words: int = 10, title: bool = False,
                 max_depth: int = 512, keep_comments: bool = False,
                 weights: tuple[np.ndarray, np.ndarray] = (W1, W2)) -> str:
    """The main text of `html`, one paragraph, heading or list item a line."""
    blocks, page_title = parse(html, max_depth, title)
    if not blocks:
        return page_title if title else ""
    p, words = scores(blocks, keep_comments, weights)
    text = render(blocks, select(blocks, p, words, threshold, min_words, keep_comments))
    if title and page_title and not text.startswith(page_title):
        text = f"{page_title}\n{text}"
    return text


class Main(Extractor):
    """Main-content extraction tuned on four gold sets: trafilatura's precision on article pages,
    Resiliparse's recall on broad pages, faster than both (the extraction table of docs/benchmarks.md).
    `threshold` trades precision (higher) for recall (lower); `title=True` puts the page's <title> on the first line;
    `keep_comments=True` keeps comment sections judged as text (by default they are dropped, as in most
    pretraining pipelines: whether comments are main text is the user's call, not something to learn from
    one gold set)."""

    # Lexbor's parse is quadratic in depth, but a page of 5,000 tags parses in 0.2 s at most even if every one nests
    # (in ~30 ms for 5,000 divs), and the walk then measures the parsed tree's own depth (TooDeep: `too_deep`). So
    # the pre-scan, whose estimate counts every unclosed tag (600 unclosed <a> would read as 600 deep), runs only
    # above that; beyond it depth is bounded and the parse linear in the page's length (tests/test_linear.py).
    scan_depth_above = 5_000

    def __init__(self, threshold: float = THRESHOLD, min_words: int = 10, title: bool = False,
                 keep_comments: bool = False, **kw):
        super().__init__(**kw)
        self.threshold = check(self, "threshold", threshold, float, lo=0, hi=1)
        self.min_words = check(self, "min_words", min_words, int, lo=0)
        self.title = check(self, "title", title, bool)
        self.keep_comments = check(self, "keep_comments", keep_comments, bool)

    def setup(self) -> None:
        F.stoplist([])  # load the stop-word lists once per worker

    def extract(self, doc: Document) -> str | None:
        return extract_text(doc.html, self.threshold, self.min_words, self.title, self.max_depth, self.keep_comments)
