"""Issue 22 items 9, 10, 12: what a rerun resumes, what it refuses, and output folders that are not a run's.

Each test drives `curate run` in this process on a small JSONL input; the reference is the run's own output
(documents kept), which must match the setting the pipeline file had, never a mix of two.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate.cli.main import main as cli


def _input(tmp_path: Path, n: int = 40) -> Path:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": "word " * i}) + "\n" for i in range(n)))
    return src


def _run(pipe: Path, src: Path, out: Path, *extra: str) -> int:
    return cli(["run", str(pipe), "--input", str(src), "--output", str(out), "--workers", "1", "--no-progress", *extra])


def _kept(out: Path) -> int:
    return sum(pq.read_metadata(f).num_rows for f in (out / "data").glob("*.parquet"))


# ---------------------------------------------------------------- item 9: parameters are not guessed to be paths

C4_PIPE = """
from curate import Pipeline, filters, readers
pipeline = Pipeline(name="c4", reader=readers.Jsonl(),
                    steps=[filters.C4(min_sentences=1, min_words_per_line=1, bad_words_languages=())])
"""


def test_a_string_parameter_naming_the_cwd_is_not_a_path(tmp_path, monkeypatch, capsys):
    """C4's end_marks holds "." (the current directory): a file created there changes nothing."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    pipe, src, out = tmp_path / "p.py", _input(tmp_path), tmp_path / "o"
    pipe.write_text(C4_PIPE)
    assert _run(pipe, src, out) == 0
    (work / "x").write_text("new file in the current directory")
    assert _run(pipe, src, out) == 0, capsys.readouterr().err


def test_declared_model_file_is_fingerprinted_by_content(tmp_path):
    from curate import Step
    from curate.run.fingerprint import Fingerprinter

    class Model(Step):
        file_params = ("path",)

        def __init__(self, path, other):
            self.path, self.other = path, other

    model = tmp_path / "m.bin"
    model.write_bytes(b"v1")
    before = Fingerprinter().component(Model(str(model), str(model)))[0]
    os.utime(model, ns=(time.time_ns(), time.time_ns()))
    assert Fingerprinter().component(Model(str(model), str(model)))[0] == before  # touched: same content
    model.write_bytes(b"v2")
    after = Fingerprinter().component(Model(str(model), str(model)))[0]
    assert after != before
    assert after.split("(", 1)[1].count("#") == 1  # only the declared parameter is read as a file


# ---------------------------------------------------------------- item 10: values a function reads; inputs

DICT_PIPE = """
from curate import Pipeline, readers
LIMITS = {{"min_chars": {n}}}

def keep(doc):
    return len(doc.text) > LIMITS["min_chars"]

pipeline = Pipeline(name="t", reader=readers.Jsonl(), steps=[keep])
"""

MODULE_PIPE = """
from curate import Pipeline, readers
import peneira_test_thresholds as th

def longer(doc):
    return len(doc.text) > th.MIN_CHARS

pipeline = Pipeline(name="t", reader=readers.Jsonl(), steps=[longer])
"""


def test_a_threshold_in_a_module_level_dict_edited_between_runs_is_refused(tmp_path, capsys):
    pipe, src, out = tmp_path / "p.py", _input(tmp_path), tmp_path / "o"
    pipe.write_text(DICT_PIPE.format(n=50))
    assert _run(pipe, src, out) == 0
    kept = _kept(out)
    assert kept == sum(1 for i in range(40) if 5 * i > 50)
    assert _run(pipe, src, out) == 0  # unchanged: a resume
    pipe.write_text(DICT_PIPE.format(n=100))
    capsys.readouterr()
    assert _run(pipe, src, out) == 2
    err = capsys.readouterr().err
    assert "different pipeline" in err and "'keep'" in err and "--overwrite" in err and len(err.splitlines()) == 1
    assert "global LIMITS was {'min_chars': 50}, now {'min_chars': 100}" in err  # what changed, in words
    assert _kept(out) == kept  # nothing of the new setting mixed in
    assert _run(pipe, src, out, "--overwrite") == 0
    assert _kept(out) == sum(1 for i in range(40) if 5 * i > 100)


