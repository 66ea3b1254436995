"""Benchmark: the leaderboard's paired bootstrap on the full grid vs a per-resample Python loop.

Full grid: 32 tasks (conf/task/*.yaml; synthetic stand-ins if fewer exist) x 16 models (one of
them XGBoost, the comparator) x 200 examples x 10,000 resamples, with every model's metric, its
difference to no-change and to XGBoost, and the average-rank bootstrap. The straightforward
loop (a resample's row indices, then each metric computed on those rows) runs on a subset of
tasks and resamples in the same process; the table gives the speed-up ratio on that subset and
the loop's extrapolated full-grid time. Data are simulated answers (no real households).

    .venv/bin/python benchmarks/bench_bootstrap.py [--resamples 10000] [--loop-resamples 100]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from hhx.config import (
    DistributionConfig,
    FieldConfig,
    Mode,
    Shape,
    TargetType,
    TaskConfig,
)
from hhx.leaderboard.bootstrap import bootstrap_task, resample_counts, task_rng
from hhx.leaderboard.examples import TaskData, segments_for
from hhx.leaderboard.metrics import PRIMARY, weighted_metric
from hhx.leaderboard.rank import bootstrap_average_rank

N_TASKS, N_MODELS, N = 32, 16, 200
XGB = "m00"


def tasks() -> list[TaskConfig]:
    """The 32 registered tasks; stand-ins with the spec's type mix if some are not written yet."""
    try:
        from hhx.tasks.registry import load_task, task_names

        found = [load_task(n) for n in task_names()]
    except Exception:
        found = []
    while len(found) < N_TASKS:
        i = len(found)
        kind = ("numeric",) * 18 + ("categorical",) * 9 + ("distribution",) * 5
        k = TargetType(kind[i])
        if k is TargetType.distribution:
            found.append(TaskConfig(name=f"stand_in_{i}", topic="t", mode=Mode.baseline,
                                    survey="s", target_type=k, shape=Shape.distribution_array,
                                    distributions=[DistributionConfig(
                                        name="d", labels=["a", "b"], columns=["p"])]))
        else:
            labels = ["a", "b", "c"] if k is TargetType.categorical else None
            found.append(TaskConfig(name=f"stand_in_{i}", topic="t", mode=Mode.baseline,
                                    survey="s", target_type=k, shape=Shape.array,
                                    fields=[FieldConfig(name="f", labels=labels)]))
    return found[:N_TASKS]


def simulate(task: TaskConfig, rng: np.random.Generator) -> TaskData:
    segs = segments_for(task)
    width = segs[-1].stop
    kind = task.target_type.value
    if kind == "numeric":
        ref = rng.normal(100, 30, (N, width))
        naive = ref + rng.normal(0, 20, (N, width))
        make = lambda: ref + rng.normal(0, rng.uniform(5, 30), (N, width))  # noqa: E731
    elif kind == "categorical":
        k = [len(s.labels or []) for s in segs]
        ref = np.column_stack([rng.integers(0, ki, N) for ki in k]).astype(float)
        naive = np.column_stack([rng.integers(0, ki, N) for ki in k]).astype(float)

        def make():
            noise = np.column_stack([rng.integers(0, ki, N) for ki in k])
            return np.where(rng.random((N, len(k))) < 0.6, ref, noise).astype(float)
    else:
        def vectors():
            return np.hstack([rng.dirichlet(np.ones(s.stop - s.start), N) for s in segs])
        ref, naive = vectors(), vectors()
        make = lambda: 0.5 * ref + 0.5 * vectors()  # noqa: E731
    td = TaskData(task=task, keys=np.arange(N).astype(str),
                  release_date=pd.Series(pd.to_datetime(["2020-01-01"] * N)), segments=segs,
                  ref=ref, naive=naive)
    for j in range(N_MODELS):
        m = f"m{j:02d}"
        td.preds[m], td.valid[m] = make(), rng.random(N) > 0.05
        td.backends[m] = "xgboost" if m == XGB else "litellm"
    return td


# --------------------------------------------------------------------------------------------
# The straightforward loop: rows of one resample, then each metric on them


def loop_metric(td: TaskData, pred: np.ndarray, valid: np.ndarray, idx: np.ndarray) -> float:
    rows = idx[valid[idx]]
    if len(rows) == 0:
        return float("nan")
    p, r = pred[rows], td.ref[rows]
    kind = td.target_type
    if kind == "numeric":
        den = np.abs(td.naive[rows] - r).sum(axis=0)
        return float(np.mean(np.abs(p - r).sum(axis=0) / den))
    if kind == "distribution":
        return float(np.mean([0.5 * np.abs(p[:, s.start:s.stop] - r[:, s.start:s.stop])
                              .sum(axis=1).mean() for s in td.segments]))
    f1s = []
    for s in td.segments:
        scores = []
        for lab in range(len(s.labels or [])):
            tp = np.sum((p[:, s.start] == lab) & (r[:, s.start] == lab))
            pc, rc = np.sum(p[:, s.start] == lab), np.sum(r[:, s.start] == lab)
            scores.append(2 * tp / (pc + rc) if pc + rc else 0.0)
        f1s.append(np.mean(scores))
    return float(np.mean(f1s))


