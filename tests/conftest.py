"""Shared test settings: MLflow never writes outside the test's temporary folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MLFLOW_TRACKING_URI", "sqlite:////tmp/hhx-tests-never-used.db")


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
