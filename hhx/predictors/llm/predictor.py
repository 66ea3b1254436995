"""The Predictor contract for every LLM backend: plan draws, send what the cache lacks, parse
each draw, aggregate K draws, and keep per-example details and run metrics."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hhx.io import write_json_atomic
from hhx.predictors.base import PredictionRow
from hhx.predictors.llm.aggregation import aggregate
from hhx.predictors.llm.cache import CACHE_FILE, ResponseCache
from hhx.predictors.llm.cost import Budget
from hhx.predictors.llm.engine import Engine, Outcome, Transport
from hhx.predictors.llm.messages import build_messages
from hhx.predictors.llm.plan import Call, plan_calls
from hhx.predictors.llm.schema import answer_schema
from hhx.predictors.llm.settings import LLMSettings
from hhx.predictors.llm.stats import RunStats
from hhx.scoring.parser import AnswerSpec, answer_spec, parse_answer

if TYPE_CHECKING:
    import pandas as pd

    from hhx.bench.layout import BenchTask


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
    ) -> None:
        self.name = settings.name
        self.settings = settings
        self._factory = transport_factory
        self._transport: Transport | None = None
        self.cache_path = Path(cache_dir) / CACHE_FILE
        self._cache: ResponseCache | None = None
        self._budget: Budget | None = None
        self.seed = seed
        self.progress = progress
        self.stats = RunStats()

    # --- Predictor protocol -------------------------------------------------------------------

    def fit(self, task: BenchTask) -> LLMPredictor:
        # Nothing to learn (fine-tuned weights come in through model.lora_adapter); loading the
        # backend here makes a missing extra or missing weights fail before any request.
        self.transport()
        return self

    def predict(self, task: BenchTask, examples: pd.DataFrame) -> list[PredictionRow]:
        spec = task.spec
        aspec = answer_spec(spec)
        all_messages = build_messages(examples, source=f"task {spec.name}")
        transport = self.transport()
        schema = answer_schema(spec) if self.settings.constrained else None
        plans = plan_calls(all_messages, self.settings, transport.identity(), schema)
        engine = Engine(
            transport,
            self.cache(),
            self.settings,
            self.stats,
            self.budget(transport),
            model_label=self.name,
            progress=self.progress,
            seed=self.seed,
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
        return [write_json_atomic(Path(out_dir) / "llm_run.json", record)]

    def run_metrics(self) -> dict[str, float]:
        return self.stats.metrics()

    # --- parts ----------------------------------------------------------------------------------

    def transport(self) -> Transport:
        if self._transport is None:
            self._transport = self._factory(self.settings)
        return self._transport

    def cache(self) -> ResponseCache:
        if self._cache is None:
            self._cache = ResponseCache(self.cache_path)
        return self._cache

    def budget(self, transport: Transport) -> Budget:
        # One budget for the predictor's life: max_cost_usd bounds the whole run, all tasks.
        if self._budget is None:
            self._budget = Budget(
                self.settings.max_cost_usd, transport.prices, self.settings.params.get("max_tokens")
            )
        return self._budget

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def _draws(self, aspec: AnswerSpec, plan: list[Call], outcomes: dict[str, Outcome]) -> list:
        s = self.settings
        draws: list[dict[str, Any]] = []
        for call in plan:
            outcome = outcomes[call.key]
            choices = outcome.response.choices if outcome.response else []
            for j, draw in enumerate(call.draws):
                base = {"draw": draw, "seed": call.seed, "n": call.n, "cached": outcome.cached}
                if outcome.response is None or j >= len(choices):
                    # No answer: the request failed, or the server ignored `n` (missing_choice).
                    failure = outcome.failure if outcome.response is None else "missing_choice"
                    draws.append({**base, "failed": failure})
                    continue
                choice = choices[j]
                parsed = parse_answer(
                    aspec,
                    choice.text,
                    repair_number_formatting=s.repair_number_formatting,
                    repair_distribution_nesting=s.repair_distribution_nesting,
                )
                draws.append(
                    {
                        **base,
                        "raw": choice.text,
                        "finish_reason": choice.finish_reason,
                        "valid": parsed.valid,
                        "error": parsed.error,
                        "parsed": parsed.value,
                        "repaired": parsed.repaired,
                    }
                )
        return draws

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
        self.stats.examples += 1
        self.stats.draws_total += len(draws)
        for d in answered:
            self.stats.record_draw(d["valid"], d["error"])
        responses = [outcomes[c.key].response for c in plan if outcomes[c.key].response]
        details: dict[str, Any] = {
            "k": s.k,
            "draws": draws,
            "n_answered": len(answered),
            "n_valid": len(valid),
            "latency_s": sum(r.latency_s for r in responses),
            "prompt_tokens": sum(r.prompt_tokens for r in responses),
            "completion_tokens": sum(r.completion_tokens for r in responses),
            "cost_usd": sum(r.cost_usd for r in responses),
            "cached": all(outcomes[c.key].cached for c in plan),
        }
        prediction: Any
        if not answered:
            prediction = None
            details["status"] = "failed"
            details["failure"] = next(d["failed"] for d in draws)
            self.stats.examples_failed += 1
        elif s.k == 1:
            prediction = answered[0]["raw"]
            details["status"] = "ok"
        elif valid:
            prediction = aggregate(aspec, [d["parsed"] for d in valid], s.tie_rule)
            details["status"] = "ok"
        else:
            prediction = answered[0]["raw"]  # nothing to aggregate: the scorer reports why
            details["status"] = "ok"
        return PredictionRow(id=rid, time=rtime, prediction=prediction, details=details)
