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
    # with the spaCy-like word tokens of 75b0fa5 (Gopher and FineWeb decisions checked against datatrove's there)
    assert steps["gopher_repetition"]["docs_out"] == 201 and steps["c4"]["docs_out"] == 135
    assert steps["c4"]["extra"] == {"docs_rewritten": 135, "lines_javascript": 1, "lines_no_terminal_punct": 3555,
                                    "lines_too_few_words": 273}
    assert steps["gopher_quality"]["docs_out"] == 116
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


def test_dedup_report_counts_planted_clusters_in_small_batches(tmp_path, monkeypatch, capsys):
    """Planted clusters (A: 3 documents, B: 2, four singletons), read two rows at a time: the counts and
    the example are those of the plant, and only MinHash drops of the shown cluster appear beside it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate.cli import dedup_report

    (tmp_path / "data").mkdir()
    (tmp_path / "rejected").mkdir()
    kept = [("s1", None, None), ("a1", "A", 3), ("s2", "s2", 1), ("b1", "B", 2), ("s3", None, None), ("s4", "s4", 1)]
    for k, part in enumerate((kept[:3], kept[3:])):
        pq.write_table(pa.table({"id": [r[0] for r in part], "text": [f"text of {r[0]}" for r in part],
                                 "dedup_cluster": pa.array([r[1] for r in part], pa.string()),
                                 "dedup_cluster_size": pa.array([r[2] for r in part], pa.int64())}),
                       tmp_path / "data" / f"part-{k:05d}-000.parquet")
    dropped = [("a3", "A", "minhash:duplicate"), ("b2", "B", "minhash:duplicate"), ("a0", "A", "exact:duplicate"),
               ("a2", "A", "minhash:duplicate")]
    pq.write_table(pa.table({"id": [r[0] for r in dropped], "text": [f"text of {r[0]}" for r in dropped],
                             "dedup_cluster": [r[1] for r in dropped], "drop_reason": [r[2] for r in dropped]}),
                   tmp_path / "rejected" / "stage0-part-00000-000.parquet")
    monkeypatch.setattr(dedup_report, "BATCH_ROWS", 2)

    assert cli(["dedup-report", str(tmp_path), "-n", "1", "--copies", "2"]) == 0
    out = capsys.readouterr().out
    assert "kept documents: 6   in clusters of 2+: 2   near-duplicates removed: 3" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[3:10]}
    assert rows["1"] == ["4", "4"] and rows["2"] == ["1", "2"] and rows["3-5"] == ["1", "3"] and rows["6-10"] == ["0", "0"]
    assert "cluster A (3 documents)" in out and "cluster B" not in out
    assert "kept a1" in out and "dropped a2" in out and "dropped a3" in out and "a0" not in out
    assert cli(["dedup-report", str(tmp_path), "-n", "2", "--copies", "1"]) == 0
    out = capsys.readouterr().out
    assert "cluster B (2 documents)" in out and "dropped a2" in out and "dropped a3" not in out


def test_character_shares_are_of_the_extracted_text_and_the_raw_input_labelled():
    """Issue 35.2: a WARC run's share of characters was of the raw HTML (2.1% where 42% of the text was kept)."""
    from curate.core.stats import StepStats
    from curate.report.build import Corpus, _tables, summary

    stats = [StepStats("read", docs_out=10, chars_out=10_000), StepStats("extract", docs_out=8, chars_out=2_000),
             StepStats("c4", docs_out=5, chars_out=500)]
    text = summary("w", stats)
    assert "with 25.0% of the extracted text's characters (5.0% of the raw input's, markup included)" in text
    funnel = next(rows for title, _, rows in _tables(stats, Corpus()) if title == "Funnel")
    assert [r[-1] for r in funnel] == ["-", "100.0%", "25.0%"]  # the reader's row is markup: no share of text
    assert funnel[0][3] == "10,000 (markup)"
    plain = [StepStats("read", docs_out=10, chars_out=1_000), StepStats("c4", docs_out=5, chars_out=300)]
    assert "with 30.0% of their characters." in summary("j", plain)


