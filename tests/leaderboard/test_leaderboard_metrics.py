"""Weighted-sum metrics: the spec's hand calculations, and weights == repeated rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hhx.config import DistributionConfig, FieldConfig, Mode, Shape, TargetType, TaskConfig
from hhx.leaderboard.bootstrap import resample_counts
from hhx.leaderboard.examples import TaskData, segments_for
from hhx.leaderboard.metrics import point_metric, weighted_metric


def task_data(task: TaskConfig, ref, naive, preds: dict, valid: dict | None = None) -> TaskData:
    ref = np.asarray(ref, float)
    n = len(ref)
    td = TaskData(task=task, keys=np.array([f"k{i}" for i in range(n)]),
                  release_date=pd.Series(pd.to_datetime(["2020-01-01"] * n)),
                  segments=segments_for(task), ref=ref, naive=np.asarray(naive, float))
    for m, p in preds.items():
        td.preds[m] = np.asarray(p, float)
        td.valid[m] = np.ones(n, bool) if valid is None else np.asarray(valid[m], bool)
        td.backends[m] = "litellm"
    return td


def numeric(k: int) -> TaskConfig:
    return TaskConfig(name="num", topic="t", mode=Mode.baseline, survey="s",
                      target_type=TargetType.numeric, shape=Shape.array,
                      fields=[FieldConfig(name=f"f{i}") for i in range(k)])


def categorical(labels: list[str]) -> TaskConfig:
    return TaskConfig(name="cat", topic="t", mode=Mode.baseline, survey="s",
                      target_type=TargetType.categorical, shape=Shape.array,
                      fields=[FieldConfig(name="c", labels=labels)])


def distribution() -> TaskConfig:
    return TaskConfig(name="dist", topic="t", mode=Mode.baseline, survey="s",
                      target_type=TargetType.distribution, shape=Shape.distribution_array,
                      distributions=[
                          DistributionConfig(name="a", labels=["x", "y"], columns=["p"]),
                          DistributionConfig(name="b", labels=["x", "y"], columns=["q"])])


def test_relmae_hand_calculation():
    # Per-field RelMAE 1, 1, 1.5 -> mean 7/6 (spec 11.2).
    td = task_data(numeric(3), ref=[[0, 0, 0]], naive=[[1, 1, 2]], preds={"m": [[1, -1, 3]]})
    res = point_metric(td, td.preds["m"], td.valid["m"], per_target=True)
    assert res["primary"] == pytest.approx(7 / 6)
    assert res["relmae.f2"] == pytest.approx(1.5)


def test_relmae_uses_naive_on_the_same_valid_rows():
    td = task_data(numeric(1), ref=[[0], [0]], naive=[[1], [100]], preds={"m": [[2], [np.nan]]},
                   valid={"m": [True, False]})
    assert point_metric(td, td.preds["m"], td.valid["m"])["primary"] == pytest.approx(2.0)


def test_relmae_zero_naive_error_is_undefined():
    td = task_data(numeric(1), ref=[[1]], naive=[[1]], preds={"m": [[2]]})
    assert np.isnan(point_metric(td, td.preds["m"], td.valid["m"])["primary"])


def test_macro_f1_over_all_labels_and_accuracy():
    # preds [yes,yes,no] vs refs [yes,no,no], labels (no,yes) -> (2/3 + 2/3)/2 (spec 8.2).
    no, yes, maybe = 0, 1, 2
    td = task_data(categorical(["no", "yes"]), ref=[[yes], [no], [no]], naive=[[no]] * 3,
                   preds={"m": [[yes], [yes], [no]]})
    res = point_metric(td, td.preds["m"], td.valid["m"], per_target=True)
    assert res["primary"] == pytest.approx(2 / 3)
    assert res["accuracy.c"] == pytest.approx(2 / 3)
    # A label absent from both predictions and references still counts (F1 = 0).
    td3 = task_data(categorical(["no", "yes", "maybe"]), ref=[[yes], [no], [no]],
                    naive=[[no]] * 3, preds={"m": [[yes], [yes], [no]]})
    assert point_metric(td3, td3.preds["m"], td3.valid["m"])["primary"] == pytest.approx(4 / 9)
    assert maybe == 2


def test_total_variation_hand_calculation():
    # TV 0.2 on one distribution, 0.1 on the other -> task TV 0.15.
    td = task_data(distribution(), ref=[[0.6, 0.4, 0.5, 0.5]], naive=[[0.5, 0.5, 0.5, 0.5]],
                   preds={"m": [[0.4, 0.6, 0.6, 0.4]]})
    res = point_metric(td, td.preds["m"], td.valid["m"], per_target=True)
    assert res["tv.a"] == pytest.approx(0.2)
    assert res["primary"] == pytest.approx(0.15)


@pytest.mark.parametrize("kind", ["numeric", "categorical", "distribution"])
def test_weights_equal_repeated_rows(kind):
    """Metric under bootstrap counts == metric of the rows materialised that many times."""
    rng = np.random.default_rng(3)
    n = 40
    if kind == "numeric":
        task, ref = numeric(2), rng.normal(size=(n, 2))
        naive, pred = ref + rng.normal(size=(n, 2)), ref + rng.normal(size=(n, 2))
    elif kind == "categorical":
        task = categorical(["a", "b", "c"])
        ref, naive, pred = (rng.integers(0, 3, (n, 1)).astype(float) for _ in range(3))
    else:
        task = distribution()
        p, q = rng.uniform(size=(n, 1)), rng.uniform(size=(n, 1))
        ref, naive = np.hstack([1 - p, p, 1 - q, q]), np.full((n, 4), 0.5)
        pred = np.clip(ref + rng.normal(0, 0.1, (n, 4)), 0, 1)
    valid = rng.random(n) > 0.2
    td = task_data(task, ref, naive, {"m": pred}, {"m": valid})
    w = resample_counts(n, 5, rng)
    assert (w.sum(axis=1) == n).all()
    vec = weighted_metric(td, pred, valid, w)["primary"]
    for b in range(5):
        rows = np.repeat(np.arange(n), w[b].astype(int))
        rep = task_data(task, ref[rows], naive[rows], {"m": pred[rows]}, {"m": valid[rows]})
        assert vec[b] == pytest.approx(point_metric(rep, rep.preds["m"], rep.valid["m"])["primary"])
