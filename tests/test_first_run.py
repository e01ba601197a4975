"""Issue 22 items 13 and 14, tried as a new user would: a run that reads nothing, a glob that matches nothing,
the first run of pipelines/web.py before the language-ID model is fetched, and fetching it offline."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

from curate.cli.main import main as cli

ROOT = Path(__file__).resolve().parents[1]

JSONL_PIPE = """
from curate import Pipeline, readers
pipeline = Pipeline(name="t", reader=readers.{reader}, steps=[])
"""


def _records(path: Path, key: str, n: int = 40) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({key: f"document number {i}"}) + "\n" for i in range(n)))
    return path


def _run(tmp_path: Path, reader: str, src: str) -> int:
    pipe = tmp_path / "p.py"
    pipe.write_text(JSONL_PIPE.format(reader=reader))
    return cli(["run", str(pipe), "--input", src, "--output", str(tmp_path / "o"), "--workers", "1", "--no-progress"])


def test_text_under_another_key_exits_non_zero_with_the_reason_and_a_hint(tmp_path, capsys):
    src = _records(tmp_path / "in.jsonl", "content")
    assert _run(tmp_path, "Jsonl()", str(src)) == 1
    err = capsys.readouterr().err
    assert "no documents" in err and "read:no_text 40" in err and "text_key" in err
    assert len(err.splitlines()) == 1


def test_jsonl_given_to_a_warc_pipeline_exits_non_zero_with_a_hint(tmp_path, capsys):
    src = _records(tmp_path / "in.jsonl", "text")
    assert _run(tmp_path, "Warc()", str(src)) == 1
    err = capsys.readouterr().err
    assert "read:not_warc" in err and "readers.Jsonl" in err


def test_a_run_that_reads_documents_still_exits_zero(tmp_path, capsys):
    src = _records(tmp_path / "in.jsonl", "text")
    assert _run(tmp_path, "Jsonl()", str(src)) == 0
    assert capsys.readouterr().err == ""


def test_a_glob_missing_files_in_subfolders_suggests_double_star(tmp_path, capsys):
    _records(tmp_path / "crawl" / "a" / "part.jsonl", "text")
    assert _run(tmp_path, "Jsonl()", str(tmp_path / "crawl" / "*.jsonl")) == 2
    err = capsys.readouterr().err
    assert f"'{tmp_path / 'crawl' / '**' / '*.jsonl'}'" in err and "subfolders" in err


def test_first_web_run_without_the_model_fails_once_early_naming_the_fetch(shared, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PENEIRA_LID_MODEL", raising=False)
    monkeypatch.setenv("PENEIRA_CACHE", str(tmp_path / "cache"))
    warcs = sorted((shared / "warc").glob("**/*.warc*.gz"))[:2]
    out = tmp_path / "o"
    argv = ["run", str(ROOT / "pipelines/web.py"), "--output", str(out), "--workers", "1", "--no-progress"]
    for w in warcs:
        argv += ["--input", str(w)]
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "curate models fetch lid" in err
    assert not out.exists()  # no task ran, nothing was written


def test_models_fetch_offline_names_from(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PENEIRA_CACHE", str(tmp_path / "cache"))

    def offline(*args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    assert cli(["models", "fetch", "lid"]) == 2
    err = capsys.readouterr().err
    assert "fetching https://" in err  # announced before anything is downloaded
    assert "--from PATH" in err and err.strip().splitlines()[-1].startswith("curate models: error:")


def test_readme_fetches_the_model_before_the_first_web_run():
    """The commands a user copies (the code block with the first `curate run pipelines/web.py`) fetch it first."""
    text = (ROOT / "README.md").read_text()
    first_run = re.search(r"^curate run pipelines/web\.py", text, re.M)
    assert first_run is not None
    block = text[text.rfind("```bash", 0, first_run.start()):first_run.start()]
    assert re.search(r"^curate models fetch lid", block, re.M)


# ---------------------------------------------------------------- issue 29.14: mistakes in the pipeline file

HEAD = "from curate import Pipeline, readers\n"
BROKEN = {
    "syntax": (HEAD + "pipeline = Pipeline(name='t', reader=readers.Jsonl(), steps=[]\nx = = 1\n",
               r"p\.py:2: SyntaxError: '\(' was never closed"),
    "name": (HEAD + "\npipeline = Pipeline(name='t', reader=readers.Jsonl(), steps=[undefined_step])\n",
             r"p\.py:3: NameError: name 'undefined_step' is not defined"),
    "import": (HEAD + "import no_such_module_anywhere\n", r"p\.py:2: ModuleNotFoundError: No module named"),
    "unpicklable": (HEAD + "import threading\nLOCK = threading.Lock()\n\ndef guarded(doc):\n    with LOCK:\n"
                    "        return True\n\npipeline = Pipeline(name='t', reader=readers.Jsonl(), steps=[guarded])\n",
                    r"step 'guarded' \(.*p\.py:5\) cannot be sent to worker processes \(cannot pickle '_thread\.lock' "
                    r"object\); it reads the module-level 'LOCK'"),
}
FIXED = HEAD + "\ndef guarded(doc):\n    return True\n\npipeline = Pipeline(name='t', reader=readers.Jsonl(), steps=[guarded])\n"


def _run_file(tmp_path: Path, text: str, workers: str = "1") -> int:
    pipe = tmp_path / "p.py"
    pipe.write_text(text)
    src = _records(tmp_path / "in.jsonl", "text")
    return cli(["run", str(pipe), "--input", str(src), "--output", str(tmp_path / "o"), "--workers", workers,
                "--no-progress"])


def test_a_broken_pipeline_file_is_one_line_naming_where_and_writes_nothing(tmp_path, capsys):
    for kind, (text, expected) in BROKEN.items():
        assert _run_file(tmp_path, text) == 2, kind
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and re.search(expected, err[0]), (kind, err)
        assert not (tmp_path / "o").exists(), kind  # nothing written: the fixed file needs no --overwrite
    assert _run_file(tmp_path, FIXED, workers="2") == 0


def test_a_step_that_leaves_text_none_is_one_line_naming_the_step(tmp_path, capsys):
    nuke = HEAD + ("\ndef nuke(doc):\n    doc.text = None\n    return doc\n\n"
                   "pipeline = Pipeline(name='t', reader=readers.Jsonl(), steps=[nuke])\n")
    for workers in ("1", "2"):
        (tmp_path / workers).mkdir()
        assert _run_file(tmp_path / workers, nuke, workers) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "step 'nuke' left document" in err[0] and "NoneType" in err[0], err
