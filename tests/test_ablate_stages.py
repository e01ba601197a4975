"""The ablation's machinery on its own: the token budget rule, the lock per stage, the steps a budget allows, the
fingerprint `--verify` compares, and the per-set byte limits of the evaluation."""

from __future__ import annotations

import hashlib
import multiprocessing
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from train.ablate.spec import Spec, budget, mark, read_mark, stage_busy, stage_lock, stage_state
from train.ablate.stages import eval_plan, fingerprint, train_config, trainable
from train.evaluate.cli import apply_max_bytes
from train.evaluate.heldout import HeldoutSet


def spec(tokens="auto", max_epochs=1.0, **kw) -> Spec:
    return Spec(out=Path("unused"), inputs=[], variants=[], tokens=tokens, max_epochs=max_epochs, **kw)


UNIQUE = {"raw": 2_000_000, "filtered": 150_000, "classified": 98_000}


def test_auto_budget_is_the_smallest_variants_unique_tokens_times_max_epochs():
    assert budget(spec(), UNIQUE) == 98_000
    assert budget(spec(max_epochs=2), UNIQUE) == 196_000
    assert budget(spec(max_epochs=0.5), UNIQUE) == 49_000


def test_a_budget_that_repeats_a_variant_beyond_max_epochs_is_refused_with_the_variants_named():
    assert budget(spec("98K"), UNIQUE) == 98_000  # exactly one epoch of the smallest: allowed
    with pytest.raises(ValueError, match=r"classified 98,000 unique tokens \(1\.53 epochs\)") as e:
        budget(spec("150K"), UNIQUE)
    assert "filtered" not in str(e.value)  # 150K is exactly one epoch of it
    with pytest.raises(ValueError, match=r"filtered 150,000 unique tokens \(2\.00 epochs\)"):
        budget(spec("300K", max_epochs=1.9), UNIQUE)
    assert budget(spec("300K", max_epochs=4), UNIQUE) == 300_000
    with pytest.raises(ValueError, match="kept no text"):
        budget(spec(), {**UNIQUE, "empty": 0})


def test_steps_follow_the_smallest_mix_and_more_training_than_it_holds_is_refused(tmp_path):
    train = {"config": "tiny", "seq_len": 256, "batch_tokens": 512, "micro_batch": 2}
    s = spec(train=train)
    cfg = train_config(s, tmp_path, tmp_path / "run", 0, 98_552)
    # 98,551 tokens after the first make 384 whole windows of 256 (+1 shared): 98,304 tokens, 192 steps of 512
    assert trainable(98_552, 256) == 98_304 and cfg.steps == 192 and cfg.steps * cfg.batch_tokens <= 98_551
    assert train_config(s, tmp_path, tmp_path / "run", 0, 98_305).steps == 192
    assert train_config(s, tmp_path, tmp_path / "run", 0, 98_304).steps == 191  # 383 windows: one step less
    ok = spec(train={**train, "steps": 192})
    assert train_config(ok, tmp_path, tmp_path / "run", 0, 98_552).steps == 192
    with pytest.raises(ValueError, match="trains on more than"):
        train_config(spec(train={**train, "steps": 193}), tmp_path, tmp_path / "run", 0, 98_552)
    with pytest.raises(ValueError, match="less than one batch"):
        train_config(s, tmp_path, tmp_path / "run", 0, 300)


def _build(stage: str, holding, release, result: str) -> None:
    """One process's attempt at a stage: skip it when it is done, else build it (slowly: until `release`)."""
    path = Path(stage)
    with stage_lock(path):
        if stage_state(path, "k") == "done":
            Path(result).write_text("skipped")
            return
        path.mkdir(parents=True)
        (path / "built").open("a").write("x")
        holding.set()
        release.wait(60)
        mark(path, "k", True)
        Path(result).write_text("built")


def test_the_stage_lock_lets_one_process_build_a_stage_and_the_other_find_it_done(tmp_path):
    ctx = multiprocessing.get_context("fork")
    holding, release = ctx.Event(), ctx.Event()
    stage = tmp_path / "variants" / "v" / "mix"
    a = ctx.Process(target=_build, args=(str(stage), holding, release, str(tmp_path / "a")))
    a.start()
    assert holding.wait(60)  # A holds the lock, in the middle of building
    assert stage_busy(stage)  # what a sequential run consults to train another run first
    go = ctx.Event()
    go.set()  # B, if it builds, does not wait
    b = ctx.Process(target=_build, args=(str(stage), ctx.Event(), go, str(tmp_path / "b")))
    b.start()
    b.join(1.0)
    assert b.is_alive()  # B waits for the lock instead of building beside A (without it, B deletes A's half)
    release.set()
    a.join(60)
    b.join(60)
    assert a.exitcode == 0 and b.exitcode == 0
    assert (tmp_path / "a").read_text() == "built" and (tmp_path / "b").read_text() == "skipped"
    assert (stage / "built").read_text() == "x" and read_mark(stage)["done"]
    assert not stage_busy(stage)


