"""A Common Crawl-shaped tree on 127.0.0.1, and a proxy in front of it that injects faults at planned moments.

`build_tree` lays out real WARC/WET/WAT files from ../shared/data/warc the way data.commoncrawl.org does
(`crawl-data/SNAP/{warc,wet,wat,cc-index-table}.paths.gz`, `segments/.../warc/...`, `collinfo.json`) and writes
a columnar index in Parquet whose offsets and lengths come from warcio reading the files (the independent
reference), with planted languages. `RangeServer` serves a folder with HTTP Range (http.server has none);
`FaultProxy` forwards to any upstream (the range server, moto's S3) and answers 503 SlowDown with
Retry-After, stalls, resets connections or cuts bodies where its `plan` says, and counts what it delivered
whole per (path, range) and the most requests it had in flight at once.
"""

from __future__ import annotations

import collections
import email.utils
import gzip
import hashlib
import http.client
import http.server
import json
import re
import shutil
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "warc"
if not DATA.exists():
    DATA = Path("/work/shared/data/warc")
SNAPSHOT = "CC-MAIN-2024-10"
SOURCES = {  # file in the tree -> the real file it is (segment, kind)
    "resiliparse": ("1700000000001.0", "warc", "cc/resiliparse_warcfile.CC-MAIN-2020-34.warc.gz"),
    "dolma0": ("1700000000001.0", "warc", "wget/dolma_sample-0000.warc.gz"),
    "dolma1": ("1700000000002.0", "warc", "wget/dolma_sample-0001.warc.gz"),
    "cmon": ("1700000000002.0", "warc", "cc/cmoncrawl_mini.CC-MAIN-2022-05.warc.gz"),
    "whirl": ("1700000000003.0", "warc", "cc/whirlwind.CC-MAIN-2024-22.warc.gz"),
    "whirl_wet": ("1700000000003.0", "wet", "cc/whirlwind.CC-MAIN-2024-22.warc.wet.gz"),
    "whirl_wat": ("1700000000003.0", "wat", "cc/whirlwind.CC-MAIN-2024-22.warc.wat.gz"),
}
BIG = {"aut": ("1700000000004.0", "warc", "internet_archive/aut_IAH-20080430204825-00000-blackbook.warc.gz"),
       "pywb": ("1700000000004.0", "warc", "internet_archive/pywb_iana.warc.gz")}
LANGS = ("por", "eng", "spa", "por,eng")


def _ext(kind: str) -> str:
    return {"warc": ".warc.gz", "wet": ".warc.wet.gz", "wat": ".warc.wat.gz"}[kind]


def registered_domain(host: str) -> str:
    parts = host.lower().split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 else host


def index_rows(path: Path, name: str) -> list[dict]:
    """The columnar index's rows for a WARC file, by warcio (offsets, lengths, URLs, HTTP status and type)."""
    from warcio.archiveiterator import ArchiveIterator

    rows = []
    with open(path, "rb") as f:
        it = ArchiveIterator(f)
        for rec in it:
            if rec.rec_type != "response":
                continue
            uri = rec.rec_headers.get_header("WARC-Target-URI") or ""
            http = rec.http_headers
            status = int(http.get_statuscode()) if http and http.get_statuscode().isdigit() else 0
            mime = ((http.get_header("Content-Type") or "") if http else "").split(";")[0].strip().lower()
            rec.content_stream().read()
            off, length = it.get_record_offset(), it.get_record_length()
            host = urllib.parse.urlsplit(uri.strip("<>")).hostname or ""
            lang = LANGS[int(hashlib.md5(f"{name}{off}".encode()).hexdigest(), 16) % len(LANGS)]
            rows.append({"url": uri, "url_host_name": host, "url_host_registered_domain": registered_domain(host),
                         "content_mime_detected": mime, "content_languages": lang, "fetch_status": status,
                         "warc_filename": name, "warc_record_offset": off, "warc_record_length": length})
    return rows


