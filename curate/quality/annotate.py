"""`curate quality annotate`: a teacher model grades a seeded sample of documents, as FineWeb-Edu had
Llama-3-70B grade pages before distilling the grades into a small classifier (`curate quality fit`).

The teacher is served elsewhere (vLLM, SGLang, TGI, llama.cpp, Ollama, a hosted API) and spoken to through
`curate.io.chat`. What this module adds is the bookkeeping that makes a paid annotation safe to kill:

* **The sample** is the `n` documents whose keys `blake2b(seed, id, text hash)` are smallest: the same seed
  and inputs give the same sample whatever the order of files, in memory of `n` documents.
* **The journal** (`OUT/journal/part-NNNNNN.jsonl`): every finished grade is appended as it arrives, in
  batches (`batch` grades, or whatever arrived within `flush_s`), each batch one file written atomically, so
  a kill loses at most the answers not yet flushed, never a half-written record; the parts are merged into one
  when the annotation completes. Entries are keyed by
  document id and text hash; a rerun skips the documents the journal holds and asks only for the rest.
* **The claim**: `OUT/annotate.json` records what makes grades comparable (model, template, score rule,
  generation parameters, the sample's digest); a rerun into the same folder with any of them changed is
  refused in one line (`curate.io.outputs.claim`), so one file never mixes two teachers' grades.
* **The result** (`OUT/annotations.parquet`, written last, in sample order): `id, text, score, raw, reason,
  prompt_tokens, completion_tokens`. `score` is null where the answer could not be read; `reason` names why
  (`REASONS`), and the counts by reason are in `annotate.json` and printed.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass

from curate.core.errors import UsageError
from curate.io import fs

REASONS = ("truncated", "empty_choice", "malformed_json", "no_score", "out_of_range")
LAYOUT = ("annotate.json", "journal", "annotations.parquet")
MARKER, JOURNAL, RESULT = LAYOUT
_PART = re.compile(r"part-(\d{6})\.jsonl")
# "Educational score: 3", "score = 4", "**Score:** 2": the last such number in the answer
SCORE_PATTERN = r"score\W{0,4}?\s*[:=]\s*\**\s*(-?\d+(?:\.\d+)?)"


@dataclass(frozen=True)
class Template:
    """The prompt: `user` with `{text}` (the document, cut to `max_chars`) and optionally `{id}` replaced
    literally (other braces, e.g. a JSON example in the prompt, are left alone); `system` is sent first when
    given."""

    user: str
    system: str | None = None
    max_chars: int = 10_000

    @classmethod
    def load(cls, path: str, system_path: str | None = None, max_chars: int = 10_000) -> Template:
        user = _read_prompt(path, "--template")
        if "{text}" not in user:
            raise UsageError(f"--template {path}: the prompt has no {{text}} placeholder for the document")
        return cls(user, _read_prompt(system_path, "--system") if system_path else None, max_chars)

    def messages(self, doc_id: str, text: str) -> list[dict]:
        user = self.user.replace("{id}", doc_id).replace("{text}", text[: self.max_chars])
        return ([{"role": "system", "content": self.system}] if self.system else []) + [{"role": "user", "content": user}]


def _read_prompt(path: str, option: str) -> str:
    try:
        return fs.read_bytes(path).decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{option} {path}: no such file") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{option} {path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


@dataclass(frozen=True)
class ScoreRule:
    """How an answer becomes a score. In order: an answer cut by `max_tokens` (`finish_reason == "length"`)
    is `truncated`; an answer that is a JSON object (code fences allowed) must hold a number under `key`
    (else `no_score`; unparseable: `malformed_json`); any other answer's score is the last match of
    `pattern` (one group; case-insensitive), else `no_score`; a score outside `[low, high]` is `out_of_range`."""

    low: float = 0
    high: float = 5
    pattern: str = SCORE_PATTERN
    key: str = "score"

    def parse(self, content: str | None, finish_reason: str | None) -> tuple[float | None, str | None]:
        if finish_reason == "length":
            return None, "truncated"
        if content is None:
            return None, "empty_choice"
        body = re.sub(r"^```(?:json)?\s*|\s*```$", "", content.strip())
        if body.startswith("{") and body.endswith("}"):
            value, reason = self._json(body)
        else:
            found = re.findall(self.pattern, content, flags=re.IGNORECASE)
            value, reason = (float(found[-1]), None) if found else (None, "no_score")
        if value is not None and not self.low <= value <= self.high:
            return None, "out_of_range"
        return value, reason

    def _json(self, body: str) -> tuple[float | None, str | None]:
        try:
            obj = json.loads(body)
        except ValueError:
            return None, "malformed_json"
        value = obj.get(self.key) if isinstance(obj, dict) else None
        if isinstance(value, str):
            value = float(value) if re.fullmatch(r"-?\d+(?:\.\d+)?", value.strip()) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None, "no_score"
        return float(value), None


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def sample(inputs: Iterable[str], n: int, seed: int) -> list[tuple[str, str]]:
    """(id, text) of the `n` documents with the smallest keys, in key order; a document repeated with the same
    id and text counts once. Inputs: run folders, folders of shards, files or globs (`corpus.resolve_inputs`)."""
    from curate.io.corpus import read_batches, resolve_inputs

    heap: list[tuple[int, str, str]] = []  # (-key, id, text): the n smallest keys
    seen: set[int] = set()
    for spec in inputs:
        for path in resolve_inputs(spec):
            for batch in read_batches(path):
                for doc_id, text in zip(batch.ids, batch.texts, strict=True):
                    key = _key(seed, doc_id, text)
                    if key in seen or (len(heap) >= n and -heap[0][0] <= key):
                        continue
                    seen.add(key)
                    if len(heap) < n:
                        heapq.heappush(heap, (-key, doc_id, text))
                    else:
                        seen.discard(-heapq.heappushpop(heap, (-key, doc_id, text))[0])
    return [(doc_id, text) for _, doc_id, text in sorted(heap, reverse=True)]


def _key(seed: int, doc_id: str, text: str) -> int:
    h = hashlib.blake2b(f"{seed}\0{doc_id}\0{text_hash(text)}".encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(h.digest(), "big")


def sample_digest(docs: list[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for doc_id, text in docs:
        h.update(f"{doc_id}\0{text_hash(text)}\n".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


class Journal:
    """The append-only record of finished grades in `folder`: one atomically written JSONL file per batch."""

    def __init__(self, folder: str):
        self.folder = folder
        fs.makedirs(folder)
        parts = [int(m.group(1)) for name in fs.listdir(folder) if (m := _PART.fullmatch(name))]
        self.next = max(parts, default=-1) + 1

    def read(self) -> dict[tuple[str, str], dict]:
        """Every grade so far, by (id, text hash)."""
        done = {}
        for name in sorted(n for n in fs.listdir(self.folder) if _PART.fullmatch(n)):
            for line in fs.read_bytes(fs.join(self.folder, name)).decode("utf-8").splitlines():
                row = json.loads(line)
                done[(row["id"], row["sha"])] = row
        return done

    def compact(self) -> None:
        """All parts as one (a slow teacher leaves one small file per answer): the merged part is written before
        the old ones are removed, and reading keeps one row per key, so a kill in between loses nothing."""
        old = sorted(n for n in fs.listdir(self.folder) if _PART.fullmatch(n))
        if len(old) > 1:
            self.append(list(self.read().values()))
            for name in old:
                fs.remove(fs.join(self.folder, name))

    def append(self, rows: list[dict]) -> None:
        if rows:
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            fs.atomic_write_text(fs.join(self.folder, f"part-{self.next:06d}.jsonl"), text)
            self.next += 1


@dataclass
class Settings:
    """What makes two annotations' grades comparable: recorded in `annotate.json`, compared on a rerun."""

    model: str
    template_sha256: str
    score_rule: dict
    params: dict
    n: int
    seed: int
    sample_sha256: str = ""


