"""What one job asks a cluster for, from its model: `model.resources` over the backend's default
(`resources` of its entry in hhx/catalog.py).

A vLLM model asks for a GPU, XGBoost for its `model.xgboost.threads` CPUs, an API model for a
couple of CPUs and a long time limit (rate limits, not compute). `model.resources.<field>=...`
overrides any of them. The SLURM and Ray launchers (hydra_plugins/hhx_launchers/) read this per
job, so one sweep over several models submits each job with its own model's request; the
`${hhx.resource:<field>}` resolver shows the same numbers in `--cfg hydra`.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from omegaconf import DictConfig, OmegaConf

from hhx.bounds import enum_text
from hhx.catalog import BACKENDS, Resources
from hhx.errors import ConfigError

FIELDS = ("gpus", "cpus", "mem_gb", "time_min", "partition")


def job_resources(model: DictConfig | Any) -> Resources:
    """The resources of one job of `model` (a composed model config)."""
    backend = enum_text(model.backend)
    if backend not in BACKENDS:
        raise ConfigError(f"model={model.name}: no resource defaults for backend {backend!r}")
    spec = BACKENDS[backend]
    base = spec.resources
    threads = OmegaConf.select(model, spec.cpus_from) if spec.cpus_from else None
    if threads is not None:  # e.g. XGBoost asks for the CPUs it will use
        base = replace(base, cpus=int(threads))
    given = model.get("resources") or {}
    chosen: dict[str, Any] = {k: given.get(k) for k in FIELDS if given.get(k) is not None}
    return replace(base, **chosen)


def resource_resolver(field: str, *, _root_: DictConfig) -> Any:
    """`${hhx.resource:gpus}` -> this config's model's request (see job_resources)."""
    if field not in FIELDS:
        raise ConfigError(f"${{hhx.resource:{field}}}: unknown field; use {', '.join(FIELDS)}")
    return asdict(job_resources(_root_.model))[field]
