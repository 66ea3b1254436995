"""The MLflow store before anyone writes to it: schema and experiment created once, under a lock.

Measured on a brand-new SQLite store: 8 parallel sweep jobs that each create the schema (MLflow
runs its Alembic migrations on first use) and the experiment lose runs — 3 of 8 were recorded,
the others failed with `duplicate column name: step`, `CircularDependencyError` or `table
logged_models already exists`. Once the store exists it does not happen. So the sweep prepares the
store before its jobs start (hhx/sweeps/callback.py), and every run prepares it again under an
exclusive file lock beside the database, which serialises the first write whatever the launcher.
A server URI (http://...) needs nothing: the server owns its schema.

A SQLite store keeps its experiments' artifacts beside it (`<db folder>/mlruns/<experiment>`).
MLflow's own default is `./mlruns` of whatever folder the first run started in, fixed into the
experiment from then on: a notebook folder, or the checkout a demo grid ran from, collected the
project's predictions and models, and a copied or deleted project lost or left them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

_READY: set[tuple[str, str]] = set()  # (uri, experiment) prepared by this process
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"  # MLflow 3's kind for classical ML experiments


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` URI (None for any other store)."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///"):])


def artifact_location(uri: str, experiment: str) -> str | None:
    """Where a new experiment of a SQLite store keeps its artifacts (None: the store decides)."""
    path = sqlite_path(uri)
    if path is None:
        return None
    folder = re.sub(r"[^A-Za-z0-9._-]+", "_", experiment).strip("._") or "experiment"
    if folder != experiment:  # two names that sanitise alike keep folders of their own
        folder += "-" + hashlib.sha256(experiment.encode()).hexdigest()[:8]
    return (path.resolve().parent / "mlruns" / folder).as_uri()


@contextlib.contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Exclusive across processes for a SQLite store (a `<db>.lock` file beside it); no-op else."""
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def prepare_store(uri: str, experiment: str) -> str:
    """Create the store's schema and the experiment if missing; returns the experiment id.

    Cheap after the first call in a process; safe to call from many processes at once."""
    from mlflow.tracking import MlflowClient

    if (uri, experiment) in _READY:
        found = MlflowClient(tracking_uri=uri).get_experiment_by_name(experiment)
        if found is not None:
            return found.experiment_id
    with store_lock(uri):
        # The client's store runs MLflow's migrations on a new database: inside the lock only.
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(experiment)
        if found is None:
            experiment_id = client.create_experiment(
                experiment, artifact_location=artifact_location(uri, experiment),
                tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND})
        else:
            experiment_id = found.experiment_id
    _READY.add((uri, experiment))
    return experiment_id
