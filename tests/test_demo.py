"""The demo crawl generator: deterministic bytes, readable WARCs, and ground truth that matches the pages."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from curate import extract, readers
from curate.core.stats import StepStats
from curate.demo.crawl import generate


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("demo")
    return out, generate(out, pages=150, seed=11)


def _read(reader, out: Path) -> tuple[dict, dict[str, StepStats]]:
    docs, stats = {}, {}
    for f in sorted(out.glob("*.warc.gz")):
        stats[f.name] = StepStats("read")
        for d in reader.read(str(f), stats[f.name]):
            docs[d.id] = d
    return docs, stats


def test_same_seed_same_bytes_other_seed_other_bytes(demo, tmp_path):
    out, _ = demo
    generate(tmp_path / "a", pages=150, seed=11)
    generate(tmp_path / "b", pages=150, seed=12)
    names = sorted(p.name for p in out.iterdir())
    assert names == ["benchmark.jsonl", *[f"demo-{i:05d}.warc.gz" for i in range(4)], "truth.json"]
    assert all((tmp_path / "a" / n).read_bytes() == (out / n).read_bytes() for n in names)
    assert (tmp_path / "b" / names[1]).read_bytes() != (out / names[1]).read_bytes()


@pytest.mark.parametrize("cls", [readers.Warc, readers.FastWarc])
def test_warcs_read_back_with_the_truth_counts(demo, cls):
    out, truth = demo
    docs, stats = _read(cls(), out)
    for name, f in truth["files"].items():
        s = stats[name]
        assert s.docs_in - sum(s.dropped.values()) == f["html"]
        expected = {"read:warcinfo": 1, "read:request": f["responses"], "read:not_html": f["non_html"]}
        assert dict(s.dropped) == {k: v for k, v in expected.items() if v}
    html_pages = {pid: p for pid, p in truth["page"].items() if p["kind"] != "non_html"}
    assert {p["doc_id"] for p in html_pages.values()} == set(docs) and len(docs) == truth["html_responses"]
    for p in html_pages.values():
        d = docs[p["doc_id"]]
        assert (d.url, d.metadata["http_status"], d.metadata["charset"]) == (p["url"], str(p["status"]), p["charset"])


def test_every_kind_is_present_and_latin1_pages_decode(demo):
    out, truth = demo
    kinds = Counter(p["kind"] for p in truth["page"].values())
    assert set(kinds) == {"article", "near_duplicate", "exact_duplicate", "benchmark_quote", "spam",
                          "product_list", "error", "short", "non_html"}
    assert sum(kinds.values()) == truth["pages"] == 150
    docs, _ = _read(readers.Warc(), out)
    latin = [docs[p["doc_id"]] for p in truth["page"].values() if p["charset"] == "iso-8859-1"]
    assert latin and all("\ufffd" not in d.html for d in latin)
    assert any(c in d.html for d in latin for c in "çãõé")
    assert {p["lang"] for p in truth["page"].values() if p["kind"] == "article"} == {"en", "pt"}
    assert {p["status"] for p in truth["page"].values() if p["kind"] == "error"} & {404, 500, 503}


@pytest.fixture(scope="module")
def extracted(demo) -> dict[str, str]:
    out, truth = demo
    docs, _ = _read(readers.Warc(), out)
    ex = extract.Resiliparse()
    ex.setup()
    texts = {}
    for pid, p in truth["page"].items():
        if p["kind"] != "non_html":
            res = ex.apply(docs[p["doc_id"]])
            texts[pid] = res.text if hasattr(res, "text") else ""
    return texts


def test_duplicates_are_what_the_truth_says(demo, extracted):
    _, truth = demo
    assert truth["exact_duplicates"] and truth["near_duplicates"]
    for orig, *copies in truth["exact_duplicates"]:
        assert all(extracted[c] == extracted[orig] for c in copies)
    for orig, *copies in truth["near_duplicates"]:
        for c in copies:
            p = truth["page"][c]
            assert extracted[c] != extracted[orig] and 0.05 <= p["edit_frac"] <= 0.35 and 0.3 < p["jaccard5"] < 0.95


def test_planted_benchmark_questions_appear_only_where_planted(demo, extracted):
    out, truth = demo
    items = [json.loads(line) for line in (out / "benchmark.jsonl").read_text().splitlines()]
    assert len(items) == 30 and all(len(i["question"].split()) >= 13 for i in items)
    planted = set(truth["benchmark_planted"])
    assert 0 < len(planted) < len(items)
    for pid, text in extracted.items():
        found = {i for i, it in enumerate(items) if it["question"] in text}
        assert found == set(truth["benchmark_quotes"].get(pid, [])), pid


def test_articles_look_like_prose_and_spam_does_not(demo, extracted):
    _, truth = demo
    stop = {"en": {"the", "and", "of", "to"}, "pt": {"de", "que", "e", "o", "a"}}
    for pid, p in truth["page"].items():
        words = extracted.get(pid, "").split()
        if p["kind"] == "article":
            assert len(words) >= 100 and len(stop[p["lang"]] & {w.lower() for w in words}) >= 2
            assert 3 <= sum(map(len, words)) / len(words) <= 10
        if p["kind"] == "spam":  # keyword stuffing: one word pair covers a large share of the page
            grams = Counter(zip(words, words[1:], strict=False))
            top = grams.most_common(1)[0]
            assert top[1] * len(" ".join(top[0])) / len(" ".join(words)) > 0.1


def test_cli_generate_and_bad_options(tmp_path, capsys):
    from curate.cli.main import main

    assert main(["demo", "generate", "--out", str(tmp_path / "d"), "--pages", "40", "--seed", "1"]) == 0
    assert json.loads((tmp_path / "d/truth.json").read_text())["pages"] == 40
    assert main(["demo", "generate", "--out", str(tmp_path / "e"), "--pages", "5"]) == 2
    assert "--pages must be >= 20" in capsys.readouterr().err
