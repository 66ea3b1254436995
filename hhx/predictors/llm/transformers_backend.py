"""transformers backend: local open weights in-process (CPU or GPU), optionally with a LoRA adapter.

The path that evaluates a fine-tuned adapter exactly as it was trained: the same HF weights
(a HF folder, or the bundled GGUF de-quantised once, see hf_weights.py) with the PEFT adapter of
`model.lora_adapter` applied, generating with the model's own chat template. K draws of one
prompt are drawn together from one evaluation of the prompt (its cache repeated K times; the same
tokens as one `generate` call with `num_return_sequences=K`, which evaluates it K times), seeded
with the call's seed, so a rerun draws the same answers (supports_n: true). Decoding follows `decoding`: sampling when
a temperature > 0 is set, greedy otherwise. There is no JSON-constrained decoding here
(supports_json_schema: false). Each prompt is its own `generate` call (its K draws together), so
an answer never depends on its batch-mates; `model.extra` may set `dtype` (e.g. bfloat16) and `device` (default: cuda if present).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hhx.errors import PredictorError
from hhx.predictors.llm.cost import Prices, cost_from_usage, prices_for
from hhx.predictors.llm.hf_weights import adapter_identity, base_weights
from hhx.predictors.llm.plan import Call
from hhx.predictors.llm.predictor import LLMPredictor
from hhx.predictors.llm.prompt_variants import variant_from_config
from hhx.predictors.llm.settings import LLMSettings, settings_from_config
from hhx.predictors.llm.transport import Choice, Response, TransportError

if TYPE_CHECKING:
    from hhx.predictors.protocol import PredictorConfig

# model.extra keys this backend reads itself (the rest is refused, not silently ignored).
EXTRA_KEYS = ("dtype", "device", "threads")


def generation_kwargs(settings: LLMSettings, n: int, max_tokens: int | None) -> dict[str, Any]:
    """`generate` arguments from the decoding settings (unset ones keep transformers' defaults)
    and the call's answer budget (None: up to the context length, as on vLLM)."""
    p = settings.params
    kwargs: dict[str, Any] = {"num_return_sequences": n}
    temperature: Any = p.get("temperature")
    sample = temperature is not None and float(temperature) > 0
    kwargs["do_sample"] = sample or (temperature is None and n > 1)
    if sample:
        kwargs["temperature"] = float(temperature)
    if kwargs["do_sample"]:
        for name in ("top_p", "top_k", "min_p"):
            if p.get(name) is not None:
                kwargs[name] = p[name]
    else:  # greedy: sampling knobs would only raise warnings
        kwargs.update(temperature=None, top_p=None, top_k=None)
    kwargs["max_new_tokens"] = int(max_tokens) if max_tokens is not None else settings.n_ctx
    return kwargs


def _batch_budget(calls: Sequence[Call]) -> int | None:
    """One budget for a batch: the largest of its calls' (None when any call has no limit)."""
    budgets = [c.max_tokens for c in calls]
    return None if any(b is None for b in budgets) else max(b for b in budgets if b is not None)


class TransformersTransport:
    backend = "transformers"
    batch = True
    cancellable = False

    def __init__(self, settings: LLMSettings) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise PredictorError(
                "torch/transformers are not installed; run `bash setup.sh --dev` (or install "
                "the pinned versions from requirements-dev.lock)"
            ) from None
        unknown = sorted(set(settings.extra) - set(EXTRA_KEYS))
        if unknown:
            raise PredictorError(
                f"model={settings.name}: model.extra keys {unknown} are not read by the "
                f"transformers backend (it takes {', '.join(EXTRA_KEYS)})"
            )
        self.settings = settings
        self.torch = torch
        if settings.extra.get("threads"):
            torch.set_num_threads(int(settings.extra["threads"]))
        self.path = base_weights(settings.model_path, settings.model_id)
        self._adapter = adapter_identity(settings.lora_adapter)
        self.device = str(settings.extra.get("device") or ("cuda" if torch.cuda.is_available()
                                                            else "cpu"))
        dtype = getattr(torch, str(settings.extra.get("dtype") or "float32"))
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(self.path, dtype=dtype)
        if settings.lora_adapter:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, settings.lora_adapter)
        self.model = model.to(self.device).eval()
        self.prices: Prices = prices_for(
            settings.model_id,
            settings.input_cost_per_token,
            settings.output_cost_per_token,
            use_litellm_map=False,
        )
        # What the engine's stop messages name (a truncated answer, an out-of-memory batch...).
        self.endpoint = f"transformers in-process ({settings.model_path or settings.model_id})"

    def identity(self) -> dict[str, Any]:
        return {"weights": self.path, "lora": self._adapter, "device": self.device}

    def _encode(self, calls: Sequence[Call]) -> Any:
        kwargs: dict[str, Any] = {}
        if "enable_thinking" in self.settings.params:
            kwargs["enable_thinking"] = self.settings.params["enable_thinking"]
        texts = [
            self.tokenizer.apply_chat_template(
                c.messages, tokenize=False, add_generation_prompt=True, **kwargs
            )
            for c in calls
        ]
        return self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)

    def _generate(self, calls: Sequence[Call]) -> list[Response]:
        torch = self.torch
        n = calls[0].n
        batch = self._encode(calls).to(self.device)
        if batch["input_ids"].shape[1] > self.settings.n_ctx:
            raise TransportError(
                "context_window_exceeded",
                f"prompt of {batch['input_ids'].shape[1]} tokens > n_ctx={self.settings.n_ctx}",
            )
        if calls[0].seed is not None:
            torch.manual_seed(int(calls[0].seed))
        started = time.monotonic()
        kwargs = generation_kwargs(self.settings, n, _batch_budget(calls))
        with torch.inference_mode():
            out = self._shared_prefill(batch, n, kwargs) if len(calls) == 1 and n > 1 else None
            if out is None:
                out = self.model.generate(
                    **batch, pad_token_id=self.tokenizer.pad_token_id, **kwargs)
        elapsed = time.monotonic() - started
        width = batch["input_ids"].shape[1]
        new = out[:, width:]
        eos = self.tokenizer.eos_token_id
        responses = []
        for i, _call in enumerate(calls):
            choices = []
            completion = 0
            for j in range(n):
                ids = new[i * n + j]
                keep = ids[ids != self.tokenizer.pad_token_id] if eos is None else ids
                stop = (keep == eos).nonzero() if eos is not None else []
                finish = "stop" if len(stop) else "length"
                if len(stop):
                    keep = keep[: int(stop[0])]
                completion += int(keep.numel())
                text = self.tokenizer.decode(keep, skip_special_tokens=True)
                choices.append(Choice(text=text, finish_reason=finish))
            prompt_tokens = int(batch["attention_mask"][i].sum())
            responses.append(Response(
                choices=choices,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion,
                cost_usd=cost_from_usage(self.prices, prompt_tokens, completion),
                latency_s=elapsed / len(calls),
            ))
        return responses

    def _shared_prefill(self, batch: Any, n: int, kwargs: dict[str, Any]) -> Any:
        """The K draws of one prompt from one prompt evaluation: the prompt (but its last token)
        is evaluated once, its cache repeated K times, and generation goes on from there.
        `num_return_sequences=K` would evaluate the prompt K times (about 3x slower for K = 16 at
        550 prompt tokens on the CPU); the sampled tokens are the same (same logits, same random
        stream: checked in tests/predictors/llm/test_llm_transformers_prefill.py). None: not possible here."""
        ids, mask = batch["input_ids"], batch["attention_mask"]
        if ids.shape[1] < 2:
            return None
        prefix = self.model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], use_cache=True)
        cache = getattr(prefix, "past_key_values", None)
        if cache is None or not hasattr(cache, "batch_repeat_interleave"):
            return None
        cache.batch_repeat_interleave(n)
        return self.model.generate(
            input_ids=ids.repeat_interleave(n, 0), attention_mask=mask.repeat_interleave(n, 0),
            past_key_values=cache, pad_token_id=self.tokenizer.pad_token_id,
            **{**kwargs, "num_return_sequences": 1})

    def send_batch(self, calls: Sequence[Call]) -> list[Response | TransportError]:
        # One prompt per generate call, seeded by its own seed: an answer never depends on
        # which other prompts share its batch, so a rerun or a resumed run draws the same.
        results: list[Response | TransportError] = []
        for call in calls:
            try:
                results.append(self._generate([call])[0])
            except TransportError as exc:
                results.append(exc)
        return results


def make(cfg: PredictorConfig) -> LLMPredictor:
    settings = settings_from_config(cfg)
    return LLMPredictor(settings, TransformersTransport, cfg.paths.cache_dir, seed=int(cfg.seed),
                        prompt=variant_from_config(cfg))
