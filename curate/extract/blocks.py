"""An HTML page as a flat list of text blocks, the unit that `extract.Main` keeps or drops.

One walk over a Lexbor (selectolax) tree: every block-level element starts a new block, so a block is
the inline text of one paragraph, heading, list item, table cell or preformatted section. Each block
carries what the classifier needs and the tree no longer gives cheaply once flattened: how much of
it is link text, which block tag holds it, the class/id and tag cues of its ancestors, and the path
of container elements above it (for finding the main-content region). The walk recurses over elements
only, reads a link's text in one C call, and stops with TooDeep past `max_depth` nested elements.
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
_COMMENTS = re.compile(r"comment|disqus|respond|repl(y|ies)|discussion|talkback|feedback", re.I)
_POS = re.compile(r"article|content|entry|hentry|post|story|text|body|main|blog|page|prose|abstract|lede|lead", re.I)


class Block:
    """One block of text and the features of its place in the page."""

    __slots__ = ("text", "chars", "link_chars", "kind", "neg", "pos", "com", "path", "index")

    def __init__(self, text: str, chars: int, link_chars: int, kind: str, neg: int, pos: int, com: int,
                 path: tuple):
        self.text, self.chars, self.link_chars, self.kind = text, chars, link_chars, kind
        self.neg, self.pos, self.com, self.path, self.index = neg, pos, com, path, 0

    def __repr__(self) -> str:
        return f"Block({self.kind} chars={self.chars} link={self.link_chars} neg={self.neg} {self.text[:40]!r})"


_cue_cache: dict[str, int] = {}


def cue(attrs: dict) -> int:
    """-2 for a comment section's class/id, -1 for other boilerplate, +1 for content, 0 for neither (memoised:
    templates repeat them)."""
    key = f"{attrs.get('class') or ''} {attrs.get('id') or ''}"
    found = _cue_cache.get(key)
    if found is None:
        if len(_cue_cache) > 50_000:  # bounded: a crawl has unlimited distinct class strings
            _cue_cache.clear()
        words = key.split()
        found = (-2 if _COMMENTS.search(key) else -1 if any(_NEG.search(w) for w in words)
                 else 1 if _POS.search(key) else 0)
        _cue_cache[key] = found
    return found


def _clean(raw: str, pre: bool) -> str:
    """Whitespace folded within lines (kept in <pre>), empty lines dropped."""
    if pre:
        return "\n".join(ln.rstrip() for ln in raw.split("\n") if ln.strip())
    if "\n" not in raw:
        return " ".join(raw.split())
    return "\n".join(ln for ln in (" ".join(x.split()) for x in raw.split("\n")) if ln)


_HAS_WORD = re.compile(r"\w")


class TooDeep(RecursionError):
    """The tree nests elements deeper than the walk accepts (the extractors count it as `too_deep`)."""


def walk(body, max_depth: int = 512) -> list[Block]:
    """The blocks of `body` (a selectolax LexborNode) in document order.

    Recursive over elements only (text nodes are handled inline); raises TooDeep past `max_depth`
    nested elements, well inside Python's recursion limit."""
    blocks: list[Block] = []
    buf: list[str] = []
    link = [0]
    counter = [0]

    def flush(kind: str, neg: int, pos: int, com: int, path: tuple, pre: bool) -> None:
        raw = "".join(buf)
        buf.clear()
        n_link, link[0] = link[0], 0
        if not _HAS_WORD.search(raw):
            return
        text = _clean(raw, pre)
        blocks.append(Block(text, len(text), min(n_link, len(text)), kind, neg, pos, com, path))

    def visit(node, kind: str, neg: int, pos: int, com: int, path: tuple, in_link: bool, pre: bool,
              depth: int) -> None:
        if depth > max_depth:
            raise TooDeep
        depth += 1
        for ch in node.iter(include_text=True):
            tag = ch.tag
            if tag == "-text":
                t = ch.text_content
                if not pre:
                    if t.isspace():  # the whitespace between tags: one space, and only after some text
                        if buf:
                            buf.append(" ")
                        continue
                    t = t.replace("\n", " ")
                if in_link:
                    link[0] += len(t.strip())
                buf.append(t)
            elif tag in BLOCK:
                if buf:
                    flush(kind, neg, pos, com, path, pre)
                counter[0] += 1
                attrs = ch.attributes
                c = cue(attrs) if attrs else 0
                sub = (KINDS.get(tag, "div"), neg + (c < 0) + (tag in NEG_TAGS), pos + (c > 0) + (tag in POS_TAGS),
                       com + (c == -2), (*path, counter[0]))
                visit(ch, *sub, in_link, pre or tag == "pre", depth)
                if buf:
                    flush(*sub, pre or tag == "pre")
            elif tag == "a" and not pre:
                # A link's text in one C call: a link is inline, and blocks inside one (teaser cards) are
                # link text whichever block they join.
                t = ch.text(deep=True)
                if t and not t.isspace():
                    link[0] += len(t.strip())
                    buf.append(t.replace("\n", " "))
                elif buf:
                    buf.append(" ")
            elif tag == "br":
                buf.append("\n")
            elif tag and tag[0] != "-":  # not a comment, doctype or a node Lexbor leaves untyped
                visit(ch, kind, neg, pos, com, path, in_link or tag == "a", pre, depth)

    visit(body, "div", 0, 0, 0, (0,), False, False, 0)
    if buf:
        flush("div", 0, 0, 0, (0,), False)
    for i, b in enumerate(blocks):
        b.index = i
    return blocks
