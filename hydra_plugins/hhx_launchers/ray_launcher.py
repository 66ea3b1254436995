"""`hydra/launcher=ray`: Hydra's Ray launcher (hydra-ray-launcher) with each job's CPUs and
GPUs from its model (hhx/sweeps/resources.py) as the job's `ray.remote` options.

A local cluster by default (`ray.init()` on this machine); a running cluster with
`hydra.launcher.ray.init.address=ray://<head>:10001` (or `auto` on a cluster node). Memory and
time limits are not passed: Ray schedules memory as a resource, and a request above a node's
size would wait forever. `hydra.launcher.ray.remote.*` overrides the model's request for all jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, setup_globals
from hydra_plugins.hydra_ray_launcher.ray_launcher import RayLauncher
from omegaconf import OmegaConf, open_dict

from .per_job import job_requests


class HhxRayLauncher(RayLauncher):
    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        import logging

        import ray
        from hydra_plugins.hydra_ray_launcher._launcher_util import launch_job_on_ray, start_ray

        log = logging.getLogger(__name__)
        setup_globals()
        assert self.config is not None and self.hydra_context is not None
        assert self.task_function is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        # Ray's default object store asks for 30% of memory; a sweep passes small objects only.
        self.ray_cfg.init.setdefault("object_store_memory", 78643200)
        # A local cluster's dashboard adds processes that slow its start past Ray's fixed 30 s
        # wait on a busy machine; it is not needed to run jobs.
        if self.ray_cfg.init.get("address") is None:
            self.ray_cfg.init.setdefault("include_dashboard", False)
        start_ray(self.ray_cfg.init)
        requests = job_requests(self.hydra_context, self.config, job_overrides)
        given = OmegaConf.to_container(self.ray_cfg.remote, resolve=True) or {}
        pending = []
        for pos, (overrides, request) in enumerate(zip(job_overrides, requests, strict=True)):
            idx = initial_job_idx + pos
            log.info(f"\t#{idx} : {' '.join(filter_overrides(overrides))}")
            sweep_config = self.hydra_context.config_loader.load_sweep_config(
                self.config, list(overrides))
            with open_dict(sweep_config):
                sweep_config.hydra.job.id = f"job_id_for_{idx}"
                sweep_config.hydra.job.num = idx
            remote = OmegaConf.create({"num_cpus": request.cpus, "num_gpus": request.gpus,
                                       **given})
            pending.append(launch_job_on_ray(self.hydra_context, remote, sweep_config,
                                             self.task_function, Singleton.get_state()))
        return [ray.get(p) for p in pending]
