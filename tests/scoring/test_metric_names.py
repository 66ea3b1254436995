"""One name per metric (hhx/scoring/metric_names.py): the table agrees with what the scorer
computes and reports, and the evaluate console's headline says which metric, which way is better,
and how many rows were scored of how many and why."""

from __future__ import annotations

import json

import pytest

from hhx.config import DistributionConfig, FieldConfig, Mode, Shape, TargetType, TaskConfig
from hhx.scoring import describe, score_task
from hhx.scoring.metric_names import METRICS, headline, metric, official, reported, rows_line
from hhx.scoring.metrics import compute_metrics

CAT = TaskConfig(name="sim_cat", topic="t", mode=Mode.baseline, survey="sim",
                 target_type=TargetType.categorical, shape=Shape.array,
                 fields=[FieldConfig(name="status", labels=["a", "b", "c"])])
NUM = TaskConfig(name="sim_num", topic="t", mode=Mode.baseline, survey="sim",
                 target_type=TargetType.numeric, shape=Shape.array,
                 fields=[FieldConfig(name="x"), FieldConfig(name="y")])
DIST = TaskConfig(name="sim_dist", topic="t", mode=Mode.baseline, survey="sim",
                  target_type=TargetType.distribution, shape=Shape.distribution_array,
                  distributions=[DistributionConfig(name="move", labels=["no", "yes"],
                                                    columns=["p"])])


@pytest.mark.parametrize("task", [CAT, NUM, DIST])
def test_table_agrees_with_the_scorer(task):
    """The official metric, its result key and direction are the scorer's own; every metric the
    scorer reports (official and diagnostic) has exactly one entry."""
    empty = compute_metrics(task, [], [], [] if task is NUM else None)
    m = official(task.target_type)
    assert m.key == empty["primary_metric"]
    assert m.higher_is_better == (empty["score_direction"] == "higher_is_better")
    info = describe(task)
    stems = {metric(s).stem for s in info["official_metrics"] + info["diagnostic_metrics"]}
    assert stems == {r.stem for r in reported(task.target_type)}
    assert reported(task.target_type)[0] is m
    for r in reported(task.target_type):
        assert r.key in empty  # a result key the scorer writes


def test_each_metric_has_one_name_for_every_spelling():
    names = [m.name for m in METRICS]
    assert len(set(names)) == len(names)
    for m in METRICS:
        assert metric(m.key) is metric(m.stem) is metric(m.name) is m
        assert m.definition and m.label == f"{m.name} ({m.direction})"
    assert metric("total_variation") is metric("mean_tv") is official("distribution")
    with pytest.raises(KeyError, match="unknown metric 'f2'"):
        metric("f2")


def test_headline_counts_invalid_answers_left_out():
    """30 of 200 corrupted answers: the headline names the metric and says 170 of 200 scored."""
    gold = [{"id": str(i), "assistant": json.dumps([["a", "b", "c"][i % 3]])} for i in range(200)]
    preds = [{"id": str(i), "prediction": json.dumps([["a", "b", "c"][(i // 2) % 3]])}
             for i in range(190)]
    for i in range(20):
        preds[i]["prediction"] = "I think a"  # not JSON
    for i in range(20, 30):
        preds[i]["prediction"] = '["d"]'  # not an allowed label
    result = score_task(CAT, gold, preds)
    assert result["num_valid"] == 160 and result["num_examples"] == 200
    lines = headline(result).splitlines()
    first, second = lines[0], lines[-1]
    assert first == "official metric: mean macro-F1 (higher is better)"
    definition = " ".join(ln.strip() for ln in lines[1:-1])
    assert definition == official("categorical").definition
    assert all(len(ln) <= 100 for ln in lines[:-1])
    assert second.startswith("scored 160 of 200 rows; 40 left out of the score")
    assert "30 invalid answers (" in second and "invalid_label 10" in second
    assert "10 rows without an answer" in second
    assert sum(result["error_counts"].values()) == 40


def test_headline_for_no_change_explains_relmae_one():
    gold = [{"id": str(i), "assistant": f"[{i}, {2 * i}]", "naive_baseline": f"[{i + 1}, {i}]"}
            for i in range(5)]
    naive = [{"id": g["id"], "prediction": g["naive_baseline"]} for g in gold]
    result = score_task(NUM, gold, naive)
    assert result["metrics"]["primary_score"] == 1.0
    text = headline(result)
    words = " ".join(text.split())
    assert "mean RelMAE (lower is better)" in words and "no-change itself scores exactly 1" in words
    assert text.splitlines()[-1] == "scored 5 of 5 rows (every answer valid)"


def test_rows_line_without_error_counts():
    assert rows_line(3, 4) == ("scored 3 of 4 rows; 1 left out of the score, as the official "
                               "rule does: 1 invalid or missing answer")