def test_fingerprint_counts_and_samples_ids_as_a_brute_force_does(tmp_path):
    ids = [f"doc-{i}" for i in range(250)]
    texts = ["é" * (i % 7) + "text" for i in range(250)]
    (tmp_path / "data").mkdir()
    for part in range(3):  # three shards, in an order that is not the ids' order
        rows = list(range(part, 250, 3))
        pq.write_table(pa.table({"id": [ids[i] for i in rows], "text": [texts[i] for i in rows]}),
                       tmp_path / "data" / f"part-{part}.parquet")
    f = fingerprint(tmp_path)
    h = {i: int.from_bytes(hashlib.sha256(i.encode()).digest()[:8], "big") for i in ids}
    assert f["docs_written"] == 250 and f["chars_written"] == sum(len(t) for t in texts)
    assert f["ids_digest"] == f"{sum(h.values()) % (1 << 64):016x}"
    assert f["id_sample"] == sorted(ids, key=h.get)[:20]


def test_max_bytes_is_one_number_or_a_table_by_set_name():
    heldout = ["wiki=a.txt", "pt=b.jsonl", "web=c.jsonl"]
    plan = eval_plan(spec(eval={"heldout": heldout, "max_bytes": {"pt": 300_000, "wiki": 1000}}))
    assert [(h.name, h.max_bytes) for h in plan.heldout] == [("wiki", 1000), ("pt", 300_000), ("web", None)]
    plan = eval_plan(spec(eval={"heldout": heldout, "max_bytes": 5000}))
    assert [h.max_bytes for h in plan.heldout] == [5000, 5000, 5000]
    with pytest.raises(ValueError, match=r"\['book'\]"):
        eval_plan(spec(eval={"heldout": heldout, "max_bytes": {"book": 1}}))
    sets = [HeldoutSet("wiki", "a"), HeldoutSet("pt", "b")]
    apply_max_bytes(sets, ["100000", "pt=3e5"])
    assert [h.max_bytes for h in sets] == [100_000, 300_000]
    with pytest.raises(ValueError, match="NAME=N"):
        apply_max_bytes(sets, ["pt=lots"])


def _results(values: dict[str, list[float]]) -> dict:
    runs = lambda xs: [{"seed": i, "tokens_seen": 100, "epochs": 0.5,  # noqa: E731
                        "eval": {"step": 1, "tokens": 100, "heldout": [{"set": "wiki", "bits_per_byte": x}], "tasks": []}}
                       for i, x in enumerate(xs)]
    return {"variants": [{"name": n, "curated": {}, "mix": {}, "runs": runs(xs)} for n, xs in values.items()]}


def test_gap_table_states_each_steps_gap_with_the_seed_spread():
    from train.ablate.report import gap_table

    table = gap_table(_results({"dedup": [3.0, 3.2, 3.1], "quality": [3.3, 3.5]}), [("dedup", "quality")])
    # gap = 3.1 - 3.4 = -0.3; sds 0.1 and 0.1414; standard error sqrt(0.01/3 + 0.02/2) = 0.1155; ranges apart
    assert "| dedup → quality | 3, 2 | wiki | -0.3000 | 0.1414 | -2.1 | -2.6 | no |" in table
    table = gap_table(_results({"dedup": [3.0, 3.4], "quality": [3.3, 3.5]}), [("dedup", "quality")])
    assert table.endswith("| wiki | -0.2000 | 0.2828 | -0.7 | -0.9 | yes |")


