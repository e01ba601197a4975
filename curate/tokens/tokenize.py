"""Byte-level BPE training and tokenization into token shards (the contract in docs/tokens.md).

Python API (the CLI commands `curate tokenizer train` and `curate tokenize` are thin wrappers):

* `train_tokenizer(inputs, vocab_size, out)` trains a byte-level BPE on a sample of a corpus.
* `tokenize(inputs, tokenizer, out, val_fraction)` writes token shards and their manifest.
* `build_token_shards(inputs, out)` does both, small and quick: for tests and smoke runs.

Every path may be a local path or an fsspec URL (`s3://…`, `file://…`, `memory://…`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from curate.core.errors import UsageError
from curate.io import fs
from curate.io.corpus import estimated_chars, read_batches, resolve_inputs, sha256_file
from curate.io.outputs import claim
from curate.io.token_format import DTYPES, FORMAT, MANIFEST, dtype_for, encode_index, fits, shard_entry, token_dtype
from curate.io.writers import atomic_write_text
from curate.run.executors.base import Executor
from curate.run.executors.local import LocalExecutor

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


def _all_inputs(inputs: str | os.PathLike | list) -> list[str]:
    specs = inputs if isinstance(inputs, list) else [inputs]
    files: list[str] = []
    for spec in specs:
        files.extend(resolve_inputs(spec))
    return files


# ---------------------------------------------------------------------------------------------- training


def train_bpe(texts: Iterable[list[str]], vocab_size: int, min_frequency: int = 2):
    """A byte-level BPE (`tokenizers.Tokenizer`) trained on batches of texts, with Peneira's special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if vocab_size < 256 + len(SPECIAL_TOKENS):
        raise UsageError(f"--vocab-size {vocab_size} is below the 256 bytes + {len(SPECIAL_TOKENS)} special tokens")
    if vocab_size > 2**32:
        raise UsageError(f"--vocab-size {vocab_size} does not fit uint32")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
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
) -> dict[str, Any]:
    """Train a byte-level BPE on about `sample_chars` characters of the corpus and save tokenizer.json.

    Byte-level means every string round-trips exactly (no unknown token, no normalisation), which
    the decontamination and eval code rely on. The sample is drawn by a hash of the document id,
    so it spreads evenly over sources and shards and is the same on every rerun.
    Returns a summary (vocab size, sha256, documents and characters sampled).
    """
    files = _all_inputs(inputs)
    total = sum(estimated_chars(f) for f in files)
    rate = min(1.0, sample_chars / max(total, 1))
    seen = {"docs": 0, "chars": 0}

    def sample():
        for f in files:
            for batch in read_batches(f):
                picked = [t for i, t in zip(batch.ids, batch.texts, strict=True) if rate >= 1 or _unit(i, seed) < rate]
                seen["docs"] += len(picked)
                seen["chars"] += sum(map(len, picked))
                yield picked

    tok = train_bpe(sample(), vocab_size, min_frequency)
    if seen["docs"] == 0:
        raise UsageError(f"no documents to train a tokenizer on in {inputs}")
    out = os.fspath(out)
    staged = fs.Staged(out)
    tok.save(staged.tmp)
    staged.commit()
    return {"path": out, "vocab_size": tok.get_vocab_size(), "sha256": sha256_file(out), **seen}


def load_tokenizer(path: str | os.PathLike):
    """Load a tokenizer.json (local path or URL) and check it has Peneira's end-of-document token."""
    path = os.fspath(path)
    return _build_tokenizer(path, _read_tokenizer(path))


def _read_tokenizer(path: str) -> str:
    if not fs.isfile(path):
        raise UsageError(f"{path}: no such tokenizer file")
    with fs.open(path, "r", encoding="utf-8") as f:
        return f.read()


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


