"""Issue 45: a command typed dozens of times a day loads only what it uses.

Each command runs in a fresh interpreter (`curate.cli.main.main`, as the console script calls it) that prints
which of the heavy packages ended up in `sys.modules`: the check is on modules, not on a time, so it holds on a
busy machine and fails the day someone adds `import polars` at the top of curate/cli/main.py or of a light
command's module. New subcommands are covered as they join `COMMANDS`.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from curate.cli.main import COMMANDS

# What no light command needs: compiled kernels, dataframes, deep learning, the cluster runtime, fastText.
HEAVY = {"numba", "polars", "torch", "transformers", "ray", "fasttext"}
# What a help text needs even less: Arrow and the array stack (pyarrow imports pandas on its first array).
ARRAYS = {"pyarrow", "numpy", "pandas", "scipy", "matplotlib"}

PROBE = """
import json, sys
from curate.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\\n" + json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def loaded(*argv: str, before: str = "") -> set[str]:
    """The top-level packages in `sys.modules` after `curate ARGV` ran in a fresh interpreter (`before`: code
    run first)."""
    out = subprocess.run([sys.executable, "-c", before + PROBE, *argv], capture_output=True, text=True,
                         check=True).stdout
    return set(json.loads(out.rstrip().rsplit("\n", 1)[-1]))


def test_the_probe_sees_what_was_imported():
    """The reference for every check here: the same probe reports a heavy package once something imports it."""
    assert {"polars", "numpy"} <= loaded("--help", before="import polars, numpy\n")


def test_bare_help_loads_no_heavy_or_array_package():
    assert not loaded("--help") & (HEAVY | ARRAYS)
    assert not loaded() & (HEAVY | ARRAYS)  # no command: the usage line, exit 2


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_commands_help_loads_no_heavy_package(command):
    mods = loaded(command, "--help")  # nor Arrow: inspect and dedup-report imported it at the top (0.22 s, 77 MiB)
    assert "curate" in mods and not mods & (HEAVY | ARRAYS), sorted(mods & (HEAVY | ARRAYS))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finished run of a plain pipeline: stats, shards, the run layout that the light commands read."""
    from curate import Pipeline, readers

    tmp = tmp_path_factory.mktemp("light")
    src = tmp / "docs.jsonl"
    src.write_text("".join(json.dumps({"id": str(i), "text": f"document {i} " * 20}) + "\n" for i in range(30)))
    Pipeline(name="light", reader=readers.Jsonl(source="t"), steps=[lambda d: len(d.text) > 10]).run(
        inputs=str(src), output=str(tmp / "out"), progress=False)
    return tmp / "out"


@pytest.mark.parametrize(("argv", "allowed"), [
    (["stats"], set()), (["status"], set()),
    (["inspect", "-n", "2"], {"pyarrow", "numpy", "pandas"}),  # it reads shards
    (["report"], ARRAYS),  # it reads shards and draws charts
])
def test_light_commands_load_only_what_they_use(run_dir, argv, allowed):
    mods = loaded(argv[0], str(run_dir), *argv[1:])
    assert not mods & HEAVY, sorted(mods & HEAVY)
    assert not mods & ARRAYS - allowed, sorted(mods & ARRAYS - allowed)


def test_a_one_file_run_loads_no_pandas(tmp_path):
    """A worker's fixed cost (issue 45): pyarrow imports pandas at its first array where pandas is installed
    (0.15-0.25 CPU s, ~40 MB a process); a run whose pipeline does not use pandas must not pay for it. The
    reference: the same run in a process that imported pandas first reports it (the probe sees it)."""
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"id": str(i), "text": f"doc {i} " * 9}) + "\n"
                                                 for i in range(20)))
    (tmp_path / "pipe.py").write_text("from curate import Pipeline, filters, readers, writers\n"
                                      "pipeline = Pipeline(name='p', reader=readers.Jsonl(source='t'), "
                                      "steps=[filters.Pii()], writer=writers.Parquet())\n")
    argv = ("run", str(tmp_path / "pipe.py"), "--input", str(tmp_path / "docs.jsonl"), "--workers", "1",
            "--no-progress", "--overwrite", "--output")
    mods = loaded(*argv, str(tmp_path / "out"))
    assert "pyarrow" in mods and "pandas" not in mods
    assert (tmp_path / "out" / "_done").is_dir()
    assert "pandas" in loaded(*argv, str(tmp_path / "out2"), before="import pandas\n")


SKIPPED = """
import sys
import pyarrow as pa
if sys.argv[1] == "skip":
    from curate.run.lean import skip_pandas
    skip_pandas()
    pa.Table.from_pylist([{"a": "x", "b": 1.5}])
    assert "pandas" not in sys.modules
import pandas as pd
df = pd.DataFrame({"c": pd.Categorical(["a", "b", "a"]), "n": pd.array([1, None, 3], dtype="Int64")})
t = pa.Table.from_pandas(df)
print(repr(t.schema), t.to_pylist(), pa.table(df).schema.metadata is not None)
print(pa.array(df["c"]).type, pa.array(df["n"]).to_pylist(), pa.chunked_array([df["n"]]).type)
print(t.to_pandas().equals(df), pa.array(pd.Series([pd.Timestamp("2020-01-01 00:00:00.000000001")])).type)
"""


def test_pandas_skipped_by_the_run_works_as_usual_once_imported():
    """`curate.run.lean.skip_pandas` lets pyarrow settle on "no pandas" in a worker; anything that imports pandas
    afterwards must get pyarrow's full pandas support: the same conversions as in a process that never skipped."""
    run = lambda mode: subprocess.run([sys.executable, "-c", SKIPPED, mode], capture_output=True, text=True,  # noqa: E731
                                      check=True).stdout
    assert run("skip") == run("plain")


def test_the_manifests_version_is_importlib_metadatas():
    """The run's manifest reads Peneira's version without importing importlib.metadata (35-45 CPU ms a run): the
    same answer as importlib.metadata's."""
    from importlib.metadata import version

    from curate.run.pipeline import own_version

    assert own_version() == version("peneira")
