"""What every extractor shares: the guards against hostile pages (size, nesting depth, time) and their reasons."""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from curate.core.document import Document
from curate.core.step import Reject, Result, Step
from curate.core.validate import check

try:
    import curate.extract._walk as _walk
except ImportError as e:  # not built: the library extractors still run, with the slower depth scan below
    if e.name != "curate.extract._walk":
        raise
    _walk = None


class ExtractTimeout(Exception):
    pass


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Abort the block after `seconds` with SIGALRM; a no-op off the main thread, where signals can't reach."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise ExtractTimeout

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


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
    for m in _TAG.finditer(html):
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
    """An HTML-to-text step: subclasses implement `extract`; the guards here run first. `max_depth` exists because the SIGALRM time limit cannot interrupt C code, and
    Resiliparse's main-content pass is quadratic in nesting depth (20,000 nested divs: ~25 s).
    512 is the depth at which browsers' HTML parsers stop nesting, so no real page goes deeper."""

    name = "extract"
    scan_depth_above = 0  # tags: pages with more get the nesting-depth pre-scan (a subclass may raise it)

    def __init__(self, timeout: float = 5.0, max_html_chars: int = 2_000_000, min_chars: int = 1,
                 max_depth: int = 512):
        self.timeout = check(self, "timeout", timeout, float, lo=0)  # 0: no time limit
        self.max_html_chars = check(self, "max_html_chars", max_html_chars, int, lo=1)
        self.min_chars = check(self, "min_chars", min_chars, int, lo=0)
        self.max_depth = check(self, "max_depth", max_depth, int, lo=1)

    def extract(self, doc: Document) -> str | None:
        raise NotImplementedError

    def apply(self, doc: Document) -> Result:
        if doc.html is None:  # already text (WET, JSONL): nothing to extract
            return doc
        if len(doc.html) > self.max_html_chars:
            return Reject("too_large")
        # Depth > max_depth needs more than max_depth tags, so the scan only runs on tag-heavy pages (and a
        # tag takes 3 characters at least, so short pages are not even counted).
        least = max(self.max_depth, self.scan_depth_above)
        if (len(doc.html) > 3 * least and doc.html.count("<") > least
                and nesting_depth(doc.html, self.max_depth) > self.max_depth):
            return Reject("too_deep")
        try:
            with time_limit(self.timeout):
                text = self.extract(doc)
        except ExtractTimeout:
            return Reject("timeout")
        except RecursionError:  # an extractor's own depth check raises one (or a subclass)
            return Reject("too_deep")
        doc.html = None
        if not text or len(text.strip()) < self.min_chars:
            return Reject("empty")
        doc.text = text.strip()
        return doc
