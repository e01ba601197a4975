"""extract.Main's block features and selection rules on tiny hand-made pages, against values computed by hand.

The pages are walked by the real walk (curate/extract/blocks.py), so a block here is what Main sees; the
stage-1 scores fed to `features.context` are set by hand, so the region is known in advance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from curate.extract import features as F
from curate.extract import main as M


def blocks_of(body: str):
    blocks, _ = M.parse(f"<html><body>{body}</body></html>")
    return blocks


ARTICLE = "An article paragraph of exactly sixty characters, you see..."
assert len(ARTICLE) == 60


def test_comments_share_is_the_comment_sections_share_of_the_page_on_its_blocks_only():
    """60 chars of article, then a comment section (class "comments") of 20 + 20 chars: the comment blocks
    get 40 / 100 = 0.4, the article block 0."""
    blocks = blocks_of(f"<article><p>{ARTICLE}</p></article>"
                       "<div class='comments'><p>Twenty chars here ok</p><p>And twenty more, yes</p></div>")
    assert [b.chars for b in blocks] == [60, 20, 20] and [b.com > 0 for b in blocks] == [False, True, True]
    x, _ = F.local(blocks)
    col = x[:, F.LOCAL.index("comments_share")]
    assert col.tolist() == pytest.approx([0.0, 0.4, 0.4])


PAGE = ("<h1>An old heading</h1>"
        "<div><h2>The headline</h2></div>"
        "<ul><li>Share this</li></ul>"
        f"<div><p>{ARTICLE}</p><p>{ARTICLE}</p></div>"
        "<p>Footer one</p><p>Footer two</p><p>Footer three</p>")
P1 = np.array([0.1, 0.3, 0.1, 0.9, 0.9, 0.1, 0.1, 0.1])  # the two article paragraphs are the evidence


def test_region_is_the_container_of_the_article_paragraphs():
    blocks = blocks_of(PAGE)
    assert [b.kind for b in blocks] == ["h", "h", "li", "p", "p", "p", "p", "p"]
    _, inside = F.region(blocks, P1)
    assert inside.tolist() == [False, False, False, True, True, False, False, False]


def test_region_distance_counts_blocks_to_the_nearest_region_block():
    ctx = F.context(blocks_of(PAGE), P1)
    dist = ctx[:, F.CONTEXT.index("region_dist")]
    assert dist.tolist() == pytest.approx([math.log(4) / 3, math.log(3) / 3, math.log(2) / 3, 0, 0,
                                           math.log(2) / 3, math.log(3) / 3, math.log(4) / 3])


def test_headline_is_the_last_heading_above_the_region():
    ctx = F.context(blocks_of(PAGE), P1)
    assert ctx[:, F.CONTEXT.index("headline")].tolist() == [0, 1, 0, 0, 0, 0, 0, 0]
    # Beyond its reach (30 blocks) a heading is not the region's headline.
    far = blocks_of("<h1>Far heading</h1>" + "<p>Menu item</p>" * 30 + f"<div><p>{ARTICLE}</p><p>{ARTICLE}</p></div>")
    p1 = np.array([0.1] * 31 + [0.9, 0.9])
    assert F.context(far, p1)[:, F.CONTEXT.index("headline")].sum() == 0


def select(blocks, p, threshold=0.75):
    _, words = F.local(blocks)
    return M.select(blocks, np.array(p), words, threshold, min_words=1)


def test_a_heading_over_half_the_threshold_is_kept_above_kept_text():
    """Threshold 0.75: the heading at 0.5 (over 0.375) is kept because the paragraph two blocks on is kept
    (a byline between); the one at 0.3 is not; a heading followed by another heading is not."""
    blocks = blocks_of(f"<h2>Kept heading</h2><p>By someone</p><p>{ARTICLE}</p>"
                       f"<h2>Too unsure</h2><p>{ARTICLE}</p>"
                       f"<h2>Above a heading</h2><h3>Sub heading</h3><p>{ARTICLE}</p>")
    assert [b.kind for b in blocks] == ["h", "p", "p", "h", "p", "h", "h", "p"]
    keep = select(blocks, [0.5, 0.2, 0.9, 0.3, 0.9, 0.6, 0.1, 0.9])
    assert keep == [True, False, True, False, True, False, False, True]


def test_a_heading_is_not_kept_when_kept_text_is_more_than_three_blocks_on():
    blocks = blocks_of(f"<h2>Heading</h2><p>One</p><p>Two</p><p>Three</p><p>{ARTICLE}</p>")
    assert select(blocks, [0.6, 0.1, 0.1, 0.1, 0.9]) == [False, False, False, False, True]
