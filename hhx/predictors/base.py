"""Making a predictor from the config, and the checks before a run (the backends are declared in
hhx/catalog.py; the contract they implement is hhx/predictors/protocol.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hhx.catalog import Kind, backend_spec
from hhx.predictors.protocol import Predictor

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from hhx.config import HhxConfig


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


def _check(cfg: HhxConfig | DictConfig) -> None:
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


def make_predictor(cfg: HhxConfig | DictConfig) -> Predictor:
    """Instantiate the predictor that `cfg.model.backend` names (its factory in hhx/catalog.py;
    modules are imported lazily so optional extras stay optional)."""
    module_name, factory = backend_spec(cfg.model.backend).factory.split(":")
    module = importlib.import_module(module_name)
    return getattr(module, factory)(cfg)
