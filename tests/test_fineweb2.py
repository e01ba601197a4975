"""pipelines/fineweb2.py: FineWeb-2's steps and parameters, end to end on a multilingual crawl, and the
report's funnel per language.

The crawl is made here: for each of 12 languages, one page of clean text (the UDHR paragraphs that the
configurations were not derived from) and one page of boilerplate made of the same words (a menu of
two-word links). The reference for the report is the run's own shards, counted with pyarrow.
"""

from __future__ import annotations

import html
import importlib.util
import io
import json
import runpy
import zipfile
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate import dedup, extract, filters
from curate.lang import words
from curate.report.build import write_report

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("derive_languages", ROOT / "scripts" / "derive_languages.py")
derive = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(derive)

LANGS = ["en", "pt", "de", "fi", "ru", "ar", "hi", "zh", "ja", "th", "tr", "sw"]


def load(monkeypatch, **env: str):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return runpy.run_path(str(ROOT / "pipelines" / "fineweb2.py"))["pipeline"]


def test_steps_and_parameters_are_fineweb2s(monkeypatch):
    """fineweb-2-pipeline.py: URL filter, trafilatura, LID, MinHash 14x8 on 5-grams, then per language
    GopherRepetition (paragraph and line-character rules off), FineWeb quality (short lines off, 10%
    duplicated line characters), GopherQuality; no C4; then PII and the table-rule lines."""
    p = load(monkeypatch)
    kinds = [type(s).__name__ for s in p.steps]
    assert kinds == ["Url", "Trafilatura", "Language", "MinHash", "ByLanguage", "ByLanguage", "ByLanguage",
                     "Pii", "FunctionStep"]
    url, traf, lang, mh, rep, fw, gq, pii, table = p.steps
    assert isinstance(traf, extract.Trafilatura) and traf.favor_precision
    assert set(lang.languages) == filters.language.LID176_LANGUAGES and lang.model == "lid"
    assert isinstance(mh, dedup.MinHash) and (mh.bands, mh.rows, mh.ngram) == (14, 8, 5)
    assert (rep.step, fw.step, gq.step) == (filters.GopherRepetition, filters.FineWeb, filters.GopherQuality)
    assert rep.overrides == {"max_dup_para_frac": 1.0, "max_dup_para_char_frac": 1.0, "max_dup_line_char_frac": 1.0}
    assert fw.overrides == {"max_short_line_ratio": 1.0, "max_dup_line_char_ratio": 0.1}
    assert not any(isinstance(s, filters.C4) for s in p.steps)
    pt = gq.for_language("pt")  # the configuration's values reach the step
    assert pt.min_stop_words == 2 and "de" in pt.stop_words["pt"]
    assert p.steps[-1].name == "table_rule_lines"


def test_named_model_and_languages_from_env(monkeypatch):
    p = load(monkeypatch, PENEIRA_FINEWEB2_LID="glotlid", PENEIRA_FINEWEB2_LANGS="por_Latn,tha_Thai")
    lang = p.steps[2]
    assert lang.model == "glotlid" and lang.languages == ("por_Latn", "tha_Thai")
    assert p.steps[6].for_language("por_Latn").stop_words == p.steps[6].for_language("pt").stop_words


def test_table_rule_lines_matches_datatrove():
    """datatrove's SymbolLinesFormatter, the reference, on a text with runs of table-rule lines."""
    pytest.importorskip("datatrove")
    from datatrove.pipeline.formatters import SymbolLinesFormatter

    from curate import Document

    fn = runpy.run_path(str(ROOT / "pipelines" / "fineweb2.py"))["table_rule_lines"]
    for text in ("a | b\n|\n| |\nc\n||\nd\n\ne |", "|\nx", "no rules here\nat all", "x\n|"):
        ref = SymbolLinesFormatter(symbols_to_remove=["|"], replace_char="\n").format(text)
        assert fn(Document(id="x", text=text, source="t")).text == ref, text


def page(title: str, body: str) -> bytes:
    return (f"<html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head><body>"
            f"<nav><a href='/'>Home</a></nav><article><h1>{html.escape(title)}</h1>{body}</article></body></html>"
            ).encode()


