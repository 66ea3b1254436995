"""Average rank across tasks (lower is better), with explicit ties and bootstrap intervals.

Per task, models are ranked on the official metric (1 = best; RelMAE and TV lower is better,
macro-F1 higher). Tied models share the average of the ranks they occupy (two models tied for
first both get 1.5). A model without a score on a task is not ranked there: its average is over
the tasks it has, and the table says how many it lacks, so it is never silently compared with
complete models. Bootstrap intervals rank the models within every resample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from hhx.leaderboard.bootstrap import TaskBootstrap, percentile_interval

TIE_RTOL = 1e-12  # scores this close are tied: the same sums added in another order


def rank_with_ties(values: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Ranks along the last axis: 1 + #strictly better + (#tied others) / 2; NaN stays NaN."""
    v = -values if higher_is_better else values
    a, b = v[..., :, None], v[..., None, :]  # [.., i, j] compares model i with model j
    with np.errstate(invalid="ignore"):
        tol = TIE_RTOL * np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
        tied = np.abs(a - b) <= tol  # NaN is never tied nor better
        better = (b < a) & ~tied  # j beats i
    ranks = 1.0 + better.sum(axis=-1) + (tied.sum(axis=-1) - 1) / 2.0
    return np.where(np.isnan(v), np.nan, ranks)


def rank_table(points: pd.DataFrame, higher_is_better: Mapping[str, bool]) -> pd.DataFrame:
    """Per-task ranks (models x tasks) from point metrics (models x tasks, NaN = missing)."""
    out = pd.DataFrame(index=points.index, columns=points.columns, dtype=float)
    for task in points.columns:
        out[task] = rank_with_ties(points[task].to_numpy(float), higher_is_better[task])
    return out


def average_rank(
    points: pd.DataFrame, higher_is_better: Mapping[str, bool]
) -> pd.DataFrame:
    """Average rank per model with the tasks it was ranked on and those it lacks."""
    ranks = rank_table(points, higher_is_better)
    rows = []
    for model in points.index:
        r = ranks.loc[model]
        missing = [t for t in points.columns if np.isnan(r[t])]
        rows.append(
            {
                "model": model,
                "avg_rank": (float(np.nanmean(r.to_numpy(float)))
                             if len(missing) < len(r) else np.nan),
                "n_tasks_ranked": int(len(r) - len(missing)),
                "n_tasks_total": int(len(r)),
                "missing_tasks": ", ".join(missing),
                "complete": not missing,
            }
        )
    return pd.DataFrame(rows)


def bootstrap_average_rank(
    boots: Sequence[TaskBootstrap],
    models: Sequence[str],
    higher_is_better: Mapping[str, bool],
) -> np.ndarray:
    """(B x models) average rank in each resample; a task's draws are ranked within resample b."""
    b = boots[0].draws.shape[0]
    total = np.zeros((b, len(models)))
    count = np.zeros((b, len(models)))
    for tb in boots:
        vals = np.full((b, len(models)), np.nan)
        for j, m in enumerate(models):
            if m in tb.models:
                vals[:, j] = tb.model_draws(m)
        r = rank_with_ties(vals, higher_is_better[tb.task])
        total += np.nan_to_num(r)
        count += ~np.isnan(r)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def leaderboard_table(
    points: pd.DataFrame,
    boots: Sequence[TaskBootstrap],
    higher_is_better: Mapping[str, bool],
    confidence: float,
) -> pd.DataFrame:
    """Models sorted by average rank, with its bootstrap interval; complete models first."""
    table = average_rank(points, higher_is_better)
    draws = bootstrap_average_rank(boots, list(points.index), higher_is_better)
    lo, hi = percentile_interval(draws, confidence)
    table["rank_lo"], table["rank_hi"] = lo, hi
    table = table.sort_values(["complete", "avg_rank", "model"], ascending=[False, True, True])
    return table.reset_index(drop=True)
