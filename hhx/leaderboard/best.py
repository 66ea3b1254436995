"""Which model, if any, is the best of a task: the ★ of the report's matrix and the console.

Candidates are the runs evaluated on the task's full example set with a score (a run on other
examples is never compared). The best is the top one on the official metric; it gets ★ only if
- its paired bootstrap difference to the runner-up (the same resampled households for both,
  each on its own valid rows) has an interval clear of 0, and
- it is not no-change itself only by luck: a model other than no-change must beat no-change on the
  rows valid for both (paired difference interval clear of 0), and its own interval must not
  contain no-change's score on the task.
Otherwise the best cell says "tied" and with whom. A task with fewer than two candidates has no
verdict (one run is no contest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hhx.leaderboard.bootstrap import percentile_interval
from hhx.leaderboard.examples import NO_CHANGE
from hhx.leaderboard.tables import Leaderboard

TIE_RTOL = 1e-12  # point scores this close are equal (the same sums in another order)


@dataclass(frozen=True)
class Verdict:
    """The best model of one task and whether it is clearly best."""

    task: str
    best: str
    runner_up: str
    starred: bool
    tied_with: str = ""  # who the best cannot be told apart from ("" when starred)

    @property
    def mark(self) -> str:
        """★, or `tied (with <model>)`, for the best model's cell."""
        return "\u2605" if self.starred else f"tied (with {self.tied_with})"


def _separated(diff: np.ndarray, higher: bool, confidence: float) -> bool:
    """The paired difference's interval lies wholly on the better side of 0."""
    lo, hi = percentile_interval(diff, confidence)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return False
    return bool(lo > 0) if higher else bool(hi < 0)


def _clear_of_no_change(lb: Leaderboard, task: str, model: str) -> tuple[bool, str]:
    """Whether `model` beats the task's no-change clearly, and no-change's name."""
    td = lb.tds[task]
    names = [m for m in td.models if td.backends[m] == NO_CHANGE]
    if not names or model in names:
        return True, ""
    nc = names[0]
    higher = td.higher_is_better
    tb = lb.boots[task]
    paired = next((c for c in tb.comparisons
                   if c.model == model and c.comparator == NO_CHANGE), None)
    if paired is None or not _separated(paired.draws_diff, higher, lb.settings.confidence):
        return False, nc
    tm = lb.task_metrics
    row = tm[(tm["task"] == task) & (tm["model"] == model)].iloc[0]
    nc_score = float(tm[(tm["task"] == task) & (tm["model"] == nc)]["score"].iloc[0])
    covers = np.isfinite(nc_score) and row["ci_lo"] <= nc_score <= row["ci_hi"]
    return not covers, nc


def verdicts(lb: Leaderboard) -> dict[str, Verdict]:
    """Task -> verdict on its best model, for tasks with two or more comparable runs."""
    out: dict[str, Verdict] = {}
    tm = lb.task_metrics
    usable = tm[tm["same_examples"] & np.isfinite(tm["score"].astype(float))]
    for task, part in usable.groupby("task", sort=False):
        if len(part) < 2:
            continue
        higher = lb.tds[task].higher_is_better
        ranked = part.sort_values("score", ascending=not higher, kind="stable")
        best, runner = ranked["model"].iloc[0], ranked["model"].iloc[1]
        b, r = float(ranked["score"].iloc[0]), float(ranked["score"].iloc[1])
        if abs(b - r) <= TIE_RTOL * max(1.0, abs(b)):
            out[task] = Verdict(task, best, runner, False, runner)
            continue
        tb = lb.boots[task]
        diff = tb.model_draws(best) - tb.model_draws(runner)
        if not _separated(diff, higher, lb.settings.confidence):
            out[task] = Verdict(task, best, runner, False, runner)
            continue
        clear, nc = _clear_of_no_change(lb, task, best)
        out[task] = Verdict(task, best, runner, clear, "" if clear else nc)
    return out
