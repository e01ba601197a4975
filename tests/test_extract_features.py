"""extract.Main's block features, logistic models and selection rules.

The features and models are C (`_score.c`); they are checked against the numpy implementation they replaced
(tests/_features_ref.py) on every block of every gold page, and on tiny hand-made pages against values
computed by hand. The pages are walked by the real walk (curate/extract/blocks.py), so a block here is what
Main sees; the stage-1 scores fed to `features.context` are set by hand, so the region is known in advance.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import Counter
from pathlib import Path

import _features_ref as R
import curate.extract._walk as _walk
import numpy as np
import pytest

from curate.extract import features as F
from curate.extract import main as M
from curate.io.readers import decode_html

SETS = ("dragnet", "readability", "CleanPortalEval", "cleaneval-dev")
TOL = 1e-12  # libm's log1p and exp differ from numpy's AVX-512 ones by an ulp; products sum in another order


def blocks_of(body: str):
    blocks, _ = M.parse(f"<html><body>{body}</body></html>")
    return blocks


ARTICLE = "An article paragraph of exactly sixty characters, you see..."
assert len(ARTICLE) == 60


COMMENTED = (f"<article><p>{ARTICLE}</p></article>"
             "<div class='comments'><p>Twenty chars here ok</p><p>And twenty more, yes</p></div>")


def test_comment_blocks_are_dropped_unless_kept_and_then_read_as_text():
    """Article, then a comment section (class "comments"): without keep_comments the comment blocks' stage-1
    scores are read as 0 by the context and their stage-2 scores are 0; with it their comment cue leaves `neg`
    (the cue is counted there as boilerplate too), so they are judged as the text they are."""
    blocks = blocks_of(COMMENTED)
    assert [b.com for b in blocks] == [0, 1, 1] and F.comments(blocks).tolist() == [False, True, True]
    neg = F.LOCAL.index("neg")
    assert F.local(blocks)[0][:, neg].tolist() == [0, 1, 1] and F.local(blocks, True)[0][:, neg].tolist() == [0, 0, 0]
    p1 = np.array([0.9, 0.9, 0.9])
    prev = F.CONTEXT.index("p1_prev")
    assert F.context(blocks, p1)[:, prev].tolist() == [0.0, 0.9, 0.0]
    assert F.context(blocks, p1, True)[:, prev].tolist() == [0.0, 0.9, 0.9]
    p, _ = F.scores(blocks, M.W1, M.W2)
    kept, _ = F.scores(blocks, M.W1, M.W2, True)
    assert p[0] > 0 and p[1:].tolist() == [0.0, 0.0] and (kept > 0.5).all()


def test_a_page_wholly_inside_a_comment_named_element_loses_nothing():
    """With no prose block, the least-cued block sets the base: a body wrapped in `<div id="comments-wrap">` is not a
    comment section."""
    blocks = blocks_of(f"<div id='comments-wrap'>{COMMENTED}</div>")
    assert [b.com for b in blocks] == [1, 2, 2] and F.comments(blocks).tolist() == [False, True, True]


PROSE = ("The committee met on Tuesday to discuss the budget for next year, and after a long debate it agreed to "
         "raise the library's funding by a tenth from April.")
assert len(PROSE) >= F.PROSE_CHARS


def test_an_article_named_after_its_comments_is_not_a_comment_section():
    """Kinja's article element is `class="post hentry commented"` (readability's lifehacker pages): the first prose
    block's cues are the base, so the article stays and only the replies beyond it are comments."""
    page = (f"<div class='menu'><p>Home</p></div><article class='post hentry commented'><h1>Budget</h1>"
            f"<p>{PROSE}</p><p>{PROSE}</p><section class='js_replies'><p>{PROSE}</p></section></article>")
    blocks = blocks_of(page)
    assert [b.com for b in blocks] == [0, 1, 1, 1, 2]
    assert F.comments(blocks).tolist() == [False, False, False, False, True]
    assert R.comment_blocks(blocks).tolist() == F.comments(blocks).tolist()
    p, _ = F.scores(blocks, M.W1, M.W2)
    assert p[4] == 0 and (p[2:4] > 0.5).all()


def test_main_keeps_comments_only_when_asked():
    """A post, then a long comment thread: dropped by default, kept with keep_comments=True."""
    comments = "".join(f"<li class='comment'><p>Reader {i} writes: I tried this recipe last weekend and it was "
                       f"lovely, though I used less sugar than the recipe says and baked it ten minutes longer.</p></li>"
                       for i in range(8))
    html = (f"<html><body><article><h1>A short post</h1><p>{ARTICLE} {ARTICLE}</p><p>{ARTICLE}</p></article>"
            f"<section id='comments'><ol class='comment-list'>{comments}</ol></section></body></html>")
    assert "Reader" not in M.extract_text(html) and ARTICLE in M.extract_text(html)
    kept = M.extract_text(html, keep_comments=True)
    assert ARTICLE in kept and sum(f"Reader {i} writes" in kept for i in range(8)) >= 6


