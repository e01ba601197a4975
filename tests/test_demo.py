"""The demo crawl generator: deterministic bytes, readable WARCs, and ground truth that matches the pages."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from curate import extract, readers
from curate.core.stats import StepStats
from curate.demo.crawl import FLAWS, generate


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("demo")
    return out, generate(out, pages=150, seed=11)


def _read(reader, out: Path) -> tuple[dict, dict[str, StepStats]]:
    docs, stats = {}, {}
    for f in sorted(out.glob("*.warc.gz")):
        stats[f.name] = StepStats("read")
        for d in reader.read(str(f), stats[f.name]):
            docs[d.metadata["warc_record_id"]] = d
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
    assert {p["record_id"] for p in html_pages.values()} == set(docs) and len(docs) == truth["html_responses"]
    # the WHATWG encoding standard reads a latin-1 label as windows-1252 (its superset), as browsers do
    whatwg = {"iso-8859-1": "cp1252"}
    for p in html_pages.values():
        d = docs[p["record_id"]]
        assert (d.url, d.metadata["http_status"]) == (p["url"], str(p["status"]))
        assert d.metadata["charset"] == whatwg.get(p["charset"], p["charset"]), (d.metadata["charset"], p["charset"])


def test_every_kind_is_present_and_latin1_pages_decode(demo):
    out, truth = demo
    kinds = Counter(p["kind"] for p in truth["page"].values())
    assert set(kinds) == {"article", "near_duplicate", "exact_duplicate", "benchmark_quote", "spam", "seo_prose",
                          "product_list", "error", "short", "non_html", *FLAWS}
    assert sum(kinds.values()) == truth["pages"] == 150
    docs, _ = _read(readers.Warc(), out)
    latin = [docs[p["record_id"]] for p in truth["page"].values() if p["charset"] == "iso-8859-1"]
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
            res = ex.apply(docs[p["record_id"]])
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


def test_seo_prose_passes_the_heuristics_and_the_demo_classifier_drops_it(demo, extracted, tmp_path):
    """The planted marketing prose is what only a quality classifier can remove: every heuristic rule keeps
    it, and the classifier trained on `write_quality_samples` scores it far below every article."""
    from curate import Document, Reject, filters, quality
    from curate.demo.crawl import write_quality_samples

    _, truth = demo
    seo = [extracted[pid] for pid, p in truth["page"].items() if p["kind"] == "seo_prose"]
    articles = [extracted[pid] for pid, p in truth["page"].items() if p["kind"] == "article"]
    assert len(seo) == len(truth["seo_prose"]) >= 5
    c4 = filters.C4()
    c4.setup()
    for step in (filters.GopherRepetition(), c4, filters.GopherQuality(), filters.FineWeb()):
        kept = [not isinstance(step.apply(Document(id="s", text=t, source="web", lang="en")), Reject) for t in seo]
        assert all(kept), step.name
    pos, neg = write_quality_samples(tmp_path, per_class=120, seed=11)
    result = quality.train(str(pos), str(neg), str(tmp_path / "q.bin"), quality.TrainConfig(bucket=20_000))
    model = quality.QualityModel(str(tmp_path / "q.bin"))
    s_seo, s_art = model.score(seo), model.score(articles)
    assert s_seo.max() < 0.5 < s_art.min()
    assert s_art.min() - s_seo.max() > 0.5, (s_seo.max(), s_art.min())  # a margin, not a tie around 0.5
    assert result.epochs > 5  # a few hundred examples: trained long enough to leave 0.5


def test_each_planted_flaw_is_removed_by_its_step_and_by_no_earlier_one(demo, tmp_path, shared, monkeypatch):
    """Issue 35.8: every step of pipelines/demo.py removes something. The pages planted for a step pass every step
    before it and are dropped by it with the planted reason; contact pages are kept with the e-mail redacted.
    The demo pipeline's own steps run (all but the model, the index and the global steps), on its extractor."""
    import runpy

    from curate import Reject
    from curate.cli.main import main as cli

    monkeypatch.setenv("PENEIRA_CACHE", str(tmp_path / "cache"))  # the language model from the shared data only
    assert cli(["models", "fetch", "lid", "--from", str(shared / "models/lid.176.ftz")]) == 0
    root = Path(__file__).resolve().parents[1]
    steps = runpy.run_path(str(root / "pipelines/demo.py"))["pipeline"].steps
    names = [s.name for s in steps]
    steps = steps[: names.index("quality")]
    for s in steps:
        s.setup()
    out, truth = demo
    docs, _ = _read(readers.Warc(), out)
    seen = Counter()
    for p in truth["page"].values():
        if p["kind"] not in FLAWS:
            continue
        doc, fate = docs[p["record_id"]], None
        for step in steps:
            res = step.apply(doc)
            if isinstance(res, Reject) or res is None:
                fate = f"{step.name}:{res.rule if res else 'rejected'}"
                break
            doc = res
        seen[p["kind"]] += 1
        if p["kind"] == "contact":
            assert fate is None and "newsroom@" not in doc.text and "Send tips and corrections to " in doc.text, p["url"]
        else:
            assert fate == FLAWS[p["kind"]], (p["kind"], p["url"], fate)
    assert set(seen) == set(FLAWS) and min(seen.values()) >= 1
