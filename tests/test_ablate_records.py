"""The documented ablations' records still describe the code (issue 47): each results.json carries the fingerprint of
every reader, step and writer of each variant's pipeline, the code they are made of and the trainer's code
(`train.ablate.depends`), and they must match what the current code computes. A change to a step, a threshold or
the trainer fails here, naming the record and the commands that regenerate it, without curating or training:
pipeline files are loaded and sources read, nothing else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from train.ablate import depends
from train.ablate.depends import stale, stale_message, trainer_code, variant_depends
from train.ablate.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
RECORDS = [  # spec, record, the page generated from it
    ("docs/ablation/spec.toml", "docs/ablation/results.json", "docs/ablation.md"),
    ("docs/ablation/recipes-spec.toml", "docs/ablation-recipes/results.json", "docs/ablation-recipes.md"),
    ("docs/ablation/selection-spec.toml", "docs/selection/results.json", "docs/selection.md"),
    ("docs/ablation/dedup-family-spec.toml", "docs/dedup-family/results.json", "docs/dedup-family.md"),
]


@pytest.mark.parametrize(("spec", "record", "doc"), RECORDS)
def test_the_documented_ablation_records_match_the_code(spec, record, doc, monkeypatch):
    monkeypatch.chdir(ROOT)  # the specs name their pipelines relative to the repository
    message = stale_message(spec, record, doc)
    assert not message, message


def _spec(tmp_path: Path, pipeline: Path):
    """A spec of one variant: the recorded `dedup` pipeline, copied so it can be changed."""
    shutil.copyfile(ROOT / "pipelines/ablation/dedup.py", pipeline)
    f = tmp_path / "spec.toml"
    f.write_text(f'''out = "{tmp_path / 'out'}"
[[input]]
name = "warc"
path = "unused/*.warc.gz"
reader = "warc"
[[variant]]
name = "dedup"
pipeline = "{pipeline}"
''')
    return load_spec(f)


def _record(spec) -> dict:
    """What a run of `spec` with the current code records (the parts results.json carries for the check)."""
    return {"variants": [{"name": v["name"], "curated": {"depends": variant_depends(spec, v)},
                          "runs": [{"trainer_code": trainer_code()}]} for v in spec.variants]}


def test_a_changed_threshold_makes_the_record_stale(tmp_path):
    spec = _spec(tmp_path, tmp_path / "dedup.py")
    record = json.loads(json.dumps(_record(spec)))  # as it reads back from results.json
    assert stale(record, spec) == []
    text = (tmp_path / "dedup.py").read_text()
    (tmp_path / "dedup.py").write_text(text.replace("filters.GopherQuality()", "filters.GopherQuality(min_words=40)"))
    (problem,) = stale(record, spec)
    assert problem.startswith("dedup: gopher_quality changed, its parameters or its code: ")
    assert "min_words=50" in problem and "min_words=40" in problem


def test_a_record_without_fingerprints_is_named_with_the_commands_that_regenerate_it(tmp_path):
    spec = _spec(tmp_path, tmp_path / "dedup.py")
    record = _record(spec)
    del record["variants"][0]["curated"]["depends"]
    (tmp_path / "results.json").write_text(json.dumps(record))
    assert stale(record, spec) == ["dedup: record has no fingerprints: regenerate"]
    message = stale_message(tmp_path / "spec.toml", tmp_path / "results.json", "docs/x.md")
    assert message.startswith(f"{tmp_path / 'results.json'} is stale")
    assert f"python -m train ablate --spec {tmp_path / 'spec.toml'} --report --docs docs/x.md" in message


@pytest.fixture
def source_copy(tmp_path, monkeypatch):
    """The project's source (its .py files) copied, and `depends` reading it there, so the library's own code can
    be changed for real without touching the repository."""
    copy = tmp_path / "src"
    for package in ("curate", "train"):
        shutil.copytree(ROOT / package, copy / package,
                        ignore=lambda d, names: [n for n in names if not (n.endswith(".py") or (Path(d) / n).is_dir())
                                                 or n == "__pycache__"])
    caches = (depends.module_digest, depends._tree, depends._imports)
    for c in caches:
        c.cache_clear()
    monkeypatch.setattr(depends, "SOURCE", copy)
    yield copy
    for c in caches:
        c.cache_clear()


def test_a_changed_library_step_or_trainer_makes_the_record_stale(tmp_path, source_copy):
    spec = _spec(tmp_path, tmp_path / "dedup.py")
    record = json.loads(json.dumps(_record(spec)))
    gopher = source_copy / "curate/filters/gopher.py"
    text = gopher.read_text()
    # comments, docstrings and blank lines are not code: the record still holds
    gopher.write_text(text.replace('"""', '"""Reworded. ', 1) + "\n\n# a comment\n")
    depends.module_digest.cache_clear()
    depends._tree.cache_clear()
    assert stale(record, spec) == []
    # the same file with one rule's comparison changed: both Gopher steps are made of it
    assert text.count("if n > self.max_words:") == 1
    gopher.write_text(text.replace("if n > self.max_words:", "if n >= self.max_words:"))
    loop = source_copy / "train/loop.py"
    loop.write_text(loop.read_text() + "\nSTEPS_CHANGED = 1\n")
    depends.module_digest.cache_clear()
    depends._tree.cache_clear()
    assert stale(record, spec) == [
        "dedup: gopher_repetition: its code changed: curate/filters/gopher.py",
        "dedup: gopher_quality: its code changed: curate/filters/gopher.py",
        "dedup: the trainer's or evaluation's code changed since its runs: train/loop.py",
    ]
