"""The official XGBoost publication: `baselines/<task>.csv`, its manifest and READY.json, and the
diagnostics beside them. `model=xgboost` writes it; `model=official_xgboost` reads it.

Formats as the official build writes them (scripts/3_xgboost/build.py, read for this):
- `baselines/<task>.csv` (pandas `to_csv`, no index): `task_id, id, time, release_date, split,
  split_quarter, within_period_order, split_position` (the split sidecar's values, every exported
  row, table order), `actual_answer` and `naive_baseline` (the prompt record's JSON lists, decoded
  and re-encoded compactly: separators "," and ":", ASCII, no NaN), and `xgb_400k_tuned_direct`
  (the prediction for the row, encoded the same way). The official job writes one such file per
  task and then `manifest.csv` (one row per task, sorted by task_id: task_id, prediction_file,
  prediction_sha256, rows, columns, prediction_columns, training_profile_counts, model_count,
  table_sha256, sidecar_sha256, build_status) and `READY.json` (created_at, status, run_id,
  task_count, prediction_rows, manifest_sha256, output_ready_sha256; JSON indent 2, sorted keys,
  final newline). hhx fits a task per job, so its rows are upserted by task_id under a lock.
- Diagnostics (the official `output/householdbench/baselines/`): `xgboost_model_manifest.csv`
  (= `xgboost_model_diagnostics.csv`; one row per model), `xgboost_metrics_task.csv` (per task
  and split: the model's and the no-change baseline's task metric), `xgboost_feature_importance.csv`
  (gain and gain share per feature and model), the models under
  `models/xgboost/train_400k/xgb_tuned_direct/<task>/<output>.ubj` + `.metadata.json`, and
  `READY.json`. Paths in the manifests are relative: `prediction_file` as the official
  (`data/householdbench/baselines/<task>.csv`, the release root being `data/householdbench`),
  model paths relative to the diagnostics folder. The official run/model identity hashes cover its
  own runtime and registries; hhx's `run_id`, `model_identity_sha256` and `fit_data_sha256` are
  hhx's digests of the same inputs and are not comparable with the official ones.
Where: an hhx build's release root gets `<root>/baselines/` and `<root>_baselines_output/`; a
downloaded release (data=official) is never written to: the run directory gets them instead.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.io import file_lock, temp_dir, write_csv_atomic, write_text_atomic

from . import splits as sp

BASELINES_DIR = "baselines"
TRAINING_PROFILE = "train_400k"
VARIANT = "xgb_tuned_direct"
PREDICTION_COLUMN = "xgb_400k_tuned_direct"
TRAINING_PROFILES = {TRAINING_PROFILE: {"train": 400_000, "validation": 50_000}}
PUBLICATION_SPEC_VERSION = "5.0"
MULTI_OUTPUT_STRATEGY = "one_output_per_tree"
KEY_COLUMNS = ("id", "time", "release_date", "split", "split_quarter", "within_period_order",
               "split_position")
BASELINE_COLUMNS = ("task_id", *KEY_COLUMNS, "actual_answer", "naive_baseline",
                    PREDICTION_COLUMN)
MANIFEST_COLUMNS = ("task_id", "prediction_file", "prediction_sha256", "rows", "columns",
                    "prediction_columns", "training_profile_counts", "model_count",
                    "table_sha256", "sidecar_sha256", "build_status")
MODEL_COLUMNS = ("task_id", "training_profile", "variant", "output_name", "response_family",
                 "model_kind", "checkpoint_origin", "best_iteration", "best_score",
                 "elapsed_seconds", "model_bytes", "model_sha256", "model_identity_sha256",
                 "fit_data_sha256", "publication_provenance_sha256", "model_path",
                 "metadata_path", "parameters", "multi_output_strategy", "train_rows",
                 "validation_rows")
METRIC_COLUMNS = ("task_id", "split", "training_profile", "variant", "prediction_column", "rows",
                  "metric", "model_value", "naive_value")
IMPORTANCE_COLUMNS = ("task_id", "training_profile", "variant", "output_name", "feature", "gain",
                      "gain_share")
MISSING_HINT = ("model=official_xgboost scores the official XGBoost predictions of the "
                "release's baselines/ folder: download it into data.root (baselines/<task>.csv), "
                "or write hhx's own with model=xgboost on the same release")


def canonical_json_array(value: Any) -> str:
    """A JSON list as the official baselines table writes it: compact, ASCII, no NaN."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def sha256_json(value: Any) -> str:
    payload = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def baselines_path(root: str | Path, task_name: str) -> Path:
    return Path(root) / BASELINES_DIR / f"{task_name}.csv"


