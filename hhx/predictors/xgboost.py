"""The reference XGBoost baseline (spec 00_common.md section 10), task by task.

One model per output (numeric target, categorical target, or distribution group), fitted on the
train prefix and early-stopped on the validation prefix (split_position <= 400k / 50k), with the
reference hyperparameters, the published seeds and native categorical splits.

Prediction for prediction as the official build (scripts/3_xgboost/build.py with
scripts/utils/xgboost_baseline.py, read for this):
- Fitting rows in TABLE order. The official build sorts the task table by its row order, selects
  the train and validation prefixes by split_position (`split_prefix`), then keeps the table rows
  whose (id, time) key is in a prefix: the rows reach XGBoost in publication order, not in
  split_position order. With row subsampling (0.65 / 0.70) each tree's rows follow that order, so
  another order gives other trees (`BenchTask.split_frame(order="table")`). Both the train and the
  early-stopping validation rows are taken so (the order of the validation rows changes no metric
  value but is kept the same anyway).
- Features: the task's prompt_predictors in order, then `prompt_month` (English month name of
  `time`, or the fixed month); numeric ones `to_numeric` -> float64 (NaN stays missing);
  categorical ones stripped text, blank/NA -> the missing token, categories = the sorted distinct
  train values + missing + unseen tokens, values not seen in train -> the unseen token.
- Early-stopping metrics: `mae` (numeric); 1 - macro-F1 over every class of the domain, a class
  with a zero F1 denominator scoring 0, summed in class order and divided by the class count
  (categorical; class = p > 0.5 for two classes, else argmax); mean total variation after the
  simplex projection (distribution).
- Simplex projection: sort descending, c = cumsum - 1, rho = the NUMBER of coordinates with
  u_j - c_j / j > 0, theta = c_rho / rho (the official count; equal to "the last such j" except
  in float ties).
- Outputs: the class label of `predict` (p > 0.5 / argmax); numeric predictions as Python floats
  of the float32 output; rounded half to even to an int where the task's builder says
  INTEGER_OUTPUT (cons_psid_wealth); distribution groups
  projected. Predictions are row-wise, so the order of the predicted rows changes nothing.
The thread count never changes a result (tests/test_cores.py); the callbacks hhx adds (progress,
thread re-sizing) change no parameter.

OpenMP's idle threads wait passively (`OMP_WAIT_POLICY=PASSIVE`, unless the environment already
sets it): by default they spin at every barrier for a while, burning the cores another process
needs. Measured on 2 cores (a 600-round depth-9 fit on 3,500 rows, two threads): alone 17.3-18.5 s
spinning, 17.6-18.3 s passive; two such fits at once took 282 s each spinning and 30 s each
passive (two one-thread fits: 30 s). Parallel sweep jobs and two evaluates on one machine are
exactly that case; a whole XGBoost cell (cons_cex_categories, demo) ran in 119 s instead of
129 s alone too. libgomp reads the setting once, when it loads, so it is set before xgboost is
imported (it reaches OpenMP libraries loaded later, and child processes, as well).
"""

from __future__ import annotations

import calendar
import hashlib
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before libgomp loads (module docstring)
import xgboost as xgb  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from hhx.bench import baselines as bl
from hhx.bench.layout import release_paths
from hhx.config import TaskConfig, XGBoostConfig
from hhx.cores import CoreMeter, job_cores, share_threads, usable_cores, user_thread_limit
from hhx.errors import ConfigError, DataError
from hhx.io import temp_dir, write_json_atomic
from hhx.predictors.protocol import PredictionRow
from hhx.predictors.xgboost_params import (
    CLASSIFICATION_PARAMS,
    COMMON_PARAMS,
    DISTRIBUTION_PARAMS,
    REGRESSION_PARAMS,
    Output,
    outputs_for,
)
from hhx.progress import progress
from hhx.tasks.contract import integer_output
from hhx.tasks.registry import distribution_vectors

if TYPE_CHECKING:
    from hhx.bench.baselines import Publication
    from hhx.bench.layout import BenchTask
    from hhx.predictors.protocol import PredictorConfig

log = logging.getLogger(__name__)

MISSING_TOKEN = "__HOUSEHOLDBENCH_MISSING__"
UNSEEN_TOKEN = "__HOUSEHOLDBENCH_UNSEEN__"
PROMPT_MONTH = "prompt_month"


