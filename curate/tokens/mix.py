"""Mixing sources by weight to a token budget: plan, deterministic sampling, text shards plus a manifest.

Weights are fractions of the final tokens. Tokens are estimated as characters / `chars_per_token`
unless a tokenizer is given, in which case every document is counted exactly (EOS included, as
`curate tokenize` writes it). See docs/tokens.md for the user-facing description.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.core.document import CORE_COLUMNS, TEXT_SCHEMA
from curate.core.errors import UsageError
from curate.io import fs
from curate.io.corpus import read_batches, resolve_inputs
from curate.io.writers import atomic_write_text
from curate.run.executors.base import Executor
from curate.run.executors.local import LocalExecutor

MIX_SCHEMA = TEXT_SCHEMA.append(pa.field("mix_epoch", pa.int16(), nullable=False))
_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}


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


def _load(path: str, source: str) -> pa.Table:
    """One input file as a table in the text contract (extension columns dropped: sources differ in them)."""
    if path.endswith(".parquet"):
        names = pq.ParquetFile(path).schema_arrow.names
        if all(c in names for c in CORE_COLUMNS):
            t = pq.read_table(path, columns=list(CORE_COLUMNS)).cast(TEXT_SCHEMA)
            return t.filter(pc.is_valid(t["text"]))
    ids, texts = [], []
    for b in read_batches(path, source=source):
        ids += b.ids
        texts += b.texts
    n = len(ids)
    cols = {"id": pa.array(ids, pa.string()), "text": pa.array(texts, pa.string())}
    return pa.table(
        {
            f.name: cols.get(f.name, pa.nulls(n, f.type)) if f.name != "source" else pa.array([source] * n)
            for f in TEXT_SCHEMA
        },
        schema=TEXT_SCHEMA,
    )


def _token_counts(texts: pa.ChunkedArray, chars_per_token: float, tokenizer: str | None) -> np.ndarray:
    if tokenizer is None:
        return pc.utf8_length(texts).to_numpy(zero_copy_only=False).astype(np.float64) / chars_per_token
    from curate.tokens.tokenize import load_tokenizer

    tok = load_tokenizer(tokenizer)
    out = []
    values = texts.to_pylist()
    for i in range(0, len(values), 1000):
        out += [len(e.ids) + 1 for e in tok.encode_batch_fast(values[i : i + 1000], add_special_tokens=False)]
    return np.array(out, dtype=np.float64)


def _measure(item: tuple[str, str, float, str | None]) -> dict[str, Any]:
    """Phase 1, one input file: tokens per document and the file's sha256."""
    from curate.tokens.tokenize import sha256_file

    path, source, cpt, tokenizer = item
    t = _load(path, source)
    tokens = _token_counts(t["text"], cpt, tokenizer)
    chars = pc.sum(pc.utf8_length(t["text"])).as_py() or 0
    return {"docs": t.num_rows, "tokens": tokens, "chars": chars, "sha256": sha256_file(path)}


def _write(item: tuple[str, str, np.ndarray, np.ndarray, str, int]) -> dict[str, Any]:
    """Phase 2, one input file: its chosen documents, repeated as planned, shuffled, as one shard."""
    path, source, repeats, tokens, dest, seed = item
    t = _load(path, source)
    rows = np.repeat(np.arange(t.num_rows), repeats)
    epoch = np.concatenate([np.arange(r) for r in repeats]).astype(np.int16) if len(rows) else np.zeros(0, np.int16)
    order = np.random.default_rng([seed, zlib.crc32(os.path.basename(dest).encode())]).permutation(len(rows))
    rows, epoch = rows[order], epoch[order]
    t = t.take(pa.array(rows))
    ids = pc.if_else(
        pc.greater(pa.array(epoch), 0),
        pc.binary_join_element_wise(t["id"], pa.array([f"e{e}" for e in epoch], pa.string()), "#"),
        t["id"],
    )
    t = t.set_column(t.schema.get_field_index("id"), "id", ids)
    t = t.set_column(t.schema.get_field_index("source"), "source", pa.array([source] * len(rows), pa.string()))
    t = t.append_column("mix_epoch", pa.array(epoch, pa.int16())).cast(MIX_SCHEMA)
    with fs.atomic_open(dest, "wb") as f:
        pq.write_table(t, f, compression="zstd", row_group_size=10_000)
    chars = pc.sum(pc.utf8_length(t["text"])).as_py() or 0
    return {"docs": len(rows), "chars": chars, "tokens": float(np.sum(tokens[rows])), "file": dest}


# ---------------------------------------------------------------------------------------------- planning


def _select(tokens: np.ndarray, target: float, rng: np.random.Generator) -> np.ndarray:
    """Copies per document so that their tokens come as close to `target` as documents allow.

    Whole passes first; for the remainder, documents in a seeded random order are taken while they
    fit, then the rest of that order fills the gap with documents that still fit. Taking only what
    fits keeps the result within a small fraction of the target even when documents are large.
    """
    total = float(tokens.sum())
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


