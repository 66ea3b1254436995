"""Paired i.i.d. bootstrap of task metrics (paper section 3.2), vectorised over resamples.

Per task, one (B x n) matrix of resample counts (multinomial(n, 1/n) draws, made from uniform
row indices by a bincount) is shared by every model, so all models are scored on the SAME
resampled households. A model and its comparator (no-change, XGBoost) are scored on the rows
valid for both. Metrics come from `W @ stats` (hhx.leaderboard.metrics), never from a Python
loop over resamples. Seeds are derived per task from (seed, task name), so a task's draws do not
depend on which other tasks or models are in the leaderboard.

`bootstrap_bar` is the progress (hhx.progress) over every task's resamples; `bootstrap_task`
advances it a chunk at a time, its postfix naming the task.
"""

from __future__ import annotations

import warnings
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hhx.leaderboard.examples import NO_CHANGE, TaskData
from hhx.leaderboard.metrics import PRIMARY, reduce_stats, stat_matrix
from hhx.progress import progress

CHUNK = 1000  # resamples per matrix product: bounds memory at CHUNK x (stat columns) floats


def task_rng(seed: int, task: str) -> np.random.Generator:
    """The generator for one task's resamples."""
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(task.encode())]))


def bootstrap_bar(n_tasks: int, n_resamples: int) -> Any:
    """The bootstrap's progress bar: n_tasks x n_resamples resamples (close it when done)."""
    return progress(total=n_tasks * n_resamples, desc="paired bootstrap", unit="resample")


def resample_counts(n: int, b: int, rng: np.random.Generator) -> np.ndarray:
    """(b x n) float matrix: how often each row is drawn in each of b resamples of size n."""
    idx = rng.integers(0, n, size=(b, n)) + (np.arange(b) * n)[:, None]
    return np.bincount(idx.ravel(), minlength=b * n).reshape(b, n).astype(float)


def percentile_interval(draws: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval along axis 0, ignoring resamples where the metric is undefined."""
    alpha = (1.0 - confidence) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN, as wanted
        lo, hi = np.nanquantile(draws, [alpha, 1.0 - alpha], axis=0)
    return lo, hi


@dataclass
class Comparison:
    """A model against a comparator on the rows valid for both."""

    model: str
    comparator: str  # "no_change" or the XGBoost model's name
    n_common: int
    point_model: float
    point_comparator: float
    draws_model: np.ndarray  # (B,)
    draws_comparator: np.ndarray  # (B,)

    @property
    def point_diff(self) -> float:
        return self.point_model - self.point_comparator

    @property
    def draws_diff(self) -> np.ndarray:
        return self.draws_model - self.draws_comparator


@dataclass
class TaskBootstrap:
    task: str
    models: list[str]
    point: dict[str, float]
    draws: np.ndarray  # (B, len(models)) each model's metric on its own valid rows
    comparisons: list[Comparison] = field(default_factory=list)
    undefined: dict[str, int] = field(default_factory=dict)  # model -> NaN resamples

    def model_draws(self, model: str) -> np.ndarray:
        return self.draws[:, self.models.index(model)]


def _blocks(td: TaskData, xgb_model: str | None) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """(role, model, pred, mask) for every metric the bootstrap needs on this task."""
    out = [("own", m, td.preds[m], td.valid[m]) for m in td.models]
    xgb_ok = xgb_model is not None and xgb_model in td.preds
    for m in td.models:
        if td.backends[m] == NO_CHANGE:
            continue
        out.append(("nc", m, td.naive, td.valid[m]))
        if xgb_ok and xgb_model is not None and m != xgb_model:
            joint = td.valid[m] & td.valid[xgb_model]
            out.append(("xm", m, td.preds[m], joint))
            out.append(("xc", m, td.preds[xgb_model], joint))
    return out


def bootstrap_task(
    td: TaskData,
    n_resamples: int,
    rng: np.random.Generator,
    xgb_model: str | None = None,
    bar: Any = None,
) -> TaskBootstrap:
    """Point metrics and paired bootstrap draws for every model of one task (advancing `bar`,
    from `bootstrap_bar`, by each chunk of resamples)."""
    blocks = _blocks(td, xgb_model)
    mats = [stat_matrix(td, pred, mask) for _, _, pred, mask in blocks]
    bounds = np.cumsum([0] + [m.shape[1] for m in mats])
    big = np.hstack(mats)

    def metrics_for(weights: np.ndarray) -> list[np.ndarray]:
        sums = weights @ big
        return [
            reduce_stats(td, sums[:, bounds[i] : bounds[i + 1]])[PRIMARY]
            for i in range(len(blocks))
        ]

    point = [float(v[0]) for v in metrics_for(np.ones((1, td.n)))]
    draws = np.empty((n_resamples, len(blocks)))
    if bar is not None:
        bar.set_postfix_str(td.name)
    for start in range(0, n_resamples, CHUNK):
        b = min(CHUNK, n_resamples - start)
        draws[start : start + b] = np.column_stack(metrics_for(resample_counts(td.n, b, rng)))
        if bar is not None:
            bar.update(b)

    index = {(role, m): i for i, (role, m, _, _) in enumerate(blocks)}
    own = [index[("own", m)] for m in td.models]
    res = TaskBootstrap(
        task=td.name,
        models=td.models,
        point={m: point[index[("own", m)]] for m in td.models},
        draws=draws[:, own],
        undefined={m: int(np.isnan(draws[:, index[("own", m)]]).sum()) for m in td.models},
    )
    for m in td.models:
        if ("nc", m) in index:
            i, j = index[("own", m)], index[("nc", m)]
            res.comparisons.append(
                Comparison(m, NO_CHANGE, int(td.valid[m].sum()), point[i], point[j],
                           draws[:, i], draws[:, j])
            )
        if ("xm", m) in index and xgb_model is not None:  # (xm blocks need the XGBoost model)
            i, j = index[("xm", m)], index[("xc", m)]
            n_common = int((td.valid[m] & td.valid[xgb_model]).sum())
            res.comparisons.append(
                Comparison(m, str(xgb_model), n_common, point[i], point[j],
                           draws[:, i], draws[:, j])
            )
    return res
