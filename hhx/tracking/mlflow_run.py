"""Log one hhx run to MLflow: flattened config as params, tags, metrics, and a folder of artifacts.

Secrets never reach the store: config keys with a secret name (`hhx.secrets.is_secret_name`:
`api_key`, `access_token`, ..., but not `max_tokens` or `api_key_env`) are dropped, and secret
values (secret-named environment variables, the variable `model.api_key_env` names, key-shaped
text) are redacted before a value is cut to MLflow's length limit. A run is logged FINISHED, or
FAILED with its reason (tag `hhx.failure_reason`).

A run is created RUNNING when its work starts (`begin_run`) and ended by `log_run(run_id=...)`,
so MLflow shows real durations; `fail_run` ends it FAILED with the reason when the work raised.
Experiments carry `mlflow.experimentKind=custom_model_development` (MLflow 3's kind for classical
ML; 3.17's UI goes by the address instead, see hhx.tracking.ui, whose runs view the evaluate
experiment stores). Build, leaderboard and sweep-summary runs go to experiments of their own
(`<experiment>-builds`, `-leaderboard`, `-sweeps`); evaluate runs stay in `experiment`.
Every run names its process (hhx.tracking.orphans); opening the experiment ends KILLED the runs
whose process died without ending them. Evaluated examples are logged as a dataset input and
tables (stored as `log_table` stores them) the UI previews. Logging goes through `MlflowClient` (one batch), never the fluent API.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from hhx.config import TrackingConfig, without_official_prompt
from hhx.secrets import is_secret_name, scrub, scrubber
from hhx.tracking.store import EXPERIMENT_KIND, EXPERIMENT_KIND_TAG, prepare_store

MAX_PARAM_CHARS = 6000  # MLflow's limit on a param value
DIRECTION_SUFFIX = {"higher_is_better": "higher_better", "lower_is_better": "lower_better"}


def experiment_for(tracking: TrackingConfig, stage: str) -> str:
    """Evaluate runs in `tracking.experiment`; build, leaderboard and sweep runs beside it, apart."""
    base = str(tracking.experiment)
    return {"build": f"{base}-builds", "leaderboard": f"{base}-leaderboard",
            "sweep": f"{base}-sweeps"}.get(stage, base)


def directed_name(metric: str, direction: str) -> str:
    """`mean_macro_f1`, `higher_is_better` -> `macro_f1__higher_better` (a metric column that says
    which way is better)."""
    short = metric.removeprefix("mean_")
    return f"{short}__{DIRECTION_SUFFIX.get(direction, direction)}"


def ensure_experiment(uri: str, experiment: str, *, runs_view: bool = False) -> str:
    """The experiment's id, created if missing, with the experiment kind MLflow 3 reads (and,
    for the evaluate experiment, `runs_view`, hhx's runs table: hhx.tracking.ui); runs left
    RUNNING by a dead process of this machine are ended KILLED (hhx.tracking.orphans)."""
    from mlflow.tracking import MlflowClient

    from hhx.tracking.orphans import reap_orphans

    experiment_id = prepare_store(uri, experiment)  # schema once, first write locked
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment(experiment_id)
    if exp.tags.get(EXPERIMENT_KIND_TAG) != EXPERIMENT_KIND:
        client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    if runs_view:
        from hhx.tracking.ui import ensure_runs_view

        ensure_runs_view(client, experiment_id, exp.tags)
    reap_orphans(client, experiment_id)
    return experiment_id


def begin_run(tracking: TrackingConfig, *, run_name: str, tags: dict[str, str],
              experiment: str | None = None) -> str | None:
    """Create a RUNNING run now (its start time is when the work starts); None when disabled."""
    if not tracking.enabled:
        return None
    from mlflow.tracking import MlflowClient

    from hhx.tracking.orphans import process_tags

    uri = str(tracking.uri)
    experiment_id = ensure_experiment(uri, experiment or str(tracking.experiment),
                                      runs_view=experiment is None)
    run = MlflowClient(tracking_uri=uri).create_run(experiment_id, run_name=run_name, tags={
        **{k: scrub(str(v)) for k, v in tags.items()}, **process_tags()})
    return run.info.run_id


def fail_run(tracking: TrackingConfig, run_id: str | None, reason: str) -> None:
    """End a RUNNING run FAILED with its reason (tags hhx.status, hhx.failure_reason)."""
    if not run_id or not tracking.enabled:
        return
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=str(tracking.uri))
    if client.get_run(run_id).info.status != "RUNNING":  # already ended, with its own reason
        return
    client.set_tag(run_id, "hhx.status", "failed")
    client.set_tag(run_id, "hhx.failure_reason", scrub(reason)[:5000])
    client.set_terminated(run_id, status="FAILED")


def config_secrets(container: Any) -> list[str]:
    """Keys a config points at without holding them: the value of `model.api_key_env`'s variable."""
    model = container.get("model") if isinstance(container, dict) else None
    env = model.get("api_key_env") if isinstance(model, dict) else None
    return [os.environ[env]] if isinstance(env, str) and os.environ.get(env) else []


def resolved_config(cfg: DictConfig) -> dict[str, Any]:
    """The config resolved to plain data (enums as names): resolve once, then give it to
    `flatten_config` and `config_yaml` (each resolution of hhx's config costs ~0.1 s). The
    official prompt is left out (`without_official_prompt`): official runs log what they did
    before prompt variants existed."""
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    assert isinstance(container, dict)
    return without_official_prompt(container)  # type: ignore[arg-type]  # a DictConfig's keys are str


