"""Secrets: scrubbed before any cut (a key at every offset around the cut), secret names told
apart from settings precisely (decoding.max_tokens reaches the MLflow params), and a key a server
echoes at any offset never reaches the stop message, logs or run records."""

from __future__ import annotations

import logging
import types

import mlflow
import pytest
from omegaconf import OmegaConf

from hhx.errors import PredictorError
from hhx.predictors.base import make_predictor
from hhx.secrets import clean_line, clip, is_secret_name, scrub
from hhx.tasks.registry import load_task
from hhx.tracking.mlflow_run import flatten_config, log_run
from tests.helpers.llm_servers import (
    FaultServer,
    api_model,
    examples_frame,
    jobfind_prompt,
    make_cfg,
)

TASK = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
KEY = "sk-test-HHX-straddle-0123456789abcdef"  # 37 characters, as in the issue
CUT = 300


def _fragments(secret: str, size: int = 6) -> list[str]:
    """Every piece of `size` characters of the secret: none may survive anywhere."""
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def _leaks(text: str, secret: str) -> list[str]:
    return [f for f in _fragments(secret) if f in text]


@pytest.mark.parametrize("style", ["env", "explicit", "shape"])
def test_a_key_at_every_offset_around_the_cut_never_survives(monkeypatch, style):
    """env: the value of a secret-named variable; explicit: the key just sent; shape: a value
    nobody told us about, caught by its key shape (sk-...)."""
    secret = "sk-" + "Zq9" * 12 if style == "shape" else KEY
    if style == "env":
        monkeypatch.setenv("HHX_SOME_API_KEY", secret)
    known = [secret] if style == "explicit" else []
    for offset in range(CUT - len(secret) - 8, CUT + 8):
        text = "e" * offset + " " + secret + " trailing words of the error message" * 3
        line = clean_line(text, known, limit=CUT)
        assert len(line) <= CUT
        assert not _leaks(line, secret), (offset, line[-60:])
    # The order matters: cutting first leaves a piece of the key that no longer matches.
    text = "e" * (CUT - 20) + KEY
    assert _leaks(scrub(clip(text, CUT), [KEY]), KEY)


def test_secret_names_are_told_apart_from_settings():
    secret = ["api_key", "OPENAI_API_KEY", "apiKey", "x-api-key", "access_token", "HF_TOKEN",
              "client_secret", "password", "Authorization", "token", "aws_secret_access_key"]
    setting = ["max_tokens", "api_key_env", "input_cost_per_token", "output_cost_per_token",
               "pad_token", "stop_token_ids", "cache_key", "tokenizer", "max_completion_tokens",
               "key_version", "seed"]
    assert [n for n in secret if not is_secret_name(n)] == []
    assert [n for n in setting if is_secret_name(n)] == []


def test_flatten_config_keeps_settings_and_drops_secrets(monkeypatch):
    monkeypatch.setenv("MY_LLM_CRED", "value-of-a-credential-42")  # named by api_key_env only
    cfg = OmegaConf.create({
        "decoding": {"max_tokens": 64, "truncation_retries": 1},
        "model": {"name": "m", "api_key_env": "MY_LLM_CRED", "input_cost_per_token": 1e-6,
                  "extra": {"api_key": "sk-test-dropped-123456", "stop_token_ids": [2]},
                  "api_base": "http://h/v1?k=value-of-a-credential-42"},
    })
    flat = flatten_config(cfg)
    assert flat["decoding.max_tokens"] == "64"
    assert flat["model.input_cost_per_token"] == "1e-06"
    assert flat["model.api_key_env"] == "MY_LLM_CRED"
    assert flat["model.extra.stop_token_ids"] == "[2]"
    assert "model.extra.api_key" not in flat
    assert "value-of-a-credential-42" not in str(flat)  # the variable's value, redacted


def test_decoding_max_tokens_reaches_the_mlflow_params(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-in-mlflow-987654321")
    cfg = make_cfg("gpt_5_mini", tmp_path, decoding="provider_default")
    cfg.decoding.max_tokens = 96
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracking = OmegaConf.create({"enabled": True, "uri": uri, "experiment": "t",
                                 "log_artifacts": False})
    run_id = log_run(tracking, run_name="x", params=flatten_config(cfg), tags={}, metrics={},
                     artifact_dir=None)
    params = mlflow.MlflowClient(tracking_uri=uri).get_run(run_id).data.params
    assert params["decoding.max_tokens"] == "96"
    assert params["model.api_key_env"] == "OPENAI_API_KEY"
    assert params["model.reasoning_tokens"] == "32768"
    assert "sk-test-never-in-mlflow" not in (tmp_path / "mlflow.db").read_bytes().decode("latin-1")


@pytest.mark.slow
def test_a_key_echoed_at_any_offset_never_leaves_the_process(tmp_path, monkeypatch, caplog, capfd):
    """The server echoes the key in its 401 after N padding characters: wherever the key lands
    relative to the 300-character cut, no piece of it reaches the error, logs or stderr."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("HHX_TEST_KEY", KEY)
    prefix = len("litellm.AuthenticationError: AuthenticationError: OpenAIException - ")
    messages = []
    with FaultServer() as srv:
        for pad in range(CUT - prefix - len(KEY) - 6, CUT - prefix + 6, 3):
            cfg = make_cfg(api_model(srv.url), tmp_path / str(pad))
            user = jobfind_prompt(pad, f" [[fault:401:9]] [[pad:{pad}]]")
            with pytest.raises(PredictorError) as info:
                make_predictor(cfg).predict(TASK, examples_frame([user]))
            messages.append(str(info.value))
    out, err = capfd.readouterr()
    for text in [*messages, caplog.text, out, err]:
        assert not _leaks(text, KEY), text[-200:]
    assert all("auth_error" in m and "HHX_TEST_KEY" in m for m in messages), messages
