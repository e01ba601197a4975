"""Reading a run's own state back: the one home for it, so that a file that cannot be read is one line naming
the file and what to do, never a bare `JSONDecodeError` or "ZSTD decompression failed" (issue 29.17).

Every file of run state is written atomically (temporary name, then rename or one upload), so a torn file
means a disk fault, a copy gone wrong or a hand edit. What a rerun does with one depends on what the file is
(docs/pipelines.md, "Corrupt run state"):

| file | can it be recomputed? | a rerun |
|---|---|---|
| `_work/config.json` | no: it says what the run is | refused, one line: pass `--overwrite`, or a new `--output` |
| `stats/<task>.json` (a streaming task's record) | yes: rerun the task | the task's marker is removed, the task runs again |
| `stats/stage<K>-global.json` | yes: the global step resumes its phases | its marker is removed, the step runs again |
| `_done/*` markers | empty files: their content is never read | - |
| a dedup phase's marker (`_work/global<K>/_phases/…`) | yes: rerun the task | the marker is removed, the task runs again |
| a dedup intermediate (`_work/global<K>/…`: keys, groups, …) | yes: from the step's inputs | the step's work folder is removed, the step runs again, once |

`CorruptState` (a `UsageError`: one line, exit 2) is what a reader of state raises; a caller that can
recompute the file catches it and does.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from curate.core.errors import CorruptState, UsageError
from curate.io import fs

# pyarrow's words for a file that is not what it should be (it raises OSError for some of them)
_CORRUPT_WORDS = ("decompress", "deserializ", "corrupt", "magic bytes", "unexpected end", "invalid", "truncated",
                  "couldn't", "could not read", "parquet file size is 0", "out of bounds", "not a parquet",
                  "checksum", "page integrity")


# What to do about a damaged shard of a finished corpus that another command reads (mix, tokenize, report, inspect)
DAMAGED_SHARD = ("the shard is damaged: rerun the command that wrote it (with --overwrite), or leave it out of the "
                 "inputs")


def _reason(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def corrupt(path: str, e: BaseException, remedy: str) -> CorruptState:
    return CorruptState(f"{path} cannot be read ({_reason(e)}): {remedy}", path)


def parse_json(data: bytes | str, path: str, remedy: str) -> Any:
    """`json.loads(data)` of the state file `path`; a file that does not parse is `CorruptState`."""
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise corrupt(path, e, remedy) from None


def read_json(path: str, remedy: str) -> Any:
    """The JSON state file at `path`; one that does not parse is `CorruptState` (a missing one: FileNotFoundError)."""
    return parse_json(fs.read_bytes(path), path, remedy)


def is_corrupt_data(e: BaseException) -> bool:
    """Whether `e`, raised reading a file (Parquet, npy), says the bytes are bad, not that reading failed."""
    import pyarrow as pa

    if isinstance(e, (FileNotFoundError, PermissionError, IsADirectoryError, MemoryError, UsageError)):
        return False
    if isinstance(e, pa.ArrowException) and not isinstance(e, OSError):
        return True
    if isinstance(e, OSError):
        if e.errno is not None:  # a real I/O error (or a full disk): not the file's fault
            return False
        return any(w in str(e).lower() for w in _CORRUPT_WORDS)
    return isinstance(e, (ValueError, EOFError))  # numpy's "cannot reshape", "not a .npy file", …


@contextlib.contextmanager
def reading(path: str, remedy: str = "") -> Iterator[None]:
    """Around the read of an intermediate file: bad bytes become `CorruptState` naming `path` (the cause kept).
    Without `remedy`, the file's recomputation is its caller's (it catches `CorruptState`)."""
    try:
        yield
    except CorruptState:
        raise
    except Exception as e:
        if not is_corrupt_data(e):
            raise
        raise corrupt(path, e, remedy or "it is recomputed when the command is rerun") from e


def cause_under(e: BaseException, folder: str) -> CorruptState | None:
    """The `CorruptState` behind `e` (itself, or a failed task's cause) for a file under `folder`, if any."""
    causes = [e, *(getattr(t, "cause", None) for t in (getattr(e, "errors", None) or []))]
    prefix = folder.rstrip("/") + "/"
    for c in causes:
        if isinstance(c, CorruptState) and c.path.startswith(prefix):
            return c
    return None
