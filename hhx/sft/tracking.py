"""The fine-tuning run in MLflow: settings as params, the loss curve as stepped metrics, the
adapter and loss curve as artifacts. A resumed run (same output_dir) re-opens the same MLflow
run, so its curve continues where the killed one stopped. Config flattening and secret
redaction are hhx.tracking.mlflow_run's and hhx.secrets'.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hhx.io import write_json_atomic
from hhx.secrets import scrub
from hhx.tracking.mlflow_run import finite_metrics

RUN_FILE = "mlflow_run.json"


class SftTracker:
    """Opens (or re-opens) one MLflow run for an output_dir; a no-op when tracking is off."""

    def __init__(self, tracking: Any, output_dir: Path) -> None:
        self.enabled = bool(tracking.enabled)
        self.tracking = tracking
        self.output_dir = output_dir
        self.run_id: str | None = None
        self._mlflow: Any = None

    def start(self, run_name: str, params: dict[str, str], tags: dict[str, str]) -> None:
        if not self.enabled:
            return
        import mlflow

        self._mlflow = mlflow
        mlflow.set_tracking_uri(str(self.tracking.uri))
        mlflow.set_experiment(str(self.tracking.experiment))
        path = self.output_dir / RUN_FILE
        previous = json.loads(path.read_text()).get("run_id") if path.is_file() else None
        run = None
        if previous:
            try:
                run = mlflow.start_run(run_id=previous)
            except Exception:  # deleted or another store: start a fresh run
                run = None
        resumed = run is not None
        if run is None:
            run = mlflow.start_run(run_name=run_name)
        self.run_id = run.info.run_id
        write_json_atomic(path, {"run_id": self.run_id, "tracking_uri": str(self.tracking.uri)})
        if not resumed:  # params are write-once in MLflow
            mlflow.log_params(params)
        mlflow.set_tags({k: scrub(str(v)) for k, v in tags.items()})

    def step_logger(self) -> Callable[[dict[str, Any], int], None] | None:
        if not self.enabled:
            return None

        def log(values: dict[str, Any], step: int) -> None:
            self._mlflow.log_metrics(finite_metrics({f"train/{k}": v for k, v in values.items()}),
                                     step=step)

        return log

    def finish(self, metrics: dict[str, Any], artifacts: list[Path], status: str = "FINISHED"
               ) -> None:
        if not self.enabled or self._mlflow is None:
            return
        mlflow = self._mlflow
        mlflow.log_metrics(finite_metrics(metrics))
        if self.tracking.log_artifacts:
            for path in artifacts:
                if path.is_dir():
                    mlflow.log_artifacts(str(path), artifact_path=path.name)
                elif path.is_file():
                    mlflow.log_artifact(str(path))
        mlflow.end_run(status=status)

    def fail(self) -> None:
        if self.enabled and self._mlflow is not None and self._mlflow.active_run():
            self._mlflow.end_run(status="KILLED")