# --------------------------------------------------------------------------------------------
# features


def feature_names(task: TaskConfig) -> tuple[list[str], list[str]]:
    """(all features in model-matrix order, the categorical ones)."""
    features = list(task.prompt_predictors)
    categorical = list(task.categorical_predictors)
    if task.prompt_month is not None:
        features.append(PROMPT_MONTH)
        categorical.append(PROMPT_MONTH)
    return features, categorical


def prompt_month_names(task: TaskConfig, times: pd.Series) -> pd.Series:
    """English month name shown in the prompt: the fixed month, else the month of `time`."""
    fixed = task.prompt_month.fixed_month if task.prompt_month else None
    if fixed:
        return pd.Series(calendar.month_name[int(fixed)], index=times.index)
    months = pd.to_datetime(times, format="%Y-%m-%d").dt.month
    # a lookup, not a Python call per row: 3.5-4.8 s -> 0.3 s on 400,000 rows (bench_xgboost.py)
    return months.map(dict(enumerate(calendar.month_name)))


def clean_categorical(values: pd.Series) -> pd.Series:
    """Strip whitespace; blank or NA -> missing token."""
    text = values.astype("string").str.strip()
    return text.mask(text.isna() | (text == ""), MISSING_TOKEN).astype(object)


@dataclass
class FeatureEncoder:
    """Train-fitted categories per categorical feature (spec 10.2)."""

    features: list[str]
    categorical: list[str]
    categories: dict[str, list[str]] = field(default_factory=dict)

    def fit(self, frame: pd.DataFrame) -> FeatureEncoder:
        for col in self.categorical:
            values = clean_categorical(frame[col])
            seen = sorted(set(values) - {MISSING_TOKEN})
            for token in (MISSING_TOKEN, UNSEEN_TOKEN):
                if token in seen:
                    raise DataError(f"column {col}: reserved token {token} occurs in the data")
            self.categories[col] = seen + [MISSING_TOKEN, UNSEEN_TOKEN]
        return self

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out: dict[str, Any] = {}
        for col in self.features:
            if col in self.categories:
                cats = self.categories[col]
                values = clean_categorical(frame[col])
                values = values.where(values.isin(cats), UNSEEN_TOKEN)
                out[col] = pd.Categorical(values, categories=cats, ordered=False)
            else:
                try:
                    out[col] = pd.to_numeric(frame[col], errors="raise").astype("float64")
                except (ValueError, TypeError):
                    bad = frame[col][pd.to_numeric(frame[col], errors="coerce").isna()
                                     & frame[col].notna()].iloc[0]
                    raise DataError(
                        f"numeric feature {col}: non-numeric value {bad!r}; declare it in the "
                        "task's categorical_predictors or fix the table"
                    ) from None
        return pd.DataFrame(out, index=frame.index)


def with_prompt_month(task: TaskConfig, frame: pd.DataFrame) -> pd.DataFrame:
    if task.prompt_month is None:
        return frame
    frame = frame.copy()
    frame[PROMPT_MONTH] = prompt_month_names(task, frame["time"])
    return frame


# --------------------------------------------------------------------------------------------
# targets and metrics


