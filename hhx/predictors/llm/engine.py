"""Send the calls a cache cannot answer: bounded concurrency, timeouts, retries, budget, progress.

Every successful response is committed to the cache the moment it arrives, so an interrupted run
loses nothing and a rerun sends only what is missing. An error that no retry can fix (bad key,
unknown model, bad request) stops the run at once with a one-line PredictorError.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from collections.abc import Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tqdm.auto import tqdm

from hhx.errors import PredictorError
from hhx.predictors.llm.cache import ResponseCache
from hhx.predictors.llm.cost import Budget, Prices
from hhx.predictors.llm.plan import Call
from hhx.predictors.llm.settings import LLMSettings
from hhx.predictors.llm.stats import RunStats
from hhx.predictors.llm.transport import (
    RateLimiter,
    Response,
    TransportError,
    backoff_delay,
    one_line,
)

log = logging.getLogger(__name__)


class Transport(Protocol):
    """A backend. Async ones implement `send`; batch ones (vLLM) set `batch` and `send_batch`."""

    backend: str
    prices: Prices
    batch: bool  # True: calls go through send_batch in chunks of max_concurrency
    cancellable: bool  # True: the engine may enforce timeout_s by cancelling `send`

    def identity(self) -> dict[str, Any]: ...

    async def send(self, call: Call) -> Response: ...

    def send_batch(self, calls: Sequence[Call]) -> list[Response | TransportError]: ...


@dataclass
class Outcome:
    response: Response | None
    cached: bool = False
    failure: str | None = None  # error kind or "budget_exhausted" when no response
    attempts: int = 0


def run_sync[T](coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion, also from code already inside an event loop (notebooks)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class Engine:
    def __init__(
        self,
        transport: Transport,
        cache: ResponseCache,
        settings: LLMSettings,
        stats: RunStats,
        budget: Budget,
        model_label: str,
        progress: bool | None = None,
        seed: int = 0,
    ) -> None:
        self.transport = transport
        self.cache = cache
        self.settings = settings
        self.stats = stats
        self.budget = budget
        self.model_label = model_label
        self.progress = progress
        self._rng = random.Random(seed)  # backoff jitter only

    # ---------------------------------------------------------------------------------------

    def run(self, calls: Sequence[Call]) -> dict[str, Outcome]:
        """Outcome per cache key for every call (identical requests are sent once)."""
        unique: dict[str, Call] = {}
        for call in calls:
            unique.setdefault(call.key, call)
        self.stats.calls_planned += len(unique)
        outcomes: dict[str, Outcome] = {}
        for key, data in self.cache.get_many(unique).items():
            response = Response.from_dict(data)
            outcomes[key] = Outcome(response, cached=True)
            self.stats.cache_hits += 1
            self.stats.cost_usd_cached += response.cost_usd
        todo = [call for key, call in unique.items() if key not in outcomes]
        if todo:
            if self.transport.batch:
                self._run_batches(todo, outcomes)
            else:
                run_sync(self._run_async(todo, outcomes))
        return outcomes

    # ---------------------------------------------------------------------------------------

    def _bar(self, total: int) -> tqdm:
        return tqdm(
            total=total,
            desc=f"{self.model_label}",
            unit="req",
            # None: tqdm's own choice (shown on a terminal, hidden in logs)
            disable=None if self.progress is None else not self.progress,
            mininterval=0.5,
            dynamic_ncols=True,
        )

    def _postfix(self, bar: tqdm) -> None:
        bar.set_postfix(
            errors=sum(self.stats.errors.values()),
            failed=sum(self.stats.failed_calls.values()),
            cost=f"${self.stats.cost_usd:.4f}",
            refresh=False,
        )

    def _accept(self, call: Call, response: Response) -> None:
        """Book-keeping for one successful response; committed to the cache right away."""
        self.cache.put(call.key, response.to_dict(), self.transport.backend, self.model_label)
        self.stats.responses_ok += 1
        self.stats.latencies.append(response.latency_s)
        self.stats.prompt_tokens += response.prompt_tokens
        self.stats.completion_tokens += response.completion_tokens
        self.stats.cost_usd += response.cost_usd
        for choice in response.choices:
            self.stats.finish_reasons[choice.finish_reason or "unknown"] += 1

    def _fail(self, reason: str) -> Outcome:
        self.stats.failed_calls[reason] += 1
        return Outcome(None, failure=reason)

    async def _send_once(self, call: Call) -> Response:
        if not self.transport.cancellable:
            return await self.transport.send(call)
        try:
            # The transport has its own timeout; this guard also catches a stalled body read.
            return await asyncio.wait_for(self.transport.send(call), self.settings.timeout_s)
        except TimeoutError:
            raise TransportError(
                "timeout", f"no answer within timeout_s={self.settings.timeout_s}"
            ) from None

    async def _attempts(self, call: Call, limiter: RateLimiter) -> Outcome:
        s = self.settings
        estimate = self.budget.estimate(call.messages, call.n)
        if not await self.budget.reserve(estimate):
            return self._fail("budget_exhausted")
        try:
            for attempt in range(s.max_retries + 1):
                await limiter.wait()
                self.stats.requests_sent += 1
                started = time.monotonic()
                try:
                    response = await self._send_once(call)
                except TransportError as exc:
                    self.stats.errors[exc.kind] += 1
                    if exc.fatal:
                        raise PredictorError(
                            f"model={s.name}: {exc.kind} from {self.transport.backend} "
                            f"({one_line(str(exc))}); stopping the run"
                        ) from None
                    if not exc.retryable or attempt == s.max_retries:
                        if exc.kind == "connection_error" and self.stats.responses_ok == 0:
                            # Nothing has ever answered: a wrong address or a server that is
                            # down, not a passing fault; failing every item slowly helps no one.
                            where = s.api_base or self.transport.backend
                            raise PredictorError(
                                f"model={s.name}: cannot reach {where} after {attempt + 1} "
                                f"attempts ({one_line(str(exc))}); check model.api_base and the "
                                "server"
                            ) from None
                        log.warning("%s: giving up on a request after %d attempt(s): %s (%s)",
                                    s.name, attempt + 1, exc.kind, one_line(str(exc)))
                        return self._fail(exc.kind)
                    self.stats.retries += 1
                    delay = backoff_delay(
                        attempt, s.retry_base_s, s.retry_max_s, exc.retry_after, self._rng
                    )
                    log.debug("%s: %s (%s); retry %d in %.2f s", s.name, exc.kind,
                              one_line(str(exc)), attempt + 1, delay)
                    await asyncio.sleep(delay)
                    continue
                response.latency_s = time.monotonic() - started
                per_choice = response.completion_tokens // max(1, len(response.choices))
                await self.budget.commit(estimate, response.cost_usd, per_choice)
                estimate = 0.0
                self._accept(call, response)
                return Outcome(response, attempts=attempt + 1)
            raise AssertionError("unreachable")  # the loop always returns
        finally:
            if estimate:
                await self.budget.commit(estimate, 0.0, 0)

    async def _run_async(self, todo: list[Call], outcomes: dict[str, Outcome]) -> None:
        limiter = RateLimiter(self.settings.requests_per_minute)
        queue: Iterator[Call] = iter(todo)
        bar = self._bar(len(todo))

        async def worker() -> None:
            for call in queue:  # a shared iterator: each call is taken by exactly one worker
                outcomes[call.key] = await self._attempts(call, limiter)
                bar.update(1)
                self._postfix(bar)

        workers = [
            asyncio.create_task(worker())
            for _ in range(min(self.settings.max_concurrency, len(todo)))
        ]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            bar.close()

    # ---------------------------------------------------------------------------------------

    def _run_batches(self, todo: list[Call], outcomes: dict[str, Outcome]) -> None:
        size = self.settings.max_concurrency
        bar = self._bar(len(todo))
        try:
            for start in range(0, len(todo), size):
                chunk = todo[start : start + size]
                cost = sum(self.budget.estimate(c.messages, c.n) for c in chunk)
                if not self.budget.reserve_sync(cost):
                    for call in todo[start:]:
                        outcomes[call.key] = self._fail("budget_exhausted")
                    return
                self.stats.requests_sent += len(chunk)
                results = self.transport.send_batch(chunk)
                for call, result in zip(chunk, results, strict=True):
                    if isinstance(result, TransportError):
                        self.stats.errors[result.kind] += 1
                        if result.fatal:
                            raise PredictorError(
                                f"model={self.settings.name}: {result.kind} from "
                                f"{self.transport.backend} ({one_line(str(result))})"
                            )
                        outcomes[call.key] = self._fail(result.kind)
                    else:
                        self.budget.spent += result.cost_usd
                        self._accept(call, result)
                        outcomes[call.key] = Outcome(result, attempts=1)
                bar.update(len(chunk))
                self._postfix(bar)
        finally:
            bar.close()