def config_yaml(resolved: dict[str, Any]) -> str:
    """`resolved` as `OmegaConf.to_yaml(cfg, resolve=True)` writes it, character for character."""
    import yaml
    from omegaconf._utils import get_omega_conf_dumper

    return yaml.dump(resolved, default_flow_style=False, allow_unicode=True, sort_keys=False,
                     Dumper=get_omega_conf_dumper())


def flatten_config(cfg: DictConfig | dict[str, Any]) -> dict[str, str]:
    """`a.b.c -> value` for every leaf of the resolved config (lists as JSON), secrets dropped."""
    container = resolved_config(cfg) if isinstance(cfg, DictConfig) else cfg
    clean = scrubber(config_secrets(container))  # the environment's secrets looked up once
    flat: dict[str, str] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if is_secret_name(str(key)):
                    continue
                walk(f"{prefix}.{key}" if prefix else str(key), value)
            return
        text = json.dumps(node) if isinstance(node, (list, tuple)) else str(node)
        flat[prefix] = clean(text)[:MAX_PARAM_CHARS]  # scrubbed whole, then cut

    walk("", container)
    return flat


def finite_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    out = {}
    for key, value in metrics.items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)) and math.isfinite(float(value)):
            out[re.sub(r"[^\w./\- ]", "_", key)] = float(value)
    return out


def log_run(
    tracking: TrackingConfig,
    *,
    run_name: str,
    params: dict[str, str],
    tags: dict[str, str],
    metrics: dict[str, Any],
    artifact_dir: Path | None,
    status: str = "FINISHED",
    run_id: str | None = None,
    experiment: str | None = None,
    dataset: Any = None,
    tables: dict[str, Any] | None = None,
) -> str | None:
    """Log to the run `run_id` (begun with `begin_run`), or to a new one, and end it with
    `status` (FINISHED or FAILED); returns its id (None when tracking is disabled).

    `dataset`: (frame, name, source) logged as the run's evaluation dataset input; `tables`:
    artifact file -> frame, stored as `mlflow.log_table` stores them (JSON, orient "split", listed
    in the `mlflow.loggedArtifacts` tag), so the UI previews them.

    MLflow's client API, not its fluent one: params, tags and metrics go in one batch, the tables
    with the folder's artifacts, and no process-wide state (tracing provider, active run) is set
    up: ~1 s less per run than the fluent calls (benchmarks/bench_startup.py)."""
    if not tracking.enabled:
        return None
    if status not in ("FINISHED", "FAILED"):
        raise ValueError(f"run status {status!r}: use FINISHED or FAILED")
    from mlflow.tracking import MlflowClient

    uri = str(tracking.uri)
    client = MlflowClient(tracking_uri=uri)
    if run_id is None:
        from mlflow.tracking.context.registry import resolve_tags

        from hhx.tracking.orphans import process_tags

        experiment_id = ensure_experiment(uri, experiment or str(tracking.experiment),
                                          runs_view=experiment is None)
        # the user, source and git tags `mlflow.start_run` adds to a new run
        run_id = client.create_run(experiment_id, run_name=run_name,
                                   tags={**resolve_tags(), **process_tags()}).info.run_id
    try:
        _log_contents(client, run_id, params=params, tags=tags, metrics=metrics,
                      dataset=dataset, tables=tables or {},
                      artifact_dir=artifact_dir if tracking.log_artifacts else None)
    except BaseException:
        client.set_terminated(run_id, status="FAILED")
        raise
    client.set_terminated(run_id, status=status)
    return run_id


def _log_contents(client: Any, run_id: str, *, params: dict[str, str], tags: dict[str, str],
                  metrics: dict[str, Any], dataset: Any, tables: dict[str, Any],
                  artifact_dir: Path | None) -> None:
    import tempfile
    import time

    from mlflow.entities import DatasetInput, InputTag, Metric, Param, RunTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT, MLFLOW_LOGGED_ARTIFACTS

    now = int(time.time() * 1000)
    run_tags = [RunTag(k, scrub(str(v))) for k, v in tags.items()]
    if tables:
        run_tags.append(RunTag(MLFLOW_LOGGED_ARTIFACTS, json.dumps(
            [{"path": name, "type": "table"} for name in tables])))
    client.log_batch(run_id,
                     metrics=[Metric(k, v, now, 0) for k, v in finite_metrics(metrics).items()],
                     params=[Param(k, str(v)) for k, v in params.items()], tags=run_tags)
    if dataset is not None:
        import mlflow.data

        frame, ds_name, source = dataset
        with warnings.catch_warnings():  # a local path "can be interpreted in multiple ways"
            warnings.simplefilter("ignore", UserWarning)
            entity = mlflow.data.from_pandas(frame, source=source, name=ds_name)._to_mlflow_entity()
        client.log_inputs(run_id, datasets=[DatasetInput(
            entity, tags=[InputTag(MLFLOW_DATASET_CONTEXT, "evaluation")])])
    if tables:
        with tempfile.TemporaryDirectory(prefix="hhx-tables-") as tmp:
            for artifact_file, frame in tables.items():
                path = Path(tmp, artifact_file)
                path.parent.mkdir(parents=True, exist_ok=True)
                frame.to_json(path, orient="split", index=False, date_format="iso")
            client.log_artifacts(run_id, tmp)
    if artifact_dir is not None and artifact_dir.is_dir():
        client.log_artifacts(run_id, str(artifact_dir))
