"""Untrusted text shown to a person: one function per surface (terminal, Markdown, HTML).

Everything a command prints or writes about a run (document text, URLs, ids, languages, drop reasons, input
paths) may come from crawled pages or a data file someone else made. Shown raw, such text can act on the reader's
screen instead of being read: a terminal runs the escape sequences in it (ESC [ … CSI: clear the screen, move the
cursor, recolour; ESC ] … OSC: retitle the window, OSC 8 links whose target differs from their text; C1 controls
such as U+009B, a one-character CSI), bidirectional overrides and isolates (U+202A-202E, U+2066-2069) reorder what
follows so `exe.txt` reads as `txt.exe`, and a Markdown or HTML page renders tags, links and images from it.

The rule, the same on every surface: every character of Unicode category Cc (controls, ESC among them), Cf (format
characters: the bidi controls, tags, invisible operators), Cs (lone surrogates), Zl and Zp (line and paragraph
separators) is shown as its Python escape (`\\x1b`, `\\u202e`), so an escape sequence is inert and visible; the
zero-width joiner and non-joiner (U+200C, U+200D) stay, since Persian, Indic scripts and emoji need them and they
reorder nothing. Then each surface escapes its own markup. The stored text never changes: this is for display.
"""

from __future__ import annotations

import html
import re
import unicodedata

_UNSAFE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_JOINERS = frozenset({"\u200c", "\u200d"})
_MD_SPECIAL = re.compile(r"([\\`*{}\[\]()<>#+!|~&$])")


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def neutral(text: str, keep: str = "\n\t") -> str:
    """`text` with every control, format and separator character (but those in `keep` and the joiners) written
    as its escape: what every surface starts from."""
    if text.isprintable():  # the common case: nothing to look at (the joiners are not printable either)
        return text
    return "".join(ch if ch in keep or ch in _JOINERS or unicodedata.category(ch) not in _UNSAFE else _escape(ch)
                   for ch in text)


def for_terminal(text: object, *, lines: bool = True) -> str:
    """Text fit for a terminal. `lines=True` keeps newlines and tabs (a document's body); `lines=False` escapes
    them too, for a value that must stay on its row (an id, a URL, a language, a reason in a table)."""
    return neutral(str(text), "\n\t" if lines else "")


def for_markdown(text: object, *, code: bool = False) -> str:
    """Text fit for one line of Markdown (a table cell, a list item, a heading): neutralised, line breaks as
    spaces, and every character that starts markup (emphasis, links, images, code, tables, raw HTML and
    entities) backslash-escaped, which CommonMark allows for any ASCII punctuation. `code=True` shows it as a
    code span instead (a path, a step), whose content is literal: fenced by one backtick more than its longest
    run of backticks; `|` is still escaped there, since GitHub's tables split cells before reading spans."""
    flat = neutral(str(text)).replace("\n", " ").replace("\t", " ")
    if not code:
        return re.sub("_+", _underscores, _MD_SPECIAL.sub(r"\\\1", flat))
    fence = "`" * (max(map(len, re.findall("`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat.replace('|', chr(92) + '|')}{pad}{fence}"


def _underscores(m: re.Match) -> str:
    """A run of `_` between two letters or digits opens and closes no emphasis in CommonMark (`too_few_lines`
    stays readable); any other is escaped."""
    s, (i, j) = m.string, m.span()
    inert = i > 0 and j < len(s) and s[i - 1].isalnum() and s[j].isalnum()
    return m.group() if inert else m.group().replace("_", "\\_")


def for_yaml(text: object) -> str:
    """A YAML scalar that reads back as the neutralised text and nothing more (a dataset card's header): one
    double-quoted line, JSON's escapes (which YAML reads), so a newline, `: ` or `---` in a value never adds a
    key or ends the header (issue 42.5: `curate export --license` with a newline added keys)."""
    import json

    return json.dumps(neutral(str(text), keep=""), ensure_ascii=False)


def for_html(text: object) -> str:
    """Text fit for an HTML element or a quoted attribute: neutralised, then `& < > " '` escaped."""
    return html.escape(neutral(str(text)), quote=True)
