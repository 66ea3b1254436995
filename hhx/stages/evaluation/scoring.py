"""Score: the official scorer on the answers (and on the no-change baseline), the per-example
details frame, the metrics MLflow logs, and whether the run counts (coverage)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.predictors.protocol import PredictionRow
from hhx.scoring import error_code, score_task
from hhx.stages.evaluation.load import Selection
from hhx.stages.evaluation.plan import EvalRun, ScoreOptions
from hhx.stages.evaluation.predict import Predicted
from hhx.tasks.registry import answer_names
from hhx.textsafe import encodable_tree
from hhx.tracking.mlflow_run import directed_name

NO_CHANGE = "no_change"


@dataclass(frozen=True, eq=False)
class Scored:
    official: list[dict]  # the answered rows in the official predictions format
    result: dict  # the scorer's result
    details: pd.DataFrame  # one row per example
    naive: dict | None  # the no-change baseline's result (compare_no_change), else None


def score(task: TaskConfig, options: ScoreOptions, gold: list[dict], preds: list[dict]) -> dict:
    return score_task(
        task,
        gold,
        preds,
        prediction_field=options.prediction_field,
        repair_number_formatting=options.repair_number_formatting,
        repair_distribution_nesting=options.repair_distribution_nesting,
        include_details=True,
    )


def score_run(run: EvalRun, selection: Selection, rows: list[PredictionRow]) -> Scored:
    """The answers scored, and the no-change baseline beside them unless the model is it."""
    # An item the predictor could not answer (all requests failed, budget exhausted) is left out,
    # so the scorer counts it as missing_prediction; its reason stays in the details.
    official = [r.official() for r in rows if r.prediction is not None]
    gold = selection.gold
    result = score(run.task, run.scoring, gold, official)
    details = details_frame(run.task, selection.examples, result, rows)
    naive = None
    if run.compare_no_change and run.backend != NO_CHANGE:
        answers = [{"id": g["id"], "time": g["time"], "prediction": json.loads(g["naive_baseline"])}
                   for g in gold]
        naive = score(run.task, run.scoring, gold, answers)
    return Scored(official, result, details, naive)


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


def run_metrics(scored: Scored, predicted: Predicted, selection: Selection,
                started: float) -> dict[str, Any]:
    """Every metric of the run: the scores (and the no-change baseline's, prefixed), the
    predictor's own, timings and how much of the split was evaluated."""
    metrics = metric_items(scored.result)
    if scored.naive is not None:
        metrics.update(metric_items(scored.naive, prefix=f"{NO_CHANGE}."))
    metrics.update(predicted.predictor.run_metrics())
    split_rows = selection.split_rows
    metrics.update(fit_seconds=predicted.fit_s, predict_seconds=predicted.predict_s,
                   wall_time_s=time.perf_counter() - started, split_rows=split_rows,
                   evaluated_share=len(selection.examples) / split_rows if split_rows else None)
    return metrics


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


def run_failure(result: dict, metrics: dict[str, Any], min_coverage: float) -> str | None:
    """`coverage_failure`, with the failed requests' causes when there were any."""
    failure = coverage_failure(result, metrics, min_coverage)
    if failure and failure_causes(metrics):
        failure += f" (failed requests: {failure_causes(metrics)})"
    return failure
