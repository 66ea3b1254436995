"""Local open weights for transformers (training and inference): a HF folder, or a GGUF file.

`model.model_path` may be a HF model folder, a GGUF file, or `pkg:<package>/<file>.gguf` inside an
installed package (the bundled SmolLM2-135M). transformers reads GGUF through the `gguf` package
by de-quantising every tensor to float32, which takes about a minute on 2 cores; the result is
saved once as a plain HF folder (safetensors + tokenizer) under the weights cache and reused
(tell files apart by name, size and a hash of their first and last 4 MiB). A bare `model_id`
(e.g. `Qwen/Qwen3.5-4B`) is read from the local Hugging Face cache only: nothing is downloaded at
run time (fetch it beforehand with `hf download <id>`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from hhx.errors import PredictorError
from hhx.predictors.llm.llamacpp_backend import file_fingerprint, resolve_model_path

CONVERTED_MARK = "hhx_converted_from.json"


def weights_cache_dir() -> Path:
    """Where converted GGUF weights live: $HHX_WEIGHTS_CACHE or ~/.cache/hhx/weights."""
    env = os.environ.get("HHX_WEIGHTS_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hhx" / "weights"


def is_gguf(spec: str | None) -> bool:
    return bool(spec) and str(spec).lower().endswith(".gguf")


def _convert_gguf(gguf: Path, dest: Path) -> None:
    """De-quantise a GGUF file into a HF folder (float32 safetensors + tokenizer), atomically."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    # A GGUF-loaded model is marked quantised and refuses save_pretrained; the tensors are
    # already plain float32, so copy them into an unmarked model of the same config.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict())
    plain.generation_config = loaded.generation_config
    plain.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    (tmp / CONVERTED_MARK).write_text(json.dumps(file_fingerprint(gguf), indent=2))
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def hf_folder(spec: str, cache_dir: Path | None = None) -> Path:
    """A HF folder for `spec`: converted from GGUF once (cached), or the folder itself."""
    if is_gguf(spec):
        gguf = resolve_model_path(spec)
        fp = file_fingerprint(gguf)
        dest = (cache_dir or weights_cache_dir()) / f"{gguf.stem}-{fp['sha256_head_tail'][:16]}"
        if not (dest / CONVERTED_MARK).is_file():
            from hhx.io import file_lock

            with file_lock(dest.with_name(dest.name + ".lock")):
                if not (dest / CONVERTED_MARK).is_file():
                    _convert_gguf(gguf, dest)
        return dest
    path = Path(spec).expanduser()
    if not path.is_dir() or not (path / "config.json").is_file():
        raise PredictorError(
            f"model weights {path}: not a Hugging Face model folder (no config.json); point "
            "model.model_path at a HF folder or a .gguf file"
        )
    return path


def base_weights(model_path: str | None, model_id: str | None) -> str:
    """What transformers' from_pretrained should load: a local folder, or a cached hub id."""
    if model_path:
        return str(hf_folder(str(model_path)))
    if not model_id:
        raise PredictorError("set model.model_path (HF folder or GGUF) or model.model_id")
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(str(model_id), local_files_only=True)
    except Exception:  # not in the local cache: hhx never downloads weights at run time
        raise PredictorError(
            f"model {model_id}: not in the local Hugging Face cache and hhx downloads nothing at "
            f"run time; fetch it first (`hf download {model_id}`) or set model.model_path"
        ) from None


def adapter_identity(path: str | None) -> dict[str, Any] | None:
    """A PEFT adapter folder's files and sizes (a retrained adapter misses the response cache)."""
    if not path:
        return None
    root = Path(path)
    if not (root / "adapter_config.json").is_file():
        raise PredictorError(
            f"LoRA adapter {root}: no adapter_config.json (a PEFT adapter folder, e.g. "
            "<sft.output_dir>/adapter); check model.lora_adapter"
        )
    files = sorted(p for p in root.rglob("*") if p.is_file())
    stats = [(str(p.relative_to(root)), p.stat().st_size, int(p.stat().st_mtime)) for p in files]
    return {"path": str(root.resolve()), "files": stats}
