"""Byte-level BPE training and tokenization into token shards (the contract in docs/tokens.md).

Python API (the CLI commands `curate tokenizer train` and `curate tokenize` are thin wrappers):

* `train_tokenizer(inputs, vocab_size, out)` trains a byte-level BPE on a sample of a corpus.
* `tokenize(inputs, tokenizer, out, val_fraction)` writes token shards and their manifest.
* `build_token_shards(inputs, out)` does both, small and quick: for tests and smoke runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from curate.core.errors import UsageError
from curate.io import fs
from curate.io.corpus import estimated_chars, read_batches, resolve_inputs
from curate.io.models import sha256_of as sha256_file
from curate.io.writers import atomic_write_text
from curate.run.executors.base import Executor
from curate.run.executors.local import LocalExecutor

EOS = "<|endoftext|>"
PAD = "<|pad|>"
SPECIAL_TOKENS = [EOS, PAD]  # EOS first: id 0 in every Peneira tokenizer
FORMAT = "peneira.tokens/1"  # must match train.data.FORMAT
DTYPES = {"uint16": np.uint16, "uint32": np.uint32}


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
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if vocab_size < 256 + len(SPECIAL_TOKENS):
        raise UsageError(f"--vocab-size {vocab_size} is below the 256 bytes + {len(SPECIAL_TOKENS)} special tokens")
    if vocab_size > 2**32:
        raise UsageError(f"--vocab-size {vocab_size} does not fit uint32")
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
    tok.train_from_iterator(sample(), trainer=trainer)
    if seen["docs"] == 0:
        raise UsageError(f"no documents to train a tokenizer on in {inputs}")
    out = Path(out)
    staged = fs.Staged(out)
    tok.save(staged.tmp)
    staged.commit()
    return {"path": str(out), "vocab_size": tok.get_vocab_size(), "sha256": sha256_file(out), **seen}


def load_tokenizer(path: str | os.PathLike):
    """Load a tokenizer.json and check it has Peneira's end-of-document token."""
    from tokenizers import Tokenizer

    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such tokenizer file")
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:
        raise UsageError(f"{path}: not a tokenizers JSON file ({e})") from e
    if tok.token_to_id(EOS) is None:
        raise UsageError(f"{path}: tokenizer has no end-of-document token {EOS!r}")
    tok.encode_special_tokens = True  # a document that quotes "<|endoftext|>" must not end there
    return tok


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


def _tokenize_file(task: _Task) -> dict[str, Any]:
    """One input file -> train/part-NNNNN.parquet and val/part-NNNNN.parquet, published only once both are whole
    (a failed task leaves neither, and its `_done` record, written last, is what a rerun trusts)."""
    if task.threads:  # one Rust thread per process when processes already fill the cores
        os.environ["RAYON_NUM_THREADS"] = str(task.threads)
    tok = load_tokenizer(task.tokenizer)
    token_type = pa.from_numpy_dtype(DTYPES[task.dtype])
    schema = pa.schema([pa.field("tokens", pa.list_(token_type)), pa.field("source", pa.string())])
    name = f"part-{task.index:05d}.parquet"
    writers: dict[str, tuple[fs.Staged, pq.ParquetWriter]] = {}
    counts = {s: {"docs": 0, "tokens": 0, "tokens_per_source": Counter()} for s in ("train", "val")}
    try:
        _encode_file(task, tok, schema, name, writers, counts)
    except BaseException:
        for staged, w in writers.values():  # close the writers and drop their temp files: nothing is published
            w.close()
            staged.discard()
        raise
    shards = {}
    for split, (staged, w) in writers.items():
        w.close()
        staged.commit()
        c = counts[split]
        shards[split] = {
            "file": f"{split}/{name}",
            "docs": c["docs"],
            "tokens": c["tokens"],
            "tokens_per_source": dict(sorted(c["tokens_per_source"].items())),
        }
    result = {"input": task.path, "docs": sum(c["docs"] for c in counts.values()), "shards": shards}
    atomic_write_text(os.path.join(task.out, "_done", f"{name}.json"), json.dumps(result))
    return result


def _encode_file(task: _Task, tok, schema: pa.Schema, name: str, writers: dict, counts: dict) -> None:
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
            if not mask.any():
                continue
            idx = np.flatnonzero(mask)
            offsets = np.concatenate([[0], np.cumsum(lengths[idx])]).astype(np.int32)
            values = np.concatenate([flat[ends[i] - lengths[i] : ends[i]] for i in idx])
            srcs = [batch.sources[i] for i in idx]
            table = pa.table(
                {
                    "tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(values)),
                    "source": pa.array(srcs, pa.string()),
                },
                schema=schema,
            )
            if split not in writers:
                staged = fs.Staged(os.path.join(task.out, split, name), tmp_name=f".{name}.tmp")
                writers[split] = (staged, pq.ParquetWriter(staged.tmp, schema, compression="zstd"))
            writers[split][1].write_table(table)
            c = counts[split]
            c["docs"] += len(idx)
            c["tokens"] += int(lengths[idx].sum())
            for s, n in zip(srcs, lengths[idx], strict=True):
                c["tokens_per_source"][s] += int(n)


