"""An HTML page as a flat list of text blocks, the unit that `extract.Main` keeps or drops.

Every block-level element starts a new block, so a block is the inline text of one paragraph,
heading, list item, table cell or preformatted section. Each block carries what the classifier needs
and the tree no longer gives once flattened: how much of it is link text, which block tag holds it,
the class/id and tag cues of its ancestors, and the path of container elements above it (for finding
the main-content region). The rules of the walk:

- a link's whole text is one inline piece (blocks inside a link, such as teaser cards, are link text
  of whichever block they join); outside `<pre>` a newline in text is a space, and whitespace between
  tags is one space, only after some text;
- `<br>` ends a line inside the block; in `<pre>` text is kept as it is, links inside it count as
  link text;
- a block element adds its class/id cue and its tag's meaning (NEG_TAGS, POS_TAGS) to the counts its
  blocks inherit, and its number (in document order) to their container path; the cue of its class
  and id words (`word_cue`) is a comment cue if any word has one, else a boilerplate cue if any has
  one, else a content cue if any has one;
- the walk stops with TooDeep past `max_depth` nested elements (links' insides excepted).

The walk itself is C (`_walk.c`): selectolax exposes Lexbor's tree only as Python objects, about a
microsecond per node, so the C code reads Lexbor's serialisation of the cleaned body instead, which
Lexbor writes in C; this module holds the tables it reads.
"""

from __future__ import annotations

import re

import curate.extract._walk as _walk

# Skipped with their content by the walk: never main text.
DROP = frozenset(["script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed", "canvas",
        "select", "textarea", "button", "head", "video", "audio", "map"])
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

# Class/id words, after Mozilla Readability's lists (the conventions of CMS templates), matched on one
# lower-cased word of a class or id attribute.
_NEG = re.compile(
    r"comment|disqus|respond|reply|footer|footnote|sidebar|side-?bar|widget|nav|menu|breadcrumb|pagination|pager"
    r"|share|sharing|social|sponsor|advert|banner|promo|related|recommend|popular|trending|outbrain|taboola"
    r"|newsletter|subscribe|signup|login|cookie|gdpr|masthead|toolbar|tags|tagcloud|byline|author-?info|meta"
    r"|copyright|legal|rss|skip|hidden|modal|popup|shopping|contact|extra|supplemental|combx|community|remark"
    r"|shoutbox|skyscraper|^ad$|^ads$|-ad-|^ad-|-ads$|adsense|dfp|caption|credit|print|email|header|tool"
)
_COMMENTS = re.compile(r"comment|disqus|respond|repl(y|ies)|discussion|talkback|feedback")
_POS = re.compile(r"article|content|entry|hentry|post|story|text|body|main|blog|page|prose|abstract|lede|lead")


# One block of text and the features of its place in the page: text, chars, link_chars, kind, neg, pos, com,
# path, index (a struct sequence made by the C walk; `help(Block)` describes each field).
Block = _walk.Block


_cue_cache: dict[str, int] = {}


_DIGITS = re.compile(r"[0-9]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def cue_key(word: str) -> str:
    """A class/id word as its cue is looked up: ASCII lower case, each run of digits one "0" (the lists hold no
    digits, so "post-4711" and "post-12" have one cue, and ids numbered per post do not flood the memo)."""
    return _DIGITS.sub("0", word.translate(_ASCII_LOWER))


def word_cue(key: str) -> int:
    """The cue of one class/id word (as `cue_key` writes it): -2 for a comment section, -1 for other
    boilerplate, +1 for content, 0 for neither. Memoised in `_cue_cache`, which the C walk reads before
    calling this."""
    if len(_cue_cache) > 50_000:  # bounded: a crawl has unlimited distinct class names
        _cue_cache.clear()
    found = -2 if _COMMENTS.search(key) else -1 if _NEG.search(key) else 1 if _POS.search(key) else 0
    _cue_cache[key] = found
    return found


class TooDeep(RecursionError):
    """The tree nests elements deeper than the walk accepts (the extractors count it as `too_deep`)."""


# Elements without an end tag in Lexbor's serialisation, and those whose text it writes unescaped.
VOID = frozenset(["area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img", "input",
                  "keygen", "link", "meta", "param", "source", "track", "wbr"])
RAW = frozenset(["iframe", "noembed", "noframes", "noscript", "plaintext", "script", "style", "xmp"])


def _tag_table() -> dict[str, tuple[int, str | None]]:
    """Flags and block kind of every tag the walk treats specially (the bit values of _walk.c)."""
    names = BLOCK | NEG_TAGS | POS_TAGS | VOID | RAW | DROP | {"a", "br", "pre"}
    return {t: ((t in BLOCK) | (t in NEG_TAGS) << 1 | (t in POS_TAGS) << 2 | (t in VOID) << 3 | (t in RAW) << 4
                | (t == "a") << 5 | (t == "br") << 6 | (t == "pre") << 7 | (t in DROP) << 8, KINDS.get(t)) for t in names}


_walk.configure(_tag_table(), _cue_cache, word_cue, TooDeep)


def walk(body, max_depth: int = 512) -> list[Block]:
    """The blocks of `body` (a selectolax LexborNode) in document order; TooDeep past `max_depth` nested elements."""
    return _walk.walk(body.html, max_depth)
