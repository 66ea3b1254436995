"""What every backend returns or raises, and the retry policy around it.

Backends translate their own exceptions into `TransportError(kind)`; the engine decides from the
kind alone: retry (rate limits, 5xx, timeouts, broken connections, malformed bodies), fail the
item (context too long, content filtered), or stop the run (credentials, unknown model, a request
the endpoint rejects, a host name that does not resolve). A deterministic error is never retried:
the same request would fail the same way and, on a paid API, cost again.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hhx.predictors.llm.cost import Prices
    from hhx.predictors.llm.plan import Call

RETRYABLE = frozenset(
    {"rate_limited", "server_error", "timeout", "connection_error", "malformed_response"}
)
FATAL = frozenset({"auth_error", "permission_denied", "not_found", "bad_request", "dns_error"})
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
    """A failed request. `kind` decides what happens next; the message never holds a key.

    `status` is the HTTP status when there was one; `fix` is the setting that cures a
    deterministic error (e.g. `model.json_schema_style=llamacpp`), shown in the stop message.
    """

    def __init__(
        self,
        kind: str,
        message: str,
        retry_after: float | None = None,
        status: int | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.status = status
        self.fix = fix

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE

    @property
    def fatal(self) -> bool:
        return self.kind in FATAL


# A 5xx whose body says the request itself is wrong (llama-cpp-python's server answers HTTP 500
# to a request its validation rejects: "1 validation error ... Input should be 'text' or
# 'json_object'"); retrying it only repeats the failure.
_INVALID_REQUEST_5XX = re.compile(
    r"validation error|input should be|invalid[ _]request|invalid value|unrecognized request"
    r"|is not supported|unsupported (parameter|value)|extra inputs are not permitted"
    r"|field required|must be (one of|a valid)",
    re.IGNORECASE,
)


def kind_for_status(status: int | None, body: str = "") -> str:
    """Map an HTTP status (and, for a 5xx, its error text) to an error kind."""
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
        return "bad_request" if _INVALID_REQUEST_5XX.search(body or "") else "server_error"
    if status in (400, 422):
        return "bad_request"
    return "server_error"


# Which setting a rejected request points at (checked in order against the error text).
_FIXES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"json_schema|response_format|json_object|grammar", re.I),
     "model.json_schema_style=llamacpp for a llama.cpp server, or model.constrained_decoding="
     "false"),
    (re.compile(r"top_k|min_p", re.I), "model.supports_top_k=false (and a decoding without top_k)"),
    (re.compile(r"\btemperature\b|\btop_p\b", re.I),
     "decoding=provider_default (the model takes no sampling parameters)"),
    (re.compile(r"\bseed\b", re.I), "decoding.seed=null"),
    (re.compile(r"reasoning_effort|reasoning", re.I), "model.reasoning_effort=null"),
    (re.compile(r"chat_template_kwargs|enable_thinking", re.I),
     "decoding.enable_thinking=null (or model.supports_chat_template_kwargs=false)"),
    (re.compile(r"max_tokens|max_completion_tokens", re.I),
     "decoding.max_tokens=<a smaller number> (or model.reasoning_tokens)"),
    (re.compile(r"\bn\b.*(supported|greater|must)|\bn\b must", re.I), "model.supports_n=false"),
)


def fix_for_request_error(message: str, json_schema_style: str | None = None) -> str:
    """The setting that most likely cures a rejected request, read from the endpoint's text."""
    for pattern, fix in _FIXES:
        if pattern.search(message):
            if "json_schema_style" in fix and json_schema_style == "llamacpp":
                return "model.constrained_decoding=false (the endpoint rejects JSON schemas)"
            return fix
    return "check the decoding.* and model.* settings the message names"


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


# --------------------------------------------------------------------------------------------
# What a backend implements (the engine drives it)


class _TransportCommon(Protocol):
    backend: str
    prices: Prices
    batch: bool  # True: calls go through send_batch in chunks of max_concurrency
    cancellable: bool  # True: the engine may enforce timeout_s by cancelling `send`
    endpoint: str  # what the stop messages name: a URL, a host, a weights file

    def identity(self) -> dict[str, Any]: ...


class AsyncTransport(_TransportCommon, Protocol):
    """A backend answering one request at a time, concurrently (litellm, a llama.cpp server)."""

    async def send(self, call: Call) -> Response: ...


class BatchTransport(_TransportCommon, Protocol):
    """A backend answering a batch in one call (vLLM, transformers); sets `batch = True`."""

    def send_batch(self, calls: Sequence[Call]) -> list[Response | TransportError]: ...


# A backend implements one of the two; `batch` says which.
Transport = AsyncTransport | BatchTransport


class RateLimiter:
    """At most `per_minute` request starts per minute, evenly spaced (None = no limit).

    `clock` and `sleep` are injectable so the schedule can be checked without real time.
    """

    def __init__(
        self,
        per_minute: int | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()
        self._clock = clock
        self._sleep = sleep

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await self._sleep(start - now)
