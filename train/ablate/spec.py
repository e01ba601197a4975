"""The ablation's spec and its stages' bookkeeping: records, keys, locks and the token budget rule.

Both `train.ablate.stages` (which runs the stages) and `train.ablate.report` (which reads what they recorded) import this
module, and neither imports the other's internals.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

READERS = ("warc", "fastwarc", "jsonl", "parquet")


@dataclass
class Spec:
    out: Path
    inputs: list[dict]  # {name, path, reader}
    variants: list[dict]  # {name, pipeline, seeds?, env?}
    tokens: str = "auto"  # the budget: a count ("1M") or "auto" (the unique tokens of the smallest variant)
    max_epochs: float = 1.0  # how often any variant may see its text; a budget above that is refused
    vocab_size: int = 4096
    tokenizer_chars: float = 2e7
    mix_seed: int = 0
    workers: int = 1
    threads: int = 0  # torch intra-op threads; 0 = torch's default
    train: dict[str, Any] = field(default_factory=dict)  # config = NAME or FILE, seeds, eval_points, any trainer key
    eval: dict[str, Any] = field(default_factory=dict)  # heldout, max_bytes, max_docs, icl_dir, tasks, limit, ...


def load_spec(path: str | Path) -> Spec:
    """The TOML spec; relative paths inside it are relative to the current directory, as on the command line."""
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    known = set(Spec.__dataclass_fields__)
    unknown = set(raw) - known - {"input", "variant"}
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)} (known: {sorted(known)})")
    inputs, variants = raw.pop("input", []), raw.pop("variant", [])
    if not inputs or not variants:
        raise ValueError(f"{path}: needs at least one [[input]] and one [[variant]]")
    for i in inputs:
        if i.get("reader", "warc") not in READERS or not {"name", "path"} <= i.keys():
            raise ValueError(f"{path}: an [[input]] needs name, path and a reader in {sorted(READERS)}: {i}")
    names = [v.get("name") for v in variants]
    if len(set(names)) != len(names) or not all(names) or not all("pipeline" in v for v in variants):
        raise ValueError(f"{path}: every [[variant]] needs a unique name and a pipeline file: {names}")
    if "tokens" in raw:
        raw["tokens"] = str(raw["tokens"])
    if float(raw.get("max_epochs", 1.0)) <= 0:
        raise ValueError(f"{path}: max_epochs must be positive, got {raw['max_epochs']}")
    return Spec(out=Path(raw.pop("out", "runs/ablation")), inputs=inputs, variants=variants, **raw)


@contextlib.contextmanager
def environment(env: dict[str, str]):
    """A variant's `env` while its pipeline file is loaded (a pipeline reads e.g. PENEIRA_QUALITY_MODEL then)."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update({k: str(v) for k, v in env.items()})
    try:
        yield
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def input_reader(i: dict):
    """The reader of an [[input]]; its documents keep the input's name as their source."""
    from curate.io import readers

    kinds = {"warc": readers.Warc, "fastwarc": readers.FastWarc, "jsonl": readers.Jsonl, "parquet": readers.Parquet}
    return kinds[i.get("reader", "warc")](source=i["name"])


def seeds_of(spec: Spec, variant: dict) -> list[int]:
    return list(variant.get("seeds", spec.train.get("seeds", [0])))


def budget(spec: Spec, unique: dict[str, int]) -> int:
    """The tokens every variant is mixed to (and at most trained on), from each variant's unique tokens.

    `tokens = "auto"`: the most that repeats no variant more than `max_epochs` times, i.e. the smallest variant's
    unique tokens times `max_epochs`. A given count that would repeat some variant more often is refused: a filter
    that drops text would otherwise be charged for the extra epochs it causes, not judged on the text it keeps."""
    from curate.tokens.mix import parse_count

    if not unique or min(unique.values()) <= 0:
        raise ValueError(f"a variant kept no text: unique tokens {unique}")
    if spec.tokens == "auto":
        return int(min(unique.values()) * spec.max_epochs)
    tokens = parse_count(spec.tokens)
    over = {v: tokens / u for v, u in unique.items() if tokens > spec.max_epochs * u}
    if over:
        worst = ", ".join(f"{v} {unique[v]:,} unique tokens ({e:.2f} epochs)" for v, e in sorted(over.items()))
        raise ValueError(f"tokens = {spec.tokens} repeats variants more than max_epochs = {spec.max_epochs}: {worst}; "
                         f"lower tokens, use tokens = \"auto\" or raise max_epochs")
    return tokens


# ---------------------------------------------------------------------------------------------- stages


def digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def mark_file(path: Path) -> Path:
    """A stage's record sits beside its directory, so the directory holds only what the stage's tool wrote there
    (`curate mix` refuses an output directory with foreign files in it)."""
    return path.parent / f".{path.name}.ablate.json"


def read_mark(path: Path) -> dict:
    f = mark_file(path)
    return json.loads(f.read_text()) if f.is_file() else {}


def stage_state(path: Path, key: str) -> str:
    """'done', 'partial' (same key, unfinished: resume it) or 'new' (missing, or made from other inputs: redone)."""
    record_file = mark_file(path)
    if record_file.is_file():
        record = json.loads(record_file.read_text())
        if record["key"] == key and path.exists():  # a folder deleted by hand (its mark left) is made again
            return "done" if record["done"] else "partial"
        record_file.unlink()
    if path.exists():
        shutil.rmtree(path)
    return "new"


def mark(path: Path, key: str, done: bool, **info: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = mark_file(path).with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": key, "done": done, **info}, indent=1))
    tmp.replace(mark_file(path))


@contextlib.contextmanager
def stage_lock(path: Path):
    """Held while a stage is checked and built, so two processes (`--jobs`, or two `--only` invocations) never build
    the same stage: the second waits, then finds it done. An exclusive `flock` on a file beside the stage; the
    kernel releases it when its holder exits, however it exits, so a killed run leaves no stale lock."""
    lock = path.parent / f".{path.name}.ablate.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"ablate: waiting for another process building {path}", file=sys.stderr, flush=True)
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def stage_busy(path: Path) -> bool:
    """Whether another process holds the stage's lock now (a hint for ordering work; the lock itself decides)."""
    lock = path.parent / f".{path.name}.ablate.lock"
    if not lock.is_file():
        return False
    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False
