"""A sweep cell that failed is on file in MLflow: a FAILED evaluate run with its reason.

The evaluate stage logs its own FAILED runs when the predictor stops or coverage is too low; a
cell can also fail before that (missing data, a bad setting, a bug) and would then leave nothing
in MLflow. Every run of a sweep cell carries the tag `hhx.sweep_job` (`<sweep id>/<job number>`,
hhx/sweeps/cell.py), so after a failure this module looks the job up and logs a FAILED run only
when the stage logged none: one run per failed cell, never two.

The run holds the resolved config as params (when it resolves), the cell's tags, the reason as
the tag `hhx.failure_reason` and as the run's description, and the job's real start and end
times. The leaderboard lists FAILED runs as left out and never ranks them; resume never skips
them (it looks for FINISHED runs only).
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from omegaconf import DictConfig

from hhx.bounds import enum_text
from hhx.errors import HhxError
from hhx.secrets import scrub
from hhx.tasks.own import origin_tags

log = logging.getLogger(__name__)

SWEEP_JOB_TAG = "hhx.sweep_job"
MAX_TAG_CHARS = 5000  # MLflow's tag values are capped (8,000 on SQL stores)



def logged_runs(uri: str, experiment: str, job_tag: str) -> list[str]:
    """Run ids in `experiment` carrying `hhx.sweep_job = job_tag` (any status)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    runs = client.search_runs([exp.experiment_id],
                              filter_string=f"tags.`{SWEEP_JOB_TAG}` = '{job_tag}'")
    return [r.info.run_id for r in runs]


def failure_tags(cfg: DictConfig, record: dict[str, Any], reason: str) -> dict[str, str]:
    """The tags the leaderboard and the MLflow UI read, as far as the config gives them."""
    tags = {"hhx.stage": str(record.get("stage") or "evaluate"),
            "hhx.task": str(record.get("task") or "?"),
            "hhx.model": str(record.get("model") or "?"),
            "hhx.status": "failed",
            "hhx.failure_reason": scrub(reason)[:MAX_TAG_CHARS],
            "mlflow.note.content": scrub(reason)[:MAX_TAG_CHARS]}
    for tag, read in (("hhx.backend", lambda: enum_text(cfg.model.backend)),
                      ("hhx.split", lambda: str(cfg.data.split)),
                      ("hhx.synthetic", lambda: str(enum_text(cfg.data.source) == "demo").lower())):
        try:
            tags[tag] = read()
        except Exception:  # a config that does not resolve is often why the cell failed
            continue
    with contextlib.suppress(HhxError):  # a bad task folder may be why the cell failed
        tags.update(origin_tags(tags["hhx.task"]))  # an own task's mark (official: none)
    if record.get("sweep_id") is not None:
        tags["hhx.sweep_id"] = str(record["sweep_id"])
        tags[SWEEP_JOB_TAG] = f"{record['sweep_id']}/{record.get('job')}"
    return tags


def log_failed_cell(cfg: DictConfig, record: dict[str, Any], reason: str) -> str | None:
    """Log the failed cell as a FAILED run unless its job logged one; returns the run id (the
    existing one, or the new one; None with tracking off). Never raises: the sweep goes on."""
    tracking = cfg.get("tracking")
    if tracking is None or not tracking.enabled:
        return None
    try:
        from mlflow.entities import Param, RunTag
        from mlflow.tracking import MlflowClient

        from hhx.tracking.mlflow_run import flatten_config
        from hhx.tracking.store import prepare_store

        uri, experiment = str(tracking.uri), str(tracking.experiment)
        tags = failure_tags(cfg, record, reason)
        job_tag = tags.get(SWEEP_JOB_TAG)
        if job_tag:
            found = logged_runs(uri, experiment, job_tag)
            if found:
                return found[0]  # the stage logged the failure itself
        try:
            params = flatten_config(cfg)
        except Exception:  # an interpolation that fails is a reason, not a second failure
            params = {}
        experiment_id = prepare_store(uri, experiment)
        client = MlflowClient(tracking_uri=uri)
        started = float(record.get("started_at") or time.time())
        name = f"{tags['hhx.task']}/{tags['hhx.model']} [failed]"
        run = client.create_run(experiment_id, start_time=int(started * 1000), run_name=name)
        run_id = run.info.run_id
        items = list(params.items())
        for start in range(0, len(items), 100):  # MLflow takes at most 100 params a batch
            client.log_batch(run_id, params=[Param(k, v) for k, v in items[start:start + 100]])
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
        client.set_terminated(run_id, "FAILED", end_time=int(time.time() * 1000))
        return run_id
    except Exception as exc:  # the summary still records the failure
        log.warning("could not log the failed cell to MLflow: %s", exc)
        return None
