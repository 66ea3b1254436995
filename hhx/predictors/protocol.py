"""The predictor contract, after scikit-learn's estimators: `fit` on a task, `predict` rows.

Every backend (no-change, XGBoost, litellm, vLLM, llama.cpp, transformers) implements it; the
evaluate stage knows nothing else about them. A backend's factory `make(cfg: PredictorConfig)`
gets the parts of the run's config a predictor reads, not the task, data or tracking settings.
Kept apart from the backend factory (base.py) so that the backends can import it without
importing the factory that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pandas as pd

    from hhx.bench.layout import BenchTask


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


@dataclass(frozen=True)
class PredictorConfig:
    """What a backend's factory (and its pre-flight check) reads of a run's config: the model,
    how it is asked and how its draws are combined (decoding, aggregation, the prompt variant),
    the scorer's repair switches its answer parser follows, the run's seed and its folders (the
    response cache). The groups are the run's own nodes, so interpolations resolve as composed
    and missing values read as they do there; a group a config lacks is None."""

    model: Any
    decoding: Any = None
    aggregation: Any = None
    prompt: Any = None
    score: Any = None
    seed: Any = None
    paths: Any = None

    def get(self, key: str, default: Any = None) -> Any:
        """A group by name, as `DictConfig.get` gives it (None when the config lacks it)."""
        value = getattr(self, key, None)
        return default if value is None else value


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