def test_a_threshold_in_an_imported_module_edited_between_runs_is_refused(tmp_path, monkeypatch, capsys):
    lib = tmp_path / "lib"
    lib.mkdir()
    monkeypatch.syspath_prepend(str(lib))
    mod = lib / "peneira_test_thresholds.py"
    pipe, src, out = tmp_path / "p.py", _input(tmp_path), tmp_path / "o"
    pipe.write_text(MODULE_PIPE)

    def set_threshold(n: int) -> None:  # a new process would import the edited module
        mod.write_text(f"MIN_CHARS = {n}\n")
        sys.modules.pop("peneira_test_thresholds", None)

    set_threshold(50)
    assert _run(pipe, src, out) == 0
    set_threshold(50)
    assert _run(pipe, src, out) == 0
    set_threshold(100)
    capsys.readouterr()
    assert _run(pipe, src, out) == 2
    err = capsys.readouterr().err
    assert "'longer'" in err and "global th.MIN_CHARS was 50, now 100" in err
    sys.modules.pop("peneira_test_thresholds", None)


UNSOUND_PIPE = """
import io
from curate import Pipeline, readers
BUFFER = io.BytesIO(b"state")

def peek(doc):
    return BUFFER.getvalue() == b"state"

pipeline = Pipeline(name="t", reader=readers.Jsonl(), steps=[peek])
"""


def test_a_function_reading_a_value_that_cannot_be_fingerprinted_runs_but_is_not_resumed(tmp_path, capsys):
    pipe, src, out = tmp_path / "p.py", _input(tmp_path), tmp_path / "o"
    pipe.write_text(UNSOUND_PIPE)
    assert _run(pipe, src, out) == 0
    capsys.readouterr()
    assert _run(pipe, src, out) == 2
    err = capsys.readouterr().err
    assert "cannot be resumed soundly" in err and "BUFFER" in err and "_io.BytesIO" in err and "--overwrite" in err


def test_an_input_rewritten_in_place_is_refused(tmp_path, capsys):
    pipe, src, out = tmp_path / "p.py", _input(tmp_path), tmp_path / "o"
    pipe.write_text(DICT_PIPE.format(n=50))
    assert _run(pipe, src, out) == 0
    src.write_text("".join(json.dumps({"text": "other " * i}) + "\n" for i in range(40)))
    capsys.readouterr()
    assert _run(pipe, src, out) == 2
    err = capsys.readouterr().err
    assert f"input {src} was rewritten" in err and "--overwrite" in err


def test_function_fingerprint_follows_closures_globals_and_helpers():
    from curate.run.fingerprint import Fingerprinter

    def fp(fn):
        from curate.core.step import as_step

        return Fingerprinter().component(as_step(fn))

    def make(limit, words):
        def helper(doc):
            return len(doc.text) > limit

        def step(doc):
            return helper(doc) and words[0] in doc.text

        return step

    assert fp(make(3, ["a"])) == fp(make(3, ["a"]))
    assert fp(make(3, ["a"]))[0] != fp(make(4, ["a"]))[0]  # a closure cell of a helper the step calls
    assert fp(make(3, ["a"]))[0] != fp(make(3, ["b"]))[0]  # a list the closure holds
    assert fp(make(3, ["a"]))[1] == []


CLASS_PIPE = """
from curate import Pipeline, Step, readers
STOP = {stop!r}

class Base(Step):
    def __init__(self, n):
        self.n = n

class Words(Base):
    name = "words"

    def __init__(self, n):
        super().__init__(n)  # a __class__ cell: the class reads itself

    def apply(self, doc):
        keep = isinstance(self, Words) and len(doc.text) > self.n
        return doc if keep and not any(w in STOP for w in doc.text.split()) else None

pipeline = Pipeline(name="t", reader=readers.Jsonl(), steps=[Words(50)])
"""


def test_a_step_class_reading_itself_and_a_long_word_list_resumes_and_detects_an_edit(tmp_path, capsys):
    pipe, src, out = tmp_path / "p.py", _input(tmp_path), tmp_path / "o"
    words = {f"w{i}" for i in range(5000)}
    pipe.write_text(CLASS_PIPE.format(stop=words))
    assert _run(pipe, src, out) == 0
    assert _run(pipe, src, out) == 0  # resumable: no recursion limit hit, the list hashed as one value
    pipe.write_text(CLASS_PIPE.format(stop=words | {"word"}))
    capsys.readouterr()
    assert _run(pipe, src, out) == 2
    assert "STOP was set[5000]#" in capsys.readouterr().err