def test_with_keep_comments_no_comment_cue_is_boilerplate_even_when_the_first_prose_is_a_comment():
    """A video page (title, a duration, no prose of its own) and its thread, each comment under two comment cues:
    the first prose block is a comment, so `comments` sees no section beyond it (the base is 2). With
    keep_comments every comment cue still leaves `neg` (the thread is what the user asked for; Dragnet's R434
    lost its 92 replies when only the cues beyond the base left it), and the thread is kept. The reference
    (tests/_features_ref.py) agrees."""
    thread = "".join(f"<div class='comment'><div class='comment-body'><p>{PROSE} Reply {i}.</p></div></div>"
                     for i in range(6))
    html = f"<h1>Depth compositing</h1><div>10:09</div><div id='comments'>{thread}</div>"
    blocks = blocks_of(html)
    assert [b.com for b in blocks] == [0, 0, 3, 3, 3, 3, 3, 3] and not F.comments(blocks).any()
    neg = F.LOCAL.index("neg")
    assert F.local(blocks, True)[0][:, neg].tolist() == [0] * 8  # all three comment cues left the count
    assert F.local(blocks)[0][:, neg].tolist() == [0, 0] + [3] * 6  # without the option they are boilerplate
    ref, _ = R.local(blocks, keep_comments=True)
    assert np.allclose(F.local(blocks, True)[0], ref)
    kept = M.extract_text(html, keep_comments=True)
    assert sum(f"Reply {i}." in kept for i in range(6)) == 6


PAGE = ("<h1>An old heading</h1>"
        "<div><h2>The headline</h2></div>"
        "<ul><li>Share this</li></ul>"
        f"<div><p>{ARTICLE}</p><p>{ARTICLE}</p></div>"
        "<p>Footer one</p><p>Footer two</p><p>Footer three</p>")
P1 = np.array([0.1, 0.3, 0.1, 0.9, 0.9, 0.1, 0.1, 0.1])  # the two article paragraphs are the evidence


def test_region_is_the_container_of_the_article_paragraphs():
    blocks = blocks_of(PAGE)
    assert [b.kind for b in blocks] == ["h", "h", "li", "p", "p", "p", "p", "p"]
    inside = F.context(blocks, P1)[:, F.CONTEXT.index("region")]
    assert inside.tolist() == [0, 0, 0, 1, 1, 0, 0, 0]
    assert R.region(blocks, P1)[1].tolist() == inside.astype(bool).tolist()


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


def c_local(blocks, stoplist, keep_comments=False):
    """features.local with another stop-word vote (`stoplist`)."""
    x, words = _walk.local(blocks, stoplist, keep_comments)
    return np.frombuffer(x).reshape(len(blocks), len(F.LOCAL)), np.frombuffer(words, dtype=np.int64)


@pytest.fixture(scope="module")
def gold_blocks(shared: Path) -> list[tuple[str, list]]:
    """(set/id, extract.Main's blocks) of every gold page, parsed once for the module."""
    out = []
    for name in SETS:
        root = shared / "extraction" / name
        for line in (root / "gold.jsonl").read_text(encoding="utf-8").splitlines():
            page_id = json.loads(line)["id"]
            with gzip.open(root / "html" / f"{page_id}.html.gz") as f:
                out.append((f"{name}/{page_id}", M.parse(decode_html(f.read(), None)[0])[0]))
    return out


def test_features_and_scores_match_the_numpy_reference_on_every_gold_page(gold_blocks):
    """Both stages' features, both models' probabilities and the words of every block of every gold page, C
    against tests/_features_ref.py; the stop-word list each page votes for is the same too."""
    pages, differ, votes = 0, [], []

    def vote(top):  # the stop-word list of the page's top words, which are kept
        votes.append(top)
        return F.stoplist(top)

    for page, blocks in gold_blocks:
        if not blocks:
            continue
        pages += 1
        votes.clear()
        keep = pages % 4 == 0  # every fourth page with its comment sections kept
        x, words = c_local(blocks, vote, keep)
        rx, rwords = R.local(blocks, keep_comments=keep)
        rp1 = R.probability(rx, M.W1)
        ctx, rctx = F.context(blocks, rp1, keep), R.context(blocks, rp1, keep)
        p, cwords = F.scores(blocks, M.W1, M.W2, keep)
        rp = R.probability(np.hstack([rx, rctx]), M.W2)
        if not keep:
            rp[R.comment_blocks(blocks)] = 0.0
        rtop = R.top_words([R._WORD.findall(R.simple_lower(b.text)) for b in blocks])
        errors = {"local": np.abs(x - rx).max(), "p1": np.abs(M.probability(rx, M.W1) - rp1).max(),
                  "context": np.abs(ctx - rctx).max(), "p2": np.abs(p - rp).max()}
        same_words = words.tolist() == rwords.tolist() == cwords.tolist()
        if max(errors.values()) > TOL or votes != [rtop] or not same_words:
            differ.append((page, errors, votes == [rtop]))
    assert pages > 1600
    assert not differ, differ[:3]


