"""What a recorded ablation depends on, so a record cannot silently go stale when the code changes.

Each variant's curation records `depends`: every part of its pipeline as it ran (the readers of the spec's inputs, the
steps, the writer), each by the fingerprint `curate run` keeps to decide whether a run may be resumed
(`curate.run.fingerprint`: the parameters, and user code by its bytecode and the values it reads), and by the
library modules it is made of. `curate run` counts library code by its name only (a library upgrade is the
user's to notice); a record of measurements must see it change, since a changed step changes what the numbers
mean. So each part also names its code: the modules defining its class and its bases, and the modules those import
(one level: a step's helpers, not the whole library), each by a digest of its syntax tree without docstrings,
so a comment, a docstring or a moved line changes nothing. Each training run records the trainer's and the
evaluation's code the same way (`trainer_code`).

`stale(record, spec)` compares a results.json with what the current code would record, without curating or
training: the dependencies of every pipeline are computed from the code as it is now (loading a pipeline file
reads no model or input). tests/test_ablate_records.py runs it on the documented records.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import tokenize
from pathlib import Path
from typing import Any

from curate.run.fingerprint import Fingerprinter, _window

FORMAT = "peneira.ablate-depends/1"
ROOTS = ("curate", "train")  # the project's own packages: their modules are digested
TRAINER = ("train.loop", "train.data", "train.evaluate", "train.evaluate.heldout", "train.evaluate.icl",
           "curate.models.gpt", "curate.tokens.mix", "curate.tokens.tokenize")
# the code a run's numbers come from: the training loop, its data loader, the model, the evaluation, the mix and
# the tokenizer (with the modules each imports)


class _Declared(Fingerprinter):
    """Declared files (models, word lists) by their name only: a record's code dependencies must be comparable on a
    machine without the quality model or the language-ID model. What the files held is the spec's business (the
    classifier's card is in the record)."""

    def path(self, value: str | os.PathLike) -> str:
        return repr(os.fspath(value))


def _is_ours(module: str | None) -> bool:
    return bool(module) and module.split(".")[0] in ROOTS


# the project's source tree: modules are found by their files, never imported (importing train.loop for its
# fingerprint would load torch)
SOURCE = Path(__file__).resolve().parents[2]


def _source(module: str) -> Path | None:
    base = SOURCE.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@functools.cache
def _tree(module: str) -> ast.Module:
    return ast.parse(_source(module).read_text())


@functools.cache
def module_digest(module: str) -> str:
    """The module's tokens without comments, blank lines and docstrings: changes when its code does, not when a
    comment, a docstring or the indentation's width does, and reads the same on every Python version (a syntax
    tree's dump or bytecode do not)."""
    path = _source(module)
    docstrings = {(b[0].value.lineno, b[0].value.col_offset) for node in _statements(_tree(module))
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and (b := node.body) and isinstance(b[0], ast.Expr)
                  and isinstance(b[0].value, ast.Constant) and isinstance(b[0].value.value, str)}
    h = hashlib.blake2b(digest_size=8)
    with open(path, encoding="utf-8") as f:
        for tok in tokenize.generate_tokens(f.readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL) or (tok.type == tokenize.STRING and tok.start in docstrings):
                continue
            h.update(f"{tok.type}:{'' if tok.type == tokenize.INDENT else tok.string}\0".encode())
    return h.hexdigest()


def _statements(node: ast.AST):
    """The node and every statement nested in it (not expressions: imports and docstrings are statements, and a
    module has ten times more expression nodes to walk)."""
    yield node
    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, name, None) or ():
            if isinstance(child, ast.AST):
                yield from _statements(child)


def _from_imports(module: str) -> list[tuple[str, str]]:
    """(module, name) of each `from module import name` anywhere in `module` (functions import lazily here),
    relative imports resolved."""
    path = _source(module)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in _statements(_tree(module)):
        if isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            found += [(base, a.name) for a in node.names]
    return found


@functools.cache
def _imports(module: str) -> frozenset[str]:
    """The project's modules that `module` imports, a name imported from a package resolved to the module the
    package's __init__ imports it from."""
    found = set()
    for base, name in _from_imports(module):
        if _is_ours(base) and _source(base) is not None:
            found.add(_defining_module(base, name) if name else base)
    return frozenset(found)


def _defining_module(base: str, name: str) -> str:
    if _source(f"{base}.{name}") is not None:
        return f"{base}.{name}"
    if _source(base).name == "__init__.py":  # a package re-exporting a name: where its __init__ takes it from
        for where, imported in _from_imports(base):
            if imported == name and _is_ours(where) and _source(where) is not None:
                return f"{where}.{name}" if _source(f"{where}.{name}") is not None else where
    return base


