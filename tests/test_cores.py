"""The cores a job's threads use: the affinity mask capped by OMP_NUM_THREADS (parallel sweep
jobs share the machine), and XGBoost's results do not depend on the thread count."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import xgboost as xgb

from hhx import cores
from hhx.predictors import xgboost as hhx_xgb


@pytest.fixture
def four_cores(monkeypatch):
    monkeypatch.setattr(cores.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)


@pytest.mark.parametrize("value, expected", [
    (None, 4), ("2", 2), ("1", 1), ("16", 4),  # never more than the usable cores
    ("3,1", 3),  # OpenMP's nesting list: its first level is this process's
    ("0", 4), ("", 4), ("many", 4), ("-2", 4),  # not a positive count: no cap
])
def test_job_cores_follow_omp_num_threads(four_cores, monkeypatch, value, expected):
    if value is not None:
        monkeypatch.setenv("OMP_NUM_THREADS", value)
    assert cores.job_cores() == expected


def test_xgboost_threads_capped_by_the_job_and_said(four_cores, monkeypatch, caplog):
    assert hhx_xgb.fit_threads(2) == 2  # within the cores: as configured, no line
    assert hhx_xgb.fit_threads(8) == 4
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    with caplog.at_level(logging.INFO, logger="hhx.predictors.xgboost"):
        assert hhx_xgb.fit_threads(2) == 1
    assert "XGBoost: 1 thread(s), not model.xgboost.threads=2: OMP_NUM_THREADS=1" in caplog.text


@pytest.mark.parametrize("kind", ["classification", "regression"])
def test_xgboost_results_do_not_depend_on_threads(kind):
    """The premise of capping threads: the reference settings give bit-identical predictions
    with 1 and 2 threads, so a parallel sweep's scores equal a serial one's."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(1500, 8))
    if kind == "classification":
        params = {**hhx_xgb.CLASSIFICATION_PARAMS, "objective": "multi:softprob", "num_class": 3}
        y = np.digitize(x[:, 0] + rng.normal(size=len(x)), [-0.5, 0.5])
        cls = xgb.XGBClassifier
    else:
        params = {**hhx_xgb.REGRESSION_PARAMS, "objective": "reg:absoluteerror"}
        y = 3 * x[:, 1] + rng.normal(size=len(x))
        cls = xgb.XGBRegressor
    params.update(hhx_xgb.COMMON_PARAMS, n_estimators=15, random_state=3)
    out = []
    for threads in (1, 2):
        model = cls(**params, n_jobs=threads).fit(x, y)
        out.append(model.predict_proba(x) if kind == "classification" else model.predict(x))
    assert np.array_equal(out[0], out[1])
