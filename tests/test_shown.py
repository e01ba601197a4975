"""Issue 41.6: untrusted text reaches no output surface raw.

One hostile run (ids, URLs, languages, drop reasons, step names, benchmark items, input paths, error messages
and texts carrying clear-screen, window-title and OSC 8 link sequences, a one-character C1 CSI, right-to-left
overrides and isolates, HTML tags, Markdown links and images) is walked through every command that prints or
writes what a run holds. The terminal is judged by Unicode category (no control or format character but newline
and tab); the Markdown by rendering it with markdown-it (an independent CommonMark parser: no tag, link or image
from the data); the HTML by parsing it (no element, attribute or entity from the data). The walk covers every
command in `COMMANDS`: a new one is either walked or named with the reason it shows no run text.
"""

from __future__ import annotations

import json
import unicodedata
from html.parser import HTMLParser

import pytest

from curate.cli.main import COMMANDS
from curate.cli.main import main as cli
from curate.core.document import Document, shard_schema
from curate.core.shown import for_html, for_markdown, for_terminal
from curate.io.writers import Parquet

# Each a way text acts on its reader instead of being read.
SEQUENCES = ["\x1b[2J\x1b[H", "\x1b]0;pwned\x07", "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
             "\x9b31m", "\u202etxt.exe\u202c", "\u2067rtl\u2069", "\r\x08\x00", "\u2028"]
MARKUP = "$x^2$ <script>alert(1)</script><img src=x onerror=y>[link](http://evil.example/) ![i](http://evil.example/i.png) &#x202e;"
H = "".join(SEQUENCES) + MARKUP
NAME = H.replace("/", "_").replace("\x00", "")  # for folder names

# Commands that show nothing a run or its documents hold, and why.
NOT_SHOWING = {
    "run": "its closing table is core.stats.format_table, walked through `curate stats`",
    "quality": "prints its own metrics and the user's class names",
    "mix": "prints budgets and the user's source names",
    "tokenizer": "prints the user's paths and vocabulary size",
    "tokenize": "prints token counts",
    "models": "prints the project's own model table",
    "demo": "prints the counts of the text it generates itself",
    "cc": "prints a crawl index's names and path lists, no run text: walked with a hostile index in "
          "tests/test_commoncrawl.py (a local server)",
    "cancel": "prints Slurm job ids",
    "view": "a web app (issue 44) rendering through jinja2 autoescaping and a sandboxed frame: its own browser "
            "tests walk it, not this one",
}
SHOWN = ["inspect", "stats", "status", "dedup-report", "decontam report", "report (md, html)", "export (card)"]


def _bad_chars(text: str) -> list[str]:
    return [f"U+{ord(c):04X}" for c in text if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile") / "run"
    cols = {"dedup_cluster": __import__("pyarrow").string(), "dedup_cluster_size": __import__("pyarrow").int32()}
    decontam = json.dumps({"decontam": [{"benchmark": H, "item": H, "span": [0, 9], "text": H}]})
    w = Parquet().open(str(out / "data"), "part-00000", shard_schema(cols))
    for i in range(2):
        doc = Document(id=f"{H}{i}", text=f"{H}\nsecond line {H}", source=H, url=H, lang=H)
        doc.metadata = json.loads(decontam)
        doc.extra.update(dedup_cluster=H, dedup_cluster_size=2)
        w.write(doc)
    w.commit()
    w = Parquet().open(str(out / "rejected"), "part-00000", shard_schema(cols, rejected=True))
    doc = Document(id=f"{H}r", text=H, source=H, url=H, lang=H, metadata=json.loads(decontam))
    doc.extra.update(dedup_cluster=H, dedup_cluster_size=2, drop_reason="minhash:" + H)
    w.write(doc)
    w.commit()
    step = {"docs_in": 3, "docs_out": 2, "chars_in": 9, "chars_out": 6, "seconds": 0.1, "dropped_chars": {}}
    steps = [{**step, "name": "read", "dropped": {}, "extra": {}},
             {**step, "name": H, "dropped": {f"{H}:{H}": 1}, "errors": 1, "error_sample": H,
              "extra": {f"lang:{H}": 3, H: H}},
             {**step, "name": "decontam", "dropped": {}, "extra": {"benchmarks": {H: 5}, f"docs_hit:{H}": 3,
                                                                   f"matches:{H}": 3, "index": H}}]
    (out / "stats.json").write_text(json.dumps({"pipeline": H, "steps": steps}))
    (out / "manifest.json").write_text(json.dumps({
        "pipeline": {"name": H, "reader": H, "steps": [H]}, "inputs": [H], "docs_read": 3, "docs_written": 2,
        "outputs": [], "kind": "run"}))
    (out / "_work" / "global1" / "_phases" / NAME).mkdir(parents=True)
    return out


def test_every_command_is_walked_or_named():
    walked = {s.split()[0] for s in SHOWN}
    assert set(COMMANDS) - walked - set(NOT_SHOWING) == set(), "a new command: walk it below or say why it shows no run text"


@pytest.mark.parametrize("argv", [["inspect", "-n", "5"], ["inspect", "--rejected"], ["stats"], ["status"],
                                  ["dedup-report"], ["decontam", "report"]], ids=" ".join)
def test_terminal_commands_show_no_sequence_raw(hostile, capsys, argv):
    argv = [*argv, str(hostile)] if argv[0] != "decontam" else [*argv, str(hostile)]
    assert cli(argv) == 0
    shown = capsys.readouterr().out
    assert _bad_chars(shown) == []
    assert "\\x1b" in shown  # the data is there, visibly escaped, not left out


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, list]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def _elements(html: str) -> list[tuple[str, list]]:
    p = _Elements()
    p.feed(html)
    return p.tags


