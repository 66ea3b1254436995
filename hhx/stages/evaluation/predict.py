"""Predict: make the run's predictor, fit it on the task, answer the evaluated rows, close it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from hhx.bench.layout import BenchTask
from hhx.errors import Interrupted, PredictorError
from hhx.predictors.base import make_predictor
from hhx.predictors.protocol import PredictionRow, Predictor
from hhx.stages.evaluation.plan import EvalRun


@dataclass(frozen=True, eq=False)
class Predicted:
    predictor: Predictor  # closed; still saves its model and reports its run metrics
    rows: list[PredictionRow]
    fit_s: float
    predict_s: float


def predict(run: EvalRun, bench: BenchTask, examples: pd.DataFrame,
            on_failure: Callable[[str, dict[str, Any]], None]) -> Predicted:
    """The predictor's answers. A run the predictor stops (a refused key, an endpoint that never
    answers, a full disk...) is handed to `on_failure` (reason, the predictor's metrics so far)
    before the error goes on, so the attempt is on file; Ctrl-C becomes `Interrupted`."""
    t0 = time.perf_counter()
    predictor = None
    try:
        predictor = make_predictor(run.predictor)
        predictor.fit(bench)
        fit_s = time.perf_counter() - t0
        rows = predictor.predict(bench, examples)
        predict_s = time.perf_counter() - t0 - fit_s
    except KeyboardInterrupt:  # outside the request engine, which raises Interrupted itself
        raise Interrupted(
            f"interrupted during task {run.task.name} before its answers were scored; answers "
            "already received are cached: run the same command again to resume"
        ) from None
    except PredictorError as exc:
        if not isinstance(exc, Interrupted):
            on_failure(str(exc), predictor.run_metrics() if predictor is not None else {})
        raise
    finally:
        close: Any = getattr(predictor, "close", None)  # LLM backends hold a cache and an engine
        if close is not None:
            close()
    return Predicted(predictor, rows, fit_s, predict_s)
