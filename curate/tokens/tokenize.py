"""Byte-level BPE training and tokenization into token shards (the contract in docs/tokens.md).

Python API (the CLI commands `curate tokenizer train` and `curate tokenize` are thin wrappers):

* `train_tokenizer(inputs, vocab_size, out)` trains a byte-level BPE on a sample of a corpus.
* `tokenize(inputs, tokenizer, out, val_fraction)` writes token shards and their manifest.
* `build_token_shards(inputs, out)` does both, small and quick: for tests and smoke runs.

Every path may be a local path or an fsspec URL (`s3://…`, `file://…`, `memory://…`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from curate.core.errors import CorruptState, UsageError
from curate.io import fs
from curate.io.corpus import estimated_chars, is_dir, read_batches, resolve_inputs, unfinished
from curate.io.outputs import claim, locked
from curate.io.token_format import FORMAT, MANIFEST  # noqa: F401 (FORMAT: the default format, one definition)
from curate.io.writers import atomic_write_text
from curate.run.executors.base import Executor
from curate.run.executors.local import LocalExecutor
from curate.tokens.common import (
    BATCH_CHARS,
    MAX_BATCH_DOCS,
    check_outside,
    encode_ids,
    input_change,
    naming,
    splits_exactly,
    text_batches,
    unique_tmp,
)
from curate.tokens.formats import DEFAULT, MANIFEST_FORMATS, NAMES, check_format, finish, writer_class
from curate.tokens.formats.peneira import PeneiraWriter

EOS = "<|endoftext|>"
PAD = "<|pad|>"
SPECIAL_TOKENS = [EOS, PAD]  # EOS first: id 0 in every Peneira tokenizer


def _unit(key: str, seed: int = 0) -> float:
    """A stable pseudo-random number in [0, 1) from a document id: splits and samples never move."""
    return xxhash.xxh64_intdigest(key.encode(), seed=seed) / 2.0**64


_COPY_SUFFIX = re.compile(r"#e[0-9]+$")


def split_key(doc_id: str) -> str:
    """The id that decides a document's split: a mix's repeated copies (`<id>#eN`) go with their original,
    so no validation document is ever trained on."""
    return _COPY_SUFFIX.sub("", doc_id)


def _all_inputs(inputs: str | os.PathLike | list, allow_partial: bool = False) -> list[str]:
    """The files of every spec, each once: a file named by two specs (a mix folder and one of its shards, a
    link beside its target) would otherwise be tokenized twice."""
    specs = inputs if isinstance(inputs, list) else [inputs]
    files: list[str] = []
    for spec in specs:
        files.extend(resolve_inputs(spec, allow_partial))
    return fs.unique_files(list(dict.fromkeys(files)))


# ---------------------------------------------------------------------------------------------- training


def train_bpe(texts: Iterable[list[str]], vocab_size: int, min_frequency: int = 2, progress: bool = False):
    """A byte-level BPE (`tokenizers.Tokenizer`) trained on batches of texts, with Peneira's special tokens.
    `progress`: the tokenizers library's own bars (pair counts, merges), drawn where stderr is a terminal."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    _check_bpe_args(vocab_size, min_frequency)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=progress,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    tok.encode_special_tokens = True
    return tok