def test_docs_tables_are_replaced_between_their_markers(tmp_path):
    from train.ablate.report import write_docs

    doc = tmp_path / "ablation.md"
    doc.write_text("intro\n<!-- ablate:gaps -->\nold numbers\n<!-- /ablate:gaps -->\nafter\n")
    s = spec()
    s.out = tmp_path / "out"
    s.out.mkdir()
    (s.out / "results.json").write_text("{}")
    results = _results({"extract": [4.0, 4.2], "heuristics": [3.9, 3.95]})
    write_docs(s, results, doc)
    text = doc.read_text()
    assert "old numbers" not in text and text.startswith("intro\n<!-- ablate:gaps -->\n| step |")
    assert "| extract → heuristics | 2, 2 | wiki | +0.1750 |" in text and text.endswith("<!-- /ablate:gaps -->\nafter\n")
    assert (tmp_path / "ablation" / "results.json").read_text() == "{}"
    doc.write_text("<!-- ablate:results -->\n<!-- /ablate:results -->\n")  # an empty block is filled too
    write_docs(s, results, doc)
    assert "| heuristics | 0 / 0 |" in doc.read_text() and doc.read_text().endswith("|\n<!-- /ablate:results -->\n")


def test_the_classifier_card_is_read_where_the_model_lives_even_on_a_store():
    """`curate quality train` writes the card beside the model through curate.io.fs, so a model on a store has its
    card there; the report reads it the same way (it read a local path, and a store's card was silently absent)."""
    import json

    from curate.io import fs
    from train.ablate.report import classifier_card

    model = "memory://ablate-card/quality.bin"
    fs.atomic_write_text(f"{model}.json", json.dumps({"heldout_metrics": {"roc_auc": 0.91, "average_precision": 0.88},
                                                      "heldout_examples": 40, "config": {"chunk_words": 100}}))
    card = classifier_card({"env": {"PENEIRA_QUALITY_MODEL": model}})
    assert card == {"model": model, "roc_auc": 0.91, "average_precision": 0.88, "heldout_examples": 40,
                    "chunk_words": 100}
    assert classifier_card({"env": {"PENEIRA_QUALITY_MODEL": "memory://ablate-card/none.bin"}}) is None
    assert classifier_card({}) is None


JSONL_PIPELINE = '''from curate import Pipeline, filters, readers, writers
pipeline = Pipeline(name="plain", reader=readers.Jsonl(), steps=[filters.GopherQuality()], writer=writers.Parquet())
'''


def _small_spec(tmp_path: Path, shared: Path, out: Path) -> Path:
    """One variant over ten JSONL documents: curation in about a second, no training."""
    (tmp_path / "plain.py").write_text(JSONL_PIPELINE)
    f = tmp_path / "spec.toml"
    f.write_text(f'''out = "{out}"
[[input]]
name = "cc"
path = "{shared / 'text/web_cc/dolma_ccnet_cc_en_head-0174.jsonl.gz'}"
reader = "jsonl"
[[variant]]
name = "plain"
pipeline = "{tmp_path / 'plain.py'}"
[eval]
heldout = ["book={shared / 'text/clean_en/botchan_gutenberg8868.txt'}"]
''')
    return f


def test_verify_removes_what_it_made_and_nothing_else(tmp_path, shared, capsys):
    """--verify curates into OUT/verify and removes it, and OUT with it when OUT did not exist before (a fresh
    clone verifying a record has no run folder); an OUT that held something keeps it."""
    import json

    from train.ablate.stages import main

    record = tmp_path / "record.json"
    record.write_text(json.dumps({"variants": [{"name": "plain", "curated": {
        "docs_read": 10, "docs_written": -1, "chars_written": 0, "ids_digest": "0", "id_sample": [], "dropped": {}}}]}))
    out = tmp_path / "runs" / "abl"
    spec_file = _small_spec(tmp_path, shared, out)
    assert main(["--spec", str(spec_file), "--verify", str(record)]) == 1
    said = capsys.readouterr().out
    assert "plain: docs_written -1 recorded" in said and "plain: docs_read" not in said  # it did curate
    assert not (tmp_path / "runs").exists()
    out.mkdir(parents=True)
    (out / "mine.txt").write_text("kept")
    assert main(["--spec", str(spec_file), "--verify", str(record)]) == 1
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]


def _finished_run(out: Path, name: str, tasks: list) -> None:
    """What a trained and evaluated run leaves for the report: its curve and final evaluation."""
    import json

    d = out / "variants" / name / "seed0"
    d.mkdir(parents=True)
    (d / "curve.jsonl").write_text(json.dumps({"step": 4, "tokens": 2048, "heldout": {"book": 2.5}}) + "\n")
    (d / "eval.json").write_text(json.dumps({"step": 4, "tokens": 2048, "tasks": tasks,
                                             "heldout": [{"set": "book", "bits_per_byte": 2.5}]}))


