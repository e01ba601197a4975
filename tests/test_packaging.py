"""The package as users install it (issue 23): the wheel, its dependencies, and what imports without what.

The wheel test installs build/wheelhouse (made by `make wheelhouse`, which `make test` runs: `pip wheel .`,
`auditwheel repair`, and every dependency's wheel) into a fresh venv with the stock pip of this Python, offline
and with no C compiler on PATH, and runs pipelines/web.py over a shared WARC file: it must keep the documents the
checkout's own build keeps. The others read the declared dependencies (pyproject.toml) against what the code
imports, and import the package with the C extension or torch made unimportable.
"""

from __future__ import annotations

import ast
import ensurepip
import glob
import gzip
import json
import os
import re
import subprocess
import sys
import venv
from importlib.metadata import packages_distributions
from pathlib import Path

import pyarrow.parquet as pq
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the train extra's tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
WHEELHOUSE = ROOT / "build" / "wheelhouse"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
WARC = "warc/wget/dolma_sample-0000.warc.gz"  # 48 records, of which pipelines/web.py keeps 16 documents


def _name(req: str) -> str:
    """A requirement's distribution name, normalised (PEP 503)."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", req).group(0)).lower()


def _imports(package: str) -> set[str]:
    """The top-level modules that the files of `package` import, less the standard library and the project's own."""
    found = set()
    for f in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in ("curate", "train")}


@pytest.mark.parametrize("package, extras", [("curate", ("fast", "ray", "s3", "litdata", "lang", "models", "substrings", "semantic",
                                                               "view")),
                                                   ("train", ("train",))])
def test_every_module_imported_is_a_declared_dependency(package, extras):
    """curate may import the core dependencies and, on demand, those of its extras; train those and its own extra.
    jusText (which imports lxml.html.clean) is not among them: its stop-word lists ship as data."""
    declared = {_name(r) for r in PROJECT["dependencies"]}
    declared |= {_name(r) for e in extras for r in PROJECT["optional-dependencies"][e]}
    dists = packages_distributions()
    missing = {m: dists.get(m) for m in _imports(package) if not {_name(d) for d in dists.get(m, [m])} & declared}
    assert not missing, f"{package} imports modules of undeclared distributions: {missing}"
    assert "justext" not in _imports("curate")


# the modules of curate.models that run a model: the only ones of curate that import torch (and transformers)
TORCH_MODULES = {"curate.models.gpt", "curate.models.checkpoint", "curate.models.scoring", "curate.models.device",
                 "curate.models.inference"}


