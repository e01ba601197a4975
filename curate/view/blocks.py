"""The Document page's block view: the blocks of a page's raw HTML that `extract.Main` kept and dropped.

No run records the extractor's decisions, so they are re-run on demand (`curate.extract.explain`) on the raw HTML
the run kept (an `html` column), with the extractor settings its manifest.json records; the page then says
whether that re-extraction gives the text the run stored. Bounded for a huge page: the extractor's own guards
(`max_html_chars`, `max_tags`) stop it before any parse, and at most MAX_BLOCKS blocks of MAX_BLOCK_CHARS
characters each are shown, with how many were left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from curate.view.query import Run

MAX_BLOCKS = 400  # blocks listed on the page, in page order
MAX_BLOCK_CHARS = 1_000  # characters of one block's text shown


@dataclass
class BlockView:
    note: str  # the extractor and settings used, or why the page cannot be explained
    stage: str = ""  # the rule of `select` that decided (threshold, a fallback), or the guards
    rejected: str | None = None  # the extract step's drop reason, when it drops the page
    verdict: tuple[str, str] | None = None  # ("same" | "lines" | "differs", in words): against the stored text
    blocks: list = field(default_factory=list)  # explain.Decision, the first MAX_BLOCKS
    total: int = 0
    kept: int = 0

    @property
    def left_out(self) -> int:
        return self.total - len(self.blocks)


def block_view(run: Run, doc: dict) -> BlockView:
    """What extract.Main, as `run` recorded it, decides about each block of `doc["html"]`."""
    steps = run.recorded_steps()
    if steps is None:
        return BlockView("not explainable: the run has no readable manifest.json yet (still being written?), so "
                         "its extractor settings are unknown")
    try:
        from curate.extract.explain import explain, recorded_extractor
    except ImportError as e:  # the C extension is not built here
        return BlockView(f"not explainable here: {e}")
    step, note = recorded_extractor(steps)
    if step is None:
        return BlockView(note)
    e = explain(doc["html"], step)
    stored = doc.get("text")  # a dropped document's is its text when the dropping step saw it
    return BlockView(note, e.stage, e.rejected, e.reproduces(stored) if stored else None, e.blocks[:MAX_BLOCKS],
                     len(e.blocks), sum(b.kept for b in e.blocks))