# ---------------------------------------------------------------- item 12: output folders

def test_run_into_a_folder_of_something_else_is_refused_and_overwrite_replaces_it(tmp_path, capsys):
    pipe, src, out = tmp_path / "p.py", _input(tmp_path), tmp_path / "o"
    pipe.write_text(DICT_PIPE.format(n=50))
    (out / "data").mkdir(parents=True)  # a mix output: stale shards a run must not keep beside its own
    for i in range(5):
        (out / "data" / f"part-{i:05d}-000.parquet").write_bytes(b"stale")
    (out / "manifest.json").write_text(json.dumps({"kind": "mix", "complete": True}))
    assert _run(pipe, src, out) == 2
    err = capsys.readouterr().err
    assert "not empty" in err and "--overwrite" in err and len(err.splitlines()) == 1
    assert len(list((out / "data").iterdir())) == 5  # nothing touched
    assert _run(pipe, src, out, "--overwrite") == 0
    assert len(list((out / "data").iterdir())) == 1  # the stale shards are gone
    assert _kept(out) == sum(1 for i in range(40) if 5 * i > 50)


def test_overwrite_never_removes_files_the_command_does_not_write(tmp_path, capsys):
    pipe, src, out = tmp_path / "p.py", _input(tmp_path), tmp_path / "o"
    pipe.write_text(DICT_PIPE.format(n=50))
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "data").mkdir()
    assert _run(pipe, src, out, "--overwrite") == 2
    assert "notes.txt" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine" and (out / "data").is_dir()


def test_overwrite_marker_goes_first(tmp_path):
    """A kill in the middle of --overwrite must not leave a folder that a rerun takes for a run to resume."""
    from curate.io.outputs import clear

    out = tmp_path / "o"
    for d in ("data", "_done", "_work", "stats"):
        (out / d).mkdir(parents=True)
    (out / "_work" / "config.json").write_text("{}")
    removed = []
    import curate.io.outputs as outputs

    real = outputs.remove_tree
    outputs.remove_tree = lambda p: (removed.append(os.path.basename(p)), real(p))
    try:
        clear(str(out), sorted(os.listdir(out)), what="`curate run`", option="--output",
              layout=("_work", "_done", "stats", "data"))
    finally:
        outputs.remove_tree = real
    assert removed[0] == "_work" and sorted(removed) == ["_done", "_work", "data", "stats"]
    assert not os.listdir(out)


@pytest.mark.parametrize("command", ["demo", "decontam"])
def test_other_commands_refuse_a_folder_of_something_else(tmp_path, capsys, command):
    out = tmp_path / "o"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"question": "what is the capital of france and why is it paris"}) + "\n")
    argv = {"demo": ["demo", "generate", "--out", str(out), "--pages", "20", "--files", "1"],
            "decontam": ["decontam", "index", "--benchmark", f"b={bench}:question", "--out", str(out)]}[command]
    assert cli(argv) == 2
    assert "not empty" in capsys.readouterr().err
    assert os.listdir(out) == ["notes.txt"]


MARKERS = {"`curate run`": "_work/config.json", "`curate tokenize`": "_done/config.json",
           "`curate mix`": "manifest.json", "`curate export`": "export.json"}


@pytest.mark.parametrize("what", sorted(MARKERS))
@pytest.mark.parametrize("store", ["local", "memory"])
def test_a_start_killed_while_publishing_its_marker_is_taken_as_empty(tmp_path, what, store):
    """A kill between making the marker's folder (or its temporary file) and renaming it into place leaves a
    folder with nothing but those: no result, never a stranger's folder (the chaos lane's SIGKILL of tokenize hit
    it). `claim` takes it as empty; with anything else beside it, or a finished file in the marker's folder, it
    still refuses and removes nothing. The same through fsspec (memory://, as s3:// goes)."""
    import fsspec

    from curate.core.errors import UsageError
    from curate.io.outputs import claim

    marker = MARKERS[what]
    parent, base = os.path.split(marker)
    root = str(tmp_path / "o") if store == "local" else f"memory://claim-{what.strip('`').replace(' ', '-')}"
    fs_, inner = fsspec.core.url_to_fs(root)

    def plant(names: dict[str, str]) -> None:
        if fs_.exists(inner):
            fs_.rm(inner, recursive=True)
        fs_.makedirs(inner, exist_ok=True)
        for name, text in names.items():
            fs_.makedirs(os.path.dirname(f"{inner}/{name}"), exist_ok=True)
            fs_.pipe_file(f"{inner}/{name}", text.encode())

    def take() -> bool:
        return claim(root, what=what, option="--out", own=lambda: fs_.exists(f"{inner}/{marker}"), layout=[parent or base],
                     marker=marker)

    where = f"{parent}/" if parent else ""
    for leftover in ({f"{where}{base}.tmp.4242": "{"}, {f"{where}.{base}.tmp.4242000000017": ""}):
        plant(leftover)
        assert take() is False and fs_.ls(inner) == []
    for refused in ({f"{where}{base}.tmp.4242": "{", "notes.txt": "mine"}, {f"{where}{base}.tmp.1": "", f"{where}x.json": "1"}):
        plant(refused)
        before = sorted(fs_.find(inner))
        with pytest.raises(UsageError, match="holds no earlier"):
            take()
        assert sorted(fs_.find(inner)) == before
    if store == "memory":
        fs_.rm(inner, recursive=True)


