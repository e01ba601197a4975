"""Planning a run's reading tasks: inputs (globs, paths, `Split`s, `cc://` queries) into a list of `Split`s,
large files cut into byte ranges where their framing allows it (`--tasks N`, `--task-bytes SIZE`).

Kept apart from `curate.io.splits` (the `Split` dataclass every reader and planner shares) because planning
hands `cc://` inputs to `curate.io.commoncrawl`, which itself makes `Split`s: one module holding both would
import in a circle.
"""

from __future__ import annotations

import os
import posixpath
import re
import sys

from curate.core.errors import UsageError
from curate.io import fs, kinds
from curate.io.splits import Split, row_group_start

WARC_PROBE = 4 << 20  # compressed bytes searched after a cut for the next gzip member (zstd frame) where a range begins


class Plan(list):
    """The splits of a run, in input order (a `list[Split]`), and the inputs that were to be cut but stay whole
    because their framing does not allow it (`whole`: (url, why) pairs), which the run reports."""

    def __init__(self, splits=(), whole=()):
        super().__init__(splits)
        self.whole: list[tuple[str, str]] = list(whole)


def input_keys(files: list[str]) -> list[str]:
    """Each input's path relative to the inputs' common directory: the file's part of its documents' ids.

    So ids are unique within a run (no two inputs share a relative path) and the same files give the same
    ids wherever they are stored: a plain path, `file://`, `memory://` or `s3://` copy of the same layout.
    """
    inner = [os.path.abspath(p) if not fs.is_url(p) else fs.without_protocol(p) for p in files]
    try:
        root = posixpath.dirname(inner[0]) if len(inner) == 1 else posixpath.commonpath(inner)
    except ValueError:  # local and remote inputs mixed: no common directory
        return inner
    if root in inner:  # commonpath of one repeated file
        root = posixpath.dirname(root)
    return [posixpath.relpath(p, root) for p in inner]


