"""A fake teacher on 127.0.0.1 speaking the OpenAI-compatible chat-completions protocol, and misbehaving on plan.

The prompt the tests send holds `Document {id}` and the text between `<<<` and `>>>` lines (`TEMPLATE`); the
server finds both, and answers with `grade(doc_id, text)`: a string (the message content, finish_reason
"stop"), or a dict with `content` and `finish_reason`, or `None` for a reply with no choices. Before that,
`faults[doc_id]` is consumed one entry per request: "429" (with `Retry-After: 1`), "500" (or any status), "hang" (no answer
until well past the client's timeout, then the connection closed), "garbage" (200 with a body that is not
JSON), "cut" (200 whose body stops half-way through the Content-Length it promised).

`paid[doc_id]` counts answers delivered whole (what a hosted teacher bills); `seen[doc_id]` the times of every
request. `hold_after = K` makes the server hold every request after the K-th paid answer until `release` is
set, then drop it unanswered (and unpaid); `holding` counts them: a test kills the client while they hang.
"""

from __future__ import annotations

import collections
import http.server
import json
import re
import threading
import time
from collections.abc import Callable

TEMPLATE = "Document {id}\n<<<\n{text}\n>>>\nGrade the document. End with 'Educational score: N'.\n"
_PROMPT = re.compile(r"Document (\S+)\n<<<\n(.*)\n>>>\n", re.S)


class ChatServer:
    def __init__(self, grade: Callable[[str, str], str | dict | None], faults: dict[str, list[str]] | None = None,
                 hang_s: float = 1.5, delay_s: float = 0.0):
        self.grade, self.faults, self.hang_s = grade, {k: list(v) for k, v in (faults or {}).items()}, hang_s
        self.delay_s = delay_s  # every answer takes this long (a teacher's generation time, for benchmarks)
        self.paid: collections.Counter = collections.Counter()
        self.tokens: collections.Counter = collections.Counter()  # usage of the answers paid
        self.seen: dict[str, list[float]] = collections.defaultdict(list)
        self.hold_after: int | None = None
        self.holding = 0  # requests held now
        self.release = threading.Event()
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.handle(self, body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(self, h, body: dict) -> None:
        prompt = body["messages"][-1]["content"]
        doc_id, text = _PROMPT.search(prompt).groups()
        with self.lock:
            self.seen[doc_id].append(time.monotonic())
            fault = self.faults[doc_id].pop(0) if self.faults.get(doc_id) else None
            hold = self.hold_after is not None and sum(self.paid.values()) >= self.hold_after
        if hold:
            with self.lock:
                self.holding += 1
            self.release.wait()
            return  # dropped unanswered: never paid
        if fault == "hang":
            time.sleep(self.hang_s)
            return
        if fault and fault.isdigit():  # "429" with Retry-After: 1; "500", "404", …: that status
            self._send(h, int(fault), b'{"error": "busy"}', {"Retry-After": "1"} if fault == "429" else {})
            return
        if fault == "garbage":
            self._send(h, 200, b"<html>502 Bad Gateway from the proxy</html>")
            return
        if self.delay_s:
            time.sleep(self.delay_s)
        data = self._reply(body, prompt, self.grade(doc_id, text))
        reply = json.dumps(data).encode()
        if fault == "cut":
            h.send_response(200)
            h.send_header("Content-Length", str(len(reply)))
            h.end_headers()
            h.wfile.write(reply[: len(reply) // 2])
            h.wfile.flush()
            h.close_connection = True
            return
        self._send(h, 200, reply)
        with self.lock:
            self.paid[doc_id] += 1
            self.tokens.update(data["usage"])

    @staticmethod
    def _reply(body: dict, prompt: str, answer: str | dict | None) -> dict:
        if answer is None:
            return {"id": "x", "object": "chat.completion", "choices": [], "usage": {"prompt_tokens": 0}}
        if isinstance(answer, str):
            answer = {"content": answer, "finish_reason": "stop"}
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len((answer["content"] or "").split())}
        choice = {"index": 0, "message": {"role": "assistant", "content": answer["content"]},
                  "finish_reason": answer["finish_reason"]}
        return {"id": "x", "object": "chat.completion", "model": body["model"], "choices": [choice], "usage": usage}

    @staticmethod
    def _send(h, status: int, data: bytes, headers: dict | None = None) -> None:
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
