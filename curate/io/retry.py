"""One backoff policy for reads from stores that throttle: how often, how long, and on what to try again.

Common Crawl's bucket answers a busy reader with `503 SlowDown` (S3) or `503` / `429` with `Retry-After`
(CloudFront in front of data.commoncrawl.org); connections are reset and bodies cut mid-way under load.
A reader that gives up after a few seconds loses files; one that skips them silently loses data
(datatrove #302). `Policy` is the one home of the answer: which failures are worth another try
(`Transient`: throttles, 5xx, timeouts, resets, short bodies; anything else is raised at once), the waits
between tries (exponential from `base`, capped at `cap`, with full jitter so that many tasks throttled
together do not come back together), a throttle's longer wait (`throttle_base`), and a server's
`Retry-After`, honoured up to `cap`. `fs.retrying` uses it for what it classifies as a throttle.
"""

from __future__ import annotations

import email.utils
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

THROTTLE_STATUSES = frozenset({429, 503})
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
THROTTLE_WORDS = ("SlowDown", "Throttl", "TooManyRequests", "Too Many Requests", "RequestLimitExceeded",
                  "Service Unavailable", "reduce your request rate")  # the last: s3fs's OSError for SlowDown


class Transient(Exception):
    """A failed request worth another try: `status` (None for a network fault), the server's `Retry-After`
    in seconds when it sent one, and whether it was a throttle (429, 503, SlowDown)."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None,
                 throttle: bool = False):
        super().__init__(message)
        self.status, self.retry_after, self.throttle = status, retry_after, throttle


class Exhausted(OSError):
    """A read that still failed after every try the policy allows: the run stops on it (or, with
    `allow_missing`, the reader counts the record or file as `read:missing`, by name)."""


class Refused(OSError):
    """A reply that another try cannot mend: a server that serves no ranges, a file that changed (`Changed`)
    between two replies. Raised at once, never retried (`fs.retrying` passes it on too)."""


class Changed(Refused):
    """A file whose validators (ETag, Last-Modified) changed between two replies: another version, never
    mixed with the first, and not retried (it will not change back)."""


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def is_throttle(e: BaseException) -> bool:
    """A store saying "too fast": 429/503 statuses and S3's SlowDown, whatever client raised it."""
    if isinstance(e, Transient):
        return e.throttle
    if getattr(e, "status", None) in THROTTLE_STATUSES:  # aiohttp's ClientResponseError
        return True
    text = f"{type(e).__name__}: {e}"
    return any(w in text for w in THROTTLE_WORDS)


@dataclass(frozen=True)
class Policy:
    """Tries and waits. Attempt `k` (0-based) that failed waits `uniform(0, min(cap, base * 2**k))` (full jitter),
    or `throttle_base` instead of `base` after a throttle, and at least the server's `Retry-After` (capped at `cap`).

    Defaults (8 tries, 0.5 s, throttles from 2 s, cap 30 s) wait up to ~1.5 minutes in all on a store that
    keeps throttling: long enough for S3 to scale out a prefix, short enough that a dead store stops the run.
    `PENEIRA_CC_TRIES`, `PENEIRA_CC_BACKOFF_BASE` and `PENEIRA_CC_BACKOFF_CAP` change them (tests use tiny waits).
    """

    tries: int = 8
    base: float = 0.5
    throttle_base: float = 2.0
    cap: float = 30.0
    jitter: bool = True

    @classmethod
    def from_env(cls, **overrides: Any) -> Policy:
        env = {"tries": ("PENEIRA_CC_TRIES", int), "base": ("PENEIRA_CC_BACKOFF_BASE", float),
               "throttle_base": ("PENEIRA_CC_BACKOFF_BASE", float), "cap": ("PENEIRA_CC_BACKOFF_CAP", float)}
        kw = {k: conv(os.environ[name]) for k, (name, conv) in env.items() if name in os.environ}
        kw.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**kw)

    def __post_init__(self):
        if self.tries < 1 or self.base < 0 or self.cap < 0 or self.throttle_base < 0:
            raise ValueError(f"a backoff policy needs tries >= 1 and waits >= 0, got {self}")

    def delay(self, attempt: int, error: BaseException | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt `attempt` (0-based)."""
        base = self.throttle_base if error is not None and is_throttle(error) else self.base
        ceiling = min(self.cap, base * 2**attempt)
        wait = (rng or random).uniform(0, ceiling) if self.jitter else ceiling
        after = getattr(error, "retry_after", None)
        if after is not None:
            wait = max(wait, min(float(after), self.cap))
        return wait

    def call(self, fn: Callable[[], T], transient: Callable[[BaseException], bool],
             on_retry: Callable[[BaseException, float], None] | None = None,
             sleep: Callable[[float], None] = time.sleep) -> T:
        """`fn()`, tried again after an error `transient` accepts, waiting `delay` in between; raises
        `Exhausted` (from the last error) once `tries` are spent, any other error at once."""
        for attempt in range(self.tries):
            try:
                return fn()
            except Exception as e:
                if not transient(e):
                    raise
                if attempt == self.tries - 1:
                    raise Exhausted(f"{e} (still failing after {self.tries} tries)") from e
                wait = self.delay(attempt, e)
                if on_retry is not None:
                    on_retry(e, wait)
                sleep(wait)
        raise AssertionError("unreachable")


def transient_errors() -> tuple[type[BaseException], ...]:
    """Errors a store's client raises for a fault that may pass: any OSError but the permanent ones
    `curate.io.fs` sets apart, and the HTTP clients' own connection and payload errors (aiohttp's
    `ClientPayloadError`, a body cut mid-way, is no OSError), which s3fs re-raises once its own retries are spent."""
    import contextlib

    found: list[type[BaseException]] = [OSError]
    with contextlib.suppress(ImportError):
        import aiohttp

        found.append(aiohttp.ClientError)
    with contextlib.suppress(ImportError):
        import botocore.exceptions

        found.append(botocore.exceptions.BotoCoreError)
    return tuple(found)
