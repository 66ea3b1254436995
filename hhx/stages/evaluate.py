"""`stage=evaluate`: one task x one model — predict, score with the official scorer, track.

Writes to the run directory (and logs to MLflow): `predictions/<task>.jsonl` (official format),
`details/<task>.parquet` (one row per example), `result/<task>.json` (the scorer's result),
`config/resolved.yaml`, the fitted model under `model/`, and `run_info.json` (tags, metrics,
status).

A run that answers fewer than `min_coverage` of its examples (or, for K > 1, of its draws) is
still written and logged, but as FAILED with its reason (tag `hhx.failure_reason`), and the stage
exits non-zero (`RunFailed`); the leaderboard never ranks it. Ctrl-C stops with `Interrupted`:
what is cached, and that the same command resumes.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from hhx.bench.layout import BenchTask
from hhx.config import TargetType, TaskConfig
from hhx.errors import HhxError, Interrupted, PredictorError
from hhx.io import write_json_atomic, write_jsonl_atomic, write_parquet_atomic, write_text_atomic
from hhx.predictors.base import PredictionRow, make_predictor, preflight
from hhx.scoring import error_code, score_task, write_result
from hhx.startup import resume_gc
from hhx.sweeps import cell as sweep_cell
from hhx.tasks.registry import answer_names, as_task
from hhx.tasks.sources import is_synthetic, load_bench, source_of
from hhx.textsafe import encodable_tree
from hhx.tracking.labels import enum_value, model_label, run_name
from hhx.tracking.mlflow_run import (
    begin_run,
    config_yaml,
    directed_name,
    fail_run,
    flatten_config,
    log_run,
    resolved_config,
)

log = logging.getLogger(__name__)

# The collector stays paused (hhx/startup.py) until the MLflow run is open: MLflow's imports are
# most of start-up.
RESUMES_GC = True

RECORD_KEYS = ["id", "time", "release_date", "system", "user", "assistant", "naive_baseline"]


class RunFailed(HhxError):
    """The run was written and logged FAILED (coverage below min_coverage)."""


def selection_rule(bench: BenchTask, split: str, limit: int | None) -> tuple[int, str]:
    """(rows the split holds, the rule that chose the evaluated ones), for console and MLflow."""
    from hhx.bench import splits as sp
    from hhx.bench.layout import EVAL_SAMPLE_DIRS

    if bench.layout == "eval_sample":
        return len(bench.prompts), (f"every row of the eval-sample file {split} "
                                    "(data.max_examples=null)")
    assert bench.splits is not None
    if split in EVAL_SAMPLE_DIRS:
        n = sp.EVAL_ROWS_PER_TASK if limit is None else min(int(limit), sp.EVAL_ROWS_PER_TASK)
        if split == "pre_cutoff":
            total = int((bench.splits["split"] == "pre_cutoff_test").sum())
            return total, (f"official eval sample: first {n} of pre_cutoff_test by split_position "
                           f"(data.split=pre_cutoff, data.max_examples={limit})")
        keep = (bench.splits["split"] == "post_cutoff_test") & (
            bench.splits["release_date"].astype("string") > sp.EVAL_POST_CUTOFF_DATE)
        return int(keep.sum()), (
            f"official eval sample: {n} post_cutoff_test rows released after "
            f"{sp.EVAL_POST_CUTOFF_DATE}, interleaved by quarter (data.split=post_cutoff, "
            f"data.max_examples={limit})")
    total = int((bench.splits["split"] == split).sum())
    if limit is None:
        return total, f"every row of {split} (data.max_examples=null)"
    return total, f"first {int(limit)} of {split} by split_position (data.max_examples={limit})"


def coverage_failure(result: dict, metrics: dict[str, Any], min_coverage: float) -> str | None:
    """Why a run does not count (None: it does): answered examples, or draws, below the bar."""
    coverage = float(result.get("coverage_rate") or 0.0)
    if coverage < min_coverage:
        missing = result["num_examples"] - round(coverage * result["num_examples"])
        return (f"coverage {coverage:.2f} < min_coverage {min_coverage:g}: {missing} of "
                f"{result['num_examples']} examples have no answer")
    draws = metrics.get("llm/draw_coverage")
    if draws is not None and float(draws) < min_coverage:
        return (f"draw coverage {float(draws):.2f} < min_coverage {min_coverage:g}: "
                f"{int(metrics.get('llm/draws_missing', 0))} draws are missing")
    return None


def failure_causes(metrics: dict[str, Any]) -> str:
    """The failed-request counts, e.g. `server_error x12, timeout x3` (for the stop message)."""
    causes = sorted(((k.removeprefix("llm/failed/"), int(v)) for k, v in metrics.items()
                     if k.startswith("llm/failed/")), key=lambda kv: -kv[1])
    return ", ".join(f"{k} x{n}" for k, n in causes)


def run_dir() -> Path:
    try:
        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:  # called outside a Hydra app (tests calling run() directly)
        return Path("outputs") / time.strftime("%Y-%m-%d/%H-%M-%S")


def score(task: TaskConfig, cfg: DictConfig, gold: list[dict], preds: list[dict]) -> dict:
    return score_task(
        task,
        gold,
        preds,
        prediction_field=cfg.score.prediction_field,
        repair_number_formatting=bool(cfg.score.repair_number_formatting),
        repair_distribution_nesting=bool(cfg.score.repair_distribution_nesting),
        include_details=True,
    )


def as_list(task: TaskConfig, record: dict | None) -> list | None:
    """The scorer's {field: value} record as the answer list, in answer order."""
    return None if record is None else [record[name] for name in answer_names(task)]


