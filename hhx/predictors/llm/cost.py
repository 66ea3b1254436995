"""Token prices, conservative request estimates and the run budget (model.max_cost_usd).

Prices: the model config's per-token costs when set, else litellm's local cost map, else zero
(local models). A request is only sent if the money already spent, plus the estimates of
requests in flight, plus this request's estimate stays within the budget; estimates are upper
bounds, so the budget is never exceeded.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from hhx.predictors.llm.messages import Messages

# Before any answer is seen and with no max_tokens, assume this many completion tokens a choice.
DEFAULT_COMPLETION_ESTIMATE = 4096
CHARS_PER_TOKEN_LOW = 2.0  # real text runs ~4 characters a token: halving it over-counts tokens


@dataclass(frozen=True)
class Prices:
    input_per_token: float
    output_per_token: float
    source: str  # "config", "litellm" or "none"
    max_output_tokens: int | None = None


def litellm_model_info(model_id: str) -> dict | None:
    """litellm's local cost-map entry for a model, or None if unmapped (nothing is fetched)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # heavy (~2 s): only for backends that price requests

    try:
        return dict(litellm.get_model_info(model_id))
    except Exception:  # litellm raises a bare Exception for unmapped models
        return None


def prices_for(
    model_id: str,
    input_cost: float | None,
    output_cost: float | None,
    use_litellm_map: bool = True,
) -> Prices:
    if input_cost is not None or output_cost is not None:
        return Prices(float(input_cost or 0.0), float(output_cost or 0.0), "config")
    info = litellm_model_info(model_id) if use_litellm_map else None
    if info and (info.get("input_cost_per_token") or info.get("output_cost_per_token")):
        return Prices(
            float(info.get("input_cost_per_token") or 0.0),
            float(info.get("output_cost_per_token") or 0.0),
            "litellm",
            info.get("max_output_tokens"),
        )
    return Prices(0.0, 0.0, "none")


def cost_from_usage(prices: Prices, prompt_tokens: int, completion_tokens: int) -> float:
    return prompt_tokens * prices.input_per_token + completion_tokens * prices.output_per_token


def prompt_chars(messages: Messages) -> int:
    return sum(len(m["content"]) for m in messages) + 16 * len(messages)


class Budget:
    """Reserve-then-commit spending against an optional limit, safe under asyncio concurrency."""

    def __init__(self, limit_usd: float | None, prices: Prices) -> None:
        self.limit = limit_usd
        self.prices = prices
        self.spent = 0.0
        self.reserved = 0.0
        self.exhausted = False
        self._max_seen_completion = 0  # completion tokens per choice, largest seen
        self._cond: asyncio.Condition | None = None

    def estimate(self, messages: Messages, n: int, max_tokens: int | None) -> float:
        """An upper bound on a request's cost (its answer budget bounds the completion)."""
        if self.prices.input_per_token == 0 and self.prices.output_per_token == 0:
            return 0.0
        prompt = prompt_chars(messages) / CHARS_PER_TOKEN_LOW
        if max_tokens is not None:
            per_choice = max_tokens
        elif self._max_seen_completion:
            per_choice = int(self._max_seen_completion * 1.5) + 64
        else:
            per_choice = DEFAULT_COMPLETION_ESTIMATE
        if self.prices.max_output_tokens:
            per_choice = min(per_choice, int(self.prices.max_output_tokens))
        return cost_from_usage(self.prices, int(prompt) + 1, per_choice * n)

    async def reserve(self, amount: float) -> bool:
        """Wait while requests in flight might free room; False once the budget cannot fit it."""
        if self.limit is None:
            return True
        if self._cond is None:
            self._cond = asyncio.Condition()
        async with self._cond:
            while True:
                if self.exhausted:
                    return False
                if self.spent + self.reserved + amount <= self.limit:
                    self.reserved += amount
                    return True
                if self.reserved <= 0 or self.spent + amount > self.limit:
                    self.exhausted = True
                    self._cond.notify_all()
                    return False
                await self._cond.wait()

    async def commit(self, reserved: float, actual: float, completion_per_choice: int) -> None:
        self.spent += actual
        self._max_seen_completion = max(self._max_seen_completion, completion_per_choice)
        if self.limit is None:
            return
        assert self._cond is not None
        async with self._cond:
            self.reserved -= reserved
            self._cond.notify_all()

    def reserve_sync(self, amount: float) -> bool:
        """Synchronous variant for batch backends (nothing in flight between batches)."""
        if self.limit is None:
            return True
        if self.exhausted or self.spent + amount > self.limit:
            self.exhausted = True
            return False
        return True
