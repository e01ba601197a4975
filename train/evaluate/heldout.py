"""Bits per byte on held-out text: the loss measure that does not depend on the tokenizer.

A model's loss per token rewards a tokenizer with long tokens; per UTF-8 byte of the text it does not, so two runs
with different tokenizers (or different curation, hence different vocabularies) compare on the same held-out text:
bits per byte = sum of the tokens' negative log-likelihoods (nats) / (ln 2 * UTF-8 bytes of the text).

Each document is scored as the trainer sees text: after the end-of-document token, in windows of `seq_len` + 1
tokens that share one token, so every token of the text is predicted exactly once (the end-of-document token that
closes a document is not scored: it is no byte of the text). Documents stream through in chunks, so memory holds a
few batches however large the set.

A held-out set is `NAME=PATH` (or just PATH), PATH being a file, a glob or a URL read through `curate.io`:
JSONL (`.jsonl`, `.jsonl.gz`, `.jsonl.zst`), Parquet (text shards or any file with a `text` column), a `curate run`
output directory, or plain text (any other file, `.gz` or not: one document per file).
"""

from __future__ import annotations

import gzip
import io
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from curate.core.stats import StepStats
from curate.io import fs, readers
from curate.models.checkpoint import Loaded
from curate.models.scoring import score_spans

DIR_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".jsonl.zst", ".txt", ".txt.gz")  # read from a directory
CHUNK_WINDOWS = 256  # windows scored per chunk: bounds memory, whatever the size of a set


@dataclass
class Totals:
    nll: float = 0.0  # nats
    bytes: int = 0
    tokens: int = 0
    docs: int = 0

    def as_dict(self) -> dict:
        bpb = self.nll / (math.log(2) * self.bytes) if self.bytes else None
        return {"bits_per_byte": bpb, "bytes": self.bytes, "tokens": self.tokens, "docs": self.docs,
                "nll_nats": self.nll, "bytes_per_token": self.bytes / self.tokens if self.tokens else None}


@dataclass
class HeldoutSet:
    name: str
    path: str
    max_docs: int | None = None
    max_bytes: int | None = None
    skipped: dict[str, int] = field(default_factory=dict)


def parse_set(spec: str, max_docs: int | None = None, max_bytes: int | None = None) -> HeldoutSet:
    """`NAME=PATH` or `PATH` (named after the file, without its extensions)."""
    name, eq, path = spec.partition("=")
    if not eq or "/" in name or ":" in name:
        path = spec
        name = os.path.basename(spec.rstrip("/")).split(".")[0] or "heldout"
    return HeldoutSet(name, path, max_docs, max_bytes)


def _files(path: str) -> list[str]:
    if fs.isfile(path):
        return [path]
    if fs.exists(fs.join(path, "data")) or fs.listdir(path):
        root = fs.join(path, "data") if fs.exists(fs.join(path, "data")) else path
        return [fs.join(root, n) for n in sorted(fs.listdir(root)) if n.endswith(DIR_SUFFIXES) and n[0] not in "._"]
    return fs.expand_inputs(path)


def _plain_text(path: str) -> str:
    with fs.open(path, "rb") as raw:
        data = gzip.GzipFile(fileobj=raw).read() if path.endswith(".gz") else raw.read()
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace").read()


def _file_documents(path: str, set_name: str, stats: StepStats) -> Iterator[tuple[str, str]]:
    """(source, text) of one file. A JSONL record's own `source` field names its source, else the set does."""
    base = path.split("?")[0]
    if base.endswith((".jsonl", ".jsonl.gz", ".jsonl.zst", ".parquet")):
        reader = readers.Parquet(source=set_name) if base.endswith(".parquet") else readers.Jsonl(source=set_name)
        for doc in reader.read(path, stats):
            src = doc.metadata.get("source") if isinstance(doc.metadata.get("source"), str) else doc.source
            yield src or set_name, doc.text
    else:
        yield set_name, _plain_text(path)


def documents(hs: HeldoutSet) -> Iterator[tuple[str, str]]:
    """The set's (source, text) pairs in file order, up to max_docs documents and max_bytes bytes. The document
    that crosses max_bytes is cut at its last line break inside the budget (at a character when it has none)."""
    stats = StepStats("read")
    stream = (d for f in _files(hs.path) for d in _file_documents(f, hs.name, stats))
    docs = used = 0
    for source, text in stream:
        if hs.max_docs is not None and docs >= hs.max_docs:
            break
        if hs.max_bytes is not None:
            left = hs.max_bytes - used
            if left <= 0:
                break
            raw = text.encode("utf-8")
            if len(raw) > left:
                cut = raw[:left].decode("utf-8", errors="ignore")
                text = cut[: cut.rfind("\n")] if "\n" in cut else cut
        if not text:
            hs.skipped["empty"] = hs.skipped.get("empty", 0) + 1
            continue
        docs += 1
        used += len(text.encode("utf-8"))
        yield source, text
    for reason, n in stats.dropped.items():  # records a reader could not use (bad JSON, no text), counted
        hs.skipped[reason] = hs.skipped.get(reason, 0) + n


def bits_per_byte(run: Loaded, hs: HeldoutSet, batch_size: int = 32,
                  progress: Callable[[int], object] | None = None) -> dict:
    """Bits per byte of one held-out set, overall and per source; `progress(n)` is told the bytes scored."""
    T = run.model.cfg.seq_len
    total, per_source = Totals(), {}
    pending: list[tuple[list[int], int]] = []
    owners: list[str] = []
    unreported = 0  # bytes of the documents whose windows are pending

    def flush() -> None:
        nonlocal unreported
        for src, span in zip(owners, score_spans(run.model, pending, run.eos_id, batch_size), strict=True):
            for t in (total, per_source[src]):
                t.nll -= span.logprob
                t.tokens += span.tokens
        pending.clear()
        owners.clear()
        if progress is not None:
            progress(unreported)
        unreported = 0

    for source, text in documents(hs):
        ids = [run.eos_id] + run.tokenizer.encode(text, add_special_tokens=False).ids
        n_bytes = len(text.encode("utf-8"))
        for t in (total, per_source.setdefault(source, Totals())):
            t.bytes += n_bytes
            t.docs += 1
        unreported += n_bytes
        for s in range(0, len(ids) - 1, T):
            window = ids[s : s + T + 1]
            pending.append((window, len(window) - 1))
            owners.append(source)
        if len(pending) >= CHUNK_WINDOWS:
            flush()
    if pending:
        flush()
    if not total.docs:
        raise ValueError(f"held-out set {hs.name!r} ({hs.path}) has no text")
    return {"set": hs.name, "path": hs.path, **total.as_dict(), "skipped": dict(hs.skipped),
            "sources": {s: t.as_dict() for s, t in sorted(per_source.items())}}
