"""The Document page's block view, in process: `extract.explain` re-runs extract.Main's decisions on a page, and the
text its kept blocks render to must be what the step itself returns (`Main.apply`, the independent reference: what
a run stores) on real pages of the shared WARC files and of the four extraction gold sets, under several settings;
each block's reason must agree with `select`'s own flag; a planted page's boilerplate is marked dropped. The page
itself (escaping, the sandbox, a hostile page in Chromium) is checked in tests/test_view.py."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pytest

from curate import readers
from curate.core.document import Document
from curate.core.stats import StepStats
from curate.core.step import Reject
from curate.extract.explain import explain, recorded_extractor
from curate.extract.main import Main

SETTINGS = [Main(), Main(threshold=0.7, title=True), Main(keep_comments=True, min_words=300)]


@pytest.fixture(scope="module")
def pages(shared: Path) -> list[str]:
    """HTML of real pages: the first 12 of each shared WARC file, the first 12 of each gold set."""
    out = []
    for f in sorted((shared / "warc").glob("*/*.warc.gz")):
        docs = (d.html for d in readers.Warc().read(str(f), StepStats("read")) if d.html)
        out += list(itertools.islice(docs, 12))
    for folder in sorted((shared / "extraction").iterdir()):
        for line in (folder / "gold.jsonl").read_text().splitlines()[:12]:
            raw = gzip.decompress((folder / "html" / f"{json.loads(line)['id']}.html.gz").read_bytes())
            out.append(raw.decode("utf-8", "replace"))
    return out


@pytest.mark.parametrize("step", SETTINGS, ids=["default", "strict-title", "comments-fallback"])
def test_kept_blocks_render_to_what_the_step_returns_on_real_pages(pages, step):
    stages = set()
    assert len(pages) > 100
    for html in pages:
        ref = step.apply(Document(id="x", text="", source="s", html=html))
        e = explain(html, step)
        if isinstance(ref, Reject):
            assert e.rejected == ref.rule
        else:
            assert e.rejected is None and e.text == ref.text and e.reproduces(ref.text)[0] == "same"
        assert [b.index for b in e.blocks] == list(range(len(e.blocks)))
        assert not [b for b in e.blocks if "no rule here says why" in b.why]  # every reason agrees with select
        stages.add(e.stage.split(":")[0])
    if step.min_words == 300:  # this setting sends pages to the fallbacks: their reasons were checked too
        assert {"fallback", "last fallback"} <= stages


PLANTED = """<html><head><title>Planted</title></head><body>
<nav class="menu"><a href="/">Home</a> <a href="/news">News</a> <a href="/about">About us</a> <a href="/c">Contact</a></nav>
<article><h1>The river rose overnight</h1>
<p>The river rose by two metres overnight after three days of heavy rain, and the town closed the old bridge
before dawn. Residents of the lower streets were asked to move their cars to higher ground by noon.</p>
<p>The mayor said the water should fall again by Friday, when the rain is expected to stop, and that the bridge
will stay closed until engineers have inspected its supports.</p></article>
<div class="comments"><p>Great article, thanks for writing it! I live near the bridge and saw it all.</p></div>
<footer class="footer">Copyright 2024 The Town Paper. All rights reserved. Privacy policy. Terms of use.</footer>
</body></html>"""


def test_a_planted_pages_boilerplate_is_marked_dropped_and_its_article_kept():
    e = explain(PLANTED, Main())
    by_text = {b.text: b for b in e.blocks}
    nav, footer = by_text["Home News About us Contact"], next(b for b in e.blocks if b.text.startswith("Copyright"))
    assert not nav.kept and not footer.kept and "threshold" in nav.why
    comment = next(b for b in e.blocks if b.text.startswith("Great article"))
    assert not comment.kept and comment.probability == 0 and "comment section" in comment.why
    assert all(b.kept for b in e.blocks if b.text.startswith(("The river", "The mayor")))
    assert by_text["The river rose overnight"].kept and by_text["The river rose overnight"].kind == "h"
    text = Main().extract(Document(id="x", text="", source="s", html=PLANTED))
    assert e.text == text and e.reproduces(text)[0] == "same"
    assert e.reproduces("\n".join(text.splitlines()[1:]))[0] == "lines"  # a later step removed the heading
    assert e.reproduces(text + "\nmore")[0] == "differs"


def test_the_recorded_extractor_is_read_never_evaluated():
    step, note = recorded_extractor(["HttpStatus()", repr(Main(threshold=0.7, title=True)), "Exact(key='text')"])
    assert repr(step) == repr(Main(threshold=0.7, title=True)) and "as the run recorded it" in note
    for steps, says in ((["Trafilatura(max_html_chars=2000000, favor_precision=True)"], "with Trafilatura"),
                        (["Resiliparse()"], "with Resiliparse"), (["Language(model='lid')"], "no extractor step"),
                        (["Main(threshold=__import__('os').system('touch /tmp/pwned'))"], "could not be read"),
                        (["Main(threshold=0.5, not_a_setting=1)"], "could not be read"),
                        (["Main(threshold=2.0)"], "could not be read")):
        step, note = recorded_extractor(steps)
        assert step is None and note.startswith("not explainable") and says in note, note


def test_guards_drop_a_huge_page_before_any_parse():
    e = explain("<p>word </p>" * 200_000, Main())
    assert e.rejected == "too_large" and e.blocks == []
    e = explain("<div>" * 600 + "deep text here" + "</div>" * 600, Main())
    assert e.rejected == "too_deep"


class _Run:
    """What block_view asks of a run: the steps its manifest records."""

    def __init__(self, steps):
        self.steps = steps

    def recorded_steps(self):
        return self.steps


def test_the_page_lists_a_bounded_number_of_blocks_and_says_how_many_it_left_out():
    from curate.view.blocks import MAX_BLOCKS, block_view

    page = "".join(f"<p>Paragraph {i} of a long page, with enough words to read as text.</p>" for i in range(1000))
    bv = block_view(_Run([repr(Main())]), {"html": page, "text": Main().extract(Document("x", "", "s", html=page))})
    assert (bv.total, len(bv.blocks), bv.left_out) == (1000, MAX_BLOCKS, 1000 - MAX_BLOCKS)
    assert bv.verdict[0] == "same" and [b.index for b in bv.blocks] == list(range(MAX_BLOCKS))
    assert block_view(_Run(None), {"html": page}).note.startswith("not explainable: the run has no readable manifest")
    assert block_view(_Run(["Trafilatura()"]), {"html": page}).blocks == []
