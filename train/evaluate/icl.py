"""In-context tasks in the llm-foundry formats, scored by the log-likelihood of each candidate continuation.

Formats (the first record decides; files as in llm-foundry's `local_data`):

* multiple choice `{"query", "choices", "gold"}`: the context is the query, each choice a continuation;
* schema `{"context_options", "continuation", "gold"}`: one continuation, scored after each candidate context;
* language modelling `{"context", "continuation"}` (also `{"question", "answer"}`): right when greedy decoding
  reproduces the continuation token for token (llm-foundry's LM accuracy; LAMBADA's last word).

Prompts are built as llm-foundry builds them: strings stripped, `context + delimiter` with trailing space removed, a
space put before the continuation (byte-level BPE marks word starts with it), context and continuation tokenized
separately, the context cut from the left to the model's window. K-shot prompts put K other examples of the same file,
each with its gold answer, before the test example, separated by a newline; the shots of example i are drawn with a
generator seeded by (seed, i), so they do not change with --limit or batch size. Every prompt starts with the
end-of-document token, the "a document starts here" context the model was trained with.

Scores, as DCLM's CORE and the OLMo evaluations report them: accuracy of the highest log-likelihood (`acc`), of the
highest log-likelihood per token (`acc_per_token`, llm-foundry's choice) and per character of the continuation
(`acc_per_char`, OLMo's length normalisation), each also centred on chance: (acc - 1/n) / (1 - 1/n), n the number of
candidates (averaged over examples when it varies; 0 for language modelling), so 0 is chance and 1 perfect.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from curate.io import fs
from curate.models.checkpoint import Loaded
from curate.models.scoring import score_spans

# Delimiter between the question and its answer where llm-foundry's eval gauntlet (and DCLM's CORE, which reuses it)
# sets one; every other task uses a space.
DELIMITERS = {"arc_easy": "\nAnswer: ", "arc_challenge": "\nAnswer: ", "piqa": "\nAnswer: ", "boolq": "\nAnswer: "}
EXAMPLE_DELIMITER = "\n"
KINDS = ("multiple_choice", "schema", "language_modeling")


@dataclass
class Task:
    name: str
    path: str
    kind: str
    examples: list[dict]
    delimiter: str
    skipped: int = 0  # records that are not a valid example of the task's format (counted, left out)


@dataclass
class Candidate:
    context: str
    continuation: str


def parse_spec(spec: str, icl_dir: str | None, default_shots: list[int]) -> tuple[str, str, list[int]]:
    """`NAME[:K,K]` (a file NAME.jsonl in icl_dir) or `PATH[:K,K]` -> (name, path, shots)."""
    m = re.fullmatch(r"(.+?):([0-9]+(?:,[0-9]+)*)", spec)
    target, shots = (m.group(1), [int(k) for k in m.group(2).split(",")]) if m else (spec, list(default_shots))
    if "/" in target or target.endswith((".jsonl", ".jsonl.gz")):
        path = target
    elif icl_dir:
        path = fs.join(icl_dir, f"{target}.jsonl")
    else:
        raise ValueError(f"task {target!r}: give a path to its .jsonl file, or --icl-dir where {target}.jsonl is")
    name = re.sub(r"\.jsonl(\.gz)?$", "", path.rstrip("/").rsplit("/", 1)[-1])
    return name, path, shots


def _kind(rec: dict) -> str:
    if {"query", "choices", "gold"} <= rec.keys():
        return "multiple_choice"
    if {"context_options", "continuation", "gold"} <= rec.keys():
        return "schema"
    if {"context", "continuation"} <= rec.keys() or {"question", "answer"} <= rec.keys():
        return "language_modeling"
    raise ValueError(f"record keys {sorted(rec)} match no task format: multiple choice (query, choices, gold), "
                     "schema (context_options, continuation, gold) or language modelling (context, continuation)")


def _valid(rec: dict, kind: str) -> bool:
    strings = lambda v: isinstance(v, list) and len(v) >= 2 and all(isinstance(s, str) and s for s in v)  # noqa: E731
    gold_in = lambda v: isinstance(rec.get("gold"), int) and 0 <= rec["gold"] < len(v)  # noqa: E731
    if kind == "multiple_choice":
        return isinstance(rec["query"], str) and strings(rec["choices"]) and gold_in(rec["choices"])
    if kind == "schema":
        return (isinstance(rec["continuation"], str) and bool(rec["continuation"]) and strings(rec["context_options"])
                and gold_in(rec["context_options"]))
    return isinstance(rec.get("context"), str) and isinstance(rec.get("continuation"), str) and bool(rec["continuation"])


def load_task(name: str, path: str) -> Task:
    with fs.open(path, "rb") as raw:
        data = gzip.GzipFile(fileobj=raw).read() if path.endswith(".gz") else raw.read()
    records, bad = [], 0
    for line in io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            continue
        if not isinstance(rec, dict):
            bad += 1
            continue
        if "question" in rec and "context" not in rec:  # a plain QA file read as language modelling
            rec = {**rec, "context": rec["question"], "continuation": str(rec.get("answer", ""))}
        records.append({k: v.strip() if isinstance(v, str) else v for k, v in rec.items()})  # llm-foundry strip_data
    if not records:
        raise ValueError(f"task {name}: {path} holds no records")
    kind = _kind(records[0])
    examples = [r for r in records if _kind_or_none(r) == kind and _valid(r, kind)]
    task = Task(name, path, kind, examples, DELIMITERS.get(name, " "), bad + len(records) - len(examples))
    if not examples:
        raise ValueError(f"task {name}: no valid {kind} record in {path}")
    return task


def _kind_or_none(rec: dict) -> str | None:
    try:
        return _kind(rec)
    except ValueError:
        return None


def demonstration(task: Task, ex: dict) -> str:
    """An example with its gold answer, as a shot."""
    if task.kind == "multiple_choice":
        return f"{ex['query']}{task.delimiter}{ex['choices'][ex['gold']]}"
    if task.kind == "schema":
        return f"{ex['context_options'][ex['gold']]}{task.delimiter}{ex['continuation']}"
    return f"{ex['context']}{task.delimiter}{ex['continuation']}"


def shots_for(n_examples: int, index: int, k: int, seed: int) -> list[int]:
    """k indices of other examples, drawn by a generator seeded with (seed, index)."""
    k = min(k, n_examples - 1)
    picks = random.Random(f"{seed}:{index}").sample(range(n_examples - 1), k)
    return [j + (j >= index) for j in picks]  # skip the example itself


def candidates(task: Task, index: int, shots: int, seed: int) -> tuple[list[Candidate], int]:
    """The candidate (context, continuation) pairs of example `index` with `shots` demonstrations, and the gold one."""
    ex = task.examples[index]
    prefix = "".join(demonstration(task, task.examples[j]) + EXAMPLE_DELIMITER
                     for j in shots_for(len(task.examples), index, shots, seed))
    space = lambda s: s if s.startswith(" ") else " " + s  # noqa: E731
    if task.kind == "multiple_choice":
        ctx = (prefix + ex["query"] + task.delimiter).rstrip()
        return [Candidate(ctx, space(c)) for c in ex["choices"]], ex["gold"]
    if task.kind == "schema":
        return [Candidate((prefix + o + task.delimiter).rstrip(), space(ex["continuation"]))
                for o in ex["context_options"]], ex["gold"]
    return [Candidate((prefix + ex["context"] + task.delimiter).rstrip(), space(ex["continuation"]))], 0


def evaluate_task(run: Loaded, task: Task, shots: int, seed: int = 1234, limit: int | None = None,
                  batch_size: int = 32, progress: Callable[[int], object] | None = None) -> dict:
    """Accuracies of one task at one number of shots over its first `limit` examples (all when None). An example
    with a continuation longer than the model's window cannot be scored (llm-foundry refuses the whole task); it is
    left out and counted in `skipped_too_long`."""
    encode = lambda s: run.tokenizer.encode(s, add_special_tokens=False).ids  # noqa: E731
    requests, spans_of, golds, chars = [], [], [], []
    too_long = 0
    for i in range(len(task.examples) if limit is None else min(limit, len(task.examples))):
        cands, gold = candidates(task, i, shots, seed)
        conts = [encode(c.continuation) for c in cands]
        if max(len(c) for c in conts) > run.model.cfg.seq_len:  # no window holds it: left out, and counted
            too_long += 1
            continue
        start = len(requests)
        for c, cont in zip(cands, conts, strict=True):
            requests.append(([run.eos_id] + encode(c.context) + cont, len(cont)))
            chars.append(len(c.continuation))
        spans_of.append(range(start, len(requests)))
        golds.append(gold)
    n = len(golds)
    if not n:
        raise ValueError(f"task {task.name}: every example's continuation is longer than the model's window")
    scored = 0

    def report(k: int) -> None:  # requests scored -> whole examples scored, for the bar
        nonlocal scored
        scored += k
        progress(scored * n // len(requests) - (scored - k) * n // len(requests))

    spans = score_spans(run.model, requests, run.eos_id, batch_size, None if progress is None else report)
    hits = {"acc": 0, "acc_per_token": 0, "acc_per_char": 0}
    chance = 0.0
    for rows, gold in zip(spans_of, golds, strict=True):
        if task.kind == "language_modeling":
            hits["acc"] += spans[rows[0]].greedy
            continue
        chance += 1 / len(rows)
        for key, norm in (("acc", lambda r: 1), ("acc_per_token", lambda r: spans[r].tokens),
                          ("acc_per_char", lambda r: chars[r])):
            scores = [spans[r].logprob / norm(r) for r in rows]
            hits[key] += scores.index(max(scores)) == gold
    chance /= n
    result = {"task": task.name, "kind": task.kind, "shots": shots, "examples": n, "chance": chance,
              "skipped_records": task.skipped, "skipped_too_long": too_long}
    keys = ("acc",) if task.kind == "language_modeling" else tuple(hits)
    for key in keys:
        acc = hits[key] / n
        result[key] = acc
        result[f"{key}_centred"] = (acc - chance) / (1 - chance)
    if task.kind == "language_modeling":
        lp = sum(spans[r[0]].logprob for r in spans_of)
        result["continuation_bits_per_char"] = -lp / (sum(chars) * 0.6931471805599453)
    return result


def primary(result: dict) -> float:
    """The centred score a task contributes to the aggregate: per-character accuracy (greedy accuracy for LM)."""
    return result.get("acc_per_char_centred", result["acc_centred"])