def make_crawl(shared, path: Path) -> dict[str, str]:
    """A WARC of one clean and one boilerplate page per language; returns {url: what it is}."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    kinds = {}
    with zipfile.ZipFile(shared / "text/multilingual/nltk_udhr2.zip") as z, open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for lang in LANGS:
            held = derive.halves(derive.udhr_paragraphs(z, derive.UDHR_FILE[lang]))[1]
            ws = [t for t in words(" ".join(held), lang) if any(c.isalnum() for c in t)]
            clean = "".join(f"<p>{html.escape(p)}</p>" for p in held)
            menu = "<ul>" + "".join(f"<li><a href='/{i}'>{html.escape(' '.join(ws[i:i + 2]))}</a></li>"
                                    for i in range(0, min(len(ws), 240), 2)) + "</ul>"
            for kind, body in (("clean", clean), ("menu", menu)):
                url = f"http://{lang}.example/{kind}"
                kinds[url] = f"{lang}:{kind}"
                headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
                w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(page(held[0][:60], body)),
                                                    http_headers=headers))
    return kinds


def test_runs_on_a_multilingual_crawl_and_reports_per_language(shared, monkeypatch, tmp_path):
    monkeypatch.setenv("PENEIRA_LID_MODEL", str(shared / "models/lid.176.ftz"))
    kinds = make_crawl(shared, tmp_path / "crawl.warc.gz")
    p = load(monkeypatch)
    out = tmp_path / "out"
    p.run(inputs=str(tmp_path / "crawl.warc.gz"), output=str(out), workers=1, rejected=True, progress=False)
    kept = pq.read_table(out / "data").to_pydict() if any((out / "data").glob("*.parquet")) else {"url": []}
    kept_kinds = sorted(kinds[u] for u in kept["url"])
    clean_kept = [k for k in kept_kinds if k.endswith(":clean")]
    assert len(clean_kept) >= 0.9 * len(LANGS), kept_kinds
    assert not [k for k in kept_kinds if k.endswith(":menu")]  # boilerplate dropped in every language
    # the report's funnel per language against the shards, counted independently
    write_report(str(out))
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "## Funnel per language (table)" in md
    section = md.split("## Funnel per language (table)")[1].split("\n## ")[0]
    rows = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[2:-1]]
            for r in section.strip().splitlines()[2:]}
    by_lang = Counter(kept["lang"])
    rejected = pq.read_table(out / "rejected").to_pydict()
    stats = {s["name"]: s for s in json.loads((out / "stats.json").read_text())["steps"]}
    for lang, n in by_lang.items():
        assert rows[lang][-2] == f"{n:,}"
        assert rows[lang][0] == f"{stats['language']['extra'][f'lang:{lang}']:,}"
    header = [c.strip() for c in section.strip().splitlines()[0].split("|")[1:-1]]
    drops = Counter((lang, r.split(":")[0]) for lang, r in zip(rejected["lang"], rejected["drop_reason"], strict=True))
    for lang, cells in rows.items():
        for name, cell in zip(header[2:-2], cells[1:-2], strict=True):
            assert cell == f"{drops[(lang, name.removeprefix('dropped: '))]:,}", (lang, name)


def test_language_funnel_without_rejected_shards_and_the_other_row():
    """Planted counts: identified from `lang:` figures, kept from the shards; without rejected shards one
    column holds everything removed after identification; past 40 languages the rest are one row."""
    from curate.core.stats import StepStats
    from curate.report.languages import MAX_LANGUAGES, language_funnel

    lang = StepStats("language", extra={"lang:en": 5, "lang:pt": 3, "lang:xx": 0})
    head, rows = language_funnel([lang], {"en": 2, "pt": 3}, None)
    assert head == ["language", "identified", "removed after ID", "kept", "kept of identified"]
    assert rows[:2] == [["en", "5", "3", "2", "40.0%"], ["pt", "3", "0", "3", "100.0%"]]
    many = StepStats("language", extra={f"lang:l{i:02d}": 100 - i for i in range(MAX_LANGUAGES + 5)})
    _, rows = language_funnel([many], {}, None)
    assert len(rows) == MAX_LANGUAGES + 1
    assert rows[-1][:2] == ["other (5 languages)", f"{sum(100 - i for i in range(MAX_LANGUAGES, MAX_LANGUAGES + 5)):,}"]
    assert language_funnel([StepStats("c4")], {}, None) is None
