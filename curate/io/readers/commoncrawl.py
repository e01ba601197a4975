"""readers.CommonCrawl: Common Crawl's WARC, WET and WAT files, whole or record by record, by retried range reads.

A split of whole files (a `cc://SNAPSHOT/warc?...` path list) is read front to back through `cc.RangeFile`, whose
chunks are ranged GETs retried under `retry.Policy`: a throttle or a cut connection mid-file costs a retry of
one chunk, not the file. A split of records (an index query) fetches each `(offset, length)` by its own
ranged GET, `concurrency` in flight (the HTTP pool lets at most `per_host` reach one host at a time), and
parses them in offset order with the WARC readers' own member-by-member parsing, so a record gives the same
document and the same id as when its file is read whole.

A record or file still failing after the policy's tries stops the task (`retry.Exhausted`), or with
`allow_missing=True` (`curate run --allow-missing`) is counted as `read:missing`, the first one named in the
error sample and every one on stderr. Bad input is counted per record: an index range past the file's end
(`read:bad_range`), a record over `max_record_bytes` (`read:record_too_large`, not fetched), a gzip member
that holds no WARC record (the WARC readers' own reasons).
"""

from __future__ import annotations

import collections
import contextlib
import io
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from curate.core.document import Document
from curate.core.stats import StepStats
from curate.io import commoncrawl as cc
from curate.io.members import CHUNK, GZIP_MAGIC, Tracked
from curate.io.readers.base import Reader, figure, note
from curate.io.readers.warc import FastWarc, Warc, _FileState
from curate.io.retry import Exhausted, Policy
from curate.io.splits import Split

RANGE_CHUNK = 8 << 20  # bytes a whole-file read asks for at once


class _Ranged:
    """What CommonCrawl's parsers change in the WARC readers: files opened as `cc.RangeFile`s, WAT `metadata`
    records as documents (their JSON as text), and Common Crawl provenance in each document's metadata."""

    fetcher: cc.Fetcher
    wat: bool = False

    def _open(self, path: str) -> Any:
        return cc.RangeFile(path, self.fetcher, RANGE_CHUNK)

    def _empty(self, path: str, stats: StepStats) -> bool:
        if self.fetcher.size(path) == 0:
            self.skip(stats, "empty_file")  # type: ignore[attr-defined]
            note(stats, path, "empty file")
            return True
        return False

    def _build(self, header, kind, length, read, block, stats) -> Document | None:  # noqa: ANN001 (Warc._build's)
        if self.wat and kind == "metadata" and header("Content-Length") is not None:
            if length > self.max_record_bytes:  # type: ignore[attr-defined]
                self.skip(stats, "too_large")  # type: ignore[attr-defined]
                return None
            raw = read() if block is None else block
            if len(raw) < length:
                self.skip(stats, "truncated_record")  # type: ignore[attr-defined]
                return None
            stats.docs_in += 1
            return self._doc(header, raw.decode("utf-8", errors="replace"))  # type: ignore[attr-defined]
        return super()._build(header, kind, length, read, block, stats)  # type: ignore[misc]

    def _identify(self, doc: Document, key: str, position: str, stats: StepStats) -> None:
        super()._identify(doc, key, position, stats)  # type: ignore[misc]
        start, _, within = position.partition("+")
        doc.metadata["cc_file"] = key
        if within == "0":  # the record begins its own gzip member, as in every Common Crawl file
            doc.metadata["cc_offset"] = int(start)


class _CCWarc(_Ranged, Warc):
    pass


class _CCFastWarc(_Ranged, FastWarc):
    pass


