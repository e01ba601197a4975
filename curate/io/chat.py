"""A client for the OpenAI-compatible chat-completions protocol, the one vLLM, SGLang, TGI, llama.cpp's server,
Ollama and the hosted APIs all serve: `POST {endpoint}/chat/completions`.

It exists for `curate quality annotate`, where a teacher model grades thousands of pages and every answer
costs money or GPU time, so the client must neither lose an answer nor pay for one twice. It lives with the
other network readers because it is I/O, not inference: the model runs elsewhere.

* One request per document, over urllib3 (already a dependency; one pool of `concurrency` connections, so no
  more requests reach the server than the caller's threads ask for), under `retry.Policy`: throttles (429,
  503, honouring `Retry-After`), 5xx, timeouts, resets and bodies cut mid-way are tried again with backoff;
  anything else (401, 404, a wrong model name: 400) is raised at once, since no retry fixes it.
* A body that is not JSON is retried too (a proxy's error page, a cut stream); if it stays unreadable after
  every try the answer is returned with `problem="malformed_json"` so the document is counted, not retried
  forever. A request still failing after every try raises `retry.Exhausted`: the caller stops, and a rerun
  resumes.
* `RateLimit` spaces requests (tries included) to at most `rate` a second across threads.
* `counts`: requests sent, retries, throttles, and the tokens the server reported in `usage`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from curate.io.retry import RETRY_STATUSES, THROTTLE_STATUSES, Exhausted, Policy, Transient, parse_retry_after


@dataclass(frozen=True)
class Answer:
    """What the server said for one prompt. `content` is the first choice's message (None without one);
    `problem` names an answer that carries no text to parse: `malformed_json` (the body never parsed) or
    `empty_choice` (no choices, or no message content)."""

    content: str | None
    finish_reason: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    problem: str | None = None


class Refused(OSError):
    """The server refused the request in a way no retry fixes (400, 401, 403, 404: a wrong model name, key or
    endpoint)."""


class _Malformed(Transient):
    """A 200 whose body is not the protocol's JSON: retried, and counted by name once the tries are spent."""


class RateLimit:
    """At most `rate` requests a second, shared by every thread (0: no limit). Each caller takes the next free
    slot under a lock and sleeps outside it, so waiting threads do not hold each other up."""

    def __init__(self, rate: float):
        if rate < 0:
            raise ValueError(f"a rate limit must be >= 0 requests/s, got {rate}")
        self.gap = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.gap:
            return
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next)
            self._next = slot + self.gap
        if slot > now:
            time.sleep(slot - now)


def completions_url(endpoint: str) -> str:
    """`http://host:8000/v1` -> `http://host:8000/v1/chat/completions`; a full URL is kept as it is."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/chat/completions") else f"{endpoint}/chat/completions"


class ChatClient:
    """Chat completions from `model` at `endpoint`, thread-safe. `params`: the request's other fields
    (`max_tokens`, `temperature`, …), sent as given."""

    def __init__(self, endpoint: str, model: str, *, api_key: str | None = None, params: dict | None = None,
                 timeout: float = 120.0, concurrency: int = 8, rate: float = 0.0, policy: Policy | None = None):
        import urllib3

        self.url, self.model, self.params = completions_url(endpoint), model, dict(params or {})
        self.policy = policy or Policy.from_env()
        self.limit = RateLimit(rate)
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        t = urllib3.Timeout(connect=min(10.0, timeout), read=timeout)
        self._pool = urllib3.PoolManager(maxsize=max(1, concurrency), block=True, timeout=t, retries=False)
        self.counts: Counter = Counter()
        self._lock = threading.Lock()

    def _count(self, **figures: int) -> None:
        with self._lock:
            self.counts.update(figures)

    def _on_retry(self, e: BaseException, wait: float) -> None:
        self._count(retries=1, throttles=int(getattr(e, "throttle", False)))

    def complete(self, messages: list[dict]) -> Answer:
        """The first choice for `messages`; raises `retry.Exhausted` when the server keeps failing."""
        body = json.dumps({"model": self.model, "messages": messages, **self.params}).encode()
        try:
            data = self.policy.call(lambda: self._post(body), lambda e: isinstance(e, Transient), self._on_retry)
        except Exhausted as e:
            if isinstance(e.__cause__, _Malformed):
                return Answer(None, None, problem="malformed_json")
            raise
        return _answer(data)

    def _post(self, body: bytes) -> dict:
        import urllib3

        self.limit.wait()
        self._count(requests=1)
        try:
            r = self._pool.request("POST", self.url, body=body, headers=self.headers, redirect=True)
        except (urllib3.exceptions.HTTPError, OSError) as e:  # timeouts, resets, bodies cut short
            raise Transient(f"{self.url}: {type(e).__name__}: {e}") from e
        if r.status != 200:
            text = r.data[:200].decode("utf-8", "replace")
            if r.status in RETRY_STATUSES:
                raise Transient(f"{self.url}: HTTP {r.status} {text[:80]}".rstrip(), r.status,
                                parse_retry_after(r.headers.get("Retry-After")), r.status in THROTTLE_STATUSES)
            raise Refused(f"{self.url}: HTTP {r.status} {text}".rstrip())
        try:
            data = json.loads(r.data)
        except ValueError as e:
            raise _Malformed(f"{self.url}: the answer is not JSON: {r.data[:80]!r}") from e
        if not isinstance(data, dict):
            raise _Malformed(f"{self.url}: the answer is JSON but not an object: {r.data[:80]!r}")
        return data


def _answer(data: dict) -> Answer:
    """The protocol's reply read leniently (servers differ in what they fill in): usage when given."""
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    tokens = {k: int(usage.get(k) or 0) for k in ("prompt_tokens", "completion_tokens")}
    choices = data.get("choices")
    first: Any = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    finish = first.get("finish_reason") if isinstance(first, dict) else None
    if not isinstance(content, str) or not content.strip():
        return Answer(None, finish, **tokens, problem="empty_choice")
    return Answer(content, finish, **tokens)
