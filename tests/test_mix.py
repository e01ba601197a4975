"""curate mix on real text: planned vs actual tokens, repetition, determinism, manifest, bad input."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _tokdata import PT, WEB, sources

from curate.cli.main import main as cli
from curate.core.errors import UsageError
from curate.run.executors.local import LocalExecutor
from curate.tokens.mix import mix, parse_count, parse_source


def _mix(srcs, out, **kw):
    return mix(srcs, out=out, executor=LocalExecutor(1, progress=False), **kw)


@pytest.fixture(scope="module")
def mixed(shared, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mix")
    srcs = sources(shared, tmp)
    return srcs, tmp, _mix(srcs, tmp / "mix", tokens=500_000, seed=0)


def _rows(out):
    files = sorted((out / "data").glob("*.parquet"))
    return [r for f in files for r in pq.read_table(f).to_pylist()]


def test_actual_within_one_percent_of_plan(mixed, shared):
    srcs, tmp, m = mixed
    with gzip.open(shared / WEB, "rt", encoding="utf-8") as f:
        web_chars = sum(len(json.loads(line)["text"]) for line in f)
    assert m["plan"]["sources"]["web"]["available_tokens"] == round(web_chars / 4)
    assert m["plan"]["planned_tokens"] == 500_000
    for name, w in (("web", 0.5), ("wiki", 0.3), ("pt", 0.2)):
        planned = m["plan"]["sources"][name]["target_tokens"]
        assert planned == round(500_000 * w)
        assert abs(m["actual"][name]["tokens"] - planned) <= 0.01 * planned
    # pt has ~68.6K tokens for a 100K share: every document once, some twice, and the plan says 1.46 epochs
    assert m["plan"]["sources"]["pt"]["epochs"] == pytest.approx(
        100_000 / m["plan"]["sources"]["pt"]["available_tokens"], rel=1e-4
    )
    rows = _rows(tmp / "mix")
    by_src = {s: [r for r in rows if r["source"] == s] for s in ("web", "wiki", "pt")}
    assert {s: len(v) for s, v in by_src.items()} == {s: m["actual"][s]["docs"] for s in by_src}
    for s, v in by_src.items():  # the shards hold exactly the counted characters
        assert sum(len(r["text"]) for r in v) == m["actual"][s]["chars"]
        assert (
            abs(sum(len(r["text"]) for r in v) / 4 - m["plan"]["sources"][s]["target_tokens"])
            <= 0.01 * m["plan"]["sources"][s]["target_tokens"]
        )
    assert len({r["id"] for r in rows}) == len(rows)  # copies get #eN ids
    pt_epochs = [r["mix_epoch"] for r in by_src["pt"]]
    assert pt_epochs.count(0) == 486 and 0 < pt_epochs.count(1) < 486
    assert all(r["id"].endswith("#e1") for r in by_src["pt"] if r["mix_epoch"] == 1)


def test_manifest_records_inputs_and_hashes(mixed):
    srcs, tmp, m = mixed
    assert [i["source"] for i in m["inputs"]] == ["web", "wiki", "pt"]
    for i in m["inputs"]:
        assert i["sha256"] == hashlib.sha256(Path(i["path"]).read_bytes()).hexdigest()
    assert m["inputs"][2]["docs"] == 486 and m["inputs"][1]["docs"] == 62
    on_disk = json.loads((tmp / "mix" / "manifest.json").read_text())
    assert on_disk["actual"] == m["actual"] and on_disk["token_measure"] == "characters / 4.0"


def test_deterministic_from_seed(mixed):
    srcs, tmp, m = mixed
    again = _mix(srcs, tmp / "again", tokens=500_000, seed=0)
    assert [r["id"] for r in _rows(tmp / "again")] == [r["id"] for r in _rows(tmp / "mix")]
    assert again["actual"] == m["actual"]
    other = _mix(srcs, tmp / "other", tokens=500_000, seed=1)
    assert {r["id"] for r in _rows(tmp / "other")} != {r["id"] for r in _rows(tmp / "mix")}
    assert abs(other["actual"]["web"]["tokens"] - 250_000) <= 2_500


def test_max_epochs_caps_and_keeps_weights(mixed, capsys):
    srcs, tmp, m = mixed
    pt_avail = m["plan"]["sources"]["pt"]["available_tokens"]
    capped = _mix(srcs, tmp / "capped", tokens=1_000_000, max_epochs=2)
    p = capped["plan"]
    assert p["sources"]["pt"]["limited_by_max_epochs"] and not p["sources"]["web"]["limited_by_max_epochs"]
    assert p["planned_tokens"] == pytest.approx(pt_avail * 2 / 0.2, abs=2)
    assert p["sources"]["pt"]["epochs"] == pytest.approx(2.0)
    pt_rows = [r for r in _rows(tmp / "capped") if r["source"] == "pt"]
    assert len(pt_rows) == 2 * 486  # exactly two passes
    for name in ("web", "wiki"):
        assert (
            abs(capped["actual"][name]["tokens"] - p["sources"][name]["target_tokens"])
            <= 0.01 * p["sources"][name]["target_tokens"]
        )


def test_cli_prints_plan_and_rejects_bad_input(shared, tmp_path, capsys):
    rc = cli(
        [
            "mix",
            "--source",
            f"pt={shared / PT}:1",
            "--tokens",
            "50K",
            "--out",
            str(tmp_path / "m"),
            "--workers",
            "1",
            "--no-progress",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "planned" in out and "pt " in out
    assert cli(["mix", "--source", f"pt={shared / PT}:lots", "--tokens", "1M", "--out", str(tmp_path / "x")]) == 2
    assert "weight 'lots' is not a number" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # refused before any work
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(UsageError, match=r"\['none'\] have no text"):
        _mix({"pt": (str(shared / PT), 0.5), "none": (str(empty), 0.5)}, tmp_path / "e", tokens=1000)
    assert not list((tmp_path / "e").glob("data/*.parquet"))
    with pytest.raises(UsageError, match="not an earlier `curate mix` output"):
        _mix({"pt": (str(shared / PT), 1.0)}, shared.parent / "data" / "text", tokens=1000)


@pytest.mark.parametrize(
    "spec", ["web", "web=out/web", "web=out/web:", "web=out:-1", "web=out:nan", "=out:1", "a b=x:1"]
)
def test_parse_source_rejects(spec):
    with pytest.raises(UsageError):
        parse_source(spec)


def test_parse_source_and_count():
    assert parse_source("web=s3://b/x:0.6").path == "s3://b/x"
    assert parse_source("web=out/web:6").weight == 6.0
    assert [parse_count(s) for s in ("50M", "1.5B", "200_000", "2e3", "7k")] == [
        50_000_000,
        1_500_000_000,
        200_000,
        2000,
        7000,
    ]
    with pytest.raises(UsageError):
        parse_count("many")


def test_interrupted_mix_reruns_into_the_same_output(shared, tmp_path, monkeypatch):
    """A mix killed while writing shards leaves data/ without a finished manifest; its rerun must still accept
    the directory, replace the partial shards and end with only its own."""
    import curate.tokens.mix as mix_mod

    def killed(item):
        raise KeyboardInterrupt  # the process dies in the write phase

    out = tmp_path / "m"
    src = {"pt": (str(shared / PT), 1.0)}
    monkeypatch.setattr(mix_mod, "_write", killed)
    with pytest.raises(KeyboardInterrupt):
        _mix(src, out, tokens=20_000)
    assert json.loads((out / "manifest.json").read_text()) == {"kind": "mix", "complete": False}
    stale = out / "data" / "part-00099-000.parquet"
    stale.write_bytes(b"partial")
    (out / "data" / ".part-00000-000.parquet.tmp.123").write_bytes(b"partial")
    monkeypatch.undo()
    m = _mix(src, out, tokens=20_000)
    assert sorted(p.name for p in (out / "data").iterdir()) == [Path(o).name for o in m["outputs"]]
    assert json.loads((out / "manifest.json").read_text())["actual"] == m["actual"]


@pytest.mark.parametrize("command", ["mix", "tokenize"])
@pytest.mark.parametrize("workers", ["0", "-2"])
def test_cli_refuses_workers_below_one(tmp_path, capsys, command, workers):
    """`--workers 0` is an error, as in `curate run`, not a silent "all CPUs"."""
    args = {"mix": ["mix", "--source", f"a={tmp_path}:1", "--tokens", "1K"],
            "tokenize": ["tokenize", str(tmp_path), "--tokenizer", str(tmp_path / "tok.json")]}[command]
    assert cli([*args, "--out", str(tmp_path / "o"), "--workers", workers]) == 2
    err = capsys.readouterr().err
    assert f"--workers must be >= 1, got {workers}" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
