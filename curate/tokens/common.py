"""What `curate mix`, `curate tokenize` and `curate tokenizer train` share (issue 29): batches cut by bytes, temporary
names unique per writer, a full disk named by the file being written, inputs refused inside the output.

Batches by bytes (mechanism 2): what a task holds at once follows the text it holds, not a document count.
`tokenizers` holds ~150-300 bytes per token while it encodes (its `Encoding`s, their alignments, the Python id
lists; docs/benchmarks.md, "Tokenization memory"), so 1,000 documents of 30 KB made a 1.2 GB task and 1,000 of
300 KB a 10.6 GB one. `text_batches` cuts at `BATCH_CHARS` characters (a larger document is a batch of its own),
and `encode_ids` gives the encoder at most that much at once: a longer document is encoded in pieces cut where the
byte-level pre-tokenizer always cuts, so its ids are unchanged (`pieces`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
from collections.abc import Iterator

from curate.core.errors import UsageError, disk_full
from curate.io import fs
from curate.io.corpus import Batch, read_batches

BATCH_CHARS = 1 << 18  # characters of text encoded (or held as Python strings) at once by one task
MAX_BATCH_DOCS = 1000  # and at most this many documents: small ones gain nothing from larger batches
JSONL_READ_DOCS = 4  # JSONL documents read at a time before they are gathered into a batch by size


def rows_per_read(path: str, batch_chars: int, max_rows: int) -> int:
    """Rows to read at a time from `path` so that a read holds about `batch_chars` of text: from a Parquet file's
    metadata (the text column's decoded bytes per row, in its largest row group by that measure), else a few
    JSONL lines (their size is only known once read)."""
    if not path.endswith(".parquet"):
        return min(max_rows, JSONL_READ_DOCS)
    with fs.parquet_file(path) as pf:
        md = pf.metadata
    names = md.schema.to_arrow_schema().names
    if "text" not in names:
        return max_rows  # read_batches says what is wrong with the file
    col = names.index("text")
    per_row = max((md.row_group(g).column(col).total_uncompressed_size / max(md.row_group(g).num_rows, 1)
                   for g in range(md.num_row_groups)), default=1.0)
    return int(max(1, min(max_rows, batch_chars // max(per_row, 1.0))))


def text_batches(path: str, batch_chars: int = BATCH_CHARS, max_docs: int = MAX_BATCH_DOCS,
                 source: str | None = None) -> Iterator[Batch]:
    """(id, text, source) batches of one file (`curate.io.corpus.read_batches`), each of at most `max_docs`
    documents and `batch_chars` characters, or one document when a single one is larger. Same documents, same
    order as `read_batches`."""
    rows = rows_per_read(path, batch_chars, max_docs)
    out, size = Batch([], [], []), 0
    for b in read_batches(path, batch_size=rows, source=source):
        for i, t, s in zip(b.ids, b.texts, b.sources, strict=True):
            if out.ids and (size + len(t) > batch_chars or len(out.ids) >= max_docs):
                yield out
                out, size = Batch([], [], []), 0
            out.ids.append(i)
            out.texts.append(t)
            out.sources.append(s)
            size += len(t)
    if out.ids:
        yield out


def unique_tmp(final_name: str) -> str:
    """A temporary name beside `final_name` that no other writer uses, even on another machine writing to the same
    shared disk (process id and 9 random digits): two writers of one file never share a temporary file, whose
    mixed bytes one of them would publish (issue 29.3). `fs.TEMP_NAME` matches it, so a killed writer's leftover is
    removed by `fs.remove_temp_files` at the end of the next run."""
    return f".{final_name}.tmp.{os.getpid()}{secrets.randbelow(10**9):09d}"


@contextlib.contextmanager
def naming(path: str) -> Iterator[None]:
    """A full disk while writing `path` is an OSError naming `path` (the CLI turns it into one line: issue 29.11);
    pyarrow's and a plain `write`'s own errors name no file."""
    try:
        yield
    except OSError as e:
        full = disk_full(e)
        if full is None or full.filename:
            raise
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path) from e


def input_change(was: list, now: list) -> tuple[str | None, int, int]:
    """How two input fingerprint lists (`[path, size, mtime, etag]` rows, as recorded by mix and tokenize) differ:
    (the path of a file rewritten in place, or None; files added; files gone). Called only when they differ."""
    if [r[0] for r in was] == [r[0] for r in now]:
        return next(b[0] for a, b in zip(was, now, strict=True) if a != b), 0, 0
    added = len({r[0] for r in now} - {r[0] for r in was})
    return None, added, len({r[0] for r in was} - {r[0] for r in now})


def check_outside(files: list[str], out: str, option: str = "--out") -> None:
    """Refuse inputs inside the output folder: resuming would count them as the command's own files, and
    `--overwrite` would delete them before they are read (local paths; URLs by their text)."""
    def key(p: str) -> str:
        local = fs.local_path(p)
        return os.path.realpath(local) if local is not None else p.rstrip("/")

    root = key(out) + os.sep if fs.local_path(out) is not None else key(out) + "/"
    inside = [f for f in files if key(f).startswith(root)]
    if inside:
        raise UsageError(f"input {inside[0]} is inside {option} {out}: write the output elsewhere")


# ---------------------------------------------------------------------------------------------- encoding

PIECE_CHARS = 1 << 16  # a longer document is encoded in pieces of about this many characters, when that is exact
# A cut that every byte-level BPE of Peneira's kind (`tokenizers`' ByteLevel pre-tokenizer with its GPT-2 regex, no
# normalizer, no prefix space) also makes: right after a non-space character, before a space or a newline. None of
# the regex's alternatives that match a non-space character matches a space after it, so a pre-token always ends
# there, and the whitespace run that follows is matched from the same position, with the same text ahead (a piece
# never ends in whitespace), whether the document is encoded whole or in pieces. Python's `\S` is stricter than the
# regex's (Python counts more characters as spaces), which only means fewer cuts.
_CUT = re.compile(r"(?<=\S)[ \n]")


def splits_exactly(tok) -> bool:
    """Whether `tok` encodes a document cut at `_CUT` points into the same ids as the whole document: a
    ByteLevel pre-tokenizer with its regex and no prefix space, no normalizer, and no added token that is
    matched in text (special tokens are not: `encode_special_tokens`)."""
    import json

    spec = json.loads(tok.to_str())
    pre = spec.get("pre_tokenizer") or {}
    return (spec.get("normalizer") is None and pre.get("type") == "ByteLevel" and not pre.get("add_prefix_space")
            and pre.get("use_regex", True) and all(a.get("special") for a in spec.get("added_tokens") or [])
            and bool(getattr(tok, "encode_special_tokens", False)))


def pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """`text` cut at `_CUT` points into pieces of `size // 2` to `size` characters where it can be (a stretch
    without such a point stays whole: it is one pre-token anyway, or a run of them without spaces)."""
    if len(text) <= size:
        return [text]
    out, start = [], 0
    while len(text) - start > size:
        m = (_CUT.search(text, start + size // 2, start + size + 1) or _CUT.search(text, start + 1, start + size // 2)
             or _CUT.search(text, start + size + 1))
        if m is None:
            break
        out.append(text[start : m.start()])
        start = m.start()
    out.append(text[start:])
    return out


def encode_ids(tok, texts: list[str], dtype, batch_chars: int = BATCH_CHARS, exact_pieces: bool = False) -> list:
    """The token ids of each text (no EOS), as numpy arrays of `dtype`. The encoder is given at most `batch_chars`
    characters at a time: `tokenizers` holds ~150-300 bytes per token while it encodes (its `Encoding`s and their
    alignments, measured in docs/benchmarks.md), so a 2 MB document encoded whole took ~350 MB. With
    `exact_pieces` (`splits_exactly(tok)`) a long document is encoded in `pieces`, whose ids are the document's."""
    import numpy as np

    parts: list[list] = [[] for _ in texts]
    group: list[tuple[int, str]] = []
    size = 0

    def flush() -> None:
        encs = tok.encode_batch_fast([p for _, p in group], add_special_tokens=False)
        for (d, _), e in zip(group, encs, strict=True):
            parts[d].append(np.array(e.ids, dtype=dtype))
        group.clear()

    for d, text in enumerate(texts):
        for p in (pieces(text, min(PIECE_CHARS, batch_chars)) if exact_pieces else [text]):
            if group and size + len(p) > batch_chars:
                flush()
                size = 0
            group.append((d, p))
            size += len(p)
    if group:
        flush()
    return [p[0] if len(p) == 1 else np.concatenate(p) if p else np.zeros(0, dtype) for p in parts]