def mix(
    sources: list[Source] | dict[str, tuple[str, float]],
    tokens: int,
    out: str | os.PathLike,
    max_epochs: float = 4.0,
    seed: int = 0,
    chars_per_token: float = 4.0,
    tokenizer: str | None = None,
    workers: int = 1,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """Mix sources to `tokens` tokens; writes OUT/data/*.parquet and OUT/manifest.json, returns the manifest."""
    t0 = time.time()
    if isinstance(sources, dict):
        sources = [Source(n, str(p), float(w)) for n, (p, w) in sources.items()]
    if not sources:
        raise UsageError("give at least one --source NAME=PATH:WEIGHT")
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise UsageError(f"source names repeat: {names}")
    if max_epochs <= 0 or chars_per_token <= 0:
        raise UsageError("--max-epochs and --chars-per-token must be positive")
    files = {s.name: resolve_inputs(s.path) for s in sources}
    seen: dict[str, str] = {}
    for name, paths in files.items():
        for f in paths:
            other = seen.setdefault(os.path.realpath(f), name)
            if other != name:
                raise UsageError(f"{f} is in both sources {other!r} and {name!r}")
    out = os.fspath(out)
    data_dir = os.path.join(out, "data")
    _prepare_output(out)
    executor = executor or LocalExecutor(workers)

    items = [(f, s.name, chars_per_token, tokenizer) for s in sources for f in files[s.name]]
    measured = executor.map(_measure, items, desc="mix: measure", labels=[i[0] for i in items])
    by_source: dict[str, list[int]] = {s.name: [] for s in sources}
    for i, item in enumerate(items):
        by_source[item[1]].append(i)
    available = {s: sum(float(measured[i]["tokens"].sum()) for i in idx) for s, idx in by_source.items()}
    empty = [s for s, n in available.items() if n <= 0]
    if empty:
        raise UsageError(f"source(s) {empty} have no text: check their paths ({[files[s] for s in empty]})")
    the_plan = plan(available, {s.name: s.weight for s in sources}, tokens, max_epochs)

    jobs = []
    for s in sources:
        idx = by_source[s.name]
        counts = np.concatenate([measured[i]["tokens"] for i in idx])
        rng = np.random.default_rng([seed, zlib.crc32(s.name.encode())])
        repeats = _select(counts, the_plan["sources"][s.name]["target_tokens"], rng)
        start = 0
        for i in idx:
            n = measured[i]["docs"]
            rep, tok = repeats[start : start + n], measured[i]["tokens"]
            start += n
            if rep.any():
                dest = os.path.join(data_dir, f"part-{i:05d}-000.parquet")
                jobs.append((items[i][0], s.name, rep, tok, dest, seed))
    os.makedirs(data_dir, exist_ok=True)
    written = executor.map(_write, jobs, desc="mix: write", labels=[j[0] for j in jobs])

    actual = {s.name: {"docs": 0, "chars": 0, "tokens": 0.0} for s in sources}
    for job, res in zip(jobs, written, strict=True):
        a = actual[job[1]]
        a["docs"] += res["docs"]
        a["chars"] += res["chars"]
        a["tokens"] += res["tokens"]
    for a in actual.values():
        a["tokens"] = round(a["tokens"])
    manifest = {
        "kind": "mix",
        "token_measure": f"tokenizer {tokenizer}" if tokenizer else f"characters / {chars_per_token}",
        "seed": seed,
        "max_epochs": max_epochs,
        "plan": the_plan,
        "actual": actual,
        "inputs": [
            {
                "source": item[1],
                "path": item[0],
                "sha256": m["sha256"],
                "docs": m["docs"],
                "chars": m["chars"],
                "tokens": round(float(m["tokens"].sum())),
            }
            for item, m in zip(items, measured, strict=True)
        ],
        "outputs": sorted(os.path.relpath(r["file"], out) for r in written),
        "seconds": round(time.time() - t0, 3),
    }
    atomic_write_text(os.path.join(out, "manifest.json"), json.dumps(manifest, indent=1))
    return manifest


def _prepare_output(out: str) -> None:
    """Make `out` ready for a mix: an empty directory, or an earlier mix (finished or interrupted) whose shards
    are replaced; anything else is refused.

    The old manifest is first replaced by an unfinished one, then the old shards are removed: a mix interrupted
    at any point is still recognised as one by its rerun, and no manifest ever lists shards that are gone.
    """
    mpath = os.path.join(out, "manifest.json")
    if os.path.isdir(out) and os.listdir(out):
        try:
            with open(mpath) as f:
                is_mix = json.load(f).get("kind") == "mix"
        except (OSError, ValueError):
            is_mix = False
        if not is_mix:
            raise UsageError(f"{out} exists and is not an earlier `curate mix` output: choose an empty --out")
    os.makedirs(out, exist_ok=True)
    atomic_write_text(mpath, json.dumps({"kind": "mix", "complete": False}))
    data_dir = os.path.join(out, "data")
    for name in os.listdir(data_dir) if os.path.isdir(data_dir) else []:
        if name.startswith(("part-", ".part-")) and ".parquet" in name:  # shards, and temp files of a killed run
            os.remove(os.path.join(data_dir, name))


def format_plan(manifest: dict[str, Any]) -> str:
    """The planned vs actual table printed by `curate mix`."""
    p = manifest["plan"]
    lines = [
        f"token measure: {manifest['token_measure']}; requested {p['requested_tokens']:,}, planned {p['planned_tokens']:,}",
        f"{'source':<12} {'weight':>7} {'available':>13} {'planned':>13} {'epochs':>7} {'actual':>13} {'diff':>7}",
    ]
    for name, s in p["sources"].items():
        act = manifest["actual"][name]["tokens"]
        diff = (act - s["target_tokens"]) / max(s["target_tokens"], 1)
        note = "  capped at --max-epochs" if s["limited_by_max_epochs"] else ""
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
