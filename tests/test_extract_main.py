"""extract.Main on real pages (expectations read off the pages and their gold text by a person) and on hostile HTML.

The real pages come from the gold sets in ../shared/data/extraction and from the WARC files, whose hand-made
main text is tests/data/warc_gold.jsonl (the record ids, the text a person selected, and a note of what was
kept and dropped). The extractor's weights were fitted on 60% of the gold-set pages; the WARC pages were
never seen by the fit.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from curate import Document, Reject, extract
from curate.core.errors import UsageError
from curate.io.readers import decode_html

GOLD = Path(__file__).parent / "data" / "warc_gold.jsonl"


@pytest.fixture(scope="module")
def main() -> extract.Main:
    ex = extract.Main()
    ex.setup()
    return ex


def run(ex, html: str, url: str | None = None):
    return ex.apply(Document(id="t", text="", source="test", url=url, html=html))


def lines(ex, html: str) -> list[str]:
    out = run(ex, html)
    assert isinstance(out, Document), out
    return out.text.split("\n")


def gold_page(shared: Path, name: str, page_id: str) -> str:
    with gzip.open(shared / "extraction" / name / "html" / f"{page_id}.html.gz") as f:
        return decode_html(f.read(), None)[0]


@pytest.fixture(scope="module")
def warc_pages(shared) -> dict[str, tuple[str, dict]]:
    """url -> (decoded HTML, gold record) for the ten hand-made WARC gold pages."""
    gold = {g["record_id"]: g for g in map(json.loads, GOLD.read_text(encoding="utf-8").splitlines())}
    out = {}
    for warc in sorted({g["warc"] for g in gold.values()}):
        with open(shared / warc, "rb") as f:
            for rec in ArchiveIterator(f):
                g = gold.get(rec.rec_headers.get_header("WARC-Record-ID"))
                if g is not None and rec.rec_type == "response":
                    ctype = rec.http_headers.get_header("Content-Type")
                    out[g["url"]] = (decode_html(rec.content_stream().read(), ctype)[0], g)
    assert len(out) == len(gold) == 10
    return out


def f1(pred: str, gold: str) -> float:
    p, g = Counter(re.findall(r"\w+", pred.lower())), Counter(re.findall(r"\w+", gold.lower()))
    overlap = sum((p & g).values())
    return 0.0 if not overlap else 2 * overlap / (sum(p.values()) + sum(g.values()))


# ---------------------------------------------------------------- real pages


def test_news_article_keeps_headline_and_body_drops_share_and_teasers(main, shared):
    """BBC news page (CleanPortalEval): the gold text starts with the headline (next test) and ends with the last
    paragraph; 'Share this page' (the sharing toolbar) and the 'Related Stories' teaser are not in it."""
    out = lines(main, gold_page(shared, "CleanPortalEval", "bbc.co.uk_news_12"))
    assert out.count("Building collapses are common with poor construction practices often blamed.") == 1
    assert not any("Related Stories" in ln for ln in out)
    assert not {"Delicious", "Digg", "Facebook", "Twitter", "Email", "Print"} & set(out)  # the toolbar's links


@pytest.mark.xfail(strict=True, reason="the toolbar's label sits in the article's container just above the headline: "
                   "0.64 under the weights before the depth-weighted region, 0.71 after, over the threshold (0.65) "
                   "(docs/extract.md, known weaknesses)")
def test_news_article_drops_the_share_toolbar_label(main, shared):
    assert "Share this page" not in lines(main, gold_page(shared, "CleanPortalEval", "bbc.co.uk_news_12"))


def test_news_article_keeps_its_headline(main, shared):
    assert "India building collapse near Mumbai kills 40" in lines(main, gold_page(shared, "CleanPortalEval",
                                                                                  "bbc.co.uk_news_12"))


def test_an_article_beside_a_longer_teaser_stream_is_the_region(main, shared):
    """Readability's Yahoo pages: the article (ten paragraphs under one container; on yahoo-2 inside a modal over
    the home page) beside a stream of 20-odd teasers, each a linked title and a one-paragraph summary several
    levels below the stream's list, holding more text in all. The region weighs a block's evidence less in
    ancestors further above it, so the article's container wins; with every level weighed alike the stream
    did, and the article was dropped (F1 0.35 and 0.42 against the gold)."""
    out = lines(main, gold_page(shared, "readability", "yahoo-2"))
    assert any(ln.startswith("MOSCOW (AP) — An unmanned Russian cargo spaceship") for ln in out)
    assert not any(ln.startswith("Fashion designer Tom Ford has announced") for ln in out)  # a teaser
    out = lines(main, gold_page(shared, "readability", "yahoo-3"))
    assert any(ln.startswith("Vanessa Hicks said she had no idea her photo") for ln in out)
    assert not any("Alan Thicke" in ln for ln in out)  # the first teaser of the stream below the article


def test_blog_post_keeps_title_and_paragraphs_drops_menu_related_and_footer(main, warc_pages):
    html, gold = warc_pages["https://creativecommons.org/2024/04/23/cc-at-wipo-slow-progress-on-copyright-"
                            "exceptions-for-cultural-heritage-institutions/"]
    out = lines(main, html)
    assert "CC at WIPO: Slow progress on copyright exceptions for cultural heritage institutions" in out
    assert any(ln.startswith("Last week, Creative Commons (CC) participated in the 45th session") for ln in out)
    for boiler in ("Skip to content", "Join a global community working to strengthen the Commons",  # menu
                   "Related posts", "Getty Museum releases 88K+ images of artworks with CC0",  # related posts
                   "PO Box 1866, Mountain View, CA 94042", "Subscribe to our Newsletter"):  # footer
        assert boiler not in out, boiler


def test_russian_company_page_drops_the_catalogue_menu(main, warc_pages):
    """A shop page whose 250-item catalogue menu (shown twice) dwarfs its four short paragraphs."""
    html, _ = warc_pages["http://01spb.ru/company/"]
    out = lines(main, html)
    assert "Стратегия пожарной безопасности" in out
    assert any(ln.startswith("ООО «СПБ» - узкоспециализированное предприятие") for ln in out)
    assert "Огнетушители углекислотные" not in out and "Рукава всасывающие" not in out


def test_table_rows_are_lines_with_cells_joined():
    """A kept table: one line per row, cells joined by ' | ' (docs/extract.md); a cell holding a paragraph
    break stays on lines of its own."""
    from curate.extract.main import parse, render

    html = ("<table><tr><th>Domain</th><th>Language</th></tr><tr><td>測試</td><td>Chinese</td></tr>"
            "<tr><td>one<br>two</td><td>x</td></tr></table><p>After the table.</p>")
    blocks = parse(html)[0]
    assert render(blocks, [True] * len(blocks)).split("\n") == [
        "Domain | Language", "測試 | Chinese", "one", "two", "x", "After the table."]
    keep = [b.text != "Language" for b in blocks]  # a dropped cell leaves the rest of its row
    assert render(blocks, keep).split("\n")[0] == "Domain"


def test_data_table_rows_are_kept_or_dropped_whole(main, warc_pages):
    """IANA's table of test IDN domains (in the hand-made gold): no row is cut into pieces."""
    html, _ = warc_pages["http://www.iana.org/domains/reserved"]
    out = lines(main, html)
    assert "IANA-managed Reserved Domains" in out
    assert "Root Zone Management" not in out  # the section menu
    cells = ("XN--G6W251D", "Chinese", "Han (Traditional variant)")
    assert all(c not in out for c in cells)  # never a lone cell
    assert any(ln == "測試 | XN--G6W251D | Chinese | Han (Traditional variant)" for ln in out) or not any(
        "XN--G6W251D" in ln for ln in out)