def details_frame(
    task: TaskConfig, examples: pd.DataFrame, result: dict, rows: list[PredictionRow]
) -> pd.DataFrame:
    """One row per example: the leaderboard's input (bootstrap, bias, persistence, cutoff)."""
    extras = {(r.id, r.time): r.details for r in rows}
    records = []
    # The scorer's details follow the gold rows, which are the examples in order.
    for ex, d in zip(examples.itertuples(index=False), result["details"], strict=True):
        raw = d.get("raw_prediction")
        records.append(encodable_tree({
            "id": str(ex.id),
            "time": str(ex.time),
            "release_date": str(ex.release_date),
            "split": str(getattr(ex, "split", "")),
            "split_position": getattr(ex, "split_position", None),
            "valid": bool(d["valid"]),
            "error": d.get("error"),
            "raw_prediction": raw if isinstance(raw, str) or raw is None else json.dumps(raw),
            "parsed_prediction": json.dumps(as_list(task, d.get("parsed_prediction")))
            if d["valid"] else None,
            "reference": ex.assistant,
            "naive_baseline": ex.naive_baseline,
            "predictor_details": json.dumps(extras.get((str(ex.id), str(ex.time)), {}),
                                            default=str),
        }))
    frame = pd.DataFrame.from_records(records)
    frame["split_position"] = pd.array(frame["split_position"], dtype="Int64")
    return frame


def metric_items(result: dict, prefix: str = "") -> dict[str, Any]:
    """Flatten a scorer result into MLflow metric names."""
    m = result["metrics"]
    out: dict[str, Any] = {
        f"{prefix}primary_score": m.get("primary_score"),
        # the same score under a name that says which metric it is and which way is better
        f"{prefix}{directed_name(str(m.get('primary_metric')), str(m.get('score_direction')))}":
            m.get("primary_score"),
        f"{prefix}num_examples": result["num_examples"],
        f"{prefix}num_valid": result["num_valid"],
        f"{prefix}num_invalid": result["num_invalid"],
        f"{prefix}coverage_rate": result["coverage_rate"],
        f"{prefix}valid_response_rate": result["valid_response_rate"],
    }
    names = {"relmae_by_target": "relmae", "nmae_by_target": "nmae",
             "macro_f1_by_target": "macro_f1", "accuracy_by_target": "accuracy",
             "tv_by_distribution": "tv"}
    for key, short in names.items():
        for field, value in (m.get(key) or {}).items():
            out[f"{prefix}{short}.{field}"] = value
    for key in ("mean_relmae", "mean_nmae", "mean_macro_f1", "mean_accuracy",
                "mean_total_variation"):
        if key in m:
            out[f"{prefix}{key}"] = m[key]
    if not prefix:
        for error, count in (result.get("error_counts") or {}).items():
            key = f"errors.{error_code(error)}"
            out[key] = out.get(key, 0) + count
    return out


def summary_row(name: str, task: TaskConfig, result: dict) -> dict[str, Any]:
    m = result["metrics"]
    row: dict[str, Any] = {"model": name}
    if task.target_type is TargetType.categorical:
        row["macro_f1"] = m.get("mean_macro_f1")
        row["accuracy"] = m.get("mean_accuracy")
    elif task.target_type is TargetType.numeric:
        row["relmae"] = m.get("mean_relmae")
        row["nmae"] = m.get("mean_nmae")
    else:
        row["mean_tv"] = m.get("mean_total_variation")
    row.update(n=result["num_examples"], valid_rate=result["valid_response_rate"],
               coverage=result["coverage_rate"])
    return row


