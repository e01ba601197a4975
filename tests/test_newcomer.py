"""Issue 35 ("a newcomer's first hour"): the stumbles of a first session, each tried as a new user would."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate.cli.main import main as cli
from curate.run.executors.base import TaskFailures
from curate.run.executors.local import LocalExecutor

ROOT = Path(__file__).resolve().parents[1]

PIPE = """
from curate import Pipeline, filters, readers
pipeline = Pipeline(name="t", reader=readers.{reader}, steps=[{steps}])
"""


def _pipe(tmp_path: Path, reader: str = "Jsonl()", steps: str = "") -> Path:
    pipe = tmp_path / "p.py"
    pipe.write_text(PIPE.format(reader=reader, steps=steps))
    return pipe


def _jsonl(path: Path, n: int, tag: str) -> list[str]:
    """`n` records of text under "text"; .gz written through gzip. Returns their texts (the reference)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    texts = [f"{tag} document number {i}" for i in range(n)]
    data = "".join(json.dumps({"text": t}) + "\n" for t in texts).encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return texts


def _kept_texts(out: Path) -> list[str]:
    return sorted(t for f in sorted((out / "data").glob("*.parquet")) for t in pq.read_table(f)["text"].to_pylist())


# ---------------------------------------------------------------- item 6: --input DIR, several values, --output


def test_a_folder_input_reads_its_files_of_the_readers_format_recursively_and_says_what_it_left_out(tmp_path, capsys):
    crawl = tmp_path / "crawl"
    want = _jsonl(crawl / "a.jsonl", 5, "a") + _jsonl(crawl / "sub" / "deeper" / "b.jsonl.gz", 7, "b")
    (crawl / "README.md").write_text("not data\n")
    (crawl / "sub" / "notes.csv").write_text("x,y\n")
    _jsonl(crawl / ".cache" / "hidden.jsonl", 3, "hidden")  # hidden: never an input
    out = tmp_path / "o"
    assert cli(["run", str(_pipe(tmp_path)), "--input", str(crawl), "--output", str(out), "--workers", "1",
                "--no-progress"]) == 0
    assert _kept_texts(out) == sorted(want)  # brute force: exactly the records of the two JSONL files
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "input folder" in x)
    assert "2 file(s)" in line and ".jsonl 1" in line and ".jsonl.gz 1" in line
    assert "left out 2" in line and "README.md" in line and "notes.csv" in line and "hidden" not in line


