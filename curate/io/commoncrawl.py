"""Common Crawl as an input: snapshots, path lists and index queries planned into `Split`s, and range reads.

`cc://SNAPSHOT/KIND?...` names a selection of one crawl (`cc_splits` plans it; `--input` takes it):

- `cc://CC-MAIN-2024-10/warc?sample=0.01&segments=2&files=10` (KIND `warc`, `wet` or `wat`): the crawl's
  `KIND.paths.gz`, then the first `segments` segments (a count, or segment names separated by commas), a
  `sample` fraction of the files (chosen by a hash of each path, so the same files on every run and
  machine: a rerun plans the same tasks), then the first `files` files (a count, or `A:B`). One whole-file
  `Split` per file; its `key` is the path inside the snapshot (`segments/.../warc/....warc.gz`).
- `cc://CC-MAIN-2024-10/index?domain=example.com&mime=text/html&status=200&lang=por&url=*/blog/*`:
  the crawl's columnar index (Parquet, listed in `cc-index-table.paths.gz`) read with pyarrow.dataset and
  the filter pushed down (row groups whose statistics exclude it are not fetched); the matching records'
  `(offset, length)`, de-duplicated, sorted and grouped by WARC file, at most `per_task` records a `Split`.
  Values separated by commas are alternatives; `lang` matches any of a record's detected languages; `url`
  is a glob (`*` any run of characters) over the whole URL; `limit` keeps the first N records.

Where the bytes are: `base` in the URL (`?base=http://127.0.0.1:8000/`), else `$PENEIRA_CC_BASE`, else
https://data.commoncrawl.org/ (`s3://commoncrawl/` reads the bucket, anonymously unless
`$PENEIRA_CC_S3_ANON=0`). `collinfo.json` comes from `$PENEIRA_CC_INDEX` (https://index.commoncrawl.org/).

`Fetcher` does every request: ranged GETs on a bounded pool per host, each retried under `retry.Policy`,
with bytes, requests, retries and throttles counted for the task's stats.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import threading
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from curate.core.errors import UsageError
from curate.io.retry import (
    RETRY_STATUSES,
    THROTTLE_STATUSES,
    Changed,
    Policy,
    Refused,
    Transient,
    is_throttle,
    parse_retry_after,
    transient_errors,
)
from curate.io.splits import Split

DEFAULT_BASE = "https://data.commoncrawl.org/"
DEFAULT_INDEX = "https://index.commoncrawl.org/"
KINDS = ("warc", "wet", "wat")
INDEX_COLUMNS = ("warc_filename", "warc_record_offset", "warc_record_length")
PER_TASK = 2000  # records a Split of an index query holds: tasks of a few minutes at most
MAX_RECORDS = int(os.environ.get("PENEIRA_CC_MAX_RECORDS", 20_000_000))  # an index query's plan, held by the driver
_SNAPSHOT = re.compile(r"^CC-MAIN-\d{4}-\d{2}$")
_IN_URL = re.compile(r"crawl-data/(CC-MAIN-\d{4}-\d{2})/")


def base_url(base: str | None = None) -> str:
    """Where Common Crawl's files are: `base`, else `$PENEIRA_CC_BASE`, else data.commoncrawl.org; ends in `/`."""
    b = base or os.environ.get("PENEIRA_CC_BASE") or DEFAULT_BASE
    return b if b.endswith("/") else b + "/"


def index_url(base: str | None = None) -> str:
    b = base or os.environ.get("PENEIRA_CC_INDEX") or DEFAULT_INDEX
    return b if b.endswith("/") else b + "/"


def snapshot_of(url: str) -> str | None:
    """The crawl a Common Crawl file belongs to (`CC-MAIN-2024-10`), from its path."""
    m = _IN_URL.search(url)
    return m.group(1) if m else None


# ---------------------------------------------------------------- requests


class RangeError(ValueError):
    """A range the file does not hold (an index entry that overruns the file): bad input, not a fault."""


_CONTENT_RANGE = re.compile(r"\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*")