def annotate(inputs: list[str], out: str, client, template: Template, rule: ScoreRule, settings: Settings,
             concurrency: int = 8, batch: int = 32, flush_s: float = 1.0, overwrite: bool = False,
             progress: Callable[[int], None] | None = None) -> dict:
    """Grade the sample into `out` (resuming what a killed run journaled); returns the summary it records."""
    from curate.io.outputs import claim, locked

    docs = sample(inputs, settings.n, settings.seed)
    if not docs:
        raise UsageError(f"no documents with text in {', '.join(inputs)}")
    settings.sample_sha256 = sample_digest(docs)
    config = {"kind": "annotate", **asdict(settings)}
    marker = fs.join(out, MARKER)
    with locked(out, what="`curate quality annotate`"):
        if claim(out, what="`curate quality annotate`", option="--out", own=lambda: fs.isfile(marker),
                 layout=LAYOUT, overwrite=overwrite, marker=MARKER):
            _check_same(out, json.loads(fs.read_bytes(marker)), config)
        fs.atomic_write_text(marker, json.dumps({**config, "complete": False}, indent=1))
        journal = Journal(fs.join(out, JOURNAL))
        done = journal.read()
        todo = [(i, t) for i, t in docs if (i, text_hash(t)) not in done]
        t0 = time.monotonic()
        _grade(todo, client, template, rule, journal, concurrency, batch, flush_s, progress)
        journal.compact()
        done = journal.read()
        summary = _summary(docs, done, client.counts, len(docs) - len(todo), time.monotonic() - t0)
        _write_result(fs.join(out, RESULT), docs, done)
        fs.atomic_write_text(marker, json.dumps({**config, "complete": True, "summary": summary}, indent=1))
        fs.remove_temp_files(out)
    return summary


