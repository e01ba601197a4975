"""curate report: a run of the web filters on real pages, then report.md and a self-contained report.html."""

from __future__ import annotations

import base64
import json
import re

import pytest

from curate import Pipeline, filters, readers
from curate.cli.main import main as cli
from curate.report.build import write_report


@pytest.fixture(scope="module")
def run_dir(shared, tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "out"
    pipeline = Pipeline(
        name="web_cc",
        reader=readers.Jsonl(source="web"),
        steps=[filters.Language(["en", "pt"], model_path=str(shared / "models/lid.176.ftz")),
               filters.GopherRepetition(), filters.C4(), filters.GopherQuality(), filters.FineWeb(), filters.Pii()],
    )
    path = shared / "text/web_cc/dolma_CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
    pipeline.run(inputs=str(path), output=str(out), progress=False)
    return out


def test_run_counts(run_dir):
    steps = {s["name"]: s for s in json.loads((run_dir / "stats.json").read_text())["steps"]}
    assert steps["read"]["docs_out"] == 697
    assert steps["language"]["docs_out"] == 253
    assert steps["pii"]["docs_out"] == steps["fineweb"]["docs_out"] == 112
    assert steps["gopher_repetition"]["docs_out"] == 199 and steps["c4"]["docs_out"] == 134
    assert steps["c4"]["extra"] == {"docs_rewritten": 134, "lines_javascript": 1, "lines_no_terminal_punct": 3424,
                                    "lines_too_few_words": 273}
    assert steps["gopher_quality"]["docs_out"] == 117
    assert steps["pii"]["extra"] == {"emails": 0, "ips": 0, "docs_redacted": 0}


def test_report_files_and_charts(run_dir, capsys):
    assert cli(["report", str(run_dir)]) == 0
    assert "report.html" in capsys.readouterr().out
    md = (run_dir / "report.md").read_text()
    assert "read 697 documents and kept 112 (16.1%)" in md
    assert "The largest cut is `language:unlisted`" in md
    for chart in ("funnel", "drops", "length", "lang_score", "languages"):
        png = run_dir / "report" / f"{chart}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"](report/{chart}.png)" in md
    assert "| c4:too_few_sentences |" in md
    # written whole (staged, then renamed): no temporary file is left beside the charts or the pages
    assert sorted(p.name for p in (run_dir / "report").iterdir()) == sorted(
        f"{c}.png" for c in ("funnel", "drops", "length", "lang_score", "languages"))
    assert not [p.name for p in run_dir.iterdir() if ".tmp" in p.name]
    html = (run_dir / "report.html").read_text()
    images = re.findall(r"src='data:image/png;base64,([^']+)'", html)
    assert len(images) == 5  # no quality_score column in this run, so no quality chart
    assert all(base64.b64decode(b)[:4] == b"\x89PNG" for b in images)
    assert "src='report/" not in html  # self-contained


def test_report_needs_a_finished_run(tmp_path, capsys):
    assert cli(["report", str(tmp_path)]) == 2
    assert "no stats.json" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError):
        write_report(str(tmp_path))


def test_corpus_figures_are_exact_counts_read_in_batches(run_dir, monkeypatch):
    """Lengths, median, languages and score bins equal a hand count over every kept row, also when the
    shards are read a few rows at a time (the report keeps counts, not a value per document)."""
    import statistics
    from collections import Counter

    import pyarrow.parquet as pq

    from curate.report import build

    rows = [r for p in sorted((run_dir / "data").glob("*.parquet")) for r in pq.read_table(p).to_pylist()]
    want_lengths = Counter(len(r["text"]) for r in rows)
    monkeypatch.setattr(build, "BATCH_ROWS", 7)  # many batches per shard, with a short last one
    corpus = build.load_corpus(str(run_dir))
    assert dict(zip(corpus.lengths.tolist(), corpus.length_counts.tolist(), strict=True)) == want_lengths
    assert corpus.docs == len(rows) == 112
    assert corpus.median_length() == statistics.median(len(r["text"]) for r in rows)
    assert corpus.langs == dict(Counter(r["lang"] for r in rows))
    scores = [r["lang_score"] for r in rows]
    assert corpus.lang_hist.tolist() == [sum(1 for s in scores if k / 40 <= s < (k + 1) / 40 or (k == 39 and s == 1))
                                         for k in range(40)]
    assert corpus.quality_hist.sum() == 0  # no quality_score column in this run
