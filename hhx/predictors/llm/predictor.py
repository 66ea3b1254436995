"""The Predictor contract for every LLM backend: plan draws, send what the cache lacks, parse
each draw, aggregate K draws, and keep per-example details and run metrics.

Each task's requests carry its answer budget (`LLMSettings.answer_budget`). A draw cut by that
budget (finish_reason=length) that does not parse is asked again with a larger one
(`decoding.truncation_retries`, `decoding.truncation_budget_factor`); the details keep both and
the run metrics count them. Draws whose request failed are `draws_missing`; with
`aggregation.min_draws` they decide whether an example has an answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hhx.io import write_json_atomic
from hhx.predictors.llm.aggregation import aggregate
from hhx.predictors.llm.cache import CACHE_FILE, ResponseCache
from hhx.predictors.llm.cost import Budget
from hhx.predictors.llm.engine import Engine, Outcome
from hhx.predictors.llm.plan import Call, plan_calls, with_budget
from hhx.predictors.llm.prompt_variants import OFFICIAL, PromptVariant, variant_messages
from hhx.predictors.llm.schema import answer_schema, answer_tokens
from hhx.predictors.llm.settings import LLMSettings
from hhx.predictors.llm.stats import RunStats
from hhx.predictors.llm.transport import Choice, Response, Transport
from hhx.predictors.protocol import PredictionRow
from hhx.scoring.parser import AnswerSpec, ParseResult, answer_spec, parse_answer

if TYPE_CHECKING:
    import pandas as pd

    from hhx.bench.layout import BenchTask


class TruncationRetry:
    """Engine.retry_policy: a larger budget for a call with a cut answer that does not parse."""

    def __init__(self, predictor: LLMPredictor, aspec: AnswerSpec, identity: dict[str, Any]):
        self.predictor = predictor
        self.aspec = aspec
        self.identity = identity

    def bigger(self, call: Call, response: Response) -> Call | None:
        s = self.predictor.settings
        budget = s.retry_budget(call.max_tokens)
        if budget is None:
            return None
        if not any(_cut_and_invalid(c, self.predictor.parse(self.aspec, c.text))
                   for c in response.choices):
            return None
        return with_budget(call, budget, s, self.identity)


def _cut_and_invalid(choice: Choice, parsed: ParseResult) -> bool:
    return choice.finish_reason == "length" and not parsed.valid


class LLMPredictor:
    """`make_predictor(cfg).fit(task).predict(task, examples)` for litellm, llama.cpp and vLLM.

    A prediction is the raw model text for K=1 and the aggregated answer list for K>1 (the raw
    text of the first answered draw when no draw is valid, so the scorer reports its error).
    An example whose every request failed (errors after retries, budget) gets prediction None
    and `details["failure"]`: it was never answered.
    """

    def __init__(
        self,
        settings: LLMSettings,
        transport_factory: Callable[[LLMSettings], Transport],
        cache_dir: str | Path,
        seed: int = 0,
        progress: bool | None = None,
        prompt: PromptVariant = OFFICIAL,
    ) -> None:
        self.name = settings.name
        self.prompt = prompt  # the prompt variant (prompt_variants.py); official by default
        self.settings = settings
        self._factory = transport_factory
        self._transport: Transport | None = None
        self.cache_path = Path(cache_dir) / CACHE_FILE
        self._cache: ResponseCache | None = None
        self._budget: Budget | None = None
        self.seed = seed
        self.progress = progress
        self.stats = RunStats()
        self._probed = False
        self._served: list[str] = []

    # --- Predictor protocol -------------------------------------------------------------------

    def fit(self, task: BenchTask) -> LLMPredictor:
        # Nothing to learn (fine-tuned weights come in through model.lora_adapter); loading the
        # backend here makes a missing extra or missing weights fail before any request.
        self.transport()
        return self

    def predict(self, task: BenchTask, examples: pd.DataFrame) -> list[PredictionRow]:
        spec = task.spec
        aspec = answer_spec(spec)
        all_messages = variant_messages(task, examples, self.prompt, source=f"task {spec.name}")
        transport = self.transport()
        self._probe(transport)
        schema = answer_schema(spec) if self.settings.constrained else None
        budget = self.settings.answer_budget(answer_tokens(aspec))
        identity = transport.identity()
        plans = plan_calls(all_messages, self.settings, identity, schema, max_tokens=budget)
        engine = Engine(
            transport,
            self.cache(),
            self.settings,
            self.stats,
            self.budget(transport),
            model_label=self.name,
            progress=self.progress,
            seed=self.seed,
            retry_policy=TruncationRetry(self, aspec, identity),
            served_models=self._served,
        )
        outcomes = engine.run([call for plan in plans for call in plan])
        ids = [str(x) for x in examples["id"]]
        times = [str(x) for x in examples["time"]]
        return [
            self._row(aspec, rid, rtime, plan, outcomes)
            for rid, rtime, plan in zip(ids, times, plans, strict=True)
        ]

    def save(self, out_dir: Path) -> list[Path]:
        record = {
            "settings": self.settings.record(),
            "model_identity": self._transport.identity() if self._transport else None,
            "prices": dataclasses.asdict(self._budget.prices) if self._budget else None,
            "cache": str(self.cache_path),
            "metrics": self.run_metrics(),
        }
        if not self.prompt.official:  # official runs' record stays as it was
            record["prompt"] = {**self.prompt.tags(), "system": self.prompt.system}
        return [write_json_atomic(Path(out_dir) / "llm_run.json", record)]

    def run_metrics(self) -> dict[str, float]:
        return self.stats.metrics()

    # --- parts ----------------------------------------------------------------------------------

    def transport(self) -> Transport:
        if self._transport is None:
            self._transport = self._factory(self.settings)
        return self._transport

    def _probe(self, transport: Transport) -> None:
        """Check the endpoint once, before the first request (backends with an endpoint)."""
        if self._probed:
            return
        probe = getattr(transport, "probe", None)
        self._served = list(probe() or []) if probe is not None else []
        self._probed = True

    def parse(self, aspec: AnswerSpec, text: str) -> ParseResult:
        s = self.settings
        return parse_answer(
            aspec,
            text,
            repair_number_formatting=s.repair_number_formatting,
            repair_distribution_nesting=s.repair_distribution_nesting,
        )

    def cache(self) -> ResponseCache:
        if self._cache is None:
            self._cache = ResponseCache(self.cache_path)
        return self._cache

    def budget(self, transport: Transport) -> Budget:
        # One budget for the predictor's life: max_cost_usd bounds the whole run, all tasks.
        if self._budget is None:
            self._budget = Budget(self.settings.max_cost_usd, transport.prices)
        return self._budget

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def _draws(self, aspec: AnswerSpec, plan: list[Call], outcomes: dict[str, Outcome]) -> list:
        draws: list[dict[str, Any]] = []
        for call in plan:
            outcome = outcomes[call.key]
            choices = outcome.response.choices if outcome.response else []
            for j, draw in enumerate(call.draws):
                base = {"draw": draw, "seed": call.seed, "n": call.n, "cached": outcome.cached,
                        "max_tokens": call.max_tokens}
                if outcome.response is None or j >= len(choices):
                    # No answer: the request failed, or the server ignored `n` (missing_choice).
                    failure = outcome.failure if outcome.response is None else "missing_choice"
                    draws.append({**base, "failed": failure})
                    continue
                draws.append({**base, **self._final_draw(aspec, outcome, j)})
        return draws

    def _final_draw(self, aspec: AnswerSpec, outcome: Outcome, j: int) -> dict[str, Any]:
        """Choice j of a response, or of its larger-budget retries when it was cut unparsable."""
        assert outcome.response is not None
        choice = outcome.response.choices[j]
        parsed = self.parse(aspec, choice.text)
        first_cut: dict[str, Any] | None = None
        node = outcome
        while _cut_and_invalid(choice, parsed) and node.retry is not None:
            retry = node.retry
            if retry.response is None or j >= len(retry.response.choices):
                break
            if first_cut is None:
                first_cut = {"raw": choice.text, "finish_reason": choice.finish_reason,
                             "error": parsed.error}
            choice = retry.response.choices[j]
            parsed = self.parse(aspec, choice.text)
            node = retry
        out: dict[str, Any] = {
            "raw": choice.text,
            "finish_reason": choice.finish_reason,
            "truncated": choice.finish_reason == "length",
            "valid": parsed.valid,
            "error": parsed.error,
            "parsed": parsed.value,
            "repaired": parsed.repaired,
        }
        if first_cut is not None:
            out["retried_after_cut"] = {**first_cut, "retry_max_tokens": outcome.retry_max_tokens}
        return out

    def _row(
        self,
        aspec: AnswerSpec,
        rid: str,
        rtime: str,
        plan: list[Call],
        outcomes: dict[str, Outcome],
    ) -> PredictionRow:
        s = self.settings
        draws = self._draws(aspec, plan, outcomes)
        answered = [d for d in draws if "raw" in d]
        valid = [d for d in answered if d["valid"]]
        missing = len(draws) - len(answered)
        st = self.stats
        st.examples += 1
        st.draws_total += len(draws)
        st.draws_missing += missing
        for d in answered:
            st.record_draw(d["valid"], d["error"])
            st.draws_truncated += bool(d["truncated"])
        responses = [r for c in plan if (r := outcomes[c.key].response)]
        details: dict[str, Any] = {
            "k": s.k,
            "draws": draws,
            "n_answered": len(answered),
            "n_valid": len(valid),
            "draws_missing": missing,
            "n_truncated": sum(bool(d["truncated"]) for d in answered),
            "latency_s": sum(r.latency_s for r in responses),
            "prompt_tokens": sum(r.prompt_tokens for r in responses),
            "completion_tokens": sum(r.completion_tokens for r in responses),
            "cost_usd": sum(r.cost_usd for r in responses),
            "cached": all(outcomes[c.key].cached for c in plan),
        }
        prediction: Any = None
        need = s.min_draws
        if not answered:
            details["status"] = "failed"
            details["failure"] = next(d["failed"] for d in draws)
            st.examples_failed += 1
        elif missing and (need is None or (len(valid) < need <= len(valid) + missing)):
            # Draws are missing because requests failed: no answer from a partial set of draws
            # (a rerun asks only for the missing ones).
            details["status"] = "failed"
            details["failure"] = "draws_missing"
            st.examples_failed += 1
            st.examples_incomplete += 1
        elif s.k == 1:
            prediction = answered[0]["raw"]
            details["status"] = "ok"
        elif valid and len(valid) >= (need or 1):
            prediction = aggregate(aspec, [d["parsed"] for d in valid], s.tie_rule)
            details["status"] = "ok"
        else:
            # Too few valid draws: the first invalid raw text, so the scorer reports why.
            prediction = next(d["raw"] for d in answered if not d["valid"])
            details["status"] = "too_few_valid" if valid else "ok"
            st.examples_too_few_valid += bool(valid)
        return PredictionRow(id=rid, time=rtime, prediction=prediction, details=details)
