"""Shared test fixtures. Real data lives in ../shared/data beside the repository (PENEIRA_SHARED_DATA overrides)."""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PENEIRA_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"shared test data not found at {SHARED} (set PENEIRA_SHARED_DATA)")
    return SHARED


# ---------------------------------------------------------------- a real S3 API server (moto), on 127.0.0.1

SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b"<Message>Please reduce your request rate.</Message></Error>")


@dataclass(frozen=True)
class Fault:
    """What the S3 server's fault hook does to one request instead of answering it honestly."""

    kind: str  # "status", "cut" (body cut mid-way), "delay", "stale" (the previous listing)
    status: str = "500 Internal Server Error"
    code: str = "InternalError"
    seconds: float = 0.0

    def body(self) -> bytes:
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{self.code}</Code>'
                f"<Message>fault injected</Message></Error>").encode()


class S3Server:
    """moto's standalone S3 server (`ThreadedMotoServer`, from `moto[server]`) on a free port of 127.0.0.1.

    Clients reach it exactly as they reach a bucket: through s3fs, with the endpoint given by fsspec's
    config (`FSSPEC_S3_ENDPOINT_URL`, read by every process the tests start) and botocore's
    `AWS_ENDPOINT_URL`, with dummy credentials. In front of moto's WSGI application sits one hook:
    `log` records every request (method, key, query), and `fault(method, path, query)`, when set, may
    answer a request itself (the 503 SlowDown an S3 front end sends under load) or block it for a while.

    `fault` answers True (the 503) or one of the `Fault` actions: an HTTP status of its own, a body cut
    mid-way (the connection closes after half the bytes its Content-Length promised), a delay, or a
    stale listing (the previous answer to the same LIST request). A fault with `takes_headers = True`
    is called with the request headers as a fourth argument (a copy is a PUT with `x-amz-copy-source`).
    """

    def __init__(self):
        from moto.moto_server.threaded_moto_server import ThreadedMotoServer

        self.log: list[tuple[str, str, str]] = []
        self.listed: dict[tuple[str, str], list] = {}
        self.fault = None
        self.lock = threading.Lock()
        outer = self

        class Hooked(ThreadedMotoServer):
            def _server_entry(self) -> None:  # ThreadedMotoServer's own, with the hook around moto's app
                from moto.moto_server.werkzeug_app import (
                    DomainDispatcherApplication,
                    MotoRequestHandler,
                    create_backend_app,
                )
                from werkzeug.serving import make_server

                app = DomainDispatcherApplication(create_backend_app)
                self._server = make_server(self._ip_address, self._port, outer._wsgi(app), True,
                                           request_handler=MotoRequestHandler)
                self._server_ready_event.set()
                self._server.serve_forever()

        self.moto = Hooked(ip_address="127.0.0.1", port=0, verbose=False)  # port 0: the OS picks a free one

    def _wsgi(self, app):
        def handle(environ, start_response):
            from werkzeug.wsgi import get_input_stream

            req = (environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""))
            with self.lock:
                self.log.append(req)
                fault = self.fault
            action = None
            if fault is not None:
                headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
                action = fault(*req, headers) if getattr(fault, "takes_headers", False) else fault(*req)
            if not action:
                return self._answer(app, environ, start_response, req)
            if isinstance(action, Fault) and action.kind == "delay":
                time.sleep(action.seconds)
                return self._answer(app, environ, start_response, req)
            if isinstance(action, Fault) and action.kind in ("cut", "stale"):
                return self._altered(app, environ, start_response, req, action.kind)
            status, body = ("503 Slow Down", SLOW_DOWN) if action is True else (action.status, action.body())
            get_input_stream(environ).read()  # drain the body, as a real front end does
            start_response(status, [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
            return [body]

        return handle

    def _answer(self, app, environ, start_response, req):
        """moto's answer; listings are remembered (the last two per request) for stale replays."""
        if req[0] != "GET" or "list-type" not in req[2]:
            return app(environ, start_response)
        got: list = []
        body = b"".join(app(environ, lambda status, headers, exc_info=None: got.extend([status, headers])))
        with self.lock:
            self.listed.setdefault(req[1:], []).append((got[0], got[1], body))
            del self.listed[req[1:]][:-2]
        start_response(got[0], got[1])
        return [body]

    def _altered(self, app, environ, start_response, req, kind: str):
        if kind == "stale":
            with self.lock:
                seen = self.listed.get(req[1:], [])
                old = seen[-1] if seen else None
            if old is None:  # nothing listed before: an honest answer
                return self._answer(app, environ, start_response, req)
            start_response(old[0], old[1])
            return [old[2]]
        got: list = []
        body = b"".join(app(environ, lambda status, headers, exc_info=None: got.extend([status, headers])))
        start_response(got[0], got[1])

        def cut():  # the headers promise the whole body; half of it comes, then the connection drops
            yield body[: len(body) // 2]
            raise ConnectionAbortedError("fault injected: connection closed mid-body")

        return cut()

    def start(self) -> str:
        self.moto.start()
        host, port = self.moto.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        return self.endpoint

    def stop(self) -> None:
        self.moto.stop()

    def requests(self) -> list[tuple[str, str, str]]:
        with self.lock:
            return list(self.log)


S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
          "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
          "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}


@pytest.fixture(scope="session")
def s3_server():
    """The S3 server for the session; this process and every process it starts talk to it through s3fs."""
    pytest.importorskip("s3fs", reason="the s3 extra (pip install -e '.[s3]')")
    pytest.importorskip("moto.server", reason="the s3 extra (pip install -e '.[s3]')")
    import fsspec.config

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one INFO line per request otherwise
    server = S3Server()
    endpoint = server.start()
    env = {**S3_ENV, "AWS_ENDPOINT_URL": endpoint, "FSSPEC_S3_ENDPOINT_URL": endpoint}
    saved = {k: os.environ.get(k) for k in env}
    saved_conf = fsspec.config.conf.get("s3")
    os.environ.update(env)
    fsspec.config.conf["s3"] = {**(saved_conf or {}), "endpoint_url": endpoint}
    try:
        yield server
    finally:
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if saved_conf is None:
            fsspec.config.conf.pop("s3", None)
        else:
            fsspec.config.conf["s3"] = saved_conf


@pytest.fixture
def s3_bucket(s3_server) -> str:
    """A new, empty bucket for one test, as an `s3://NAME` URL; the server's fault hook is off again after it."""
    import fsspec

    name = f"peneira-{uuid.uuid4().hex[:12]}"
    fsspec.filesystem("s3").mkdir(name)
    try:
        yield f"s3://{name}"
    finally:
        s3_server.fault = None
