"""`stage=evaluate`: one task x one model — predict, score with the official scorer, track.

Writes to the run directory (and logs to MLflow): `predictions/<task>.jsonl` (official format),
`details/<task>.parquet` (one row per example), `result/<task>.json` (the scorer's result),
`config/resolved.yaml`, the fitted model under `model/`, and `run_info.json` (tags, metrics,
status).

A run that answers fewer than `min_coverage` of its examples (or, for K > 1, of its draws) is
still written and logged, but as FAILED with its reason (tag `hhx.failure_reason`), and the stage
exits non-zero (`RunFailed`); the leaderboard never ranks it. Ctrl-C stops with `Interrupted`:
what is cached, and that the same command resumes.

It reads top to bottom: the `EvalRun` read once from the config, then load -> predict -> score ->
record -> report, each step a module of hhx/stages/evaluation/.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from hhx.errors import HhxError
from hhx.predictors.base import preflight
from hhx.scoring.metric_names import headline
from hhx.stages.evaluation.load import Selection, load
from hhx.stages.evaluation.plan import EvalRun, eval_run
from hhx.stages.evaluation.predict import predict
from hhx.stages.evaluation.record import (
    STAGE,
    evaluated_name,
    logged_examples,
    publish_baselines,
    record_run,
    write_outputs,
)
from hhx.stages.evaluation.report import header, print_result, shown_tags, summary_rows
from hhx.stages.evaluation.scoring import run_failure, run_metrics, score_run
from hhx.startup import resume_gc
from hhx.sweeps import cell as sweep_cell
from hhx.tasks.own import origin_tags
from hhx.tracking.mlflow_run import begin_run, fail_run, resolved_config

log = logging.getLogger(__name__)

# The collector stays paused (hhx/startup.py) until the MLflow run is open: MLflow's imports are
# most of start-up.
RESUMES_GC = True


class RunFailed(HhxError):
    """The run was written and logged FAILED (coverage below min_coverage)."""


def run_dir() -> Path:
    try:
        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:  # called outside a Hydra app (tests calling run() directly)
        return Path("outputs") / time.strftime("%Y-%m-%d/%H-%M-%S")


def run(cfg: DictConfig) -> dict[str, Any]:
    plan = eval_run(cfg)
    started, started_at = time.perf_counter(), time.time()
    # An unreachable API host stops the run here, in seconds; a sweep checks it after its
    # resume lookup (a finished cell, or a dry run, needs no endpoint).
    checked = not sweep_cell.in_sweep()
    if checked:
        preflight(cfg)
    selection = load(plan)
    log.info("evaluating %d of %d rows of %s: %s", len(selection.examples),
             selection.split_rows, plan.split, selection.rule)

    # --- sweeps (hhx/sweeps/cell.py): identity tags; in a sweep, skip a cell MLflow already
    # holds as FINISHED, or only estimate it (sweep.dry_run)
    resolved = resolved_config(cfg)  # once: the cell's identity, resolved.yaml, MLflow params
    cell = sweep_cell.prepare(cfg, plan.task, plan.model_name, selection.bench,
                              selection.examples, resolved)
    if cell.outcome is not None:
        resume_gc()
        return cell.outcome
    if not checked:
        preflight(cfg)

    run_id = begin_run(plan.tracking, run_name=evaluated_name(plan, selection.bench),
                       tags={"hhx.stage": STAGE, "hhx.task": plan.task.name,
                             "hhx.model": plan.model_name, "hhx.status": "running",
                             **origin_tags(plan.task.name), **plan.prompt.tags(),
                             **selection.tags,
                             **cell.tags})  # a sweep job's tag: its failure is logged once
    resume_gc()  # start-up is over: the predictor's work runs with the collector on
    try:
        return _evaluate(plan, selection, cell, resolved, run_id, started, started_at)
    except BaseException as exc:
        reason = str(exc) or type(exc).__name__
        try:
            fail_run(plan.tracking, run_id, reason)  # a no-op when the run was already ended
        except Exception as log_exc:  # e.g. a full disk: the stop message matters more
            log.warning("could not mark MLflow run %s failed: %s", run_id, log_exc)
        raise


def _evaluate(plan: EvalRun, selection: Selection, cell: sweep_cell.Cell,
              resolved: dict[str, Any], run_id: str | None, started: float,
              started_at: float) -> dict[str, Any]:
    bench, context = selection.bench, {**cell.tags, **selection.tags}

    def record_stop(reason: str, metrics: dict[str, Any]) -> None:
        # The predictor stopped: recorded FAILED with the reason, so the attempt is on file
        # and never ranked.
        try:
            record_run(plan, bench, run_dir(), started_at, metrics, reason, context, run_id,
                       resolved)
        except Exception as log_exc:  # e.g. the same full disk: the stop message matters more
            log.warning("could not record the failed run: %s", log_exc)

    predicted = predict(plan, bench, selection.examples, record_stop)
    scored = score_run(plan, selection, predicted.rows)

    out = run_dir()
    files = write_outputs(out, plan, scored, resolved)
    predicted.predictor.save(out / "model")
    files.update(publish_baselines(plan, predicted.predictor, bench, out))

    metrics = run_metrics(scored, predicted, selection, started)
    failure = run_failure(scored.result, metrics, plan.min_coverage)
    title, table = header(plan, selection), summary_rows(plan, scored)
    shown = shown_tags(scored.result, title, selection.rule, table, failure)
    run_id = record_run(plan, bench, out, started_at, metrics, failure, {**context, **shown},
                        run_id, resolved, logged=logged_examples(plan, bench, scored.details))
    sweep_cell.finish(cell, plan.task, run_id, metrics)  # the sweep summary's record

    print_result(title, selection.rule, table, plan.tracking, run_id, out,
                 explained=headline(scored.result))
    if failure:
        raise RunFailed(
            f"task {plan.task.name}, model {plan.model_name}: {failure}; the run is logged FAILED"
            + (f" (MLflow run {run_id})" if run_id else "")
            + " and left out of leaderboards; fix the cause and rerun the same command (answers "
            "already received are cached), or lower min_coverage"
        )
    return {"primary_score": scored.result["metrics"].get("primary_score"), "run_id": run_id,
            "result": scored.result, "files": {k: str(v) for k, v in files.items()}}
