"""End-to-end runs on the real crawls: output contract, resume after SIGKILL, CLI behaviour."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate import Pipeline, Step, extract, readers, writers
from curate.cli.main import main as cli
from curate.core.document import TEXT_SCHEMA

WARCS = "warc/**/*.warc*.gz"
CURATE = [sys.executable, "-m", "curate"]


def texts(out: Path) -> list[tuple[str, str]]:
    return [(r["id"], r["text"]) for f in sorted((out / "data").glob("*.parquet"))
            for r in pq.read_table(f, columns=["id", "text"]).to_pylist()]


def stats(out: Path) -> dict:
    return {s["name"]: s for s in json.loads((out / "stats.json").read_text())["steps"]}


@pytest.fixture(scope="module")
def real_run(shared, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("real") / "out"
    Pipeline(name="real", reader=readers.Warc(), steps=[extract.Resiliparse()]).run(
        inputs=str(shared / WARCS), output=str(out), progress=False)
    return out


def test_extraction_yields_text_for_most_pages(real_run):
    s = stats(real_run)
    assert s["read"]["docs_out"] == 245  # 244 html + 1 WET conversion
    docs = texts(real_run)
    assert len(docs) >= 0.95 * 245 and all(t.strip() for _, t in docs)
    assert sum(s["extract"]["dropped"].values()) == 245 - len(docs)


def test_trafilatura_extracts_most_common_crawl_pages(shared, tmp_path):
    files = [str(shared / "warc/cc/resiliparse_warcfile.CC-MAIN-2020-34.warc.gz"),
             str(shared / "warc/wget/dolma_sample-0001.warc.gz")]
    m = Pipeline(name="t", reader=readers.Warc(), steps=[extract.Trafilatura()]).run(
        inputs=files, output=str(tmp_path / "o"), progress=False)
    assert stats(tmp_path / "o")["read"]["docs_out"] == 31 and m["docs_written"] >= 0.8 * 31


def test_output_schema_is_exactly_the_contract(real_run):
    shards = sorted((real_run / "data").glob("*.parquet"))
    # one shard per input file with documents: all but the WAT file (index 3 in sorted order)
    assert [s.name for s in shards] == [f"part-{i:05d}-000.parquet" for i in range(10) if i != 3]
    for s in shards:
        assert pq.read_schema(s).remove_metadata().equals(TEXT_SCHEMA, check_metadata=False)
        assert pq.ParquetFile(s).metadata.row_group(0).column(0).compression == "ZSTD"
    ids = [i for i, _ in texts(real_run)]
    assert len(ids) == len(set(ids))
    row = pq.read_table(shards[0]).to_pylist()[0]
    assert row["source"] == "web" and row["url"].startswith("http") and json.loads(row["metadata"])["charset"]


def test_rerun_of_a_finished_run_does_no_work_and_changes_nothing(real_run, shared):
    def snapshot():
        return {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in real_run.rglob("*") if p.is_file()}

    before = snapshot()
    Pipeline(name="real", reader=readers.Warc(), steps=[extract.Resiliparse()]).run(
        inputs=str(shared / WARCS), output=str(real_run), progress=False)
    after = snapshot()
    assert after.keys() == before.keys()
    merged = {real_run / "stats.json", real_run / "manifest.json"}  # re-merged on every run, by design
    assert {p: v for p, v in after.items() if p not in merged} == {p: v for p, v in before.items() if p not in merged}
    assert after[real_run / "stats.json"][1] == before[real_run / "stats.json"][1]


SLOW_PIPELINE = """
import time
from curate import Pipeline, extract, readers

def slow(doc):  # sleeps, so the run lasts long enough to be killed at chosen points without burning CPU
    time.sleep(0.01)
    return True

