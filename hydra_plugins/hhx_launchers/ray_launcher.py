"""`hydra/launcher=ray`: Hydra's Ray launcher (hydra-ray-launcher) with each job's CPUs and
GPUs from its model (hhx/sweeps/resources.py) as the job's `ray.remote` options.

A local cluster by default (`ray.init()` on this machine); a running cluster with
`hydra.launcher.ray.init.address=ray://<head>:10001` (or `auto` on a cluster node). Memory and
time limits are not passed: Ray schedules memory as a resource, and a request above a node's
size would wait forever. `hydra.launcher.ray.remote.*` overrides the model's request for all jobs.

Starting a local cluster on a small, busy machine: the raylet waits a fixed 15 s for Ray's
dashboard agent to write its port file, then aborts (ray-project/ray#65983), and `ray.init` reports
only "The current node timed out during startup" 30 s later. Without bytecode (machines that set
PYTHONDONTWRITEBYTECODE and installers that write none) the agent compiles some 500 modules at
every start, 20+ s on 2 loaded cores; with bytecode it starts in a few seconds. So before the
first local start the agent's packages are compiled once (a one-line notice, ~30 s), and a start
that still times out is retried once before failing with one line that names Ray's log.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, setup_globals
from hydra.errors import CompactHydraException
from hydra.plugins.launcher import Launcher
from omegaconf import OmegaConf, open_dict

from hhx.errors import HhxError

from .per_job import job_requests

# What Ray's dashboard and runtime-env agents import (measured on ray 2.60 with sys.modules).
AGENT_PACKAGES = (
    "ray", "aiohappyeyeballs", "aiohttp", "aiosignal", "annotated_types", "attr", "attrs",
    "certifi", "charset_normalizer", "click", "colorama", "filelock", "frozenlist", "google",
    "grpc", "idna", "jsonschema", "jsonschema_specifications", "msgpack", "multidict",
    "opentelemetry", "packaging", "propcache", "psutil", "pydantic", "pydantic_core",
    "referencing", "requests", "rpds", "tqdm", "typing_extensions", "typing_inspection",
    "urllib3", "uvloop", "wcwidth", "yaml", "yarl",
)
STARTUP_TIMEOUT = "timed out during startup"


class RayStartError(HhxError, CompactHydraException):
    """Hydra prints a compact exception as its message alone: one line, no traceback."""


def agent_bytecode_missing() -> bool:
    spec = importlib.util.find_spec("ray.dashboard.utils")
    if spec is None or not spec.origin:
        return False
    return not Path(importlib.util.cache_from_source(spec.origin)).is_file()


def compile_agent_packages() -> int:
    """Write the bytecode of the agents' packages (py_compile writes it whatever
    PYTHONDONTWRITEBYTECODE says); returns how many packages were compiled."""
    import compileall

    done = 0
    for name in AGENT_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        try:
            if spec.submodule_search_locations:
                for folder in spec.submodule_search_locations:
                    compileall.compile_dir(folder, quiet=2, workers=0)
            elif spec.origin and spec.origin.endswith(".py"):
                compileall.compile_file(spec.origin, quiet=2)
            done += 1
        except OSError:  # a read-only install: the start may then be slow, nothing worse
            continue
    return done


def start_local_ray(init_cfg) -> None:
    """`ray.init` for hhx's sweeps: bytecode first, one retry of a start that timed out."""
    import ray
    from hydra_plugins.hydra_ray_launcher._launcher_util import start_ray

    if init_cfg.get("address") is None and agent_bytecode_missing():
        print("hhx: compiling Ray's agent modules once, so the local cluster starts within Ray's "
              "15 s limit on a busy machine (~30 s)", file=sys.stderr)
        compile_agent_packages()
    for attempt in (1, 2):
        try:
            start_ray(init_cfg)
            return
        except Exception as exc:
            if STARTUP_TIMEOUT not in str(exc):
                raise
            ray.shutdown()
            if attempt == 2:
                logs = Path(str(init_cfg.get("_temp_dir") or "/tmp/ray"), "session_latest", "logs")
                raise RayStartError(
                    "hhx: error: the local Ray cluster did not start twice (its raylet gave up "
                    f"waiting for Ray's agents; see {logs}/raylet.out); on a busy machine stop "
                    "other work and rerun, or use hydra/launcher=joblib") from None


class RayMissing(Launcher):
    """Stands in for Hydra's Ray launcher where the `ray` extra is not installed: Hydra imports
    every plugin module at every start, so this module must import without Ray (else each run
    of a plain setup prints Hydra's "Error importing" warning); choosing it says what to install."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass  # the launcher's settings (ray.init, ray.remote) are not needed to say it

    def setup(self, *args: object, **kwargs: object) -> None:  # Hydra's first call after init
        raise RayStartError("hhx: error: hydra/launcher=ray needs Ray and Hydra's Ray launcher: "
                            "pip install 'hhx[ray]' (bash setup.sh --dev installs them)")

    def launch(self, *args: object, **kwargs: object) -> Sequence[JobReturn]:  # never reached
        raise NotImplementedError


try:
    from hydra_plugins.hydra_ray_launcher.ray_launcher import RayLauncher
except ImportError:  # the optional `ray` extra
    RayLauncher = RayMissing


class HhxRayLauncher(RayLauncher):
    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        import logging

        import ray
        from hydra_plugins.hydra_ray_launcher._launcher_util import launch_job_on_ray

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
        start_local_ray(self.ray_cfg.init)
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