class CommonCrawl(Reader):
    """Common Crawl's files: `CommonCrawl(snapshot="CC-MAIN-2024-10", kind="warc", sample=0.01)` selects them
    (`inputs` is the `cc://` URL to run on, `splits()` its plan), or plain `CommonCrawl()` reads whatever
    `--input cc://...` selects. Documents carry `cc_snapshot`, `cc_file`, `cc_offset` and, for records read by
    index, `cc_length` in their metadata.

    `concurrency`: record fetches in flight per task; `per_host`: connections per host per task; `tries`,
    `backoff`, `backoff_cap`: the retry policy (`retry.Policy`, defaults from `$PENEIRA_CC_*`);
    `max_record_bytes`: an index record longer than this is counted, not fetched (memory per task stays below
    `concurrency * max_record_bytes`); `fast`: parse with FastWARC.
    """

    def __init__(self, snapshot: str | None = None, kind: str = "warc", segments: str | int | None = None,
                 files: str | int | None = None, sample: float | None = None, index: dict | None = None,
                 base: str | None = None, source: str = "web", fast: bool = False, max_html_bytes: int = 5_000_000,
                 max_record_bytes: int = 16 << 20, concurrency: int = 16, per_host: int = 8,
                 tries: int | None = None, backoff: float | None = None, backoff_cap: float | None = None,
                 timeout: float = 60.0, allow_missing: bool = False):
        super().__init__(source)
        if kind not in cc.KINDS:
            raise ValueError(f"kind is one of {', '.join(cc.KINDS)}, got {kind!r}")
        if concurrency < 1 or per_host < 1 or max_record_bytes < 1:
            raise ValueError("concurrency, per_host and max_record_bytes must be >= 1")
        self.snapshot, self.kind, self.segments, self.files, self.sample = snapshot, kind, segments, files, sample
        self.index, self.base, self.fast = index, base, fast
        self.max_html_bytes, self.max_record_bytes = max_html_bytes, max_record_bytes
        # how to read, not what: private, so neither the run's fingerprint nor its description holds them, and a
        # run stopped by a record that never came resumes with --allow-missing or other retry settings
        self._concurrency, self._per_host, self._allow_missing = concurrency, per_host, allow_missing
        self._tries, self._backoff, self._backoff_cap, self._timeout = tries, backoff, backoff_cap, timeout
        if snapshot is not None:
            cc.parse(self.inputs)  # a wrong snapshot or option is an error here, not in the first task

    @property
    def allow_missing(self) -> bool:
        """Count a record or file that still fails after the retries as `read:missing` instead of stopping."""
        return self._allow_missing

    @allow_missing.setter
    def allow_missing(self, value: bool) -> None:
        self._allow_missing = bool(value)

    @property
    def inputs(self) -> str:
        """The `cc://` URL of this reader's selection (what `--input` would say)."""
        if self.snapshot is None:
            raise ValueError("CommonCrawl() without a snapshot reads what --input cc://... selects")
        params: dict[str, Any] = dict(self.index or {}) if self.index is not None else {
            "segments": self.segments, "sample": self.sample, "files": self.files}
        params["base"] = self.base
        query = "&".join(f"{k}={v}" for k, v in params.items() if v is not None)
        return f"cc://{self.snapshot}/{'index' if self.index is not None else self.kind}" + (f"?{query}" if query else "")

    def splits(self) -> list[Split]:
        return cc.cc_splits(self.inputs, self._fetcher())

    def _policy(self) -> Policy:
        return Policy.from_env(tries=self._tries, base=self._backoff, throttle_base=self._backoff, cap=self._backoff_cap)

    def _fetcher(self) -> cc.Fetcher:
        return cc.Fetcher(self._policy(), per_host=self._per_host, timeout=self._timeout)

    def _parser(self, fetcher: cc.Fetcher, url: str) -> Warc:
        cls = _CCFastWarc if self.fast else _CCWarc
        parser = cls(self.source, self.max_html_bytes)
        parser.fetcher, parser.wat = fetcher, url.endswith(".wat.gz") or ".wat." in url
        parser.max_record_bytes = self.max_record_bytes
        return parser

    # ------------------------------------------------------------ reading

    def read(self, path: str, stats: StepStats, key: str | None = None) -> Iterator[Document]:
        """A whole file (a path-list split), by retried chunked range reads."""
        return self.read_split(Split(url=path, key=key or path), stats)

    def read_split(self, split: Split, stats: StepStats) -> Iterator[Document]:
        fetcher = self._fetcher()
        docs = self._records(split, stats, fetcher) if split.records else self._whole(split, stats, fetcher)
        counted = dict.fromkeys(FETCH_FIGURES, 0)
        for name in FETCH_FIGURES:
            figure(stats, name, 0)  # every figure in the stats, a zero included
        try:
            with contextlib.closing(docs):  # a task that stops early (--limit) stops the fetches too
                snapshot = cc.snapshot_of(split.url)
                for doc in docs:
                    doc.metadata["cc_snapshot"] = snapshot
                    _count_fetches(stats, fetcher, counted)  # live: the progress bar shows bytes/s and retries
                    yield doc
        finally:
            _count_fetches(stats, fetcher, counted)

    def _whole(self, split: Split, stats: StepStats, fetcher: cc.Fetcher) -> Iterator[Document]:
        """A whole file, or a byte range of it."""
        parser = self._parser(fetcher, split.url)
        try:  # a byte range (`--tasks`, `--task-bytes`): the WARC readers' own range reading, over `cc.RangeFile`
            yield from parser.read(split.url, stats, split.key) if split.whole else parser.read_split(split, stats)
        except Exhausted as e:
            self._missing(stats, f"{split.url} (the rest of the file)", e)

    def _missing(self, stats: StepStats, name: str, e: Exhausted) -> None:
        if not self._allow_missing:
            raise Exhausted(f"{name}: {e}; rerun to resume, or pass --allow-missing to count it and go on") from e
        self.skip(stats, "missing")
        note(stats, name, str(e))
        sys.stderr.write(f"curate: read:missing {name}: {e}\n")

    def _records(self, split: Split, stats: StepStats, fetcher: cc.Fetcher) -> Iterator[Document]:
        """The records of an index split: fetched `concurrency` at a time, parsed in offset order."""
        parser = self._parser(fetcher, split.url)
        state = _FileState(stats, Tracked(io.BytesIO()), split.key)
        pool = ThreadPoolExecutor(self._concurrency, thread_name_prefix="cc-fetch")
        window: collections.deque[tuple[int, int, Future | None]] = collections.deque()
        todo = iter(split.records)
        try:
            while True:
                while len(window) < self._concurrency and (rec := next(todo, None)) is not None:
                    off, length = rec
                    ok = 0 < length <= self.max_record_bytes and off >= 0
                    window.append((off, length, pool.submit(fetcher.get, split.url, off, off + length) if ok else None))
                if not window:
                    return
                off, length, fut = window.popleft()
                yield from self._record(parser, split, stats, state, off, length, fut)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _record(self, parser: Warc, split: Split, stats: StepStats, state: _FileState, off: int, length: int,
                fut: Future | None) -> Iterator[Document]:
        name = f"{split.url}@{off}+{length}"
        if fut is None:
            self.skip(stats, "record_too_large" if length > self.max_record_bytes else "bad_range")
            note(stats, name, "a record the index gives as "
                 + (f"longer than max_record_bytes={self.max_record_bytes}" if length > 0 else "empty"))
            return
        try:
            data = fut.result()
        except cc.RangeError as e:
            self.skip(stats, "bad_range")
            note(stats, name, e)
            return
        except Exhausted as e:
            self._missing(stats, name, e)
            return
        f = io.BufferedReader(Tracked(io.BytesIO(data)), CHUNK)
        for doc in (parser._members(f, off, split.url, stats, state) if data.startswith(GZIP_MAGIC)
                    else parser._member(f, off, split.url, stats, state, plain=True)):
            doc.metadata["cc_length"] = length
            yield doc


FETCH_FIGURES = ("bytes_fetched", "requests", "retries", "throttles")  # `read:` figures of a fetching reader


def _count_fetches(stats: StepStats, fetcher: cc.Fetcher, counted: dict[str, int]) -> None:
    """Add to the step's `read:` figures what the fetcher did since the last call (`counted` is what was added)."""
    for name in FETCH_FIGURES:
        n = fetcher.counts[name] - counted[name]
        if n:
            figure(stats, name, n)
            counted[name] += n
