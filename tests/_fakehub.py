"""A local stand-in for the Hugging Face Hub's HTTP API, enough for `huggingface_hub.HfFileSystem` (`hf://` URLs) to
list, stat and read a dataset repository kept as a plain folder (`ROOT/datasets/ORG/NAME/...`). Listens on 127.0.0.1
only; tests point `HF_ENDPOINT` at it. A file's `oid` is the sha1 of its bytes (git's blob id), so rewriting a file
changes what the Hub would report, as a new commit does."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import re
import threading
import urllib.parse
from pathlib import Path

REVISION = "0" * 40


def _oid(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    root: Path
    requests: list[str]
    faults: dict  # {"resolve": n}: the next n file reads answer 500 (an injected storage fault)

    def log_message(self, *args):
        pass

    def _json(self, obj, status=200):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _entry(self, repo: Path, p: Path) -> dict:
        rel = p.relative_to(repo).as_posix()
        if p.is_dir():
            return {"type": "directory", "oid": hashlib.sha1(rel.encode()).hexdigest(), "path": rel}
        return {"type": "file", "oid": _oid(p), "size": p.stat().st_size, "path": rel}

    def _repo(self, org: str, name: str) -> Path | None:
        repo = self.root / "datasets" / org / name
        return repo if repo.is_dir() else None

    def do_GET(self):  # noqa: N802
        self.requests.append(f"{self.command} {self.path}")
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        if m := re.fullmatch(r"/api/datasets/([^/]+)/([^/]+)(?:/revision/([^/]+))?", path):
            if self._repo(m[1], m[2]) is None:
                return self._json({"error": "Repository not found"}, 404)
            return self._json({"id": f"{m[1]}/{m[2]}", "sha": REVISION, "private": False, "siblings": []})
        if m := re.fullmatch(r"/api/datasets/([^/]+)/([^/]+)/tree/([^/]+)/?(.*)", path):
            repo = self._repo(m[1], m[2])
            target = repo / m[4] if repo else None
            if target is None or not target.exists():
                return self._json({"error": "Entry not found"}, 404)
            recursive = "recursive=true" in (url.query or "").lower()
            if target.is_file():
                return self._json([self._entry(repo, target)])
            items = sorted(target.rglob("*") if recursive else target.iterdir())
            return self._json([self._entry(repo, p) for p in items])
        if m := re.fullmatch(r"/datasets/([^/]+)/([^/]+)/resolve/([^/]+)/(.+)", path):
            repo = self._repo(m[1], m[2])
            f = repo / m[4] if repo else None
            if f is None or not f.is_file():
                return self._json({"error": "Entry not found"}, 404)
            if self.faults.get("resolve", 0) > 0:
                self.faults["resolve"] -= 1
                return self._json({"error": "injected fault"}, 500)
            data = f.read_bytes()
            start, end = 0, len(data) - 1
            rng = self.headers.get("Range")
            if rng and (r := re.fullmatch(r"bytes=(\d+)-(\d*)", rng)):
                start, end = int(r[1]), min(int(r[2]) if r[2] else len(data) - 1, len(data) - 1)
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start : end + 1]
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ETag", f'"{_oid(f)}"')
            self.send_header("X-Repo-Commit", REVISION)
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            return None
        return self._json({"error": f"not served here: {path}"}, 404)

    do_HEAD = do_GET

    def do_POST(self):  # noqa: N802
        self.requests.append(f"{self.command} {self.path}")
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode()
        if m := re.fullmatch(r"/api/datasets/([^/]+)/([^/]+)/paths-info/([^/]+)", path):
            repo = self._repo(m[1], m[2])
            try:
                paths = json.loads(raw)["paths"]
            except ValueError:
                paths = urllib.parse.parse_qs(raw).get("paths", [])
            out = [self._entry(repo, repo / p) for p in paths if repo and (repo / p).exists()]
            return self._json(out)
        return self._json({"error": f"not served here: {path}"}, 404)


class FakeHub:
    """`with FakeHub(root) as hub:` serves `root`; `hub.endpoint` is the URL to put in HF_ENDPOINT."""

    def __init__(self, root: str | os.PathLike):
        handler = type("Handler", (_Handler,), {"root": Path(root), "requests": [], "faults": {}})
        self.requests, self.faults = handler.requests, handler.faults
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> FakeHub:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
