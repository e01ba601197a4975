"""The packages' import graph: no cycles, and no module imports from a layer above its own.

The graph covers `curate` and `train` (the trainer sits above all of curate: it reads curate's outputs and may
use its readers, and curate never imports it). It is read from the source (every `import` / `from … import` of a
`curate` or `train` module, at module level
or inside functions, since a lazy import is a dependency all the same); imports under `if TYPE_CHECKING:`
are annotations only and are left out. The layer table is the one in docs/architecture.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [ROOT / "curate", ROOT / "train"]
TOP = {p.name for p in PACKAGES}

# Bottom up; a module may import from its own layer and the ones below it.
LAYERS = [
    ("core", ["curate.core"]),
    ("io", ["curate.io"]),
    ("lang", ["curate.lang"]),
    ("models", ["curate.models"]),
    ("steps", ["curate.extract", "curate.filters", "curate.dedup", "curate.decontam", "curate.quality"]),
    ("run", ["curate.run"]),
    ("tokens", ["curate.tokens"]),
    ("apps", ["curate.report", "curate.cli", "curate.demo", "curate.view", "curate.__main__", "curate"]),
    ("train", ["train"]),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    assert rank >= 0, f"{module} is in no layer: add it to LAYERS and docs/architecture.md"
    return rank


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The curate and train modules `path` imports (a `from pkg import name` naming a submodule counts as it)."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_nodes(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] in TOP)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in TOP:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in modules else node.module)
    me = module_name(path)
    return {m for m in found if m in modules and m != me}


def graph() -> dict[str, set[str]]:
    files = sorted(f for p in PACKAGES for f in p.rglob("*.py"))
    modules = {module_name(f) for f in files}
    return {module_name(f): imports_of(f, modules) for f in files}


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path a -> … -> a, or None (iterative DFS with colours)."""
    colour = dict.fromkeys(g, 0)
    for start in g:
        if colour[start]:
            continue
        stack = [(start, iter(sorted(g[start])))]
        path = [start]
        colour[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif colour[nxt] == 0:
                colour[nxt] = 1
                stack.append((nxt, iter(sorted(g[nxt]))))
                path.append(nxt)
    return None


def test_find_cycle_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycles():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_module_imports_a_layer_above_its_own():
    # Package __init__ files re-export their own layer; the top-level curate/__init__ is the public API.
    wrong = [f"{m} ({LAYERS[layer_of(m)][0]}) imports {d} ({LAYERS[layer_of(d)][0]})"
             for m, deps in graph().items() for d in deps
             if layer_of(d) > layer_of(m) and not (m == "curate" and d.startswith("curate."))]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("name", ["Pipeline", "Document", "Step", "Filter", "Reject", "GlobalStep", "readers",
                                  "extract", "filters", "quality", "decontam", "dedup", "writers"])
def test_the_public_api_of_a_pipeline_file(name):
    import curate

    assert getattr(curate, name) is not None


def doc_imports() -> list[tuple[str, str]]:
    """Every `from curate … import …` / `import curate…` line in the README and docs, with where it stands."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for n, line in enumerate(page.read_text().splitlines(), start=1):
            code = line.strip()
            if code.startswith(("from curate", "import curate", "from train", "import train")):
                found.append((f"{page.name}:{n}", code))
    return found


@pytest.mark.parametrize(("where", "line"), doc_imports())
def test_every_import_the_docs_show_works(where, line):
    exec(compile(line, where, "exec"), {})
