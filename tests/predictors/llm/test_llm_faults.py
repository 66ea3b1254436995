"""The litellm predictor against a fault-injecting OpenAI-compatible server on loopback.

What the server really received (its own log) is the evidence: retries happen where they should,
a successful request is never sent twice, fatal errors stop the run at once, a killed run
resumes with only the missing requests, keys never leak, the budget is never exceeded.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import types

import pytest

from hhx.errors import PredictorError
from hhx.predictors.base import make_predictor
from hhx.predictors.llm import engine as engine_module
from hhx.predictors.llm.cache import CACHE_FILE
from hhx.predictors.llm.transport import RateLimiter
from hhx.tasks.registry import load_task
from tests.conftest import REPO
from tests.helpers.llm_servers import (
    FaultServer,
    api_model,
    examples_frame,
    jobfind_prompt,
    make_cfg,
)

TASK = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
SECRET = "sk-test-HHX-9f8e7d6c5b4a3210"


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("HHX_TEST_KEY", SECRET)


def _predict(cfg, users):
    predictor = make_predictor(cfg)
    rows = predictor.predict(TASK, examples_frame(users))
    return predictor, rows


@pytest.mark.slow
def test_faults_are_retried_or_recorded_and_no_success_is_repeated(tmp_path):
    users = [
        jobfind_prompt(0),
        jobfind_prompt(1, " [[fault:429:2]]"),
        jobfind_prompt(2, " [[fault:500:1]]"),
        jobfind_prompt(3, " [[fault:hang:1]]"),
        jobfind_prompt(4, " [[fault:malformed:1]]"),
        jobfind_prompt(5, " [[fault:truncated:1]]"),
        jobfind_prompt(6, " [[fault:500:99]]"),  # never recovers: given up after the retries
    ]
    with FaultServer(retry_after="0.3", hang_s=4.0) as srv:
        cfg = make_cfg(api_model(srv.url, timeout_s=2.0, max_retries=3), tmp_path)
        predictor, rows = _predict(cfg, users)
        first_log = srv.snapshot()

        statuses = [r.details["status"] for r in rows]
        assert statuses == ["ok"] * 6 + ["failed"]
        assert rows[6].prediction is None and rows[6].details["failure"] == "server_error"
        assert [r.prediction for r in rows[:5]] == ['["unemployed"]'] * 5
        # The cut answer was asked again with 4x the budget; cut again (the server cuts the first
        # attempt of every distinct request), it is kept with its finish_reason, parsed invalid.
        trunc = rows[5].details["draws"][0]
        assert trunc["finish_reason"] == "length" and trunc["valid"] is False and trunc["truncated"]
        assert rows[5].prediction == trunc["raw"] and trunc["error"]
        assert trunc["retried_after_cut"]["retry_max_tokens"] == 4 * trunc["max_tokens"]
        sent_budgets = sorted(e["max_tokens"] for e in first_log if e["user"] == users[5])
        assert sent_budgets == [trunc["max_tokens"], 4 * trunc["max_tokens"]]

        by_user = {}
        for entry in first_log:
            by_user.setdefault(entry["user"], []).append(entry)
        rate_limited = sorted(by_user[users[1]], key=lambda e: e["attempt"])
        assert [e["status"] for e in rate_limited] == [429, 429, 200]
        gaps = [b["t"] - a["t"] for a, b in zip(rate_limited, rate_limited[1:])]
        assert min(gaps) >= 0.3  # Retry-After honoured (retry_base_s alone would be 10 ms)
        assert len(by_user[users[6]]) == 4  # 1 try + max_retries

        metrics = predictor.run_metrics()
        assert metrics["llm/error/rate_limited"] == 2
        assert metrics["llm/error/server_error"] == 1 + 4
        assert metrics["llm/error/timeout"] == 1
        assert metrics["llm/error/malformed_response"] == 1
        assert metrics["llm/failed/server_error"] == 1
        assert metrics["llm/finish_reason/length"] == 2
        assert metrics["llm/truncation_retries"] == 1 and metrics["llm/draws_truncated"] == 1
        assert metrics["llm/draws_missing"] == 1
        assert metrics["llm/requests_sent"] == len(first_log)
        assert metrics["llm/responses_ok"] == 7  # six answers and the larger-budget retry
        assert metrics["llm/draw_valid_rate"] == pytest.approx(5 / 7)

        # Rerun: only the failed item is asked again; no successful request is ever repeated.
        predictor2, rows2 = _predict(cfg, users)
        new = srv.snapshot()[len(first_log):]
        assert {e["user"] for e in new} == {users[6]}
        assert all(n == 1 for n in srv.successes().values())
        assert predictor2.run_metrics()["llm/cache_hits"] == 7  # the retry is cached too
        assert [r.prediction for r in rows2[:6]] == [r.prediction for r in rows[:6]]



def test_api_key_never_leaks(tmp_path, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    with FaultServer() as srv:
        cfg = make_cfg(api_model(srv.url), tmp_path)
        predictor, rows = _predict(cfg, [jobfind_prompt(i) for i in range(3)])
        saved = predictor.save(tmp_path / "run")
        with pytest.raises(PredictorError) as info:  # the server echoes the key in its 401
            _predict(cfg, [jobfind_prompt(9, " [[fault:401:1]]")])
        # The key was really sent (the server saw it), so its absence below means something.
        assert {e["auth_sha"] for e in srv.snapshot()} == {
            hashlib.sha256(SECRET.encode()).hexdigest()[:16]
        }
    predictor.close()
    out, err = capfd.readouterr()
    texts = {
        "error": str(info.value),
        "details": json.dumps([r.details for r in rows]),
        "metrics": json.dumps(predictor.run_metrics()),
        "saved": "".join(p.read_text() for p in saved),
        "logs": caplog.text,
        "stdout": out,
        "stderr": err,
    }
    for name, text in texts.items():
        assert SECRET not in text, name
    for path in tmp_path.glob(f"{CACHE_FILE}*"):  # the database and its WAL
        assert SECRET.encode() not in path.read_bytes(), path.name
    assert "HHX_TEST_KEY" in texts["saved"]  # the variable's name is recorded, not its value


def test_budget_stops_the_run_before_it_is_exceeded(tmp_path):
    price = 1e-4  # per token, in and out
    users = [jobfind_prompt(i) for i in range(12)]
    with FaultServer() as srv:
        cfg = make_cfg(
            api_model(srv.url, input_cost_per_token=price, output_cost_per_token=price,
                      max_cost_usd=0.05, max_concurrency=4),
            tmp_path,
        )
        cfg.decoding.max_tokens = 10
        predictor, rows = _predict(cfg, users)
        sent = srv.snapshot()
    ok = [r for r in rows if r.details["status"] == "ok"]
    failed = [r for r in rows if r.details["status"] == "failed"]
    spent = sum(r.details["cost_usd"] for r in ok)
    # The server bills 50 prompt + 5 completion tokens a request (completion_body).
    assert spent == pytest.approx(len(sent) * 55 * price)
    assert spent <= 0.05
    assert ok and failed  # it ran, then stopped cleanly
    assert {r.details["failure"] for r in failed} == {"budget_exhausted"}
    assert all(r.prediction is None for r in failed)
    assert len(sent) == len(ok)
    assert predictor.run_metrics()["llm/failed/budget_exhausted"] == len(failed)


def test_k_draws_use_n_when_supported_else_seeds(tmp_path):
    def by_seed(body):  # two seeds, two labels: a 1-1 tie
        return '["not_in_labor_force"]' if body.get("seed") == 42 else '["employed"]'

    users = [jobfind_prompt(i) for i in range(2)]
    with FaultServer(answer_fn=by_seed) as srv:
        cfg = make_cfg(api_model(srv.url), tmp_path, aggregation="k2")
        _, rows = _predict(cfg, users)
        log = srv.snapshot()
        assert sorted((e["seed"], e["n"]) for e in log) == [(42, None), (42, None), (43, None),
                                                            (43, None)]
        # A 1-1 tie: first_draw keeps draw 0's label, label_order the label listed first.
        assert [r.prediction for r in rows] == [["not_in_labor_force"]] * 2
        cfg.aggregation.tie_rule = "label_order"
        cfg.paths.cache_dir = str(tmp_path / "other")
        _, rows = _predict(cfg, users)
        assert [r.prediction for r in rows] == [["employed"]] * 2
    with FaultServer(answer_fn=by_seed) as srv:
        cfg = make_cfg(api_model(srv.url, supports_n=True), tmp_path, aggregation="k2")
        _, rows = _predict(cfg, users)
        assert sorted((e["seed"], e["n"]) for e in srv.snapshot()) == [(42, 2), (42, 2)]
        assert all(r.details["n_valid"] == 2 for r in rows)
    # A server that ignores n: the missing draw is recorded and counted; by default (min_draws
    # null) an answer needs every draw back, so the example stays unanswered...
    with FaultServer(honour_n=False) as srv:
        cfg = make_cfg(api_model(srv.url, supports_n=True), tmp_path / "x", aggregation="k2")
        predictor, rows = _predict(cfg, users[:1])
        draws = rows[0].details["draws"]
        assert draws[1]["failed"] == "missing_choice" and draws[0]["valid"]
        assert rows[0].prediction is None and rows[0].details["failure"] == "draws_missing"
        assert rows[0].details["draws_missing"] == 1
        metrics = predictor.run_metrics()
        assert metrics["llm/draws_missing"] == 1 and metrics["llm/examples_incomplete"] == 1
        assert metrics["llm/draw_coverage"] == 0.5
        # ...while min_draws=1 makes one valid draw an answer.
        cfg.aggregation.min_draws = 1
        _, rows = _predict(cfg, users[:1])
        assert rows[0].prediction == ["unemployed"] and rows[0].details["draws_missing"] == 1


def test_all_invalid_draws_give_the_first_raw_text(tmp_path):
    users = [jobfind_prompt(0, " [[answer:I think employed]]")]
    with FaultServer() as srv:
        cfg = make_cfg(api_model(srv.url), tmp_path, aggregation="k2")
        _, rows = _predict(cfg, users)
    assert rows[0].prediction == "I think employed"
    assert rows[0].details["n_valid"] == 0 and rows[0].details["n_answered"] == 2


def test_rate_limiter_schedule_spaces_starts_evenly():
    # A frozen clock: every caller arrives "at once"; the waits must still be 0, 0.1, 0.2, ...
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    async def five_at_once() -> None:
        limiter = RateLimiter(600, clock=lambda: 100.0, sleep=fake_sleep)
        await asyncio.gather(*(limiter.wait() for _ in range(5)))

    asyncio.run(five_at_once())
    assert sorted(waits) == pytest.approx([0.1, 0.2, 0.3, 0.4])  # the first starts at once
    # No limit: nobody waits.
    waits.clear()
    asyncio.run(RateLimiter(None, clock=lambda: 100.0, sleep=fake_sleep).wait())
    assert waits == []


def test_requests_per_minute_gates_every_request_the_server_sees(tmp_path, monkeypatch):
    # The engine's limiter runs on a recording clock: each request start gets a scheduled slot,
    # and the slots are one interval apart however loaded the machine is.
    slots: list[float] = []

    class Recording(RateLimiter):
        def __init__(self, per_minute):
            super().__init__(per_minute, clock=lambda: 0.0, sleep=self._record)

        async def _record(self, seconds: float) -> None:
            slots.append(seconds)

    monkeypatch.setattr(engine_module, "RateLimiter", Recording)
    with FaultServer() as srv:
        cfg = make_cfg(api_model(srv.url, requests_per_minute=600, max_concurrency=8), tmp_path)
        _, rows = _predict(cfg, [jobfind_prompt(i) for i in range(5)])
        completions = srv.snapshot()  # the server logs every chat request it receives
    assert all(r.prediction is not None for r in rows)
    assert len(slots) == len(completions) - 1 == 4  # every request but the first waited its turn
    assert sorted(slots) == pytest.approx([0.1, 0.2, 0.3, 0.4])


_KILLED_RUN = textwrap.dedent(
    """
    import sys, types
    sys.path.insert(0, sys.argv[3])
    from tests.helpers.llm_servers import api_model, examples_frame, jobfind_prompt, make_cfg
    from hhx.predictors.base import make_predictor
    from hhx.tasks.registry import load_task
    cfg = make_cfg(api_model(sys.argv[1], max_concurrency=2), sys.argv[2])
    task = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
    make_predictor(cfg).predict(task, examples_frame([jobfind_prompt(i) for i in range(16)]))
    """
)


@pytest.mark.heavy  # a subprocess, killed and rerun
def test_a_killed_run_resumes_with_only_the_missing_requests(tmp_path):
    with FaultServer(latency_s=0.2) as srv:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen(
            [sys.executable, "-c", _KILLED_RUN, srv.url, str(tmp_path), str(REPO / "tests")],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while len(srv.successes()) < 6 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.3)  # let the server threads finish logging what they answered
        before = srv.snapshot()
        before_ok = {e["rid"] for e in before if e["status"] == 200}
        assert 6 <= len(before_ok) < 16  # killed half-way
        with sqlite3.connect(tmp_path / CACHE_FILE) as db:
            cached = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        # Answers are committed as they arrive: at most the requests in flight (2) were
        # answered by the server but not yet stored when the process died.
        assert len(before_ok) - 2 <= cached <= len(before_ok)

        cfg = make_cfg(api_model(srv.url, max_concurrency=2), tmp_path)
        predictor, rows = _predict(cfg, [jobfind_prompt(i) for i in range(16)])
        after = srv.snapshot()[len(before):]
    assert len(after) == 16 - cached  # only what the cache lacked
    # Re-sent answered requests are exactly those answered but not yet committed at the kill.
    assert len({e["rid"] for e in after} & before_ok) == len(before_ok) - cached
    assert all(r.details["status"] == "ok" for r in rows)
    assert predictor.run_metrics()["llm/cache_hits"] == cached


@pytest.mark.slow
@pytest.mark.parametrize("rate", [0.2, 0.5])
def test_random_faults_with_hangs_lose_nothing_and_repeat_no_success(tmp_path, rate):
    """A share of all attempts fails at random (HTTP 500, 429, hangs past the timeout)."""
    users = [jobfind_prompt(i) for i in range(24)]
    with FaultServer(fault_rate=rate, seed=int(rate * 100), retry_after="0", hang_s=1.5) as srv:
        cfg = make_cfg(api_model(srv.url, timeout_s=1.0, max_retries=6, max_concurrency=4),
                       tmp_path)
        predictor, rows = _predict(cfg, users)
        first = srv.snapshot()
        ok = [r for r in rows if r.details["status"] == "ok"]
        assert len(ok) >= 22  # a call fails only after 7 faults in a row
        assert all(r.prediction == '["unemployed"]' for r in ok)
        assert all(n == 1 for n in srv.successes().values())  # no answered request sent again
        metrics = predictor.run_metrics()
        assert metrics["llm/requests_sent"] == len(first)
        assert metrics["llm/responses_ok"] == len(srv.successes()) == len(ok)
        # A rerun asks only for what failed.
        _, again = _predict(cfg, users)
        assert {e["user"] for e in srv.snapshot()[len(first):]} <= {
            users[i] for i, r in enumerate(rows) if r.details["status"] != "ok"}
        assert all(n == 1 for n in srv.successes().values())
