"""`hydra/launcher=submitit_slurm` (and `submitit_local`) with each job's resources from its model.

The stock launcher (hydra-submitit-launcher) submits every job of a sweep with the one resource
set of `hydra.launcher`; a grid over a vLLM model and XGBoost needs a GPU for some jobs and CPUs
for others. This one groups the jobs by their model's request (hhx/sweeps/resources.py), submits
one job array per group (gpus_per_node, cpus_per_task, mem_gb, timeout_min, and partition when the
model names one), and returns the results in job order. `hydra.launcher.*` still sets everything
else (account, qos, setup, array_parallelism ...). `submitit_local` runs the same code path as
local processes (no cluster), which is how the tests run it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import (
    BaseSubmititLauncher,
    LocalLauncher,
    SlurmLauncher,
)
from omegaconf import OmegaConf

from .per_job import job_requests


def submitit_params(params: dict[str, Any], executor: str, request: Any) -> dict[str, Any]:
    """The executor parameters of one group: the launcher's, with the model's request over it."""
    base = dict(params)
    base.update(gpus_per_node=request.gpus, cpus_per_task=request.cpus, mem_gb=request.mem_gb,
                timeout_min=request.time_min)
    if request.partition:
        base["partition"] = request.partition
    init_keys = {"submitit_folder", "max_num_timeout"}
    common = set(OmegaConf.structured(BaseQueueConf).keys())
    return {k if k in common else f"{executor}_{k}": v for k, v in base.items()
            if k not in init_keys}


class PerModelResources(BaseSubmititLauncher):
    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        import submitit

        assert self.config is not None and self.hydra_context is not None
        requests = job_requests(self.hydra_context, self.config, job_overrides)
        groups: dict[Any, list[int]] = {}
        for pos, request in enumerate(requests):
            groups.setdefault(request, []).append(pos)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        if "mode" in self.config.hydra.sweep:
            os.chmod(sweep_dir, mode=int(str(self.config.hydra.sweep.mode), 8))
        init = {"folder": self.params["submitit_folder"]}
        if "max_num_timeout" in self.params:
            init[f"{self._EXECUTOR}_max_num_timeout"] = self.params["max_num_timeout"]
        submitted: dict[int, Any] = {}
        for request, positions in groups.items():
            executor = submitit.AutoExecutor(cluster=self._EXECUTOR, **init)
            executor.update_parameters(**submitit_params(self.params, self._EXECUTOR, request))
            args = [(list(job_overrides[p]), "hydra.sweep.dir", initial_job_idx + p,
                     f"job_id_for_{initial_job_idx + p}", Singleton.get_state())
                    for p in positions]
            jobs = executor.map_array(self, *zip(*args, strict=True))
            submitted.update(zip(positions, jobs, strict=True))
        return [submitted[p].results()[0] for p in range(len(job_overrides))]


class HhxSlurmLauncher(PerModelResources, SlurmLauncher):
    _EXECUTOR = "slurm"


class HhxLocalLauncher(PerModelResources, LocalLauncher):
    _EXECUTOR = "local"
