"""Draws -> requests: which calls answer which draws, with which seed, under which cache key.

With `n` (model.supports_n) one request returns all K draws; otherwise draw i is its own request
with seed + i, so draws differ and each can be cached and retried on its own. A call carries its
answer budget (`max_tokens`, part of its key): a cut answer asked again with a larger budget is
another request with another key (`with_budget`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hhx.predictors.llm.cache import cache_key
from hhx.predictors.llm.messages import Messages
from hhx.predictors.llm.settings import LLMSettings

KEY_VERSION = 1  # bump when the meaning of a cached response changes


@dataclass(frozen=True)
class Call:
    """One request: the draws it answers, its seed and its cache key."""

    example: int  # position in the examples frame
    draws: tuple[int, ...]  # draw indices this call returns, in choice order
    seed: int | None
    messages: Messages
    key: str
    schema: dict[str, Any] | None = None  # constrained decoding: the answer's JSON schema
    max_tokens: int | None = None  # the answer budget sent (None: no limit sent)

    @property
    def n(self) -> int:
        return len(self.draws)


def request_identity(
    settings: LLMSettings,
    model_identity: dict[str, Any],
    messages: Messages,
    draw: int,
    seed: int | None,
    n: int,
    schema: dict[str, Any] | None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """Everything that determines an answer. Names, timeouts, concurrency and keys are not in it."""
    params = dict(settings.params)
    if max_tokens is not None:
        params["max_tokens"] = max_tokens
    return {
        "v": KEY_VERSION,
        "backend": settings.backend,
        "model": model_identity,
        "params": params,
        "extra": settings.extra,
        "schema": schema,
        "messages": messages,
        "draw": draw,
        "seed": seed,
        "n": n,
    }


def draw_seed(base: int | None, draw: int) -> int | None:
    return None if base is None else base + draw


def plan_calls(
    all_messages: list[Messages],
    settings: LLMSettings,
    model_identity: dict[str, Any],
    schema: dict[str, Any] | None = None,
    max_tokens: int | None = None,
) -> list[list[Call]]:
    """The calls of each example, in example order."""
    plans: list[list[Call]] = []
    for example, messages in enumerate(all_messages):
        if settings.use_n:
            draw_groups = [tuple(range(settings.k))]
        else:
            draw_groups = [(d,) for d in range(settings.k)]
        calls = []
        for draws in draw_groups:
            seed = draw_seed(settings.seed, draws[0])
            ident = request_identity(
                settings, model_identity, messages, draws[0], seed, len(draws), schema, max_tokens
            )
            calls.append(Call(example, draws, seed, messages, cache_key(ident), schema, max_tokens))
        plans.append(calls)
    return plans


def with_budget(
    call: Call, max_tokens: int, settings: LLMSettings, model_identity: dict[str, Any]
) -> Call:
    """The same request with another answer budget (and so another cache key)."""
    ident = request_identity(
        settings, model_identity, call.messages, call.draws[0], call.seed, call.n, call.schema,
        max_tokens,
    )
    return replace(call, key=cache_key(ident), max_tokens=max_tokens)
