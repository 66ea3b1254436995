"""Send the calls a cache cannot answer: bounded concurrency, timeouts, retries, budget, progress.

- Every successful response is committed to the cache the moment it arrives, so an interrupted run
  loses nothing and a rerun sends only what is missing.
- Single flight: a call is claimed in the cache before it is sent; a call another live process is
  sending is not sent again but waited for (`ResponseCache.claim`).
- The first request goes alone; the others follow once one has succeeded. An error no retry can
  fix (a refused key, an unknown model, a request the endpoint rejects, a host that does not
  resolve) stops the run at once with one line naming the endpoint and the fix, after one
  request, not one per concurrent worker. Calls that keep failing stop the run too (nothing ever
  answered after 3 calls, or a long streak of failures): retrying a dead endpoint for hours
  helps no one.
- A cut answer that does not parse (finish_reason=length) is asked again with a larger budget
  (`RetryPolicy`), right after the first, so a prompt cache still holds its prompt.
- Ctrl-C: no new request starts; requests in flight get `grace_s` to land in the cache, then the
  rest is cancelled, and `Interrupted` says how much is cached and that the same command resumes.
- A full disk under the cache (`StorageFull`): no new request starts, every request in flight
  is awaited and stored (the cache's reserve), then the run stops with one line.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import signal
import threading
import time
from collections import deque
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from hhx.errors import HhxError, Interrupted, PredictorError
from hhx.predictors.llm.cache import ResponseCache, StorageFull
from hhx.predictors.llm.cost import Budget
from hhx.predictors.llm.deadline import within
from hhx.predictors.llm.plan import Call
from hhx.predictors.llm.progress import INTERVAL_S, Progress
from hhx.predictors.llm.settings import NO_KEY, LLMSettings
from hhx.predictors.llm.stats import RunStats
from hhx.predictors.llm.transport import (
    RETRYABLE,
    AsyncTransport,
    BatchTransport,
    RateLimiter,
    Response,
    Transport,
    TransportError,
    backoff_delay,
    fix_for_request_error,
)
from hhx.secrets import clean_line

log = logging.getLogger(__name__)
DEFERRED = object()  # the call is being answered by another process: come back later
FIRST_FAILURES_STOP = 3  # calls given up before anything ever answered: the endpoint is broken
POLL_S = 0.25  # how often a call another process is sending is looked up


class RetryPolicy(Protocol):
    def bigger(self, call: Call, response: Response) -> Call | None:
        """The same request with a larger budget when `response` holds a cut, unparsable answer."""
        ...


@dataclass
class Outcome:
    response: Response | None
    cached: bool = False
    failure: str | None = None  # error kind, "budget_exhausted" or "stopped" when no response
    attempts: int = 0
    retry: Outcome | None = None  # the request asked again with a larger budget (a cut answer)
    retry_max_tokens: int | None = None


@dataclass
class _Job:
    call: Call
    outcome: Outcome | None = None  # already answered (from the cache): only a retry is missing
    not_before: float = 0.0
    parent: Outcome | None = None  # batch backends: the cut answer this job asks again


class _Control:
    """Why the run stops, shared by the workers."""

    def __init__(self) -> None:
        self.stopping = False
        self.error: HhxError | None = None
        self.interrupts = 0
        self.wake = asyncio.Event()

    def stop(self, error: HhxError | None = None) -> None:
        if error is not None and self.error is None:
            self.error = error
        self.stopping = True
        self.wake.set()

    async def sleep(self, seconds: float) -> None:
        """Sleep, but wake up when the run stops."""
        if self.stopping or seconds <= 0:
            return
        try:
            await asyncio.wait_for(self.wake.wait(), seconds)
        except TimeoutError:
            pass


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
    _warm: bool  # set per run (_run_async): a response has come back
    _warm_lock: asyncio.Lock

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
        retry_policy: RetryPolicy | None = None,
        progress_interval_s: float = INTERVAL_S,
        grace_s: float = 1.0,
        served_models: Sequence[str] = (),
    ) -> None:
        self.transport = transport
        self.cache = cache
        self.settings = settings
        self.stats = stats
        self.budget = budget
        self.model_label = model_label
        self.progress = progress
        self.retry_policy = retry_policy
        self.progress_interval_s = progress_interval_s
        self.grace_s = grace_s
        self.served_models = list(served_models)
        self._rng = random.Random(seed)  # backoff jitter only
        self._fail_streak = 0
        self._total = 0
        self._answered = 0

    # ---------------------------------------------------------------------------------------

    def run(self, calls: Sequence[Call]) -> dict[str, Outcome]:
        """Outcome per cache key for every call (identical requests are sent once)."""
        unique: dict[str, Call] = {}
        for call in calls:
            unique.setdefault(call.key, call)
        self.stats.calls_planned += len(unique)
        outcomes: dict[str, Outcome] = {}
        jobs: list[_Job] = []
        hits = self.cache.get_many(unique)
        for key, call in unique.items():
            if key in hits:
                outcome = self._cached(hits[key])
                outcomes[key] = outcome
                if self._needs_retry(call, outcome):
                    jobs.append(_Job(call, outcome))
            else:
                jobs.append(_Job(call))
        self._total, self._answered = len(unique), len(hits)
        reset = getattr(self.transport, "reset", None)
        if reset is not None:
            reset()  # an earlier interrupted run left the transport aborted
        if jobs:
            if self.transport.batch:
                self._run_batches(jobs, outcomes)
            else:
                run_sync(self._run_async(jobs, outcomes))
        return outcomes

    # --- shared parts ---------------------------------------------------------------------------

    def _cached(self, data: dict[str, Any]) -> Outcome:
        response = Response.from_dict(data)
        self.stats.cache_hits += 1
        self.stats.cost_usd_cached += response.cost_usd
        return Outcome(response, cached=True)

    def _needs_retry(self, call: Call, outcome: Outcome) -> bool:
        return bool(
            self.retry_policy is not None
            and self.settings.truncation_retries > 0
            and outcome.response is not None
            and self.retry_policy.bigger(call, outcome.response) is not None
        )

    def _store(self, call: Call, response: Response, ctl: _Control | None) -> None:
        """Book-keeping for one successful response, committed to the cache right away."""
        self._answered += 1
        self.stats.responses_ok += 1
        self.stats.latencies.append(response.latency_s)
        self.stats.prompt_tokens += response.prompt_tokens
        self.stats.completion_tokens += response.completion_tokens
        self.stats.cost_usd += response.cost_usd
        for choice in response.choices:
            self.stats.finish_reasons[choice.finish_reason or "unknown"] += 1
        try:
            self.cache.put(call.key, response.to_dict(), self.transport.backend, self.model_label)
        except StorageFull as exc:
            if not exc.saved:
                self.stats.responses_unsaved += 1  # kept in memory for this run's predictions
            if ctl is None:
                raise
            ctl.stop(exc)

    def _fail(self, reason: str) -> Outcome:
        self.stats.failed_calls[reason] += 1
        return Outcome(None, failure=reason)

    def _fatal(self, exc: TransportError) -> PredictorError:
        """One line: what failed, where, and the setting that fixes it."""
        s = self.settings
        status = f"HTTP {exc.status} " if exc.status else ""
        detail = clean_line(str(exc), limit=240)
        if exc.kind == "auth_error":
            fix = (f"export {s.api_key_env} with a valid key" if _no_key(s)
                   else f"check the key in {s.api_key_env}")
        elif exc.kind == "permission_denied":
            fix = f"the key in {s.api_key_env} may not use {s.model_id}; check model.model_id"
        elif exc.kind == "not_found":
            served = ", ".join(self.served_models[:8])
            fix = (f"the endpoint does not serve {s.model_id}; check model.model_id/model.name"
                   + (f" (it serves: {served})" if served else ""))
        elif exc.kind == "dns_error":
            fix = "check model.api_base and the network"
        else:
            fix = exc.fix or fix_for_request_error(str(exc), s.json_schema_style)
        return PredictorError(
            f"model={s.name}: {status}{exc.kind} from {self.transport.endpoint} ({detail}); "
            f"fix: {fix}; stopping the run (nothing is retried)"
        )

    def _given_up(self, exc: TransportError, attempts: int) -> Outcome:
        """A call that failed after its retries; stops the run when calls keep failing."""
        s = self.settings
        outcome = self._fail(exc.kind)
        if exc.kind not in RETRYABLE:
            return outcome  # an item's own failure (context too long, filtered): not the endpoint
        self._fail_streak += 1
        # Nothing answered, now or before (no cached answer either): the endpoint is broken.
        never = self.stats.responses_ok == 0 and self.stats.cache_hits == 0
        limit = FIRST_FAILURES_STOP if never else max(8, 2 * s.max_concurrency)
        if self._fail_streak >= limit:
            what = ("no request has succeeded" if never
                    else f"{self._fail_streak} requests in a row failed")
            raise PredictorError(
                f"model={s.name}: {what} at {self.transport.endpoint} after {attempts} attempts "
                f"each ({exc.kind}: {clean_line(str(exc), limit=160)}); check the server and "
                "model.api_base; answers received so far are cached: rerun the same command"
            )
        log.warning("%s: giving up on a request after %d attempt(s): %s (%s)", s.name, attempts,
                    exc.kind, clean_line(str(exc)))
        return outcome

    def _interrupted(self) -> Interrupted:
        return Interrupted(
            f"interrupted: {self._answered} of {self._total} requests answered and cached in "
            f"{self.cache.path}; run the same command again to resume (nothing answered is sent "
            "again)"
        )

    def _progress_note(self, progress: Progress) -> None:
        counts: dict[str, Any] = {"errors": sum(self.stats.errors.values()),
                                  "failed": sum(self.stats.failed_calls.values())}
        if self.stats.cost_usd:
            counts["cost"] = f"${self.stats.cost_usd:.4f}"
        progress.note(**counts)

    # --- asynchronous backends -------------------------------------------------------------

    async def _send_once(self, call: Call) -> Response:
        transport = cast(AsyncTransport, self.transport)  # not `batch`: it has `send`
        if not transport.cancellable:
            return await transport.send(call)
        try:
            # The deadline counts server time only (deadline.py): an answer that arrived while
            # this process was starved is used, not paid for again.
            return await within(transport.send(call), self.settings.timeout_s)
        except TimeoutError:
            raise TransportError(
                "timeout", f"no answer within timeout_s={self.settings.timeout_s}"
            ) from None

    async def _attempts(self, call: Call, limiter: RateLimiter, ctl: _Control) -> Outcome:
        s = self.settings
        estimate = self.budget.estimate(call.messages, call.n, call.max_tokens)
        if not await self.budget.reserve(estimate):
            return self._fail("budget_exhausted")
        try:
            for attempt in range(s.max_retries + 1):
                await limiter.wait()
                if ctl.stopping:
                    return Outcome(None, failure="stopped")
                self.stats.requests_sent += 1
                started = time.monotonic()
                try:
                    response = await self._send_once(call)
                except TransportError as exc:
                    self.stats.errors[exc.kind] += 1
                    if exc.fatal:
                        raise self._fatal(exc) from None
                    if not exc.retryable or attempt == s.max_retries:
                        return self._given_up(exc, attempt + 1)
                    self.stats.retries += 1
                    delay = backoff_delay(
                        attempt, s.retry_base_s, s.retry_max_s, exc.retry_after, self._rng
                    )
                    log.debug("%s: %s (%s); retry %d in %.2f s", s.name, exc.kind,
                              clean_line(str(exc)), attempt + 1, delay)
                    await ctl.sleep(delay)
                    continue
                response.latency_s = time.monotonic() - started
                per_choice = response.completion_tokens // max(1, len(response.choices))
                await self.budget.commit(estimate, response.cost_usd, per_choice)
                estimate = 0.0
                self._fail_streak = 0
                self._store(call, response, ctl)
                return Outcome(response, attempts=attempt + 1)
            raise AssertionError("unreachable")  # the loop always returns
        finally:
            if estimate:
                await self.budget.commit(estimate, 0.0, 0)

    async def _obtain(self, call: Call, limiter: RateLimiter, ctl: _Control) -> Any:
        """The call's Outcome, or DEFERRED while another process is sending it."""
        if ctl.stopping:
            return Outcome(None, failure="stopped")
        try:
            state = self.cache.claim(call.key)
        except StorageFull as exc:
            ctl.stop(exc)
            return Outcome(None, failure="stopped")
        if state == "answered":
            data = self.cache.get(call.key)
            if data is not None:
                self._answered += 1
                return self._cached(data)
            state = "mine"  # pragma: no cover - only if a row vanished between two reads
        if state == "busy":
            return DEFERRED
        outcome: Outcome | None = None
        try:
            if not self._warm:
                # The first request goes alone: a wrong key, model or setting costs one request.
                async with self._warm_lock:
                    if not self._warm:
                        outcome = await self._attempts(call, limiter, ctl)
                        self._warm = outcome.response is not None
            if outcome is None:
                outcome = await self._attempts(call, limiter, ctl)
            return outcome
        finally:
            if outcome is None or outcome.response is None:
                self.cache.release([call.key])

    async def _obtain_waiting(self, call: Call, limiter: RateLimiter, ctl: _Control) -> Outcome:
        while True:
            result = await self._obtain(call, limiter, ctl)
            if result is not DEFERRED:
                return result
            await ctl.sleep(POLL_S)

    async def _process(self, job: _Job, limiter: RateLimiter, ctl: _Control) -> Any:
        outcome = job.outcome
        if outcome is None:
            outcome = await self._obtain(job.call, limiter, ctl)
            if outcome is DEFERRED:
                return DEFERRED
        call, current = job.call, outcome
        for _ in range(self.settings.truncation_retries):
            if current.response is None or self.retry_policy is None or ctl.stopping:
                break
            bigger = self.retry_policy.bigger(call, current.response)
            if bigger is None:
                break
            self.stats.truncation_retries += 1
            current.retry = await self._obtain_waiting(bigger, limiter, ctl)
            current.retry_max_tokens = bigger.max_tokens
            call, current = bigger, current.retry
        return outcome

    async def _run_async(self, jobs: list[_Job], outcomes: dict[str, Outcome]) -> None:
        loop = asyncio.get_running_loop()
        ctl = _Control()
        limiter = RateLimiter(self.settings.requests_per_minute)
        self._warm = self.stats.responses_ok > 0  # a later task of the same run is warm already
        self._warm_lock = asyncio.Lock()
        queue: deque[_Job] = deque(jobs)
        waiting: list[_Job] = []
        progress = Progress(self.model_label, len(jobs), self.progress, self.progress_interval_s)

        async def worker() -> None:
            while not ctl.stopping:
                if queue:
                    job = queue.popleft()
                elif waiting:
                    job = min(waiting, key=lambda j: j.not_before)
                    waiting.remove(job)
                    await ctl.sleep(job.not_before - loop.time())
                    if ctl.stopping:
                        return
                else:
                    return
                try:
                    result = await self._process(job, limiter, ctl)
                except HhxError as exc:  # fatal: the others stop too
                    ctl.stop(exc)
                    loop.call_later(self.grace_s, cancel_all)
                    return
                if result is DEFERRED:
                    job.not_before = loop.time() + POLL_S
                    waiting.append(job)
                    continue
                outcomes[job.call.key] = result
                progress.update(1)
                self._progress_note(progress)

        workers = [asyncio.create_task(worker())
                   for _ in range(min(self.settings.max_concurrency, len(jobs)))]

        def cancel_all() -> None:
            for task in workers:
                task.cancel()
            abort = getattr(self.transport, "abort", None)
            if abort is not None:
                abort()

        def on_sigint() -> None:
            ctl.interrupts += 1
            ctl.stop()
            if ctl.interrupts == 1:
                progress.note(stopping=f"Ctrl-C, finishing requests in flight ({self.grace_s:g} s)")
                loop.call_later(self.grace_s, cancel_all)
            else:
                cancel_all()

        handled = _add_sigint_handler(loop, on_sigint)
        self.cache.start_heartbeat()
        try:
            results = await asyncio.gather(*workers, return_exceptions=True)
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGINT)
            self.cache.stop_heartbeat()
            self.cache.release_all()
            progress.close()
        errors = [r for r in results
                  if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)]
        if errors:
            raise errors[0]
        if isinstance(ctl.error, StorageFull) and self.stats.responses_unsaved:
            raise StorageFull(f"{ctl.error}; {self.stats.responses_unsaved} answers received "
                              "could not be stored", saved=False)
        if ctl.error is not None:
            raise ctl.error
        if ctl.interrupts:
            raise self._interrupted()

    # --- batch backends (vLLM) ------------------------------------------------------------------

    def _batch_round(self, jobs: list[_Job], outcomes: dict[str, Outcome],
                     progress: Progress) -> list[_Job]:
        """Send the jobs in chunks; returns the retries that cut answers call for."""
        size = self.settings.max_concurrency
        retries: list[_Job] = []
        for start in range(0, len(jobs), size):
            chunk = jobs[start : start + size]
            send: list[_Job] = []
            for job in chunk:
                if job.outcome is not None:
                    continue
                while (state := self.cache.claim(job.call.key)) == "busy":
                    time.sleep(POLL_S)  # another process is answering it
                if state == "answered":
                    job.outcome = self._cached(self.cache.get(job.call.key) or {})
                else:
                    send.append(job)
            cost = sum(self.budget.estimate(j.call.messages, j.call.n, j.call.max_tokens)
                       for j in send)
            if send and not self.budget.reserve_sync(cost):
                for job in jobs[start:]:
                    job.outcome = job.outcome or self._fail("budget_exhausted")
                self.cache.release(j.call.key for j in send)
                send = []
            full: StorageFull | None = None
            if send:
                self.stats.requests_sent += len(send)
                results = cast(BatchTransport, self.transport).send_batch([j.call for j in send])
                fatal: TransportError | None = None
                for job, result in zip(send, results, strict=True):
                    if isinstance(result, TransportError):
                        self.stats.errors[result.kind] += 1
                        fatal = fatal or (result if result.fatal else None)
                        job.outcome = self._fail(result.kind)
                        self.cache.release([job.call.key])
                        continue
                    self.budget.spent += result.cost_usd
                    job.outcome = Outcome(result, attempts=1)
                    try:  # every answer of the batch is stored before a full disk stops the run
                        self._store(job.call, result, None)
                    except StorageFull as exc:
                        full = full or exc
                if fatal is not None:
                    raise self._fatal(fatal)
            if full is not None:
                raise full
            for job in chunk:
                assert job.outcome is not None
                outcomes.setdefault(job.call.key, job.outcome)
                response = job.outcome.response
                if response is None or not self._needs_retry(job.call, job.outcome):
                    continue
                bigger = self.retry_policy.bigger(job.call, response)  # type: ignore[union-attr]
                if bigger is not None:
                    self.stats.truncation_retries += 1
                    job.outcome.retry_max_tokens = bigger.max_tokens
                    retries.append(_Job(bigger, parent=job.outcome))
            progress.update(len(chunk))
            self._progress_note(progress)
        return retries

    def _run_batches(self, jobs: list[_Job], outcomes: dict[str, Outcome]) -> None:
        progress = Progress(self.model_label, len(jobs), self.progress, self.progress_interval_s)
        self.cache.start_heartbeat()
        try:
            pending = jobs
            for depth in range(self.settings.truncation_retries + 1):
                if not pending:
                    break
                retries = self._batch_round(pending, {} if depth else outcomes, progress)
                for job in pending:
                    if job.parent is not None:
                        job.parent.retry = job.outcome
                pending = retries if depth < self.settings.truncation_retries else []
        except KeyboardInterrupt:
            raise self._interrupted() from None
        finally:
            self.cache.stop_heartbeat()
            self.cache.release_all()
            progress.close()


def _no_key(settings: LLMSettings) -> bool:
    return not settings.api_key_env or not os.environ.get(settings.api_key_env) or (
        os.environ.get(settings.api_key_env) == NO_KEY
    )


def _add_sigint_handler(loop: asyncio.AbstractEventLoop, handler: Any) -> bool:
    """Ctrl-C goes to `handler` while requests run (main thread only; False where impossible)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        loop.add_signal_handler(signal.SIGINT, handler)
    except (NotImplementedError, RuntimeError, ValueError):
        return False
    return True
