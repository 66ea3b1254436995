"""Metrics against hand calculations (spec 00_common.md section 8 and 11.2)."""

from __future__ import annotations

import math

import pytest

from hhx.config import DistributionConfig, FieldConfig, Mode, Shape, TargetType, TaskConfig
from hhx.scoring import compute_metrics
from hhx.scoring.metrics import (
    accuracy,
    macro_f1,
    nmae,
    relmae,
    relmae_by_field,
    total_variation,
)


def _task(kind: TargetType, fields=(), dists=()) -> TaskConfig:
    return TaskConfig(
        name=f"t_{kind.value}", topic="t", mode=Mode.baseline, survey="s", target_type=kind,
        shape=Shape.distribution_array if kind is TargetType.distribution else Shape.array,
        fields=[FieldConfig(name=n, labels=lab) for n, lab in fields],
        distributions=[DistributionConfig(name=n, labels=lab, columns=[n]) for n, lab in dists])


NUM = _task(TargetType.numeric, fields=[("total", None), ("non_durable", None), ("durable", None)])
CAT = _task(TargetType.categorical, fields=[("owns", ["no", "yes"]),
                                            ("status", ["a", "b", "c"])])
DIST = _task(TargetType.distribution, dists=[("move", ["no_move", "move"]),
                                             ("risk", ["no_event", "event"])])

NUMERIC_KEYS = {"metric_category", "primary_metric", "primary_score", "score_direction",
                "relmae_by_target", "mean_relmae", "nmae_by_target", "mean_nmae",
                "diagnostic_metrics"}
CATEGORICAL_KEYS = {"metric_category", "primary_metric", "primary_score", "score_direction",
                    "macro_f1_by_target", "mean_macro_f1", "accuracy_by_target", "mean_accuracy"}
DISTRIBUTION_KEYS = {"metric_category", "primary_metric", "primary_score", "score_direction",
                     "tv_by_distribution", "mean_total_variation"}


def test_numeric_hand_calculation():
    preds = [[2.0, 4.0, 6.0], [4.0, 8.0, 12.0]]
    refs = [[1.0, 2.0, 3.0], [3.0, 6.0, 9.0]]
    naives = [[0.0, 0.0, 0.0], [2.0, 4.0, 8.0]]
    m = compute_metrics(NUM, preds, refs, naives)
    # total:       model |2-1|+|4-3| = 2,  naive |0-1|+|2-3| = 2  -> 1
    # non_durable: model |4-2|+|8-6| = 4,  naive |0-2|+|4-6| = 4  -> 1
    # durable:     model |6-3|+|12-9| = 6, naive |0-3|+|8-9| = 4  -> 1.5
    assert m["relmae_by_target"] == pytest.approx({"total": 1.0, "non_durable": 1.0,
                                                   "durable": 1.5})
    assert m["mean_relmae"] == pytest.approx(7 / 6)  # (1 + 1 + 1.5) / 3
    assert m["primary_score"] == m["mean_relmae"]
    # nMAE = MAE / population SD of refs: 1/1, 2/2, 3/3 (refs {1,3}, {2,6}, {3,9}) -> all 1.
    assert m["nmae_by_target"] == pytest.approx({"total": 1.0, "non_durable": 1.0, "durable": 1.0})
    assert m["mean_nmae"] == pytest.approx(1.0)
    assert set(m) == NUMERIC_KEYS
    assert (m["metric_category"], m["primary_metric"], m["score_direction"]) == (
        "numeric", "mean_relmae", "lower_is_better")
    assert m["diagnostic_metrics"] == ["nmae_by_target", "mean_nmae"]


def test_nmae_is_none_for_constant_references_and_skipped_in_the_mean():
    assert nmae([1.0, 2.0], [5.0, 5.0]) is None
    preds = [[2.0, 0.0, 7.0], [4.0, 0.0, 7.0]]
    refs = [[1.0, 1.0, 5.0], [3.0, 3.0, 5.0]]
    naives = [[0.0, 0.0, 0.0], [2.0, 2.0, 0.0]]
    m = compute_metrics(NUM, preds, refs, naives)
    # total nMAE 1 (MAE 1, SD 1); non_durable MAE (1+3)/2 = 2, SD 1 -> 2; durable SD 0 -> None.
    assert m["nmae_by_target"]["durable"] is None
    assert m["mean_nmae"] == pytest.approx(1.5)  # mean of 1 and 2 only


def test_zero_naive_denominator_raises():
    with pytest.raises(ValueError, match=r"^durable:zero_naive_baseline_error$"):
        compute_metrics(NUM, [[1.0, 1.0, 1.0]], [[2.0, 2.0, 2.0]], [[0.0, 0.0, 2.0]])
    with pytest.raises(ValueError, match="x:zero_naive_baseline_error"):
        relmae([1.0], [2.0], [2.0], "x")