class _ShardWriter:
    """One split's shard of one input file: token ids appended to `NAME.bin`, the document index to `NAME.idx`.

    Tokens stream straight to a local temporary file, so a task holds one batch of tokens at a time; the index
    (10 bytes per document) is kept until the end, bounded by the input file. Nothing is visible under the final
    names until `commit`, which publishes the `.bin` first and the `.idx` second: a reader that finds the index
    finds its tokens whole.
    """

    def __init__(self, out: str, split: str, name: str, dtype: str):
        self.split, self.name, self.dtype = split, name, token_dtype(dtype)
        self.bin = fs.Staged(fs.join(out, split, f"{name}.bin"), tmp_name=f".{name}.bin.tmp")
        self.idx = fs.Staged(fs.join(out, split, f"{name}.idx"), tmp_name=f".{name}.idx.tmp")
        self.file = open(self.bin.tmp, "wb")  # noqa: SIM115 (closed in commit/discard)
        self.ends: list[np.ndarray] = []
        self.codes: list[np.ndarray] = []
        self.sources: dict[str, int] = {}
        self.tokens = 0
        self.per_source: Counter = Counter()

    def add(self, flat: np.ndarray, lengths: np.ndarray, sources: list[str]) -> None:
        """Documents whose tokens are `flat`, cut into `lengths` (EOS included), with their source names."""
        self.file.write(np.ascontiguousarray(flat, dtype=self.dtype).tobytes())
        self.ends.append(self.tokens + np.cumsum(lengths, dtype=np.int64))
        self.codes.append(np.array([self.sources.setdefault(s, len(self.sources)) for s in sources], np.uint16))
        self.tokens += int(lengths.sum())
        for s, n in zip(sources, lengths.tolist(), strict=True):
            self.per_source[s] += n

    @property
    def docs(self) -> int:
        return sum(len(e) for e in self.ends)

    def commit(self) -> dict[str, Any]:
        self.file.close()
        ends = np.concatenate(self.ends) if self.ends else np.zeros(0, np.int64)
        codes = np.concatenate(self.codes) if self.codes else np.zeros(0, np.uint16)
        with open(self.idx.tmp, "wb") as f:
            f.write(encode_index(ends, codes))
        self.bin.commit()
        self.idx.commit()
        return shard_entry(self.split, self.name, len(ends), self.tokens, list(self.sources),
                           dict(sorted(self.per_source.items())))

    def discard(self) -> None:
        self.file.close()
        self.bin.discard()
        self.idx.discard()


# ---------------------------------------------------------------------------------------------- tokenizing


@dataclass(frozen=True)
class _Task:
    index: int
    path: str
    out: str
    tokenizer: str
    dtype: str
    val_fraction: float
    batch_docs: int
    threads: int


def _done_path(out: str, index: int) -> str:
    return fs.join(out, "_done", f"part-{index:05d}.json")


