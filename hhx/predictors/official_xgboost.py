"""The official XGBoost predictions, as published: `model=official_xgboost` reads the
`xgb_400k_tuned_direct` column of `<data.root>/baselines/<task>.csv` (hhx/bench/baselines.py) for
the evaluated rows and fits nothing, so a download of the official release can score and rank
the paper's XGBoost column next to other models (and hhx's own `model=xgboost` refit of it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from hhx.bench.baselines import PREDICTION_COLUMN, baselines_path, read_baselines
from hhx.errors import DataError
from hhx.predictors.protocol import PredictionRow

if TYPE_CHECKING:
    import pandas as pd

    from hhx.bench.layout import BenchTask
    from hhx.predictors.protocol import PredictorConfig


class OfficialXGBoost:
    name = "official_xgboost"

    def __init__(self) -> None:
        self.table: pd.DataFrame | None = None
        self.path: Path | None = None

    def fit(self, task: BenchTask) -> OfficialXGBoost:
        """Read the published table (nothing is fitted)."""
        self.path = baselines_path(task.root, task.spec.name)
        self.table = read_baselines(task.root, task.spec.name)
        listed = set(self.table["task_id"])
        if listed != {task.spec.name}:
            raise DataError(f"{self.path}: rows of task(s) {sorted(listed)}, expected only "
                            f"{task.spec.name}; download the file again")
        return self

    def predict(self, task: BenchTask, examples: pd.DataFrame) -> list[PredictionRow]:
        if self.table is None:
            raise RuntimeError("fit() must be called before predict()")
        rows = []
        for ex in examples.itertuples(index=False):
            key = (str(ex.id), str(ex.time))
            if key not in self.table.index:
                raise DataError(f"{self.path}: no row for id={key[0]} time={key[1]}; the "
                                "baselines table belongs to another release than data.root's")
            text = self.table.at[key, PREDICTION_COLUMN]
            try:
                answer = json.loads(text)
            except ValueError:
                raise DataError(f"{self.path}: {PREDICTION_COLUMN} of id={key[0]} time={key[1]} "
                                f"is not JSON ({text[:40]!r}); download the file again") from None
            rows.append(PredictionRow(id=key[0], time=key[1], prediction=answer))
        return rows

    def save(self, out_dir: Path) -> list[Path]:
        return []

    def run_metrics(self) -> dict[str, float]:
        return {}


def make(cfg: PredictorConfig) -> OfficialXGBoost:
    return OfficialXGBoost()
