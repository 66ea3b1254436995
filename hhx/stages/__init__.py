"""Stages dispatched by `python -m hhx stage=...`: each stage is one module with `run(cfg)`."""

from __future__ import annotations

import importlib

from omegaconf import DictConfig

from hhx.startup import resume_gc

STAGES = {
    "evaluate": "hhx.stages.evaluate",
    "build": "hhx.stages.build",
    "score": "hhx.stages.score",
    "describe": "hhx.stages.describe",
    "leaderboard": "hhx.leaderboard.stage",
    "list": "hhx.stages.listing",
    "sft_data": "hhx.stages.sft_data",
    "sft": "hhx.stages.sft",
}


def dispatch(cfg: DictConfig) -> float | None:
    stage = cfg.stage.value if hasattr(cfg.stage, "value") else str(cfg.stage)
    module = importlib.import_module(STAGES[stage])
    if not getattr(module, "RESUMES_GC", False):  # an evaluate resumes once its run is open
        resume_gc()  # start-up is over (hhx/startup.py)
    result = module.run(cfg)
    if isinstance(result, dict):
        score = result.get("primary_score")
        return float(score) if isinstance(score, (int, float)) else None
    return None
