"""Making a predictor from the config, the checks before a run, and the backends' own config
schemas (the backends are declared in hhx/catalog.py; the contract they implement is
hhx/predictors/protocol.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hhx.bounds import enum_text
from hhx.catalog import Kind, backend_spec
from hhx.predictors.protocol import Predictor, PredictorConfig

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from hhx.config import HhxConfig, ModelConfig


def preflight(cfg: HhxConfig | DictConfig) -> None:
    """Checks that take seconds and save minutes, run before the data and MLflow are opened: an
    API model's endpoint must resolve and accept a connection (hhx/predictors/llm/probe.py); an
    open-weight model's weights must be here (hhx/predictors/llm/weights_check.py); a custom
    model's target must import and be a predictor (hhx/predictors/custom.py). Once per
    config: the app runs it before the evaluate stage's imports, the stage again when called alone."""
    if any(seen is cfg for seen in _PREFLIGHTED):
        return
    _check(cfg)
    _PREFLIGHTED.append(cfg)


# The configs already checked (compared by identity; a process runs one or a few).
_PREFLIGHTED: list[Any] = []


def predictor_config(cfg: HhxConfig | DictConfig | PredictorConfig) -> PredictorConfig:
    """The parts of a run's config a predictor reads (protocol.PredictorConfig)."""
    if isinstance(cfg, PredictorConfig):
        return cfg

    def part(key: str) -> Any:
        return cfg.get(key) if hasattr(cfg, "get") else getattr(cfg, key, None)

    return PredictorConfig(model=cfg.model, decoding=part("decoding"),
                           aggregation=part("aggregation"), prompt=part("prompt"),
                           score=part("score"), seed=part("seed"), paths=part("paths"))


def _check(full: HhxConfig | DictConfig) -> None:
    cfg = predictor_config(full)
    spec = backend_spec(cfg.model.backend)
    if spec.kind is Kind.custom:  # the target imports and is a predictor: one line if not
        from hhx.predictors.custom import make

        make(cfg)
        return
    if spec.kind is Kind.local:
        from hhx.predictors.llm.weights_check import check_local_weights

        check_local_weights(cfg.model, spec.name)
        return
    if spec.kind is not Kind.api:
        return
    from hhx.predictors.llm.probe import preflight as endpoint_preflight
    from hhx.predictors.llm.settings import read_api_key, settings_from_config

    settings = settings_from_config(cfg)
    read_api_key(settings)  # a key variable left unset: one line, before anything is opened
    endpoint_preflight(settings)


def make_predictor(cfg: HhxConfig | DictConfig | PredictorConfig) -> Predictor:
    """Instantiate the predictor that `cfg.model.backend` names (its factory in hhx/catalog.py;
    modules are imported lazily so optional extras stay optional). The factory gets the
    predictor's part of the config (PredictorConfig), not the task, data or tracking settings."""
    module_name, factory = backend_spec(cfg.model.backend).factory.split(":")
    module = importlib.import_module(module_name)
    return getattr(module, factory)(predictor_config(cfg))


def model_schema(backend: object) -> type[ModelConfig]:
    """The config schema of a backend's models: its `BackendSpec.settings` class (a subclass of
    ModelConfig declared in the backend's module, imported here), else ModelConfig."""
    from hhx.config import ModelConfig

    pointer = backend_spec(backend).settings
    if pointer is None:
        return ModelConfig
    module_name, name = pointer.split(":")
    schema = getattr(importlib.import_module(module_name), name)
    if not (isinstance(schema, type) and issubclass(schema, ModelConfig)):
        raise TypeError(f"hhx/catalog.py: backend {enum_text(backend)}'s settings {pointer} "
                        "must be a dataclass subclassing hhx.config.ModelConfig")
    return schema


def register_schemas() -> None:
    """Register hhx's config schema with Hydra, and each backend's own model schema as
    `schema/model/<backend>` (what its conf/model/*.yaml names in its defaults list:
    `- /schema/model/<backend>@_here_`). Idempotent; run before composing a config."""
    from hydra.core.config_store import ConfigStore

    from hhx.catalog import BACKENDS
    from hhx.config import register_configs

    register_configs()
    store = ConfigStore.instance()
    for spec in BACKENDS.values():
        if spec.settings is not None:
            store.store(group="schema/model", name=spec.name, node=model_schema(spec.name))