def test_hand_made_warc_gold_pages_are_mostly_recovered(main, warc_pages):
    """Mean token F1 against the hand-made main text of the ten WARC pages at least 0.9 (trafilatura's and
    Resiliparse's are in docs/benchmarks.md), and no page below 0.6 (the worst is the Aragonese Wikipedia
    page: no stop-word list fits Aragonese)."""
    scores = {url: f1(run(main, html).text, g["text"]) for url, (html, g) in warc_pages.items()}
    assert min(scores.values()) >= 0.6, scores
    assert sum(scores.values()) / len(scores) >= 0.9, scores


# ---------------------------------------------------------------- output format


def test_one_block_a_line_br_ends_a_line_pre_keeps_layout(main):
    body = ("<p>The first paragraph has enough words in it to read as running text, with commas, and a period.</p>"
            "<p>The second paragraph is also prose of a decent length, so it stays as well, on its own line.<br>"
            "After a line break the sentence goes on, still part of the same paragraph.</p>"
            "<pre>def f(x):\n    return x + 1\n</pre>"
            "<p>The third paragraph closes the article with one more sentence of ordinary prose here.</p>")
    out = lines(main, f"<html><body><article>{body}</article></body></html>")
    assert out == [
        "The first paragraph has enough words in it to read as running text, with commas, and a period.",
        "The second paragraph is also prose of a decent length, so it stays as well, on its own line.",
        "After a line break the sentence goes on, still part of the same paragraph.",
        "def f(x):",
        "    return x + 1",
        "The third paragraph closes the article with one more sentence of ordinary prose here.",
    ]


def test_title_option_puts_the_page_title_first(shared):
    ex = extract.Main(title=True)
    ex.setup()
    out = lines(ex, gold_page(shared, "CleanPortalEval", "bbc.co.uk_news_12"))
    assert out[0] == "BBC News - India building collapse near Mumbai kills 40"


def test_settings_are_checked():
    with pytest.raises(Exception, match="threshold"):
        extract.Main(threshold=1.5)
    with pytest.raises(Exception, match="min_words"):
        extract.Main(min_words=-1)


# ---------------------------------------------------------------- hostile HTML