pipeline = Pipeline(name="slow", reader=readers.Warc(), steps=[extract.Resiliparse(), slow])
"""


def _start(pipe: Path, shared: Path, out: Path) -> subprocess.Popen:
    cmd = [*CURATE, "run", str(pipe), "--input", str(shared / WARCS), "--output", str(out), "--workers", "2",
           "--no-progress"]
    return subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 60) -> None:
    """SIGKILL the run's whole process group (main process and workers) once `ready()` holds."""
    t0 = time.time()
    while not ready():
        assert proc.poll() is None, f"run finished before the kill point: {proc.stderr.read().decode()}"
        assert time.time() - t0 < timeout
        time.sleep(0.01)
    assert proc.poll() is None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_kill_and_rerun_ends_with_exactly_the_uninterrupted_output(shared, tmp_path):
    pipe = tmp_path / "slow.py"
    pipe.write_text(SLOW_PIPELINE)
    sys.path.insert(0, str(tmp_path))
    from curate.cli.run import load_pipeline

    ref = tmp_path / "ref"
    load_pipeline(str(pipe)).run(inputs=str(shared / WARCS), output=str(ref), progress=False)
    expected = texts(ref)

    out = tmp_path / "out"
    done = lambda: len(list((out / "_done").glob("*"))) if (out / "_done").is_dir() else 0  # noqa: E731
    _kill_when(_start(pipe, shared, out), lambda: (out / "_work/config.json").exists())  # before any task ends
    _kill_when(_start(pipe, shared, out), lambda: (out / "stats").is_dir() and any((out / "stats").iterdir()))
    first = done()
    _kill_when(_start(pipe, shared, out), lambda: done() >= first + 2)  # mid-run, tasks in flight
    assert 0 < done() < 10
    proc = _start(pipe, shared, out)
    assert proc.wait(timeout=120) == 0, proc.stderr.read().decode()
    got = texts(out)
    assert len(got) == len(set(got)) == len({i for i, _ in got})  # no duplicates
    assert sorted(got) == sorted(expected)  # none lost, none changed
    assert stats(out)["slow"]["docs_out"] == len(expected)
    assert not [p for p in (out / "data").iterdir() if p.name.startswith(".")]  # no stale temp shard visible


PIPE_FILE = """
from curate import Pipeline, extract, readers
pipeline = Pipeline(name="{name}", reader=readers.Warc(), steps=[extract.Resiliparse(), {step}])
"""


def _pipe(tmp: Path, step: str, name: str = "p") -> str:
    p = tmp / f"{name}.py"
    p.write_text(PIPE_FILE.format(name=name, step=step))
    return str(p)


def test_function_step_rejected_and_limit(shared, tmp_path):
    src = str(shared / "warc/wget/dolma_sample-000*.warc.gz")
    out = tmp_path / "o"
    rc = cli(["run", _pipe(tmp_path, "lambda doc: len(doc.text) > 200"), "--input", src, "--output", str(out),
              "--workers", "1", "--rejected", "--limit", "10", "--no-progress"])
    assert rc == 0
    s = stats(out)
    assert s["read"]["docs_out"] == 20  # --limit 10 per task, two tasks
    kept = texts(out)
    assert kept and all(len(t) > 200 for _, t in kept)
    rejected = [r for f in (out / "rejected").glob("*.parquet") for r in pq.read_table(f).to_pylist()]
    assert {r["drop_reason"] for r in rejected} <= {"lambda:rejected", "extract:empty"}
    assert len(rejected) == 20 - len(kept) == sum(s["lambda"]["dropped"].values()) + sum(s["extract"]["dropped"].values())
    assert all(len(r["text"]) <= 200 for r in rejected if r["drop_reason"] == "lambda:rejected")


def test_a_step_that_always_raises_fails_the_run(shared, tmp_path, capsys):
    step = "lambda doc: 1 / 0"
    rc = cli(["run", _pipe(tmp_path, step), "--input", str(shared / "warc/wget/*.warc.gz"), "--output",
              str(tmp_path / "o"), "--workers", "1", "--no-progress"])
    assert rc == 1
    assert "ZeroDivisionError" in capsys.readouterr().err


