"""Start-up shortcuts keep Hydra's and OmegaConf's answers: the skipped mode probe (hhx/app.py),
the config resolved once for resolved.yaml and the MLflow params (hhx/tracking/mlflow_run.py).
Speed itself is measured by benchmarks/bench_startup.py, not here."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from hhx.app import CONF_DIR, _mode_is_default
from hhx.paths import register_resolvers as register_path_resolvers
from hhx.predictors.base import register_schemas
from hhx.sweeps.grid import register_resolvers
from hhx.tracking.mlflow_run import config_yaml, flatten_config, resolved_config


def _hydra_keys(doc: dict) -> dict:
    """What a conf file sets under `hydra` (a `_global_` file) or at its top (conf/hydra/...)."""
    return doc.get("hydra") or {}


def test_no_conf_file_sets_the_settings_the_probe_skip_relies_on():
    # hhx/app.py answers Hydra's mode probe without composing: only right while no file of
    # hhx's config sets hydra.mode (or adds config search paths).
    offenders = []
    for path in sorted(Path(CONF_DIR).rglob("*.yaml")):
        doc = yaml.safe_load(path.read_text()) or {}
        hydra_part = doc if path.parent.name == "hydra" else _hydra_keys(doc)
        if isinstance(hydra_part, dict):
            offenders += [f"{path}: hydra.{k}" for k in ("mode", "searchpath") if k in hydra_part]
    assert offenders == [], f"{offenders}: remove the shortcut in hhx/app.py"


class _App:  # what _mode_is_default reads of Hydra's app: its config search path
    def __init__(self, providers: list[tuple[str, str]]):
        from hydra.core.config_search_path import SearchPathElement

        elements = [SearchPathElement(p, path) for p, path in providers]
        search = type("S", (), {"get_path": lambda self: elements})()
        self.config_loader = type("L", (), {"get_search_path": lambda self: search})()


OWN = [("hydra", "pkg://hydra.conf"), ("main", CONF_DIR), ("schema", "structured://")]


def test_probe_is_skipped_only_for_hhx_own_config_and_plain_overrides():
    assert _mode_is_default(_App(OWN), "config", ["task=labor_cps_jobfind", "hydra.run.dir=x"])
    assert not _mode_is_default(_App(OWN), "config", ["hydra.mode=MULTIRUN"])
    assert not _mode_is_default(_App(OWN), "config", ["+hydra.searchpath=[file:///x]"])
    assert not _mode_is_default(_App(OWN), "other_config", [])  # --config-name
    assert not _mode_is_default(_App(OWN + [("command-line", "file:///x")]), "config", [])
    assert not _mode_is_default(_App([("main", "/elsewhere/conf")]), "config", [])


@pytest.fixture(scope="module")
def composed():
    register_schemas()
    register_path_resolvers()
    register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=["model=no_change"], return_hydra_config=True)


def test_hhx_config_leaves_hydra_mode_unset_as_the_skip_answers(composed):
    assert composed.hydra.mode is None


def test_config_resolved_once_writes_what_omegaconf_writes(composed):
    # The official prompt (the default `prompt` group) is left out of what a run writes and logs
    # (hhx.config.without_official_prompt): official runs stay as before prompt variants existed.
    full = OmegaConf.masked_copy(composed, [k for k in composed if k != "hydra"])
    cfg = OmegaConf.masked_copy(composed, [k for k in composed if k not in ("hydra", "prompt")])
    resolved = resolved_config(full)
    assert "prompt" not in resolved
    assert config_yaml(resolved) == OmegaConf.to_yaml(cfg, resolve=True)
    assert flatten_config(resolved) == flatten_config(cfg)


def test_collector_paused_for_start_up_and_resumed_with_start_up_frozen(monkeypatch):
    # hhx/startup.py: `main` pauses the collector; the stage's work runs with it on again, and
    # what start-up built is frozen (never scanned again). Outside `main`, resume is a no-op.
    import gc
    import sys
    import types

    from hhx import startup
    from hhx.stages import STAGES, dispatch

    assert gc.isenabled()
    startup.resume_gc()  # not paused: nothing changes
    assert gc.isenabled()
    seen = {}
    stage = types.ModuleType("hhx_fake_stage")
    stage.run = lambda cfg: seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count())
    monkeypatch.setitem(sys.modules, "hhx_fake_stage", stage)
    monkeypatch.setitem(STAGES, "describe", "hhx_fake_stage")
    cfg = OmegaConf.create({"stage": "describe"})
    try:
        startup.pause_gc()
        assert not gc.isenabled()
        dispatch(cfg)
        assert seen["enabled"] and seen["frozen"] > 0
        stage.RESUMES_GC = True  # a stage that resumes it itself (evaluate, once its run is open)
        startup.pause_gc()
        dispatch(cfg)
        assert not seen["enabled"]
    finally:
        startup.resume_gc()
        gc.unfreeze()
    assert gc.isenabled()


def test_cell_identity_from_the_config_resolved_once_is_the_same(composed):
    # hhx/stages/evaluate.py resolves the config once and gives it to the sweep identity too.
    import copy

    from hhx.sweeps.identity import config_hash

    cfg = OmegaConf.masked_copy(composed, [k for k in composed if k != "hydra"])
    resolved = resolved_config(cfg)
    before = copy.deepcopy(resolved)
    assert config_hash(resolved) == config_hash(cfg)
    assert resolved == before  # the identity leaves the resolved config as it was
    other = OmegaConf.merge(cfg, {"data": {"split": "post_cutoff_test"}})
    assert config_hash(resolved_config(other)) != config_hash(resolved)