def diagnostics_root(root: str | Path) -> Path:
    """The official `output/householdbench/baselines/` of a release root: a sibling folder."""
    root = Path(root)
    return root.with_name(f"{root.name}_baselines_output")


def _write_ready(path: Path, value: dict[str, Any]) -> Path:
    text = json.dumps(value, indent=2, sort_keys=True, allow_nan=False) + "\n"
    return write_text_atomic(path, text)


def _upsert(path: Path, task_name: str, rows: pd.DataFrame, columns: Sequence[str]) -> Path:
    """Replace `task_name`'s rows of a diagnostics CSV, keeping the others, sorted by task_id
    (stable: each task's rows in the order written). New rows are formatted by pandas first, so
    every row's number text is what `to_csv` gives."""
    text = rows.loc[:, list(columns)].to_csv(index=False)
    new = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    frames = [new]
    if path.is_file():
        old = pd.read_csv(path, dtype=str, keep_default_na=False)
        if list(old.columns) != list(columns):
            raise DataError(f"{path}: columns {list(old.columns)} are not the official "
                            f"{list(columns)}; move the file away and rerun")
        frames.insert(0, old.loc[old["task_id"] != task_name])
    out = pd.concat(frames, ignore_index=True).sort_values("task_id", kind="mergesort")
    return write_csv_atomic(path, out.reset_index(drop=True))


# --------------------------------------------------------------------------------------------
# the per-task table


def baseline_frame(task_name: str, splits: pd.DataFrame, prompts: pd.DataFrame,
                   predictions: Sequence[Any]) -> pd.DataFrame:
    """Every exported row in table order: the sidecar keys, gold and no-change answers, and the
    prediction (`predictions[i]` answers row i of the table)."""
    if len(predictions) != len(splits) or len(prompts) != len(splits):
        raise DataError(f"task {task_name}: {len(predictions)} predictions for {len(splits)} "
                        "table rows; the baselines table needs one per row")
    frame = splits.loc[:, list(KEY_COLUMNS)].reset_index(drop=True).copy()
    for col in ("within_period_order", "split_position"):
        frame[col] = frame[col].astype("int64")
    frame.insert(0, "task_id", task_name)
    frame["actual_answer"] = [canonical_json_array(json.loads(a)) for a in prompts["assistant"]]
    frame["naive_baseline"] = [canonical_json_array(json.loads(a))
                               for a in prompts["naive_baseline"]]
    frame[PREDICTION_COLUMN] = [canonical_json_array(p) for p in predictions]
    return frame


# --------------------------------------------------------------------------------------------
# metrics per split (the official formulas: RelMAE, macro-F1 over the domain, mean TV)


def task_metric(family: str, truth: list, pred: list, naive: list,
                domains: Sequence[Sequence[str]] = ()) -> tuple[str, float, float]:
    """(metric, model value, no-change value) of one split."""
    if family == "numeric":
        t, p, n = (np.asarray(v, dtype=float) for v in (truth, pred, naive))
        num, den = np.abs(t - p).sum(axis=0), np.abs(t - n).sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            atomic = [float(a) for a in num / den]  # a zero denominator: NaN (official: error)
        return "task_relmae", sum(atomic) / len(atomic), 1.0
    if family == "categorical":
        t, p, n = (np.asarray(v, dtype=object) for v in (truth, pred, naive))
        model = [_macro_f1(t[:, k], p[:, k], domains[k]) for k in range(t.shape[1])]
        base = [_macro_f1(t[:, k], n[:, k], domains[k]) for k in range(t.shape[1])]
        return "task_macro_f1", sum(model) / len(model), sum(base) / len(base)
    groups = len(truth[0])
    model, base = [], []
    for g in range(groups):
        t = np.asarray([row[g] for row in truth], dtype=float)
        model.append(float((0.5 * np.abs(t - np.asarray([r[g] for r in pred], float))
                            .sum(axis=1)).mean()))
        base.append(float((0.5 * np.abs(t - np.asarray([r[g] for r in naive], float))
                           .sum(axis=1)).mean()))
    return "task_mean_tv", sum(model) / groups, sum(base) / groups


def _macro_f1(truth: np.ndarray, pred: np.ndarray, domain: Sequence[str]) -> float:
    scores = []
    for label in sorted(domain):
        t, p = truth == label, pred == label
        tp = int(np.count_nonzero(t & p))
        denom = 2 * tp + int(np.count_nonzero(~t & p)) + int(np.count_nonzero(t & ~p))
        scores.append(0.0 if denom == 0 else 2 * tp / denom)
    return sum(scores) / len(scores)