def train_tokenizer(
    inputs: str | os.PathLike | list,
    vocab_size: int,
    out: str | os.PathLike,
    sample_chars: int = 500_000_000,
    min_frequency: int = 2,
    seed: int = 0,
    progress: bool = False,
) -> dict[str, Any]:
    """Train a byte-level BPE on about `sample_chars` characters of the corpus and save tokenizer.json.
    `progress`: a bar of the characters sampled so far (of about the number expected) on stderr while the corpus
    is read, then the tokenizers library's bars for the merges.

    Byte-level means every string round-trips exactly (no unknown token, no normalisation), which
    the decontamination and eval code rely on. The sample is drawn by a hash of the document id,
    so it spreads evenly over sources and shards and is the same on every rerun.
    Returns a summary (vocab size, sha256, documents and characters sampled).

    Everything is checked before the (long) training and nothing is replaced until the end: `out` must not be a
    folder, an input, or an existing file that is not a tokenizer; the file appears whole (written under a name
    unique to this process, then renamed or uploaded once), so two trainings into one `out` each publish a
    whole tokenizer and the last one wins. It writes one file, never a folder, so it takes no folder lock.
    """
    _check_bpe_args(vocab_size, min_frequency)
    if sample_chars <= 0:
        raise UsageError(f"--sample-chars must be positive, got {sample_chars}")
    out = os.fspath(out)
    files = _all_inputs(inputs)
    _check_tokenizer_out(out, files)
    total = sum(estimated_chars(f) for f in files)
    rate = min(1.0, sample_chars / max(total, 1))
    seen = {"docs": 0, "chars": 0}
    from tqdm import tqdm

    bar = tqdm(total=min(total, sample_chars), desc="tokenizer sample", unit="char", unit_scale=True,
               disable=not progress, file=sys.stderr, dynamic_ncols=True)

    def sample():
        for f in files:
            for batch in read_batches(f):
                picked = [t for i, t in zip(batch.ids, batch.texts, strict=True) if rate >= 1 or _unit(i, seed) < rate]
                chars = sum(map(len, picked))
                seen["docs"] += len(picked)
                seen["chars"] += chars
                bar.update(chars)
                yield picked
        bar.close()  # the merges' own bars follow

    try:
        tok = train_bpe(sample(), vocab_size, min_frequency, progress=progress)
    finally:
        bar.close()
    if seen["docs"] == 0:
        raise UsageError(f"no documents to train a tokenizer on in {inputs}")
    text = tok.to_str()
    with naming(out), fs.atomic_open(out, "w", tmp_name=unique_tmp(fs.basename(out)), encoding="utf-8") as f:
        f.write(text)
    return {"path": out, "vocab_size": tok.get_vocab_size(), "sha256": hashlib.sha256(text.encode()).hexdigest(),
            **seen}


def _check_bpe_args(vocab_size: int, min_frequency: int) -> None:
    if vocab_size < 256 + len(SPECIAL_TOKENS):
        raise UsageError(f"--vocab-size {vocab_size} is below the 256 bytes + {len(SPECIAL_TOKENS)} special tokens")
    if vocab_size > 2**32:
        raise UsageError(f"--vocab-size {vocab_size} does not fit uint32")
    if min_frequency < 1:
        raise UsageError(f"--min-frequency must be >= 1, got {min_frequency}")


def _check_tokenizer_out(out: str, files: list[str]) -> None:
    """`curate tokenizer train --out`: a file path, not one of the inputs, and, if it exists, a tokenizer (a
    corpus file or anything else given by mistake is never replaced)."""
    if fs.isdir(out):
        raise UsageError(f"--out {out} is a folder: give the tokenizer's file name, e.g. {fs.join(out, 'tokenizer.json')}")
    check_outside(files, out)  # a folder named like the output file (…/tok.json/part.jsonl)
    same = [f for f in files if os.path.realpath(fs.local_path(f) or f) == os.path.realpath(fs.local_path(out) or out)]
    if same:
        raise UsageError(f"--out {out} is one of the inputs: choose another file name")
    if fs.isfile(out):
        try:
            ok = fs.size(out) < 1 << 30 and "model" in json.loads(fs.read_bytes(out))
        except (ValueError, TypeError):
            ok = False
        if not ok:
            raise UsageError(f"--out {out} exists and is not a tokenizer JSON: it is left alone; remove it or "
                             "choose another file name")


def load_tokenizer(path: str | os.PathLike):
    """Load a tokenizer.json (local path or URL) and check it has Peneira's end-of-document token."""
    path = os.fspath(path)
    return _build_tokenizer(path, _read_tokenizer(path))