def plan_splits(inputs: str | Split | list, tasks: int | None = None, task_bytes: int | None = None) -> Plan:
    """The splits a run reads: globs and paths expanded (`fs.expand_inputs`, keys from `input_keys`), `Split`s
    as given, `cc://` inputs planned by `curate.io.commoncrawl.cc_splits`; then, with `tasks` or `task_bytes`,
    every file larger than the target (total bytes / `tasks`, or `task_bytes`) cut into byte ranges of about
    the target. A file whose framing allows no cut (one gzip member or zstd frame, a .bz2, records over 4 MiB apart) stays whole and
    is listed in `Plan.whole`, with a note on stderr: never silently."""
    if tasks is not None and (not isinstance(tasks, int) or tasks < 1):
        raise UsageError(f"--tasks must be an integer >= 1, got {tasks!r}")
    if task_bytes is not None and (not isinstance(task_bytes, int) or task_bytes < 1):
        raise UsageError(f"--task-bytes must be a size >= 1 byte, got {task_bytes!r}")
    if tasks is not None and task_bytes is not None:
        raise UsageError("pass --tasks or --task-bytes, not both")
    splits = _expand(inputs)
    if tasks is None and task_bytes is None:
        return Plan(splits)
    sizes = {s.url: fs.size(s.url) for s in splits if s.whole}
    target = task_bytes or max(1, -(-sum(sizes.values()) // tasks))
    plan = Plan()
    for s in splits:
        if not s.whole or sizes[s.url] <= target:
            plan.append(s)
            continue
        # the search reads a few MiB around each cut: a store's transient fault retries the whole search
        cuts, why = fs.retrying(_cuts, s.url, sizes[s.url], target)
        if why:
            plan.whole.append((s.url, why))
        if not cuts:
            plan.append(s)
            continue
        bounds = [0, *cuts, None]
        plan.extend(Split(s.url, s.key, a, b) for a, b in zip(bounds, bounds[1:], strict=False))
    if plan.whole:
        shown = "; ".join(f"{u}: {why}" for u, why in plan.whole[:3])
        more = f"; … ({len(plan.whole)} in all)" if len(plan.whole) > 3 else ""
        sys.stderr.write(f"note: {len(plan.whole)} input(s) larger than a task stay whole: {shown}{more}\n")
    return plan


def _expand(inputs: str | Split | list) -> list[Split]:
    """Inputs as whole-file splits (globs expanded, keys relative to the globbed files' common directory),
    `Split`s as given and `cc://` inputs as Common Crawl plans them; in the order given."""
    items = [inputs] if isinstance(inputs, (str, Split)) else list(inputs)
    globs = [i for i in items if isinstance(i, str) and not i.startswith("cc://")]
    bad = [i for i in items if not isinstance(i, (str, Split))]
    if bad:
        raise UsageError(f"an input must be a path, a glob, a URL or a Split, got {bad[0]!r}")
    files = fs.expand_inputs(globs) if globs else []
    keyed = dict(zip(files, input_keys(files), strict=True)) if files else {}
    out: list[Split] = []
    done_globs = False
    for item in items:
        if isinstance(item, Split):
            out.append(item)
        elif item.startswith("cc://"):
            out.extend(_cc_splits(item))
        elif not done_globs:  # the globbed files in their expanded order (each file once), where the first glob stood
            out.extend(Split(f, keyed[f]) for f in files)
            done_globs = True
    return out


def _cc_splits(url: str) -> list[Split]:
    try:
        from curate.io.commoncrawl import cc_splits
    except ImportError as e:
        raise UsageError(f"{url}: Common Crawl inputs need the module curate.io.commoncrawl, which cannot be "
                         f"imported ({e})") from None
    return cc_splits(url)


def _cuts(url: str, size: int, target: int) -> tuple[list[int], str]:
    """Where to cut a file of `size` bytes into ranges of about `target` bytes, and why it stays whole if it
    does (no cut)."""
    n = -(-size // target)
    even = [size * i // n for i in range(1, n)]
    kind = kinds.kind_of(url)  # the one answer the readers also get: content first, then the name
    if kind.format == "parquet":
        return _parquet_cuts(url, even)
    if kind.gzip_stream:
        return [], "its gzip members do not start WARC records (bgzip blocks, or pieces of one stream): read whole"
    if kind.format == "warc" and kind.compression == "gzip":
        cuts = _warc_member_cuts(url, even)
        return cuts, "" if cuts else "no gzip member starts a record near a cut: a single gzip stream, or members over 4 MiB"
    if kind.format == "warc" and not kind.compression:
        cuts = _warc_record_cuts(url, size, even)
        return cuts, "" if cuts else "no WARC record starts within 4 MiB after a cut"
    if kind.compression in ("gzip", "zstd"):
        cuts = _chain_cuts(url, kind, even)
        what = "gzip member" if kind.compression == "gzip" else "zstd frame"
        return cuts, "" if cuts else (f"one {what} (or {what}s over 4 MiB apart): a compressed file is cut only "
                                      f"where a {what} starts")
    if kind.compression:
        return [], f"a {kind.compression} stream is read whole: only gzip members and zstd frames are split"
    return even, ""  # JSONL and other line-framed text: the reader aligns each range to newlines


def _parquet_cuts(url: str, even: list[int]) -> tuple[list[int], str]:
    """Each even cut moved to the nearest row-group start (a split owns the row groups that start in its
    range), repeats dropped: ranges hold whole row groups, as near the target size as the groups allow."""
    import pyarrow.parquet as pq

    try:
        with fs.open(url, "rb") as f:
            meta = pq.ParquetFile(f).metadata
    except OSError:
        raise
    except Exception as e:  # not Parquet: the reader counts it, once
        return [], f"not readable as Parquet: {type(e).__name__}"
    starts = [row_group_start(meta.row_group(g)) for g in range(1, meta.num_row_groups)]
    if not starts:
        return [], "one row group: Parquet is split by row groups"
    cuts = sorted({min(starts, key=lambda s, c=c: (abs(s - c), s)) for c in even})
    return cuts, ""


def _warc_member_cuts(url: str, even: list[int]) -> list[int]:
    """Each even cut moved to the first gzip member at or after it that starts a WARC record (searched over
    `WARC_PROBE` bytes); cuts with no member in reach are dropped."""
    from curate.io.members import next_member

    cuts: list[int] = []
    with fs.open(url, "rb") as f:
        for c in even:
            if cuts and c <= cuts[-1]:
                continue
            at = next_member(f, c, limit=WARC_PROBE)
            if at is not None and (not cuts or at > cuts[-1]):
                cuts.append(at)
    return cuts


def _warc_record_cuts(url: str, size: int, even: list[int]) -> list[int]:
    """Each even cut moved to the first record start at or after it (`framing.next_record`, searched over
    `WARC_PROBE` bytes), where the reader's ranges of an uncompressed WARC begin; cuts with none dropped."""
    from curate.io.readers.framing import next_record

    cuts: list[int] = []
    with fs.open(url, "rb") as f:
        for c in even:
            at = next_record(f, c, size, limit=WARC_PROBE) if not cuts or c > cuts[-1] else None
            if at is not None and (not cuts or at > cuts[-1]):
                cuts.append(at)
    return cuts


def _chain_cuts(url: str, kind: kinds.Kind, even: list[int]) -> list[int]:
    """Each even cut moved to the first gzip member / zstd frame start at or after it (`curate.io.chain`,
    searched over `WARC_PROBE` bytes), where the JSONL reader's ranges begin; cuts with none in reach dropped."""
    from curate.io.chain import codec_for, next_start

    codec = codec_for(kind)
    cuts: list[int] = []
    with fs.open(url, "rb") as f:
        for c in even:
            if cuts and c <= cuts[-1]:
                continue
            at = next_start(f, c, codec, limit=WARC_PROBE)
            if at is not None and at > 0 and (not cuts or at > cuts[-1]):
                cuts.append(at)
    return cuts


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """`--task-bytes` as given: a number of bytes with an optional binary unit (`512M`, `2GiB`, `64KB`: K, M,
    G, T are powers of 1024); anything else is a UsageError in one line."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(text), re.IGNORECASE)
    if not m or (n := int(float(m.group(1)) * _UNITS[m.group(2).lower()])) < 1:
        raise UsageError(f"--task-bytes: {text!r} is not a size (bytes, or a number with K, M, G or T: 512M, 2G)")
    return n
