"""Stages dispatched by `python -m hhx stage=...`: each stage is one module with `run(cfg)`."""

from __future__ import annotations

import importlib
from typing import Any

from omegaconf import DictConfig

from hhx.bounds import enum_text
from hhx.catalog import STAGES as CATALOG_STAGES
from hhx.startup import resume_gc

# stage name -> its module (hhx/catalog.py declares the stages).
STAGES = {spec.name: spec.module for spec in CATALOG_STAGES}


def _in_sweep() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        return HydraConfig.get().mode == RunMode.MULTIRUN
    except ValueError:  # not inside a Hydra app
        return False


def dispatch(cfg: DictConfig) -> float | None:
    """Run the stage; its primary score (what Hydra's sweepers optimise), else None."""
    return primary_score(run_stage(cfg))


def primary_score(result: Any) -> float | None:
    """A stage's primary score from what its `run` returned, else None."""
    if isinstance(result, dict):
        score = result.get("primary_score")
        return float(score) if isinstance(score, (int, float)) else None
    return None


def run_stage(cfg: DictConfig) -> Any:
    """Run the stage `cfg.stage` names; what its `run` returns (the Python API reads it whole)."""
    stage = enum_text(cfg.stage)
    if stage == "evaluate" and not _in_sweep() and (
            cfg.get("dry_run") or (cfg.get("sweep") or {}).get("dry_run")):
        from hhx.sweeps.dryrun import run_single

        return run_single(cfg)  # one cell priced; nothing built or sent
    if stage == "evaluate" and not _in_sweep():
        from hhx.predictors.base import preflight

        preflight(cfg)  # missing weights, a dead endpoint: seconds, before pandas and MLflow load
    module = importlib.import_module(STAGES[stage])
    if not getattr(module, "RESUMES_GC", False):  # an evaluate resumes once its run is open
        resume_gc()  # start-up is over (hhx/startup.py)
    return module.run(cfg)
