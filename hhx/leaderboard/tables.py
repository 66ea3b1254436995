"""Build the leaderboard's tables from selected runs: metrics, intervals, comparisons, ranks.

`compute` is the whole computation without any file output: aligned task data, the paired
bootstrap per task, the per-task metric matrix (cross-checked against each run's logged
`primary_score`), differences to no-change and XGBoost, per-type summaries split into baseline
and policy tasks, the average-rank table and the analyses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import ConfigError, DataError
from hhx.leaderboard import analyses
from hhx.leaderboard.bootstrap import (
    TaskBootstrap,
    bootstrap_bar,
    bootstrap_task,
    percentile_interval,
    task_rng,
)
from hhx.leaderboard.collect import Selection
from hhx.leaderboard.examples import NO_CHANGE, XGBOOST, TaskData, build_all
from hhx.leaderboard.metrics import model_point
from hhx.leaderboard.rank import leaderboard_table, rank_table
from hhx.scoring.metric_names import official
from hhx.tasks.own import NOT_OFFICIAL, ORIGIN_TAG, OWN

TYPES = ("numeric", "categorical", "distribution")
GROUPS = ("baseline", "policy", "all")
SCORE_TOL = 1e-9


@dataclass
class Settings:
    n_resamples: int = 10_000
    seed: int = 20261130
    confidence: float = 0.95
    xgboost_model: str | None = None
    derive_no_change: bool = True
    time_bin: str = "year"

    def check(self) -> None:
        if self.n_resamples < 1:
            raise ConfigError(f"leaderboard.n_resamples={self.n_resamples}; must be >= 1")
        if not 0.0 < self.confidence < 1.0:
            raise ConfigError(f"leaderboard.confidence={self.confidence}; must be in (0, 1)")


@dataclass
class Leaderboard:
    split: str
    synthetic: bool
    settings: Settings
    xgb_model: str | None
    tds: dict[str, TaskData]
    boots: dict[str, TaskBootstrap]
    task_metrics: pd.DataFrame  # one row per task x model
    matrix: pd.DataFrame  # models x tasks, official metric
    targets: pd.DataFrame  # per-target metrics (relmae.<field>, macro_f1.<field>, ...)
    comparisons: pd.DataFrame
    summary: pd.DataFrame
    leaderboard: pd.DataFrame
    analyses: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    own_tasks: list[str] = field(default_factory=list)  # tasks of one's own (hhx/tasks/own.py)

    @property
    def models(self) -> list[str]:
        return list(self.matrix.index)


def pick_xgboost(tds: dict[str, TaskData], wanted: str | None) -> str | None:
    """The XGBoost comparator: the configured model, else the single xgboost-backend model."""
    found = sorted({m for td in tds.values() for m, b in td.backends.items() if b == XGBOOST})
    if wanted is not None:
        present = {m for td in tds.values() for m in td.models}
        if wanted not in present:
            raise ConfigError(f"leaderboard.xgboost_model={wanted!r} has no runs; models: "
                              f"{sorted(present)}")
        return wanted
    if len(found) > 1:
        raise ConfigError(f"several XGBoost models {found}; choose the comparator with "
                          "leaderboard.xgboost_model=<name>")
    return found[0] if found else None


def _run_figures(td: TaskData, model: str) -> dict[str, float]:
    """n, coverage and valid rate of a model on a task (logged metrics, else from details)."""
    run = td.runs.get(model)
    if run is None:  # derived no-change: answers every row
        return {"num_examples": td.n, "num_valid": td.n, "coverage_rate": 1.0,
                "valid_response_rate": 1.0}
    d = run.details
    n = int(run.metrics.get("num_examples", len(d)))
    valid = int(run.metrics.get("num_valid", int(d["valid"].sum())))
    if "coverage_rate" in run.metrics:
        coverage = float(run.metrics["coverage_rate"])
    else:
        err = d["error"].fillna("") if "error" in d else pd.Series([""] * len(d))
        coverage = float((~err.isin(["missing_prediction", "time_mismatch"])).mean()) if n else 0.0
    return {"num_examples": n, "num_valid": valid, "coverage_rate": coverage,
            "valid_response_rate": float(run.metrics.get("valid_response_rate",
                                                         valid / n if n else 0.0))}


def _check_logged(td: TaskData, model: str, point: float) -> str | None:
    """Compare the recomputed official score with the run's logged primary_score."""
    run = td.runs.get(model)
    if run is None:
        return None
    logged = run.metrics.get("primary_score")
    if logged is None or np.isnan(logged):
        if np.isfinite(point):
            return f"{model} x {td.name}: run logged no primary_score; recomputed {point:.6g}"
        return None
    if not np.isfinite(point) or abs(point - logged) > SCORE_TOL * max(1.0, abs(logged)):
        raise DataError(
            f"{run.source}: recomputed {td.name} score {point!r} differs from the logged "
            f"primary_score {logged!r} for {model}; the details artifact does not match the run"
        )
    return None


