"""The fine-tuning run in MLflow, live: created RUNNING when training starts (hhx.tracking's
`begin_run`, in `tracking.experiment`, with the experiment kind MLflow 3 reads), the loss curve
logged step by step as the trainer reports it, ended FINISHED with the final metrics, the adapter
and the loss curve, or FAILED with the reason (`fail_run`: tags hhx.status, hhx.failure_reason).
A Ctrl-C ends it KILLED with a reason that says how to resume; a run killed outright is ended
KILLED by the next hhx run of this machine that opens the experiment (hhx.tracking.orphans). A
resumed run (same output_dir) re-opens the same MLflow run (RUNNING
again), so its curve continues where the killed one stopped and its duration spans both.
Config flattening and secret redaction are hhx.tracking.mlflow_run's and hhx.secrets'.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hhx.io import write_json_atomic
from hhx.secrets import scrub
from hhx.tracking.mlflow_run import begin_run, ensure_experiment, fail_run, finite_metrics
from hhx.tracking.orphans import process_tags

RUN_FILE = "mlflow_run.json"


class SftTracker:
    """One MLflow run per output_dir, begun before training and ended after; a no-op when
    tracking is off."""

    def __init__(self, tracking: Any, output_dir: Path) -> None:
        self.enabled = bool(tracking.enabled)
        self.tracking = tracking
        self.output_dir = output_dir
        self.run_id: str | None = None
        self._client: Any = None

    def _previous(self) -> str | None:
        """The run this output_dir logged to before, when the store still holds it."""
        path = self.output_dir / RUN_FILE
        if not path.is_file():
            return None
        previous = json.loads(path.read_text()).get("run_id")
        if not previous:
            return None
        try:
            run = self._client.get_run(previous)
        except Exception:  # deleted, or another store: start a fresh run
            return None
        return previous if run.info.lifecycle_stage == "active" else None

    def start(self, run_name: str, params: dict[str, str], tags: dict[str, str]) -> None:
        if not self.enabled:
            return
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        uri = str(self.tracking.uri)
        ensure_experiment(uri, str(self.tracking.experiment))
        self._client = MlflowClient(tracking_uri=uri)
        live = {**tags, "hhx.status": "running"}
        previous = self._previous()
        if previous:
            self.run_id = previous
            self._client.update_run(previous, status="RUNNING")
            # this process runs it now: its tags, or the next hhx start would end it KILLED again
            for key, value in {**live, **process_tags()}.items():
                self._client.set_tag(previous, key, scrub(str(value)))
            if "hhx.failure_reason" in self._client.get_run(previous).data.tags:
                self._client.delete_tag(previous, "hhx.failure_reason")
        else:
            self.run_id = begin_run(self.tracking, run_name=run_name, tags=live)
            # params are write-once; the client splits a batch into MLflow's per-request limits
            self._client.log_batch(self.run_id, params=[Param(k, v) for k, v in params.items()])
        self.output_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.output_dir / RUN_FILE,
                          {"run_id": self.run_id, "tracking_uri": uri})

    def _log_metrics(self, values: dict[str, Any], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self._client.log_batch(self.run_id, metrics=[
            Metric(k, v, now, step) for k, v in finite_metrics(values).items()])

    def step_logger(self) -> Callable[[dict[str, Any], int], None] | None:
        """Logs what the trainer reports at a step (loss, learning rate ...) as `train/<name>`
        at that step, while training runs."""
        if not self.enabled:
            return None

        def log(values: dict[str, Any], step: int) -> None:
            self._log_metrics({f"train/{k}": v for k, v in values.items()}, step)

        return log

    def finish(self, metrics: dict[str, Any], artifacts: list[Path]) -> None:
        """Final metrics and artifacts, then FINISHED (FAILED with the reason if logging fails)."""
        if not self.enabled or self.run_id is None:
            return
        try:
            self._log_metrics(metrics, 0)
            if self.tracking.log_artifacts:
                for path in artifacts:
                    if path.is_dir():
                        self._client.log_artifacts(self.run_id, str(path), artifact_path=path.name)
                    elif path.is_file():
                        self._client.log_artifact(self.run_id, str(path))
        except BaseException as exc:
            self.fail(exc)
            raise
        self._client.set_tag(self.run_id, "hhx.status", "finished")
        self._client.set_terminated(self.run_id, status="FINISHED")

    def fail(self, exc: BaseException) -> None:
        """End the run FAILED with the reason; KILLED (resumable) for a Ctrl-C."""
        if not self.enabled or self.run_id is None:
            return
        if isinstance(exc, KeyboardInterrupt):
            if self._client.get_run(self.run_id).info.status == "RUNNING":
                self._client.set_tag(self.run_id, "hhx.status", "killed")
                self._client.set_tag(self.run_id, "hhx.failure_reason",
                                     "interrupted (Ctrl-C); start it again with the same "
                                     "settings to resume from its last checkpoint")
                self._client.set_terminated(self.run_id, status="KILLED")
            return
        fail_run(self.tracking, self.run_id, str(exc) or type(exc).__name__)
