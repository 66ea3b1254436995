"""Paired bootstrap on simulated data with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from hhx.config import DistributionConfig, Mode, Shape, TargetType, TaskConfig
from hhx.leaderboard.bootstrap import (
    bootstrap_task,
    percentile_interval,
    resample_counts,
    task_rng,
)
from hhx.leaderboard.examples import TaskData, segments_for
from hhx.leaderboard.metrics import PRIMARY, weighted_metric

TASK = TaskConfig(name="sim", topic="t", mode=Mode.baseline, survey="s",
                  target_type=TargetType.distribution, shape=Shape.distribution_array,
                  distributions=[DistributionConfig(name="p", labels=["no", "yes"], columns=["p"])])


def binary_task(r: np.ndarray, preds: dict[str, np.ndarray]) -> TaskData:
    """A one-distribution task with reference probability r and predicted probabilities."""
    import pandas as pd

    def vec(p):
        return np.column_stack([1 - p, p])

    n = len(r)
    td = TaskData(task=TASK, keys=np.arange(n).astype(str),
                  release_date=pd.Series(pd.to_datetime(["2020-01-01"] * n)),
                  segments=segments_for(TASK), ref=vec(r), naive=vec(np.full(n, 0.5)))
    for m, p in preds.items():
        td.preds[m], td.valid[m], td.backends[m] = vec(p), np.ones(n, bool), "litellm"
    return td


def test_resample_counts_are_multinomial_and_seeded():
    w = resample_counts(200, 2000, task_rng(1, "a"))
    assert (w.sum(axis=1) == 200).all()
    assert w.mean() == pytest.approx(1.0)
    # Multinomial(n, 1/n): each count has variance (1 - 1/n).
    assert w.var() == pytest.approx(1 - 1 / 200, rel=0.03)
    assert np.array_equal(w, resample_counts(200, 2000, task_rng(1, "a")))
    assert not np.array_equal(w, resample_counts(200, 2000, task_rng(1, "b")))


def test_interval_coverage_near_nominal_for_mean_difference():
    """Model a predicts 0.5, b predicts 0.25, truth ~ U(0,1): E TV_a - E TV_b = 0.25 - 0.3125."""
    true_diff, true_a = 0.25 - 0.3125, 0.25
    rng = np.random.default_rng(2026)
    hits_diff = hits_a = 0
    reps = 200
    for _ in range(reps):
        r = rng.uniform(size=200)
        td = binary_task(r, {"a": np.full(200, 0.5), "b": np.full(200, 0.25)})
        tb = bootstrap_task(td, 400, rng, xgb_model="b")
        comp = next(c for c in tb.comparisons if c.comparator == "b")
        lo, hi = percentile_interval(comp.draws_diff, 0.90)
        hits_diff += lo <= true_diff <= hi
        lo, hi = percentile_interval(tb.model_draws("a"), 0.90)
        hits_a += lo <= true_a <= hi
    # Binomial sd of the coverage at 200 datasets is about 0.02.
    assert 0.84 <= hits_diff / reps <= 0.96
    assert 0.84 <= hits_a / reps <= 0.96


def test_paired_interval_narrower_than_unpaired_for_correlated_models():
    rng = np.random.default_rng(7)
    n = 200
    r = rng.uniform(size=n)
    shared = rng.normal(0, 0.3, n)  # both models make mostly the same errors
    a = np.clip(r + shared, 0, 1)
    b = np.clip(r + shared + rng.normal(0, 0.05, n), 0, 1)
    td = binary_task(r, {"a": a, "b": b})
    w1, w2 = resample_counts(n, 2000, rng), resample_counts(n, 2000, rng)

    def tv(model, w):
        return weighted_metric(td, td.preds[model], td.valid[model], w)[PRIMARY]

    paired = tv("a", w1) - tv("b", w1)
    unpaired = tv("a", w1) - tv("b", w2)

    def width(draws):
        lo, hi = percentile_interval(draws, 0.95)
        return hi - lo

    assert width(paired) < 0.5 * width(unpaired)
    # And bootstrap_task pairs: its difference draws use one resample matrix for both models.
    tb = bootstrap_task(td, 2000, task_rng(0, "sim"), xgb_model="b")
    comp = next(c for c in tb.comparisons if c.comparator == "b")
    assert width(comp.draws_diff) < 0.5 * width(unpaired)


def test_task_draws_do_not_depend_on_other_models():
    rng = np.random.default_rng(1)
    r = rng.uniform(size=50)
    one = binary_task(r, {"a": np.full(50, 0.4)})
    two = binary_task(r, {"a": np.full(50, 0.4), "z": rng.uniform(size=50)})
    d1 = bootstrap_task(one, 300, task_rng(5, "sim")).model_draws("a")
    d2 = bootstrap_task(two, 300, task_rng(5, "sim")).model_draws("a")
    assert np.allclose(d1, d2, rtol=1e-12, atol=0)  # same resamples; BLAS may differ in ulps