def test_a_run_killed_before_its_config_was_published_reruns(tmp_path, capsys):
    pipe, src, out = tmp_path / "p.py", _input(tmp_path), tmp_path / "o"
    pipe.write_text(DICT_PIPE.format(n=50))
    (out / "_work").mkdir(parents=True)
    (out / "_work" / "config.json.tmp.31337").write_text('{"half')
    assert _run(pipe, src, out) == 0, capsys.readouterr().err
    assert _kept(out) == sum(1 for i in range(40) if 5 * i > 50)


def test_overwrite_on_an_object_store_removes_only_the_layout():
    """The same rule through fsspec (memory://, as s3:// goes): prefixes removed recursively, others refused."""
    import fsspec

    from curate.core.errors import UsageError
    from curate.io.outputs import claim

    store = fsspec.filesystem("memory")
    root = "memory://peneira-test-overwrite"
    for name in ("data/part-00000.parquet", "_work/config.json", "stats.json"):
        store.pipe(f"/peneira-test-overwrite/{name}", b"x")
    try:
        with pytest.raises(UsageError, match="holds no earlier"):
            claim(root, what="`x`", option="--out", own=lambda: False, layout=("_work", "data", "stats.json"))
        assert claim(root, what="`x`", option="--out", own=lambda: False, layout=("_work", "data", "stats.json"),
                     overwrite=True) is False
        assert store.find("/peneira-test-overwrite") == []
        store.pipe("/peneira-test-overwrite/keep.txt", b"mine")
        with pytest.raises(UsageError, match="keep.txt"):
            claim(root, what="`x`", option="--out", own=lambda: False, layout=("data",), overwrite=True)
        assert store.cat("/peneira-test-overwrite/keep.txt") == b"mine"
    finally:
        store.rm("/peneira-test-overwrite", recursive=True)


# ---------------------------------------------------------------- issue 29.16: inputs inside the output

KEEP_PIPE = """
from curate import Pipeline, readers

def keep(doc):
    return True

pipeline = Pipeline(name="t", reader=readers.Jsonl(), steps=[keep])
"""


def test_inputs_inside_the_output_are_refused_with_one_line_and_overwrite_removes_nothing(tmp_path, capsys):
    """A glob that covers --output: the first run sees no overlap (the output is empty), the rerun would read the
    run's own files as new inputs (never resumable) and --overwrite would delete inputs. Both refused, naming them."""
    root = tmp_path / "corpus"
    root.mkdir()
    _input(root)
    pipe, out = tmp_path / "p.py", root / "out"
    pipe.write_text(KEEP_PIPE)
    glob = str(root / "**" / "*")
    argv = ["run", str(pipe), "--input", glob, "--output", str(out), "--workers", "1", "--no-progress"]
    assert cli(argv) == 0
    capsys.readouterr()
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    for extra in ([], ["--overwrite"]):
        assert cli([*argv, *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "inside the output folder" in err[0] and str(out) in err[0], err
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


# ---------------------------------------------------------------- issue 29.17: corrupt run state


def _shards(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "data").glob("*.parquet"))}


def _two_inputs(tmp_path: Path) -> str:
    d = tmp_path / "in"
    d.mkdir()
    for k in range(2):
        (d / f"{k}.jsonl").write_text("".join(json.dumps({"text": f"text {i % 7} of {k}"}) + "\n" for i in range(30)))
    return str(d / "*.jsonl")