def check_reply(url: str, status: int, headers: Any, start: int | None, end: int | None) -> int | None:
    """The number of body bytes to read for `[start, end)` (None: all of it), once the reply's status,
    Content-Range and Content-Length say it holds exactly those bytes (the end clipped to the file's size).

    The one check every ranged HTTP read makes (issue 42.2): a 206 for another range (a misbehaving proxy or
    CDN) was parsed as the bytes asked for. A reply for other bytes is a `Transient` (retried; once the tries
    are spent, the read fails loudly); a 200 for a range that does not start the file is an OSError at once
    (the server serves no ranges)."""
    length = headers.get("Content-Length")
    if start is None:
        return None
    if status == 200:
        if start != 0 or (end is not None and length is not None and int(length) != end):
            raise Refused(f"{url}: the server answered a range request with the whole file (HTTP 200): "
                          "it does not serve ranges")
        return end
    m = _CONTENT_RANGE.fullmatch(headers.get("Content-Range") or "")
    if not m:
        raise Transient(f"{url}: a 206 reply for bytes {start}-{end} without a Content-Range")
    a, b, total = int(m.group(1)), int(m.group(2)) + 1, m.group(3)
    last = end if end is not None else int(total) if total.isdigit() else b
    if total.isdigit():
        last = min(last, int(total))
    if a != start or b != last:
        raise Transient(f"{url}: asked for bytes {start}-{last - 1}, the reply holds bytes {a}-{b - 1}")
    if length is not None and int(length) != b - a:
        raise Transient(f"{url}: bytes {a}-{b - 1} sent with Content-Length {length}")
    return b - a