def project_to_simplex(x: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row onto the probability simplex (spec 10.3)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    u = -np.sort(-x, axis=1)
    css = np.cumsum(u, axis=1) - 1.0
    j = np.arange(1, x.shape[1] + 1)
    cond = u - css / j > 0
    rho = cond.sum(axis=1)  # the official rule counts them (module docstring)
    theta = css[np.arange(len(x)), rho - 1] / rho.astype(float)
    return np.maximum(x - theta[:, None], 0.0)


def macro_f1_cost(n_classes: int):
    """Early-stopping metric: 1 - macro-F1 over all classes (class = p > 0.5 or argmax)."""

    def metric(y_true: np.ndarray, y_pred: np.ndarray) -> float:
        y_true = np.asarray(y_true).astype(int)
        pred = np.asarray(y_pred)
        if n_classes == 2:
            labels = (pred.reshape(-1) > 0.5).astype(int)
        else:
            labels = pred.reshape(len(y_true), n_classes).argmax(axis=1)
        f1 = []
        for k in range(n_classes):
            tp = int(np.count_nonzero((labels == k) & (y_true == k)))
            fp = int(np.count_nonzero((labels == k) & (y_true != k)))
            fn = int(np.count_nonzero((labels != k) & (y_true == k)))
            denom = 2 * tp + fp + fn
            f1.append(0.0 if denom == 0 else 2 * tp / denom)
        # a plain sum in class order, as the official metric (np.mean may round otherwise)
        return float(1.0 - sum(f1) / len(f1))

    metric.__name__ = "macro_f1_cost"
    return metric


def projected_tv(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Early-stopping metric: mean total variation after simplex projection."""
    y_true = np.asarray(y_true, dtype=float)
    pred = project_to_simplex(np.asarray(y_pred, dtype=float).reshape(y_true.shape))
    return float(np.mean(0.5 * np.abs(pred - y_true).sum(axis=1)))


class RoundProgress(xgb.callback.TrainingCallback):
    """A progress line/bar per boosting round (with ETA); closed when early stopping ends it."""

    def __init__(self, desc: str, total: int):
        super().__init__()
        self.desc, self.total, self.bar = desc, total, None

    def before_training(self, model: Any) -> Any:
        self.bar = progress(desc=self.desc, total=self.total, unit="round")
        return model

    def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
        if self.bar is not None:
            self.bar.update(1)
        return False

    def after_training(self, model: Any) -> Any:
        if self.bar is not None:
            if self.bar.n < self.total:  # early stopping ended it: done, not 36% with an ETA
                self.bar.total = self.bar.n
                self.bar.set_postfix_str("early stopping")
            self.bar.close()
            self.bar = None
        return model


class ThreadPlan:
    """The threads a predictor's fits run on now, carried from one fit to the next: at first the
    job's share of the cores (in a joblib worker joblib's OMP_NUM_THREADS, cores // n_jobs;
    elsewhere all usable cores), then every `interval` seconds the usable cores other processes
    leave free (hhx.cores.CoreMeter), at most `limit` (`model.xgboost.threads`).

    Why the share first: a fit that started on all the cores while the other sweep jobs kept
    them busy ran oversubscribed until its first re-sizing, and most fits are shorter than that
    (a task fits one model per output). Measured on the demo grid (64 cells, joblib, 2 workers,
    2 cores): 697 s and 1,336 CPU s with every fit starting on both cores, 626 s and 1,204 CPU s
    with every fit on one thread (OMP_NUM_THREADS=1), 622 s and 1,196 CPU s with this plan."""

    def __init__(self, limit: int, start: int | None = None, interval: float = 2.0):
        self.limit, self.interval = limit, interval
        self.threads = max(1, min(limit, start if start is not None else limit))
        self.used: set[int] = {self.threads}
        self.meter: CoreMeter | None = None
        self.due = 0.0

    def resize(self) -> int | None:
        """The new thread count when a re-sizing is due and changes it, else None."""
        now = time.monotonic()
        if self.meter is None:  # the first reading starts the clock
            self.meter, self.due = CoreMeter(), now + self.interval
            return None
        if now < self.due:
            return None
        self.due = now + self.interval
        threads = share_threads(self.limit, self.meter.other_busy())
        if threads == self.threads:
            return None
        self.threads = threads
        self.used.add(threads)
        return threads


class ThreadShare(xgb.callback.TrainingCallback):
    """Re-sizes a fit's threads as its ThreadPlan says (shared by all of a predictor's fits;
    an int makes a plan of its own starting on that many threads). Parallel sweep jobs so share
    the cores instead of contending for them, and the last fit left running gets them all. The
    thread count never changes XGBoost's result (tests/test_cores.py)."""

    def __init__(self, plan: ThreadPlan | int, interval: float = 2.0):
        super().__init__()
        self.plan = plan if isinstance(plan, ThreadPlan) else ThreadPlan(plan, interval=interval)

    @property
    def used(self) -> set[int]:
        return self.plan.used

    def before_training(self, model: Any) -> Any:
        self._apply(model, self.plan.resize())
        return model

    def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
        self._apply(model, self.plan.resize())
        return False

    @staticmethod
    def _apply(model: Any, threads: int | None) -> None:
        if threads is not None:
            model.set_param("nthread", threads)


def distribution_matrix(task: TaskConfig, group: int, frame: pd.DataFrame) -> np.ndarray:
    dist = task.distributions[group]
    matrix = distribution_vectors(dist, frame[list(dist.columns)].to_numpy(dtype=float))
    bad = ~np.isfinite(matrix).all(axis=1) | (matrix < 0).any(axis=1) | (matrix > 1).any(axis=1)
    bad |= ~np.isclose(matrix.sum(axis=1), 1.0, atol=1e-9)
    if bad.any():
        raise DataError(f"task {task.name}: distribution {dist.name} has {bad.sum()} invalid rows")
    return matrix


