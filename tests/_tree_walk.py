"""A reference for the C walk of `curate.extract.main.parse`: the same rules over selectolax's tree of Lexbor nodes in Python.

The project's walk (C, `curate/extract/_walk.c`) reads its own Lexbor's tree of the page (the same Lexbor release); this
one is an independent reading through selectolax's Python objects, written straight from the rules of
blocks.py (recursive, and it expects the DROP and hidden elements already removed: `remove_hidden`), so tests/test_extract_walk.py
can check that the two agree block for block (about 10x slower, which is why it lives here).
"""

from __future__ import annotations

import re

from curate.extract.blocks import (
    BLOCK,
    BOILERPLATE_CUES,
    COMMENT_CUES,
    CONTENT_CUES,
    KINDS,
    NEG_TAGS,
    POS_TAGS,
    Block,
    TooDeep,
)

_HAS_WORD = re.compile(r"\w")


def _clean(raw: str, pre: bool) -> str:
    """Whitespace folded within lines (kept in <pre>), empty lines dropped."""
    if pre:
        return "\n".join(ln.rstrip() for ln in raw.split("\n") if ln.strip())
    if "\n" not in raw:
        return " ".join(raw.split())
    return "\n".join(ln for ln in (" ".join(x.split()) for x in raw.split("\n")) if ln)


def _regex(words: tuple[str, ...]) -> re.Pattern:
    """One regex for a list of cue words: "^w" anchors at the start, "w$" at the end."""
    return re.compile("|".join(("^" if w[0] == "^" else "") + re.escape(w.strip("^$")) + ("$" if w[-1] == "$" else "")
                               for w in words))


_CUES = [(-2, _regex(COMMENT_CUES)), (-1, _regex(BOILERPLATE_CUES)), (1, _regex(CONTENT_CUES))]


def word_cue(word: str) -> int:
    if "(" in word:  # an atomic-CSS utility class names a style, not a part of the page
        return 0
    key = re.sub(r"[0-9]+", "0", word.translate(str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")))
    return next((value for value, rx in _CUES if rx.search(key)), 0)


def cue(classes: str) -> int:
    """A comment cue in any class/id word wins, then any boilerplate cue, then any content cue."""
    cues = [word_cue(w) for w in classes.split()]
    return 0 if not cues else min(cues) if min(cues) < 0 else max(cues)


_CSS_SPACE = " \t\n\r\f"
_IMPORTANT = re.compile(r"!\s*important$")


def hidden(attrs: dict) -> bool:
    """A `hidden` attribute, or an inline style whose last display is none or last visibility is hidden."""
    if "hidden" in attrs:
        return True
    last = {}
    for decl in (attrs.get("style") or "").split(";"):
        name, colon, value = decl.partition(":")
        if colon:
            value = _IMPORTANT.sub("", value.strip(_CSS_SPACE).lower()).strip(_CSS_SPACE)
            last[name.strip(_CSS_SPACE).lower()] = value
    return last.get("display") == "none" or last.get("visibility") == "hidden"


def remove_hidden(body) -> None:
    """Every hidden element under `body` removed with its content (innermost first, so none is removed twice)."""
    for node in reversed([n for n in list(body.traverse())[1:] if n.attributes and hidden(n.attributes)]):
        node.decompose()


def _link_text(node, out: list[str]) -> list[str]:
    """A link's text: its text nodes, a space where a block or <br> inside it begins or ends."""
    for ch in node.iter(include_text=True):
        tag = ch.tag
        if tag == "-text":
            out.append(ch.text_content)
        elif tag in BLOCK or tag == "br":
            if out and not out[-1].endswith(" "):
                out.append(" ")
            _link_text(ch, out)
            if out and not out[-1].endswith(" "):
                out.append(" ")
        elif tag and tag[0] != "-":
            _link_text(ch, out)
    return out


def tree_walk(body, max_depth: int = 512) -> list[Block]:
    blocks: list[Block] = []
    buf: list[str] = []
    link = [0]
    counter = [0]

    def flush(kind, neg, pos, com, path, pre) -> None:
        raw = "".join(buf)
        buf.clear()
        n_link, link[0] = link[0], 0
        if not _HAS_WORD.search(raw):
            return
        text = _clean(raw, pre)
        blocks.append(Block((text, len(text), min(n_link, len(text)), kind, neg, pos, com, path, len(blocks))))

    def visit(node, kind, neg, pos, com, path, in_link, pre, depth) -> None:
        if depth > max_depth:
            raise TooDeep
        depth += 1
        for ch in node.iter(include_text=True):
            tag = ch.tag
            if tag == "-text":
                t = ch.text_content
                if not pre:
                    if t.isspace():
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
                c = cue(f"{attrs.get('class') or ''} {attrs.get('id') or ''}") if attrs else 0
                sub = (KINDS.get(tag, "div"), neg + (c < 0) + (tag in NEG_TAGS), pos + (c > 0) + (tag in POS_TAGS),
                       com + (c == -2), (*path, counter[0]))
                visit(ch, *sub, in_link, pre or tag == "pre", depth)
                if buf:
                    flush(*sub, pre or tag == "pre")
            elif tag == "a" and not pre:
                t = "".join(_link_text(ch, []))
                if t and not t.isspace():
                    link[0] += len(t.strip())
                    buf.append(t.replace("\n", " "))
                elif buf:
                    buf.append(" ")
            elif tag == "br":
                buf.append("\n")
            elif tag and tag[0] != "-":
                visit(ch, kind, neg, pos, com, path, in_link or tag == "a", pre, depth)

    visit(body, "div", 0, 0, 0, (0,), False, False, 0)
    if buf:
        flush("div", 0, 0, 0, (0,), False)
    return blocks
