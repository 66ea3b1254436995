"""The predictor contract, after scikit-learn's estimators: `fit` on a task, `predict` rows.

Every backend (no-change, XGBoost, litellm, vLLM, llama.cpp, transformers) implements it; the
evaluate stage knows nothing else about them. The backends are declared in hhx/catalog.py.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hhx.catalog import Kind, backend_spec

if TYPE_CHECKING:
    import pandas as pd

    from hhx.bench.layout import BenchTask
    from hhx.config import HhxConfig


@dataclass
class PredictionRow:
    """One answer for one example, as the official predictions JSONL carries it."""

    id: str
    time: str
    # Raw model text (LLMs) or a JSON-able answer list (no-change, XGBoost); the scorer parses both.
    prediction: Any
    # Per-example extras for the details artifact: draws, per-draw validity, latency, tokens, cost.
    details: dict[str, Any] = field(default_factory=dict)

    def official(self) -> dict[str, Any]:
        return {"id": self.id, "time": self.time, "prediction": self.prediction}


class Predictor(Protocol):
    name: str

    def fit(self, task: BenchTask) -> Predictor:
        """Learn from the task's train/validation splits (a no-op for predictors that do not)."""
        ...

    def predict(self, task: BenchTask, examples: pd.DataFrame) -> list[PredictionRow]:
        """Answer each example (prompt-record rows), in order."""
        ...

    def save(self, out_dir: Path) -> list[Path]:
        """Write fitted state (models, metadata) under out_dir; return the files written."""
        ...

    def run_metrics(self) -> dict[str, float]:
        """Run-level metrics to track (cost, tokens, latency percentiles...); may be empty."""
        ...


def preflight(cfg: HhxConfig) -> None:
    """Checks that take seconds and save minutes, run before the data and MLflow are opened: an
    API model's endpoint must resolve and accept a connection (hhx/predictors/llm/probe.py); an
    open-weight model's weights must be here (hhx/predictors/llm/weights_check.py). Once per
    config: the app runs it before the evaluate stage's imports, the stage again when called alone."""
    if any(seen is cfg for seen in _PREFLIGHTED):
        return
    _check(cfg)
    _PREFLIGHTED.append(cfg)


# The configs already checked (compared by identity; a process runs one or a few).
_PREFLIGHTED: list[Any] = []


def _check(cfg: HhxConfig) -> None:
    spec = backend_spec(cfg.model.backend)
    if spec.kind is Kind.local:
        from hhx.predictors.llm.weights_check import check_local_weights

        check_local_weights(cfg.model, spec.name)
        return
    if spec.kind is not Kind.api:
        return
    from hhx.predictors.llm.probe import preflight as endpoint_preflight
    from hhx.predictors.llm.settings import read_api_key, settings_from_config

    settings = settings_from_config(cfg)
    read_api_key(settings)  # a key variable left unset: one line, before anything is opened
    endpoint_preflight(settings)


def make_predictor(cfg: HhxConfig) -> Predictor:
    """Instantiate the predictor that `cfg.model.backend` names (its factory in hhx/catalog.py;
    modules are imported lazily so optional extras stay optional)."""
    module_name, factory = backend_spec(cfg.model.backend).factory.split(":")
    module = importlib.import_module(module_name)
    return getattr(module, factory)(cfg)
