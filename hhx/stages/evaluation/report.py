"""Report: the run's result as the console shows it and as its markdown note in MLflow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from hhx.config import TargetType, TaskConfig, TrackingConfig
from hhx.predictors.llm.prompt_variants import NOT_OFFICIAL
from hhx.stages.evaluation.load import Selection
from hhx.stages.evaluation.plan import EvalRun
from hhx.stages.evaluation.scoring import NO_CHANGE, Scored
from hhx.tasks.own import own_label


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


def summary_rows(run: EvalRun, scored: Scored) -> list[dict[str, Any]]:
    """The model's row, and the no-change baseline's when it was scored beside it."""
    rows = [summary_row(run.model_name, run.task, scored.result)]
    if scored.naive is not None:
        rows.append(summary_row(NO_CHANGE, run.task, scored.naive))
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    frame = pd.DataFrame(rows)
    return frame.to_string(index=False, float_format=lambda v: f"{v:.4f}", na_rep="—")


def metric_label(result: dict) -> str:
    """`macro_f1, higher is better`: the primary score's metric and direction, in words."""
    m = result["metrics"]
    direction = str(m.get("score_direction", "")).replace("_is_", " is ")
    return f"{str(m.get('primary_metric')).removeprefix('mean_')}, {direction}"


def header(run: EvalRun, selection: Selection) -> str:
    """`<task> · <split> · 4 of 349 rows evaluated · SYNTHETIC demo data`, then for a task of
    one's own ` · own task, not official (<its folder>)` and for a prompt variant `· prompt
    variant, not official (few_shot k=3)`."""
    synthetic = run.demo_data or selection.bench.synthetic
    label = "SYNTHETIC demo data" if synthetic else f"{run.source.value} data"
    variant = "" if run.prompt.official else f" · {NOT_OFFICIAL} ({run.prompt.label()})"
    return (f"{run.task.name} · {run.split} · {len(selection.examples)} of {selection.split_rows} "
            f"rows evaluated · {label}{own_label(run.task.name)}{variant}")


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


def shown_tags(result: dict, header: str, rule: str, rows: list[dict[str, Any]],
               failure: str | None) -> dict[str, str]:
    """The metric in words, and the run's description in the MLflow UI: what the console shows."""
    return {"hhx.metric": metric_label(result),
            "mlflow.note.content": run_note(header, rule, rows, failure)}


def print_result(header: str, rule: str, rows: list[dict[str, Any]], tracking: TrackingConfig,
                 run_id: str | None, out: Path, explained: str | None = None) -> None:
    """The result table and what its numbers mean (`explained`: the official metric, its
    direction and definition, how many rows were scored and why the others were not), where the
    MLflow run is and how to browse it, and the run directory."""
    print(f"\n{header}\nrows chosen by: {rule}")
    print(format_table(rows))
    if explained:
        print(explained)
    if run_id:
        from hhx.tracking.store import prepare_store
        from hhx.tracking.ui import browse_hint

        uri = str(tracking.uri)
        experiment_id = prepare_store(uri, str(tracking.experiment))
        print(f"MLflow run {run_id} in experiment '{tracking.experiment}' ({uri}); browse: "
              f"{browse_hint(uri, experiment_id, run_id)}")
    print(f"run directory: {out}")
