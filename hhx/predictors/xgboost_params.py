"""The reference XGBoost baseline's settings as data (spec 00_common.md section 10): the
hyperparameters per target type and the models a task needs (one per numeric or categorical
target, one per distribution group). Importing it loads no xgboost, so a sweep's parent can
estimate a cell's work (hhx/sweeps/order.py) without the library; hhx/predictors/xgboost.py fits
with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hhx.config import TargetType, TaskConfig

CLASSIFICATION_PARAMS: dict[str, Any] = dict(
    max_depth=6, learning_rate=0.08, subsample=0.65, colsample_bytree=1.0, colsample_bylevel=0.9,
    min_child_weight=0.000005, reg_lambda=0.0, reg_alpha=0.0, gamma=0.0, n_estimators=1000,
)
REGRESSION_PARAMS: dict[str, Any] = dict(
    max_depth=9, learning_rate=0.05, subsample=0.70, colsample_bytree=1.0, colsample_bylevel=1.0,
    min_child_weight=2.0, reg_lambda=0.0, reg_alpha=0.0, gamma=0.0, n_estimators=1000,
)
DISTRIBUTION_PARAMS: dict[str, Any] = {**REGRESSION_PARAMS, "n_estimators": 2000}
COMMON_PARAMS: dict[str, Any] = dict(
    tree_method="hist", max_bin=256, enable_categorical=True, device="cpu", verbosity=0
)


@dataclass
class Output:
    """One fitted model: a numeric/categorical target column or a distribution group."""

    name: str  # target column or distribution group (the seed key)
    kind: str  # numeric | categorical | distribution
    classes: list[str] = field(default_factory=list)
    model: Any = None
    best_iteration: int | None = None
    fit_seconds: float = 0.0
    best_score: float | None = None
    # the parameters in the official form (eval_metric by name, no callbacks), for the
    # diagnostics of the baselines publication (hhx/bench/baselines.py)
    params: dict[str, Any] = field(default_factory=dict)
    fit_digest: str = ""  # hash of the fitting rows (keys, features, targets) in fitting order


def outputs_for(task: TaskConfig) -> list[Output]:
    if task.target_type is TargetType.distribution:
        # named by the registry group, as the seeds are (hhx.tasks.registry.output_names)
        return [Output(d.group or d.name, "distribution") for d in task.distributions]
    if task.target_type is TargetType.categorical:
        return [
            Output(col, "categorical", classes=list(f.domain or f.labels or []))
            for col, f in zip(task.targets, task.fields, strict=True)
        ]
    return [Output(col, "numeric") for col in task.targets]
