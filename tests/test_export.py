"""`curate export RUN --format hf|jsonl|parquet` (issue 33): a run as a Hugging Face dataset folder, read back with
`datasets` (the Hub's own loader, which reads the card's `configs`) and compared with the run's shards read by pyarrow."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate.cli.main import main

PIPE = """
from curate import Pipeline, dedup, filters, readers, writers

pipeline = Pipeline(name="tiny", reader=readers.Jsonl(source="pt"),
                    steps=[dedup.Exact(), filters.C4(bad_words_languages=())], writer=writers.Parquet())
"""


@pytest.fixture(scope="module")
def run(shared, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("export")
    (tmp / "pipe.py").write_text(PIPE)
    rc = main(["run", str(tmp / "pipe.py"), "--input", str(shared / "text/pt/bosque_docs.jsonl"), "--output",
               str(tmp / "run"), "--workers", "1", "--no-progress"])
    assert rc == 0
    return tmp / "run"


def _rows(run: Path) -> list[dict]:
    return [r for f in sorted((run / "data").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_hf_export_loads_with_datasets_and_its_card_holds_the_funnel(run, tmp_path, capsys):
    datasets = pytest.importorskip("datasets", reason="datasets is not installed (pip install -e '.[formats]')")
    out = tmp_path / "hf"
    assert main(["export", str(run), "--out", str(out), "--input-license", "*/pt/*=CC-BY-SA-4.0"]) == 0
    assert "huggingface-cli upload" in capsys.readouterr().out
    ds = datasets.load_dataset(str(out), split="train", cache_dir=str(tmp_path / "cache"))  # the card's configs
    want = _rows(run)
    assert ds["id"] == [r["id"] for r in want] and ds["text"] == [r["text"] for r in want]
    card = (out / "README.md").read_text()
    stats = json.loads((run / "stats.json").read_text())
    for step in stats["steps"]:  # every step's funnel row, with the numbers of stats.json
        assert re.search(rf"\| {step['name']} \| {step['docs_in']:,} \| {step['docs_out']:,} \|", card)
    source = Path(json.loads((run / "manifest.json").read_text())["inputs"][0])
    records = sum(1 for line in source.read_text(encoding="utf-8").splitlines() if line.strip())
    # per input: its records (counted here from the file) and the documents kept of it (all of them: one input)
    assert f"| `{source}` | {records:,} | {len(want):,} | CC-BY-SA-4.0 |" in card
    assert card.startswith('---\nlicense: "other"\n')


def test_jsonl_and_parquet_exports_hold_the_same_documents(run, tmp_path):
    datasets = pytest.importorskip("datasets", reason="datasets is not installed (pip install -e '.[formats]')")
    want = _rows(run)
    assert main(["export", str(run), "--out", str(tmp_path / "j"), "--format", "jsonl"]) == 0
    got = datasets.load_dataset("json", data_files=str(tmp_path / "j" / "data" / "*.jsonl.gz"), split="train",
                                cache_dir=str(tmp_path / "cache"))
    assert got["text"] == [r["text"] for r in want]
    assert main(["export", str(run), "--out", str(tmp_path / "p"), "--format", "parquet"]) == 0
    for f in (run / "data").glob("*.parquet"):
        assert (tmp_path / "p" / "data" / f.name).read_bytes() == f.read_bytes()


def test_another_format_into_the_same_folder_is_refused_and_the_same_export_reruns(run, tmp_path, capsys):
    out = tmp_path / "x"
    assert main(["export", str(run), "--out", str(out)]) == 0
    first = {p.name: p.read_bytes() for p in (out / "data").iterdir()}
    assert main(["export", str(run), "--out", str(out), "--format", "jsonl"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds an export of another format" in err[0]
    assert main(["export", str(run), "--out", str(out)]) == 0
    assert {p.name: p.read_bytes() for p in (out / "data").iterdir()} == first


def test_a_damaged_shard_is_one_line_and_no_card(run, tmp_path, capsys):
    import shutil

    bad = tmp_path / "run"
    shutil.copytree(run, bad, ignore=shutil.ignore_patterns(".peneira.lock"))
    shard = sorted((bad / "data").glob("*.parquet"))[0]
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 3] ^= 0xFF  # inside a data page: its checksum no longer matches
    shard.write_bytes(bytes(raw))
    assert main(["export", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and shard.name in err[0] and "damaged" in err[0]
    assert not (tmp_path / "o" / "README.md").exists()


def test_not_a_run_is_one_line(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    assert main(["export", str(tmp_path / "d"), "--out", str(tmp_path / "o")]) == 2
    assert "no manifest.json" in capsys.readouterr().err


def test_a_licence_with_a_newline_adds_no_key_to_the_card_header(run, tmp_path):
    """Every value of the card's YAML header is one quoted scalar (issue 42.5): `--license` with a newline and
    `key: value` after it added that key to the header the Hub reads as metadata."""
    yaml = pytest.importorskip("yaml")
    evil = "mit\nextra_key: pwned\n---\n# not a heading"
    assert main(["export", str(run), "--out", str(tmp_path / "hf"), "--license", evil]) == 0
    _, header, body = (tmp_path / "hf" / "README.md").read_text().split("---\n", 2)
    meta = yaml.safe_load(header)
    assert sorted(meta) == ["configs", "license", "pretty_name"]
    assert meta["license"] == "mit\\x0aextra_key: pwned\\x0a---\\x0a# not a heading"  # its escapes, shown
    assert meta["configs"] == [{"config_name": "default", "data_files": [{"split": "train", "path": "data/*.parquet"}]}]
    assert body.startswith("\n# tiny\n")