def _check_same(out: str, old: dict, new: dict) -> None:
    """One line naming the first setting that differs from the annotation `out` holds."""
    names = {"model": "--model", "template_sha256": "--template (or --system)", "score_rule": "the score rule",
             "params": "--max-tokens, --temperature or --max-chars", "n": "-n", "seed": "--seed",
             "sample_sha256": "the sample (the inputs changed)"}
    for key, flag in names.items():
        if old.get(key) != new[key]:
            raise UsageError(f"{out} holds annotations made with another {flag} ({old.get(key)!r}, now "
                             f"{new[key]!r}): pass --overwrite to replace them, or choose another --out")


def _grade(todo: list[tuple[str, str]], client, template: Template, rule: ScoreRule, journal: Journal,
           concurrency: int, batch: int, flush_s: float, progress: Callable[[int], None] | None) -> None:
    """Ask for every document of `todo` on `concurrency` threads, journaling answers as they arrive. On an
    error (a server still failing after every try, a signal) the answers already received are journaled
    before it is raised, so the rerun does not pay for them again."""
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="annotate")
    pending: set[Future] = {pool.submit(_one, client, template, rule, i, t) for i, t in todo}
    rows: list[dict] = []
    since = time.monotonic()
    try:
        while pending:
            finished, pending = wait(pending, timeout=flush_s, return_when=FIRST_COMPLETED)
            rows += [f.result() for f in finished if f.exception() is None]
            error = next((f.exception() for f in finished if f.exception() is not None), None)
            if error is not None:
                raise error  # after `finally` has journaled every answer that arrived
            if progress and finished:
                progress(len(finished))
            if len(rows) >= batch or (rows and time.monotonic() - since >= flush_s):
                journal.append(rows)
                rows, since = [], time.monotonic()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        rows += [f.result() for f in pending if f.done() and not f.cancelled() and f.exception() is None]
        journal.append(rows)


def _one(client, template: Template, rule: ScoreRule, doc_id: str, text: str) -> dict:
    answer = client.complete(template.messages(doc_id, text))
    if answer.problem:
        score, reason = None, answer.problem
    else:
        score, reason = rule.parse(answer.content, answer.finish_reason)
    return {"id": doc_id, "sha": text_hash(text), "score": score, "raw": answer.content, "reason": reason,
            "finish_reason": answer.finish_reason, "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens, "cut": len(text) > template.max_chars}


def _summary(docs: list[tuple[str, str]], done: dict, counts: Counter, resumed: int, seconds: float) -> dict:
    rows = [done[(i, text_hash(t))] for i, t in docs]
    reasons = Counter(r["reason"] for r in rows if r["reason"])
    return {"documents": len(rows), "scored": sum(r["score"] is not None for r in rows),
            "unparseable": {k: reasons[k] for k in REASONS if reasons[k]},
            "scores": dict(sorted(Counter(str(r["score"]) for r in rows if r["score"] is not None).items())),
            "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
            "completion_tokens": sum(r["completion_tokens"] for r in rows),
            "texts_cut_to_max_chars": sum(bool(r.get("cut")) for r in rows),
            "resumed_from_journal": resumed, "requests": counts["requests"], "retries": counts["retries"],
            "throttles": counts["throttles"], "seconds": round(seconds, 1)}


def _write_result(path: str, docs: list[tuple[str, str]], done: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [done[(i, text_hash(t))] for i, t in docs]
    table = pa.table({
        "id": pa.array([i for i, _ in docs], pa.string()), "text": pa.array([t for _, t in docs], pa.string()),
        "score": pa.array([r["score"] for r in rows], pa.float64()),
        "raw": pa.array([r["raw"] for r in rows], pa.string()),
        "reason": pa.array([r["reason"] for r in rows], pa.string()),
        "prompt_tokens": pa.array([r["prompt_tokens"] for r in rows], pa.int64()),
        "completion_tokens": pa.array([r["completion_tokens"] for r in rows], pa.int64())})
    with fs.atomic_open(path, "wb") as f:
        pq.write_table(table, f)