def _run_glob(pipe: Path, glob: str, out: Path, *extra: str) -> int:
    return cli(["run", str(pipe), "--input", glob, "--output", str(out), "--workers", "1", "--no-progress", *extra])


def test_a_corrupt_config_is_one_line_naming_it_and_the_way_out(tmp_path, capsys):
    pipe, src, out = tmp_path / "p.py", _input(tmp_path), tmp_path / "o"
    pipe.write_text(KEEP_PIPE)
    assert _run(pipe, src, out) == 0
    capsys.readouterr()
    (out / "_work" / "config.json").write_text('{"pipeline": ')  # torn
    assert _run(pipe, src, out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "_work/config.json cannot be read" in err[0] and "--overwrite" in err[0], err
    assert _run(pipe, src, out, "--overwrite") == 0


def test_a_corrupt_task_record_is_recomputed_and_the_output_is_the_same(tmp_path, capsys):
    pipe, out = tmp_path / "p.py", tmp_path / "o"
    pipe.write_text(KEEP_PIPE)
    glob = _two_inputs(tmp_path)
    assert _run_glob(pipe, glob, out) == 0
    ref, ref_stats = _shards(out), json.loads((out / "stats.json").read_text())
    (out / "stats" / "stage0-part-00001.json").write_bytes(b"\x00garbage")
    capsys.readouterr()
    assert _run_glob(pipe, glob, out) == 0
    err = capsys.readouterr().err
    assert "stats/stage0-part-00001.json cannot be read" in err and "runs again" in err
    assert _shards(out) == ref
    assert json.loads((out / "stats.json").read_text())["steps"][0]["docs_out"] == ref_stats["steps"][0]["docs_out"]


DEDUP_PIPE = """
from curate import Pipeline, dedup, readers
pipeline = Pipeline(name="t", reader=readers.Jsonl(), steps=[dedup.Exact()])
"""


def test_a_corrupt_global_record_is_recomputed(tmp_path, capsys):
    pipe, out = tmp_path / "p.py", tmp_path / "o"
    pipe.write_text(DEDUP_PIPE)
    glob = _two_inputs(tmp_path)
    assert _run_glob(pipe, glob, out) == 0
    ref = _shards(out)
    (out / "stats" / "stage1-global.json").write_text("[")
    capsys.readouterr()
    assert _run_glob(pipe, glob, out) == 0
    assert "stage1-global.json cannot be read" in capsys.readouterr().err
    assert _shards(out) == ref


@pytest.mark.parametrize("damage", ["truncated", "garbage marker", "garbage state"])
def test_a_corrupt_dedup_intermediate_is_recomputed_not_a_bare_error_on_every_rerun(tmp_path, capsys, damage):
    """A run stopped in dedup's filter phase whose group file (or a phase marker, or the phases' state) then got
    damaged: the rerun recomputes the step from its inputs and ends with the uninterrupted output."""
    pipe, out = tmp_path / "p.py", tmp_path / "o"
    pipe.write_text(DEDUP_PIPE)
    glob = _two_inputs(tmp_path)
    assert _run_glob(pipe, glob, out) == 0
    ref = _shards(out)
    work = out / "_work" / "global1"
    for p in [out / "_done" / "stage1-global", out / "stats" / "stage1-global.json",
              *(work / "_phases" / "filter").iterdir(), *(out / "data").iterdir()]:
        p.unlink()  # as if killed in the filter phase
    if damage == "truncated":
        group = next((work / "groups").glob("*.parquet"))
        group.write_bytes(group.read_bytes()[: group.stat().st_size // 2])
    elif damage == "garbage marker":
        next((work / "_phases" / "group").iterdir()).write_text("{")
    else:
        (work / "dedup.json").write_text("{")
    capsys.readouterr()
    assert _run_glob(pipe, glob, out) == 0, capsys.readouterr().err
    assert "cannot be read" in capsys.readouterr().err
    assert _shards(out) == ref


def test_what_counts_as_a_corrupt_file():
    import errno

    import pyarrow as pa

    from curate.io.state import is_corrupt_data

    assert is_corrupt_data(OSError("ZSTD decompression failed: Corrupted block detected"))
    assert is_corrupt_data(pa.ArrowInvalid("Parquet magic bytes not found in footer"))
    assert not is_corrupt_data(OSError(errno.EIO, "Input/output error"))
    assert not is_corrupt_data(OSError(errno.ENOSPC, "No space left on device"))
    assert not is_corrupt_data(FileNotFoundError(errno.ENOENT, "gone"))
    assert not is_corrupt_data(ConnectionResetError(errno.ECONNRESET, "reset"))


# ---------------------------------------------------------------- issue 29.18: the other writers of an output


def _bench(tmp_path: Path) -> Path:
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"question": "what is the capital of france and why is it paris today"}) + "\n")
    return bench


