"""An HTML page as a flat list of text blocks, the unit that `extract.Main` keeps or drops.

One walk over a Lexbor (selectolax) tree: every block-level element starts a new block, so a block is
the inline text of one paragraph, heading, list item, table cell or preformatted section. Each block
carries what the classifier needs and the tree no longer gives cheaply once flattened: how much of
it is link text, which block tag holds it, the class/id and tag cues of its ancestors, and the path
of container elements above it (for finding the main-content region). The walk is iterative, so a
deep tree costs time, never a RecursionError, and it reads each node once (the C parser does the rest).
"""

from __future__ import annotations

import re

# Removed with their content before the walk (in C): never main text.
DROP = ["script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed", "canvas",
        "select", "textarea", "button", "head", "video", "audio", "map"]
# Elements that end the current block and start a new one.
BLOCK = frozenset(
    ["address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details", "dialog", "dir",
     "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "frame", "frameset", "h1", "h2",
     "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "legend", "li", "main", "menu", "nav", "noframes",
     "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"]
)
HEADINGS = frozenset(["h1", "h2", "h3", "h4", "h5", "h6"])
# Block tags that say what their text is (the others are generic containers).
KINDS = {"p": "p", "li": "li", "dd": "li", "dt": "li", "td": "td", "th": "td", "pre": "pre", "blockquote": "p",
         "figcaption": "cap", "caption": "cap", "address": "p", **{h: "h" for h in HEADINGS}}
# Ancestor tags that mark boilerplate by their meaning in HTML5.
NEG_TAGS = frozenset(["nav", "aside", "footer", "header", "form", "menu"])
POS_TAGS = frozenset(["article", "main"])

# Class/id words, after Mozilla Readability's lists (the conventions of CMS templates).
_NEG = re.compile(
    r"comment|disqus|respond|reply|footer|footnote|sidebar|side-?bar|widget|nav|menu|breadcrumb|pagination|pager"
    r"|share|sharing|social|sponsor|advert|banner|promo|related|recommend|popular|trending|outbrain|taboola"
    r"|newsletter|subscribe|signup|login|cookie|gdpr|masthead|toolbar|tags|tagcloud|byline|author-?info|meta"
    r"|copyright|legal|rss|skip|hidden|modal|popup|shopping|contact|extra|supplemental|combx|community|remark"
    r"|shoutbox|skyscraper|^ad$|^ads$|-ad-|^ad-|-ads$|adsense|dfp|caption|credit|print|email|header|tool",
    re.I,
)
_POS = re.compile(r"article|content|entry|hentry|post|story|text|body|main|blog|page|prose|abstract|lede|lead", re.I)


class Block:
    """One block of text and the features of its place in the page."""

    __slots__ = ("text", "chars", "link_chars", "kind", "neg", "pos", "path", "index")

    def __init__(self, text: str, chars: int, link_chars: int, kind: str, neg: int, pos: int, path: tuple):
        self.text, self.chars, self.link_chars, self.kind = text, chars, link_chars, kind
        self.neg, self.pos, self.path, self.index = neg, pos, path, 0

    def __repr__(self) -> str:
        return f"Block({self.kind} chars={self.chars} link={self.link_chars} neg={self.neg} {self.text[:40]!r})"


_cue_cache: dict[str, int] = {}


def cue(attrs: dict) -> int:
    """-1 for a boilerplate class/id, +1 for a content one, 0 for neither (memoised: templates repeat them)."""
    key = f"{attrs.get('class') or ''} {attrs.get('id') or ''}"
    found = _cue_cache.get(key)
    if found is None:
        if len(_cue_cache) > 50_000:  # bounded: a crawl has unlimited distinct class strings
            _cue_cache.clear()
        words = key.split()
        found = -1 if any(_NEG.search(w) for w in words) else 1 if _POS.search(key) else 0
        _cue_cache[key] = found
    return found


class _Walk:
    """State of one walk: the text being collected and the blocks made so far."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.buf: list[str] = []
        self.link_chars = 0

    def flush(self, kind: str, neg: int, pos: int, path: tuple, pre: bool) -> None:
        if not self.buf:
            return
        raw = "".join(self.buf)
        self.buf = []
        link, self.link_chars = self.link_chars, 0
        if pre:
            lines = [ln.rstrip() for ln in raw.split("\n")]
            text = "\n".join(ln for ln in lines if ln.strip())
        else:
            text = "\n".join(" ".join(ln.split()) for ln in raw.split("\n") if not ln.isspace() and ln)
            text = "\n".join(ln for ln in text.split("\n") if ln)
        if text:
            self.blocks.append(Block(text, len(text), min(link, len(text)), kind, neg, pos, path))


def walk(body) -> list[Block]:
    """The blocks of `body` (a selectolax LexborNode) in document order."""
    w = _Walk()
    # Frame: children iterator, block kind, negative and positive cue counts, container path, in link, in pre,
    # and whether the element is a block (its end ends a block).
    stack = [(body.iter(include_text=True), "div", 0, 0, (0,), False, False, True)]
    n_elem = 0
    while stack:
        it, kind, neg, pos, path, link, pre, block = stack[-1]
        ch = next(it, None)
        if ch is None:
            stack.pop()
            if block:
                w.flush(kind, neg, pos, path, pre)
            continue
        tag = ch.tag
        if tag == "-text":
            t = ch.text_content
            if t:
                if not pre:
                    t = t.replace("\n", " ")
                w.buf.append(t)
                if link:
                    w.link_chars += len(t.strip())
        elif tag == "br":
            w.buf.append("\n")
        elif not tag or tag[0] == "-":  # comments, doctype, nodes Lexbor leaves untyped
            continue
        elif tag in BLOCK:
            w.flush(kind, neg, pos, path, pre)
            n_elem += 1
            attrs = ch.attributes
            c = cue(attrs) if attrs else 0
            sub_neg = neg + (c < 0) + (tag in NEG_TAGS)
            sub_pos = pos + (c > 0) + (tag in POS_TAGS)
            stack.append((ch.iter(include_text=True), KINDS.get(tag, "div"), sub_neg, sub_pos, (*path, n_elem),
                          link, pre or tag == "pre", True))
        else:
            stack.append((ch.iter(include_text=True), kind, neg, pos, path, link or tag == "a", pre, False))
    for i, b in enumerate(w.blocks):
        b.index = i
    return w.blocks