def code_of(modules: list[str]) -> dict[str, str]:
    """{file: digest} of the given modules and the project's modules they import (one level)."""
    names = {m for m in modules if _source(m) is not None}
    for m in list(names):
        names |= _imports(m)
    return {_source(m).relative_to(SOURCE).as_posix(): module_digest(m) for m in sorted(names)}


def part_code(obj: Any) -> dict[str, str]:
    """The code a pipeline part is made of: the project's modules defining its class and its bases, with theirs."""
    return code_of([c.__module__ for c in type(obj).__mro__ if _is_ours(c.__module__)])


def trainer_code() -> dict[str, str]:
    return code_of(list(TRAINER))


def variant_depends(spec, variant: dict) -> dict:
    """The variant's pipeline as it would run now: [name, fingerprint, {file: digest}] for each input's reader, each
    step and the writer. Loads the pipeline file (under the variant's env), reads no input and no model."""
    from curate.run.pipeline import Pipeline
    from train.ablate.spec import environment, input_reader

    with environment(variant.get("env", {})):
        pipeline = Pipeline.from_file(variant["pipeline"])
    parts = [(f"reader {i['name']}", input_reader(i)) for i in spec.inputs]
    parts += [(s.name, s) for s in pipeline.steps] + [("writer", pipeline.writer)]
    fp = _Declared()
    return {"format": FORMAT, "parts": [[name, fp.component(obj)[0], part_code(obj)] for name, obj in parts]}


def stale(record: dict, spec) -> list[str]:
    """Why a results.json no longer describes what the current code would produce, one line each (empty: it
    still does): a variant whose curation recorded no fingerprints, a part of its pipeline whose fingerprint or
    code differs, runs made by other trainer or evaluation code."""
    problems = []
    variants = {v["name"]: v for v in record.get("variants", [])}
    now_trainer = trainer_code()
    for v in spec.variants:
        was = variants.get(v["name"], {})
        depends = was.get("curated", {}).get("depends")
        if not depends:
            problems.append(f"{v['name']}: record has no fingerprints: regenerate")
            continue
        now = variant_depends(spec, v)
        if depends.get("format") != now["format"]:
            problems.append(f"{v['name']}: fingerprints of another format ({depends.get('format')}): regenerate")
            continue
        problems += [f"{v['name']}: {line}" for line in _differences(depends, now)]
        codes = [r.get("trainer_code") for r in was.get("runs", [])]
        if not all(codes):
            problems.append(f"{v['name']}: runs without the trainer's fingerprints: regenerate")
            continue
        moved = sorted({f for c in codes for f in set(c) | set(now_trainer) if c.get(f) != now_trainer.get(f)})
        if moved:
            problems.append(f"{v['name']}: the trainer's or evaluation's code changed since its runs: {', '.join(moved)}")
    return problems


def stale_message(spec_file: str | os.PathLike, record_file: str | os.PathLike, doc: str | os.PathLike) -> str:
    """"" when the record still matches the code; else what differs, naming the record and the commands that make
    it again (`doc` is the page its tables are generated into)."""
    import json

    from train.ablate.spec import load_spec

    problems = stale(json.loads(Path(record_file).read_text()), load_spec(spec_file))
    if not problems:
        return ""
    return (f"{record_file} is stale: the code it was made with has changed\n  " + "\n  ".join(problems)
            + f"\nregenerate it ({doc} has the full commands):\n"
            f"  PENEIRA_LID_MODEL=../shared/data/models/lid.176.ftz OMP_NUM_THREADS=1 "
            f"python -m train ablate --spec {spec_file} --jobs 2 --no-progress\n"
            f"  python -m train ablate --spec {spec_file} --report --docs {doc}")


def _differences(was: dict, now: dict) -> list[str]:
    old = {name: (text, code) for name, text, code in was["parts"]}
    new = {name: (text, code) for name, text, code in now["parts"]}
    if list(old) != list(new):
        return [f"its pipeline's parts were {', '.join(old)}, now {', '.join(new)}"]
    lines = []
    for name, (text, code) in new.items():
        was_text, was_code = old[name]
        if was_text != text:
            lines.append(f"{name} changed, its parameters or its code: {_window(was_text, text)}")
        moved = sorted(f for f in set(code) | set(was_code) if code.get(f) != was_code.get(f))
        if moved:
            lines.append(f"{name}: its code changed: {', '.join(moved)}")
    return lines