# --------------------------------------------------------------------------------------------
# the predictor


def fit_digest(train: pd.DataFrame, val: pd.DataFrame, x_train: pd.DataFrame,
               x_val: pd.DataFrame, y_train: np.ndarray, y_val: np.ndarray) -> str:
    """sha256 of the fitting rows in fitting order: keys, encoded features and targets."""
    digest = hashlib.sha256()
    parts = (train[["id", "time"]].astype(str), val[["id", "time"]].astype(str), x_train, x_val,
             pd.DataFrame(np.asarray(y_train).reshape(len(y_train), -1)),
             pd.DataFrame(np.asarray(y_val).reshape(len(y_val), -1)))
    for part in parts:
        hashed = pd.util.hash_pandas_object(part.reset_index(drop=True), index=False)
        digest.update(hashed.to_numpy(dtype="uint64").tobytes())
    return digest.hexdigest()


def fit_threads(configured: int) -> int:
    """`model.xgboost.threads`, at most the usable cores and a user's OMP_NUM_THREADS (not the
    share joblib gives its workers: a fit re-sizes its threads as it goes, ThreadShare)."""
    limit = user_thread_limit()
    threads = max(1, min(configured, usable_cores(), limit or configured))
    if threads < configured:
        why = (f"OMP_NUM_THREADS={limit}" if limit is not None and limit == threads
               else f"this job may use {threads} core(s)")
        log.info("XGBoost: %d thread(s), not model.xgboost.threads=%d: %s", threads,
                 configured, why)
    return threads


