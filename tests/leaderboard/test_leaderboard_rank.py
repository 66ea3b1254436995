"""Average rank: explicit ties, direction, missing tasks, bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hhx.leaderboard.bootstrap import TaskBootstrap
from hhx.leaderboard.rank import (
    average_rank,
    bootstrap_average_rank,
    leaderboard_table,
    rank_with_ties,
)


def test_ties_share_the_average_rank():
    assert rank_with_ties(np.array([0.5, 0.5, 0.7, 0.3]), False).tolist() == [2.5, 2.5, 4, 1]
    assert rank_with_ties(np.array([0.5, 0.5, 0.7, 0.3]), True).tolist() == [2.5, 2.5, 1, 4]
    assert rank_with_ties(np.array([0.2, 0.2, 0.2]), False).tolist() == [2, 2, 2]
    # Equal scores summed in a different order differ in the last bit; still a tie.
    assert rank_with_ties(np.array([0.1 + 0.2, 0.3, 0.5]), False).tolist() == [1.5, 1.5, 3]


def test_missing_model_not_ranked_and_not_counted():
    r = rank_with_ties(np.array([0.5, np.nan, 0.3]), False)
    assert r[0] == 2 and np.isnan(r[1]) and r[2] == 1


def test_average_rank_with_a_missing_task():
    # t1: RelMAE (lower better), t2: macro-F1 (higher better); C lacks t2.
    points = pd.DataFrame({"t1": [0.9, 0.8, 0.8], "t2": [0.6, 0.5, np.nan]},
                          index=["A", "B", "C"])
    table = average_rank(points, {"t1": False, "t2": True}).set_index("model")
    # t1 ranks: A 3, B 1.5, C 1.5; t2 ranks: A 1, B 2.
    assert table.loc["A", "avg_rank"] == pytest.approx(2.0)
    assert table.loc["B", "avg_rank"] == pytest.approx(1.75)
    assert table.loc["C", "avg_rank"] == pytest.approx(1.5)
    assert table.loc["C", "missing_tasks"] == "t2" and not table.loc["C", "complete"]
    assert table.loc["C", "n_tasks_ranked"] == 1


def _tb(task: str, draws: dict[str, np.ndarray]) -> TaskBootstrap:
    models = list(draws)
    return TaskBootstrap(task=task, models=models,
                         point={m: float(np.mean(d)) for m, d in draws.items()},
                         draws=np.column_stack([draws[m] for m in models]))


def test_bootstrap_rank_ranks_within_each_resample():
    b = 1000
    rng = np.random.default_rng(0)
    base = rng.normal(size=b)
    boots = [
        _tb("t1", {"A": base, "B": base + 1.0}),  # A always better (lower)
        _tb("t2", {"A": base, "B": base}),  # always tied
        _tb("t3", {"A": rng.normal(size=b), "B": rng.normal(size=b)}),  # coin flip
    ]
    ranks = bootstrap_average_rank(boots, ["A", "B"], {"t1": False, "t2": False, "t3": False})
    # A: (1 + 1.5 + {1 or 2}) / 3; per task the two ranks sum to 3, so the averages sum to 3.
    assert set(np.round(ranks[:, 0] * 3, 9)) == {3.5, 4.5}
    assert np.allclose(ranks.sum(axis=1), 3.0)
    assert 0.45 < np.mean(ranks[:, 0] * 3 == 3.5) < 0.55


def test_leaderboard_puts_incomplete_models_last_with_intervals():
    points = pd.DataFrame({"t1": [0.9, 0.5, 0.1], "t2": [0.9, 0.5, np.nan]}, index=["A", "B", "C"])
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 0.01, 500)
    boots = [_tb("t1", {"A": 0.9 + noise, "B": 0.5 + noise, "C": 0.1 + noise}),
             _tb("t2", {"A": 0.9 + noise, "B": 0.5 + noise})]
    table = leaderboard_table(points, boots, {"t1": False, "t2": False}, 0.95)
    assert table["model"].tolist() == ["B", "A", "C"]  # C ranks 1st on its one task, listed last
    assert table.set_index("model").loc["B", ["rank_lo", "rank_hi"]].tolist() == [1.5, 1.5]
