"""Reading a finished corpus (text shards, or JSONL) in columnar batches, for `mix`, `tokenizer` and `tokenize`.

These commands only need (id, text, source) and run over whole corpora, so they read Parquet column
batches directly instead of building a `Document` per row. Every path may be a local path or an
fsspec URL (`s3://`, `file://`, `memory://`, …): all access goes through `curate.io.fs`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.io import fs, kinds
from curate.io.state import DAMAGED_SHARD, reading

TEXT_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".jsonl.zst")


def _shards_in(directory: str) -> list[str]:
    names = fs.listdir(directory)
    return sorted(fs.join(directory, n) for n in names if n.endswith(TEXT_SUFFIXES) and not n.startswith("."))


def is_dir(spec: str) -> bool:
    """Whether a local path or URL names a directory (on object stores: a prefix with objects under it)."""
    return fs.isdir(spec)  # not fsspec's isdir: it answers False to any fault


def unfinished(spec: str) -> str | None:
    """Why the folder `spec` is an unfinished output of ours, or None: it holds `data/` and a command's state
    (`_done/`, `_work/`) but no `manifest.json`, which `curate run` and `curate mix` write last. A folder of
    shards with no state is the user's own and is read as it is."""
    names = set(fs.listdir(spec))
    if "data" in names and "manifest.json" not in names and names & {"_done", "_work"}:
        return "no manifest.json beside data/: a command that wrote it was killed or is still running"
    return None


def resolve_inputs(spec: str | os.PathLike, allow_partial: bool = False) -> list[str]:
    """Files of a corpus: a run's output directory (its `data/`), a directory of shards, a file, or a glob.

    An unfinished output (`unfinished`) is refused: mixing or tokenizing what a killed run left would give a
    corpus with some inputs missing and no word about it. `allow_partial` reads what is there; the caller
    records it (`partial_inputs` in its manifest)."""
    spec = os.fspath(spec)
    if is_dir(spec):
        why = unfinished(spec)
        if why and not allow_partial:
            raise UsageError(f"{spec} is not a finished output ({why}): rerun that command to finish it, or pass "
                             "--allow-partial to read the shards it has")
        data = fs.join(spec, "data")
        files = _shards_in(data if is_dir(data) else spec)
    elif fs.isfile(spec):
        files = [spec]
    else:
        import glob as _glob

        files = fs.glob(spec)
        if not files and not _glob.has_magic(spec):
            raise UsageError(f"{spec}: no such file or directory")
    if not files:
        raise UsageError(f"{spec}: no text shards ({', '.join(TEXT_SUFFIXES)}) found")
    return files


@dataclass
class Batch:
    ids: list[str]
    texts: list[str]
    sources: list[str]


def read_batches(path: str, batch_size: int = 1024, source: str | None = None) -> Iterator[Batch]:
    """(id, text, source) batches of one file. `source` overrides the file's own source names.

    JSONL documents get `source` (default "text"). Rows without text and JSONL lines that do not
    parse are skipped: this reads finished corpora, where the curation run already counted them.
    """
    if path.endswith(".parquet"):
        with reading(path, DAMAGED_SHARD), fs.parquet_file(path) as pf:  # closed when the generator ends
            names = pf.schema_arrow.names
            if "text" not in names:
                raise UsageError(f"{path}: no 'text' column (columns: {names})")
            cols = [c for c in ("id", "text", "source") if c in names]
            start = 0
            for rb in pf.iter_batches(batch_size=batch_size, columns=cols):
                n = rb.num_rows
                texts = rb.column("text").to_pylist()
                ids = rb.column("id").to_pylist() if "id" in cols else [f"{path}:{start + i}" for i in range(n)]
                srcs = [source] * n if source or "source" not in cols else rb.column("source").to_pylist()
                keep = [i for i, t in enumerate(texts) if isinstance(t, str)]
                if len(keep) < n:
                    ids, texts, srcs = [ids[i] for i in keep], [texts[i] for i in keep], [srcs[i] for i in keep]
                start += n
                yield Batch([str(i) for i in ids], texts, [s or "unknown" for s in srcs])
        return
    from curate.io.readers import Jsonl

    stats = StepStats("read")
    reader = Jsonl(source=source or "text", unique_ids=False)  # a finished corpus: its ids as written
    batch = Batch([], [], [])
    for doc in reader.read(path, stats):  # a JSONL "source" field is provenance, not a mixing source name
        batch.ids.append(doc.id)
        batch.texts.append(doc.text)
        batch.sources.append(doc.source)
        if len(batch.ids) >= batch_size:
            yield batch
            batch = Batch([], [], [])
    if batch.ids:
        yield batch


def estimated_chars(path: str) -> int:
    """A cheap size estimate (no decoding): Parquet text column's uncompressed bytes, or the file size."""
    if path.endswith(".parquet"):
        with fs.parquet_file(path) as pf:
            md = pf.metadata
        col = md.schema.to_arrow_schema().get_field_index("text")
        return sum(md.row_group(r).column(col).total_uncompressed_size for r in range(md.num_row_groups))
    size = fs.size(path)
    return size * 4 if kinds.name_kind(path).compression else size  # an estimate: the name will do


def sha256_file(path: str | os.PathLike) -> str:
    """sha256 of a local file or URL, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with fs.open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
