"""What every extractor shares: the guards against hostile pages and their reasons.

Each guard is a budget on work that the page's own text decides, never a clock: characters (`max_html_chars`),
tags (`max_tags`, counted as its '<' characters) and nesting depth (`max_depth`). So a page is extracted or dropped
the same on a busy machine as on an idle one, and a run reproduces anywhere (a wall-clock limit per page, as
datatrove and earlier versions here had, dropped more pages the more loaded the machine was).
"""

from __future__ import annotations

import re

from curate.core.document import Document
from curate.core.step import Reject, Result, Step
from curate.core.validate import check, config_error

try:
    import curate.extract._walk as _walk
except ImportError as e:  # not built: the library extractors still run, with the slower depth scan below
    if e.name != "curate.extract._walk":
        raise
    _walk = None


# Elements that never nest (void) or that the HTML parser closes implicitly: they don't add depth.
FLAT = ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
        "p", "li", "td", "th", "tr", "dt", "dd", "option")


def nesting_depth(html: str, stop: int) -> int:
    """Estimate the element nesting depth of `html` from its tags alone (before any parser sees it), stopping
    early once it exceeds `stop`: start tags add one, end tags remove one, FLAT and self-closed tags nothing.
    One pass in C (`_depth.c`): on a large page the regex that does the same costs more than the extraction, so
    the regex runs only where the C extension is not built (Trafilatura and Resiliparse run without it)."""
    if _walk is not None:
        return _walk.nesting_depth(html, stop, FLAT)
    return regex_depth(html, stop)


def regex_depth(html: str, stop: int) -> int:
    """`nesting_depth` by a regex over the tags: the fallback without the extension, and the reference the C
    scan is tested against (tests/test_extract_walk.py)."""
    depth = deepest = 0
    # up to the last '>': a tag ends with one, and from a '<' with none after it the lazy [^>]*? reads to the end
    # of the page before failing, which made a tail of '<' without '>' quadratic
    for m in _TAG.finditer(html, 0, html.rfind(">") + 1):
        if m.group(2).lower() in FLAT or m.group(3):
            continue
        depth = max(depth - 1, 0) if m.group(1) else depth + 1
        if depth > deepest:
            deepest = depth
            if deepest > stop:
                break
    return deepest


_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>")  # a start or end tag: (end?, name, self-closed?)


class Extractor(Step):
    """An HTML-to-text step: subclasses implement `extract`; the guards here run first, in this order:

    * `max_html_chars` characters of HTML at most, else `too_large`;
    * `max_depth` nested elements at most, else `too_deep`: Lexbor's and Resiliparse's passes are quadratic in
      nesting depth (20,000 nested divs: ~25 s in Resiliparse). 512 is the depth at which browsers' HTML parsers
      stop nesting, so no real page goes deeper;
    * `max_tags` tags at most, counted as the page's '<' characters (every tag, comment and stray '<': an upper
      bound on its elements, one C call), else `too_large`. The extractors' work grows with the elements parsed
      and walked (trafilatura's by about 20 us a tag on one core, extract.Main's by under 1 us), so this bounds
      the time a page can take without measuring any.

    `timeout` (seconds of wall clock a page) is gone: accepted as 0 only, which was "no limit"."""

    name = "extract"
    scan_depth_above = 0  # tags: pages with more get the nesting-depth pre-scan (a subclass may raise it)

    def __init__(self, max_html_chars: int = 2_000_000, max_tags: int = 100_000, min_chars: int = 1,
                 max_depth: int = 512, timeout: float = 0):
        if timeout != 0:
            raise config_error(self, f"timeout (wall-clock seconds a page) was replaced by budgets on work that give "
                                     f"the same output on a busy machine as on an idle one: max_html_chars and "
                                     f"max_tags (too_large), max_depth (too_deep); got timeout={timeout!r}")
        self.max_html_chars = check(self, "max_html_chars", max_html_chars, int, lo=1)
        self.max_tags = check(self, "max_tags", max_tags, int, lo=1)
        self.min_chars = check(self, "min_chars", min_chars, int, lo=0)
        self.max_depth = check(self, "max_depth", max_depth, int, lo=1)

    def extract(self, doc: Document) -> str | None:
        raise NotImplementedError

    def apply(self, doc: Document) -> Result:
        html = doc.html
        if html is None:  # already text (WET, JSONL): nothing to extract
            return doc
        if len(html) > self.max_html_chars:
            return Reject("too_large")
        tags = html.count("<")
        # Depth > max_depth needs more than max_depth tags, so the scan only runs on tag-heavy pages (and a
        # tag takes 3 characters at least, so short pages are not even counted).
        least = max(self.max_depth, self.scan_depth_above)
        if len(html) > 3 * least and tags > least and nesting_depth(html, self.max_depth) > self.max_depth:
            return Reject("too_deep")
        if tags > self.max_tags:
            return Reject("too_large")
        try:
            text = self.extract(doc)
        except RecursionError:  # an extractor's own depth check raises one (or a subclass)
            return Reject("too_deep")
        doc.html = None
        if not text or len(text.strip()) < self.min_chars:
            # what a reader of the drop needs to see why: how much page there was (its HTTP status and type are
            # in the reader's metadata); the measured value is the text left, against min_chars
            doc.metadata["html_chars"] = len(html)
            return Reject("empty", len(text.strip()) if text else 0, self.min_chars)
        doc.text = text.strip()
        return doc
