"""Log one hhx run to MLflow: flattened config as params, tags, metrics, and a folder of artifacts.

Secrets never reach the store: config keys with a secret name (`hhx.secrets.is_secret_name`:
`api_key`, `access_token`, ..., but not `max_tokens` or `api_key_env`) are dropped, and secret
values (secret-named environment variables, the variable `model.api_key_env` names, key-shaped
text) are redacted before a value is cut to MLflow's length limit. A run is logged FINISHED, or
FAILED with its reason (tag `hhx.failure_reason`).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from hhx.secrets import is_secret_name, scrub

MAX_PARAM_CHARS = 6000  # MLflow's limit on a param value


def config_secrets(container: Any) -> list[str]:
    """Keys a config points at without holding them: the value of `model.api_key_env`'s variable."""
    model = container.get("model") if isinstance(container, dict) else None
    env = model.get("api_key_env") if isinstance(model, dict) else None
    return [os.environ[env]] if isinstance(env, str) and os.environ.get(env) else []


def flatten_config(cfg: DictConfig | dict[str, Any]) -> dict[str, str]:
    """`a.b.c -> value` for every leaf of the resolved config (lists as JSON), secrets dropped."""
    container = (
        OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
        if isinstance(cfg, DictConfig)
        else cfg
    )
    secrets = config_secrets(container)
    flat: dict[str, str] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if is_secret_name(str(key)):
                    continue
                walk(f"{prefix}.{key}" if prefix else str(key), value)
            return
        text = json.dumps(node) if isinstance(node, (list, tuple)) else str(node)
        flat[prefix] = scrub(text, secrets)[:MAX_PARAM_CHARS]  # scrubbed whole, then cut

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
    tracking: DictConfig,
    *,
    run_name: str,
    params: dict[str, str],
    tags: dict[str, str],
    metrics: dict[str, Any],
    artifact_dir: Path | None,
    status: str = "FINISHED",
) -> str | None:
    """Create one MLflow run and end it with `status` (FINISHED or FAILED); returns its id (None
    when tracking is disabled)."""
    if not tracking.enabled:
        return None
    if status not in ("FINISHED", "FAILED"):
        raise ValueError(f"run status {status!r}: use FINISHED or FAILED")
    import mlflow

    from hhx.tracking.store import prepare_store

    prepare_store(str(tracking.uri), str(tracking.experiment))  # schema once, first write locked
    mlflow.set_tracking_uri(str(tracking.uri))
    mlflow.set_experiment(str(tracking.experiment))
    run = mlflow.start_run(run_name=run_name)
    try:
        mlflow.log_params(params)
        mlflow.set_tags({k: scrub(str(v)) for k, v in tags.items()})
        mlflow.log_metrics(finite_metrics(metrics))
        if tracking.log_artifacts and artifact_dir is not None and artifact_dir.is_dir():
            mlflow.log_artifacts(str(artifact_dir))
    except BaseException:
        mlflow.end_run(status="FAILED")
        raise
    mlflow.end_run(status=status)
    return run.info.run_id
