"""What one job asks a cluster for, from its model: `model.resources` over the backend's default.

A vLLM model asks for a GPU, XGBoost for its `model.xgboost.threads` CPUs, an API model for a
couple of CPUs and a long time limit (rate limits, not compute). `model.resources.<field>=...`
overrides any of them. The SLURM and Ray launchers (hydra_plugins/hhx_launchers/) read this per
job, so one sweep over several models submits each job with its own model's request; the
`${hhx.resource:<field>}` resolver shows the same numbers in `--cfg hydra`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from omegaconf import DictConfig

from hhx.config import enum_text
from hhx.errors import ConfigError


@dataclass(frozen=True)
class Resources:
    gpus: int
    cpus: int
    mem_gb: int
    time_min: int
    partition: str | None = None


BACKEND_DEFAULTS: dict[str, Resources] = {
    "vllm": Resources(gpus=1, cpus=8, mem_gb=64, time_min=720),
    "transformers": Resources(gpus=1, cpus=8, mem_gb=32, time_min=720),
    "llamacpp": Resources(gpus=0, cpus=4, mem_gb=8, time_min=240),
    "litellm": Resources(gpus=0, cpus=2, mem_gb=4, time_min=1440),
    "xgboost": Resources(gpus=0, cpus=2, mem_gb=32, time_min=240),
    "no_change": Resources(gpus=0, cpus=1, mem_gb=4, time_min=30),
    "official_xgboost": Resources(gpus=0, cpus=1, mem_gb=4, time_min=30),
}
FIELDS = ("gpus", "cpus", "mem_gb", "time_min", "partition")



def job_resources(model: DictConfig | Any) -> Resources:
    """The resources of one job of `model` (a composed model config)."""
    backend = enum_text(model.backend)
    if backend not in BACKEND_DEFAULTS:
        raise ConfigError(f"model={model.name}: no resource defaults for backend {backend!r}")
    base = BACKEND_DEFAULTS[backend]
    if backend == "xgboost" and model.get("xgboost") is not None:
        base = replace(base, cpus=int(model.xgboost.threads))
    given = model.get("resources") or {}
    chosen: dict[str, Any] = {k: given.get(k) for k in FIELDS if given.get(k) is not None}
    return replace(base, **chosen)


def resource_resolver(field: str, *, _root_: DictConfig) -> Any:
    """`${hhx.resource:gpus}` -> this config's model's request (see job_resources)."""
    if field not in FIELDS:
        raise ConfigError(f"${{hhx.resource:{field}}}: unknown field; use {', '.join(FIELDS)}")
    return asdict(job_resources(_root_.model))[field]
