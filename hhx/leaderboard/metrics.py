"""The official task metrics as weighted sums, so that any set of row weights scores a model.

Each metric is a function of a few per-row statistics summed over rows (spec section 8):
RelMAE = sum|pred-ref| / sum|naive-ref| per field; macro-F1 from per-label TP, predicted and
true counts (F1 = 2TP / (pred + true), 0 when both are 0, over ALL labels); mean TV = sum TV /
rows. With a (B x n) weight matrix W (bootstrap counts, a subset indicator, or all ones) the
statistics for B weightings are one matrix product `W @ stats`, and the metric follows from the
sums without a loop over resamples.
"""

from __future__ import annotations

import numpy as np

from hhx.leaderboard.examples import TaskData

PRIMARY = "primary"


def stat_matrix(td: TaskData, pred: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per-row statistics (n x k) of `pred` against the references, zero outside `mask`."""
    m = mask.astype(float)[:, None]
    kind = td.target_type
    if kind == "numeric":
        err = np.where(mask[:, None], np.abs(pred - td.ref), 0.0)
        base = np.abs(td.naive - td.ref) * m
        return np.hstack([err, base])
    if kind == "distribution":
        cols = []
        for s in td.segments:
            diff = np.abs(pred[:, s.start : s.stop] - td.ref[:, s.start : s.stop])
            cols.append(np.where(mask, 0.5 * diff.sum(axis=1), 0.0))
        return np.column_stack([*cols, mask.astype(float)])
    cols = []
    for s in td.segments:
        p, r = pred[:, s.start], td.ref[:, s.start]
        lab = np.arange(len(s.labels or []))
        p_is = (p[:, None] == lab) & mask[:, None]
        r_is = (r[:, None] == lab) & mask[:, None]
        cols += [p_is & r_is, p_is, r_is, ((p == r) & mask)[:, None]]
    cols.append(mask[:, None])
    return np.hstack(cols).astype(float)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def reduce_stats(td: TaskData, sums: np.ndarray, per_target: bool = False) -> dict[str, np.ndarray]:
    """Metric values (B,) from summed statistics (B x k); "primary" is the official score.

    A weighting with no valid rows, or a zero no-change error for RelMAE, gives NaN (the
    scorer leaves such a task unscored)."""
    kind = td.target_type
    out: dict[str, np.ndarray] = {}
    if kind == "numeric":
        f = len(td.segments)
        vals = _ratio(sums[:, :f], sums[:, f:])
        out[PRIMARY] = vals.mean(axis=1)
        if per_target:
            out.update({f"relmae.{s.name}": vals[:, i] for i, s in enumerate(td.segments)})
        return out
    count = sums[:, -1]
    if kind == "distribution":
        vals = _ratio(sums[:, :-1], count[:, None])
        out[PRIMARY] = vals.mean(axis=1)
        if per_target:
            out.update({f"tv.{s.name}": vals[:, i] for i, s in enumerate(td.segments)})
        return out
    f1s, col = [], 0
    for s in td.segments:
        k = len(s.labels or [])
        tp, pc, rc = (sums[:, col + j * k : col + (j + 1) * k] for j in range(3))
        denom = pc + rc
        with np.errstate(divide="ignore", invalid="ignore"):
            f1 = np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1.0), 0.0).mean(axis=1)
        f1 = np.where(count > 0, f1, np.nan)
        f1s.append(f1)
        if per_target:
            out[f"macro_f1.{s.name}"] = f1
            out[f"accuracy.{s.name}"] = _ratio(sums[:, col + 3 * k], count)
        col += 3 * k + 1
    out[PRIMARY] = np.mean(f1s, axis=0)
    return out


def weighted_metric(
    td: TaskData, pred: np.ndarray, mask: np.ndarray, weights: np.ndarray, per_target: bool = False
) -> dict[str, np.ndarray]:
    """Metric of `pred` on rows in `mask` under each row of `weights` (B x n)."""
    return reduce_stats(td, weights @ stat_matrix(td, pred, mask), per_target)


def point_metric(
    td: TaskData, pred: np.ndarray, mask: np.ndarray, per_target: bool = False
) -> dict[str, float]:
    """The metric on all rows in `mask` (what the scorer reports for those rows)."""
    res = weighted_metric(td, pred, mask, np.ones((1, td.n)), per_target)
    return {k: float(v[0]) for k, v in res.items()}


def model_point(td: TaskData, model: str, per_target: bool = True) -> dict[str, float]:
    return point_metric(td, td.preds[model], td.valid[model], per_target)
