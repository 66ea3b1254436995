"""K-draw aggregation on constructed draws: means, simplex means, majority vote and its ties."""

from __future__ import annotations

import math

import pytest

from hhx.config import DistributionConfig, FieldConfig, Mode, Shape, TargetType, TaskConfig
from hhx.predictors.llm.aggregation import aggregate, majority_vote
from hhx.scoring.parser import answer_spec, parse_answer


def _task(target: TargetType, **kw) -> TaskConfig:
    shape = Shape.distribution_array if target is TargetType.distribution else Shape.array
    return TaskConfig(
        name="t", topic="x", mode=Mode.baseline, survey="s", target_type=target, shape=shape, **kw
    )


NUMERIC = answer_spec(_task(TargetType.numeric, fields=[FieldConfig("a"), FieldConfig("b")]))
LABELS = ["employed", "unemployed", "not_in_labor_force"]
CATEGORICAL = answer_spec(
    _task(
        TargetType.categorical,
        fields=[FieldConfig("status", labels=LABELS), FieldConfig("other", labels=["x", "y"])],
    )
)
DISTRIBUTION = answer_spec(
    _task(
        TargetType.distribution,
        distributions=[
            DistributionConfig("move", labels=["no", "yes"], columns=["p"]),
            DistributionConfig("bins", labels=["l", "m", "h"], columns=["a", "b", "c"]),
        ],
    )
)


def test_numeric_mean_per_field():
    out = aggregate(NUMERIC, [[1.0, 10.0], [2.0, 20.0], [6.0, -3.0]])
    assert out == pytest.approx([3.0, 9.0])


def test_probability_mean_stays_on_the_simplex_and_parses():
    draws = [
        [[0.1, 0.9], [0.2, 0.3, 0.5]],
        [[0.7, 0.3], [1 / 3, 1 / 3, 1 / 3]],
        [[0.33, 0.67], [0.0, 0.0, 1.0]],
    ]
    out = aggregate(DISTRIBUTION, draws)
    assert out[0] == pytest.approx([(0.1 + 0.7 + 0.33) / 3, (0.9 + 0.3 + 0.67) / 3])
    for vector in out:
        assert math.isclose(sum(vector), 1.0, abs_tol=1e-9)
        assert all(0 <= p <= 1 for p in vector)
    # The aggregate is itself a valid answer for the strict parser.
    assert parse_answer(DISTRIBUTION, out).valid


def test_majority_vote_per_field():
    draws = [
        ["employed", "y"],
        ["unemployed", "y"],
        ["unemployed", "x"],
        ["employed", "y"],
        ["unemployed", "x"],
    ]
    assert aggregate(CATEGORICAL, draws) == ["unemployed", "y"]


def test_tie_first_draw_takes_the_tied_label_drawn_earliest():
    votes = ["not_in_labor_force", "employed", "employed", "not_in_labor_force", "unemployed"]
    assert majority_vote(votes, LABELS, "first_draw") == "not_in_labor_force"
    # The same votes in another order: the earliest of the tied labels changes, so does the winner.
    assert majority_vote(list(reversed(votes)), LABELS, "first_draw") == "not_in_labor_force"
    assert majority_vote(votes[1:] + votes[:1], LABELS, "first_draw") == "employed"


def test_tie_label_order_takes_the_tied_label_listed_first():
    votes = ["not_in_labor_force", "unemployed", "unemployed", "not_in_labor_force"]
    assert majority_vote(votes, LABELS, "label_order") == "unemployed"
    assert majority_vote(votes, LABELS, "first_draw") == "not_in_labor_force"


def test_a_clear_majority_ignores_the_tie_rule():
    votes = ["employed", "unemployed", "unemployed"]
    for rule in ("first_draw", "label_order"):
        assert majority_vote(votes, LABELS, rule) == "unemployed"


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="tie rule"):
        majority_vote(["employed"], LABELS, "random")
    with pytest.raises(ValueError, match="at least one"):
        aggregate(NUMERIC, [])
