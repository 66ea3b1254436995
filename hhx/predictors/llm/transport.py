"""What every backend returns or raises, and the retry policy around it.

Backends translate their own exceptions into `TransportError(kind)`; the engine decides from the
kind alone: retry (rate limits, 5xx, timeouts, broken connections, malformed bodies), fail the
item (context too long, content filtered), or stop the run (credentials, unknown model, bad
request).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

RETRYABLE = frozenset(
    {"rate_limited", "server_error", "timeout", "connection_error", "malformed_response"}
)
FATAL = frozenset({"auth_error", "permission_denied", "not_found", "bad_request"})
ITEM_FAILURES = frozenset({"context_window_exceeded", "content_filtered", "missing_choice"})


@dataclass
class Choice:
    text: str
    finish_reason: str | None = None


@dataclass
class Response:
    """One successful request: its choices (one per draw it answers), usage and cost."""

    choices: list[Choice]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Response:
        choices = [Choice(**c) for c in data.get("choices", [])]
        return cls(
            choices=choices,
            prompt_tokens=int(data.get("prompt_tokens", 0)),
            completion_tokens=int(data.get("completion_tokens", 0)),
            cost_usd=float(data.get("cost_usd", 0.0)),
            latency_s=float(data.get("latency_s", 0.0)),
            meta=dict(data.get("meta", {})),
        )


class TransportError(Exception):
    """A failed request. `kind` decides what happens next; the message never holds a key."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE

    @property
    def fatal(self) -> bool:
        return self.kind in FATAL


def kind_for_status(status: int | None) -> str:
    """Map an HTTP status to an error kind."""
    if status is None:
        return "connection_error"
    if status == 429:
        return "rate_limited"
    if status in (401,):
        return "auth_error"
    if status == 403:
        return "permission_denied"
    if status == 404:
        return "not_found"
    if status in (408, 504):
        return "timeout"
    if status >= 500:
        return "server_error"
    if status in (400, 422):
        return "bad_request"
    return "server_error"


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After (delta seconds or HTTP date) or retry-after-ms value."""
    if value is None:
        return None
    text = str(value).strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def retry_after_from_headers(headers: Any) -> float | None:
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None and re.fullmatch(r"\d+(\.\d+)?", str(ms).strip()):
            return float(ms) / 1000.0
        return parse_retry_after(headers.get("retry-after"))
    except AttributeError:
        return None


def backoff_delay(
    attempt: int, base_s: float, max_s: float, retry_after: float | None, rng: random.Random
) -> float:
    """Exponential backoff with jitter (50-100% of base * 2**attempt, capped); never shorter than
    the server's Retry-After."""
    delay = min(max_s, base_s * (2**attempt)) * rng.uniform(0.5, 1.0)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


def scrub(text: str, secret: str | None) -> str:
    """Remove a secret (and obvious key-like tokens) from a message before it is shown or kept."""
    if secret and secret in text:
        text = text.replace(secret, "***")
    return re.sub(r"\b(sk|key|token)-[A-Za-z0-9_\-]{6,}", r"\1-***", text)


def one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


class RateLimiter:
    """At most `per_minute` request starts per minute, evenly spaced (None = no limit)."""

    def __init__(self, per_minute: int | None) -> None:
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)