def test_a_folder_with_no_file_of_the_format_is_one_line_naming_what_it_holds(tmp_path, capsys):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    (crawl / "page.html").write_text("<p>hi</p>")
    code = cli(["run", str(_pipe(tmp_path, "Warc()")), "--input", str(crawl), "--output", str(tmp_path / "o"),
                "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert ".warc.gz" in err and "page.html" in err


def test_several_values_after_one_input_like_an_unquoted_shell_glob(tmp_path, capsys):
    files = [tmp_path / "in" / f"p{i}.jsonl" for i in range(3)]
    want = [t for i, f in enumerate(files) for t in _jsonl(f, 4, f"p{i}")]
    _jsonl(tmp_path / "in" / "more.jsonl", 2, "more")
    out = tmp_path / "o"
    args = ["run", str(_pipe(tmp_path)), "--input", *map(str, files[:2]), "--input", str(files[2]),
            "--output", str(out), "--workers", "1", "--no-progress"]
    assert cli(args) == 0
    assert _kept_texts(out) == sorted(want)  # the three named files, not more.jsonl


def test_an_output_that_is_a_file_is_one_line(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    _jsonl(src, 3, "x")
    target = tmp_path / "taken"
    target.write_text("mine\n")
    code = cli(["run", str(_pipe(tmp_path)), "--input", str(src), "--output", str(target), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "is a file" in err
    assert target.read_text() == "mine\n"


def test_a_misspelt_step_argument_names_the_line_and_the_likely_name(tmp_path, capsys):
    pipe = tmp_path / "p.py"
    pipe.write_text("from curate import Pipeline, filters, readers\n\npipeline = Pipeline(\n    name='t',\n"
                    "    reader=readers.Jsonl(),\n    steps=[filters.GopherQuality(min_word=50)],\n)\n")
    code = cli(["run", str(pipe), "--input", str(tmp_path), "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{pipe}:" in err and "min_word" in err and "did you mean min_words" in err
    line = int(err.split(f"{pipe}:")[1].split(":")[0])
    assert "min_word=50" in pipe.read_text().splitlines()[line - 1]


# ---------------------------------------------------------------- item 4: pipeline.run at a script's top level

SCRIPT = """
from curate import Pipeline, filters, readers
pipeline = Pipeline(name="s", reader=readers.Jsonl(), steps=[filters.GopherQuality()])
{call}
"""


def _script(tmp_path: Path, guarded: bool) -> subprocess.CompletedProcess:
    for i in range(2):
        _jsonl(tmp_path / f"in{i}.jsonl", 20, f"f{i} " + "word " * 60)
    call = "pipeline.run(inputs=['in0.jsonl', 'in1.jsonl'], output='out', workers=2, progress=False)"
    if guarded:
        call = f"if __name__ == '__main__':\n    {call}"
    (tmp_path / "script.py").write_text(SCRIPT.format(call=call))
    return subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_a_script_that_runs_a_pipeline_at_its_top_level_is_told_what_to_write_in_one_line(tmp_path):
    done = _script(tmp_path, guarded=False)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]  # one line, no traceback
    assert "script.py:4" in done.stderr and 'if __name__ == "__main__":' in done.stderr
    assert "BrokenProcessPool" not in done.stderr and not (tmp_path / "out").exists()  # refused before any write


def test_the_same_script_under_the_main_guard_runs(tmp_path):
    done = _script(tmp_path, guarded=True)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["docs_read"] == 40


# ---------------------------------------------------------------- item 7: one pool per executor, reused


def _pid(_: int) -> int:
    return os.getpid()


def _die(_: int) -> int:
    os._exit(3)  # a worker killed mid-task (out of memory, kill -9)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}").exists() else "X"
    return state not in ("Z", "X")


def test_every_map_of_an_executor_runs_in_one_pool_and_close_ends_it():
    with LocalExecutor(2, progress=False) as ex:
        first = set(ex.map(_pid, range(8)))
        second = set(ex.map(_pid, range(8)))
        third = set(ex.map(_pid, [0]))
    assert os.getpid() not in first and len(first | second | third) <= 2  # the same two workers throughout
    assert first & second
    for _ in range(100):  # close() joined them
        if not any(_alive(p) for p in first | second):
            break
        time.sleep(0.05)
    assert not any(_alive(p) for p in first | second)


def test_a_pool_that_lost_a_worker_is_replaced_and_the_next_map_runs():
    with LocalExecutor(2, progress=False) as ex:
        before = set(ex.map(_pid, range(4)))
        with pytest.raises(TaskFailures):
            ex.map(_die, [0])
        after = set(ex.map(_pid, range(4)))
    assert after and not (before & after)  # a new pool: the old one's workers were killed, not reused


def test_an_error_in_the_driver_kills_the_pool(tmp_path):
    ex = LocalExecutor(2, progress=False)
    pids = set(ex.map(_pid, range(4)))
    with pytest.raises(RuntimeError), ex:
        raise RuntimeError("driver failed between two phases")
    time.sleep(0.2)
    assert not any(_alive(p) for p in pids)


def test_dedup_phase_bars_count_documents():
    from curate.dedup.common import docs_of

    assert docs_of({"rows": 7, "empty": 1}) == 7  # hash and signatures phases
    assert docs_of({"docs_in": 5, "docs_out": 4}) == 5  # filter
    assert docs_of({"groups": 3, "duplicates": 2}) == 5 and docs_of({"clusters": 1, "duplicates": 4}) == 5
    assert docs_of({"edges": 9}) == 0 and docs_of([1]) == 0


# ---------------------------------------------------------------- item 5: train eval checks everything first


@pytest.fixture
def one_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    from curate.models.gpt import GPT, GPTConfig

    model = GPT(GPTConfig(vocab_size=64, seq_len=16, n_layer=1, n_head=1, n_embd=16))
    run = tmp_path / "run"
    run.mkdir()
    torch.save({"model": model.state_dict(), "model_config": vars(model.cfg).copy(), "eos_id": 0, "step": 3,
                "config": {"batch_tokens": 64, "seed": 0, "data": None}, "tokenizer": None}, run / "ckpt.pt")
    return run


@pytest.mark.parametrize("bad", ["missing", "junk", "folder", "task", "icl_dir"])
def test_train_eval_refuses_a_bad_later_argument_before_loading_the_first_model(one_checkpoint, tmp_path, capsys,
                                                                                monkeypatch, bad):
    import train.evaluate.cli as cli_mod

    loaded = []
    monkeypatch.setattr(cli_mod, "evaluate", lambda *a, **k: loaded.append(a) or {})
    task = tmp_path / "qa.jsonl"
    task.write_text(json.dumps({"question": "2+2?", "answer": "4"}) + "\n")
    second = {"missing": tmp_path / "nope", "junk": tmp_path / "junk.pt", "folder": tmp_path / "empty"}.get(bad)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    (tmp_path / "empty").mkdir()
    args = [str(one_checkpoint)] + ([str(second)] if second else []) + ["--task", str(task)]
    if bad == "task":
        args += ["--task", "copa:0,5"]  # a bare name without --icl-dir
    if bad == "icl_dir":
        args += ["--icl-dir", str(tmp_path / "no_icl")]
    assert cli_mod.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and not loaded  # no model was evaluated
    assert {"missing": "nope", "junk": "junk.pt", "folder": "ckpt.pt", "task": "copa", "icl_dir": "no_icl"}[bad] in err


# ---------------------------------------------------------------- item 9: progress, a smaller vocabulary said


def _qa(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"question": f"What is the capital number {i} of the far country {i}?",
                                        "answer": f"It is the city called place {i} by its people"}) + "\n"
                            for i in range(n)))
    return path


@pytest.mark.parametrize("progress", [True, False])
def test_decontam_index_shows_progress_on_stderr_unless_told_not_to(tmp_path, capsys, progress):
    bench = _qa(tmp_path / "b.jsonl", 12)
    args = ["decontam", "index", "--benchmark", f"b={bench}:question,answer", "--out", str(tmp_path / "ix")]
    assert cli(args + ([] if progress else ["--no-progress"])) == 0
    out, err = capsys.readouterr()
    if progress:
        assert "decontam index: items" in err and "12/12" in err
    else:
        assert err == ""
    assert "decontam index:" not in out


@pytest.mark.parametrize("progress", [True, False])
def test_quality_train_shows_fasttexts_progress_on_stderr_unless_told_not_to(tmp_path, capfd, progress):
    good = tmp_path / "good.jsonl"
    bad = tmp_path / "bad.jsonl"
    good.write_text("".join(json.dumps({"text": f"A careful essay number {i} about rivers, bridges and the "
                                                f"people who built them over many years."}) + "\n" for i in range(60)))
    bad.write_text("".join(json.dumps({"text": f"BUY NOW cheap deal {i} click here win free prize"}) + "\n"
                           for i in range(60)))
    args = ["quality", "train", "--positive", str(good), "--negative", str(bad), "--bucket", "1000", "--epoch", "1",
            "--holdout", "0", "--out", str(tmp_path / "q.bin")]
    assert cli(args + ([] if progress else ["--no-progress"])) == 0
    out, err = capfd.readouterr()  # fastText writes from C++: the file descriptor, not sys.stderr
    assert ("Progress:" in err) == progress and "Progress:" not in out


@pytest.mark.parametrize("progress", [True, False])
def test_tokenizer_train_shows_the_sample_read_on_stderr_unless_told_not_to(tmp_path, capsys, progress):
    corpus = tmp_path / "c.jsonl"
    texts = [f"a line of text number {i} about rivers and bridges" for i in range(200)]
    corpus.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    args = ["tokenizer", "train", str(corpus), "--vocab-size", "300", "--out", str(tmp_path / "tok.json")]
    assert cli(args + ([] if progress else ["--no-progress"])) == 0
    out, err = capsys.readouterr()
    chars = sum(map(len, texts))  # every document is in the sample (the corpus is below --sample-chars)
    if progress:
        assert "tokenizer sample" in err and f"{chars / 1000:.2f}k/" in err  # of an estimated total
    else:
        assert err == ""
    assert f"({chars:,} characters)" in out


def test_a_vocabulary_smaller_than_asked_is_said_in_one_line(tmp_path, capsys):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "text": f"tiny corpus line {i % 7}"}) + "\n" for i in range(50)))
    out = tmp_path / "tok.json"
    assert cli(["tokenizer", "train", str(corpus), "--vocab-size", "32000", "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err.strip()
    from tokenizers import Tokenizer

    got = Tokenizer.from_file(str(out)).get_vocab_size()  # the library's own reading of what was written
    assert got < 32000 and len(err.splitlines()) == 1
    assert "32,000" in err and f"{got:,}" in err and "--min-frequency" in err


# ---------------------------------------------------------------- item 9: writers.Jsonl


def _read_jsonl_shards(folder: Path) -> list[dict]:
    """Read back with the standard library and zstandard's own reader (not ours)."""
    import zstandard

    rows = []
    for f in sorted(folder.iterdir()):
        raw = f.read_bytes()
        if f.name.endswith(".gz"):
            raw = gzip.decompress(raw)
        elif f.name.endswith(".zst"):
            raw = zstandard.ZstdDecompressor().stream_reader(raw).read()
        rows += [json.loads(line) for line in raw.decode().splitlines()]
    return rows


def _jsonl_run(tmp_path: Path, writer: str, name: str, steps: str = "filters.GopherQuality(min_words=5)"):
    from curate.run.pipeline import Pipeline

    pipe = tmp_path / f"{name}.py"
    pipe.write_text("from curate import Pipeline, dedup, filters, readers, writers\n"
                    f"pipeline = Pipeline(name='j', reader=readers.Jsonl(), steps=[{steps}], writer={writer})\n")
    return Pipeline.from_file(pipe)


@pytest.mark.parametrize("compression", ["gzip", "zstd", "none"])
def test_jsonl_writer_holds_what_the_parquet_writer_holds(tmp_path, compression):
    src = tmp_path / "in.jsonl"
    texts = [("the river and the bridge " * (i % 4)) + f"doc {i}" for i in range(40)]  # i % 4 == 0: too few words
    src.write_text("".join(json.dumps({"text": t, "url": f"https://x.test/{i}"}) + "\n" for i, t in enumerate(texts)))
    ref = _jsonl_run(tmp_path, "writers.Parquet()", "p").run(inputs=str(src), output=str(tmp_path / "pq"),
                                                             progress=False, rejected=True)
    got = _jsonl_run(tmp_path, f"writers.Jsonl(compression={compression!r})", "j").run(
        inputs=str(src), output=str(tmp_path / "js"), progress=False, rejected=True)
    assert ref["docs_written"] == got["docs_written"] and 0 < got["docs_written"] < 40
    suffix = {"gzip": ".jsonl.gz", "zstd": ".jsonl.zst", "none": ".jsonl"}[compression]
    assert all(o.endswith(suffix) for o in got["outputs"])
    for sub in ("data", "rejected"):
        want = [r for f in sorted((tmp_path / "pq" / sub).glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
        rows = _read_jsonl_shards(tmp_path / "js" / sub)
        assert [(r["id"], r["text"], r["url"]) for r in rows] == [(r["id"], r["text"], r["url"]) for r in want]
    assert not [p for p in (tmp_path / "js").rglob("*") if p.name.endswith(".tmp")]


def test_jsonl_writer_a_failed_commit_is_loud_and_the_rerun_is_identical(tmp_path, monkeypatch):
    from curate.io import writers
    from curate.run.executors.base import TaskFailures

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": f"words of document number {i} " * 3}) + "\n" for i in range(30)))
    clean = _jsonl_run(tmp_path, "writers.Jsonl()", "a").run(inputs=str(src), output=str(tmp_path / "clean"),
                                                              progress=False)
    real = writers.JsonlShardWriter.commit
    monkeypatch.setattr(writers.JsonlShardWriter, "commit", lambda self: (_ for _ in ()).throw(OSError(5, "EIO")))
    with pytest.raises(TaskFailures, match="EIO"):
        _jsonl_run(tmp_path, "writers.Jsonl()", "a").run(inputs=str(src), output=str(tmp_path / "o"), progress=False)
    assert not list((tmp_path / "o" / "data").glob("*.jsonl.gz"))  # nothing under a final name
    monkeypatch.setattr(writers.JsonlShardWriter, "commit", real)
    again = _jsonl_run(tmp_path, "writers.Jsonl()", "a").run(inputs=str(src), output=str(tmp_path / "o"),
                                                              progress=False)
    assert again["docs_written"] == clean["docs_written"]
    assert _read_jsonl_shards(tmp_path / "o" / "data") == _read_jsonl_shards(tmp_path / "clean" / "data")


def test_jsonl_writer_with_a_global_step_or_read_by_inspect_is_one_line(tmp_path, capsys):
    from curate.core.errors import UsageError

    with pytest.raises(UsageError, match="Jsonl writes a pipeline's last stage only.*'exact' is global"):
        _jsonl_run(tmp_path, "writers.Jsonl()", "g", steps="dedup.Exact()")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": f"words of document number {i} " * 3}) + "\n" for i in range(5)))
    _jsonl_run(tmp_path, "writers.Jsonl()", "b", steps="").run(inputs=str(src), output=str(tmp_path / "o"),
                                                                progress=False)
    for args in (["inspect", str(tmp_path / "o")], ["report", str(tmp_path / "o")]):
        assert cli(args) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "JSON Lines shards" in err