def test_ablate_says_only_what_it_wrote(tmp_path, shared, capsys):
    """Without tasks in the spec no tasks.png is written, none is named, and one an earlier spec left in OUT is
    removed rather than passed off as these results'; before any run finished, no plot at all."""
    from train.ablate.stages import main

    out = tmp_path / "abl"
    spec_file = _small_spec(tmp_path, shared, out)
    out.mkdir()
    assert main(["--spec", str(spec_file), "--report"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"wrote {out}/results.json, results.md (1 variants)"
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "results.md"]
    _finished_run(out, "plain", tasks=[])
    (out / "tasks.png").write_bytes(b"an earlier spec's plot")
    assert main(["--spec", str(spec_file), "--report"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"wrote {out}/results.json, results.md, curves.png (1 variants)"
    assert sorted(p.name for p in out.iterdir()) == ["curves.png", "results.json", "results.md", "variants"]


def test_a_done_stage_whose_folder_was_deleted_by_hand_is_made_again(tmp_path):
    stage = tmp_path / "variants" / "v" / "mix"
    stage.mkdir(parents=True)
    mark(stage, "k", True, tokens=5)
    assert stage_state(stage, "k") == "done"
    shutil.rmtree(stage)  # the user removes the folder and leaves the mark beside it
    assert stage_state(stage, "k") == "new"  # before: "done", and the next stage failed on a missing manifest
    assert not list(stage.parent.glob(".mix.ablate.json"))


def _gone(pid: int) -> bool:
    try:
        state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:"))
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "Z" in state.split()[1]  # a zombie has stopped running; only its exit status waits to be read


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_the_training_processes_of_jobs_die_with_a_killed_ablate():
    driver = subprocess.Popen([sys.executable, "-c", (
        "import os, time\n"
        "from train.ablate.stages import training_pool\n"
        "pool = training_pool(1)\n"
        "print(pool.submit(os.getpid).result(), flush=True)\n"
        "time.sleep(120)\n")], stdout=subprocess.PIPE, text=True)
    try:
        worker = int(driver.stdout.readline())
        assert not _gone(worker)
        driver.send_signal(signal.SIGKILL)  # no handler, no pool shutdown: only the kernel can end the worker
        driver.wait(30)
        deadline = time.monotonic() + 30
        while not _gone(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(worker)  # before: it went on training and writing into its run folder
    finally:
        driver.kill()


def test_languages_count_each_languages_characters_in_the_curation_and_the_mix(tmp_path):
    """The mix keeps whole documents: what it left out, per language, against a count by hand of planted texts."""
    from train.ablate.report import language_table, languages

    docs = [("en", "a" * 50), ("pt", "ção" * 7), ("en", "b" * 30), (None, "x"), ("pt", "olá")]
    mixed = [docs[0], docs[1], docs[3]]  # the mix dropped an English and a Portuguese document
    base = tmp_path / "v"
    for folder, rows in (("curated", docs), ("mix", mixed)):
        (base / folder / "data").mkdir(parents=True)
        table = pa.table({"lang": [r[0] for r in rows], "text": [r[1] for r in rows]})
        pq.write_table(table.slice(0, 2), base / folder / "data" / "part-0.parquet")
        pq.write_table(table.slice(2), base / folder / "data" / "part-1.parquet")
    assert languages(base) == {}  # no finished mix yet
    mark(base / "mix", "k", True, tokens=1)
    got = languages(base)
    assert got == {"en": [80, 50], "pt": [24, 21], "?": [1, 1]} and list(got) == ["en", "pt", "?"]
    table = language_table({"variants": [{"name": "v", "languages": got}]})
    assert "| v | pt | 24 | 21 | 87.5% |" in table and "| v | other | 1 | 1 | 100.0% |" in table  # "?" is under 1%


def test_verify_without_a_record_refuses_one_of_another_spec(tmp_path, shared, capsys):
    """Several specs share docs/ablation/: the results.json beside a spec may be another spec's record. Before, --verify
    curated everything and reported every variant as different; now it names the mismatch in one line, curating
    nothing, and takes the beside record when its variants are the spec's."""
    import json

    from train.ablate.stages import _own_record, load_spec, main

    out = tmp_path / "runs" / "abl"
    spec_file = _small_spec(tmp_path, shared, out)
    beside = spec_file.parent / "results.json"
    beside.write_text(json.dumps({"variants": [{"name": "other"}]}))
    assert main(["--spec", str(spec_file), "--verify"]) == 2
    assert "no results.json of this spec's variants (plain)" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # nothing curated
    beside.write_text(json.dumps({"variants": [{"name": "plain"}]}))
    assert _own_record(load_spec(spec_file), spec_file) == beside