def _group_members(tds: dict[str, TaskData], kind: str, group: str) -> list[str]:
    return [t for t, td in tds.items()
            if td.target_type == kind and (group == "all" or td.mode == group)]


def _summary(tds, boots, models, confidence) -> pd.DataFrame:
    rows = []
    for kind in TYPES:
        for group in GROUPS:
            tasks = _group_members(tds, kind, group)
            if not tasks:
                continue
            for m in models:
                have = [t for t in tasks if m in boots[t].models]
                if not have:
                    continue
                point = float(np.mean([boots[t].point[m] for t in have]))
                draws = np.mean([boots[t].model_draws(m) for t in have], axis=0)
                lo, hi = percentile_interval(draws, confidence)
                rows.append({"target_type": kind, "group": group, "metric": official(kind).name,
                             "model": m, "mean": point, "ci_lo": float(lo), "ci_hi": float(hi),
                             "n_tasks": len(have), "n_tasks_total": len(tasks),
                             "complete": len(have) == len(tasks)})
    return pd.DataFrame(rows, columns=["target_type", "group", "metric", "model", "mean", "ci_lo",
                                       "ci_hi", "n_tasks", "n_tasks_total", "complete"])


def compute(
    selection: Selection, load: Callable[[str], TaskConfig], settings: Settings
) -> Leaderboard:
    """Everything the leaderboard reports, as tables (no files written)."""
    settings.check()
    notes = list(selection.notes)
    variants = sorted({r.model for r in selection.runs if r.tags.get("hhx.prompt")})
    if variants:  # their own rows (the label is part of the model's name), never the official model
        notes.append(f"prompt variants, not official (ranked as models of their own): "
                     f"{', '.join(variants)}")
    nc_names = sorted({r.model for r in selection.runs if r.backend == NO_CHANGE})
    tds = build_all(selection.runs, load, settings.derive_no_change,
                    nc_names[0] if len(nc_names) == 1 else None)
    xgb = pick_xgboost(tds, settings.xgboost_model)
    if xgb is None:
        notes.append("no XGBoost run: differences to XGBoost are not reported")
    boots, rows, target_rows = _bootstrap_tasks(tds, settings, xgb, notes)
    task_metrics = pd.DataFrame(rows)
    matrix = task_metrics.pivot(index="model", columns="task", values="score")
    higher = {t: td.higher_is_better for t, td in tds.items()}
    ranks = rank_table(matrix, higher)
    task_metrics["rank"] = [ranks.loc[m, t] for m, t in zip(task_metrics["model"],
                                                            task_metrics["task"])]
    models = list(matrix.index)
    comparisons = _comparisons(tds, boots, settings.confidence)
    summary = _summary(tds, boots, models, settings.confidence)
    board = _board(matrix, boots, higher, settings.confidence, task_metrics, summary)
    board["synthetic"] = selection.synthetic
    incomplete = board.loc[~board["complete"], "model"].tolist()
    if incomplete:
        notes.append(f"models missing tasks (ranked only on the tasks they have, listed after "
                     f"complete models): {incomplete}")

    own = own_tasks(selection)
    if own:  # marked only where there are some: an official board's tables stay as they were
        task_metrics.insert(1, "origin", [NOT_OFFICIAL if t in own else "official"
                                          for t in task_metrics["task"]])
        notes.append(f"{NOT_OFFICIAL} (MLflow tag {ORIGIN_TAG}={OWN}): {', '.join(own)}; ranked "
                     "like the official tasks, so the average rank is not the official one; "
                     "leaderboard.tasks=[...] ranks the official tasks alone")
    cutoff, cutoff_notes = analyses.cutoff_split(tds)
    notes.extend(cutoff_notes)
    shares = analyses.class_shares(tds)
    return Leaderboard(
        split=selection.split, synthetic=selection.synthetic, settings=settings, xgb_model=xgb,
        tds=tds, boots=boots, task_metrics=task_metrics, matrix=matrix,
        targets=pd.DataFrame(target_rows, columns=["task", "model", "metric", "value"]),
        comparisons=comparisons, summary=summary, leaderboard=board,
        analyses={
            "bias_numeric": analyses.numeric_bias(tds),
            "class_shares": shares,
            "majority_overprediction": analyses.majority_overprediction(shares),
            "persistence": analyses.persistence(tds),
            "cutoff": cutoff,
            "over_time": analyses.over_time(tds, settings.time_bin),
        },
        notes=notes,
        own_tasks=own,
    )