def test_torch_is_an_extras_and_only_curate_models_imports_it():
    assert not any(_name(r) == "torch" for r in PROJECT["dependencies"])
    assert all(any(_name(r) == "torch" for r in PROJECT["optional-dependencies"][e]) for e in ("train", "models"))
    # every other module of curate imports with torch and transformers unimportable, curate.models itself included
    code = ("import importlib, pkgutil, sys\nsys.modules['torch'] = None\nsys.modules['transformers'] = None\n"
            "import curate, curate.models\n"
            "names = [m.name for m in pkgutil.walk_packages(curate.__path__, 'curate.') if not m.name.endswith('__main__')"
            f" and m.name not in {sorted(TORCH_MODULES)!r}]\n"
            "for n in names:\n    importlib.import_module(n)\nprint(len(names))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout) > 50


def test_extra_names_need_no_normalising():
    """Old pips (23.2, Python 3.11's own) match an extra only as written: every extra named here is written in
    its normalised form, and lxml.html.clean, which jusText asks for as lxml[html_clean], is declared by name."""
    reqs = PROJECT["dependencies"] + [r for rs in PROJECT["optional-dependencies"].values() for r in rs]
    for r in reqs:
        for extra in re.findall(r"\[([^\]]*)\]", r.split(";")[0]):
            assert all(e.strip() == _name(e.strip()) for e in extra.split(",")), r
    assert all(e == _name(e) for e in PROJECT["optional-dependencies"])
    assert "lxml-html-clean" in {_name(r) for r in PROJECT["dependencies"]}


def test_the_shipped_stop_word_lists_are_justexts():
    justext = pytest.importorskip("justext")  # trafilatura's dependency: the reference, not what curate reads
    from curate.extract import features

    features._stoplists.clear()
    features._load_stoplists()
    assert features._stoplists == [frozenset(justext.get_stoplist(n)) for n in sorted(justext.get_stoplists())]
    assert (ROOT / "curate/extract/stoplists/LICENSE.rst").read_text().count("Jan Pomikalek") == 1


def test_the_library_extractors_work_without_the_extension(shared: Path):
    """With curate.extract._walk unimportable, Trafilatura and Resiliparse extract and guard depth (the regex
    scan stands in for C's and agrees with it), and asking for Main says in one line what is missing."""
    import curate.extract.base as base

    with gzip.open(shared / "extraction/readability/html/001.html.gz", "rt", encoding="utf-8") as f:
        page = f.read()
    cases = ["<div>" * 600 + "x", "<div><p>a</div>" * 3, page]
    code = """
import json, sys
sys.modules["curate.extract._walk"] = None
from curate import Document, extract
html = json.loads(sys.stdin.read())
out = {"depths": [extract.nesting_depth(h, 512) for h in html]}
for ex in (extract.Trafilatura(), extract.Resiliparse()):
    ex.setup()
    d = ex.apply(Document(id="p", text="", source="t", html=html[-1]))
    out[type(ex).__name__] = len(d.text) if isinstance(d, Document) else str(d)
    out[type(ex).__name__ + "_deep"] = str(ex.apply(Document(id="d", text="", source="t", html="<div>" * 600)))
try:
    extract.Main
except ImportError as e:
    out["main"] = str(e)
print(json.dumps(out))
"""
    run = subprocess.run([sys.executable, "-c", code], input=json.dumps(cases), capture_output=True, text=True,
                         cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert out["depths"] == [base.nesting_depth(h, 512) for h in cases]  # the C scan's answers
    assert out["Trafilatura"] > 1000 and out["Resiliparse"] > 1000
    assert "too_deep" in out["Trafilatura_deep"] and "too_deep" in out["Resiliparse_deep"]
    assert "\n" not in out["main"] and "curate.extract._walk" in out["main"] and "pip install" in out["main"]


def _documents(out: Path) -> list[tuple[str, str]]:
    files = glob.glob(str(out / "data" / "**" / "*.parquet"), recursive=True)
    return sorted((r["id"], r["text"]) for f in files for r in pq.read_table(f, columns=["id", "text"]).to_pylist())


def _run_web(curate: str, env: dict[str, str], shared: Path, out: Path) -> list[tuple[str, str]]:
    for cmd in ([curate, "models", "fetch", "lid", "--from", str(shared / "models/lid.176.ftz")],
                [curate, "run", str(ROOT / "pipelines/web.py"), "--input", str(shared / WARC), "--output", str(out),
                 "--workers", "1", "--no-progress"]):
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=out.parent)
        assert run.returncode == 0, (cmd, run.stdout[-2000:], run.stderr[-2000:])
    return _documents(out)


@pytest.mark.slow
def test_the_wheel_installs_offline_with_stock_pip_and_no_compiler_and_runs_the_web_pipeline(shared, tmp_path):
    wheels = sorted(WHEELHOUSE.glob("peneira-*.whl"))
    if not wheels:
        pytest.skip("no wheelhouse: run `make wheelhouse` (`make test` does)")
    assert len(wheels) == 1 and "-manylinux" in wheels[0].name, wheels  # auditwheel's tag, not linux_x86_64
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)  # ensurepip: the pip this Python ships
    bin_dir = env_dir / "bin"
    pip = subprocess.run([bin_dir / "python", "-m", "pip", "--version"], capture_output=True, text=True, check=True)
    assert pip.stdout.split()[1] == ensurepip.version()
    # no compiler, no pip configuration, no index: the wheelhouse only
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "PIP_CONFIG_FILE": os.devnull, "LANG": "C.UTF-8",
           "PENEIRA_CACHE": str(tmp_path / "cache")}
    assert not any((Path(p) / cc).exists() for p in env["PATH"].split(os.pathsep) for cc in ("cc", "gcc", "clang"))
    install = subprocess.run([bin_dir / "pip", "install", "--no-index", "--find-links", str(WHEELHOUSE),
                              "--no-cache-dir", "--disable-pip-version-check", "-q", "peneira"],
                             env=env, capture_output=True, text=True)
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-3000:]
    check = subprocess.run([bin_dir / "python", "-c", "import torch"], env=env, capture_output=True, text=True)
    assert check.returncode != 0  # curation alone does not pull torch
    got = _run_web(str(bin_dir / "curate"), env, shared, tmp_path / "wheel-out")
    # the same pipeline with the checkout's own build: the same documents
    here = {**os.environ, "PENEIRA_CACHE": str(tmp_path / "cache-here")}
    assert got and got == _run_web(str(Path(sys.executable).parent / "curate"), here, shared, tmp_path / "here-out")
    # trafilatura imports lxml.html.clean (through jusText), which stock pip leaves out unless declared by name
    traf = subprocess.run([bin_dir / "python", "-c", "from curate import extract; extract.Trafilatura().setup()"],
                          env=env, capture_output=True, text=True)
    assert traf.returncode == 0, traf.stderr[-2000:]