def tokenize(
    inputs: str | os.PathLike | list,
    tokenizer: str | os.PathLike,
    out: str | os.PathLike,
    val_fraction: float = 0.005,
    dtype: str | None = None,
    workers: int = 1,
    executor: Executor | None = None,
    batch_docs: int = 1000,
) -> dict[str, Any]:
    """Tokenize a corpus into token shards with an end-of-document token after every document.

    One task per input file, in parallel processes, each using the library's batch encoder. A
    document goes to the validation split when a hash of its id falls under `val_fraction`, so the
    split is by document, stable across reruns and independent of sharding. A rerun resumes: files
    with a `_done` record are skipped, and an output directory made with another tokenizer or split
    is refused. Returns the manifest (also written to OUT/manifest.json).
    """
    t0 = time.time()
    if not 0 <= val_fraction < 1:
        raise UsageError(f"--val-fraction must be in [0, 1), got {val_fraction}")
    files = _all_inputs(inputs)
    tok = load_tokenizer(tokenizer)
    vocab = tok.get_vocab_size()
    dtype = dtype or ("uint16" if vocab <= 2**16 else "uint32")
    if dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype!r}: choose uint16 or uint32")
    if vocab - 1 > np.iinfo(DTYPES[dtype]).max:
        raise UsageError(f"vocab size {vocab} does not fit {dtype} (max id {np.iinfo(DTYPES[dtype]).max})")
    out = os.fspath(out)
    tok_hash = sha256_file(tokenizer)
    config = {
        "format": FORMAT,
        "tokenizer_sha256": tok_hash,
        "dtype": dtype,
        "val_fraction": val_fraction,
        "inputs": files,
    }
    _check_config(out, config)
    staged = fs.Staged(os.path.join(out, "tokenizer.json"))
    shutil.copyfile(tokenizer, staged.tmp)
    staged.commit()

    executor = executor or LocalExecutor(workers)
    threads = 1 if getattr(executor, "workers", 1) > 1 else 0
    tasks = [
        _Task(i, f, out, os.path.join(out, "tokenizer.json"), dtype, val_fraction, batch_docs, threads)
        for i, f in enumerate(files)
    ]
    todo = [t for t in tasks if not os.path.exists(os.path.join(out, "_done", f"part-{t.index:05d}.parquet.json"))]
    if todo:
        executor.map(_tokenize_file, todo, desc="tokenize", labels=[t.path for t in todo])
    results = [json.loads(Path(out, "_done", f"part-{t.index:05d}.parquet.json").read_text()) for t in tasks]

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
    if splits["train"]["docs"] == 0:
        raise UsageError(f"no documents were tokenized from {inputs}")
    if val_fraction > 0 and splits["val"]["docs"] == 0:
        raise UsageError(
            f"--val-fraction {val_fraction} put no document in the validation split "
            f"({splits['train']['docs']} documents): raise it or pass 0"
        )
    manifest = {
        "format": FORMAT,
        "tokenizer": {
            "file": "tokenizer.json",
            "sha256": tok_hash,
            "source_path": os.fspath(tokenizer),
            "eos_token": EOS,
            "special_tokens": {t: tok.token_to_id(t) for t in SPECIAL_TOKENS},
        },
        "vocab_size": vocab,
        "dtype": dtype,
        "eos_id": tok.token_to_id(EOS),
        "val_fraction": val_fraction,
        "split_rule": "val if xxh64(id without a #eN copy suffix) / 2**64 < val_fraction",
        "splits": splits,
        "inputs": [{"path": r["input"]} for r in results],
        "seconds": round(time.time() - t0, 3),
    }
    atomic_write_text(os.path.join(out, "manifest.json"), json.dumps(manifest, indent=1))
    return manifest


def _check_config(out: str, config: dict) -> None:
    """Refuse to mix shards of two tokenizers (or two splits) in one directory; otherwise allow resume."""
    path = os.path.join(out, "_done", "config.json")
    if os.path.exists(path):
        old = json.loads(Path(path).read_text())
        if old.get("tokenizer_sha256") != config["tokenizer_sha256"]:
            raise UsageError(
                f"{out} holds token shards from another tokenizer (sha256 {old.get('tokenizer_sha256', '?')[:16]}…, "
                f"this one {config['tokenizer_sha256'][:16]}…): use a new --out or delete it"
            )
        if old != config:
            changed = sorted(k for k in config if old.get(k) != config[k])
            raise UsageError(f"{out} was tokenized with other settings ({', '.join(changed)}): use a new --out")
        return
    if os.path.isdir(out) and os.listdir(out):
        raise UsageError(f"{out} exists and is not a `curate tokenize` output: choose an empty --out")
    os.makedirs(os.path.join(out, "_done"), exist_ok=True)
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