class XGBoostPredictor:
    name = "xgboost"

    def __init__(self, settings: XGBoostConfig) -> None:
        self.settings = settings
        self.encoder: FeatureEncoder | None = None
        self.outputs: list[Output] = []
        self.task: TaskConfig | None = None
        self.counts: dict[str, int] = {}
        self.threads = int(settings.threads)
        self.plan = ThreadPlan(self.threads)

    def _estimator(self, output: Output, seed: int) -> Any:
        s = self.settings
        base = {**COMMON_PARAMS, "random_state": seed, "n_jobs": self.plan.threads,
                "early_stopping_rounds": int(s.early_stopping_rounds)}
        if output.kind == "numeric":
            params = {**REGRESSION_PARAMS, **base}
            params.update(objective="reg:absoluteerror", eval_metric="mae")
            cls = xgb.XGBRegressor
        elif output.kind == "distribution":
            params = {**DISTRIBUTION_PARAMS, **base}
            params.update(objective="reg:absoluteerror", multi_strategy="one_output_per_tree",
                          eval_metric=projected_tv)
            cls = xgb.XGBRegressor
        else:
            n = len(output.classes)
            params = {**CLASSIFICATION_PARAMS, **base, "eval_metric": macro_f1_cost(n)}
            if n == 2:
                params["objective"] = "binary:logistic"
            else:
                params.update(objective="multi:softprob", num_class=n)
            cls = xgb.XGBClassifier
        if s.n_estimators is not None:
            params["n_estimators"] = int(s.n_estimators)
        output.params = {k: getattr(v, "__name__", v) if k == "eval_metric" else v
                         for k, v in params.items()}
        params["callbacks"] = [RoundProgress(f"XGBoost fit {output.name}",
                                             int(params["n_estimators"])),
                               ThreadShare(self.plan)]
        return cls(**params)

    def _targets(self, task: TaskConfig, output: Output, idx: int, frame: pd.DataFrame) -> np.ndarray:
        if output.kind == "distribution":
            return distribution_matrix(task, idx, frame)
        if output.kind == "categorical":
            values = frame[output.name].astype("string")
            codes = values.map({c: i for i, c in enumerate(output.classes)})
            if codes.isna().any():
                bad = values[codes.isna()].iloc[0]
                raise DataError(f"task {task.name}: target {output.name} value {bad!r} not in "
                                f"the domain {output.classes}")
            return codes.to_numpy(dtype=int)
        y = pd.to_numeric(frame[output.name], errors="coerce").to_numpy(dtype=float)
        if not np.isfinite(y).all():
            raise DataError(f"task {task.name}: target {output.name} has missing values")
        return y

    def fit(self, task: BenchTask) -> XGBoostPredictor:
        spec = task.spec
        self.task = spec
        # table order, as the official build (module docstring)
        train = with_prompt_month(spec, task.split_frame(
            "train", int(self.settings.train_cap), order="table"))
        val = with_prompt_month(spec, task.split_frame(
            "validation", int(self.settings.validation_cap), order="table"))
        if train.empty or val.empty:
            raise DataError(f"task {spec.name}: XGBoost needs train and validation rows "
                            f"(got {len(train)} and {len(val)})")
        features, categorical = feature_names(spec)
        self.encoder = FeatureEncoder(features, categorical).fit(train)
        x_train, x_val = self.encoder.transform(train), self.encoder.transform(val)
        self.counts = {"n_train": len(train), "n_validation": len(val)}
        self.outputs = outputs_for(spec)
        self.threads = fit_threads(int(self.settings.threads))
        # the first fit starts on the job's share (job_cores: joblib's OMP_NUM_THREADS in a
        # worker), later ones where the last re-sizing left off (ThreadPlan)
        self.plan = ThreadPlan(self.threads, start=job_cores())
        # OpenMP caps XGBoost at OMP_NUM_THREADS, which joblib sets to its workers' share; the
        # fits may use up to self.threads (ThreadShare keeps them to the cores left free)
        with threadpool_limits(limits=self.threads, user_api="openmp"):
            self._fit_outputs(spec, train, val, x_train, x_val)
        return self

    def _fit_outputs(self, spec: TaskConfig, train: pd.DataFrame, val: pd.DataFrame,
                     x_train: Any, x_val: Any) -> None:
        for idx, output in enumerate(self.outputs):
            if output.name not in spec.xgb_seeds:
                raise ConfigError(f"task {spec.name}: no xgb_seeds entry for output {output.name}")
            y_train = self._targets(spec, output, idx, train)
            y_val = self._targets(spec, output, idx, val)
            if output.kind == "categorical":
                missing = set(range(len(output.classes))) - set(np.unique(y_train))
                if missing:
                    absent = [output.classes[i] for i in sorted(missing)]
                    raise DataError(f"task {spec.name}: training rows lack classes {absent} of "
                                    f"{output.name}; the training classes must cover the domain")
            model = self._estimator(output, int(spec.xgb_seeds[output.name]))
            t0 = time.perf_counter()
            model.fit(x_train, y_train, eval_set=[(x_val, y_val)], verbose=False)
            output.fit_seconds = time.perf_counter() - t0
            output.model = model
            output.best_iteration = getattr(model, "best_iteration", None)
            best = getattr(model, "best_score", None)
            output.best_score = None if best is None else float(best)
            output.fit_digest = fit_digest(train, val, x_train, x_val, y_train, y_val)

    def publication(self, task: BenchTask) -> Publication:
        """Every table row's prediction and the fitted models, for the official baselines/
        table and its diagnostics (hhx/bench/baselines.py)."""
        if self.task is None or task.splits is None:
            raise RuntimeError("fit() must be called before publication()")
        spec = self.task
        rows = self.predict(task, task.prompts)
        frame = bl.baseline_frame(spec.name, task.splits, task.prompts,
                                  [r.prediction for r in rows])
        kinds = {"numeric": "regressor", "categorical": "classifier",
                 "distribution": "distribution"}
        models = [bl.ModelRecord(
            output_name=o.name, response_family=o.kind, model_kind=kinds[o.kind],
            model=o.model, parameters=o.params, best_iteration=o.best_iteration,
            best_score=o.best_score, elapsed_seconds=o.fit_seconds, fit_data_sha256=o.fit_digest,
            metadata={"features": self.encoder.features if self.encoder else [],
                      "category_schemas": self.encoder.categories if self.encoder else {},
                      "class_domain": o.classes or None, "seed": int(spec.xgb_seeds[o.name]),
                      "xgboost_version": xgb.__version__})
            for o in self.outputs]
        paths = release_paths(task.root, spec.name)
        return bl.Publication(
            task_name=spec.name, family=self.outputs[0].kind if self.outputs else "numeric",
            frame=frame, models=models, train_rows=self.counts.get("n_train", 0),
            validation_rows=self.counts.get("n_validation", 0), table_path=paths["table"],
            sidecar_path=paths["sidecar"], domains=[o.classes for o in self.outputs])

    def publish(self, task: BenchTask, root: Path, out: Path) -> dict[str, Path]:
        """Write the official baselines/ table of this task under `root` and its diagnostics
        under `out` (hhx/bench/baselines.py)."""
        return bl.publish(self.publication(task), root, out)

    def _feature_rows(self, task: BenchTask, examples: pd.DataFrame) -> pd.DataFrame:
        if task.table is None:
            raise DataError("XGBoost needs the task table; the eval-sample layout has only "
                            "prompts — point data.root at the full release")
        keys = examples[["id", "time"]].astype(str)
        table = task.table.assign(id=task.table["id"].astype(str), time=task.table["time"].astype(str))
        rows = keys.merge(table, on=["id", "time"], how="left", validate="one_to_one",
                          indicator=True)
        if (rows["_merge"] != "both").any():
            miss = rows.loc[rows["_merge"] != "both", ["id", "time"]].iloc[0].tolist()
            raise DataError(f"task {task.spec.name}: example {miss} has no row in the task table")
        return with_prompt_month(task.spec, rows.drop(columns="_merge"))

    def predict(self, task: BenchTask, examples: pd.DataFrame) -> list[PredictionRow]:
        if self.encoder is None or self.task is None:
            raise RuntimeError("fit() must be called before predict()")
        spec = self.task
        x = self.encoder.transform(self._feature_rows(task, examples))
        per_output: list[list[Any]] = []
        for output in self.outputs:
            if output.kind == "numeric":
                values = output.model.predict(x).astype(float)
                if integer_output(spec):  # the task's builder says INTEGER_OUTPUT
                    per_output.append([int(round(v)) for v in values])
                else:
                    per_output.append([float(v) for v in values])
            elif output.kind == "distribution":
                pred = project_to_simplex(output.model.predict(x))
                per_output.append([[float(p) for p in row] for row in pred])
            else:
                proba = output.model.predict_proba(x)
                idx = (proba[:, 1] > 0.5).astype(int) if proba.shape[1] == 2 else proba.argmax(1)
                per_output.append([output.classes[i] for i in idx])
        rows = []
        for i, ex in enumerate(examples.itertuples(index=False)):
            answer = [values[i] for values in per_output]
            rows.append(PredictionRow(id=str(ex.id), time=str(ex.time), prediction=answer))
        return rows

    def save(self, out_dir: Path) -> list[Path]:
        if self.task is None or self.encoder is None:
            return []
        written: list[Path] = []
        folder = Path(out_dir) / self.task.name
        folder.mkdir(parents=True, exist_ok=True)
        for output in self.outputs:
            path = folder / f"{output.name}.ubj"
            # Saved under its own name in a scratch folder, then moved: never half-written
            # (XGBoost reports a full disk as "FileStream.Write incomplete", not an OSError).
            with temp_dir(folder, prefix="model-") as tmp:
                try:
                    output.model.save_model(tmp / path.name)
                except xgb.core.XGBoostError as exc:
                    raise OSError(None, f"XGBoost could not write the model ({exc})".split(
                        "\n")[0][:300], str(path)) from exc
                (tmp / path.name).replace(path)
            meta = {
                "task": self.task.name, "output": output.name, "kind": output.kind,
                "classes": output.classes, "seed": int(self.task.xgb_seeds[output.name]),
                "best_iteration": output.best_iteration, "fit_seconds": output.fit_seconds,
                "features": self.encoder.features, "categories": self.encoder.categories,
                "params": {k: (v if not isinstance(v, float) or np.isfinite(v) else str(v))
                           for k, v in output.model.get_params().items()
                           if isinstance(v, (int, float, str, bool, type(None)))},
                "xgboost_version": xgb.__version__, **self.counts,
            }
            written += [path, write_json_atomic(folder / f"{output.name}.metadata.json", meta)]
        return written

    def run_metrics(self) -> dict[str, float]:
        metrics: dict[str, float] = {k: float(v) for k, v in self.counts.items()}
        for output in self.outputs:
            if output.best_iteration is not None:
                metrics[f"xgb_best_iteration.{output.name}"] = float(output.best_iteration)
            metrics[f"xgb_fit_seconds.{output.name}"] = output.fit_seconds
        return metrics


def make(cfg: PredictorConfig) -> XGBoostPredictor:
    return XGBoostPredictor(cfg.model.xgboost)