def _rendered_markdown(md: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").enable("table").render(md)


def _assert_markdown_safe(md: str, images: str = "report/") -> None:
    assert _bad_chars(md) == []
    rendered = _rendered_markdown(md)
    tags = {t for t, _ in _elements(rendered)}
    assert not tags & {"script", "a"}, tags
    assert [a for t, a in _elements(rendered) if t == "img" and not dict(a)["src"].startswith(images)] == []
    assert "evil.example" not in "".join(str(a) for _, attrs in _elements(rendered) for a in attrs)
    assert "\u202e" not in rendered  # the entity &#x202e; stayed text


def test_report_markdown_and_html(hostile, capsys):
    assert cli(["report", str(hostile)]) == 0
    _assert_markdown_safe((hostile / "report.md").read_text())
    page = (hostile / "report.html").read_text()
    assert _bad_chars(page) == []
    tags = {t for t, _ in _elements(page)}
    assert not tags & {"script", "a"} and "\u202e" not in __import__("html").unescape(page)
    assert [a for t, a in _elements(page) if t == "img" and not dict(a)["src"].startswith("data:image/png")] == []


def test_export_card(hostile, tmp_path, capsys):
    assert cli(["export", str(hostile), "--out", str(tmp_path / "hf")]) == 0
    card = (tmp_path / "hf" / "README.md").read_text()
    yaml = pytest.importorskip("yaml")
    _, header, body = card.split("---\n", 2)  # the Hub reads the YAML header as metadata, the rest as Markdown
    assert _bad_chars(yaml.safe_load(header)["pretty_name"]) == []
    _assert_markdown_safe(body, images="(none)")
    assert "pwned" in body


@pytest.mark.parametrize("text", [H, "plain", "a_b", "`x` | y", "日本語\u200c\u200dفارسی"])
def test_surfaces_round_trip_what_they_show(text):
    """What a reader sees is the text (escapes aside): markdown-it renders for_markdown back to the neutralised
    text, an HTML parser reads for_html back to it, and the joiners Persian and Indic scripts need stay."""
    import html

    neutral = for_terminal(text)
    assert _bad_chars(neutral.replace("\u200c", "").replace("\u200d", "")) == []
    assert html.unescape(for_html(text)) == neutral
    rendered = _rendered_markdown(for_markdown(text))
    assert html.unescape(rendered.removeprefix("<p>").removesuffix("</p>\n")) == neutral.replace("\n", " ")
    code = _rendered_markdown(for_markdown(text, code=True))
    assert html.unescape(code.removeprefix("<p><code>").removesuffix("</code></p>\n")).replace("\\|", "|").strip() \
        == neutral.replace("\n", " ").strip()
