"""What every reader shares: the Reader interface, counted figures, text repair, unique ids and dates."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any, ClassVar

from curate.core.document import Document, make_id
from curate.core.errors import UsageError
from curate.core.stats import StepStats
from curate.core.validate import describe
from curate.io.splits import Split

_SURROGATE = re.compile("[\ud800-\udfff]")


class Reader:
    """Base reader. `read` yields documents and records skips in `stats` (reasons `read:<rule>`).

    Every record is either yielded or counted under exactly one reason; figures that are no drop
    (a charset the reader had to guess, text repaired for Arrow) go to `stats.extra` as `read:<figure>`.
    An error of the file itself (network, object store, permission) is raised, never counted.
    """

    name: ClassVar[str] = "read"

    def __init__(self, source: str = "web"):
        self.source = source

    def read(self, path: str, stats: StepStats, key: str | None = None) -> Iterator[Document]:
        """Documents of one file. `key` names the file in document ids (default: `path`); a run passes the
        file's path relative to its inputs' common directory, so the same files stored elsewhere (a local
        path, `file://`, `s3://`) give the same ids."""
        raise NotImplementedError

    def read_split(self, split: Split, stats: StepStats) -> Iterator[Document]:
        """Documents of one split, what a run calls for every task. A whole file is `read(url, stats, key)` (a
        custom reader's `read` without `key` gets none); a byte range or a list of records needs a reader that
        can start in the middle of a file (JSONL, WARC, Parquet override this), else it is a UsageError naming
        the reader, never a silent reading of the whole file in every task."""
        if not split.whole:
            what = f"{len(split.records)} record(s) of" if split.records else "a byte range of"
            raise UsageError(f"reader {type(self).__name__} cannot read {what} a file ({split.label}): run without "
                             "--tasks / --task-bytes, or use a reader that splits (Jsonl, Warc, FastWarc, Parquet)")
        if "key" in inspect.signature(self.read).parameters:
            return self.read(split.url, stats, key=split.key)
        return self.read(split.url, stats)

    def skip(self, stats: StepStats, rule: str, chars: int = 0) -> None:
        stats.docs_in += 1
        stats.drop(f"read:{rule}", chars)

    def __repr__(self) -> str:
        return describe(self)


def figure(stats: StepStats, name: str, n: int = 1) -> None:
    """Add to a reader figure that is not a drop (`read:charset_guessed`, …)."""
    key = f"read:{name}"
    stats.extra[key] = stats.extra.get(key, 0) + n


def note(stats: StepStats, path: str, e: BaseException | str) -> None:
    stats.error_sample = stats.error_sample or f"{path}: {e if isinstance(e, str) else f'{type(e).__name__}: {e}'}"


def repair_text(value: str) -> str | None:
    """`value` with lone surrogates (which Arrow cannot encode as UTF-8) as U+FFFD, or None if it had none."""
    try:
        value.encode("utf-8")
        return None
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", value)


def repair_deep(obj: Any) -> tuple[Any, bool]:
    if isinstance(obj, str):
        fixed = repair_text(obj)
        return (obj, False) if fixed is None else (fixed, True)
    if isinstance(obj, list):
        pairs = [repair_deep(v) for v in obj]
        return [v for v, _ in pairs], any(c for _, c in pairs)
    if isinstance(obj, dict):
        pairs = {repair_deep(k)[0]: repair_deep(v) for k, v in obj.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(c for _, c in pairs.values())
    return obj, False


def unique_id(source: str, own: Any, position: str) -> str:
    """An id unique in the run: the input's own id (if it has a plain one) + `#` + a digest of where the
    record lies, else the digest alone. The own id stays first, so ids still read and sort like the
    input's (`#` sorts below every character ids usually hold)."""
    digest = make_id(source, position)
    if own is None or isinstance(own, (dict, list, bool)):
        return digest
    return f"{own}#{digest[:12]}"


def parse_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
