"""vLLM backend: request building is tested everywhere; running the engine needs a GPU."""

from __future__ import annotations

import importlib.util
import types

import pytest

from hhx.errors import PredictorError
from hhx.predictors.base import make_predictor
from hhx.predictors.llm.plan import plan_calls
from hhx.predictors.llm.settings import settings_from_config
from hhx.predictors.llm.vllm_backend import chat_kwargs, engine_kwargs, sampling_kwargs
from tests.helpers.llm_servers import make_cfg

MESSAGES = [[{"role": "user", "content": "u"}]]
HAS_VLLM = importlib.util.find_spec("vllm") is not None


def test_paper_setting_builds_one_request_of_16_draws(tmp_path):
    cfg = make_cfg("qwen35_4b", tmp_path, decoding="qwen_nonthinking", aggregation="k16")
    settings = settings_from_config(cfg)
    (call,) = plan_calls(MESSAGES, settings, {"m": 1}, max_tokens=54)[0]  # the task's budget
    kwargs = sampling_kwargs(settings, call, defaults={"temperature": 1.0, "top_p": 0.95})
    assert kwargs == {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "max_tokens": 54,
                      "n": 16, "seed": 42}
    assert chat_kwargs(settings) == {"use_tqdm": False,
                                     "chat_template_kwargs": {"enable_thinking": False}}
    engine = engine_kwargs(settings)
    assert engine["model"] == "Qwen/Qwen3.5-4B" and engine["enable_prefix_caching"] is True
    assert "enable_lora" not in engine


def test_provider_default_keeps_the_models_generation_defaults(tmp_path):
    cfg = make_cfg("qwen36_27b", tmp_path, decoding="provider_default", aggregation="k1",
                   **{"model.lora_adapter": "/adapters/sft", "model.model_path": "/w/qwen",
                      "decoding.max_tokens": "none"})
    settings = settings_from_config(cfg)
    (call,) = plan_calls(MESSAGES, settings, {"m": 1})[0]
    kwargs = sampling_kwargs(settings, call, defaults={"temperature": 0.6, "top_k": 20})
    # max_tokens=none: no limit (vLLM's own default would stop at 16 tokens); no seed sent.
    assert kwargs == {"temperature": 0.6, "top_k": 20, "max_tokens": None, "n": 1}
    assert chat_kwargs(settings) == {"use_tqdm": False}
    engine = engine_kwargs(settings)
    assert engine["model"] == "/w/qwen" and engine["enable_lora"] is True


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed here")
def test_missing_vllm_is_a_clear_error_before_any_request(tmp_path):
    cfg = make_cfg("qwen35_4b", tmp_path, decoding="qwen_nonthinking", aggregation="k16")
    with pytest.raises(PredictorError, match="vLLM is not installed"):
        make_predictor(cfg).fit(types.SimpleNamespace(spec=None))


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_VLLM, reason="needs vLLM and a GPU")
def test_vllm_engine_runs_k_draws(tmp_path):  # pragma: no cover - GPU machines only
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from hhx.tasks.registry import load_task
    from tests.helpers.llm_servers import examples_frame, jobfind_prompt

    task = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
    cfg = make_cfg("qwen35_4b", tmp_path, decoding="qwen_nonthinking", aggregation="k2")
    predictor = make_predictor(cfg).fit(task)
    rows = predictor.predict(task, examples_frame([jobfind_prompt(i) for i in range(3)]))
    assert all(len(r.details["draws"]) == 2 for r in rows)
    assert predictor.run_metrics()["llm/requests_sent"] == 3
