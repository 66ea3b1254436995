"""The cores a job's threads use: the affinity mask capped by OMP_NUM_THREADS (llama.cpp in
parallel sweep jobs), XGBoost's fits re-sized to the cores other processes leave free, and
XGBoost's results independent of the thread count."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

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


def test_xgboost_threads_at_most_the_usable_cores_and_said(four_cores, caplog):
    assert hhx_xgb.fit_threads(2) == 2  # within the cores: as configured, no line
    with caplog.at_level(logging.INFO, logger="hhx.predictors.xgboost"):
        assert hhx_xgb.fit_threads(8) == 4
    assert "XGBoost: 4 thread(s), not model.xgboost.threads=8: this job may use 4" in caplog.text


def test_other_busy_cores_leave_a_fit_fewer_threads(four_cores):
    assert cores.share_threads(4, 0.2) == 4
    assert cores.share_threads(4, 2.6) == 1  # 4 - 3
    assert cores.share_threads(2, 1.0) == 2  # at most the configured threads
    assert cores.share_threads(4, 7.0) == 1  # never none


class Meter:
    """Readings in turn: other processes busy on 0, 1, 0, 1 ... cores."""

    def __init__(self):
        self.n = 0

    def other_busy(self) -> float:
        self.n += 1
        return float(self.n % 2)


def test_thread_share_resizes_a_fit_and_keeps_its_result(monkeypatch):
    """Parallel jobs: a fit drops to the free cores and takes them back; the fitted model is
    the same as with a fixed thread count."""
    monkeypatch.setattr(cores, "usable_cores", lambda: 2)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(1500, 8))
    y = 3 * x[:, 1] + rng.normal(size=len(x))
    params = {**hhx_xgb.REGRESSION_PARAMS, **hhx_xgb.COMMON_PARAMS,
              "objective": "reg:absoluteerror", "n_estimators": 15, "random_state": 3}
    share = hhx_xgb.ThreadShare(2, interval=0.0)
    monkeypatch.setattr(hhx_xgb, "CoreMeter", Meter)
    resized = xgb.XGBRegressor(**params, n_jobs=2, callbacks=[share]).fit(x, y)
    assert share.used == {1, 2}  # it ran on one thread and on two
    fixed = xgb.XGBRegressor(**params, n_jobs=2).fit(x, y)
    assert np.array_equal(resized.predict(x), fixed.predict(x))


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


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="needs Linux /proc/stat")
def test_core_meter_counts_other_processes_not_this_one():
    """The meter's readings against what the kernel says each process used in the same interval:
    on a busy machine a spinning process gets only part of a core, so the test compares shares,
    and waits for enough CPU time to have been used (a generous ceiling, never a fixed quota)."""
    meter = cores.CoreMeter()
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # the child is up and spinning
        meter.other_busy()
        child0, t0 = _cpu_seconds(spin.pid), time.monotonic()
        deadline = t0 + 120
        while _cpu_seconds(spin.pid) - child0 < 0.3 and time.monotonic() < deadline:
            time.sleep(0.1)
        busy = meter.other_busy()
        child_share = (_cpu_seconds(spin.pid) - child0) / (time.monotonic() - t0)
        assert busy >= 0.8 * child_share - 0.05  # the child's core counts as another's
    finally:
        spin.kill()
        spin.wait()
    meter.other_busy()
    own0, t0 = sum(os.times()[:2]), time.monotonic()
    deadline = t0 + 120
    while sum(os.times()[:2]) - own0 < 0.3 and time.monotonic() < deadline:
        pass  # this process spins: its own core, not another's
    meter.other_busy()
    own_share = (sum(os.times()[:2]) - own0) / (time.monotonic() - t0)
    assert meter.own == pytest.approx(own_share, rel=0.25, abs=0.05)


def test_a_users_omp_num_threads_caps_xgboost_but_joblibs_share_does_not(four_cores,
                                                                         monkeypatch):
    monkeypatch.delenv(cores.USER_LIMIT_VAR, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the user's, outside a sweep
    assert hhx_xgb.fit_threads(2) == 1
    # a joblib worker: OMP_NUM_THREADS is joblib's share, the sweep recorded the user had none
    monkeypatch.setenv(cores.USER_LIMIT_VAR, "")
    assert hhx_xgb.fit_threads(2) == 2
    monkeypatch.setenv(cores.USER_LIMIT_VAR, "3")  # ... or that the user had 3
    assert hhx_xgb.fit_threads(4) == 3

