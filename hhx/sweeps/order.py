"""The order a sweep starts its cells in: the longest first.

With fewer workers than cells (joblib's processes, a Ray cluster's slots), a long cell that starts
last runs alone while the other workers wait: on the demo grid (32 tasks x no-change, XGBoost)
`macro_sce_uncertainty` x XGBoost, 315 s of a 771-s joblib sweep, was the last cell in grid
order and ran its last 5 minutes alone. Starting the longest cells first (longest-processing-time
scheduling) lets the short ones fill the gaps at the end. Order changes no result: every cell is
its own job with its own seed, and its folder number is its place in the run order.

A cell's time is what MLflow measured when the same task x model with the same settings (its
`hhx.config_hash`) last FINISHED, else with any settings (the order needs a ranking, not a
forecast), else an estimate from the composed config:
- XGBoost: table rows x columns x, over the models the task needs, trees per round x rounds x
  depth, with the reference's settings (hhx/predictors/xgboost_params.py); `XGB_RATE` turns that
  into seconds (measured on the demo grid, 2 cores: rank correlation 0.82 with the cells' times),
  plus `XGB_MODEL_S` per model fitted (loading, encoding, predicting).
- LLM backends: requests (examples x draws, one request per example with `n`) x `LLM_REQUEST_S`
  over the model's `max_concurrency`.
- no-change: a second.
- a custom predictor (user code, unknown cost): `CUSTOM_ROW_S` per table row, a linear fit's pace.
Rows and columns come from the release's `manifest.csv` (benchmark_rows, tabular_columns) when
the task is built, else a typical table (`TYPICAL_TABLE`).
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from hhx.catalog import Kind, backend_spec

log = logging.getLogger(__name__)

XGB_RATE = 3.0e-10  # s per (row x column x tree-level); demo grid, 2 cores
XGB_MODEL_S = 1.0
LLM_REQUEST_S = 2.0  # s per request, one at a time
NO_CHANGE_S = 1.0
CUSTOM_ROW_S = 1.0e-5
TYPICAL_TABLE = (10_000, 50)  # rows, columns of a task not built yet
ORDERS = ("longest_first", "given")  # hydra.sweeper.order


def order_error(order: str) -> str | None:
    """Why `hydra.sweeper.order` is not a valid setting (None when it is)."""
    if order in ORDERS:
        return None
    return f"hydra.sweeper.order={order}: choose {' or '.join(ORDERS)}"



@lru_cache(maxsize=8)
def _manifest(path: str) -> dict[str, tuple[int, int]]:
    """task -> (benchmark_rows, tabular_columns) of a release's manifest.csv ({} if absent)."""
    try:
        with open(path, newline="") as handle:
            return {row["task_id"]: (int(row["benchmark_rows"]), int(row["tabular_columns"]))
                    for row in csv.DictReader(handle)}
    except (OSError, KeyError, ValueError):
        return {}


def table_size(cfg: DictConfig) -> tuple[int, int]:
    """(rows, columns) of the cell's task table: its release manifest's row, else a typical one."""
    try:
        manifest = str(Path(str(cfg.data.root)) / "manifest.csv")
    except Exception:  # data.root missing (data=official without a root): the job will say so
        return TYPICAL_TABLE
    return _manifest(manifest).get(str(cfg.task.name), TYPICAL_TABLE)


def xgboost_tree_levels(task: Any) -> tuple[int, int]:
    """(trees per round x rounds x depth summed over the models the task's XGBoost fits, how
    many models that is)."""
    from hhx.predictors.xgboost_params import (
        CLASSIFICATION_PARAMS,
        DISTRIBUTION_PARAMS,
        REGRESSION_PARAMS,
        outputs_for,
    )
    from hhx.tasks.registry import as_task

    spec = as_task(task)
    labels = {d.group or d.name: len(d.labels) for d in spec.distributions}
    total = 0
    outputs = outputs_for(spec)
    for output in outputs:
        if output.kind == "numeric":
            params, trees = REGRESSION_PARAMS, 1
        elif output.kind == "distribution":  # one tree per label and round
            params, trees = DISTRIBUTION_PARAMS, labels.get(output.name, 1)
        else:
            # binary: one tree per round; multi:softprob: one per class
            params = CLASSIFICATION_PARAMS
            trees = 1 if len(output.classes) <= 2 else len(output.classes)
        total += trees * int(params["n_estimators"]) * int(params["max_depth"])
    return total, len(outputs)