def _tokenize_file(task: _Task, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """One input file -> train/part-NNNNN.{bin,idx} and val/part-NNNNN.{bin,idx}, published only once all are
    whole (a failed task leaves none, and its `_done` record, written last, is what a rerun trusts)."""
    if task.threads:  # one Rust thread per process when processes already fill the cores
        os.environ["RAYON_NUM_THREADS"] = str(task.threads)
    tok = task_tokenizer(task.tokenizer)
    name = f"part-{task.index:05d}"
    writers = {s: _ShardWriter(task.out, s, name, task.dtype) for s in ("train", "val")}
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
    atomic_write_text(_done_path(task.out, task.index), json.dumps(result))
    release_task_memory()
    return result


def _encode_file(task: _Task, tok, writers: dict[str, _ShardWriter], progress) -> None:
    """Encode one input file batch by batch, appending each split's documents to its (temporary) shard."""
    eos = tok.token_to_id(EOS)
    dtype = DTYPES[task.dtype]
    for batch in read_batches(task.path, batch_size=task.batch_docs):
        encs = tok.encode_batch_fast(batch.texts, add_special_tokens=False)
        lengths = np.fromiter((len(e.ids) + 1 for e in encs), dtype=np.int64, count=len(encs))
        flat = np.empty(int(lengths.sum()), dtype=dtype)
        ends = np.cumsum(lengths)
        for e, end, n in zip(encs, ends, lengths, strict=True):
            flat[end - n : end - 1] = e.ids
        flat[ends - 1] = eos
        is_val = np.array([_unit(split_key(i)) < task.val_fraction for i in batch.ids], dtype=bool)
        for split, mask in (("train", ~is_val), ("val", is_val)):
            if mask.all():
                writers[split].add(flat, lengths, batch.sources)
            elif mask.any():
                idx = np.flatnonzero(mask)
                values = np.concatenate([flat[ends[i] - lengths[i] : ends[i]] for i in idx])
                writers[split].add(values, lengths[idx], [batch.sources[i] for i in idx])
        if progress is not None:
            progress(len(batch.ids))


def _mix_plans(specs: list) -> dict[str, float]:
    """Planned token shares of the inputs that are `curate mix` outputs (their manifest's plan), by source."""
    plan: dict[str, float] = {}
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
    total = sum(plan.values())
    return {s: n / total for s, n in plan.items()} if total else {}


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
    batch_docs: int = 1000,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Tokenize a corpus into token shards with an end-of-document token after every document.

    One task per input file, in parallel processes, each using the library's batch encoder. A
    document goes to the validation split when a hash of its id falls under `val_fraction`, so the
    split is by document, stable across reruns and independent of sharding. A rerun resumes: files
    with a `_done` record are skipped, and an output directory made with another tokenizer or split
    is refused (`overwrite` replaces it). Every path may be an fsspec URL. Returns the manifest (also written to OUT/manifest.json).
    """
    t0 = time.time()
    if not 0 <= val_fraction < 1:
        raise UsageError(f"--val-fraction must be in [0, 1), got {val_fraction}")
    specs = inputs if isinstance(inputs, list) else [inputs]
    files = _all_inputs(inputs)
    tokenizer = os.fspath(tokenizer)
    tok = load_tokenizer(tokenizer)
    vocab = tok.get_vocab_size()
    dtype = dtype or dtype_for(vocab)
    if dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype!r}: choose uint16 or uint32")
    if not fits(vocab, dtype):
        raise UsageError(f"vocab size {vocab} does not fit {dtype} (max id {np.iinfo(DTYPES[dtype]).max})")
    out = os.fspath(out)
    tok_hash = sha256_file(tokenizer)
    config = {"format": FORMAT, "tokenizer_sha256": tok_hash, "dtype": dtype, "val_fraction": val_fraction,
              "inputs": files}
    _check_config(out, config, overwrite)
    with fs.open(tokenizer, "rb") as src, fs.atomic_open(fs.join(out, "tokenizer.json"), "wb") as dst:
        shutil.copyfileobj(src, dst)

    executor = executor or LocalExecutor(workers)
    threads = 1 if getattr(executor, "workers", 1) > 1 else 0
    tok_copy = fs.join(out, "tokenizer.json")
    tasks = [_Task(i, f, out, tok_copy, dtype, val_fraction, batch_docs, threads) for i, f in enumerate(files)]
    done = set(fs.listdir(fs.join(out, "_done")))  # listed once, not one lookup per task
    todo = [t for t in tasks if f"part-{t.index:05d}.json" not in done]
    if todo:
        executor.map(_tokenize_file, todo, desc="tokenize", labels=[t.path for t in todo])
    results = [json.loads(fs.read_bytes(_done_path(out, t.index))) for t in tasks]  # each must exist: it ran
    manifest = _manifest(results, tok, tokenizer, tok_hash, dtype, val_fraction, _mix_plans(specs))
    if manifest["splits"]["train"]["docs"] == 0:
        raise UsageError(f"no documents were tokenized from {inputs}")
    if val_fraction > 0 and manifest["splits"]["val"]["docs"] == 0:
        raise UsageError(
            f"--val-fraction {val_fraction} put no document in the validation split "
            f"({manifest['splits']['train']['docs']} documents): raise it or pass 0"
        )
    manifest["seconds"] = round(time.time() - t0, 3)
    atomic_write_text(fs.join(out, MANIFEST), json.dumps(manifest, indent=1))
    fs.remove_temp_files(out)  # what killed attempts left: every task has finished now
    return manifest


def _manifest(results: list, tok, tokenizer: str, tok_hash: str, dtype: str, val_fraction: float,
              mix_plan: dict[str, float]) -> dict[str, Any]:
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
        "format": FORMAT,
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


def _check_config(out: str, config: dict, overwrite: bool = False) -> None:
    """Refuse to mix shards of two tokenizers (or two splits) in one directory, or to write beside anything
    else (`curate.io.outputs.claim`); otherwise allow resume."""
    path = fs.join(out, "_done", "config.json")
    if claim(out, what="`curate tokenize`", option="--out", own=lambda: fs.exists(path), overwrite=overwrite,
             layout=("_done", "train", "val", "tokenizer.json", "manifest.json")):
        with fs.open(path, "r", encoding="utf-8") as f:
            old = json.load(f)
        if old.get("tokenizer_sha256") != config["tokenizer_sha256"]:
            raise UsageError(
                f"{out} holds token shards from another tokenizer (sha256 {old.get('tokenizer_sha256', '?')[:16]}…, "
                f"this one {config['tokenizer_sha256'][:16]}…): pass --overwrite to replace them, or use a new --out"
            )
        if old != config:
            changed = sorted(k for k in config if old.get(k) != config[k])
            raise UsageError(f"{out} was tokenized with other settings ({', '.join(changed)}): pass --overwrite "
                             "to replace it, or use a new --out")
        return
    fs.makedirs(fs.join(out, "_done"))
    atomic_write_text(path, json.dumps(config, indent=1))


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
