"""Where hhx's runs are in the MLflow UI, and the runs table an experiment opens with.

Facts (MLflow 3.17's UI, read from its bundled JavaScript and checked in headless Chromium):
- The UI opens every experiment on its GenAI overview page unless the address says
  `workflowType=machine_learning` (or the browser remembers its "GenAI / Model training" switch,
  default GenAI); the experiment's `mlflow.experimentKind` tag is read only where that switch is
  turned off, which the released UI does not do.
- The runs table shows Source, Models and Dataset and hides every metric, param and tag column,
  unless the address names a *shared view*: `#/experiments/<id>/runs?viewStateShareKey=<key>`
  loads the experiment tag `mlflow.sharedViewState.<key>` (plain JSON is accepted) with the
  table's search state (`searchFilter`, `orderByKey`, ...) and its UI state (`selectedColumns`,
  keys written ``metrics.`name` `` / ``tags.`name` ``). The bare experiment address redirects to
  the runs tab and drops the key, so the address names the runs tab itself.

So hhx stores one such view, `hhx`, on the evaluate experiment (evaluate runs only; task, model,
metric and direction, the primary score beside no-change's, n, valid and coverage rates) and the
addresses it prints (console, leaderboard report) name it and the workflow type.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

MLFLOW_UI_DEFAULT = "http://127.0.0.1:5000"  # where `mlflow ui` serves a local store
WORKFLOW = "workflowType=machine_learning"
VIEW_KEY = "hhx"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"

# The evaluate runs table: what an economist compares first, in this order (the UI would group
# metrics before tags). Every name is one an evaluate run logs (tests/test_app.py checks them
# against a real run and renders the view in Chromium).
VIEW_COLUMNS = (("tags", "hhx.task"), ("tags", "hhx.model"), ("tags", "hhx.metric"),
                ("metrics", "primary_score"), ("metrics", "no_change.primary_score"),
                ("metrics", "num_examples"), ("metrics", "valid_response_rate"),
                ("metrics", "coverage_rate"), ("tags", "hhx.split"), ("tags", "hhx.synthetic"),
                ("attributes", "Duration"))


def runs_view() -> dict[str, Any]:
    """The shared view's state as the UI reads it."""
    columns = [f"{kind}.`{name}`" for kind, name in VIEW_COLUMNS]
    return {
        "searchFilter": "tags.`hhx.stage` = 'evaluate'",  # newest first, the table's default
        "selectedColumns": columns,
        "columnOrder": columns,
    }


def ensure_runs_view(client: Any, experiment_id: str, tags: dict[str, str]) -> None:
    """Store (or bring up to date) the `hhx` view on the evaluate experiment."""
    value = json.dumps(runs_view(), sort_keys=True)
    if tags.get(VIEW_TAG) != value:
        client.set_experiment_tag(experiment_id, VIEW_TAG, value)


def ui_base(tracking_uri: str) -> str:
    """The UI's address: the tracking server itself, or `mlflow ui` for a local store."""
    http = tracking_uri.startswith(("http://", "https://"))
    return (tracking_uri if http else MLFLOW_UI_DEFAULT).rstrip("/")


def run_url(tracking_uri: str, experiment_id: str, run_id: str) -> str:
    """The run's page in the MLflow UI."""
    return f"{ui_base(tracking_uri)}/#/experiments/{experiment_id}/runs/{run_id}?{WORKFLOW}"


def experiment_url(tracking_uri: str, experiment_id: str) -> str:
    """The experiment's runs table with hhx's view."""
    return (f"{ui_base(tracking_uri)}/#/experiments/{experiment_id}/runs"
            f"?viewStateShareKey={VIEW_KEY}&{WORKFLOW}")


def browse_hint(tracking_uri: str, experiment_id: str, run_id: str) -> str:
    """What to start (a local store) and open to see a run."""
    pages = (f"open {run_url(tracking_uri, experiment_id, run_id)} (all runs: "
             f"{experiment_url(tracking_uri, experiment_id)})")
    if tracking_uri.startswith(("http://", "https://")):
        return pages
    # runnable as printed: the mlflow of this interpreter's venv (not on PATH unless the venv is
    # active), serving on the host and port the printed addresses use
    host_port = urlsplit(MLFLOW_UI_DEFAULT)
    return (f"LITELLM_LOCAL_MODEL_COST_MAP=True {mlflow_command()} ui --backend-store-uri "
            f"{tracking_uri} --host {host_port.hostname} --port {host_port.port} --workers 1, "
            f"then {pages}")


def mlflow_command() -> str:
    """`mlflow` beside this Python (the venv's), else the bare name (found on PATH)."""
    beside = Path(sys.executable).with_name("mlflow")
    return str(beside) if beside.is_file() else "mlflow"
