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


def test_the_version_has_one_home_that_the_installed_metadata_agrees_with():
    """curate/core/version.py is the one home (pyproject.toml reads it at build time): the installed distribution's
    metadata and `curate.__version__` (which every run's manifest records) say the same."""
    from importlib.metadata import version

    import curate
    from curate.core.version import __version__

    assert curate.__version__ == __version__ == version("peneira")
