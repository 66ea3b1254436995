"""What a model needs, and what of it is missing on this machine (`stage=list`).

Read from the model's backend entry in hhx/catalog.py and its config: the optional extra the
backend imports (`packages`, `install`), the weights of an open-weight model (its
`model.model_path`, else the local Hugging Face cache; nothing is downloaded), a CUDA device for
a backend that needs one, and the API key of a provider. A model behind a server (`api_base`
set, or a template such as openai_compatible that takes it on the command line) needs the
server, not a key: a self-hosted server runs without one (hhx/predictors/llm/settings.py).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from hhx.catalog import BackendSpec, Gpu, Kind, backend_spec


def is_server(model: Any, template: bool = False) -> bool:
    """Served by an OpenAI-compatible server: an `api_base`, or a template that takes one."""
    return bool(model.api_base) or template


def needs(model: Any, template: bool = False) -> str:
    """What a model of this config needs, in words."""
    spec = backend_spec(model.backend)
    if spec.kind is Kind.api:
        if model.api_base:
            return f"a server at {model.api_base}"
        if template:
            return "a server: model.api_base=http://host:port/v1 model.name=<served>"
        return f"an API key in ${model.api_key_env}" if model.api_key_env else "nothing"
    if spec.kind is Kind.local:
        return f"{spec.needs}; the weights"
    return spec.needs


def missing_extra(spec: BackendSpec) -> str | None:
    absent = [p for p in spec.packages if importlib.util.find_spec(p) is None]
    return f"extra: {spec.install} ({', '.join(absent)} not installed)" if absent else None


def missing(model: Any, template: bool = False) -> list[str]:
    """What of `needs` is not here: the extra, the weights, a GPU, the API key (in that order)."""
    spec = backend_spec(model.backend)
    out = [m for m in [missing_extra(spec)] if m]
    if spec.kind is Kind.local:
        from hhx.predictors.llm.weights_check import has_cuda_device, weights_missing

        why = weights_missing(model, spec.name)
        if why:
            out.append(f"weights: {why}")
        if spec.gpu is Gpu.needed and not has_cuda_device():
            out.append("GPU: no CUDA device here")
    if spec.kind is Kind.api and not is_server(model, template) and model.api_key_env:
        if not os.environ.get(model.api_key_env):
            out.append(f"API key: ${model.api_key_env} is not set")
    return out