def test_relmae_by_field_accepts_ints():
    # Single row: |5-2| / |1-2| = 3.
    assert relmae_by_field(NUM, [[5, 5, 5]], [[2, 2, 2]], [[1, 1, 1]]) == {
        "total": 3.0, "non_durable": 3.0, "durable": 3.0}


def test_macro_f1_uses_every_label():
    # label no:  TP 1, FP 0, FN 1 -> 2/3;  label yes: TP 1, FP 1, FN 0 -> 2/3.
    assert macro_f1(["yes", "yes", "no"], ["yes", "no", "no"], ["no", "yes"]) == pytest.approx(
        (2 / 3 + 2 / 3) / 2)
    # A label absent from both sides still counts, with F1 0: (2/3 + 2/3 + 0) / 3 = 4/9.
    assert macro_f1(["yes", "yes", "no"], ["yes", "no", "no"],
                    ["no", "yes", "maybe"]) == pytest.approx(4 / 9)
    assert math.isnan(macro_f1([], [], ["no", "yes"]))


def test_accuracy():
    assert accuracy(["yes", "yes", "no"], ["yes", "no", "no"]) == pytest.approx(2 / 3)
    assert math.isnan(accuracy([], []))
    with pytest.raises(ValueError):
        accuracy(["yes"], [])


def test_categorical_task_metrics():
    preds = [["yes", "a"], ["yes", "a"], ["no", "b"]]
    refs = [["yes", "a"], ["no", "b"], ["no", "b"]]
    m = compute_metrics(CAT, preds, refs)
    # owns: as above, 2/3.  status over (a, b, c): a TP1 FP1 FN0 -> 2/3; b TP1 FP0 FN1 -> 2/3;
    # c absent -> 0; macro (2/3 + 2/3 + 0)/3 = 4/9.  Accuracy 2/3 for both fields.
    assert m["macro_f1_by_target"] == pytest.approx({"owns": 2 / 3, "status": 4 / 9})
    assert m["mean_macro_f1"] == pytest.approx((2 / 3 + 4 / 9) / 2)
    assert m["accuracy_by_target"] == pytest.approx({"owns": 2 / 3, "status": 2 / 3})
    assert m["mean_accuracy"] == pytest.approx(2 / 3)
    assert m["primary_score"] == m["mean_macro_f1"]
    assert set(m) == CATEGORICAL_KEYS
    assert (m["primary_metric"], m["score_direction"]) == ("mean_macro_f1", "higher_is_better")


def test_total_variation():
    assert total_variation([0.6, 0.4], [0.8, 0.2]) == pytest.approx(0.2)  # 0.5 * (0.2 + 0.2)
    with pytest.raises(ValueError):
        total_variation([0.5, 0.5], [1.0])


def test_distribution_task_metrics():
    preds = [[[0.6, 0.4], [1.0, 0.0]], [[0.5, 0.5], [1.0, 0.0]]]
    refs = [[[0.8, 0.2], [1.0, 0.0]], [[0.4, 0.6], [0.6, 0.4]]]
    m = compute_metrics(DIST, preds, refs)
    # move: TVs 0.2 and 0.1 -> 0.15.   risk: TVs 0 and 0.4 -> 0.2.   mean (0.15 + 0.2)/2.
    assert m["tv_by_distribution"] == pytest.approx({"move": 0.15, "risk": 0.2})
    assert m["mean_total_variation"] == pytest.approx(0.175)
    assert m["primary_score"] == m["mean_total_variation"]
    assert set(m) == DISTRIBUTION_KEYS
    assert (m["primary_metric"], m["score_direction"]) == ("mean_total_variation",
                                                           "lower_is_better")


def test_empty_valid_set_gives_null_score_and_empty_dicts():
    for task, naives, keys in ((NUM, [], NUMERIC_KEYS), (CAT, None, CATEGORICAL_KEYS),
                               (DIST, None, DISTRIBUTION_KEYS)):
        m = compute_metrics(task, [], [], naives)
        assert set(m) == keys
        assert m["primary_score"] is None
        assert all(v == {} for k, v in m.items() if k.endswith(("_by_target", "_by_distribution")))


def test_naive_baselines_required_for_numeric_and_refused_otherwise():
    with pytest.raises(ValueError, match="naive baseline"):
        compute_metrics(NUM, [[1.0, 1.0, 1.0]], [[2.0, 2.0, 2.0]], None)
    with pytest.raises(ValueError, match="naive baseline"):
        compute_metrics(NUM, [[1.0, 1.0, 1.0]], [[2.0, 2.0, 2.0]], [])
    with pytest.raises(ValueError, match="only accepted for numeric"):
        compute_metrics(CAT, [["no", "a"]], [["no", "a"]], [["no", "a"]])