def metric_rows(task_name: str, family: str, frame: pd.DataFrame,
                domains: Sequence[Sequence[str]] = ()) -> pd.DataFrame:
    rows = []
    for split in sp.SPLITS:
        part = frame.loc[frame["split"] == split]
        if part.empty:
            continue
        truth, pred, naive = ([json.loads(v) for v in part[c]] for c in
                              ("actual_answer", PREDICTION_COLUMN, "naive_baseline"))
        metric, model, base = task_metric(family, truth, pred, naive, domains)
        rows.append({"task_id": task_name, "split": split, "training_profile": TRAINING_PROFILE,
                     "variant": VARIANT, "prediction_column": PREDICTION_COLUMN,
                     "rows": len(part), "metric": metric, "model_value": model,
                     "naive_value": base})
    return pd.DataFrame(rows, columns=list(METRIC_COLUMNS))


# --------------------------------------------------------------------------------------------
# publishing one task


@dataclass
class ModelRecord:
    """One fitted model as the diagnostics describe it."""

    output_name: str
    response_family: str  # numeric | categorical | distribution
    model_kind: str  # regressor | classifier | distribution
    model: Any  # the fitted XGBoost estimator
    parameters: dict[str, Any]
    best_iteration: int | None
    best_score: float | None
    elapsed_seconds: float
    fit_data_sha256: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Publication:
    """What one task's XGBoost fit publishes."""

    task_name: str
    family: str
    frame: pd.DataFrame  # baseline_frame(...)
    models: list[ModelRecord]
    train_rows: int
    validation_rows: int
    table_path: Path
    sidecar_path: Path
    domains: list[list[str]] = field(default_factory=list)


def _save_model(out: Path, pub: Publication, rec: ModelRecord,
                provenance: str) -> dict[str, Any]:
    rel = Path("models", "xgboost", TRAINING_PROFILE, VARIANT, pub.task_name,
               f"{rec.output_name}.ubj")
    path = out / rel
    with temp_dir(path.parent, prefix="model-") as tmp:  # XGBoost picks the format by suffix
        rec.model.save_model(tmp / path.name)
        (tmp / path.name).replace(path)
    identity = sha256_json({"task_id": pub.task_name, "output_name": rec.output_name,
                            "variant": VARIANT, "training_profile": TRAINING_PROFILE,
                            "fit_data_sha256": rec.fit_data_sha256,
                            "parameters": rec.parameters})
    row = {"task_id": pub.task_name, "training_profile": TRAINING_PROFILE, "variant": VARIANT,
           "output_name": rec.output_name, "response_family": rec.response_family,
           "model_kind": rec.model_kind, "checkpoint_origin": "fitted",
           "best_iteration": rec.best_iteration, "best_score": rec.best_score,
           "elapsed_seconds": rec.elapsed_seconds, "model_bytes": path.stat().st_size,
           "model_sha256": sha256_file(path), "model_identity_sha256": identity,
           "fit_data_sha256": rec.fit_data_sha256,
           "publication_provenance_sha256": provenance, "model_path": str(rel),
           "metadata_path": str(rel.with_suffix(".metadata.json")),
           "parameters": json.dumps(rec.parameters, sort_keys=True),
           "multi_output_strategy": MULTI_OUTPUT_STRATEGY if rec.model_kind == "distribution"
           else "", "train_rows": pub.train_rows, "validation_rows": pub.validation_rows}
    meta = {**rec.metadata, **{k: row[k] for k in row if k not in ("parameters", "model_path",
                                                                    "metadata_path")},
            "parameters": rec.parameters}
    _write_ready(out / str(row["metadata_path"]), meta)
    return row


def _importance(pub: Publication, rec: ModelRecord) -> list[dict[str, Any]]:
    scores = rec.model.get_booster().get_score(importance_type="gain")
    total = sum(float(v) for v in scores.values())
    return [{"task_id": pub.task_name, "training_profile": TRAINING_PROFILE, "variant": VARIANT,
             "output_name": rec.output_name, "feature": name, "gain": float(gain),
             "gain_share": float(gain) / total if total else 0.0}
            for name, gain in scores.items()]


