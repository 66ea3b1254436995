"""Shared test settings: MLflow never writes outside the test's temporary folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Every test that tracks gives MLflow a store of its own (a `store` fixture, or a project root with
# this variable removed). This store catches one that forgets: it is unique to the session (xdist
# workers inherit it) and a test after which it exists fails. A forgotten one once let the notebook
# test's leaderboard rank runs of other tests, depending on the order tests ran in.
# A developer's own MLFLOW_TRACKING_URI is replaced too: no test run reaches their store.
_NEVER_USED_NAME = "hhx-tests-never-used-"
if _NEVER_USED_NAME not in os.environ.get("MLFLOW_TRACKING_URI", ""):  # xdist workers keep it
    os.environ["MLFLOW_TRACKING_URI"] = (
        f"sqlite:///{tempfile.gettempdir()}/{_NEVER_USED_NAME}{os.getpid()}.db")
NEVER_USED = Path(os.environ["MLFLOW_TRACKING_URI"].removeprefix("sqlite:///"))


@pytest.fixture(autouse=True)
def _no_run_in_the_shared_store():
    yield
    leaked = [p for p in (NEVER_USED, Path(f"{NEVER_USED}.lock")) if p.exists()]
    for path in leaked:
        path.unlink()
    if leaked:
        pytest.fail(f"MLflow wrote to {NEVER_USED}, the store no test may use (this test, or one "
                    "running beside it): give it a store of its own (tracking.uri=..., or HHX_ROOT "
                    "with MLFLOW_TRACKING_URI removed)", pytrace=False)


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is absent (reference data for developers and CI only)")
    return SHARED


@pytest.fixture
def tr(store, request):
    """MLflow tracking settings on the test module's own `store` fixture (its URI), with an
    experiment of the test's own."""
    return OmegaConf.create({"enabled": True, "uri": store, "experiment": request.node.name[:40],
                             "log_artifacts": True})