def _read_tokenizer_bytes(path: str) -> bytes:
    if not fs.isfile(path):
        raise UsageError(f"{path}: no such tokenizer file")
    return fs.read_bytes(path)


def _read_tokenizer(path: str) -> str:
    try:
        return _read_tokenizer_bytes(path).decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not a tokenizers JSON file (not UTF-8: {e})") from None


def _build_tokenizer(path: str, text: str):
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_str(text)
    except Exception as e:
        raise UsageError(f"{path}: not a tokenizers JSON file ({e})") from e
    if tok.token_to_id(EOS) is None:
        raise UsageError(f"{path}: tokenizer has no end-of-document token {EOS!r}")
    tok.encode_special_tokens = True  # a document that quotes "<|endoftext|>" must not end there
    return tok


_TASK_TOKENIZER: tuple[str, Any] | None = None  # (sha256 of the JSON, tokenizer): this process's last one


def task_tokenizer(path: str | os.PathLike):
    """`load_tokenizer` for a per-file task: the tokenizer the previous task in this process built from the same
    JSON, else a new one (which replaces it).

    Why: tokenizers 0.23 does not give back what a `Tokenizer` that has encoded real text holds (its word cache
    and more, ~5 MiB per encoding thread, measured in docs/benchmarks.md) when it is dropped, so one built per
    task made a pool worker grow by that much per file it processed. Reusing one keeps a worker at one
    tokenizer whatever the number of files. The JSON is read every time, so a changed file is never missed;
    encoding with a reused tokenizer gives the same ids (its cache only saves work).
    """
    global _TASK_TOKENIZER
    path = os.fspath(path)
    text = _read_tokenizer(path)
    key = hashlib.sha256(text.encode()).hexdigest()
    if _TASK_TOKENIZER is None or _TASK_TOKENIZER[0] != key:
        _TASK_TOKENIZER = None  # the old one goes first: never two at once
        _TASK_TOKENIZER = (key, _build_tokenizer(path, text))
    return _TASK_TOKENIZER[1]


