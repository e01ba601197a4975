"""Issue 46: a drop names its rule *and* its numbers. Every rule that compares a measure with a threshold returns
`Reject(rule, measured, limit)`; the rejected shards carry `drop_measured` / `drop_limit`, the stats each reason's
limit, `curate inspect --rejected` shows them. References: the step's own parameters (the limit), the document's own
language score (the measure of `language:low_score`), and the direction of each rule (the measure is past its limit)."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

from curate import Pipeline, extract, filters, readers
from curate.cli.main import main as cli

# rule -> True when the rule drops a document whose measure is *below* the limit (a minimum), False for a maximum
MINIMUM = {"language:low_score": True, "gopher_quality:too_few_words": True, "gopher_quality:alpha_words": True,
           "gopher_quality:stop_words": True, "gopher_quality:short_mean_word_length": True,
           "gopher_quality:long_mean_word_length": False, "gopher_quality:bullet_lines": False,
           "gopher_quality:ellipsis_lines": False, "gopher_quality:hash_ratio": False,
           "fineweb:punct_lines": True, "fineweb:short_lines": False, "fineweb:dup_line_chars": False,
           "fineweb:newline_ratio": False, "extract:empty": True}


@pytest.fixture
def run(shared, tmp_path, monkeypatch):
    monkeypatch.setenv("PENEIRA_LID_MODEL", str(shared / "models/lid.176.ftz"))
    steps = [extract.Main(min_chars=1500), filters.Language(["en"], threshold=0.8), filters.GopherQuality(min_words=300),
             filters.FineWeb(min_punct_line_ratio=0.2)]
    warcs = [str(shared / "warc/wget/dolma_sample-0000.warc.gz"), str(shared / "warc/wget/dolma_sample-0001.warc.gz")]
    Pipeline(name="ev", reader=readers.Warc(), steps=steps).run(inputs=warcs, output=str(tmp_path / "out"),
                                                                 rejected=True, workers=1, progress=False)
    return tmp_path / "out"


def test_every_measured_drop_carries_its_value_and_limit(run, capsys):
    rows = pq.read_table(run / "rejected").to_pylist()
    limits = {"language:low_score": 0.8, "gopher_quality:too_few_words": 300, "fineweb:punct_lines": 0.2,
              "extract:empty": 1500}
    seen = set()
    for r in rows:
        rule = r["drop_reason"]
        if rule not in MINIMUM:
            assert r["drop_limit"] is None, rule  # a rule without a threshold claims none
            continue
        seen.add(rule)
        m, lim = r["drop_measured"], r["drop_limit"]
        assert lim is not None and (m < lim if MINIMUM[rule] else m > lim), (rule, m, lim)
        if rule in limits:
            assert lim == limits[rule]
        if rule == "language:low_score":
            assert m == pytest.approx(r["lang_score"])  # the score the model gave this page
        if rule == "extract:empty":
            assert json.loads(r["metadata"])["html_chars"] > 0 and len(r["text"]) < 1500
    assert {"language:low_score", "gopher_quality:too_few_words", "extract:empty"} <= seen
    stats = {s["name"]: s for s in json.loads((run / "stats.json").read_text())["steps"]}
    assert stats["language"]["limits"] == {"language:low_score": 0.8}
    assert stats["gopher_quality"]["limits"]["gopher_quality:too_few_words"] == 300

    assert cli(["inspect", str(run), "--rejected", "--reason", "language:low_score", "-n", "2"]) == 0
    out = capsys.readouterr().out
    shown = re.findall(r"measured=([\d.e-]+) \(limit 0\.8\)", out)
    assert len(shown) == 2 and all(float(x) < 0.8 for x in shown)
    assert cli(["inspect", str(run), "--rejected", "--reason", "extract:empty", "-n", "1"]) == 0
    assert re.search(r"measured=\d+ \(limit 1500\)  http_status=\d+  html_chars=\d+", capsys.readouterr().out)