ODD_TEXTS = ["x²1 ١٢ 12.5 a1 1a _1 Émile Ωmega  \u2003Zed ab,c.d;e:f!g?h。、，", "", " ", "1", "İstanbul ÀÖØÞ× ×Z",
             "Mr. Smith: 3 apples, 4 pears; ok?", "\tTab\nNew\u00a0Nbsp Я Ж б", "9_9 __ 0x1F 1e5 ½ ⅷ", "ΟΔΟΣ İS ß ſ"]


def odd_blocks(texts=ODD_TEXTS):
    kinds = ["p", "h", "div", "td", "li", "cap", "pre", "x", "p"]
    return [_walk.Block((t, len(t), min(3, len(t)), k, i % 4, i % 3, i % 2, (0, i), i))
            for i, (t, k) in enumerate(zip(texts, kinds, strict=True))]


def test_counts_on_odd_texts_match_the_regexes():
    """Digits of other scripts, superscripts, fractions, "İ" and "ß", non-breaking and other spaces: the C
    counts agree with the reference's regexes; by hand on "Mr. Smith: 3 apples, 4 pears; ok?"."""
    stop = frozenset(["the", "of", "a", "1", "istanbul", "οδοσ"])
    blocks = odd_blocks()
    x, words = c_local(blocks, lambda top: stop)
    with np.errstate(invalid="ignore"):  # the empty text: link / chars is 0 / 0 on both sides
        rx, rwords = R.local(blocks, lambda top: stop)
    assert np.allclose(x, rx, rtol=0, atol=TOL, equal_nan=True) and words.tolist() == rwords.tolist()
    stats = R.block_stats(blocks, stop)
    assert stats[5, 8:12].tolist() == [5, 2, 2, 6]  # . : , ; ? / M S / 3 4 / six spaces
    assert words[5] == 7 and stats[:, 7].sum() == 3  # "1", "istanbul" (from "İstanbul"), "οδοσ"


def test_top_words_are_counter_most_common_on_lower_cased_words():
    votes = []
    _walk.local(odd_blocks(["B a b c A b", "z y", "a", "İS ΟΔΟΣ ß", "", "", "", "", ""]), lambda t: votes.append(t))
    assert votes == [["b", "a", "c", "z", "y", "is", "οδοσ", "ß"]]  # b x3, a x3 (b seen first); one code point for one
    texts = [" ".join(f"w{i % 7}" for i in range(j, j + 400)) for j in range(9)]  # 3,600 words, over the 1,500 read
    votes.clear()
    _walk.local(odd_blocks(texts), lambda t: votes.append(t))
    tokens = [re.findall(r"\w+", t) for t in texts]
    assert votes == [R.top_words(tokens)] == [[w for w, _ in Counter(sum(tokens, [])[:1500]).most_common(40)]]


def test_configure_refuses_columns_c_does_not_compute():
    args = (F.KINDS, F._END, F.NEUTRAL_STOP, *F._TOP)
    for local, context in (((*F.LOCAL, "extra"), F.CONTEXT), (F.LOCAL[:-1], F.CONTEXT),
                           (F.LOCAL, (*F.CONTEXT[:-1], "p1_prev"))):
        with pytest.raises(ValueError):
            _walk.configure_scores(local, context, *args)
    _walk.configure_scores(F.LOCAL, F.CONTEXT, *args)  # back as features.py set it
    reordered = (F.LOCAL[1], F.LOCAL[0], *F.LOCAL[2:])
    _walk.configure_scores(reordered, F.CONTEXT, *args)
    try:
        x, _ = c_local(odd_blocks(), F.stoplist)
        assert (x[:, 1] == 1).all()  # bias, now the second column
    finally:
        _walk.configure_scores(F.LOCAL, F.CONTEXT, *args)


def test_left_out_models_name_the_columns_features_py_computes():
    """benchmarks/extract_left_out.json (written by extract_fit.py with weights.py) must be refitted whenever a
    column is added or removed, or the benchmark's left-out rows would score another model."""
    left_out = json.loads((Path(__file__).parent.parent / "benchmarks" / "extract_left_out.json").read_text())
    assert sorted(left_out) == sorted(SETS)
    for model in left_out.values():
        assert tuple(model["stage1"]) == F.LOCAL and tuple(model["stage2"]) == F.LOCAL + F.CONTEXT
        assert 0 < model["threshold"] < 1
