"""The C block walk of extract.Main (curate/extract/_walk.c) against an independent reading of the same page.

Both read a tree that Lexbor 3.1.0 built: the C walk its own (Lexbor vendored and compiled into the extension),
the reference (tests/_tree_walk.py) selectolax's, node by node through its Python API (selectolax 1.0.2 holds
Lexbor 3.1.0; a test oracle of the extra `dev`, not a run-time dependency), with the DROP and hidden elements removed by selectolax first rather than skipped. Every block of every gold page, and of hand-made
hostile snippets, must agree field for field. A few expectations are also written out by hand.
The guards' nesting-depth pre-scan (`nesting_depth`) is checked against the regex it replaces; the module's
features and scores, against their numpy reference in tests/test_extract_features.py.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from _tree_walk import remove_hidden, tree_walk
from selectolax.lexbor import LexborHTMLParser

from curate.extract.base import nesting_depth, regex_depth
from curate.extract.blocks import DROP, TooDeep
from curate.extract.main import parse
from curate.io.readers import decode_html

SETS = ("dragnet", "readability", "CleanPortalEval", "cleaneval-dev")


def fields(blocks) -> list[tuple]:
    return [(b.text, b.chars, b.link_chars, b.kind, b.neg, b.pos, b.com, b.path, b.index) for b in blocks]


def both(html: str, max_depth: int = 512) -> tuple[list[tuple], list[tuple]]:
    """(extract.Main's blocks of one page, the reference walk's blocks of Lexbor's tree of it, DROP and hidden removed)."""
    ref = LexborHTMLParser(html)
    ref.strip_tags(list(DROP))
    if ref.body is not None:
        remove_hidden(ref.body)
    return fields(parse(html, max_depth)[0]), fields(tree_walk(ref.body, max_depth) if ref.body is not None else [])


def test_every_gold_page_walks_to_the_same_blocks(shared: Path):
    pages, differ = 0, []
    for name in SETS:
        root = shared / "extraction" / name
        for line in (root / "gold.jsonl").read_text(encoding="utf-8").splitlines():
            page_id = json.loads(line)["id"]
            with gzip.open(root / "html" / f"{page_id}.html.gz") as f:
                c, ref = both(decode_html(f.read(), None)[0])
            pages += 1
            if c != ref:
                first = next(i for i in range(max(len(c), len(ref))) if c[i:i + 1] != ref[i:i + 1])
                differ.append((f"{name}/{page_id}", c[first:first + 1], ref[first:first + 1]))
    assert pages > 1600
    assert not differ, differ[:3]


HOSTILE = {
    "entities": "<p>Tom &amp; Jerry &lt;3 &gt; x&nbsp;y &quot;q&quot; &copy; &#169;</p>",
    "attribute with quotes and brackets": '<div class="a&quot;b > c" id=\'x"y\'><p>text</p></div>',
    "comment with markup": "<p>a<!-- <div>not</div> --> b<!----></p><!-- > -->",
    "script with a script in a string": (
        "<div><script><!--\ndocument.write('<script src=x></script>');\n//--></script><p>after</p></div>"),
    "raw text elements": "<xmp>a<b>&amp;</xmp><noembed>n<i>x</i></noembed><p>z</p><style>p{x:'</p>'}</style>q",
    "plaintext": "<p>one</p><plaintext>two</b></p> <i>three",
    "dropped inside link": '<p>see <a href="/x">the <svg><text>svg</text></svg>page<select><option>o</select></a>.</p>',
    "blocks inside link": '<p>x</p><a href="/c"><div><h3>Card title</h3><p>teaser text</p></div></a><p>y</p>',
    "pre with link and br": "<pre>  code\n\n    <a href=x>link</a>  line<br>next  \n</pre>",
    "unclosed and misnested": "<div><p>one<p>two<li>three<b>bold<i>both</b>italic</i></div><td>cell",
    "binary and NUL": "<p>a\x00b\x01\x02\ufffd c</p><div>\x7f\x80\x9f</div>",
    "non-ascii and long tag names": "<dïv>x</dïv><my-very-long-custom-element>y</my-very-long-custom-element>",
    "class cues": ('<div class="Comment-List"><p>c</p></div><div id="post-4711" class="entry"><p>e</p></div>'
                   '<nav class=content><p>n</p></nav><div class="ad-123 main"><p>a</p></div>'
                   '<div class="Bxsh(modalShadow) Mx(a)--modalCentered D(n)"><p>m</p></div>'
                   '<div class="render-target-modal W(100%)"><p>r</p></div><div class="box nocontent"><p>x</p></div>'),
    "whitespace between tags": "<div>\n  <span>a</span>\n  <span>b</span>\n</div>\n<p>\u00a0</p><p> \n </p>",
    "table": "<table><tr><th>h1<th>h2<tr><td>1<td>2</table>",
    "noscript and template": "<noscript><p>enable js</p></noscript><template><p>t</p></template><p>ok</p>",
    "frameset": "<frameset><frame src=a></frameset>",
    "empty": "",
    "text directly in body": "loose text <b>bold</b>\n<!-- c --> more<p>para</p>tail &amp; end",
    "link holding blocks, br and DROP": ("<p>a <a href=x>one<br>two<div>three<p>four</p></div><template><p>t</p>"
                                         "</template><style>s</style><!-- c -->five</a> b</p>"),
    "pre holding a link with blocks": "<pre>x <a href=y>l1<div>l2</div></a>\n z</pre>",
    "custom elements": "<x-card class=post><x-title>T</x-title><p>body text</p></x-card><foo-bar>q</foo-bar>",
    "duplicate class and id": "<div class=comment class=content id=main id=nav><p>d</p></div>",
    "empty and blank links": "<p>x <a href=1></a> <a href=2>  </a> y</p>",
    "astral and odd code points": "<p>a\ud800b \U0001F600 \ufeff c</p>",
    "hidden elements": ('<p>a</p><p hidden>h1</p><div style="DISPLAY :\tNone !important"><p>h2</p></div>'
                        '<p style="display:none;display:block">s1</p><p style="color:red; visibility: hidden">h3</p>'
                        '<p style="visibility:visible">s2</p><p aria-hidden="true">s3</p><p style="display:noneX">s4'
                        '</p><p style="display: none ! important">h4</p><p style="content: \'display:none\'">s5</p>'
                        '<p hidden="false">h5</p><p style>s6</p><div style="display:NONE"><a href=x>h6</a></div>b'),
    "hidden inside a link": ('<div>see <a href=x>the <span hidden>secret</span>page<div style="display:none">card'
                             '</div></a> <a href=y hidden>gone</a> end</div>'),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_markup_walks_to_the_same_blocks(name):
    c, ref = both(HOSTILE[name])
    assert c == ref


def test_hand_made_expectations():
    texts = [f[0] for f in both(HOSTILE["entities"])[0]]
    assert texts == ['Tom & Jerry <3 > x y "q" © ©']  # &nbsp; is a space between words
    card = both(HOSTILE["blocks inside link"])[0]
    assert [(t, chars, link) for t, chars, link, *_ in card] == [
        ("x", 1, 0), ("Card title teaser text", 22, 22), ("y", 1, 0)]  # a teaser card is link text
    pre = both(HOSTILE["pre with link and br"])[0]
    assert pre[0][0] == "  code\n    link  line\nnext" and pre[0][2] == 4 and pre[0][3] == "pre"
    cues = {t: (neg, pos, com) for t, _, _, _, neg, pos, com, *_ in both(HOSTILE["class cues"])[0]}
    # atomic-CSS words (holding "(") name styles, not parts of the page: no cue; "nocontent" (Google's
    # section-targeting class) is boilerplate though it holds "content"
    assert cues == {"c": (1, 0, 1), "e": (0, 1, 0), "n": (1, 1, 0), "a": (1, 0, 0), "m": (0, 0, 0), "r": (1, 0, 0),
                    "x": (1, 0, 0)}
    assert [f[0] for f in both(HOSTILE["script with a script in a string"])[0]] == ["after"]
    # hidden: the hidden attribute (any value), display none, visibility hidden; not aria-hidden, not a near miss
    assert [f[0] for f in both(HOSTILE["hidden elements"])[0]] == ["a", "s1", "s2", "s3", "s4", "s5", "s6", "b"]
    assert [f[:3] for f in both(HOSTILE["hidden inside a link"])[0]] == [("see the page end", 16, 8)]


def test_the_depth_limit_is_exact_and_deep_links_do_not_recurse():
    for depth in (1, 2, 7):
        html = "<div>" * depth + "x" + "</div>" * depth
        assert both(html, max_depth=depth)[0] == both(html, max_depth=depth)[1]
        with pytest.raises(TooDeep):
            parse(html, depth - 1)
        with pytest.raises(TooDeep):
            tree_walk(LexborHTMLParser(html).body, depth - 1)
    # the C walk keeps its own stacks: 5,000 nested elements inside a link (the reference would recurse)
    deep = "<p>a <a href=x>" + "<span><i>" * 2500 + "t" + "</i></span>" * 2500 + "</a></p>"
    assert fields(parse(deep, 3)[0]) == [("a t", 3, 1, "p", 0, 0, 0, (0, 1), 0)]
    nested = fields(parse("<div>" * 3000 + "x", 3000)[0])
    assert [(t, len(path)) for t, *_, path, _ in nested] == [("x", 3001)]


def test_text_that_is_not_utf8_encodable_reads_as_selectolax_reads_it():
    """Lone surrogates (a str that no UTF-8 holds) are dropped before the parse, as selectolax drops them."""
    html = '<p class="x\udcffcomment">a\udcff\ud800b \U0001f600 c</p><div id="\udce9">t\udce9t</div>'
    c, ref = both(html)
    assert c == ref
    assert c[1][0] == "tt" and c[0][6] == 1  # the class's "comment" word still counts


@pytest.mark.parametrize("html", [
    "<title> A &amp;\n B </title><p>x</p>", "<p>no title</p>", "<title>one</title><title>two</title>",
    "<body><svg><title>in <b>svg</b></title></svg><p>x</p>", "<title></title>", "",
    "<head><title>x\udcff y</title></head>",
])
def test_the_title_is_the_one_selectolax_finds(html):
    node = LexborHTMLParser(html).css_first("title")
    assert parse(html, title=True)[1] == (" ".join(node.text().split()) if node is not None else "")


def test_the_extension_exports_only_its_init_and_binds_no_other_module():
    """Lexbor is compiled in with hidden visibility: no lxb_* symbol is visible, and none is looked up elsewhere."""
    import ctypes
    import shutil
    import subprocess

    from curate.extract import _walk as module

    lib = ctypes.CDLL(module.__file__)
    assert hasattr(lib, "PyInit__walk")
    for name in ("lxb_html_document_create", "lxb_dom_node_text_content", "lexbor_malloc", "scores", "words_free"):
        assert not hasattr(lib, name), name
    assert not hasattr(module, "lexbor") and not hasattr(module, "walk")
    if shutil.which("nm"):
        out = subprocess.run(["nm", "-D", "--defined-only", module.__file__], capture_output=True, text=True,
                             check=True).stdout.split()
        assert [s for s in out[2::3]] == ["PyInit__walk"]
        undefined = subprocess.run(["nm", "-D", "--undefined-only", module.__file__], capture_output=True,
                                   text=True, check=True).stdout
        assert "lxb_" not in undefined and "dlsym" not in undefined


def test_nesting_deeper_than_max_depth_is_too_deep():
    html = "<div>" * 40 + "deep" + "</div>" * 40
    assert both(html, max_depth=40)[0][0][0] == "deep"
    with pytest.raises(TooDeep):
        parse(html, 39)
    with pytest.raises(TooDeep):
        tree_walk(LexborHTMLParser(html).body, 39)
    # inside a link nothing is visited, so its depth does not count (as in the reference)
    link = "<p><a href=x>" + "<span>" * 50 + "t" + "</span>" * 50 + "</a></p>"
    assert both(link, max_depth=5)[0][0][0] == "t"


# The regex that _walk.nesting_depth replaces (curate.extract.base.regex_depth, the fallback without the
# extension) is the reference it must agree with.


DEPTH_CASES = ["<div><div><p>x</div></div>", "<DIV><Div></div>", "<a <b>c</a>", "</x></y><z>", "<br/><img/><x/>",
               "<div a='>'><div>", "<1><-x>< div>", "<div", "<div>" * 600 + "<span", "<div9a>", "text only",
               "<div>" * 30 + "</div>" * 40 + "<div>" * 5]


@pytest.mark.parametrize("html", DEPTH_CASES)
def test_nesting_depth_matches_the_regex(html):
    for stop in (3, 512):
        assert nesting_depth(html, stop) == regex_depth(html, stop)


def test_nesting_depth_matches_the_regex_on_real_pages(shared: Path):
    for name in SETS:
        root = shared / "extraction" / name
        for path in sorted((root / "html").glob("*.html.gz"))[:40]:
            with gzip.open(path) as f:
                html = decode_html(f.read(), None)[0]
            assert nesting_depth(html, 512) == regex_depth(html, 512), path.name