def format_table(rows: list[dict[str, Any]]) -> str:
    frame = pd.DataFrame(rows)
    return frame.to_string(index=False, float_format=lambda v: f"{v:.4f}", na_rep="—")


def metric_label(result: dict) -> str:
    """`macro_f1, higher is better`: the primary score's metric and direction, in words."""
    m = result["metrics"]
    direction = str(m.get("score_direction", "")).replace("_is_", " is ")
    return f"{str(m.get('primary_metric')).removeprefix('mean_')}, {direction}"


def run_note(header: str, rule: str, rows: list[dict[str, Any]], failure: str | None) -> str:
    """The console's result table as markdown (MLflow shows it as the run's description)."""
    frame = pd.DataFrame(rows)
    text = frame.astype(object).map(lambda v: "—" if v is None or v != v else
                                    f"{v:.4f}" if isinstance(v, float) else str(v))
    lines = [f"**{header}**", "", f"rows chosen by: {rule}", "",
             "| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(row) + " |" for row in text.itertuples(index=False)]
    if failure:
        lines += ["", f"**FAILED**: {failure}"]
    return ("\n".join(lines) + "\n")[:5000]  # within MLflow's limit on a tag's value


def selection_tags(split_rows: int, n: int, rule: str) -> dict[str, str]:
    return {"hhx.rows_evaluated": str(n), "hhx.split_rows": str(split_rows),
            "hhx.selection_rule": rule}


def logged_examples(task: TaskConfig, cfg: DictConfig, bench: BenchTask,
                    details: pd.DataFrame) -> dict[str, Any]:
    """The evaluated examples as the run's dataset input, and the per-example details as a
    table the MLflow UI previews (the parquet beside it is for programs)."""
    keys = details[["id", "time", "release_date", "split", "split_position", "reference"]].copy()
    keys["split_position"] = keys["split_position"].astype("float")
    name = f"{task.name}/{cfg.data.split}"
    preview = details.drop(columns=["predictor_details"]).copy()
    preview["split_position"] = preview["split_position"].astype("float")
    return {"dataset": (keys, name, str(Path(str(bench.root)).resolve())),
            "tables": {f"details/{task.name}.table.json": preview}}


def record_run(
    cfg: DictConfig,
    task: TaskConfig,
    bench: BenchTask,
    out: Path,
    started_at: float,
    metrics: dict[str, Any],
    failure: str | None,
    extra_tags: dict[str, str] | None = None,
    run_id: str | None = None,
    logged: dict[str, Any] | None = None,
    resolved: dict[str, Any] | None = None,
) -> str | None:
    """Write run_info.json and log the MLflow run: FINISHED, or FAILED with `failure` (tag
    hhx.failure_reason). Returns the MLflow run id. `resolved`: the config resolved already."""
    status = "FAILED" if failure else "FINISHED"
    synthetic = is_synthetic(cfg) or bench.synthetic
    model_name = model_label(cfg.model)
    tags = {
        "hhx.stage": "evaluate",
        "hhx.task": task.name,
        "hhx.model": model_name,
        "hhx.backend": enum_value(cfg.model.backend),
        "hhx.mode": enum_value(task.mode),
        "hhx.target_type": enum_value(task.target_type),
        "hhx.data_source": source_of(cfg).value,
        "hhx.synthetic": "true" if synthetic else "false",
        "hhx.split": str(cfg.data.split),
        "hhx.model_cutoff": str(cfg.model.cutoff or ""),
        "hhx.status": status.lower(),
        # Fine-tuned models: the base model and the adapter applied to it (empty for none).
        "hhx.base_model": str(cfg.model.name),
        "hhx.adapter": str(Path(cfg.model.lora_adapter).resolve()) if cfg.model.get(
            "lora_adapter") else "",
        **(extra_tags or {}),  # a sweep cell's identity (hhx/sweeps/cell.py)
    }
    if failure:
        tags["hhx.failure_reason"] = failure
    write_json_atomic(out / "run_info.json", {
        "tags": tags, "start_time": started_at, "status": status, "failure_reason": failure,
        "metrics": {k: v for k, v in metrics.items() if isinstance(v, (int, float)) or v is None}})
    resolved = resolved_config(cfg) if resolved is None else resolved
    if not (out / "config" / "resolved.yaml").exists():
        write_text_atomic(out / "config" / "resolved.yaml", config_yaml(resolved))
    return log_run(
        cfg.tracking,
        run_name=run_name(task.name, model_name, "evaluate", synthetic),
        params=flatten_config(resolved),
        tags=tags,
        metrics=metrics,
        artifact_dir=out,
        status=status,
        run_id=run_id,
        **(logged or {}),
    )


def publish_baselines(cfg: DictConfig, predictor: Any, bench: BenchTask,
                      out: Path) -> dict[str, Path]:
    """model=xgboost: the official baselines/ table of every row and its diagnostics
    (hhx/bench/baselines.py), in an hhx build's release root, or in the run directory when the
    release is a download (never written to). Off with model.xgboost.publish_baselines=false."""
    publish = getattr(predictor, "publish", None)
    settings = cfg.model.get("xgboost")
    if publish is None or bench.layout != "release" or bench.splits is None:
        return {}
    if settings is not None and not settings.get("publish_baselines", True):
        return {}
    from hhx.bench.baselines import diagnostics_root
    from hhx.config import DataSource

    if source_of(cfg) is DataSource.official:
        root, diagnostics = out, out / "baselines_output"
    else:
        root, diagnostics = bench.root, diagnostics_root(bench.root)
    files = publish(bench, root, diagnostics)
    log.info("official baselines table: %s (diagnostics in %s)", files["baselines"], diagnostics)
    return files


def run(cfg: DictConfig) -> dict[str, Any]:
    task = as_task(cfg.task)
    model_name = model_label(cfg.model)
    started = time.perf_counter()
    started_at = time.time()
    # An unreachable API host stops the run here, in seconds; a sweep checks it after its
    # resume lookup (a finished cell, or a dry run, needs no endpoint).
    checked = not sweep_cell.in_sweep()
    if checked:
        preflight(cfg)
    bench: BenchTask = load_bench(cfg, task)
    examples = bench.eval_examples(str(cfg.data.split), cfg.data.max_examples)
    if examples.empty:
        from hhx.errors import DataError

        raise DataError(f"task {task.name}: split {cfg.data.split} has no rows in {bench.root}")
    gold = examples[RECORD_KEYS].to_dict("records")
    split_rows, rule = selection_rule(bench, str(cfg.data.split), cfg.data.max_examples)
    log.info("evaluating %d of %d rows of %s: %s", len(examples), split_rows, cfg.data.split, rule)

    # --- sweeps (hhx/sweeps/cell.py): identity tags; in a sweep, skip a cell MLflow already
    # holds as FINISHED, or only estimate it (sweep.dry_run)
    resolved = resolved_config(cfg)  # once: the cell's identity, resolved.yaml, MLflow params
    cell = sweep_cell.prepare(cfg, task, model_name, bench, examples, resolved)
    if cell.outcome is not None:
        resume_gc()
        return cell.outcome
    if not checked:
        preflight(cfg)

    synthetic = is_synthetic(cfg) or bench.synthetic
    picked = selection_tags(split_rows, len(examples), rule)
    run_id = begin_run(cfg.tracking, run_name=run_name(task.name, model_name, "evaluate", synthetic),
                       tags={"hhx.stage": "evaluate", "hhx.task": task.name,
                             "hhx.model": model_name, "hhx.status": "running", **picked,
                             **cell.tags})  # a sweep job's tag: its failure is logged once
    resume_gc()  # start-up is over: the predictor's work runs with the collector on
    try:
        return _evaluate(cfg, task, model_name, bench, examples, gold, cell, started, started_at,
                         run_id, picked, split_rows, rule, resolved)
    except BaseException as exc:
        reason = str(exc) or type(exc).__name__
        try:
            fail_run(cfg.tracking, run_id, reason)  # a no-op when the run was already ended
        except Exception as log_exc:  # e.g. a full disk: the stop message matters more
            log.warning("could not mark MLflow run %s failed: %s", run_id, log_exc)
        raise


def _evaluate(cfg: DictConfig, task: TaskConfig, model_name: str, bench: BenchTask,
              examples: pd.DataFrame, gold: list[dict], cell: Any, started: float,
              started_at: float, run_id: str | None, picked: dict[str, str], split_rows: int,
              rule: str, resolved: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    predictor = None
    try:
        predictor = make_predictor(cfg)
        predictor.fit(bench)
        fit_s = time.perf_counter() - t0
        rows = predictor.predict(bench, examples)
        predict_s = time.perf_counter() - t0 - fit_s
    except KeyboardInterrupt:  # outside the request engine, which raises Interrupted itself
        raise Interrupted(
            f"interrupted during task {task.name} before its answers were scored; answers "
            "already received are cached: run the same command again to resume"
        ) from None
    except PredictorError as exc:
        # The run stopped (a refused key, an endpoint that never answers, a full disk...): it is
        # recorded FAILED with the reason, so the attempt is on file and never ranked.
        if not isinstance(exc, Interrupted):
            metrics = predictor.run_metrics() if predictor is not None else {}
            try:
                record_run(cfg, task, bench, run_dir(), started_at, metrics, str(exc),
                           {**cell.tags, **picked}, run_id=run_id, resolved=resolved)
            except Exception as log_exc:  # e.g. the same full disk: the stop message matters more
                log.warning("could not record the failed run: %s", log_exc)
        raise
    finally:
        close = getattr(predictor, "close", None)  # LLM backends hold a cache and an engine
        if close is not None:
            close()
    # An item the predictor could not answer (all requests failed, budget exhausted) is left out,
    # so the scorer counts it as missing_prediction; its reason stays in the details.
    official = [r.official() for r in rows if r.prediction is not None]
    result = score(task, cfg, gold, official)

    out = run_dir()
    details = details_frame(task, examples, result, rows)
    files = {
        "predictions": write_jsonl_atomic(out / "predictions" / f"{task.name}.jsonl", official),
        "details": write_parquet_atomic(out / "details" / f"{task.name}.parquet", details),
        "result": write_result(out / "result" / f"{task.name}.json", result),
        "config": write_text_atomic(out / "config" / "resolved.yaml", config_yaml(resolved)),
    }
    predictor.save(out / "model")
    files.update(publish_baselines(cfg, predictor, bench, out))

    table = [summary_row(model_name, task, result)]
    metrics = metric_items(result)
    backend = enum_value(cfg.model.backend)
    if cfg.compare_no_change and backend != "no_change":
        naive = [{"id": g["id"], "time": g["time"], "prediction": json.loads(g["naive_baseline"])}
                 for g in gold]
        naive_result = score(task, cfg, gold, naive)
        table.append(summary_row("no_change", task, naive_result))
        metrics.update(metric_items(naive_result, prefix="no_change."))
    metrics.update(predictor.run_metrics())
    metrics.update(fit_seconds=fit_s, predict_seconds=predict_s,
                   wall_time_s=time.perf_counter() - started, split_rows=split_rows,
                   evaluated_share=len(examples) / split_rows if split_rows else None)

    min_coverage = float(getattr(cfg, "min_coverage", 0.0) or 0.0)
    failure = coverage_failure(result, metrics, min_coverage)
    if failure and failure_causes(metrics):
        failure += f" (failed requests: {failure_causes(metrics)})"
    synthetic = is_synthetic(cfg) or bench.synthetic
    label = "SYNTHETIC demo data" if synthetic else f"{source_of(cfg).value} data"
    header = (f"{task.name} · {cfg.data.split} · {len(examples)} of {split_rows} rows evaluated "
              f"· {label}")
    shown = {"hhx.metric": metric_label(result),
             # the run's description in the MLflow UI: what the console shows
             "mlflow.note.content": run_note(header, rule, table, failure)}
    run_id = record_run(cfg, task, bench, out, started_at, metrics, failure,
                        {**cell.tags, **picked, **shown}, run_id=run_id,
                        logged=logged_examples(task, cfg, bench, details), resolved=resolved)
    sweep_cell.finish(cell, task, run_id, metrics)  # the sweep summary's record

    print(f"\n{header}\nrows chosen by: {rule}")
    print(format_table(table))
    if run_id:
        from hhx.tracking.store import prepare_store
        from hhx.tracking.ui import browse_hint

        uri = str(cfg.tracking.uri)
        experiment_id = prepare_store(uri, str(cfg.tracking.experiment))
        print(f"MLflow run {run_id} in experiment '{cfg.tracking.experiment}' ({uri}); browse: "
              f"{browse_hint(uri, experiment_id, run_id)}")
    print(f"run directory: {out}")
    if failure:
        raise RunFailed(
            f"task {task.name}, model {model_name}: {failure}; the run is logged FAILED"
            + (f" (MLflow run {run_id})" if run_id else "")
            + " and left out of leaderboards; fix the cause and rerun the same command (answers "
            "already received are cached), or lower min_coverage"
        )
    return {"primary_score": result["metrics"].get("primary_score"), "run_id": run_id,
            "result": result, "files": {k: str(v) for k, v in files.items()}}