def build_tree(root: Path, sources: dict = SOURCES, index_files: int = 2, row_group: int = 20,
               extra_rows: list[dict] | None = None) -> list[dict]:
    """Lay out the tree under `root`; returns the index rows (the ground truth of every index query)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    crawl = root / "crawl-data" / SNAPSHOT
    lists: dict[str, list[str]] = collections.defaultdict(list)
    rows: list[dict] = []
    for stem, (segment, kind, rel) in sources.items():
        name = f"crawl-data/{SNAPSHOT}/segments/{segment}/{kind}/CC-MAIN-{stem}{_ext(kind)}"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / rel, root / name)
        lists[kind].append(name)
        if kind == "warc":
            rows.extend(index_rows(root / name, name))
    rows.extend(extra_rows or [])
    rows.sort(key=lambda r: (r["url_host_registered_domain"], r["url"]))  # SURT-like order, as the real index
    table_dir = f"cc-index/table/cc-main/warc/crawl={SNAPSHOT}/subset=warc"
    (root / table_dir).mkdir(parents=True, exist_ok=True)
    per = -(-len(rows) // index_files)
    for i in range(index_files):
        part = f"{table_dir}/part-{i:05d}.c000.gz.parquet"
        pq.write_table(pa.Table.from_pylist(rows[i * per : (i + 1) * per]), root / part, row_group_size=row_group)
        lists["cc-index-table"].append(part)
    for kind, names in lists.items():
        (crawl / f"{kind}.paths.gz").write_bytes(gzip.compress("\n".join(names).encode() + b"\n"))
    (root / "collinfo.json").write_text(json.dumps([
        {"id": SNAPSHOT, "name": "February/March 2024 Index", "timegate": "", "cdx-api": "",
         "from": "2024-02-20T00:00:00", "to": "2024-03-05T00:00:00"},
        {"id": "CC-MAIN-2023-50", "name": "November/December 2023 Index", "timegate": "", "cdx-api": "",
         "from": "2023-11-28T00:00:00", "to": "2023-12-12T00:00:00"}]))
    return rows


class _Server(http.server.ThreadingHTTPServer):
    """A threaded server with room for many connections at once (socketserver's backlog of 5 drops connects
    beyond it: clients then wait a second for their SYN's retry) and quiet about clients that hung up."""

    request_queue_size = 256
    daemon_threads = True

    def handle_error(self, request, client_address):  # a reset or a client that gave up: part of the tests
        pass


class _Counted:
    def __init__(self):
        self.lock = threading.Lock()
        self.in_flight = self.max_in_flight = self.requests = 0
        self.delivered: collections.Counter = collections.Counter()  # (path, range) -> whole answers

    def enter(self) -> None:
        with self.lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1


_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


class RangeServer(_Counted):
    """A folder over HTTP with GET/HEAD and single byte ranges (206, Content-Range, 416), `delay` s per request."""

    def __init__(self, root: Path, delay: float = 0.0):
        super().__init__()
        self.root, self.delay = root, delay
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: Nagle + delayed ACK cost 40 ms each

            def log_message(self, *a):  # quiet
                pass

            def do_HEAD(self):
                self._serve(body=False)

            def do_GET(self):
                self._serve(body=True)

            def _serve(self, body: bool):
                server.enter()
                try:
                    time.sleep(server.delay)
                    path = server.root / urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
                    if not path.is_file():
                        self.send_response(404)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    data = path.read_bytes()
                    m = _RANGE.fullmatch(self.headers.get("Range", "") or "")
                    status, start, end = 200, 0, len(data)
                    if m:
                        start = int(m.group(1))
                        end = min(len(data), int(m.group(2)) + 1) if m.group(2) else len(data)
                        if start >= len(data):
                            self.send_response(416)
                            self.send_header("Content-Range", f"bytes */{len(data)}")
                            self.send_header("Content-Length", "0")
                            self.end_headers()
                            return
                        status = 206
                    self.send_response(status)
                    st = path.stat()  # validators as CloudFront and S3 send them: a rewritten file is another version
                    self.send_header("ETag", f'"{st.st_size:x}-{st.st_mtime_ns:x}"')
                    self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
                    self.send_header("Content-Length", str(end - start))
                    self.send_header("Accept-Ranges", "bytes")
                    if status == 206:
                        self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
                    self.end_headers()
                    if body:
                        self.wfile.write(data[start:end])
                finally:
                    server.leave()

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


Plan = Callable[[str, str, int], str | None]  # (path, Range header, attempt of this range) -> fault or None
_MOVED = {"shifted": (1000, 1000), "short": (0, -100), "long": (0, 100)}  # (start, end) moved by, in bytes


def _moved(rng: str, fault: str) -> str:
    """The Range header `rng` (`bytes=A-B`) moved as `fault` moves it (`_MOVED`)."""
    m = _RANGE.fullmatch(rng)
    a, b = int(m.group(1)), int(m.group(2)) if m.group(2) else None
    da, db = _MOVED[fault]
    return f"bytes={max(0, a + da)}-{'' if b is None else max(a + da, b + db)}"


class FaultProxy(_Counted):
    """Forwards to `upstream` (an http://host:port/ URL), answering with a fault where `plan` says:
    `503` (S3's SlowDown body, `Retry-After: 0`), `stall` (answers after `stall` s), `reset` (closes the
    connection unanswered, RST), `truncate` (the headers promise the whole body, half of it comes), `norange`
    (the Range header dropped: the whole file comes back, 200, as from a server that serves no ranges); and
    replies for another range than asked (issue 42.2), as a misbehaving proxy or CDN sends them: `shifted` (the
    range 1000 bytes on, with its honest Content-Range), `short` / `long` (100 bytes fewer / more at the end),
    `etag` (another ETag and Last-Modified: another version of the file)."""

    def __init__(self, upstream: str, plan: Plan | None = None, stall: float = 1.0):
        super().__init__()
        self.plan, self.stall = plan or (lambda path, rng, attempt: None), stall
        self.attempts: collections.Counter = collections.Counter()
        self.faults: collections.Counter = collections.Counter()
        up = urllib.parse.urlsplit(upstream)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: Nagle + delayed ACK cost 40 ms each

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                self._forward("HEAD")

            def do_GET(self):
                self._forward("GET")

            def _forward(self, method: str):
                proxy.enter()
                try:
                    self._answer(method)
                finally:
                    proxy.leave()

            def _answer(self, method: str):
                key = (urllib.parse.urlsplit(self.path).path, self.headers.get("Range", ""))
                with proxy.lock:
                    attempt = proxy.attempts[key]
                    proxy.attempts[key] += 1
                fault = proxy.plan(key[0], key[1], attempt) if method == "GET" else None
                if fault:
                    with proxy.lock:
                        proxy.faults[fault] += 1
                if fault == "503":
                    body = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
                    self.send_response(503)
                    self.send_header("Retry-After", "0")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if fault == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault == "stall":  # not counted in flight while stalled: the client gives up on it (its
                    proxy.leave()     # timeout, shorter than the stall), which the proxy cannot see
                    time.sleep(proxy.stall)
                    proxy.enter()
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
                drop = ("connection", "range") if fault == "norange" else ("connection",)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in drop}
                if fault in _MOVED and key[1]:  # another range asked upstream: its honest 206 comes back
                    headers["Range"] = _moved(key[1], fault)
                conn.request(method, self.path, headers=headers)
                r = conn.getresponse()
                data = r.read()
                conn.close()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length", "date", "server"):
                        if fault == "etag" and k.lower() in ("etag", "last-modified"):
                            v = '"another-version"' if k.lower() == "etag" else "Mon, 01 Jan 2001 00:00:00 GMT"
                        self.send_header(k, v)
                self.send_header("Content-Length", r.getheader("Content-Length", "0") if method == "HEAD" else str(len(data)))
                self.end_headers()
                if method == "HEAD":
                    return
                if fault == "truncate" and len(data) > 1:
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(data)
                if r.status in (200, 206):
                    with proxy.lock:
                        proxy.delivered[key] += 1

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def planned(every: int = 10, kinds: tuple[str, ...] = ("503", "reset", "truncate", "503"), only: str = ".warc") -> Plan:
    """A plan: the first attempt at about one range in `every` (chosen by a hash: the same each run) of files
    whose path contains `only` fails, cycling through `kinds`."""
    def plan(path: str, rng: str, attempt: int) -> str | None:
        if attempt or only not in path or not rng:
            return None
        h = int(hashlib.md5(f"{path}{rng}".encode()).hexdigest(), 16)
        return kinds[(h // every) % len(kinds)] if h % every == 0 else None

    return plan


def env(base: str, **more: str) -> dict[str, str]:
    """Environment for a `curate` subprocess or monkeypatch: the tree as Common Crawl, tiny backoff waits."""
    return {"PENEIRA_CC_BASE": base, "PENEIRA_CC_INDEX": base, "PENEIRA_CC_BACKOFF_BASE": "0.01",
            "PENEIRA_CC_BACKOFF_CAP": "0.05", **more}


__all__ = ["BIG", "FaultProxy", "RangeServer", "SNAPSHOT", "SOURCES", "build_tree", "env", "planned"]