def test_decontam_index_checks_every_benchmark_before_it_touches_the_index(tmp_path, capsys):
    idx, bench = tmp_path / "idx", _bench(tmp_path)
    assert cli(["decontam", "index", "--benchmark", f"b={bench}:question", "--out", str(idx)]) == 0
    before = {p.name: p.read_bytes() for p in idx.iterdir()}
    capsys.readouterr()
    bad = ["decontam", "index", "--benchmark", f"b={bench}:question", "--benchmark", f"x={tmp_path}/missing.jsonl",
           "--out", str(idx), "--overwrite"]
    assert cli(bad) == 2
    assert "missing.jsonl' does not exist" in capsys.readouterr().err
    assert cli(["decontam", "index", "--benchmark", f"b={bench}:question", "--out", str(idx), "--n", "5",
                "--min-words", "9", "--overwrite"]) == 2
    assert {p.name: p.read_bytes() for p in idx.iterdir()} == before  # untouched, and no lock file left


def test_decontam_index_and_demo_generate_refuse_a_folder_in_use(tmp_path, capsys):
    from curate.io.outputs import locked

    idx, demo = tmp_path / "idx", tmp_path / "demo"
    with locked(str(idx), what="`curate run`"), locked(str(demo), what="`curate run`"):
        assert cli(["decontam", "index", "--benchmark", f"b={_bench(tmp_path)}:question", "--out", str(idx)]) == 2
        assert "is in use by `curate run`" in capsys.readouterr().err
        assert cli(["demo", "generate", "--out", str(demo), "--pages", "20", "--files", "1"]) == 2
        assert "is in use by `curate run`" in capsys.readouterr().err
    assert not os.listdir(idx) and not os.listdir(demo)


def _classes(tmp_path: Path) -> tuple[str, str]:
    pos = [" ".join(f"good{i} word{j}" for j in range(30)) for i in range(40)]
    neg = [" ".join(f"bad{i} token{j}" for j in range(30)) for i in range(40)]
    for name, rows in (("pos", pos), ("neg", neg)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in rows))
    return str(tmp_path / "pos.jsonl"), str(tmp_path / "neg.jsonl")


def test_quality_train_checks_its_outputs_before_training(tmp_path, capsys):
    pos, neg = _classes(tmp_path)
    base = ["quality", "train", "--positive", pos, "--negative", neg, "--bucket", "1000", "--epoch", "1"]
    (tmp_path / "folder").mkdir()
    assert cli([*base, "--out", str(tmp_path / "folder")]) == 2
    assert "must be a model file path" in capsys.readouterr().err
    assert cli([*base, "--out", str(tmp_path / "m.bin"), "--plot", str(tmp_path / "no" / "pr.png")]) == 2
    assert "--plot" in capsys.readouterr().err
    assert not (tmp_path / "m.bin").exists()


def test_quality_train_publishes_the_model_and_its_card_together_or_not_at_all(tmp_path, monkeypatch):
    from curate.quality import model as qm

    pos, neg = _classes(tmp_path)
    out = tmp_path / "m.bin"
    cfg = qm.TrainConfig(bucket=1000, epoch=2, holdout=0.2)
    qm.train(pos, neg, str(out), cfg)
    before = out.read_bytes(), (tmp_path / "m.bin.json").read_bytes()

    def fail(*a, **k):
        raise OSError(28, "No space left on device")  # the held-out scoring or the card fails after the fit

    monkeypatch.setattr(qm, "_measure", fail)
    with pytest.raises(OSError):
        qm.train(pos, neg, str(out), qm.TrainConfig(bucket=1000, epoch=3, holdout=0.2, seed=1))
    assert (out.read_bytes(), (tmp_path / "m.bin.json").read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.bin", "m.bin.json", "neg.jsonl", "pos.jsonl"]