def _bootstrap_tasks(tds: dict[str, TaskData], settings: Settings, xgb: str | None,
                     notes: list[str]) -> tuple[dict[str, TaskBootstrap], list[dict[str, Any]],
                                                list[dict[str, Any]]]:
    """The paired bootstrap of every task with its task_metrics and per-target rows; the notes
    on partial example sets, derived no-change runs, unlogged scores and undefined metrics."""
    boots: dict[str, TaskBootstrap] = {}
    rows, target_rows = [], []
    derived_cells: list[tuple[str, str]] = []
    unlogged: list[str] = []
    undefined: list[str] = []
    bar = bootstrap_bar(len(tds), settings.n_resamples)
    for name, td in tds.items():
        sizes = example_set_sizes(td)
        notes += _partial_note(name, td.n, sizes)
        derived_cells += [(m, name) for m in sorted(td.derived)]
        tb = bootstrap_task(td, settings.n_resamples, task_rng(settings.seed, name), xgb, bar)
        boots[name] = tb
        task_rows, task_targets, task_unlogged, task_undefined = _task_rows(
            name, td, tb, sizes, settings.confidence)
        rows += task_rows
        target_rows += task_targets
        unlogged += task_unlogged
        undefined += task_undefined
    bar.close()
    if derived_cells:
        notes.append(derived_note(derived_cells))
    if unlogged:
        notes.append(f"{len(unlogged)} runs logged no primary_score (not cross-checked): "
                     + "; ".join(unlogged))
    if undefined:
        notes.append(f"metric undefined in some of the {settings.n_resamples} resamples (left out "
                     f"of the interval; count in brackets): {', '.join(undefined)}")
    return boots, rows, target_rows


def _partial_note(name: str, n: int, sizes: dict[str, int]) -> list[str]:
    """A note when the task's runs were evaluated on different examples (none when not)."""
    partial = {m: k for m, k in sizes.items() if k != n}
    if not partial:
        return []
    return [f"{name}: runs were evaluated on different examples ("
            + ", ".join(f"{m}: {k} of {n}" for m, k in sorted(partial.items()))
            + f"; {n} = every example any run of the task was evaluated on); "
            "their scores are marked and come from other rows, so they rank only "
            "roughly against the others; comparisons use rows valid for both"]


def _task_rows(name: str, td: TaskData, tb: TaskBootstrap, sizes: dict[str, int], confidence: float,
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str], list[str]]:
    """One task's rows of task_metrics and of the per-target table, with the runs whose logged
    score could not be cross-checked and the models whose metric some resamples left undefined."""
    rows, target_rows, unlogged, undefined = [], [], [], []
    lo, hi = percentile_interval(tb.draws, confidence)
    for j, m in enumerate(td.models):
        per = model_point(td, m)
        note = _check_logged(td, m, tb.point[m])
        if note:
            unlogged.append(note)
        if tb.undefined[m]:
            undefined.append(f"{m} x {name} ({tb.undefined[m]})")
        run = td.runs.get(m)
        rows.append({
            "task": name, "mode": td.mode, "target_type": td.target_type,
            "metric": official(td.target_type).name, "model": m, "backend": td.backends[m],
            "score": tb.point[m], "ci_lo": float(lo[j]), "ci_hi": float(hi[j]),
            **_run_figures(td, m),
            "n_task_examples": td.n, "same_examples": sizes.get(m, td.n) == td.n,
            "logged_primary_score": (run.metrics.get("primary_score", np.nan)
                                     if run else np.nan),
            "source": run.source if run else "derived from naive_baseline",
            "url": run.url if run else None,
        })
        for key, value in per.items():
            if key != "primary":
                target_rows.append({"task": name, "model": m, "metric": key, "value": value})
    return rows, target_rows, unlogged, undefined


