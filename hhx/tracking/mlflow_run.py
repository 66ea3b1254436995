"""Log one hhx run to MLflow: flattened config as params, tags, metrics, and a folder of artifacts.

Secrets never reach the store: config keys that name secrets are dropped and any value equal to a
secret-looking environment variable is redacted before logging.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

SECRET_NAME = re.compile(r"(api[_-]?key|secret|token|password|passwd|credential)", re.IGNORECASE)
# Config keys that hold the *name* of an env var, not its value: safe to record.
SAFE_SECRET_KEYS = {"api_key_env"}
MAX_PARAM_CHARS = 6000  # MLflow's limit on a param value


def secret_values() -> list[str]:
    """Values of environment variables whose names look secret (to redact wherever they appear)."""
    return [v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= 8]


def redact(text: str, secrets: list[str]) -> str:
    for value in secrets:
        if value in text:
            text = text.replace(value, "***")
    return text


def flatten_config(cfg: DictConfig | dict[str, Any]) -> dict[str, str]:
    """`a.b.c -> value` for every leaf of the resolved config (lists as JSON), secrets dropped."""
    container = (
        OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
        if isinstance(cfg, DictConfig)
        else cfg
    )
    secrets = secret_values()
    flat: dict[str, str] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if SECRET_NAME.search(str(key)) and str(key) not in SAFE_SECRET_KEYS:
                    continue
                walk(f"{prefix}.{key}" if prefix else str(key), value)
            return
        text = json.dumps(node) if isinstance(node, (list, tuple)) else str(node)
        flat[prefix] = redact(text, secrets)[:MAX_PARAM_CHARS]

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
) -> str | None:
    """Create one MLflow run; returns its id (None when tracking is disabled)."""
    if not tracking.enabled:
        return None
    import mlflow

    from hhx.tracking.store import prepare_store

    secrets = secret_values()
    prepare_store(str(tracking.uri), str(tracking.experiment))  # schema once, first write locked
    mlflow.set_tracking_uri(str(tracking.uri))
    mlflow.set_experiment(str(tracking.experiment))
    with mlflow.start_run(run_name=run_name) as run:
        mlflow.log_params(params)
        mlflow.set_tags({k: redact(str(v), secrets) for k, v in tags.items()})
        mlflow.log_metrics(finite_metrics(metrics))
        if tracking.log_artifacts and artifact_dir is not None and artifact_dir.is_dir():
            mlflow.log_artifacts(str(artifact_dir))
        return run.info.run_id
