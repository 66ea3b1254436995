"""A task's features and targets the way hhx's XGBoost sees them, for a predictor of your own.

    from hhx.predictors.features import TaskFeatures

    class MyPredictor:                       # model=custom model.target=my_module.MyPredictor
        def fit(self, task):
            self.data = TaskFeatures(task, one_hot=True, impute=True)
            X, y = self.data.train()         # y: {output name: values}
            self.models = {name: Ridge().fit(X, values) for name, values in y.items()}
            return self

        def predict(self, task, examples):
            X = self.data.features(examples)
            return self.data.rows(examples, {n: m.predict(X) for n, m in self.models.items()})

Features (hhx/predictors/xgboost.py, spec 00_common.md section 10.2): the task's
`prompt_predictors` in order, then `prompt_month` (the English month name the prompt shows) where
the task has one; numeric ones as float64 (NaN = missing), categorical ones as pandas
categoricals over the train split's values plus a missing and an unseen token. `one_hot=True`
spreads each categorical into 0/1 columns `<feature>=<value>` (for models that take numbers
only); `impute=True` fills a missing numeric value with its train median (for models that take
no NaN). Training rows: the train split's prefix (split_position <= 400,000) in table order, as
the reference XGBoost fits; `validation()` the validation prefix (<= 50,000).

Targets, one entry per model output (`outputs`, the answer's order):
- numeric task: each target column as float64 (`[0.25]`-style answers);
- categorical task: each target column's labels as text (`["employed"]`);
- distribution task: each distribution group as an (n, labels) matrix of probabilities.

`answers(predictions)` turns model outputs back into the official answers (a list per row, what
the scorer reads; hhx/predictors/custom.py says the form): numbers as floats (whole numbers where
the task's builder says INTEGER_OUTPUT), labels as text (checked against the label set), and each
distribution row projected onto the probability simplex. `rows(examples, predictions)` wraps them
as PredictionRow. This module only reads XGBoost's feature code; XGBoost itself is unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hhx.errors import DataError, PredictorError
from hhx.predictors.protocol import PredictionRow
from hhx.predictors.xgboost import (
    FeatureEncoder,
    distribution_matrix,
    feature_names,
    project_to_simplex,
    with_prompt_month,
)
from hhx.predictors.xgboost_params import Output, outputs_for
from hhx.tasks.contract import integer_output

if TYPE_CHECKING:
    from hhx.bench.layout import BenchTask

# The reference XGBoost's fitting prefixes (conf/model/xgboost.yaml train_cap, validation_cap).
TRAIN_CAP = 400_000
VALIDATION_CAP = 50_000
GOLD_COLUMNS = ("assistant",)  # the prompt record's reference answer: never shown to a predictor


def table_rows(task: BenchTask, examples: pd.DataFrame) -> pd.DataFrame:
    """The task-table row of each example (same order), with `prompt_month` where it applies."""
    if task.table is None:
        raise DataError(f"task {task.spec.name}: the features need the task table; the "
                        "eval-sample layout has only prompts — point data.root at the full release")
    keys = examples[["id", "time"]].astype(str).reset_index(drop=True)
    table = task.table.assign(id=task.table["id"].astype(str), time=task.table["time"].astype(str))
    rows = keys.merge(table, on=["id", "time"], how="left", validate="one_to_one", indicator=True)
    if (rows["_merge"] != "both").any():
        miss = rows.loc[rows["_merge"] != "both", ["id", "time"]].iloc[0].tolist()
        raise DataError(f"task {task.spec.name}: example {miss} has no row in the task table")
    return with_prompt_month(task.spec, rows.drop(columns="_merge"))


def example_rows(task: BenchTask, examples: pd.DataFrame) -> pd.DataFrame:
    """What a function predictor gets (hhx/predictors/custom.py): the examples less the gold
    answer, with the table's predictors beside them when the layout has the table."""
    rows = examples.drop(columns=[c for c in GOLD_COLUMNS if c in examples.columns])
    rows = rows.reset_index(drop=True)
    if task.table is None:
        return rows
    table = table_rows(task, examples)
    features, _ = feature_names(task.spec)
    for col in features:
        if col not in rows.columns:
            rows[col] = table[col].to_numpy()
    return rows


