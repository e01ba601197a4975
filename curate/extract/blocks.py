"""An HTML page as a flat list of text blocks, the unit that `extract.Main` keeps or drops.

Every block-level element starts a new block, so a block is the inline text of one paragraph,
heading, list item, table cell or preformatted section. Each block carries what the classifier needs
and the tree no longer gives once flattened: how much of it is link text, which block tag holds it,
the class/id and tag cues of its ancestors, and the path of container elements above it (for finding
the main-content region). The rules of the walk:

- a link's whole text is one inline piece (blocks inside a link, such as teaser cards, are link text
  of whichever block they join, separated by a space); outside `<pre>` a newline in text is a space,
  and whitespace between tags is one space, only after some text;
- `<br>` ends a line inside the block; in `<pre>` text is kept as it is, links inside it count as
  link text;
- a block element adds its class/id cue and its tag's meaning (NEG_TAGS, POS_TAGS) to the counts its
  blocks inherit, and its number (in document order) to their container path; the cue of its class
  and id words (COMMENT_CUES and the others below) is a comment cue if any word has one, else a
  boilerplate cue if any has one, else a content cue if any has one;
- the walk stops with TooDeep past `max_depth` nested elements (links' insides excepted).

The parse and the walk are one C call (`_walk.c`: `parse`) from the page's text to its blocks, on
Lexbor's own tree: Lexbor is vendored (third_party/lexbor) and compiled into the module, because a
Python binding exposes the tree only as objects, about a microsecond per node. DROP elements, and
hidden ones (a `hidden` attribute, an inline display:none or visibility:hidden: _walk.c, is_hidden), are
skipped in the walk itself. This module holds the tables the walk reads.
"""

from __future__ import annotations

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

# Class/id cue words, after Mozilla Readability's lists (the conventions of CMS templates). A word of a class
# or id attribute, ASCII-lower-cased and with each run of digits written as one "0" ("post-4711" and "post-12"
# are one word to the memo), takes the cue of the first list holding a word found in it: anywhere in it, or,
# written "^w", "w$" or "^w$", at its start, at its end or as the whole of it. Matched in C (_walk.c). A word
# holding "(" takes none: atomic CSS (Atomizer's "D(n)", "Mx(a)--modalCentered") names a style, not a part of
# the page, and Yahoo's article modal would otherwise read as a popup four times over.
COMMENT_CUES = ("comment", "disqus", "respond", "reply", "replies", "discussion", "talkback", "feedback")
BOILERPLATE_CUES = (
    "footer", "footnote", "sidebar", "side-bar", "widget", "nav", "menu", "breadcrumb", "pagination", "pager",
    "share", "sharing", "social", "sponsor", "advert", "banner", "promo", "related", "recommend", "popular",
    "trending", "outbrain", "taboola", "newsletter", "subscribe", "signup", "login", "cookie", "gdpr", "masthead",
    "toolbar", "tags", "tagcloud", "byline", "authorinfo", "author-info", "meta", "copyright", "legal", "rss",
    "skip", "hidden", "modal", "popup", "shopping", "contact", "extra", "supplemental", "combx", "community",
    "remark", "shoutbox", "skyscraper", "^ad$", "^ads$", "-ad-", "^ad-", "-ads$", "adsense", "dfp", "caption",
    "credit", "print", "email", "header", "tool", "nocontent",
)
CONTENT_CUES = ("article", "content", "entry", "hentry", "post", "story", "text", "body", "main", "blog", "page",
                "prose", "abstract", "lede", "lead")


# One block of text and the features of its place in the page: text, chars, link_chars, kind, neg, pos, com,
# path, index (a struct sequence made by the C walk; `help(Block)` describes each field).
Block = _walk.Block


class TooDeep(RecursionError):
    """The tree nests elements deeper than the walk accepts (the extractors count it as `too_deep`)."""


def _tag_table() -> dict[str, tuple[int, str | None]]:
    """Flags and block kind of every tag the walk treats specially (the bit values of _walk.c)."""
    names = BLOCK | NEG_TAGS | POS_TAGS | DROP | {"a", "br", "pre"}
    return {t: ((t in BLOCK) | (t in NEG_TAGS) << 1 | (t in POS_TAGS) << 2 | (t == "a") << 3 | (t == "br") << 4
                | (t == "pre") << 5 | (t in DROP) << 6, KINDS.get(t)) for t in names}


_walk.configure(_tag_table(), (COMMENT_CUES, BOILERPLATE_CUES, CONTENT_CUES), TooDeep)