def loop_task(td: TaskData, b: int, rng: np.random.Generator) -> np.ndarray:
    """Same outputs as bootstrap_task (own, vs no-change, vs XGBoost), one resample at a time."""
    out = []
    for _ in range(b):
        idx = rng.integers(0, td.n, td.n)
        row = []
        for m in td.models:
            row.append(loop_metric(td, td.preds[m], td.valid[m], idx))
            row.append(loop_metric(td, td.naive, td.valid[m], idx))
            if m != XGB:
                joint = td.valid[m] & td.valid[XGB]
                row.append(loop_metric(td, td.preds[m], joint, idx))
                row.append(loop_metric(td, td.preds[XGB], joint, idx))
        out.append(row)
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--loop-resamples", type=int, default=100)
    ap.add_argument("--loop-tasks", type=int, default=8, help="every k-th task of the 32")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    tds = [simulate(t, rng) for t in tasks()]

    t0 = time.perf_counter()
    boots = [bootstrap_task(td, args.resamples, task_rng(1, td.name), XGB) for td in tds]
    t_boot = time.perf_counter() - t0
    t0 = time.perf_counter()
    models = [f"m{j:02d}" for j in range(N_MODELS)]
    bootstrap_average_rank(boots, models, {td.name: td.higher_is_better for td in tds})
    t_rank = time.perf_counter() - t0
    t_full = t_boot + t_rank

    step = max(1, N_TASKS // args.loop_tasks)
    subset = tds[::step][: args.loop_tasks]
    t0 = time.perf_counter()
    for td in subset:
        loop_task(td, args.loop_resamples, np.random.default_rng(2))
    t_loop = time.perf_counter() - t0
    t0 = time.perf_counter()
    for td in subset:
        bootstrap_task(td, args.loop_resamples, task_rng(1, td.name), XGB)
    t_vec_subset = time.perf_counter() - t0

    # Same resamples through both paths: identical metrics.
    td = subset[-1]
    w = resample_counts(td.n, 20, np.random.default_rng(3))
    idx = [np.repeat(np.arange(td.n), w[b].astype(int)) for b in range(20)]
    vec = weighted_metric(td, td.preds["m01"], td.valid["m01"], w)[PRIMARY]
    loop = np.array([loop_metric(td, td.preds["m01"], td.valid["m01"], i) for i in idx])
    max_diff = float(np.nanmax(np.abs(vec - loop)))

    per_resample_loop = t_loop / (len(subset) * args.loop_resamples)
    loop_full = per_resample_loop * N_TASKS * args.resamples
    per_resample_vec_subset = t_vec_subset / (len(subset) * args.loop_resamples)
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(f"grid: {N_TASKS} tasks x {N_MODELS} models x {N} examples x {args.resamples} resamples"
          f" (own metric, vs no-change, vs XGBoost; average-rank bootstrap)")
    print(f"{'path':<44}{'tasks':>6}{'resamples':>10}{'seconds':>10}{'ms/task/resample':>18}")
    print(f"{'vectorised bootstrap (full grid)':<44}{N_TASKS:>6}{args.resamples:>10}"
          f"{t_boot:>10.2f}{1e3 * t_boot / (N_TASKS * args.resamples):>18.4f}")
    print(f"{'vectorised average-rank bootstrap':<44}{N_TASKS:>6}{args.resamples:>10}"
          f"{t_rank:>10.2f}{'':>18}")
    print(f"{'vectorised, loop subset':<44}{len(subset):>6}{args.loop_resamples:>10}"
          f"{t_vec_subset:>10.2f}{1e3 * per_resample_vec_subset:>18.4f}")
    print(f"{'per-resample Python loop, subset':<44}{len(subset):>6}{args.loop_resamples:>10}"
          f"{t_loop:>10.2f}{1e3 * per_resample_loop:>18.4f}")
    print(f"{'per-resample loop, extrapolated full grid':<44}{N_TASKS:>6}{args.resamples:>10}"
          f"{loop_full:>10.0f}{'':>18}")
    print(f"speed-up (loop / vectorised, per task-resample, full-grid vectorised rate): "
          f"{per_resample_loop / (t_boot / (N_TASKS * args.resamples)):.0f}x")
    verdict = "met" if t_full < 60 else "MISSED"
    print(f"full grid vectorised: {t_full:.1f} s (goal < 60 s: {verdict})"
          f"; peak RSS {rss_gb:.2f} GB; max |vectorised - loop| on identical resamples "
          f"{max_diff:.2e}")


if __name__ == "__main__":
    main()
