"""The paper's analyses (section 4) on aligned task data; each returns a plain table.

(a) bias: signed error and shares over/under-predicted per numeric target; predicted vs true
class shares per categorical field, and how much the majority class is over-predicted;
(b) persistence in probability reports: rows whose report changed from the previous one
(reference != naive_baseline, the previous report) vs unchanged;
(c) rows released before vs after the model's knowledge cutoff (tag hhx.model_cutoff);
(d) performance by release year or quarter.
Every statistic uses only the model's valid rows, as the official metrics do.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from hhx.errors import ConfigError, DataError
from hhx.leaderboard.examples import TaskData
from hhx.leaderboard.metrics import PRIMARY, point_metric

CHANGE_TOL = 1e-9  # probabilities are equal up to float noise


def numeric_bias(tds: Mapping[str, TaskData]) -> pd.DataFrame:
    """Per numeric target and model: mean/median prediction and truth, signed error, shares."""
    rows = []
    for td in tds.values():
        if td.target_type != "numeric":
            continue
        for model in td.models:
            ok = td.valid[model]
            for s in td.segments:
                p, r = td.preds[model][ok, s.start], td.ref[ok, s.start]
                err = p - r
                n = int(ok.sum())
                rows.append({
                    "task": td.name, "mode": td.mode, "target": s.name, "model": model, "n": n,
                    "mean_pred": _mean(p), "mean_true": _mean(r),
                    "median_pred": _median(p), "median_true": _median(r),
                    "mean_signed_error": _mean(err), "median_signed_error": _median(err),
                    "share_over": _mean(err > 0), "share_under": _mean(err < 0),
                })
    return pd.DataFrame(rows, columns=[
        "task", "mode", "target", "model", "n", "mean_pred", "mean_true", "median_pred",
        "median_true", "mean_signed_error", "median_signed_error", "share_over", "share_under"])


def class_shares(tds: Mapping[str, TaskData]) -> pd.DataFrame:
    """Per categorical field, model and label: true vs predicted share, recall, majority flag."""
    rows = []
    for td in tds.values():
        if td.target_type != "categorical":
            continue
        for model in td.models:
            ok = td.valid[model]
            n = int(ok.sum())
            for s in td.segments:
                p, r = td.preds[model][ok, s.start], td.ref[ok, s.start]
                true_counts = np.array([(r == k).sum() for k in range(len(s.labels or []))])
                majority = int(true_counts.argmax()) if n else -1
                for k, label in enumerate(s.labels or []):
                    rows.append({
                        "task": td.name, "mode": td.mode, "field": s.name, "model": model,
                        "label": label, "n": n, "true_share": _mean(r == k),
                        "pred_share": _mean(p == k),
                        "recall": _ratio(((p == k) & (r == k)).sum(), true_counts[k]),
                        "majority": k == majority,
                    })
    return pd.DataFrame(rows, columns=["task", "mode", "field", "model", "label", "n",
                                       "true_share", "pred_share", "recall", "majority"])


def majority_overprediction(shares: pd.DataFrame) -> pd.DataFrame:
    """The true majority class per field and model: predicted minus true share."""
    maj = shares.loc[shares["majority"].astype(bool)].copy()
    maj["excess"] = maj["pred_share"] - maj["true_share"]
    return maj.rename(columns={"label": "majority_label"}).drop(columns="majority").reset_index(
        drop=True)


def persistence(tds: Mapping[str, TaskData]) -> pd.DataFrame:
    """Per probability target and model: TV on changed vs unchanged reports, and no-change TV."""
    rows = []
    for td in tds.values():
        if td.target_type != "distribution":
            continue
        for s in td.segments:
            ref = td.ref[:, s.start : s.stop]
            naive = td.naive[:, s.start : s.stop]
            changed = np.abs(ref - naive).max(axis=1) > CHANGE_TOL
            naive_tv = 0.5 * np.abs(naive - ref).sum(axis=1)
            for model in td.models:
                ok = td.valid[model]
                tv = 0.5 * np.abs(td.preds[model][:, s.start : s.stop] - ref).sum(axis=1)
                for subset, sel in (("changed", changed), ("unchanged", ~changed)):
                    mask = ok & sel
                    rows.append({
                        "task": td.name, "mode": td.mode, "distribution": s.name, "model": model,
                        "subset": subset, "n": int(mask.sum()),
                        "share": _ratio(mask.sum(), ok.sum()),
                        "model_tv": _mean(tv[mask]), "naive_tv": _mean(naive_tv[mask]),
                    })
    return pd.DataFrame(rows, columns=["task", "mode", "distribution", "model", "subset", "n",
                                       "share", "model_tv", "naive_tv"])


def _subset_rows(td: TaskData, model: str, sel: np.ndarray) -> dict[str, float]:
    mask = td.valid[model] & sel
    return {
        "n": int(mask.sum()),
        "metric": point_metric(td, td.preds[model], mask)[PRIMARY],
        "naive_metric": point_metric(td, td.naive, mask)[PRIMARY],
    }


def cutoff_split(tds: Mapping[str, TaskData]) -> tuple[pd.DataFrame, list[str]]:
    """Metric on rows released on/before vs after each model's cutoff; notes on models skipped."""
    rows, no_cutoff = [], set()
    for td in tds.values():
        for model in td.models:
            run = td.runs.get(model)
            cutoff = run.cutoff if run is not None else ""
            if not cutoff:
                no_cutoff.add(model)
                continue
            try:
                when = pd.Timestamp(cutoff[:10])
            except ValueError:
                raise DataError(
                    f"{run.source}: tag hhx.model_cutoff={cutoff!r} is not an ISO date (YYYY-MM-DD)"  # type: ignore[union-attr]
                ) from None
            after = (td.release_date > when).to_numpy()
            for period, sel in (("before", ~after), ("after", after)):
                rows.append({"task": td.name, "mode": td.mode, "target_type": td.target_type,
                             "model": model, "cutoff": cutoff[:10], "period": period,
                             **_subset_rows(td, model, sel)})
    notes = [f"no knowledge cutoff recorded for {sorted(no_cutoff)}: left out of the cutoff "
             "analysis"] if no_cutoff else []
    return pd.DataFrame(rows, columns=["task", "mode", "target_type", "model", "cutoff", "period",
                                       "n", "metric", "naive_metric"]), notes


def over_time(tds: Mapping[str, TaskData], time_bin: str = "year") -> pd.DataFrame:
    """Metric per release year (or quarter), per task and model."""
    if time_bin not in ("year", "quarter"):
        raise ConfigError(f"leaderboard.time_bin={time_bin!r}; use 'year' or 'quarter'")
    rows = []
    for td in tds.values():
        dates = td.release_date
        period = (dates.dt.year.astype(str) if time_bin == "year"
                  else dates.dt.to_period("Q").astype(str)).to_numpy()
        for p in sorted(set(period)):
            sel = period == p
            for model in td.models:
                rows.append({"task": td.name, "mode": td.mode, "target_type": td.target_type,
                             "model": model, "period": p, **_subset_rows(td, model, sel)})
    return pd.DataFrame(rows, columns=["task", "mode", "target_type", "model", "period", "n",
                                       "metric", "naive_metric"])


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x)) if len(x) else float("nan")


def _median(x: np.ndarray) -> float:
    return float(np.median(x)) if len(x) else float("nan")


def _ratio(a: float, b: float) -> float:
    return float(a) / float(b) if b else float("nan")
