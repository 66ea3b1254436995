"""Per-job resources: compose each job's config and group the jobs by what their model asks for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hydra.types import HydraContext
from omegaconf import DictConfig


def job_requests(
    hydra_context: HydraContext, config: DictConfig, job_overrides: Sequence[Sequence[str]]
) -> list[Any]:
    """The Resources of each job, in job order (its composed config's model)."""
    from hhx.sweeps.resources import job_resources

    out = []
    for overrides in job_overrides:
        job_cfg = hydra_context.config_loader.load_sweep_config(config, list(overrides))
        out.append(job_resources(job_cfg.model))
    return out