def test_deep_nesting_is_rejected_as_too_deep(main):
    deep = "<html><body>" + "<div>" * 50_000 + "<p>deep inside.</p>" + "</div>" * 50_000 + "</body></html>"
    assert run(main, deep) == Reject("too_deep")
    # Inline elements count too (the regex pre-scan of the other extractors skips none of them).
    spans = "<html><body><p>" + "<span>" * 5_000 + "text" + "</span>" * 5_000 + "</p></body></html>"
    assert run(main, spans) == Reject("too_deep")
    # Under 5,000 tags the regex pre-scan is skipped (Lexbor parses that in milliseconds however it
    # nests) and the walk measures the parsed tree: still too_deep.
    small = "<html><body>" + "<div>" * 2_000 + "<p>deep inside.</p>" + "</div>" * 2_000 + "</body></html>"
    assert small.count("<") < 5_000 and run(main, small) == Reject("too_deep")


def test_nesting_within_the_limit_is_extracted(main):
    words = "Nested text that is long enough to count as a paragraph of real prose, with a comma."
    html = "<html><body>" + "<div>" * 400 + f"<p>{words}</p>" + "</div>" * 400 + "</body></html>"
    assert lines(main, html) == [words]


def test_huge_page_is_rejected_before_parsing(main):
    big = "<html><body>" + "<p>word word word.</p>" * 150_000 + "</body></html>"  # 3.3 M chars
    assert run(main, big) == Reject("too_large")


def test_large_page_under_the_limit_is_handled(main):
    body = "".join(f"<div class='item'><a href='/p{i}'>Product {i}</a> <span>$ {i}.99</span></div>" for i in range(8000))
    html = f"<html><body><article><p>{'A sentence of the real article, with words. ' * 20}</p></article>{body}</body></html>"
    assert len(html) < 2_000_000
    out = run(main, html)
    assert isinstance(out, Document) and "A sentence of the real article" in out.text


def test_broken_markup_is_repaired_by_the_parser(main):
    html = ("<html><body><div><p>An unclosed paragraph of ordinary prose with enough words to be kept as text"
            "<p>Another one, <b>bold <i>and italic</b> mis-nested</i>, still readable prose for the reader here."
            "</div></div></span><table><td>a stray cell<tr></table><p>Last words, unterminated &amp; <!-- comment")
    out = run(main, html)
    assert isinstance(out, Document)
    assert "An unclosed paragraph of ordinary prose" in out.text and "bold and italic mis-nested" in out.text
    assert "comment" not in out.text and "&amp;" not in out.text


def test_binary_bytes_do_not_break_it(main):
    """A JPEG read as HTML (a mislabelled response): decoded with replacement characters, then no crash."""
    import random

    rnd = random.Random(0)
    junk = bytes(rnd.randrange(256) for _ in range(200_000))
    html = decode_html(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + junk, "text/html")[0]
    out = run(main, html)
    assert isinstance(out, (Document, Reject))
    if isinstance(out, Reject):
        assert out.rule == "empty"
    nul = run(main, "<html><body><p>Text with a NUL \x00 byte and control \x07 chars, still a sentence here.</p></body></html>")
    assert isinstance(nul, Document) and "still a sentence here" in nul.text


def test_hidden_paragraphs_are_not_main_text(main):
    """Planted: an article whose paragraphs alternate shown / hidden (as readability's `hidden-nodes` page)."""
    shown = [f"Paragraph {w} is shown to the reader, a sentence of ordinary prose with commas, and a period."
             for w in ("one", "two", "three")]
    hide = ['hidden', 'style="display: none;"', 'style="color: red; VISIBILITY: hidden !important"']
    body = "".join(f"<p>{s}</p><p {h}>Secret {i} is in the markup but not on the screen, a sentence of prose too.</p>"
                   for i, (s, h) in enumerate(zip(shown, hide, strict=True)))
    out = lines(main, f"<html><body><article><h1>A title</h1>{body}</article></body></html>")
    assert [ln for ln in out if ln.startswith("Paragraph")] == shown
    assert not [ln for ln in out if "Secret" in ln]


def test_empty_and_script_only_pages_are_empty(main):
    assert run(main, "") == Reject("empty", 0, 1)  # no text, against min_chars=1
    assert run(main, "<html><head><script>var a = 'x'.repeat(9);</script></head><body>  </body></html>") == Reject("empty", 0, 1)


def test_work_budgets_not_a_clock():
    """A page over max_tags ('<' characters) is too_large before any parse; a wall-clock timeout is refused (it
    made the output depend on the machine's load), except 0, which meant no limit."""
    ex = extract.Main(max_tags=10)
    ex.setup()
    page = "<html><body>" + "<p>a sentence of words here</p>" * 5 + "</body></html>"
    assert run(ex, page) == Reject("too_large")
    assert isinstance(run(extract.Main(max_tags=14), page), Document)  # 14 tags: within the budget
    with pytest.raises(UsageError, match="timeout.*max_tags"):
        extract.Main(timeout=0.2)
    assert extract.Trafilatura(timeout=0).max_tags == 100_000


def test_text_documents_pass_through(main):
    doc = Document(id="t", text="already text", source="test")
    assert main.apply(doc) is doc and doc.text == "already text"
