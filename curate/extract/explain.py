"""Why `extract.Main` kept or dropped each block of a page: its own decisions, re-run on the raw HTML.

No step records which blocks the extractor kept (a run stores the text only), but `extract.Main` is deterministic:
given the page and the settings the run recorded (manifest.json's `pipeline.steps`, `Main(threshold=..., ...)`),
`parse`, `scores`, `select` and `render` of curate/extract/main.py give the same blocks, probabilities and keep
flags again. This module calls only those functions (and the guards' limits of `Extractor`); the reason given for
each block mirrors `select`'s rules, and is checked against `select`'s own flags: where they ever disagree
(main.py changed, this did not), the block says so instead of a reason. `curate view` shows the result beside the
page's sandboxed HTML (docs/view.md). Trafilatura and Resiliparse keep no blocks of their own that could be
shown: a run made with either is "not explainable".
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from curate.extract import features as F
from curate.extract import main as M

LIBRARIES = ("Trafilatura", "Resiliparse")  # extractors whose decisions this cannot re-run


@dataclass(frozen=True)
class Decision:
    """One block of the page, in page order: what `select` decided about it and, where its rules say, why."""

    index: int
    kind: str  # p, h, li, td, pre, cap or div (blocks.KINDS)
    text: str
    probability: float  # stage 2 (0 in a comment section unless keep_comments)
    words: int
    kept: bool
    why: str


@dataclass(frozen=True)
class Explanation:
    """The page's blocks with their decisions, the text they render to (what the extractor returns), the rule
    that decided (`stage`), or, when the guards drop the page before any block is cut, why (`rejected`)."""

    blocks: list[Decision]
    text: str  # as the step stores it: rendered, the title first with title=True, stripped
    stage: str
    rejected: str | None = None  # too_large, too_deep, empty: the extract step's drop reason

    def reproduces(self, stored: str | None) -> tuple[str, str]:
        """Whether this re-extraction gives the text the run stored: ("same" | "lines" | "differs", in words).
        "lines": the stored text is these lines with some left out (a later step, C4 or line dedup, removed
        lines; the run's text is what is left after every step, not the extractor's output)."""
        stored = stored or ""
        if stored == self.text:
            return "same", "re-extracting the raw HTML with the run's settings gives exactly the stored text"
        ours, theirs = self.text.splitlines(), stored.splitlines()
        it = iter(ours)
        if stored and all(line in it for line in theirs):  # a subsequence: `in` on an iterator consumes it
            return "lines", (f"the stored text is {len(theirs):,} of these {len(ours):,} lines: a later step "
                             f"removed {len(ours) - len(theirs):,} (the blocks below are the extractor's own output)")
        return "differs", ("re-extraction does not reproduce the stored text: the run's settings or extractor "
                           "version differ from these, or a later step rewrote the text")


def recorded_extractor(steps: list[str]) -> tuple[M.Main | None, str]:
    """The run's `extract.Main`, rebuilt from the description its manifest records (`Main(threshold=0.5, ...)`,
    literals only: parsed, never evaluated), and a line saying which; (None, why) when the run has no extractor
    this can explain (a library extractor, none at all, settings this version does not take)."""
    for text in steps:
        name = text.split("(", 1)[0]
        if name in LIBRARIES:
            return None, f"not explainable: this run extracted text with {name}, whose block decisions are not exposed"
        if name != "Main":
            continue
        try:
            call = ast.parse(text, mode="eval").body
            if not isinstance(call, ast.Call) or call.args:
                raise ValueError("not keyword arguments")
            kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
            return M.Main(**kw), f"extract.Main as the run recorded it: {text}"
        except (SyntaxError, ValueError, TypeError) as e:  # TypeError: a setting this version does not take
            return None, f"not explainable: the run's extractor settings could not be read ({e}): {text}"
    return None, "not explainable: the run records no extractor step (its input was text already, or another extractor)"


def explain(html: str, step: M.Main) -> Explanation:
    """`step`'s decisions on `html`, block by block. The guards' limits come first, as in `Extractor.apply`
    (a page over `max_html_chars` or `max_tags` is not parsed: the view stays fast on any page)."""
    if len(html) > step.max_html_chars or html.count("<") > step.max_tags:
        return Explanation([], "", "guards", "too_large")
    try:
        blocks, title = M.parse(html, step.max_depth, step.title)
    except RecursionError:  # blocks.TooDeep
        return Explanation([], "", "guards", "too_deep")
    if not blocks:
        text = title if step.title else ""
        return Explanation([], text.strip(), "no blocks", None if len(text.strip()) >= max(step.min_chars, 1) else "empty")
    p, words = M.scores(blocks, step.keep_comments)
    keep = M.select(blocks, p, words, step.threshold, step.min_words, step.keep_comments)
    text = M.render(blocks, keep)
    if step.title and title and not text.startswith(title):
        text = f"{title}\n{text}"
    stage, why = _reasons(blocks, p, words, step)
    decisions = [Decision(i, b.kind, b.text, float(p[i]), int(words[i]), k,
                          why[i][1] if why[i][0] == k else f"{'kept' if k else 'dropped'} (no rule here says why)")
                 for i, (b, k) in enumerate(zip(blocks, keep, strict=True))]
    text = text.strip()
    return Explanation(decisions, text, stage, None if len(text) >= max(step.min_chars, 1) else "empty")


def _reasons(blocks, p: np.ndarray, words: np.ndarray, step: M.Main) -> tuple[str, list[tuple[bool, str]]]:
    """`select`'s rules, told: the stage that decided and, for each block, (kept, why)."""
    t, floor = step.threshold, step.threshold / 2
    comment = np.zeros(len(blocks), dtype=bool) if step.keep_comments else F.comments(blocks)
    keep = (p > t).tolist()
    why = [(k, f"probability {'over' if k else 'at or under'} the threshold {t:g}") for k in keep]
    for row in M._data_rows(blocks):
        whole = sum(p[i] * blocks[i].chars for i in row) / sum(blocks[i].chars for i in row) > t
        for i in row:
            keep[i] = whole
            why[i] = (whole, f"a row of short table cells, {'kept' if whole else 'dropped'} whole (its "
                             f"length-weighted probability is {'over' if whole else 'at or under'} {t:g})")
    before = list(keep)
    M._keep_headings(blocks, p, keep, floor)
    for i in [i for i in range(len(blocks)) if keep[i] and not before[i]]:
        why[i] = (True, f"a heading over {floor:g} kept because a kept block follows it (look-ahead)")
    held = int(words[keep].sum())
    if held >= step.min_words:
        stage = f"the blocks over the threshold {t:g} hold {held:,} words, at least min_words={step.min_words}"
    else:
        half = (p > floor).tolist()
        if int(words[half].sum()) >= step.min_words:
            stage = (f"fallback: the blocks over the threshold held {held:,} words, under min_words="
                     f"{step.min_words}, so every block over half of it ({floor:g}) is kept")
            why = [(k, f"probability {'over' if k else 'at or under'} half the threshold, {floor:g} (fallback)")
                   for k in half]
        else:
            stage = (f"last fallback: under min_words={step.min_words} words even over half the threshold, so "
                     "every block that is not mostly link text is kept")
            why = [(False, "in a comment section (keep_comments=False)") if c else
                   (b.link_chars * 2 < b.chars, "not mostly link text (last fallback)" if b.link_chars * 2 < b.chars
                    else "mostly link text (last fallback)") for b, c in zip(blocks, comment.tolist(), strict=True)]
            return stage, why
    for i in np.flatnonzero(comment & (p == 0)).tolist():
        if not why[i][0]:
            why[i] = (False, "in a comment section (keep_comments=False): probability 0")
    return stage, why