def _board(matrix: pd.DataFrame, boots: dict[str, TaskBootstrap], higher: dict[str, bool],
           confidence: float, task_metrics: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard table: average ranks, each model's backend and per-type mean scores, and
    whether it was evaluated on the same examples (also marked in `summary`)."""
    board = leaderboard_table(matrix, list(boots.values()), higher, confidence)
    backends = task_metrics.drop_duplicates("model").set_index("model")["backend"]
    board.insert(1, "backend", board["model"].map(backends))
    for kind in TYPES:
        part = summary[(summary["target_type"] == kind) & (summary["group"] == "all")]
        board[official(kind).name] = board["model"].map(part.set_index("model")["mean"])
    board = _mark_examples(board, task_metrics)
    summary["same_examples"] = summary["model"].map(board.set_index("model")["same_examples"])
    return board


def own_tasks(selection: Selection) -> list[str]:
    """The selected tasks whose runs are tagged as one's own (not official)."""
    return sorted({r.task for r in selection.runs if r.tags.get(ORIGIN_TAG) == OWN})


def derived_note(cells: list[tuple[str, str]]) -> str:
    """What a derived no-change entry is: (model name, task) pairs -> one note naming the tasks.

    A task without a no_change run still has its no-change answers (each run's details carry the
    naive_baseline), so no-change is scored from them: it stays the reference of every task."""
    by_name: dict[str, list[str]] = {}
    for model, task in cells:
        by_name.setdefault(model, []).append(task)
    parts = []
    for model, tasks in by_name.items():
        shown = "" if model == NO_CHANGE else f" (listed as {model!r})"
        parts.append(f"no no_change run for {', '.join(tasks)}: no-change{shown} is scored "
                     "there from the no-change answers (naive_baseline) the other runs' details "
                     "record")
    return "; ".join(parts)


def example_set_sizes(td: TaskData) -> dict[str, int]:
    """Rows each model was evaluated on (a derived no-change answers every row of the task).

    Rows are aligned on the union of all runs' examples, so a run covers the task's examples
    exactly when its example count equals `td.n`."""
    sizes = {m: len(r.details) for m, r in td.runs.items()}
    return {m: sizes.get(m, td.n) for m in td.models}


def _mark_examples(board: pd.DataFrame, task_metrics: pd.DataFrame) -> pd.DataFrame:
    """Say per model where it was evaluated on other examples than the task's; rank those last.

    Such a model's average rank compares scores from different households, so it is listed
    after the models scored on every task's full example set, with the tasks named."""
    part = task_metrics[~task_metrics["same_examples"]]
    where = {m: ", ".join(f"{r.task} ({r.num_examples} of {r.n_task_examples})"
                          for r in g.itertuples()) for m, g in part.groupby("model")}
    board = board.assign(same_examples=~board["model"].isin(list(where)),
                         different_examples=board["model"].map(where).fillna(""))
    board = board.sort_values(["complete", "same_examples", "avg_rank", "model"],
                              ascending=[False, False, True, True], kind="stable")
    return board.reset_index(drop=True)


def _comparisons(tds, boots, confidence) -> pd.DataFrame:
    rows = []
    for name, tb in boots.items():
        higher = tds[name].higher_is_better
        for c in tb.comparisons:
            diff = c.draws_diff
            lo, hi = percentile_interval(diff, confidence)
            ok = diff[~np.isnan(diff)]
            better = float(np.mean(ok > 0 if higher else ok < 0)) if len(ok) else np.nan
            rows.append({
                "task": name, "mode": tds[name].mode, "target_type": tds[name].target_type,
                "model": c.model, "comparator": c.comparator, "n_common": c.n_common,
                "model_score": c.point_model, "comparator_score": c.point_comparator,
                "diff": c.point_diff, "diff_lo": float(lo), "diff_hi": float(hi),
                "prob_better": better,
                "significant": bool(np.isfinite(lo) and np.isfinite(hi) and (lo > 0 or hi < 0)),
            })
    return pd.DataFrame(rows, columns=[
        "task", "mode", "target_type", "model", "comparator", "n_common", "model_score",
        "comparator_score", "diff", "diff_lo", "diff_hi", "prob_better", "significant"])