@pytest.mark.parametrize("args,message", [
    (["--input", "/nonexistent/*.warc.gz"], "no input files match"),
    (["--workers", "0"], "--workers must be >= 1"),
    (["--limit", "0"], "--limit must be >= 1"),
])
def test_cli_errors_exit_2_with_one_line(shared, tmp_path, capsys, args, message):
    base = {"--input": str(shared / "warc/cc/*.warc.gz"), "--output": str(tmp_path / "o"), "--workers": "1"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    rc = cli(["run", _pipe(tmp_path, "lambda d: True"), *[x for kv in base.items() for x in kv], "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1


def test_pipeline_file_without_pipeline_exits_2(tmp_path, capsys):
    bad = tmp_path / "nopipe.py"
    bad.write_text("x = 1\n")
    assert cli(["run", str(bad), "--input", "x", "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "defines no `pipeline" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as e:
        cli(["run", str(bad), "--workers", "many"])
    assert e.value.code == 2


def test_function_step_of_a_wrong_return_type_names_the_step():
    from curate.core.document import Document
    from curate.core.step import FunctionStep

    def score(doc):
        return 0.5

    with pytest.raises(TypeError, match=r"^step 'score' returned float; expected bool, Document, a list of Documents or None$"):
        FunctionStep(score).apply(Document(id="1", text="x", source="web"))


def test_a_step_may_split_a_document_into_several(tmp_path):
    """A generator step turns each document into its paragraphs; every count below is read off the input."""
    texts = ["one\n\ntwo\n\nthree", "alpha\n\nbeta", "single", ""]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)))

    def paragraphs(doc):
        for i, part in enumerate(p for p in doc.text.split("\n\n") if p):
            yield doc.child(i, part)

    pipe = Pipeline(name="split", reader=readers.Jsonl(source="t"),
                    steps=[paragraphs, lambda d: len(d.text) > 3], writer=writers.Parquet())
    pipe.run(inputs=[str(src)], output=str(tmp_path / "out"), workers=1, progress=False)
    rows = pq.read_table(sorted((tmp_path / "out" / "data").glob("*.parquet"))).to_pylist()
    assert sorted(r["text"] for r in rows) == ["alpha", "beta", "single", "three"]  # 'one', 'two' are <= 3 chars
    assert len({r["id"] for r in rows}) == len(rows)  # every piece has its own id
    parents = Counter(json.loads(r["metadata"])["parent_id"] for r in rows)
    assert sorted(parents.values()) == [1, 1, 2]  # 'three' of doc 0, 'alpha' + 'beta' of doc 1, 'single' of doc 2
    stats = {s["name"]: s for s in json.loads((tmp_path / "out" / "stats.json").read_text())["steps"]}
    split, keep = stats["paragraphs"], stats["lambda"]
    assert (split["docs_in"], split["docs_out"]) == (4, 6)  # 3 + 2 + 1 paragraphs; the empty text gives none
    assert split["dropped"] == {"paragraphs:rejected": 1}
    assert (split["extra"]["split_docs"], split["extra"]["split_parts"]) == (3, 6)
    assert (keep["docs_in"], keep["docs_out"]) == (6, 4)


# ---------------------------------------------------------------- issue 13: identity, batch fallback, resume


def test_reused_ids_do_not_make_unique_documents_disappear(tmp_path):
    """{id:b,X}, {id:a,X}, {id:b,Y}: exact dedup keeps one X and Y (case 3; before, Y was dropped)."""
    from curate import dedup

    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "b", "text": "X X X"}\n{"id": "a", "text": "X X X"}\n{"id": "b", "text": "Y is unique"}\n')
    Pipeline(name="ids", reader=readers.Jsonl(), steps=[dedup.Exact()]).run(
        inputs=str(src), output=str(tmp_path / "o"), progress=False)
    rows = [r for f in sorted((tmp_path / "o/data").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert sorted(r["text"] for r in rows) == ["X X X", "Y is unique"]
    assert stats(tmp_path / "o")["exact"]["dropped"] == {"exact:duplicate": 1}


class BrokenBatch(Step):
    """A vectorised step whose batch path rewrites documents and counts, then raises on batches of 2+."""

    name = "broken"

    def __init__(self):
        self._seen = 0

    def apply_batch(self, docs):
        for d in docs:
            self._seen += 1
            d.text = d.text + " [touched]"
        if len(docs) > 1:
            raise RuntimeError("the vectorised path is broken")
        return docs

    def finish(self, st):
        st.extra["seen"] = self._seen
        self._seen = 0


def test_failed_batch_is_retried_explicitly_on_unmodified_copies_counted_once(tmp_path):
    """Case 5: the fallback is counted, works on copies taken before the batch call, counters counted once."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": f"doc {i}"}) + "\n" for i in range(100)))
    Pipeline(name="b", reader=readers.Jsonl(), steps=[BrokenBatch()]).run(
        inputs=str(src), output=str(tmp_path / "o"), progress=False)
    s = stats(tmp_path / "o")["broken"]
    assert s["extra"]["batch_fallbacks"] == 2  # 100 documents = batches of 64 and 36
    assert "vectorised path is broken" in s["extra"]["batch_error"]
    assert s["extra"]["seen"] == 100 and s["docs_out"] == 100 and s["errors"] == 0
    assert sorted(t for _, t in texts(tmp_path / "o")) == sorted(f"doc {i} [touched]" for i in range(100))


RESUME_PIPE = """
from curate import Pipeline, Step, readers

class Model(Step):
    name = "model"
    file_params = ("path",)  # declared: its content is part of the pipeline
    def __init__(self, path):
        self.path = path
    def apply(self, doc):
        return doc

pipeline = Pipeline(name="r", reader=readers.Jsonl(), steps=[lambda doc: len(doc.text) > {n}, Model({model!r})])
"""


def test_resume_refuses_a_changed_function_body_or_model_file(tmp_path, capsys):
    """Case 8: a lambda edited on the same line, or a retrained model file, is a different pipeline."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": "word " * i}) + "\n" for i in range(20)))
    model = tmp_path / "quality.bin"
    model.write_bytes(b"weights v1")
    pipe = tmp_path / "p.py"
    out = str(tmp_path / "o")

    def run_with(n: int) -> int:
        pipe.write_text(RESUME_PIPE.format(n=n, model=str(model)))
        return cli(["run", str(pipe), "--input", str(src), "--output", out, "--workers", "1", "--no-progress"])

    assert run_with(20) == 0
    capsys.readouterr()
    assert run_with(20) == 0  # the same code and model: a resume
    os.utime(model, ns=(time.time_ns(), time.time_ns()))  # touched, same bytes: still the same pipeline
    assert run_with(20) == 0
    assert run_with(30) == 2  # the lambda's body changed, its name and line did not
    assert "different pipeline" in capsys.readouterr().err
    model.write_bytes(b"weights v2")  # retrained in place
    assert run_with(20) == 2
    assert "different pipeline" in capsys.readouterr().err


def test_input_keys_name_files_relative_to_the_inputs_common_directory():
    from curate.run.pipeline import input_keys

    assert input_keys(["/data/a/part-0.jsonl", "/data/b/part-0.jsonl"]) == ["a/part-0.jsonl", "b/part-0.jsonl"]
    assert input_keys(["s3://bucket/crawl/a.warc.gz"]) == input_keys(["/mnt/crawl/a.warc.gz"]) == ["a.warc.gz"]
    assert input_keys(["file:///x/y/1.jsonl", "/x/y/2.jsonl"]) == ["1.jsonl", "2.jsonl"]


def test_index_directories_are_fingerprinted_by_their_files(tmp_path):
    """A step naming an index directory (decontam) is a different step once a file in it is rebuilt."""
    from curate.run.fingerprint import Fingerprinter

    def describe(step):
        return Fingerprinter().component(step)

    class UsesIndex(Step):
        file_params = ("index_path",)

        def __init__(self, index_path):
            self.index_path = index_path

    index = tmp_path / "index"
    index.mkdir()
    (index / "index.json").write_text('{"n": 13}')
    (index / "hashes.npy").write_bytes(b"\x00" * 64)
    before = describe(UsesIndex(str(index)))
    os.utime(index / "hashes.npy", ns=(time.time_ns(), time.time_ns()))
    assert describe(UsesIndex(str(index))) == before  # touched only
    (index / "hashes.npy").write_bytes(b"\x01" * 64)
    assert describe(UsesIndex(str(index))) != before