@dataclass
class Fetcher:
    """Ranged GETs over HTTP(S) (urllib3, a blocking pool of `per_host` connections per host, so at most that many
    requests reach a host from one task however many threads ask) or S3 (s3fs), each under `policy`.

    `counts`: `bytes_fetched`, `requests`, `retries`, `throttles` — figures for the task's stats. Thread-safe."""

    policy: Policy
    per_host: int = 8
    timeout: float = 60.0

    def __post_init__(self):
        self.counts: Counter = Counter()
        self._lock, self._size_lock = threading.Lock(), threading.Lock()
        self._pool: Any = None
        self._sizes: dict[str, int] = {}
        self._versions: dict[str, tuple[str, str]] = {}  # url -> (ETag, Last-Modified) of its first reply

    def _count(self, **figures: int) -> None:
        with self._lock:
            self.counts.update(figures)

    def _on_retry(self, e: BaseException, wait: float) -> None:
        self._count(retries=1, throttles=int(getattr(e, "throttle", False) or _s3_throttle(e)))

    def get(self, url: str, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes `[start, end)` of `url` (the whole file without a range), retried under the policy;
        raises `retry.Exhausted` once its tries are spent, `RangeError` for a range past the file's end,
        FileNotFoundError for a missing file."""
        if url.startswith("s3://"):
            return self.policy.call(lambda: self._s3_get(url, start, end), _s3_transient, self._on_retry)
        return self.policy.call(lambda: self._http_get(url, start, end), _http_transient, self._on_retry)

    def size(self, url: str) -> int:
        """The file's size, asked once per fetcher (threads asking together wait for the one request)."""
        with self._size_lock:
            if url not in self._sizes:
                fn = self._s3_size if url.startswith("s3://") else self._http_size
                check = _s3_transient if url.startswith("s3://") else _http_transient
                self._sizes[url] = self.policy.call(lambda: fn(url), check, self._on_retry)
            return self._sizes[url]

    # -- HTTP

    def _http(self) -> Any:
        if self._pool is None:
            import urllib3

            timeout = urllib3.Timeout(connect=min(10.0, self.timeout), read=self.timeout)
            self._pool = urllib3.PoolManager(num_pools=16, maxsize=self.per_host, block=True, timeout=timeout,
                                             retries=False)
        return self._pool

    def _http_get(self, url: str, start: int | None, end: int | None) -> bytes:
        """The body is read only once the reply is checked to be the range asked for, of the version first seen
        (`check_reply`): a server that answers a range with the whole file (200) is an error, not a 1 GB read
        per record; a reply for another range, or one that runs past the range, is retried, never parsed."""
        headers = {} if start is None else {"Range": f"bytes={start}-{'' if end is None else end - 1}"}
        r = self._request("GET", url, headers, preload=False)
        try:
            if r.status == 416:
                raise RangeError(f"{url}: bytes {start}-{end} are past the end of the file")
            if r.status not in (200, 206):
                _check_status(url, r, self._body(url, r, 200))
            self._same_version(url, r.headers)
            wanted = check_reply(url, r.status, r.headers, start, end)
            body = self._body(url, r, None if wanted is None else wanted + 1)  # a byte more: a long body shows
        finally:
            r.close()
            r.release_conn()  # back to the pool (a closed connection is reopened there), or the blocking pool shrinks
        self._count(requests=1, bytes_fetched=len(body))
        if wanted is not None and len(body) > wanted:
            raise Transient(f"{url}: long body at {start}: more than the {wanted} bytes asked for")
        if wanted is not None and end is not None and len(body) < end - start:
            total = _content_range_total(r.headers.get("Content-Range"))
            if total is not None and end > total:
                raise RangeError(f"{url}: bytes {start}-{end} overrun the file ({total} bytes)")
            raise Transient(f"{url}: short body at {start}: {len(body)} of {end - start} bytes")
        return body

    def _same_version(self, url: str, headers: Any) -> None:
        """The reply's validators (ETag, Last-Modified) against those of the first reply for `url` (its HEAD,
        when the planner or the range reader asked its size): another version is `Changed`, raised at once."""
        seen = (headers.get("ETag") or "", headers.get("Last-Modified") or "")
        if seen == ("", ""):
            return
        with self._lock:
            first = self._versions.setdefault(url, seen)
        if first != seen:
            raise Changed(f"{url} changed while this run read it (ETag, Last-Modified {first} then {seen}): "
                          "rerun once the file is stable")

    @staticmethod
    def _body(url: str, r: Any, limit: int | None) -> bytes:
        """At most `limit` bytes of the body (all without one); a body cut mid-way is a `Transient`."""
        import urllib3

        try:
            return r.read() if limit is None else r.read(limit)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise Transient(f"{url}: {type(e).__name__}: {e}") from e

    def _request(self, method: str, url: str, headers: dict, preload: bool = True) -> Any:
        import urllib3

        try:
            return self._http().request(method, url, headers=headers, preload_content=preload, redirect=True)
        except (urllib3.exceptions.HTTPError, OSError) as e:  # resets, timeouts, cut bodies (IncompleteRead)
            raise Transient(f"{url}: {type(e).__name__}: {e}") from e

    def _http_size(self, url: str) -> int:
        r = self._request("HEAD", url, {})
        self._count(requests=1)
        _check_status(url, r)
        self._same_version(url, r.headers)
        return int(r.headers["Content-Length"])

    # -- S3

    def _s3(self) -> Any:
        """s3fs (instances are cached by fsspec), anonymous unless `$PENEIRA_CC_S3_ANON=0`; fsspec's `s3` config
        (an endpoint) applies."""
        import fsspec

        anon = os.environ.get("PENEIRA_CC_S3_ANON", "1") != "0"
        # botocore's own retries off (its legacy mode waits up to ~20 s a try, uncounted): `policy` is the one
        # that retries, counts and honours the budget (s3fs still retries SlowDown a few times, ~2 s in all)
        return fsspec.filesystem("s3", anon=anon, use_listings_cache=False, config_kwargs={"retries": {"max_attempts": 1}})

    def _s3_get(self, url: str, start: int | None, end: int | None) -> bytes:
        s3, inner = self._s3(), url[len("s3://"):]
        self._count(requests=1)
        if start is not None and end is not None and end > self.size(url):
            raise RangeError(f"{url}: bytes {start}-{end} overrun the file ({self.size(url)} bytes)")
        body = s3.cat_file(inner, start=start, end=end)
        self._count(bytes_fetched=len(body))
        if start is not None and end is not None and len(body) < end - start:
            raise Transient(f"{url}: short body at {start}: {len(body)} of {end - start} bytes")
        return body

    def _s3_size(self, url: str) -> int:
        self._count(requests=1)
        return int(self._s3().info(url[len("s3://"):])["size"])


class RangeFile(io.RawIOBase):
    """A remote file read (front to back, or where it seeks) by ranged GETs of at least `chunk` bytes, each
    retried under the fetcher's policy: a fault costs one range, never the file. For the WARC readers and for
    pyarrow reading the index (where a fault is raised, never taken for a missing file)."""

    def __init__(self, url: str, fetcher: Fetcher, chunk: int = 8 << 20):
        self.url, self.fetcher, self.chunk, self.pos = url, fetcher, chunk, 0
        self.size = fetcher.size(url)
        self.buf, self.buf_start = b"", 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.pos = offset if whence == io.SEEK_SET else self.pos + offset if whence == io.SEEK_CUR else self.size + offset
        return self.pos

    def readinto(self, b: Any) -> int:
        if self.pos >= self.size:
            return 0
        if not self.buf_start <= self.pos < self.buf_start + len(self.buf):
            end = min(self.size, self.pos + max(self.chunk, len(b)))
            self.buf, self.buf_start = self.fetcher.get(self.url, self.pos, end), self.pos
        data = self.buf[self.pos - self.buf_start : self.pos - self.buf_start + len(b)]
        b[: len(data)] = data
        self.pos += len(data)
        return len(data)


def open_http(url: str, chunk: int = 1 << 20) -> io.BufferedReader:
    """An http(s) file for reading, by ranged GETs each checked (`check_reply`, the first reply's validators)
    and retried under `Policy.from_env()`: what `curate.io.fs.open` gives for every http(s) input, so a run,
    `mix` and `tokenize` read URLs through the one checked path (fsspec's HTTP file takes any 206 as the
    range asked for)."""
    return io.BufferedReader(RangeFile(url, Fetcher(Policy.from_env()), chunk), chunk)


def _check_status(url: str, r: Any, body: bytes | None = None) -> None:
    if r.status in (200, 206):
        return
    if r.status == 404:
        raise FileNotFoundError(f"{url}: 404 Not Found")
    body = r.data if body is None else body
    text = body[:200].decode("utf-8", "replace") if body else ""
    if r.status in RETRY_STATUSES:
        throttle = r.status in THROTTLE_STATUSES or "SlowDown" in text
        raise Transient(f"{url}: HTTP {r.status} {text[:80]}".rstrip(), r.status,
                        parse_retry_after(r.headers.get("Retry-After")), throttle)
    raise OSError(f"{url}: HTTP {r.status} {text[:80]}".rstrip())


def _content_range_total(value: str | None) -> int | None:
    if not value or "/" not in value:
        return None
    total = value.rsplit("/", 1)[1].strip()
    return int(total) if total.isdigit() else None


def _http_transient(e: BaseException) -> bool:
    return isinstance(e, Transient)


def _s3_throttle(e: BaseException) -> bool:
    return is_throttle(e)


def _s3_transient(e: BaseException) -> bool:
    """What s3fs / botocore raise for a fault that may pass (as `fs.retrying` classifies them)."""
    if isinstance(e, (FileNotFoundError, PermissionError, RangeError)):
        return False
    return isinstance(e, (Transient, *transient_errors()))


# ---------------------------------------------------------------- snapshots and path lists


def snapshots(index: str | None = None, fetcher: Fetcher | None = None) -> list[dict]:
    """The crawls, newest first, as `collinfo.json` lists them (`id`, `name`, `from`, `to`, ...)."""
    f = fetcher or Fetcher(Policy.from_env())
    return json.loads(f.get(index_url(index) + "collinfo.json"))


def path_list(snapshot: str, kind: str, base: str | None = None, fetcher: Fetcher | None = None) -> list[str]:
    """The paths (from the bucket's root) a crawl's `KIND.paths.gz` lists: `warc`, `wet`, `wat` or
    `cc-index-table`."""
    check_snapshot(snapshot)
    f = fetcher or Fetcher(Policy.from_env())
    try:
        raw = f.get(f"{base_url(base)}crawl-data/{snapshot}/{kind}.paths.gz")
    except FileNotFoundError:
        raise UsageError(f"{snapshot} has no {kind}.paths.gz under {base_url(base)}: check the snapshot "
                         "(`curate cc list`)") from None
    return [line for line in gzip.decompress(raw).decode("utf-8").splitlines() if line.strip()]


def check_snapshot(snapshot: str) -> None:
    if not _SNAPSHOT.match(snapshot):
        raise UsageError(f"{snapshot!r} is not a Common Crawl snapshot name (like CC-MAIN-2024-10; `curate cc list`)")


def segment_of(path: str) -> str:
    """`1707947473347.0` from `crawl-data/CC-MAIN-2024-10/segments/1707947473347.0/warc/...`."""
    parts = path.split("/")
    return parts[parts.index("segments") + 1] if "segments" in parts else ""


def in_sample(path: str, fraction: float) -> bool:
    """A stable choice of about `fraction` of the paths: the same on every run and machine."""
    h = int.from_bytes(hashlib.blake2b(path.encode(), digest_size=8).digest(), "big")
    return h < fraction * 2**64


def select(paths: list[str], segments: str | None = None, sample: float | None = None,
           files: str | None = None) -> list[str]:
    """`paths` narrowed: to some segments (a count of the first ones, or names), a hashed sample, then files
    (a count of the first ones, or `A:B`)."""
    if segments:
        order = list(dict.fromkeys(segment_of(p) for p in paths))
        chosen = set(order[: int(segments)]) if segments.isdigit() else set(segments.split(","))
        unknown = chosen - set(order)
        if unknown:
            raise UsageError(f"no such segment(s) in the path list: {', '.join(sorted(unknown))}")
        paths = [p for p in paths if segment_of(p) in chosen]
    if sample is not None:
        if not 0 < sample <= 1:
            raise UsageError(f"sample must be in (0, 1], got {sample}")
        paths = [p for p in paths if in_sample(p, sample)]
    if files:
        a, sep, b = files.partition(":")
        try:
            lo, hi = (int(a or 0), int(b) if b else None) if sep else (0, int(a))
        except ValueError:
            raise UsageError(f"files= takes a count or A:B, got {files!r}") from None
        paths = paths[lo:hi]
    return paths


def key_of(path: str, snapshot: str) -> str:
    """A file's name in document ids: its path inside the snapshot, the same over HTTPS and S3."""
    return path.removeprefix(f"crawl-data/{snapshot}/")


# ---------------------------------------------------------------- cc:// URLs


@dataclass(frozen=True)
class Query:
    snapshot: str
    kind: str  # warc, wet, wat, or index
    params: dict[str, str]

    @property
    def base(self) -> str:
        return base_url(self.params.get("base"))


_PARAMS = {
    "warc": {"base", "segments", "sample", "files"},
    "index": {"base", "domain", "host", "mime", "status", "lang", "url", "subset", "limit", "per_task"},
}


def parse(url: str) -> Query:
    """A `cc://` URL, checked: a wrong snapshot, kind or parameter is one line naming it."""
    u = urllib.parse.urlsplit(url)
    if u.scheme != "cc":
        raise UsageError(f"{url!r} is not a cc:// URL")
    snapshot, kind = u.netloc, u.path.strip("/") or "warc"
    check_snapshot(snapshot)
    if kind not in (*KINDS, "index"):
        raise UsageError(f"{url}: the kind is one of {', '.join(KINDS)} or index, got {kind!r}")
    params = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
    allowed = _PARAMS["index" if kind == "index" else "warc"]
    if unknown := sorted(set(params) - allowed):
        raise UsageError(f"{url}: unknown parameter(s) {', '.join(unknown)} (known: {', '.join(sorted(allowed))})")
    return Query(snapshot, kind, params)


def cc_splits(url: str, fetcher: Fetcher | None = None) -> list[Split]:
    """The splits a `cc://` URL selects: whole files (a path list) or records by range (an index query)."""
    q = parse(url)
    fetcher = fetcher or Fetcher(Policy.from_env())
    if q.kind == "index":
        return index_splits(q, fetcher)
    try:
        sample = float(q.params["sample"]) if "sample" in q.params else None
    except ValueError:
        raise UsageError(f"{url}: sample= takes a fraction, got {q.params['sample']!r}") from None
    paths = select(path_list(q.snapshot, q.kind, q.params.get("base"), fetcher), q.params.get("segments"), sample,
                   q.params.get("files"))
    if not paths:
        raise UsageError(f"{url} selects no files")
    return [Split(url=q.base + p, key=key_of(p, q.snapshot)) for p in paths]


# ---------------------------------------------------------------- index queries


def index_filter(params: dict[str, str]) -> Any:
    """The pyarrow expression for an index query's parameters (None: every record)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    def alts(name: str) -> list[str]:
        return [v.strip() for v in params[name].split(",") if v.strip()]

    parts = []
    if "domain" in params:
        parts.append(ds.field("url_host_registered_domain").isin(alts("domain")))
    if "host" in params:
        parts.append(ds.field("url_host_name").isin(alts("host")))
    if "mime" in params:
        parts.append(ds.field("content_mime_detected").isin(alts("mime")))
    if "status" in params:
        try:
            parts.append(ds.field("fetch_status").isin([int(s) for s in alts("status")]))
        except ValueError:
            raise UsageError(f"status= takes HTTP status codes, got {params['status']!r}") from None
    if "lang" in params:
        langs = [pc.match_substring(ds.field("content_languages"), lang) for lang in alts("lang")]
        parts.append(_any(langs))
    if "url" in params:
        globs = [pc.match_substring_regex(ds.field("url"), _glob_regex(g)) for g in alts("url")]
        parts.append(_any(globs))
    out = None
    for p in parts:
        out = p if out is None else out & p
    return out


def _any(exprs: list[Any]) -> Any:
    out = exprs[0]
    for e in exprs[1:]:
        out = out | e
    return out


def _glob_regex(pattern: str) -> str:
    return "^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$"


def index_files(q: Query, fetcher: Fetcher) -> list[str]:
    """The Parquet files of the crawl's columnar index for the query's subset (`warc` by default)."""
    subset = q.params.get("subset", "warc")
    paths = path_list(q.snapshot, "cc-index-table", q.params.get("base"), fetcher)
    return [q.base + p for p in paths if f"/subset={subset}/" in p]


def index_batches(q: Query, fetcher: Fetcher) -> Iterator[Any]:
    """The (warc_filename, offset, length) rows of the index that match, batch by batch. Only the three columns
    are read, and only row groups the filter's statistics do not exclude (pyarrow.dataset, over fragments made
    from `RangeFile`s: every read retried under the policy, a fault never taken for a missing file as
    pyarrow's fsspec wrapper would)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    files = index_files(q, fetcher)
    if not files:
        raise UsageError(f"cc://{q.snapshot}/index: the index lists no Parquet files for subset "
                         f"{q.params.get('subset', 'warc')!r}")
    fmt = ds.ParquetFileFormat()
    fragments = [fmt.make_fragment(pa.PythonFile(RangeFile(f, fetcher, 1 << 20), mode="r")) for f in files]
    dataset = ds.FileSystemDataset(fragments, fragments[0].physical_schema, fmt)
    scan = dataset.scanner(columns=list(INDEX_COLUMNS), filter=index_filter(q.params), use_threads=False)
    return scan.to_batches()


def index_splits(q: Query, fetcher: Fetcher) -> list[Split]:
    """Records of an index query as splits: one WARC file each, records unique and in offset order, at most
    `per_task` records a split. The plan is held by the driver (~150 bytes a record), so a query that selects
    more than `MAX_RECORDS` is refused in one line: narrow it, or take the first N with `limit=`."""
    try:
        per_task, limit = int(q.params.get("per_task", PER_TASK)), int(q.params.get("limit", 0)) or None
    except ValueError:
        raise UsageError(f"cc://{q.snapshot}/index: per_task= and limit= take counts") from None
    if per_task < 1:
        raise UsageError(f"per_task must be >= 1, got {per_task}")
    by_file: dict[str, set[tuple[int, int]]] = {}
    n = 0
    for batch in index_batches(q, fetcher):
        cols = [batch.column(c).to_pylist() for c in INDEX_COLUMNS]
        for name, off, length in zip(*cols, strict=True):
            if limit is not None and n >= limit:
                break
            by_file.setdefault(name, set()).add((int(off), int(length)))
            n += 1
        if limit is not None and n >= limit:
            break
        if n > MAX_RECORDS:
            raise UsageError(f"cc://{q.snapshot}/index selects more than {MAX_RECORDS:,} records, more than one plan "
                             "holds: narrow the query (domain=, lang=, segments of the crawl) or add limit=N")
    splits = []
    for name in sorted(by_file):
        records = sorted(by_file[name])
        for i in range(0, len(records), per_task):
            splits.append(Split(url=q.base + name, key=key_of(name, q.snapshot), records=tuple(records[i : i + per_task])))
    return splits


def describe_splits(splits: Iterable[Split]) -> dict[str, int]:
    """Files, records (for index queries) and splits of a plan: what `curate cc paths` prints."""
    splits = list(splits)
    return {"files": len({s.url for s in splits}), "records": sum(len(s.records) for s in splits),
            "splits": len(splits)}
