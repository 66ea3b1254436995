"""Before an open-weight model's run: are its weights here, and which engine would run them?

Checked before the data and MLflow are opened (hhx/predictors/base.py `preflight`), by looking
only at this machine: `model.model_path` (a HF folder with config.json, a .gguf file, or
`pkg:<package>/<file>.gguf`), else the model id in the local Hugging Face cache
(`huggingface_hub.try_to_load_from_cache`, which reads files and never opens a connection). hhx
downloads no weights at run time, so a model whose weights are missing stops here in seconds,
online or offline, with one line: the model, where hhx looked, the fix, and the engine it would
use. (Without this, vLLM and transformers ask the hub and, without a network, retry for minutes.)

Whether a CUDA device is present is read from the driver's files (`/proc/driver/nvidia/version`,
`/dev/nvidiactl`) and CUDA_VISIBLE_DEVICES, not from torch: importing torch takes seconds.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from hhx.errors import PredictorError


def has_cuda_device() -> bool:
    """A CUDA device is visible to this process (a cheap look; no torch import)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidiactl").exists()


def engine_plan(backend: str) -> str:
    """Which engine would run the model here, and why (for the missing-weights line)."""
    gpu = has_cuda_device()
    if backend == "vllm":
        installed = importlib.util.find_spec("vllm") is not None
        if gpu:
            return "vLLM on the GPU" + ("" if installed else
                                         " (not installed: pip install 'hhx[gpu]')")
        if installed:
            return ("vLLM's CPU build (no CUDA device here: every answer is slow on a CPU; a GPU "
                    "or model=openai_compatible against a server is faster)")
        return ("vLLM, which needs a GPU (no CUDA device here); on a CPU use model=smollm2_135m "
                "(llama.cpp) or model=openai_compatible against a server")
    if backend == "transformers":
        return "transformers on the GPU" if gpu else (
            "transformers on the CPU (no CUDA device here; float32, slow for billions of weights)")
    return "llama.cpp on the CPU" if backend == "llamacpp" else f"the {backend} backend"


def hf_cache_dir() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def in_hf_cache(model_id: str) -> bool:
    """The model's config.json is in the local Hugging Face cache (no network)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(model_id, "config.json")
    except Exception:  # e.g. an id that is not a valid repo name: not in the cache
        return False
    return isinstance(found, str) and Path(found).is_file()


def path_problem(spec: str) -> str | None:
    """Why `model.model_path` does not hold weights (None: it does)."""
    from hhx.predictors.llm.llamacpp_backend import resolve_model_path

    if spec.startswith("pkg:") or spec.lower().endswith(".gguf"):
        try:
            resolve_model_path(spec)
        except PredictorError as exc:
            return str(exc)
        return None
    path = Path(spec).expanduser()
    if not path.exists():
        return f"model.model_path={spec}: no such folder"
    if not (path / "config.json").is_file():
        return f"model.model_path={spec}: not a Hugging Face model folder (no config.json)"
    return None


def download_command(model_id: str) -> str:
    """`hf download <id>`, with the venv's `hf` where it is not on PATH."""
    beside = Path(sys.executable).parent / "hf"
    hf = "hf" if shutil.which("hf") or not beside.is_file() else str(beside)
    return f"{hf} download {model_id}"


def weights_missing(model: Any, backend: str) -> str | None:
    """Why an open-weight model's weights are not here, in a few words (None: they are)."""
    spec, model_id = getattr(model, "model_path", None), getattr(model, "model_id", None)
    if spec:
        return path_problem(str(spec))
    if backend == "llamacpp" or not model_id:
        return "model.model_path is not set"
    if in_hf_cache(str(model_id)):
        return None
    return (f"not in the Hugging Face cache: {download_command(str(model_id))}, or "
            "model.model_path=<folder>")


def check_local_weights(model: Any, backend: str) -> None:
    """Raise PredictorError (one line) when an open-weight model's weights are not here."""
    name, model_id = str(model.get("name")), model.get("model_id")
    spec = model.get("model_path")
    plan = engine_plan(backend)
    if spec:
        why = path_problem(str(spec))
        if why:
            raise PredictorError(f"model {name}: weights not found: {why}; point model.model_path "
                                 f"at a folder with config.json or a .gguf file (engine: {plan})")
        return
    if backend == "llamacpp" or not model_id:
        return  # llama.cpp needs a file (settings refuse a bare id); nothing to look up
    if in_hf_cache(str(model_id)):
        return
    raise PredictorError(
        f"model {name}: weights for {model_id} not found (looked in model.model_path: not set, "
        f"and the Hugging Face cache {hf_cache_dir()}; hhx downloads nothing at run time); fix: "
        f"model.model_path=<folder with config.json>, or download them first with "
        f"`{download_command(str(model_id))}`; engine here: {plan}")
