"""Record: the run directory's files, `run_info.json`, and the MLflow run (FINISHED, or FAILED
with its reason in tag `hhx.failure_reason`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from hhx.bench.layout import BenchTask
from hhx.bounds import enum_text
from hhx.catalog import backend_spec
from hhx.config import DataSource
from hhx.io import write_json_atomic, write_jsonl_atomic, write_parquet_atomic, write_text_atomic
from hhx.predictors.protocol import Predictor
from hhx.scoring import write_result
from hhx.stages.evaluation.plan import EvalRun
from hhx.stages.evaluation.scoring import Scored
from hhx.tasks.own import origin_tags, own_task_dir
from hhx.tracking.labels import run_name
from hhx.tracking.mlflow_run import config_yaml, flatten_config, log_run

log = logging.getLogger("hhx.stages.evaluate")  # the stage's log lines, wherever they are written

STAGE = "evaluate"


def write_outputs(out: Path, run: EvalRun, scored: Scored,
                  resolved: dict[str, Any]) -> dict[str, Path]:
    """predictions/, details/ and result/ of the task, and config/resolved.yaml."""
    name = run.task.name
    return {
        "predictions": write_jsonl_atomic(out / "predictions" / f"{name}.jsonl", scored.official),
        "details": write_parquet_atomic(out / "details" / f"{name}.parquet", scored.details),
        "result": write_result(out / "result" / f"{name}.json", scored.result),
        "config": write_text_atomic(out / "config" / "resolved.yaml", config_yaml(resolved)),
    }


def publish_baselines(run: EvalRun, predictor: Predictor, bench: BenchTask,
                      out: Path) -> dict[str, Path]:
    """model=xgboost: the official baselines/ table of every row and its diagnostics
    (hhx/bench/baselines.py), in an hhx build's release root, or in the run directory when the
    release is a download or an own task's prebuilt folder (never written to). Off with
    model.xgboost.publish_baselines=false."""
    publish = getattr(predictor, "publish", None)
    if publish is None or bench.layout != "release" or bench.splits is None:
        return {}
    if not run.publish_baselines:
        return {}
    from hhx.bench.baselines import diagnostics_root

    if run.source is DataSource.official or bench.root == own_task_dir(run.task.name):
        root, diagnostics = out, out / "baselines_output"
    else:
        root, diagnostics = bench.root, diagnostics_root(bench.root)
    files: dict[str, Path] = publish(bench, root, diagnostics)
    log.info("official baselines table: %s (diagnostics in %s)", files["baselines"], diagnostics)
    return files


def logged_examples(run: EvalRun, bench: BenchTask, details: pd.DataFrame) -> dict[str, Any]:
    """The evaluated examples as the run's dataset input, and the per-example details as a
    table the MLflow UI previews (the parquet beside it is for programs)."""
    keys = details[["id", "time", "release_date", "split", "split_position", "reference"]].copy()
    keys["split_position"] = keys["split_position"].astype("float")
    name = f"{run.task.name}/{run.split}"
    preview = details.drop(columns=["predictor_details"]).copy()
    preview["split_position"] = preview["split_position"].astype("float")
    return {"dataset": (keys, name, str(Path(str(bench.root)).resolve())),
            "tables": {f"details/{run.task.name}.table.json": preview}}


def evaluated_name(run: EvalRun, bench: BenchTask) -> str:
    """The MLflow run's name (hhx.tracking.labels.run_name)."""
    return run_name(run.task.name, run.model_name, STAGE, run.demo_data or bench.synthetic)


def backend_tags(run: EvalRun) -> dict[str, str]:
    """`hhx.<backend>.<setting>` for the settings its catalog entry tags (`BackendSpec.tagged`),
    those that are set."""
    model = run.predictor.model
    return {f"hhx.{run.backend}.{key}": str(model.get(key))
            for key in backend_spec(run.backend).tagged if model.get(key)}


def run_tags(run: EvalRun, bench: BenchTask, status: str, failure: str | None,
             extra_tags: dict[str, str]) -> dict[str, str]:
    tags = {
        "hhx.stage": STAGE,
        "hhx.task": run.task.name,
        "hhx.model": run.model_name,
        "hhx.backend": run.backend,
        "hhx.mode": enum_text(run.task.mode),
        "hhx.target_type": enum_text(run.task.target_type),
        "hhx.data_source": run.source.value,
        "hhx.synthetic": "true" if run.demo_data or bench.synthetic else "false",
        "hhx.split": run.split,
        "hhx.model_cutoff": run.model_cutoff,
        "hhx.status": status.lower(),
        # Fine-tuned models: the base model and the adapter applied to it (empty for none).
        "hhx.base_model": run.base_model,
        "hhx.adapter": run.adapter,
        # The backend's own settings it asks to be tagged (a custom predictor's model.target).
        **backend_tags(run),
        **origin_tags(run.task.name),  # an own task: hhx.task_origin=own (official: none)
        **run.prompt.tags(),  # a prompt variant's hhx.prompt, k, seed (none when official)
        **extra_tags,  # a sweep cell's identity (hhx/sweeps/cell.py), the selection, the note
    }
    if failure:
        tags["hhx.failure_reason"] = failure
    return tags


def record_run(
    run: EvalRun,
    bench: BenchTask,
    out: Path,
    started_at: float,
    metrics: dict[str, Any],
    failure: str | None,
    extra_tags: dict[str, str],
    run_id: str | None,
    resolved: dict[str, Any],
    logged: dict[str, Any] | None = None,
) -> str | None:
    """Write run_info.json and log the MLflow run: FINISHED, or FAILED with `failure` (tag
    hhx.failure_reason). Returns the MLflow run id. `resolved`: the config resolved once."""
    status = "FAILED" if failure else "FINISHED"
    tags = run_tags(run, bench, status, failure, extra_tags)
    write_json_atomic(out / "run_info.json", {
        "tags": tags, "start_time": started_at, "status": status, "failure_reason": failure,
        "metrics": {k: v for k, v in metrics.items() if isinstance(v, (int, float)) or v is None}})
    if not (out / "config" / "resolved.yaml").exists():
        write_text_atomic(out / "config" / "resolved.yaml", config_yaml(resolved))
    return log_run(
        run.tracking,
        run_name=evaluated_name(run, bench),
        params=flatten_config(resolved),
        tags=tags,
        metrics=metrics,
        artifact_dir=out,
        status=status,
        run_id=run_id,
        **(logged or {}),
    )