def estimated_seconds(cfg: DictConfig) -> float:
    """A rough time of the cell `cfg` (a composed job config) from its model and table size."""
    kind = backend_spec(cfg.model.backend).kind
    rows, columns = table_size(cfg)
    if kind is Kind.answers:  # reads answers, fits nothing
        return NO_CHANGE_S
    if kind is Kind.custom:  # the user's code: a guess that grows with the table
        return NO_CHANGE_S + CUSTOM_ROW_S * rows * max(1, columns) / 10
    if kind is Kind.fits:  # XGBoost: its trees
        rounds = cfg.model.xgboost.get("n_estimators") if cfg.model.get("xgboost") else None
        levels, models = xgboost_tree_levels(cfg.task)
        if rounds:  # a fixed round count replaces the reference's 1000 / 2000
            levels = int(levels * int(rounds) / 1000)
        rows = min(rows, int(cfg.model.xgboost.train_cap))
        return NO_CHANGE_S + XGB_MODEL_S * models + XGB_RATE * rows * columns * levels
    examples = rows if cfg.data.get("max_examples") is None else min(rows, cfg.data.max_examples)
    k = int(cfg.aggregation.k) if cfg.get("aggregation") is not None else 1
    use_n = bool(cfg.model.get("supports_n")) and k > 1  # all K draws in one request
    requests = examples * (1 if use_n else k)
    return LLM_REQUEST_S * requests / max(1, int(cfg.model.get("max_concurrency") or 1))


def measured_seconds(tracking: DictConfig | None) -> dict[tuple[str, ...], float]:
    """Seconds of the latest FINISHED evaluate run in the sweep's MLflow experiment, keyed both
    (task, model, config hash) and (task, model) ({} without tracking, or when the store cannot
    be read: the estimates are used)."""
    if tracking is None or not tracking.get("enabled"):
        return {}
    try:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(str(tracking.uri))
        experiment = client.get_experiment_by_name(str(tracking.experiment))
        if experiment is None:
            return {}
        runs = client.search_runs(
            [experiment.experiment_id],
            filter_string="tags.`hhx.stage` = 'evaluate' and attributes.status = 'FINISHED'",
            max_results=5000, order_by=["attributes.start_time DESC"])
    except Exception as exc:  # ordering is an optimisation: never stop a sweep over it
        log.warning("sweep order: past run times not read from MLflow (%s); estimating", exc)
        return {}
    out: dict[tuple[str, ...], float] = {}
    for run in runs:  # newest first: the first seen of each key is its latest
        if not (run.info.end_time and run.info.start_time):
            continue
        tags = run.data.tags
        pair = (tags.get("hhx.task", ""), tags.get("hhx.model", ""))
        seconds = (run.info.end_time - run.info.start_time) / 1000
        if tags.get("hhx.config_hash"):
            out.setdefault((*pair, tags["hhx.config_hash"]), seconds)
        out.setdefault(pair, seconds)
    return out


def settings_hash(cfg: DictConfig) -> str:
    """The cell's `hhx.config_hash` ('' when its config cannot be resolved outside its job)."""
    import copy

    from omegaconf import open_dict

    from hhx.sweeps.identity import config_hash

    try:
        job = copy.deepcopy(cfg)  # the job hashes its config without Hydra's node, as here
        with open_dict(job):
            job.pop("hydra", None)
        return config_hash(job)
    except Exception:  # e.g. an interpolation only the job's own Hydra context resolves
        return ""


def cell_seconds(cfg: DictConfig, measured: dict[tuple[str, ...], float]) -> float:
    """The cell's past time from MLflow (same settings, else any), else its estimate."""
    pair = (str(cfg.task.name), str(cfg.model.name))
    if pair in measured:
        same = measured.get((*pair, settings_hash(cfg)))
        return same if same is not None else measured[pair]
    return estimated_seconds(cfg)


def longest_first(seconds: Sequence[float]) -> list[int]:
    """Indices of the cells, longest first; equal times keep their grid order (stable sort)."""
    return sorted(range(len(seconds)), key=lambda i: -seconds[i])
