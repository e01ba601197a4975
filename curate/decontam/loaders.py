"""Benchmark loaders: every evaluation set becomes a list of `Item`s, each a few text segments.

An item is one evaluation example (a question with its choices, a coding task); its segments are the
pieces of text a model sees at evaluation time and that could leak into a crawl verbatim. N-grams are
taken inside segments, never across two, so the index holds no n-gram that exists only because two
fields were glued together (a question and its letter-labelled choices, say).

Formats are recognised from the data, so `--benchmark arc=arc_challenge.jsonl` needs no format flag:

| data | segments |
|---|---|
| HumanEval (`task_id`, `prompt`, `canonical_solution`) | prompt, canonical solution |
| GSM8K (`question`, `answer`) | question, worked answer (the `<<48/2=24>>` calculator notes removed) |
| MMLU directory of CSVs (`question, choice0..3, answer`; a first row whose answer is not A-D/0-3 is a header) | question, each choice |
| ICL `query` / `choices` / `gold` (ARC, PIQA, SIQA, OBQA, CSQA, COPA, BoolQ, HellaSwag) | each line of the query without its `Question:`/`Choices:`/`A.` scaffolding, each choice |
| ICL `context_options` / `continuation` (WinoGrande, WSC) | each option completed by the continuation |
| ICL `context` / `continuation` (LAMBADA) | the passage with its last word |
| ICL `context` / `answer` (TriviaQA, MATH) | the context lines, `chain_of_thought` when present |
| anything else: `path:field1,field2` (JSONL, JSON, CSV, TSV, Parquet) | the named fields |
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class BenchmarkError(ValueError):
    """A benchmark path or file that cannot be loaded (missing, unknown format, missing fields)."""


@dataclass(frozen=True, slots=True)
class Item:
    key: str  # stable within its benchmark: task id, or file/line
    segments: tuple[str, ...]


_LABEL = re.compile(r"^\s*(?:question|passage|context|answer|choices|options|q|a)\s*:\s*", re.IGNORECASE)
_CHOICE = re.compile(r"^\s*(?:\(?[A-Ea-e][.)]|\([A-Ea-e]\))\s+")
_CALC = re.compile(r"<<[^<>]*>>")
_ANSWERS = frozenset("ABCD0123")  # MMLU's answer column: a letter (Hendrycks) or an index (HF cais/mmlu)


def _clean_lines(text: str) -> list[str]:
    """Split an ICL prompt into its lines without the scaffolding that the eval harness added."""
    out = []
    for line in str(text).splitlines():
        line = _CHOICE.sub("", _LABEL.sub("", line)).strip()
        if line:
            out.append(line)
    return out


def _open(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")  # newline="": the csv module's requirement
    return open(path, encoding="utf-8", newline="")


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with _open(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise BenchmarkError(f"{path}:{lineno}: not JSON ({e.msg})") from None
            if not isinstance(rec, dict):
                raise BenchmarkError(f"{path}:{lineno}: expected a JSON object, got {type(rec).__name__}")
            yield lineno, rec


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


def icl_item(key: str, rec: dict[str, Any]) -> Item:
    """One record of any known JSONL benchmark, recognised by its keys."""
    if "task_id" in rec and "prompt" in rec:  # HumanEval
        segs = [rec["prompt"], rec.get("canonical_solution") or ""]
        return Item(str(rec["task_id"]), tuple(s for s in segs if s.strip()))
    if "question" in rec and "answer" in rec:  # GSM8K
        return Item(key, tuple(s for s in (rec["question"], _CALC.sub("", str(rec["answer"]))) if s.strip()))
    if "context_options" in rec:  # WinoGrande, WSC: the sentence is an option plus the continuation
        cont = str(rec.get("continuation", ""))
        return Item(key, tuple(dict.fromkeys(f"{o} {cont}".strip() for o in _texts(rec["context_options"]))))
    if "query" in rec:
        choices = [c for c in _texts(rec.get("choices")) if len(c.split()) > 1]  # not the bare letters "A".."D"
        return Item(key, tuple(_clean_lines(rec["query"]) + choices))
    if "context" in rec and "continuation" in rec:  # LAMBADA: the passage and its final word
        return Item(key, (f"{rec['context']} {rec['continuation']}".strip(),))
    if "context" in rec:  # TriviaQA, MATH
        return Item(key, tuple(_clean_lines(rec["context"]) + _texts(rec.get("chain_of_thought"))))
    raise BenchmarkError(
        f"unknown benchmark record with keys {sorted(rec)}; name the fields: NAME=FILE:field1,field2"
    )


def _mmlu_files(files: list[Path], root: Path) -> Iterator[Item]:
    """MMLU CSVs: question, four choices, answer. Item keys are `<file stem>:<row>`."""
    for f in files:
        rel = f.relative_to(root).as_posix().removesuffix(".gz").removesuffix(".csv")  # the same key gzipped
        with _open(f) as fh:  # load_benchmark sends .csv.gz files here too
            rows = list(csv.reader(fh))
        header = bool(rows) and len(rows[0]) >= 6 and rows[0][5].strip().upper() not in _ANSWERS
        if header:
            rows = rows[1:]  # a header (`question,choice0,…,answer` in HF cais/mmlu); the Hendrycks files have none
        for i, row in enumerate(rows, 1):
            line = i + header
            if len(row) < 6:
                raise BenchmarkError(f"{f}:{line}: expected question, 4 choices and an answer; got {len(row)} fields")
            if row[5].strip().upper() not in _ANSWERS:
                raise BenchmarkError(f"{f}:{line}: answer {row[5][:20]!r} is not A-D or 0-3, so this is not an MMLU "
                                     "file; name the text columns instead: NAME=FILE:column1,column2")
            yield Item(f"{rel}:{i}", tuple(s for s in row[:5] if s.strip()))


def _generic(path: Path, fields: list[str]) -> Iterator[Item]:
    """Named fields of any JSONL/JSON/CSV/TSV/Parquet table, one item per row."""
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        missing = [f for f in fields if f not in table.column_names]
        if missing:
            raise BenchmarkError(f"{path}: no column(s) {missing}; columns are {table.column_names}")
        rows: Iterator[tuple[int, dict[str, Any]]] = enumerate(table.select(fields).to_pylist(), 1)
    elif name.endswith((".csv", ".tsv")):
        with _open(path) as f:
            reader = csv.DictReader(f, delimiter="\t" if name.endswith(".tsv") else ",")
            data = list(reader)
            missing = [x for x in fields if x not in (reader.fieldnames or [])]
        if missing:
            raise BenchmarkError(f"{path}: no column(s) {missing}; header is {reader.fieldnames}")
        rows = enumerate(data, 1)
    elif name.endswith(".json"):
        with _open(path) as f:
            data = json.load(f)
        if not isinstance(data, list):
            raise BenchmarkError(f"{path}: expected a JSON list of objects")
        rows = enumerate(data, 1)
    else:
        rows = _jsonl(path)
    for i, rec in rows:
        if not any(f in rec for f in fields):
            raise BenchmarkError(f"{path}: row {i} has none of the fields {fields} (keys: {sorted(rec)})")
        yield Item(str(i), tuple(s for f in fields for s in _texts(rec.get(f)) if s.strip()))


def load_benchmark(spec: str) -> list[Item]:
    """Load `PATH` (format recognised) or `PATH:field1,field2` (named fields) into items; none is an error."""
    items = _load(spec)
    if not items:
        raise BenchmarkError(f"{spec}: no items (an empty file?): an index of it would find nothing")
    return items


def _load(spec: str) -> list[Item]:
    path_str, fields = spec, None
    if not os.path.exists(spec) and ":" in spec:
        path_str, _, field_str = spec.rpartition(":")
        fields = [f.strip() for f in field_str.split(",") if f.strip()]
        if not fields:
            raise BenchmarkError(f"{spec!r}: no field names after ':'")
    path = Path(path_str)
    if not path.exists():
        raise BenchmarkError(f"benchmark path {path_str!r} does not exist")
    if fields:
        if path.is_dir():
            raise BenchmarkError(f"{path}: named fields need a file, not a directory")
        return list(_generic(path, fields))
    if path.is_dir():
        csvs = sorted(path.rglob("*.csv"))
        if csvs:
            return list(_mmlu_files(csvs, path))
        files = sorted(p for p in path.rglob("*") if p.name.endswith((".jsonl", ".jsonl.gz")))
        if not files:
            raise BenchmarkError(f"{path}: no .csv or .jsonl files")
        return [
            Item(f"{f.relative_to(path).as_posix()}:{it.key}", it.segments) for f in files for it in _load_jsonl(f)
        ]
    if path.name.lower().removesuffix(".gz").endswith(".csv"):
        return list(_mmlu_files([path], path.parent))
    return _load_jsonl(path)


def _load_jsonl(path: Path) -> list[Item]:
    try:
        return [icl_item(str(lineno), rec) for lineno, rec in _jsonl(path)]
    except (UnicodeDecodeError, OSError) as e:
        raise BenchmarkError(f"{path}: cannot read as (gzipped) JSON lines: {e}") from None
    except BenchmarkError as e:
        raise BenchmarkError(f"{path}: {e}") from None