def test_inspect_rejected_filters_by_step_reason_or_glob(tmp_path, capsys):
    """Issue 35.9: `curate inspect --rejected --reason` shows only the drops asked for; the planted reasons are
    the reference."""
    from curate.core.step import Reject

    src = tmp_path / "in.jsonl"
    rows = [{"id": f"d{i}", "text": f"{'short' if i % 3 == 0 else 'longer text'} {i}"} for i in range(12)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def size(doc):
        return Reject("short") if doc.text.startswith("short") else True

    def parity(doc):
        return Reject("odd") if int(doc.text.split()[-1]) % 2 else True

    out = tmp_path / "out"
    Pipeline(name="r", reader=readers.Jsonl(), steps=[size, parity]).run(
        inputs=str(src), output=str(out), rejected=True, progress=False)
    capsys.readouterr()

    def shown(*extra):
        assert cli(["inspect", str(out), "--rejected", "-n", "20", *extra]) == 0
        return sorted(re.findall(r"── ([^#\s]+)\S* .*drop_reason=(\S+)", capsys.readouterr().out))

    short = [(f"d{i}", "size:short") for i in range(12) if i % 3 == 0]
    odd = [(f"d{i}", "parity:odd") for i in range(12) if i % 3 and i % 2]
    assert shown("--reason", "size") == sorted(short)
    assert shown("--reason", "parity:odd") == sorted(odd)
    assert shown("--reason", "*:*") == sorted(short + odd)
    # issue 46: a reason the run never dropped for is refused in one line with the closest one, not an empty listing
    assert cli(["inspect", str(out), "--rejected", "--reason", "parity:od"]) == 2
    err = capsys.readouterr().err
    assert "matches no reason this run dropped a document for; did you mean 'parity:odd'?" in err
    assert "its reasons: parity:odd, size:short" in err
    assert cli(["inspect", str(out), "--rejected", "--reason", "nothing"]) == 2
    assert "did you mean" not in capsys.readouterr().err
    assert cli(["inspect", str(out), "--reason", "size"]) == 2
    assert "add --rejected" in capsys.readouterr().err


def test_a_damaged_shard_of_a_finished_run_is_one_line_naming_it(tmp_path, capsys):
    """Issue 29, a case beyond its list (class 5): a kept shard whose bytes were damaged after the run (a copy gone
    wrong) made `mix`, `report` and `inspect` print pyarrow's "ZSTD decompression failed" traceback. Each now says
    which file and what to do, exit 2."""
    src = tmp_path / "in.jsonl"
    rng = __import__("random").Random(0)
    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 9))) for _ in range(5000)]
    src.write_text("".join(json.dumps({"text": " ".join(rng.choices(words, k=300))}) + "\n" for _ in range(300)))
    out = tmp_path / "run"
    Pipeline(name="d", reader=readers.Jsonl(), steps=[]).run(inputs=str(src), output=str(out), progress=False)
    shard = sorted((out / "data").glob("*.parquet"))[0]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = b"\0" * 64
    shard.write_bytes(bytes(data))
    capsys.readouterr()
    for argv in (["mix", "--source", f"web={out}:1.0", "--tokens", "10K", "--out", str(tmp_path / "mix"), "--no-progress"],
                 ["report", str(out)], ["inspect", str(out), "-n", "1000"]):
        assert cli(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(shard) in err[0] and "damaged" in err[0], (argv, err)


def test_every_damaged_byte_of_a_shard_we_wrote_reads_back_identical_or_fails(tmp_path):
    """Page checksums (issue 29, mechanism 5): without them, 35 of 124 damaged 64-byte spans of a run's shard read
    back as *other* data with no error. Reference: the shard's table as written."""
    from curate.io import fs

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": f"document number {i} " + "word " * 200}) + "\n" for i in range(300)))
    Pipeline(name="d", reader=readers.Jsonl(), steps=[]).run(inputs=str(src), output=str(tmp_path / "run"),
                                                             progress=False)
    shard = sorted((tmp_path / "run/data").glob("*.parquet"))[0]
    good, raw = fs.read_table(str(shard)), shard.read_bytes()
    damaged, silent = tmp_path / "d.parquet", []
    for off in range(0, len(raw) - 64, 97):
        damaged.write_bytes(raw[:off] + b"\0" * 64 + raw[off + 64:])
        try:
            back = fs.read_table(str(damaged))
        except Exception:
            continue  # loud: what the rule asks for
        if not back.equals(good):
            silent.append(off)
    assert not silent, f"damage at offsets {silent[:10]} read back as other data"


def test_funnel_chart_has_a_bar_per_stage_and_one_character_base():
    """Issue 46: with a second `read` (after MinHash) two bars shared one label, leaving 10 bars for 11 table rows;
    the characters chart labelled shares of changing bases (`url` 0.0%, `extract` 100% on a bar an eighth of
    `read`'s). The reference is the stats themselves: one bar per row, its length the row's count, its label the
    share of what the title names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from curate.core.stats import StepStats, format_table
    from curate.report.build import _funnel_figure

    stats = [StepStats("read", docs_out=600, chars_out=9_877_418), StepStats("url", docs_out=590, chars_out=4_303),
             StepStats("extract", docs_out=400, chars_out=1_200_000), StepStats("c4", docs_out=300, chars_out=900_000),
             StepStats("minhash", docs_out=250, chars_out=800_000), StepStats("read", docs_out=250, chars_out=800_000),
             StepStats("pii", docs_out=250, chars_out=799_000)]
    fig = _funnel_figure(plt, stats)
    docs_ax, chars_ax = fig.axes
    labels = [t.get_text() for t in docs_ax.get_yticklabels()]
    assert labels == ["read", "url", "extract", "c4", "minhash", "read (shards after minhash)", "pii"]
    assert [p.get_width() for p in docs_ax.patches] == [s.docs_out for s in stats]
    assert [t.get_text().strip() for t in docs_ax.texts] == [f"{100 * s.docs_out / 600:.1f}%" for s in stats]
    assert [p.get_width() for p in chars_ax.patches] == [0, 0, *[s.chars_out for s in stats[2:]]]
    assert [t.get_text().strip() for t in chars_ax.texts] == (
        ["markup, no text yet"] * 2 + [f"{100 * s.chars_out / 1_200_000:.1f}%" for s in stats[2:]])
    assert "share of the 1,200,000 extracted" in chars_ax.get_title()
    plt.close(fig)
    table = format_table(stats)
    assert "read (shards after minhash)" in table and "`read` counts the raw records" in table


@pytest.mark.parametrize("after", [False, True], ids=["global-last", "streaming-after-global"])
def test_stats_by_input_follows_each_file_through_a_global_step(shared, tmp_path, capsys, after):
    """Issue 46: every document is `source=web` and neither stats nor the report split by input. `curate stats
    --by-input` follows each input's documents through a global step (exact dedup across the two files); the
    reference is the planted ids, which name their file. A streaming step after the global one renames the shards
    (`-NNN` added): before, every input then showed 0 kept."""
    from curate import dedup
    from curate.report.inputs import by_input

    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    lines = (shared / "text/clean_en/botchan_gutenberg8868.txt").read_text(encoding="utf-8").splitlines()
    texts = list(dict.fromkeys(t.strip() for t in lines if len(t.split()) > 8))[:30]  # 30 different paragraphs
    files = {"a": (tmp_path / "x/a.jsonl", texts[:20]), "b": (tmp_path / "y/b.jsonl", texts[10:] + ["tiny"] * 3)}
    for name, (path, rows) in files.items():
        path.write_text("".join(json.dumps({"id": f"{name}-{i}", "text": t}) + "\n" for i, t in enumerate(rows)))

    def not_tiny(doc):
        return doc.text != "tiny"

    out = tmp_path / "out"
    def same(doc):
        return True

    steps = [not_tiny, dedup.Exact(), *([same] if after else [])]
    Pipeline(name="inputs", reader=readers.Jsonl(), steps=steps).run(
        inputs=[str(p) for p, _ in files.values()], output=str(out), progress=False)
    import pyarrow.parquet as pq

    ids = pq.read_table(out / "data", columns=["id"])["id"].to_pylist()
    table = by_input(str(out))["inputs"]
    for name, (path, rows) in files.items():
        r = table[str(path)]
        kept = sum(i.split("#")[0].startswith(f"{name}-") for i in ids)
        assert (r["records"], r["read"], r["first_stage"], r["kept"]) == (len(rows), len(rows), 20, kept)
    assert table[str(files["a"][0])]["kept"] + table[str(files["b"][0])]["kept"] == len(ids) == 30
    folders = by_input(str(out), folders=True)["inputs"]
    assert sorted(folders) == [str(tmp_path / "x"), str(tmp_path / "y")]
    assert cli(["stats", str(out), "--by-input"]) == 0
    shown = capsys.readouterr().out
    assert "kept documents per source:" in shown and "web" in shown and str(files["b"][0])[-40:] in shown


def test_report_funnel_png_has_the_bars_of_curate_stats(shared, tmp_path):
    """Issue 46: the funnel chart as a reader sees it. The bars are found in the report's PNG by their colour, and
    they must be one per row of `curate stats` (the `read` after a global step included), in order, each as long
    as its row's documents relative to the longest (to a pixel or two)."""
    import numpy as np
    from matplotlib.image import imread

    from curate import dedup
    from curate.report.build import write_report

    lines = (shared / "text/clean_en/botchan_gutenberg8868.txt").read_text(encoding="utf-8").splitlines()
    paras = list(dict.fromkeys(t.strip() for t in lines if len(t.split()) > 4))[:60]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": paras[i % 45]}) + "\n" for i in range(60)))

    def long_enough(doc):
        return len(doc.text.split()) > 8

    out = tmp_path / "out"
    Pipeline(name="png", reader=readers.Jsonl(), steps=[long_enough, dedup.Exact(), long_enough]).run(
        inputs=str(src), output=str(out), progress=False)
    write_report(str(out))
    steps = json.loads((out / "stats.json").read_text())["steps"]
    docs = [s["docs_out"] for s in steps]
    assert [s["name"] for s in steps].count("read") == 2 and min(docs) > 0
    img = imread(out / "report/funnel.png")[..., :3]
    left = img[:, : img.shape[1] // 2]
    blue = np.all(np.abs(left - np.array([0x4C, 0x72, 0xB0]) / 255) < 0.02, axis=-1)
    rows = np.flatnonzero(blue.any(axis=1))
    bands = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1)  # runs of rows holding a bar
    widths = [int(blue[b[len(b) // 2]].sum()) for b in bands]
    assert len(widths) == len(steps)
    assert all(abs(w / max(widths) - d / max(docs)) * max(widths) <= 2 for w, d in zip(widths, docs, strict=True))
