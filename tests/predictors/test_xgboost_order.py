"""The XGBoost fitting rows come in TABLE order, as the official build takes them.

The official build (scripts/3_xgboost/build.py) keeps the table rows whose keys are in the train /
validation prefix, in the table's own row order. With row subsampling the trees follow that
order. Here a plain `xgboost` fit written straight from the release files (no hhx code: the
official steps re-done with pandas) is compared with hhx's `model=xgboost` on a task whose table
order differs from its split_position order: equal in table order, different in position order.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xgboost as xgb

from hhx.bench.layout import load_bench_task
from hhx.config import FieldConfig, Mode, Shape, TargetType, TaskConfig, XGBoostConfig
from hhx.predictors.xgboost import XGBoostPredictor
from hhx.predictors.xgboost_params import CLASSIFICATION_PARAMS, REGRESSION_PARAMS
from hhx.tasks.build import build_task
from hhx.tasks.context import BuildContext

BUILDER = '''
import numpy as np
import pandas as pd
from hhx.tasks.prompting import response_instruction

def build_table(ctx):
    rng = np.random.default_rng(5)
    n = 1500
    quarter = rng.integers(0, 24, n)
    year, month = 2012 + quarter // 4, 3 * (quarter % 4) + 1
    x = rng.normal(size=n)
    group = rng.choice(["a", "b", "c"], n)
    shift = pd.Series(group).map({"a": 0.0, "b": 1.5, "c": -1.5}).to_numpy()
    score = x + shift + rng.normal(scale=0.8, size=n)
    frame = pd.DataFrame({
        "id": [f"h{i}" for i in range(n)],
        "time": [f"{y}-{m:02d}-01" for y, m in zip(year, month)],
        "release_date": [f"{y + 1}-01-15" for y in year],
        "y": 10 * x + 5 * shift + rng.normal(scale=3.0, size=n),
        "label": np.where(score > 0, "yes", "no"),
        "x": x, "group": group,
    })
    t = ctx.task
    return frame[["id", "time", "release_date", *t.targets, *t.prompt_predictors]]

def render(row, task):
    return "You are an American adult.", "x is " + str(round(row["x"], 2)) + ".\\n\\n" + response_instruction(task)

def naive_baseline(row, task):
    return [0.0] if task.target_type.value == "numeric" else ["no"]
'''

ROUNDS = 40


@pytest.fixture(scope="module")
def builder():
    module = types.ModuleType("hhx_test_xgb_order_builder")
    exec(compile(BUILDER, module.__name__, "exec"), module.__dict__)
    sys.modules[module.__name__] = module
    yield module.__name__
    del sys.modules[module.__name__]


def make_task(kind: str, builder: str) -> TaskConfig:
    common = dict(name=f"order_{kind}", topic="t", mode=Mode.baseline, survey="toy",
                  prompt_predictors=["x", "group"], categorical_predictors=["group"],
                  builder=builder, shape=Shape.array)
    if kind == "numeric":
        return TaskConfig(**common, target_type=TargetType.numeric,
                          fields=[FieldConfig(name="value")], targets=["y"], xgb_seeds={"y": 99})
    return TaskConfig(**common, target_type=TargetType.categorical,
                      fields=[FieldConfig(name="answer", labels=["no", "yes"])],
                      targets=["label"], xgb_seeds={"label": 7})


def plain_fit(root: Path, task: TaskConfig, order: str) -> np.ndarray:
    """The official steps with pandas and xgboost only: read the table and the sidecar, take
    the train / validation prefixes by split_position, then (order="table") keep the table rows
    with those keys in table order, or (order="position") sort them by split_position; encode
    the features; fit; predict every table row."""
    table = pd.read_csv(root / "tabular" / f"{task.name}.csv",
                        dtype={"id": "string", "time": "string", "release_date": "string"})
    side = pd.read_csv(root / "splits" / f"{task.name}.csv",
                       dtype={"id": "string", "time": "string", "release_date": "string"})
    sample = table.merge(side[["id", "time", "split", "split_position"]], on=["id", "time"])
    assert sample["id"].tolist() == table["id"].tolist()

    def rows(split: str) -> pd.DataFrame:
        part = sample.loc[sample["split"].eq(split)]  # no cap: every row of the split
        return part if order == "table" else part.sort_values("split_position")

    train, val = rows("train"), rows("validation")
    cats = sorted(train["group"].unique()) + ["__HOUSEHOLDBENCH_MISSING__",
                                              "__HOUSEHOLDBENCH_UNSEEN__"]

    def features(frame: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"x": frame["x"].astype("float64"),
                             "group": pd.Categorical(frame["group"], categories=cats)})

    base = dict(tree_method="hist", max_bin=256, enable_categorical=True, device="cpu",
                verbosity=0, n_jobs=2, early_stopping_rounds=ROUNDS)
    if task.target_type is TargetType.numeric:
        model = xgb.XGBRegressor(**{**REGRESSION_PARAMS, **base, "n_estimators": ROUNDS,
                                    "random_state": 99, "objective": "reg:absoluteerror",
                                    "eval_metric": "mae"})
        y_train, y_val = train["y"].to_numpy(float), val["y"].to_numpy(float)
    else:
        model = xgb.XGBClassifier(**{**CLASSIFICATION_PARAMS, **base, "n_estimators": ROUNDS,
                                     "random_state": 7, "objective": "binary:logistic",
                                     "eval_metric": macro_f1_cost})
        y_train = (train["label"] == "yes").to_numpy(int)
        y_val = (val["label"] == "yes").to_numpy(int)
    model.fit(features(train), y_train, eval_set=[(features(val), y_val)], verbose=False)
    if task.target_type is TargetType.numeric:
        return model.predict(features(sample)).astype(float)
    return model.predict_proba(features(sample))[:, 1]


def macro_f1_cost(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """1 - macro-F1 of the two classes (class = p > 0.5), a zero denominator scoring 0."""
    truth, label = np.asarray(y_true).astype(int), (np.asarray(y_pred) > 0.5).astype(int)
    f1 = []
    for k in (0, 1):
        tp = int(((label == k) & (truth == k)).sum())
        wrong = int(((label == k) != (truth == k)).sum())
        f1.append(0.0 if 2 * tp + wrong == 0 else 2 * tp / (2 * tp + wrong))
    return 1.0 - sum(f1) / 2


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["numeric", "categorical"])
def test_fitting_rows_in_table_order_reproduce_the_official_fit(kind, builder, tmp_path):
    task = make_task(kind, builder)
    ctx = BuildContext(task, tmp_path, macro_context=pd.DataFrame(), synthetic=True)
    build_task(ctx, tmp_path / "bench", synthetic=True)
    bench = load_bench_task(tmp_path / "bench", task)
    # the premise: this table's train rows are not in split_position order
    by_table = bench.split_frame("train", None, order="table")["id"].tolist()
    by_position = bench.split_frame("train", None, order="position")["id"].tolist()
    assert sorted(by_table) == sorted(by_position) and by_table != by_position

    settings = XGBoostConfig(threads=2, n_estimators=ROUNDS, early_stopping_rounds=ROUNDS)
    model = XGBoostPredictor(settings).fit(bench)
    x = model.encoder.transform(model._feature_rows(bench, bench.prompts))
    fitted = model.outputs[0].model
    hhx = (fitted.predict(x).astype(float) if kind == "numeric"
           else fitted.predict_proba(x)[:, 1])

    official = plain_fit(tmp_path / "bench", task, "table")
    other = plain_fit(tmp_path / "bench", task, "position")
    assert np.array_equal(hhx, official)  # bit for bit
    assert not np.allclose(other, official)  # the row order matters
