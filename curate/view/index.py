"""The per-shard index of `curate view`: every column of a shard but its wide ones, and each text's length and hash.

Text is most of a shard, and the length filter, the sort by length, the Run page's length bars and the comparison
of two runs need only each text's length or hash: without an index each such request decodes every text of the
run (about 10 s a million documents here). So the viewer writes, once per shard, a small Parquet file: the
shard's narrow columns (id, url, source, lang, scores, drop reason, step columns) plus `length`, `_hash` and
`_shard` (the shard's absolute path). It goes under a cache folder, never into the run (runs may be read-only or
on an object store), named by a hash of the shard's path, size and modification time and of the Polars version
that computed lengths and hashes. A shard rewritten in place (`--overwrite`) or a new shard of a run being
written has no index under its new name, so it is read from the shard itself until a background thread has
indexed it: a query never sees a stale index, only a slower path.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import sys
import threading

import polars as pl

WIDE = ("text", "metadata", "html")  # columns an index leaves out (the Document page reads them from the shard)
VERSION = 2  # of the index files' layout: a change makes every old file unused


def default_folder() -> str:
    """Where indexes go unless `--cache` says otherwise: the user's cache folder, as XDG says."""
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "peneira", "view")


def narrow_schema(schema: dict[str, pl.DataType]) -> dict[str, pl.DataType]:
    """The columns of a shard's index, from the shard's: all but WIDE, then the text's length and 64-bit hash
    (Polars' `hash`, stable within a Polars version, which names the index file), and the shard's path."""
    return {**{c: t for c, t in schema.items() if c not in WIDE}, "length": pl.UInt32, "_hash": pl.UInt64,
            "_shard": pl.String}


def text_columns(schema: dict[str, pl.DataType]) -> dict[str, pl.Expr]:
    """What an index keeps of the text: its length and hash (nulls for a shard without text)."""
    if "text" not in schema:
        return {"length": pl.lit(None, pl.UInt32), "_hash": pl.lit(None, pl.UInt64)}
    return {"length": pl.col("text").str.len_chars(), "_hash": pl.col("text").hash()}


def remove_orphans(folder: str) -> list[str]:
    """Remove the half-written index files (`NAME.PID.THREAD.tmp`) of servers that are gone (killed while
    indexing): a live server's are left alone, whoever it is. Returns the names removed."""
    gone = []
    for name in os.listdir(folder):
        parts = name.split(".")
        if len(parts) < 4 or parts[-1] != "tmp" or not parts[-3].isdigit():
            continue
        try:
            os.kill(int(parts[-3]), 0)
            continue  # its writer still runs
        except ProcessLookupError:
            pass
        except PermissionError:  # another user's live process
            continue
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(folder, name))
            gone.append(name)
    return gone


class ShardIndex:
    """The index files in one cache folder: which shard has a current one, and building those that do not.

    Only local shards are indexed (an object store's size and time come from a listing call per shard, and its
    reads are where the time goes anyway). Builds run one at a time on a daemon thread, so a request never waits
    for one; a build that fails (a damaged shard) is not retried until the shard changes."""

    def __init__(self, folder: str, background: bool = True):
        self.folder = folder
        self.background = background  # False: shards are indexed only by `build` (tests, scripts)
        os.makedirs(folder, exist_ok=True)
        remove_orphans(folder)
        self._todo: queue.Queue[str] = queue.Queue()
        self._queued: set[str] = set()
        self._failed: set[str] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def _file(self, shard: str) -> str | None:
        """The index file a shard has now (its path, size and mtime named), or None for a shard we cannot stat."""
        try:
            st = os.stat(shard)
        except OSError:
            return None
        stamp = f"{os.path.abspath(shard)}\0{st.st_size}\0{st.st_mtime_ns}\0{VERSION}\0{pl.__version__}"
        return os.path.join(self.folder, hashlib.sha256(stamp.encode()).hexdigest()[:32] + ".parquet")

    def current(self, shard: str) -> str | None:
        """The shard's index file when one exists for its current size and time; else None (and it is queued)."""
        path = self._file(shard)
        if path is None:
            return None
        if os.path.exists(path):
            return path
        self.want([shard])
        return None

    def want(self, shards: list[str]) -> None:
        """Queue shards for the builder thread (started on first use)."""
        if not self.background:
            return
        with self._lock:
            for s in shards:
                f = self._file(s)
                if f and f not in self._queued and f not in self._failed and not os.path.exists(f):
                    self._queued.add(f)
                    self._todo.put(s)
            if self._thread is None and not self._todo.empty():
                self._thread = threading.Thread(target=self._work, name="curate-view-index", daemon=True)
                self._thread.start()

    def pending(self) -> int:
        """Shards queued or being built."""
        with self._lock:
            return len(self._queued)

    def _work(self) -> None:
        while True:
            shard = self._todo.get()
            target = self._file(shard)
            try:
                if target and not os.path.exists(target):
                    self.build(shard, target)
            except Exception as e:  # noqa: BLE001 (a damaged or vanished shard: queries say so themselves)
                with self._lock:
                    self._failed.add(target)
                print(f"curate view: note: not indexed {shard}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
            finally:
                with self._lock:
                    self._queued.discard(target)

    def build(self, shard: str, target: str | None = None) -> str | None:
        """Write the index of one shard (atomically: a temporary name, then a rename); None when the shard changed
        while it was read (its next stamp gets its own index)."""
        target = target or self._file(shard)
        if target is None:
            return None
        schema = pl.read_parquet_schema(shard)
        cols = [c for c in schema if c not in WIDE]
        lf = pl.scan_parquet(shard).select(*cols, **text_columns(schema),
                                           _shard=pl.lit(os.path.abspath(shard), pl.String))
        tmp = f"{target}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            lf.sink_parquet(tmp, compression="zstd", row_group_size=100_000)
            if self._file(shard) != target:
                return None
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        return target
