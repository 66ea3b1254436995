"""The no-change baseline: each prompt record's `naive_baseline` (spec 4.8), answered as is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from hhx.predictors.protocol import PredictionRow

if TYPE_CHECKING:
    import pandas as pd

    from hhx.bench.layout import BenchTask
    from hhx.predictors.protocol import PredictorConfig


class NoChange:
    name = "no_change"

    def fit(self, task: BenchTask) -> NoChange:
        return self

    def predict(self, task: BenchTask, examples: pd.DataFrame) -> list[PredictionRow]:
        return [
            PredictionRow(id=str(r.id), time=str(r.time), prediction=json.loads(r.naive_baseline))
            for r in examples.itertuples(index=False)
        ]

    def save(self, out_dir: Path) -> list[Path]:
        return []

    def run_metrics(self) -> dict[str, float]:
        return {}


def make(cfg: PredictorConfig) -> NoChange:
    return NoChange()