def release_task_memory() -> None:
    """The end of a per-file task: hand the Arrow pool's free pages back to the system. Its allocator (mimalloc)
    keeps them otherwise, and a pool worker's resident memory crept up from task to task (docs/benchmarks.md)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


# ---------------------------------------------------------------------------------------------- shard files


_ShardWriter = PeneiraWriter  # the seam (issue 33): one writer class per format, `formats.writer_class`


# ---------------------------------------------------------------------------------------------- tokenizing


@dataclass(frozen=True)
class _Task:
    index: int
    path: str
    out: str
    tokenizer: str
    dtype: str
    val_fraction: float
    batch_docs: int  # at most this many documents encoded at once
    threads: int
    batch_chars: int = BATCH_CHARS  # and at most this many characters (or one larger document)
    format: str = DEFAULT  # the shard writer's format (`curate.tokens.formats`)


def _done_path(out: str, index: int) -> str:
    return fs.join(out, "_done", f"part-{index:05d}.json")


def _tokenize_file(task: _Task, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """One input file -> train/part-NNNNN.{bin,idx} and val/part-NNNNN.{bin,idx}, published only once all are
    whole (a failed task leaves none, and its `_done` record, written last, is what a rerun trusts)."""
    if task.threads:  # one Rust thread per process when processes already fill the cores
        os.environ["RAYON_NUM_THREADS"] = str(task.threads)
    tok = task_tokenizer(task.tokenizer)
    name = f"part-{task.index:05d}"
    cls = writer_class(task.format)
    writers = {s: cls(task.out, s, name, task.dtype) for s in ("train", "val")}
    try:
        _encode_file(task, tok, writers, progress)
        shards = {s: w.commit() for s, w in writers.items() if w.docs}
    except BaseException:
        for w in writers.values():  # drop the temp files: nothing is published
            w.discard()
        raise
    for w in writers.values():
        if not w.docs:
            w.discard()
    result = {"input": task.path, "docs": sum(s["docs"] for s in shards.values()), "shards": shards}
    done = _done_path(task.out, task.index)
    with naming(done):
        atomic_write_text(done, json.dumps(result))
    release_task_memory()
    return result


def _encode_file(task: _Task, tok, writers: dict, progress) -> None:
    """Encode one input file batch by batch, appending each split's documents to its (temporary) shard. A batch is
    at most `task.batch_chars` characters (`text_batches`), and so is each call of the encoder (`encode_ids`, which
    cuts a longer document into pieces whose ids are the document's when the tokenizer allows it)."""
    eos = tok.token_to_id(EOS)
    dtype = np.dtype(task.dtype)
    exact = splits_exactly(tok)
    for batch in text_batches(task.path, task.batch_chars, task.batch_docs):
        ids = encode_ids(tok, batch.texts, dtype, task.batch_chars, exact)
        lengths = np.fromiter((len(x) + 1 for x in ids), dtype=np.int64, count=len(ids))
        flat = np.empty(int(lengths.sum()), dtype=dtype)
        ends = np.cumsum(lengths)
        for x, end, n in zip(ids, ends, lengths, strict=True):
            flat[end - n : end - 1] = x
        flat[ends - 1] = eos
        del ids
        is_val = np.array([_unit(split_key(i)) < task.val_fraction for i in batch.ids], dtype=bool)
        for split, mask in (("train", ~is_val), ("val", is_val)):
            if mask.all():
                writers[split].add(flat, lengths, batch.sources)
            elif mask.any():
                idx = np.flatnonzero(mask)
                values = np.concatenate([flat[ends[i] - lengths[i] : ends[i]] for i in idx])
                writers[split].add(values, lengths[idx], [batch.sources[i] for i in idx])
        del flat
        if progress is not None:
            progress(len(batch.ids))


def _mix_plans(specs: list) -> tuple[dict[str, float], dict[str, float]]:
    """Planned token shares of the inputs that are `curate mix` outputs (their manifest's plan), by source, and how
    many times the mix repeats each source's unique text (its `epochs`; the most over several mixes). The trainer
    multiplies the second by its own passes to say how often a unique token is seen (`train.loop`)."""
    plan: dict[str, float] = {}
    epochs: dict[str, float] = {}
    for spec in specs:
        path = fs.join(os.fspath(spec), "manifest.json")
        try:
            with fs.open(path, "r", encoding="utf-8") as f:
                m = json.load(f)
        except (OSError, ValueError):
            continue
        if m.get("kind") == "mix" and "plan" in m:
            for name, s in m["plan"]["sources"].items():
                plan[name] = plan.get(name, 0.0) + s["target_tokens"]
                if "epochs" in s:
                    epochs[name] = max(epochs.get(name, 0.0), float(s["epochs"]))
    total = sum(plan.values())
    return ({s: n / total for s, n in plan.items()} if total else {}), epochs


def realized_shares(manifest: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per source: the planned share (from the mix) and the share of tokens the shards hold (train + val)."""
    plan = manifest.get("mix_plan") or {}
    counts: Counter = Counter()
    for split in manifest["splits"].values():
        counts.update(split["tokens_per_source"])
    total = sum(counts.values()) or 1
    return {s: {"planned": plan.get(s, 0.0), "realized": counts.get(s, 0) / total} for s in sorted(set(plan) | set(counts))}


def format_shares(manifest: dict[str, Any], warn_points: float = 2.0) -> tuple[list[str], list[str]]:
    """The realized-vs-plan table `curate tokenize` prints, and a warning per source off by more than
    `warn_points` percentage points."""
    shares = realized_shares(manifest)
    lines = [f"{'source':<12} {'planned':>8} {'realized':>9} {'diff':>7}"]
    warnings = []
    for s, v in shares.items():
        diff = 100 * (v["realized"] - v["planned"])
        lines.append(f"{s:<12} {v['planned']:>8.2%} {v['realized']:>9.2%} {diff:>+6.2f}pt")
        if abs(diff) > warn_points:
            warnings.append(
                f"warning: source {s!r} holds {v['realized']:.2%} of the tokens, the mix planned {v['planned']:.2%} "
                f"({diff:+.2f} points): re-run `curate mix` with --tokenizer {manifest['tokenizer']['source_path']}"
            )
    return lines, warnings


def tokenize(
    inputs: str | os.PathLike | list,
    tokenizer: str | os.PathLike,
    out: str | os.PathLike,
    val_fraction: float = 0.005,
    dtype: str | None = None,
    workers: int = 1,
    executor: Executor | None = None,
    batch_docs: int = MAX_BATCH_DOCS,
    overwrite: bool = False,
    batch_chars: int = BATCH_CHARS,
    allow_partial: bool = False,
    format: str = DEFAULT,
) -> dict[str, Any]:
    """Tokenize a corpus into token shards with an end-of-document token after every document.

    `format` names the trainer's format the shards are written in (`curate.tokens.formats`: peneira, megatron,
    nanotron, hf); the documents, their order, the split and the accounting are the same in every one.

    One task per input file, in parallel processes, each using the library's batch encoder on batches of at most
    `batch_docs` documents and `batch_chars` characters. A document goes to the validation split when a hash of
    its id falls under `val_fraction`, so the split is by document, stable across reruns and independent of
    sharding. Every path may be an fsspec URL. Returns the manifest (also written to OUT/manifest.json).

    One output transaction (issue 29): every argument, the tokenizer and the inputs are checked first; then `out`
    is locked (`curate.io.outputs.locked`: a second command into it is refused with one line) before anything
    in it is read or deleted. A rerun resumes (files with a `_done` record are skipped) only when the tokenizer,
    dtype, split and every input's size, modification time and ETag are those recorded when the folder was
    begun; anything else is refused with one line saying what differs (`overwrite` replaces it).
    """
    t0 = time.time()
    if not 0 <= val_fraction < 1:
        raise UsageError(f"--val-fraction must be in [0, 1), got {val_fraction}")
    if batch_docs < 1 or batch_chars < 1:
        raise UsageError(f"batch_docs and batch_chars must be >= 1, got {batch_docs} and {batch_chars}")
    specs = inputs if isinstance(inputs, list) else [inputs]
    files = _all_inputs(inputs, allow_partial)
    partial = [os.fspath(s) for s in specs if is_dir(os.fspath(s)) and unfinished(os.fspath(s))]
    tokenizer = os.fspath(tokenizer)
    tok_bytes = _read_tokenizer_bytes(tokenizer)  # held: the copy is written from it, even over itself
    try:
        tok = _build_tokenizer(tokenizer, tok_bytes.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise UsageError(f"{tokenizer}: not a tokenizers JSON file (not UTF-8: {e})") from None
    if format not in NAMES:
        raise UsageError(f"--format {format!r}: choose one of {', '.join(NAMES)}")
    dtype = check_format(format, tok.get_vocab_size(), dtype)
    out = os.fspath(out)
    check_outside(files, out)
    tok_hash = hashlib.sha256(tok_bytes).hexdigest()
    config = {"state": STATE_FORMAT, "format": MANIFEST_FORMATS[format], "tokenizer_sha256": tok_hash, "dtype": dtype,
              "val_fraction": val_fraction, "inputs": _fingerprints(files)}
    if partial:  # read with allow_partial: said in the config, and so in the manifest
        config["partial_inputs"] = partial
    mix_plan, mix_epochs = _mix_plans(specs)
    executor = executor or LocalExecutor(workers)
    # the pool ends with the command (killed on an error), as `Pipeline.run`'s does
    with executor, naming(out), locked(out, what="`curate tokenize`"):
        _check_config(out, config, overwrite)
        tok_copy = fs.join(out, "tokenizer.json")
        with naming(tok_copy), fs.atomic_open(tok_copy, "wb", tmp_name=unique_tmp("tokenizer.json")) as dst:
            dst.write(tok_bytes)
        threads = 1 if getattr(executor, "workers", 1) > 1 else 0
        tasks = [_Task(i, f, out, tok_copy, dtype, val_fraction, batch_docs, threads, batch_chars, format)
                 for i, f in enumerate(files)]
        listed = set(fs.listdir(fs.join(out, "_done")))  # listed once, not one lookup per task
        results = {t.index: r for t in tasks if f"part-{t.index:05d}.json" in listed
                   and (r := _read_done(out, t)) is not None}
        todo = [t for t in tasks if t.index not in results]
        if todo:
            executor.map(_tokenize_file, todo, desc="tokenize", labels=[t.path for t in todo])
        for t in todo:  # each must exist and read back: it ran
            results[t.index] = _read_done(out, t, required=True)
        manifest = _manifest([results[t.index] for t in tasks], tok, tokenizer, tok_hash, dtype, val_fraction,
                             mix_plan, format)
        if mix_epochs:
            manifest["mix_epochs"] = mix_epochs
        if manifest["splits"]["train"]["docs"] == 0:
            raise UsageError(f"no documents were tokenized from {inputs}")
        if val_fraction > 0 and manifest["splits"]["val"]["docs"] == 0:
            raise UsageError(
                f"--val-fraction {val_fraction} put no document in the validation split "
                f"({manifest['splits']['train']['docs']} documents): raise it or pass 0"
            )
        finish(format, out, manifest)
        manifest["seconds"] = round(time.time() - t0, 3)
        if partial:
            manifest["partial_inputs"] = partial  # unfinished outputs read with allow_partial
        with naming(fs.join(out, MANIFEST)):
            atomic_write_text(fs.join(out, MANIFEST), json.dumps(manifest, indent=1))
        fs.remove_temp_files(out)  # what killed attempts left: every task has finished, and we hold the lock
    return manifest


def _fingerprints(files: list[str]) -> list[list]:
    """[path, size, mtime, ETag] of each input (`curate.run.fingerprint`, as `curate run` records its inputs)."""
    from curate.run.fingerprint import Fingerprinter

    return Fingerprinter().inputs(files)


def _read_done(out: str, task: _Task, required: bool = False) -> dict[str, Any] | None:
    """A task's `_done` record, or None when it cannot be trusted (damaged, or another input's): the task runs
    again. `required` (the task has just run): a record that does not read back is one line naming it."""
    from curate.run.state import parse_json

    path = _done_path(out, task.index)
    try:
        record = parse_json(fs.read_bytes(path), path, "delete it and rerun to tokenize that file again")
        if record.get("input") != task.path or not isinstance(record.get("shards"), dict):
            raise CorruptState(f"{path} is the record of {record.get('input')!r}, not of {task.path}: delete it "
                               "and rerun to tokenize that file again", path)
    except CorruptState:
        if required:
            raise
        return None
    return record


def _manifest(results: list, tok, tokenizer: str, tok_hash: str, dtype: str, val_fraction: float,
              mix_plan: dict[str, float], format: str = DEFAULT) -> dict[str, Any]:
    splits = {}
    for split in ("train", "val"):
        shards = [r["shards"][split] for r in results if split in r["shards"]]
        per_source: Counter = Counter()
        for s in shards:
            per_source.update(s["tokens_per_source"])
        splits[split] = {
            "docs": sum(s["docs"] for s in shards),
            "tokens": sum(s["tokens"] for s in shards),
            "tokens_per_source": dict(sorted(per_source.items())),
            "shards": shards,
        }
    return {
        "format": MANIFEST_FORMATS[format],
        "token_format": format,
        "tokenizer": {
            "file": "tokenizer.json",
            "sha256": tok_hash,
            "source_path": tokenizer,
            "eos_token": EOS,
            "special_tokens": {t: tok.token_to_id(t) for t in SPECIAL_TOKENS},
        },
        "vocab_size": tok.get_vocab_size(),
        "dtype": dtype,
        "byte_order": "little",
        "eos_id": tok.token_to_id(EOS),
        "val_fraction": val_fraction,
        "split_rule": "val if xxh64(id without a #eN copy suffix) / 2**64 < val_fraction",
        "splits": splits,
        "mix_plan": mix_plan,
        "inputs": [{"path": r["input"]} for r in results],
    }


STATE_FORMAT = "peneira.tokenize-state/2"  # _done/config.json; 1 (no "state" key) recorded no input fingerprints


def _check_config(out: str, config: dict, overwrite: bool = False) -> None:
    """Refuse to mix shards of two tokenizers (or two splits, or two versions of an input) in one directory, or
    to write beside anything else (`curate.io.outputs.claim`); otherwise allow resume. Called with `out` locked."""
    from curate.run.state import read_json

    path = fs.join(out, "_done", "config.json")
    if claim(out, what="`curate tokenize`", option="--out", own=lambda: fs.exists(path), overwrite=overwrite,
             layout=("_done", "train", "val", "tokenizer.json", "manifest.json", "megatron-data.json",
                     "tokenizer_config.json"), marker="_done/config.json"):
        old = read_json(path, "pass --overwrite to tokenize again into this folder, or use a new --out")
        why = _config_change(old if isinstance(old, dict) else {}, config)
        if why:
            raise UsageError(f"{out} {why}: pass --overwrite to replace it, or use a new --out")
        return
    fs.makedirs(fs.join(out, "_done"))
    try:
        with naming(path):
            atomic_write_text(path, json.dumps(config, indent=1))
    except BaseException:  # a full disk: leave no `_done/` without its config, which a rerun could not claim
        local = fs.local_path(fs.join(out, "_done"))
        with contextlib.suppress(OSError):
            if local is not None:
                os.rmdir(local)
        raise


def _config_change(old: dict, new: dict) -> str:
    """Why the folder's recorded settings are not this run's, in words; "" when they are the same."""
    old = json.loads(json.dumps(old))
    new = json.loads(json.dumps(new))
    if old == new:
        return ""
    if old.get("tokenizer_sha256") != new["tokenizer_sha256"]:
        return (f"holds token shards from another tokenizer (sha256 {str(old.get('tokenizer_sha256', '?'))[:16]}…, "
                f"this one {new['tokenizer_sha256'][:16]}…)")
    if old.get("format") != new["format"] and old.get("state") == new["state"]:
        return f"holds token shards in format {old.get('format')!r}, not {new['format']!r} (--format)"
    if old.get("state") != new["state"]:
        return "holds token shards of an earlier version of curate, which did not record its inputs' versions"
    changed = sorted(k for k in new if k != "inputs" and old.get(k) != new[k])
    if changed:
        return f"was tokenized with other settings ({', '.join(changed)})"
    path, added, gone = input_change(old.get("inputs") or [], new["inputs"])
    if path:
        return f"was tokenized from another version of {path} (its size, modification time or ETag differ)"
    return f"was tokenized from other inputs ({added} new, {gone} gone{', another order' if not added + gone else ''})"


def build_token_shards(
    inputs: str | os.PathLike | list,
    out: str | os.PathLike,
    vocab_size: int = 2048,
    val_fraction: float = 0.05,
    sample_chars: int = 2_000_000,
    workers: int = 1,
) -> Path:
    """Train a small tokenizer on the inputs and tokenize them into `out`: real token shards in seconds.

    For tests and smoke runs of the trainer (`TokenDataset(build_token_shards(...))`). The tokenizer
    is trained on a sample of about `sample_chars` characters and kept at OUT/tokenizer.json.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tok_path = out.parent / f".{out.name}.tokenizer.json"
    train_tokenizer(inputs, vocab_size, tok_path, sample_chars=sample_chars)
    try:
        tokenize(
            inputs,
            tok_path,
            out,
            val_fraction=val_fraction,
            workers=workers,
            executor=LocalExecutor(workers, progress=False),
        )
    finally:
        tok_path.unlink(missing_ok=True)
    return out
