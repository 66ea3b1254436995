"""Run metrics of an LLM predictor: requests, cache hits, errors, latency, tokens, cost, validity.

Metric names are flat and MLflow-safe (letters, digits, `_`, `.`, `/`). Besides the counts of
requests and errors: `llm/draws_truncated` (final draws cut by the answer budget,
finish_reason=length), `llm/truncation_retries` (cut, unparsable answers asked again with a larger
budget), `llm/draws_missing` (draws whose request failed or whose choice never came back),
`llm/draw_coverage` (draws answered / draws planned) and `llm/examples_incomplete` (examples left
unanswered because draws were missing; see aggregation.min_draws).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from hhx.scoring.parser import error_code

_UNSAFE = re.compile(r"[^A-Za-z0-9_./-]")


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name)


@dataclass
class RunStats:
    calls_planned: int = 0
    requests_sent: int = 0  # every attempt that reached the backend, retries included
    responses_ok: int = 0
    cache_hits: int = 0
    retries: int = 0
    errors: Counter = field(default_factory=Counter)  # kind -> attempts that failed with it
    failed_calls: Counter = field(default_factory=Counter)  # reason -> calls given up
    latencies: list[float] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0  # spent by requests sent in this run
    cost_usd_cached: float = 0.0  # what the cached responses cost when first made
    finish_reasons: Counter = field(default_factory=Counter)
    draws_total: int = 0
    draws_answered: int = 0
    draws_valid: int = 0
    parse_errors: Counter = field(default_factory=Counter)  # error family -> draws
    examples: int = 0
    examples_failed: int = 0
    examples_incomplete: int = 0  # unanswered because draws were missing (min_draws)
    examples_too_few_valid: int = 0  # answered draws, but fewer valid than min_draws
    draws_missing: int = 0
    draws_truncated: int = 0  # final draws with finish_reason=length
    truncation_retries: int = 0  # calls asked again with a larger budget
    responses_unsaved: int = 0  # answers the full disk could not store (kept in memory)

    def record_draw(self, valid: bool, error: str | None) -> None:
        self.draws_answered += 1
        if valid:
            self.draws_valid += 1
        elif error:
            self.parse_errors[error_code(error)] += 1

    def metrics(self) -> dict[str, float]:
        out: dict[str, float] = {
            "llm/calls_planned": float(self.calls_planned),
            "llm/requests_sent": float(self.requests_sent),
            "llm/responses_ok": float(self.responses_ok),
            "llm/cache_hits": float(self.cache_hits),
            "llm/retries": float(self.retries),
            "llm/errors": float(sum(self.errors.values())),
            "llm/failed_calls": float(sum(self.failed_calls.values())),
            "llm/latency_p50_s": percentile(self.latencies, 50),
            "llm/latency_p90_s": percentile(self.latencies, 90),
            "llm/latency_p99_s": percentile(self.latencies, 99),
            "llm/prompt_tokens": float(self.prompt_tokens),
            "llm/completion_tokens": float(self.completion_tokens),
            "llm/cost_usd": float(self.cost_usd),
            "llm/cost_usd_cached": float(self.cost_usd_cached),
            "llm/draws": float(self.draws_total),
            "llm/draws_answered": float(self.draws_answered),
            "llm/draws_missing": float(self.draws_missing),
            "llm/draws_truncated": float(self.draws_truncated),
            "llm/truncation_retries": float(self.truncation_retries),
            "llm/draw_valid_rate": (
                self.draws_valid / self.draws_total if self.draws_total else math.nan
            ),
            "llm/draw_coverage": (
                self.draws_answered / self.draws_total if self.draws_total else math.nan
            ),
            "llm/examples": float(self.examples),
            "llm/examples_failed": float(self.examples_failed),
            "llm/examples_incomplete": float(self.examples_incomplete),
            "llm/examples_too_few_valid": float(self.examples_too_few_valid),
            "llm/responses_unsaved": float(self.responses_unsaved),
        }
        for kind, count in sorted(self.errors.items()):
            out[_safe(f"llm/error/{kind}")] = float(count)
        for reason, count in sorted(self.failed_calls.items()):
            out[_safe(f"llm/failed/{reason}")] = float(count)
        for code, count in sorted(self.parse_errors.items()):
            out[_safe(f"llm/parse_error/{code}")] = float(count)
        for reason, count in sorted(self.finish_reasons.items()):
            out[_safe(f"llm/finish_reason/{reason}")] = float(count)
        # No value (no latency measured, no draws) is left out rather than logged as NaN.
        return {k: v for k, v in out.items() if not math.isnan(v)}
