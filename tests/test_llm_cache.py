"""The response cache: keys that tell requests apart, isolation across models and endpoints
(checked by what the servers really receive), and several processes writing at once."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import types

import pytest
from conftest import REPO
from llm_servers import FaultServer, api_model, examples_frame, jobfind_prompt, make_cfg

from hhx.predictors.base import make_predictor
from hhx.predictors.llm.cache import ResponseCache
from hhx.predictors.llm.plan import plan_calls
from hhx.predictors.llm.settings import settings_from_config
from hhx.tasks.registry import load_task

TASK = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
MESSAGES = [[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]]


def _key(settings, identity=None, messages=MESSAGES, schema=None) -> str:
    identity = identity or {"model_id": settings.model_id, "api_base": settings.api_base}
    return plan_calls(messages, settings, identity, schema)[0][0].key


def test_every_answer_determining_setting_changes_the_key(tmp_path):
    base = settings_from_config(make_cfg(api_model("http://127.0.0.1:1/v1"), tmp_path))
    variants = {
        "model": dataclasses.replace(base, model_id="openai/other"),
        "endpoint": dataclasses.replace(base, api_base="http://127.0.0.1:2/v1"),
        "temperature": dataclasses.replace(base, params={**base.params, "temperature": 0.7}),
        "max_tokens": dataclasses.replace(base, params={**base.params, "max_tokens": 7}),
        "seed": dataclasses.replace(base, seed=7),
        "extra": dataclasses.replace(base, extra={"stop": ["\n"]}),
    }
    keys = {"base": _key(base)}
    for name, settings in variants.items():
        keys[name] = _key(settings)
    keys["messages"] = _key(base, messages=[[{"role": "user", "content": "u2"}]])
    keys["schema"] = _key(base, schema={"type": "array"})
    k2 = dataclasses.replace(base, k=2)
    keys["draw1"] = plan_calls(MESSAGES, k2, {"model_id": base.model_id,
                                              "api_base": base.api_base})[0][1].key
    with_n = dataclasses.replace(base, k=2, use_n=True)
    keys["n2"] = _key(with_n)
    assert len(set(keys.values())) == len(keys), keys
    # Not in the key: the run label, timeouts, concurrency, retries, the key variable's name.
    same = dataclasses.replace(
        base, name="renamed", timeout_s=1.0, max_concurrency=64, max_retries=0,
        api_key_env="OTHER_KEY",
    )
    assert _key(same) == keys["base"]


def test_cache_never_serves_one_models_or_endpoints_answer_for_another(tmp_path, monkeypatch):
    monkeypatch.setenv("HHX_TEST_KEY", "sk-test-cache")
    users = [jobfind_prompt(i) for i in range(3)]
    examples = examples_frame(users)

    def echo_model(body):  # the answer names the model that produced it
        return json.dumps([body["model"]])

    with FaultServer(answer_fn=echo_model) as one, FaultServer(answer_fn=echo_model) as two:
        def run(url, model_id):
            cfg = make_cfg(api_model(url, model_id), tmp_path)
            return [r.prediction for r in make_predictor(cfg).predict(TASK, examples)]

        assert run(one.url, "openai/alpha") == ['["alpha"]'] * 3
        assert run(one.url, "openai/beta") == ['["beta"]'] * 3  # not alpha's cached answers
        assert len(one.snapshot()) == 6
        assert run(one.url, "openai/alpha") == ['["alpha"]'] * 3  # from the cache
        assert len(one.snapshot()) == 6
        # Same model id, another endpoint: a different server, so it must be asked.
        assert run(two.url, "openai/alpha") == ['["alpha"]'] * 3
        assert len(two.snapshot()) == 3


_WRITER = textwrap.dedent(
    """
    import sys, time
    from hhx.predictors.llm.cache import ResponseCache
    path, tag, start_at = sys.argv[1], sys.argv[2], float(sys.argv[3])
    cache = ResponseCache(path)
    while time.time() < start_at:
        time.sleep(0.001)
    for i in range(400):
        cache.put(f"{tag}-{i}", {"choices": [{"text": tag, "finish_reason": "stop"}]}, "t", tag)
        cache.put(f"shared-{i}", {"choices": [{"text": tag, "finish_reason": "stop"}]}, "t", tag)
    print("done")
    """
)


@pytest.mark.slow
def test_two_processes_write_the_cache_at_once(tmp_path):
    import time

    path = tmp_path / "cache.sqlite"
    ResponseCache(path).close()  # create the file (and WAL mode) first, as a run would
    start_at = str(time.time() + 1.5)  # both start writing at the same moment
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag, start_at], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for tag in ("a", "b")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    cache = ResponseCache(path)
    assert len(cache) == 400 * 3  # a-*, b-* and shared-*: nothing lost
    got = cache.get_many([f"a-{i}" for i in range(400)] + [f"b-{i}" for i in range(400)])
    assert all(v["choices"][0]["text"] == k[0] for k, v in got.items())
    assert len(got) == 800
    # A shared key keeps exactly one writer's value (first write wins, never a mix).
    shared = cache.get_many([f"shared-{i}" for i in range(400)])
    assert {v["choices"][0]["text"] for v in shared.values()} <= {"a", "b"}
