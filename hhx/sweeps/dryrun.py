"""What a cell would send before anything is paid: prompts x draws, requests, tokens and cost.

Tokens are estimated from the prompt text (about 4 characters a token for the expected figure);
the completion side is bounded by `decoding.max_tokens` (else the budget's conservative default,
capped by the model's output limit). Cost uses the model's prices (its config, else litellm's
local cost map, else zero for local weights) — the same prices the run's budget applies
(hhx/predictors/llm/cost.py). Cached answers are not subtracted: figures are what the cell could
cost at most, not what a rerun will.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from omegaconf import DictConfig

from hhx.catalog import backend_spec

CHARS_PER_TOKEN = 4.0  # typical English prompt text


def estimate(cfg: DictConfig, examples: pd.DataFrame) -> dict[str, Any]:
    """The size and price of evaluating `examples` with this config's model."""
    spec = backend_spec(cfg.model.backend)
    n = len(examples)
    out: dict[str, Any] = {"prompts": n, "draws": 0, "requests": 0, "prompt_tokens": 0,
                           "completion_tokens_max": 0, "cost_usd": 0.0, "cost_usd_max": 0.0,
                           "price_source": "none"}
    if not spec.sends_requests:
        return out  # no_change, XGBoost: no request, no cost
    from hhx.predictors.llm.cost import (
        CHARS_PER_TOKEN_LOW,
        DEFAULT_COMPLETION_ESTIMATE,
        prices_for,
    )
    from hhx.predictors.llm.messages import build_messages
    from hhx.predictors.llm.settings import settings_from_config

    settings = settings_from_config(cfg)
    k = settings.k
    requests = n if settings.use_n else n * k
    chars = sum(sum(len(m["content"]) + 16 for m in msgs) for msgs in build_messages(examples))
    prices = prices_for(settings.model_id, settings.input_cost_per_token,
                        settings.output_cost_per_token, use_litellm_map=spec.litellm_prices)
    # The answer budget the request engine sends (decoding.max_tokens: auto | a number | none).
    from hhx.predictors.llm.schema import answer_tokens
    from hhx.scoring.parser import answer_spec
    from hhx.tasks.registry import as_task

    budget = settings.answer_budget(answer_tokens(answer_spec(as_task(cfg.task))))
    per_choice = budget or DEFAULT_COMPLETION_ESTIMATE
    if prices.max_output_tokens:
        per_choice = min(int(per_choice), int(prices.max_output_tokens))
    # Without `n` every draw resends the prompt; with it, the prompt goes once per example.
    prompt_sends = requests
    expected_prompt = chars / CHARS_PER_TOKEN * prompt_sends / max(n, 1)
    bound_prompt = chars / CHARS_PER_TOKEN_LOW * prompt_sends / max(n, 1)
    completion_max = int(per_choice) * n * k
    # The expected completion: a short JSON answer (the paper's prompts ask for one line);
    # reasoning models spend more, hence the bound next to it.
    completion_expected = min(int(per_choice), 64) * n * k
    out.update(
        draws=n * k,
        requests=requests,
        prompt_tokens=int(expected_prompt),
        completion_tokens_max=completion_max,
        cost_usd=expected_prompt * prices.input_per_token
        + completion_expected * prices.output_per_token,
        cost_usd_max=bound_prompt * prices.input_per_token
        + completion_max * prices.output_per_token,
        price_source=prices.source,
    )
    return out
