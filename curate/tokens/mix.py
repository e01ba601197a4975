"""Mixing sources by weight to a token budget: plan, deterministic sampling, text shards plus a manifest.

Weights are fractions of the final tokens. How tokens are counted (docs/tokens.md):

* `tokenizer=`: every document is counted exactly (EOS included, as `curate tokenize` writes it);
* by default: each source's characters per token are measured on a sample with a reference BPE
  trained on that sample (`calibration_vocab`), and a document counts 1 + characters / that ratio;
* `chars_per_token=`: characters / that fixed ratio for every source (the old estimate, no tokenizer).

Memory: nothing per document reaches the driver. Phase 1 (one task per input file) counts each
document and spills the counts beside the output; the driver sees per-file sums and a bounded text
sample. Phase 2 gives each file its share of its source's target and selects and writes that file's
documents in its own task, streaming, one epoch pass at a time.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.core.document import CORE_COLUMNS, TEXT_SCHEMA
from curate.core.errors import UsageError
from curate.io import fs
from curate.io.batching import ROW_GROUP_BYTES, RowGroups, iter_batches
from curate.io.corpus import estimated_chars, is_dir, resolve_inputs, sha256_file, unfinished
from curate.io.outputs import claim, locked
from curate.io.state import DAMAGED_SHARD, reading
from curate.io.writers import atomic_write_text
from curate.run.executors.base import Executor
from curate.run.executors.local import LocalExecutor
from curate.tokens.common import (
    BATCH_CHARS,
    check_outside,
    encode_ids,
    input_change,
    naming,
    splits_exactly,
    text_batches,
    unique_tmp,
)

MIX_SCHEMA = TEXT_SCHEMA.append(pa.field("mix_epoch", pa.int16(), nullable=False))
_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
ROW_GROUP = 10_000  # most rows per written row group (and ROW_GROUP_BYTES), the span of the within-shard shuffle:
# 10,000 documents of 150 KB made 1.5 GB row groups, which a pipeline reading the mix skipped whole (issue 29.2)
READ_ROWS = 2048  # most rows read at a time (fewer when the text is large: `curate.io.batching.iter_batches`)
CONFIG_FORMAT = "peneira.mix-config/1"
WORK = "_work"  # per-file document counts between the two phases; removed when the mix completes


@dataclass(frozen=True)
class Source:
    name: str
    path: str
    weight: float


def parse_source(spec: str) -> Source:
    """`NAME=PATH:WEIGHT` (the weight after the last colon, so paths may contain colons)."""
    name, eq, rest = spec.partition("=")
    path, colon, weight = rest.rpartition(":")
    if not eq or not colon or not name or not path:
        raise UsageError(f"--source {spec!r}: expected NAME=PATH:WEIGHT, e.g. web=out/web:0.6")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise UsageError(f"--source {spec!r}: source name {name!r} may only use letters, digits, _ . -")
    try:
        w = float(weight)
    except ValueError:
        raise UsageError(f"--source {spec!r}: weight {weight!r} is not a number") from None
    if not math.isfinite(w) or w <= 0:
        raise UsageError(f"--source {spec!r}: weight must be a positive number, got {weight}")
    return Source(name, path, w)


def parse_count(text: str) -> int:
    """`50M`, `1.5B`, `200_000`, `2e9` -> an integer token count."""
    m = re.fullmatch(r"\s*([0-9][0-9_]*(?:\.[0-9]+)?(?:e[0-9]+)?)\s*([KMBGT]?)\s*", text, re.I)
    if not m:
        raise UsageError(f"--tokens {text!r}: expected a count such as 50M, 1.5B or 200000")
    n = int(float(m.group(1).replace("_", "")) * _SUFFIX[m.group(2).upper()])
    if n <= 0:
        raise UsageError(f"--tokens {text!r} must be positive")
    return n


# ---------------------------------------------------------------------------------------------- tasks


def _tables(path: str, source: str, batch_chars: int = BATCH_CHARS) -> Iterator[pa.Table]:
    """One input file as tables in the text contract, each of about `batch_chars` characters of text at most (or one
    larger document), and at most `READ_ROWS` rows (extension columns dropped: sources differ in them; `source` set
    to the mix's source name)."""
    if path.endswith(".parquet"):
        with reading(path, DAMAGED_SHARD), fs.parquet_file(path) as pf:
            if all(c in pf.schema_arrow.names for c in CORE_COLUMNS):
                for rb in iter_batches(pf, columns=list(CORE_COLUMNS), budget=batch_chars, max_rows=READ_ROWS):
                    t = pa.Table.from_batches([rb]).filter(pc.is_valid(rb.column("text")))
                    t = t.set_column(t.schema.get_field_index("source"), "source", pa.array([source] * t.num_rows))
                    yield from _cut(t.cast(TEXT_SCHEMA), batch_chars)
                return
    for b in text_batches(path, batch_chars, READ_ROWS, source=source):
        n = len(b.ids)
        cols = {"id": pa.array(b.ids, pa.string()), "text": pa.array(b.texts, pa.string()),
                "source": pa.array([source] * n, pa.string())}
        yield pa.table({f.name: cols.get(f.name, pa.nulls(n, f.type)) for f in TEXT_SCHEMA}, schema=TEXT_SCHEMA)


def _cut(t: pa.Table, batch_chars: int) -> Iterator[pa.Table]:
    """`t` in consecutive slices of at most `batch_chars` bytes of text (a larger row alone), zero-copy."""
    sizes = pc.binary_length(t["text"]).to_numpy(zero_copy_only=False).astype(np.int64)
    if t.num_rows <= 1 or sizes.sum() <= batch_chars:
        yield t
        return
    start, size = 0, 0
    for i, n in enumerate(sizes.tolist()):
        if i > start and size + n > batch_chars:
            yield t.slice(start, i - start)
            start, size = i, 0
        size += n
    yield t.slice(start)


@dataclass(frozen=True)
class _Measure:
    path: str
    source: str
    counts: str  # where the per-document counts go (.npy)
    tokenizer: str | None
    sample_rate: float  # fraction of documents (by id hash) returned as the calibration sample
    seed: int


def _measure(item: _Measure, progress=None) -> dict[str, Any]:
    """Phase 1, one input file: per-document counts to `item.counts` (tokens with a tokenizer, else characters),
    the file's totals and sha256, and a hash-chosen text sample when calibrating."""
    from curate.tokens.tokenize import _unit, release_task_memory, task_tokenizer

    tok = task_tokenizer(item.tokenizer) if item.tokenizer else None
    exact = tok is not None and splits_exactly(tok)
    parts, chars, sample = [], 0, []
    for t in _tables(item.path, item.source):
        lengths = pc.utf8_length(t["text"]).to_numpy(zero_copy_only=False).astype(np.int64)
        chars += int(lengths.sum())
        if tok is not None:
            ids = encode_ids(tok, t["text"].to_pylist(), np.uint32, exact_pieces=exact)
            parts.append(np.fromiter((len(x) + 1 for x in ids), np.int64, count=len(ids)))
        else:
            parts.append(lengths)
        if item.sample_rate > 0:
            ids, texts = t["id"].to_pylist(), t["text"].to_pylist()
            sample += [x for i, x in zip(ids, texts, strict=True) if _unit(i, item.seed) < item.sample_rate]
        if progress is not None:
            progress(t.num_rows)
    counts = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    buf = io.BytesIO()
    np.save(buf, counts)
    with naming(item.counts), fs.atomic_open(item.counts, "wb", tmp_name=unique_tmp(fs.basename(item.counts))) as f:
        f.write(buf.getvalue())
    release_task_memory()
    return {"docs": len(counts), "chars": chars, "tokens": int(counts.sum()) if tok else None,
            "sha256": sha256_file(item.path), "sample": sample}


@dataclass(frozen=True)
class _Write:
    path: str
    source: str
    counts: str
    per_token: float  # characters per token of this source (0: counts are exact tokens)
    eos: float  # tokens added per document to the character estimate (1: its EOS)
    target: float  # tokens this file contributes
    dest: str
    seed: int


def _doc_tokens(counts: np.ndarray, per_token: float, eos: float) -> np.ndarray:
    """Tokens per document: exact counts, or `eos` + characters / characters-per-token."""
    return counts.astype(np.float64) if per_token == 0 else eos + counts / per_token


def _write(item: _Write, progress=None) -> dict[str, Any]:
    """Phase 2, one input file: its chosen documents, one pass per epoch, shuffled within row groups, as one
    shard. Memory: the file's per-document counts and one row group, never the file itself."""
    from curate.tokens.tokenize import release_task_memory

    tokens = _doc_tokens(fs.load_npy(item.counts), item.per_token, item.eos)
    rng = np.random.default_rng([item.seed, zlib.crc32(fs.basename(item.dest).encode())])
    repeats = _select(tokens, item.target, rng)
    staged = fs.Staged(item.dest, tmp_name=unique_tmp(fs.basename(item.dest)))
    stats = {"docs": 0, "chars": 0, "tokens": float(np.sum(tokens * repeats)), "file": item.dest}
    groups = RowGroups(ROW_GROUP_BYTES, ROW_GROUP)

    def write(writer: pq.ParquetWriter, t: pa.Table | None) -> None:
        if t is not None:
            writer.write_table(t.take(pa.array(rng.permutation(t.num_rows))), row_group_size=t.num_rows)

    try:
        with naming(item.dest), pq.ParquetWriter(staged.tmp, MIX_SCHEMA, compression="zstd",
                                                                     write_page_checksum=True) as writer:
            for epoch in range(int(repeats.max(initial=0))):
                start = 0
                for t in _tables(item.path, item.source):
                    keep = repeats[start : start + t.num_rows] > epoch
                    start += t.num_rows
                    t = t.filter(pa.array(keep))
                    if epoch:
                        t = t.set_column(0, "id", pc.binary_join_element_wise(t["id"], f"e{epoch}", "#"))
                    t = t.append_column("mix_epoch", pa.array(np.full(t.num_rows, epoch, np.int16)))
                    stats["docs"] += t.num_rows
                    stats["chars"] += pc.sum(pc.utf8_length(t["text"])).as_py() or 0
                    for group in groups.add(t.cast(MIX_SCHEMA)):
                        write(writer, group)
                    if progress is not None:
                        progress(t.num_rows)
            write(writer, groups.take())
    except BaseException:
        staged.discard()
        raise
    with naming(item.dest):
        staged.commit()
    release_task_memory()
    return stats


# ---------------------------------------------------------------------------------------------- planning


def _select(tokens: np.ndarray, target: float, rng: np.random.Generator) -> np.ndarray:
    """Copies per document so that their tokens come as close to `target` as documents allow.

    Whole passes first; for the remainder, documents in a seeded random order are taken while they
    fit, then the rest of that order fills the gap with documents that still fit. Taking only what
    fits keeps the result within a small fraction of the target even when documents are large.
    """
    total = float(tokens.sum())
    if total <= 0 or target <= 0:
        return np.zeros(len(tokens), dtype=np.int64)
    full = int(target // total)
    repeats = np.full(len(tokens), full, dtype=np.int64)
    left = target - full * total
    order = rng.permutation(len(tokens))
    cum = np.cumsum(tokens[order])
    k = int(np.searchsorted(cum, left, side="right"))
    repeats[order[:k]] += 1
    left -= float(cum[k - 1]) if k else 0.0
    for i in order[k:]:
        if left <= 0.5:
            break
        if tokens[i] <= left:
            repeats[i] += 1
            left -= float(tokens[i])
    return repeats


def plan(available: dict[str, float], weights: dict[str, float], tokens: int, max_epochs: float) -> dict[str, Any]:
    """Targets per source; caps repetition at `max_epochs` by shrinking the total, never the proportions."""
    total_w = sum(weights.values())
    w = {s: weights[s] / total_w for s in weights}
    scale = min(1.0, *(max_epochs * available[s] / (w[s] * tokens) for s in w))
    out = {}
    for s in w:
        target = w[s] * tokens * scale
        out[s] = {
            "weight": w[s],
            "available_tokens": round(available[s]),
            "target_tokens": round(target),
            "epochs": target / available[s],
            "limited_by_max_epochs": bool(math.isclose(target / available[s], max_epochs) and scale < 1),
        }
    return {"requested_tokens": tokens, "planned_tokens": round(tokens * scale), "scale": scale, "sources": out}


def calibrate(samples: dict[str, list[str]], vocab_size: int, out: str | None = None) -> dict[str, float]:
    """Characters per token (EOS not counted) of each source's sample, with a byte-level BPE trained on all of
    them together, so that a source's ratio reflects how a tokenizer trained on the mix will split it."""
    from curate.tokens.tokenize import train_bpe

    empty = [s for s, texts in samples.items() if not sum(map(len, texts))]
    if empty:
        raise UsageError(f"no text sampled from source(s) {empty} to measure characters per token")
    batches = [b for texts in samples.values() for b in _chunks(texts)]
    tok = train_bpe(batches, vocab_size)
    if out is not None:
        with naming(out), fs.atomic_open(out, "w", tmp_name=unique_tmp(fs.basename(out)), encoding="utf-8") as f:
            f.write(tok.to_str())
    ratio = {}
    exact = splits_exactly(tok)
    for s, texts in samples.items():
        n = sum(len(x) for b in _chunks(texts) for x in encode_ids(tok, b, np.uint32, exact_pieces=exact))
        ratio[s] = sum(map(len, texts)) / max(n, 1)
    return ratio


def _chunks(texts: list[str], chars: int = BATCH_CHARS, docs: int = 1000) -> Iterator[list[str]]:
    """`texts` in consecutive lists of at most `docs` texts and `chars` characters (or one longer text)."""
    start, size = 0, 0
    for i, t in enumerate(texts):
        if i > start and (size + len(t) > chars or i - start >= docs):
            yield texts[start:i]
            start, size = i, 0
        size += len(t)
    if start < len(texts):
        yield texts[start:]


def mix(
    sources: list[Source] | dict[str, tuple[str, float]],
    tokens: int,
    out: str | os.PathLike,
    max_epochs: float = 4.0,
    seed: int = 0,
    chars_per_token: float | None = None,
    tokenizer: str | None = None,
    workers: int = 1,
    executor: Executor | None = None,
    calibration_vocab: int = 32_000,
    calibration_chars: int = 20_000_000,
    overwrite: bool = False,
    allow_partial: bool = False,
) -> dict[str, Any]:
    """Mix sources to `tokens` tokens; writes OUT/data/*.parquet and OUT/manifest.json, returns the manifest.

    Tokens are counted with `tokenizer` when given, else by characters per token measured per source on a
    sample of about `calibration_chars` characters (shared by weight) with a reference BPE of
    `calibration_vocab` tokens (saved as OUT/reference-tokenizer.json), else, with `chars_per_token`, by that
    fixed ratio. Every path may be an fsspec URL.

    One output transaction (issue 29): every argument, the tokenizer and the inputs are checked first; then `out`
    is locked (a second command into it is refused with one line) before anything in it is read or deleted. A
    folder holding the same mix (same arguments, same inputs by size, modification time and ETag: an
    interrupted or finished run of this very command) is redone in place, which gives the same bytes; a
    different mix, or anything else, is refused with one line unless `overwrite`.
    """
    with naming(os.fspath(out)):
        return _mix(sources, tokens, out, max_epochs, seed, chars_per_token, tokenizer, workers, executor,
                    calibration_vocab, calibration_chars, overwrite, allow_partial)


def _mix(sources, tokens, out, max_epochs, seed, chars_per_token, tokenizer, workers, executor, calibration_vocab,
         calibration_chars, overwrite, allow_partial=False) -> dict[str, Any]:
    t0 = time.time()
    sources = _check_args(sources, max_epochs, chars_per_token, calibration_vocab, calibration_chars)
    if isinstance(tokens, bool) or not isinstance(tokens, (int, float)) or not math.isfinite(tokens) or tokens < 1:
        raise UsageError(f"--tokens must be a positive count, got {tokens!r}")
    tokens = int(tokens)
    tokenizer = os.fspath(tokenizer) if tokenizer else None
    tok_hash = None
    if tokenizer:
        from curate.tokens.tokenize import load_tokenizer

        load_tokenizer(tokenizer)  # a tokenizer, with its EOS: checked before the folder is touched
        tok_hash = sha256_file(tokenizer)
    files = {s.name: resolve_inputs(s.path, allow_partial) for s in sources}
    _check_disjoint(files)
    out = os.fspath(out)
    check_outside([f for fl in files.values() for f in fl], out)
    from curate.tokens.tokenize import _fingerprints

    config = {"format": CONFIG_FORMAT, "sources": [[s.name, s.path, s.weight] for s in sources], "tokens": tokens,
              "max_epochs": max_epochs, "seed": seed, "chars_per_token": chars_per_token, "tokenizer_sha256": tok_hash,
              "calibration_vocab": calibration_vocab, "calibration_chars": calibration_chars,
              "inputs": _fingerprints([f for s in sources for f in files[s.name]])}
    partial = [s.path for s in sources if is_dir(s.path) and unfinished(s.path)]
    if partial:  # read with allow_partial: said in the config, and so in the manifest
        config["partial_inputs"] = partial
    executor = executor or LocalExecutor(workers)
    # one pool for both passes, ended when the mix ends (killed on an error), as `Pipeline.run` does
    with executor, locked(out, what="`curate mix`"):
        _prepare_output(out, config, overwrite)
        manifest = _run(sources, tokens, out, max_epochs, seed, chars_per_token, tokenizer, executor,
                        calibration_vocab, calibration_chars, files, config)
        manifest["seconds"] = round(time.time() - t0, 3)
        with naming(fs.join(out, "manifest.json")):
            atomic_write_text(fs.join(out, "manifest.json"), json.dumps(manifest, indent=1))
        fs.remove_temp_files(out)  # what killed attempts left: every task has finished, and we hold the lock
    return manifest


def _run(sources, tokens, out, max_epochs, seed, chars_per_token, tokenizer, executor, calibration_vocab,
         calibration_chars, files, config) -> dict[str, Any]:
    calibrating = tokenizer is None and chars_per_token is None
    total_w = sum(s.weight for s in sources)
    items = []
    for s in sources:
        est = sum(estimated_chars(f) for f in files[s.name])
        rate = min(1.0, calibration_chars * s.weight / total_w / max(est, 1)) if calibrating else 0.0
        items += [_Measure(f, s.name, fs.join(out, WORK, f"counts-{len(items) + j:05d}.npy"), tokenizer, rate, seed)
                  for j, f in enumerate(files[s.name])]
    measured = executor.map(_measure, items, desc="mix: measure", labels=[i.path for i in items])
    per_token, eos = _token_measure(items, measured, files, tokenizer, chars_per_token, calibration_vocab, out)
    available = {s.name: 0.0 for s in sources}
    for item, m in zip(items, measured, strict=True):
        available[item.source] += m["tokens"]
    the_plan = plan(available, {s.name: s.weight for s in sources}, tokens, max_epochs)

    jobs = []
    for i, (item, m) in enumerate(zip(items, measured, strict=True)):
        target = the_plan["sources"][item.source]["target_tokens"] * m["tokens"] / available[item.source]
        if m["docs"] and target > 0:
            dest = fs.join(out, "data", f"part-{i:05d}-000.parquet")
            jobs.append(_Write(item.path, item.source, item.counts, per_token[item.source], eos, target, dest, seed))
    fs.makedirs(fs.join(out, "data"))
    written = executor.map(_write, jobs, desc="mix: write", labels=[j.path for j in jobs])
    for item in items:
        fs.remove(item.counts)

    actual = {s.name: {"docs": 0, "chars": 0, "tokens": 0.0} for s in sources}
    for job, res in zip(jobs, written, strict=True):
        for k in ("docs", "chars", "tokens"):
            actual[job.source][k] += res[k]
    for a in actual.values():
        a["tokens"] = round(a["tokens"])
    empty = [s.name for s in sources if s.weight > 0 and not actual[s.name]["docs"]]
    if empty:  # an empty source is no mix: say so rather than publish it (issue 36.7)
        raise UsageError(f"--tokens {tokens:,} selects no document of {', '.join(map(repr, empty))} (a document "
                         "holds more tokens than that share): ask for more tokens")
    if tokenizer:
        measure = f"tokenizer {tokenizer}"
    elif calibrating:
        measure = (f"1 + characters / per-source characters per token, measured with a {calibration_vocab}-token "
                   f"reference BPE (reference-tokenizer.json)")
    else:
        measure = f"characters / {chars_per_token}"
    manifest = {
        "kind": "mix",
        "token_measure": measure,
        "chars_per_token": None if tokenizer else {s: round(v, 4) for s, v in per_token.items()},
        "seed": seed,
        "max_epochs": max_epochs,
        "plan": the_plan,
        "actual": actual,
        "inputs": [
            {"source": item.source, "path": item.path, "sha256": m["sha256"], "docs": m["docs"], "chars": m["chars"],
             "tokens": round(m["tokens"])}
            for item, m in zip(items, measured, strict=True)
        ],
        "outputs": sorted(fs.relpath(r["file"], out) for r in written),
        "config": config,
    }
    return manifest


def _check_args(sources, max_epochs: float, chars_per_token: float | None, calibration_vocab: int,
                calibration_chars: int) -> list[Source]:
    if isinstance(sources, dict):
        sources = [Source(n, str(p), float(w)) for n, (p, w) in sources.items()]
    if not sources:
        raise UsageError("give at least one --source NAME=PATH:WEIGHT")
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise UsageError(f"source names repeat: {names}")
    if max_epochs <= 0 or (chars_per_token is not None and chars_per_token <= 0) or calibration_chars <= 0:
        raise UsageError("--max-epochs, --chars-per-token and --calibration-chars must be positive")
    if calibration_vocab < 258:
        raise UsageError(f"--calibration-vocab {calibration_vocab} is below the 256 bytes + 2 special tokens")
    return sources


def _token_measure(items: list[_Measure], measured: list[dict], files: dict, tokenizer: str | None,
                   chars_per_token: float | None, calibration_vocab: int, out: str) -> tuple[dict, float]:
    """Characters per token per source (0: exact counts) and the tokens added per document; sets each file's
    `tokens` to the sum of the per-document estimate phase 2 uses, and drops the calibration samples."""
    chars = {s: 0 for s in files}
    for item, m in zip(items, measured, strict=True):
        chars[item.source] += m["chars"]
    empty = [s for s, n in chars.items() if n <= 0]
    if empty:
        raise UsageError(f"source(s) {empty} have no text: check their paths ({[files[s] for s in empty]})")
    calibrating = tokenizer is None and chars_per_token is None
    per_token = {s: chars_per_token or 0.0 for s in files}
    if calibrating:
        samples: dict[str, list[str]] = {s: [] for s in files}
        for item, m in zip(items, measured, strict=True):
            samples[item.source] += m["sample"]
        per_token = calibrate(samples, calibration_vocab, fs.join(out, "reference-tokenizer.json"))
    eos = 1.0 if calibrating else 0.0  # the calibrated estimate counts each document's EOS, as tokenize writes it
    for item, m in zip(items, measured, strict=True):
        del m["sample"]
        if not tokenizer:
            m["tokens"] = eos * m["docs"] + m["chars"] / per_token[item.source]
    return per_token, eos


def _check_disjoint(files: dict[str, list[str]]) -> None:
    """No file in two sources: not by name, and not as a byte-identical copy under another name (issue 36.7),
    which would weigh its text twice. Only files of equal size are hashed."""
    seen: dict[str, str] = {}
    for name, paths in files.items():
        for f in paths:
            key = f if fs.is_url(f) else os.path.realpath(f)
            other = seen.setdefault(key, name)
            if other != name:
                raise UsageError(f"{f} is in both sources {other!r} and {name!r}")
    by_size: dict[int, list[tuple[str, str]]] = {}
    for name, paths in files.items():
        for f in paths:
            by_size.setdefault(fs.size(f), []).append((name, f))
    for group in by_size.values():
        if len({name for name, _ in group}) < 2:
            continue
        digests: dict[str, tuple[str, str]] = {}
        for name, f in group:
            first = digests.setdefault(sha256_file(f), (name, f))
            if first[0] != name:
                raise UsageError(f"{f} (source {name!r}) is a byte-identical copy of {first[1]} (source {first[0]!r}): "
                                 "its text would count twice; give each file to one source")


def _prepare_output(out: str, config: dict, overwrite: bool = False) -> None:
    """Make `out` (locked) ready for a mix: an empty directory, or an earlier run of the same mix (finished or
    interrupted: `config` equal) whose shards are replaced; anything else, another mix included, is refused unless
    `overwrite` (`curate.io.outputs.claim`), which is only called once every argument and input was checked.

    The old manifest is first replaced by an unfinished one (holding `config`), then the old shards are removed: a
    mix interrupted at any point is still recognised as this one by its rerun, and no manifest ever lists shards
    that are gone.
    """
    from curate.run.state import parse_json

    mpath = fs.join(out, "manifest.json")
    old: dict = {}

    def is_mix() -> bool:
        nonlocal old
        try:
            raw = fs.read_bytes(mpath)
        except FileNotFoundError:
            return False
        m = parse_json(raw, mpath, "pass --overwrite to replace this mix, or choose another --out")
        old = m if isinstance(m, dict) else {}
        return old.get("kind") == "mix"

    if claim(out, what="`curate mix`", option="--out", own=is_mix, overwrite=overwrite,
             layout=("manifest.json", "data", WORK, "reference-tokenizer.json"), marker="manifest.json"):
        why = _config_change(old.get("config"), config)
        if why:
            raise UsageError(f"{out} holds another mix ({why}): pass --overwrite to replace it, or choose another "
                             "--out")
    fs.makedirs(out)
    with naming(mpath):
        atomic_write_text(mpath, json.dumps({"kind": "mix", "complete": False, "config": config}))
    for sub, prefixes in (("data", ("part-", ".part-")), (WORK, ("counts-", ".counts-"))):
        for name in fs.listdir(fs.join(out, sub)):
            if name.startswith(prefixes):  # shards and counts, and the temp files of a killed run
                fs.remove(fs.join(out, sub, name))


def _config_change(old: dict | None, new: dict) -> str:
    """What differs between the mix a folder holds and this one, in words; "" when nothing does."""
    if not isinstance(old, dict):
        return "made by an earlier version of curate, which did not record its arguments"
    old, new = json.loads(json.dumps(old)), json.loads(json.dumps(new))
    if old == new:
        return ""
    if old.get("format") != new["format"]:
        return "made by another version of curate"
    flags = {"sources": "--source", "tokens": "--tokens", "max_epochs": "--max-epochs", "seed": "--seed",
             "chars_per_token": "--chars-per-token", "tokenizer_sha256": "--tokenizer",
             "calibration_vocab": "--calibration-vocab", "calibration_chars": "--calibration-chars"}
    for key, flag in flags.items():
        if old.get(key) != new[key]:
            return f"{flag} was {_show(old.get(key))}, now {_show(new[key])}"
    path, added, gone = input_change(old.get("inputs") or [], new["inputs"])
    if path:
        return f"input {path} was rewritten since (its size, modification time or ETag differ)"
    return f"its input files differ: {added} new, {gone} gone"


def _show(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, list) and len(v) == 3 for v in value):  # sources
        return " ".join(f"{n}={p}:{w:g}" for n, p, w in value)
    if isinstance(value, str) and len(value) == 64:  # a sha256
        return f"sha256 {value[:16]}…"
    return str(value)


def format_plan(manifest: dict[str, Any]) -> str:
    """The planned vs actual table printed by `curate mix`."""
    p = manifest["plan"]
    lines = [
        f"token measure: {manifest['token_measure']}; requested {p['requested_tokens']:,}, planned {p['planned_tokens']:,}",
        f"{'source':<12} {'weight':>7} {'available':>13} {'planned':>13} {'epochs':>7} {'actual':>13} {'diff':>7}",
    ]
    cpt = manifest.get("chars_per_token") or {}
    for name, s in p["sources"].items():
        act = manifest["actual"][name]["tokens"]
        diff = (act - s["target_tokens"]) / max(s["target_tokens"], 1)
        note = "  capped at --max-epochs" if s["limited_by_max_epochs"] else ""
        note += f"  ({cpt[name]:.3f} chars/token)" if name in cpt else ""
        lines.append(
            f"{name:<12} {s['weight']:>7.3f} {s['available_tokens']:>13,} {s['target_tokens']:>13,} "
            f"{s['epochs']:>7.2f} {act:>13,} {diff:>+7.2%}{note}"
        )
    if p["scale"] < 1:
        lines.append(
            f"note: a source would need more than --max-epochs {manifest['max_epochs']} passes; the total was "
            f"reduced to {p['scale']:.1%} of the request to keep the weights"
        )
    return "\n".join(lines)