@dataclass
class TaskFeatures:
    """The task's encoded features and targets, the encoding fitted on its train split."""

    task: BenchTask
    one_hot: bool = False
    impute: bool = False
    train_cap: int = TRAIN_CAP
    validation_cap: int = VALIDATION_CAP
    outputs: list[Output] = field(init=False)
    encoder: FeatureEncoder = field(init=False)
    medians: dict[str, float] = field(init=False, default_factory=dict)
    _train: pd.DataFrame = field(init=False, repr=False)

    def __post_init__(self) -> None:
        spec = self.task.spec
        self._train = self._split("train", self.train_cap)
        features, categorical = feature_names(spec)
        self.encoder = FeatureEncoder(features, categorical).fit(self._train)
        self.outputs = outputs_for(spec)
        encoded = self.encoder.transform(self._train)
        self.medians = {c: float(encoded[c].median()) for c in features if c not in categorical}

    def _split(self, split: str, cap: int) -> pd.DataFrame:
        rows = with_prompt_month(self.task.spec, self.task.split_frame(split, cap, order="table"))
        if rows.empty:
            raise DataError(f"task {self.task.spec.name}: no {split} rows to fit on")
        return rows

    @property
    def feature_names(self) -> list[str]:
        return list(self.encoder.features)

    def encode(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Table rows (with prompt_month) -> the model matrix."""
        x = self.encoder.transform(frame)
        if self.impute:
            x = x.fillna({c: v for c, v in self.medians.items() if np.isfinite(v)})
        if not self.one_hot:
            return x
        parts = []
        for col in x.columns:
            if col in self.encoder.categories:
                dummies = pd.get_dummies(x[col], prefix=col, prefix_sep="=", dtype="float64")
                parts.append(dummies)
            else:
                parts.append(x[[col]])
        return pd.concat(parts, axis=1)

    def targets(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        spec = self.task.spec
        out: dict[str, np.ndarray] = {}
        for idx, output in enumerate(self.outputs):
            if output.kind == "distribution":
                out[output.name] = distribution_matrix(spec, idx, frame)
            elif output.kind == "categorical":
                out[output.name] = frame[output.name].astype("string").to_numpy(dtype=object)
            else:
                out[output.name] = pd.to_numeric(frame[output.name], errors="coerce").to_numpy(
                    dtype="float64")
        return out

    def train(self) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
        """(X, y) of the train prefix, in table order."""
        return self.encode(self._train), self.targets(self._train)

    def validation(self) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
        """(X, y) of the validation prefix, in table order."""
        frame = self._split("validation", self.validation_cap)
        return self.encode(frame), self.targets(frame)

    def features(self, examples: pd.DataFrame) -> pd.DataFrame:
        """X of the examples to answer, in their order."""
        return self.encode(table_rows(self.task, examples))

    def answers(self, predictions: Mapping[str, Any]) -> list[list[Any]]:
        """{output name: n predictions} -> n official answers (module docstring)."""
        spec = self.task.spec
        columns: list[list[Any]] = []
        for output in self.outputs:
            if output.name not in predictions:
                raise PredictorError(f"task {spec.name}: no predictions for output {output.name} "
                                     f"(outputs: {', '.join(o.name for o in self.outputs)})")
            values = predictions[output.name]
            if output.kind == "distribution":
                matrix = project_to_simplex(np.asarray(values, dtype=float))
                columns.append([[float(p) for p in row] for row in matrix])
            elif output.kind == "categorical":
                columns.append([_label(v, output) for v in np.asarray(values, dtype=object)])
            elif integer_output(spec):
                columns.append([int(round(float(v))) for v in np.ravel(values)])
            else:
                columns.append([float(v) for v in np.ravel(values)])
        sizes = {len(c) for c in columns}
        if len(sizes) > 1:
            raise PredictorError(f"task {spec.name}: outputs predicted for different row counts "
                                 f"{sorted(sizes)}")
        return [list(answer) for answer in zip(*columns, strict=True)]

    def rows(self, examples: pd.DataFrame, predictions: Mapping[str, Any]) -> list[PredictionRow]:
        """The answers as PredictionRow, one per example in order (what `predict` returns)."""
        answers = self.answers(predictions)
        return [PredictionRow(id=str(ex.id), time=str(ex.time), prediction=answer)
                for ex, answer in zip(examples.itertuples(index=False), answers, strict=True)]


def _label(value: Any, output: Output) -> str:
    label = str(value)
    if label not in output.classes:
        raise PredictorError(f"output {output.name}: predicted label {label!r} is not one of "
                             f"{output.classes}")
    return label


class EstimatorPredictor:
    """A scikit-learn style estimator (`fit(X, y)`, `predict(X)`): a copy fitted per output on
    the one-hot, imputed features (a distribution's labels as a multi-output target)."""

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator
        self.models: dict[str, Any] = {}
        self.data: TaskFeatures | None = None

    def fit(self, task: BenchTask) -> EstimatorPredictor:
        self.data = TaskFeatures(task, one_hot=True, impute=True)
        x, y = self.data.train()
        for name, values in y.items():
            model = _fresh(self.estimator)
            try:
                model.fit(x, values)
            except Exception as exc:
                raise PredictorError(f"task {task.spec.name}: {type(model).__name__}.fit on "
                                     f"output {name} failed: {type(exc).__name__}: "
                                     f"{exc}".splitlines()[0]) from None
            self.models[name] = model
        return self

    def predict(self, task: BenchTask, examples: pd.DataFrame) -> list[PredictionRow]:
        if self.data is None:
            raise RuntimeError("fit() must be called before predict()")
        x = self.data.features(examples)
        return self.data.rows(examples, {n: m.predict(x) for n, m in self.models.items()})


def _fresh(estimator: Any) -> Any:
    """An unfitted copy (scikit-learn's `clone` when it is one of its estimators)."""
    if hasattr(estimator, "get_params"):
        try:
            from sklearn.base import clone

            return clone(estimator)
        except Exception:  # not cloneable: a deep copy does
            pass
    return copy.deepcopy(estimator)