def publish(pub: Publication, root: str | Path, out: str | Path) -> dict[str, Path]:
    """Write `<root>/baselines/<task>.csv`, upsert its manifest row and READY.json, and the
    task's diagnostics and models under `out`. Returns the files written."""
    root, out = Path(root), Path(out)
    data = root / BASELINES_DIR
    provenance = sha256_json({"table_sha256": sha256_file(pub.table_path),
                              "sidecar_sha256": sha256_file(pub.sidecar_path)})
    with file_lock(out / ".hhx_baselines.lock"):
        models = pd.DataFrame([_save_model(out, pub, r, provenance) for r in pub.models],
                              columns=list(MODEL_COLUMNS))
        importance = pd.DataFrame([row for r in pub.models for row in _importance(pub, r)],
                                  columns=list(IMPORTANCE_COLUMNS))
        metrics = metric_rows(pub.task_name, pub.family, pub.frame, pub.domains)
        files = {name: _upsert(out / f"xgboost_{name}.csv", pub.task_name, frame, columns)
                 for name, frame, columns in (
                     ("model_manifest", models, MODEL_COLUMNS),
                     ("model_diagnostics", models, MODEL_COLUMNS),
                     ("metrics_task", metrics, METRIC_COLUMNS),
                     ("feature_importance", importance, IMPORTANCE_COLUMNS))}
        manifest = pd.read_csv(out / "xgboost_model_manifest.csv", dtype=str,
                               keep_default_na=False)
        tasks = sorted(set(manifest["task_id"]))
        run_id = sha256_json({"publication_spec_version": PUBLICATION_SPEC_VERSION,
                              "training_profiles": TRAINING_PROFILES,
                              "models": sorted(manifest["model_identity_sha256"])})
        files["ready"] = _write_ready(out / "READY.json", {
            "created_at": dt.datetime.now(dt.UTC).isoformat(), "status": "READY",
            "run_id": run_id, "task_count": len(tasks), "model_count": len(manifest),
            "model_manifest_sha256": sha256_file(out / "xgboost_model_manifest.csv"),
            "training_profiles": TRAINING_PROFILES, "runtime": runtime_identity(),
            "multi_output_strategy": MULTI_OUTPUT_STRATEGY})
    with file_lock(data / ".hhx_baselines.lock"):
        files["baselines"] = write_csv_atomic(data / f"{pub.task_name}.csv", pub.frame)
        row = {"task_id": pub.task_name,
               "prediction_file": f"data/householdbench/baselines/{pub.task_name}.csv",
               "prediction_sha256": sha256_file(files["baselines"]), "rows": len(pub.frame),
               "columns": len(pub.frame.columns),
               "prediction_columns": json.dumps([PREDICTION_COLUMN]),
               "training_profile_counts": json.dumps(
                   {TRAINING_PROFILE: {"train": pub.train_rows,
                                       "validation": pub.validation_rows}}, sort_keys=True),
               "model_count": len(pub.models), "table_sha256": sha256_file(pub.table_path),
               "sidecar_sha256": sha256_file(pub.sidecar_path), "build_status": "complete"}
        files["manifest"] = _upsert(data / "manifest.csv", pub.task_name, pd.DataFrame([row]),
                                    MANIFEST_COLUMNS)
        listed = pd.read_csv(files["manifest"], dtype=str, keep_default_na=False)
        files["data_ready"] = _write_ready(data / "READY.json", {
            "created_at": dt.datetime.now(dt.UTC).isoformat(), "status": "READY",
            "run_id": run_id, "task_count": len(listed),
            "prediction_rows": int(pd.to_numeric(listed["rows"]).sum()),
            "manifest_sha256": sha256_file(files["manifest"]),
            "output_ready_sha256": sha256_file(files["ready"])})
    return files


def runtime_identity() -> dict[str, str]:
    import xgboost as xgb

    return {"python": platform.python_version(), "xgboost": xgb.__version__,
            "numpy": np.__version__, "pandas": pd.__version__}


# --------------------------------------------------------------------------------------------
# reading a published table


def read_baselines(root: str | Path, task_name: str) -> pd.DataFrame:
    """A published `baselines/<task>.csv` as text columns, indexed by (id, time)."""
    path = baselines_path(root, task_name)
    if not path.is_file():
        raise DataError(f"{path}: not found; {MISSING_HINT}")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]}); "
                        "download it again") from None
    missing = [c for c in ("task_id", "id", "time", PREDICTION_COLUMN) if c not in frame]
    if missing:
        raise DataError(f"{path}: lacks the column(s) {missing} of the official baselines table "
                        f"({', '.join(BASELINE_COLUMNS)}); download it again")
    if frame.duplicated(["id", "time"]).any():
        raise DataError(f"{path}: repeats an (id, time) key; download it again")
    return frame.set_index(["id", "time"], drop=False)
