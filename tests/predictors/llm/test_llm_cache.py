"""The response cache: keys that tell requests apart, isolation across models and endpoints
(checked by what the servers really receive), and several processes writing at once."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
import types

import pytest

from hhx.predictors.base import make_predictor
from hhx.predictors.llm.cache import ResponseCache
from hhx.predictors.llm.plan import plan_calls
from hhx.predictors.llm.settings import settings_from_config
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


# --------------------------------------------------------------------------------------------
# Single flight across processes, and a full disk


_JOB = textwrap.dedent(
    """
    import json, os, sys, time, types
    sys.path.insert(0, sys.argv[3])
    from tests.helpers.llm_servers import api_model, examples_frame, jobfind_prompt, make_cfg
    from hhx.predictors.base import make_predictor
    from hhx.tasks.registry import load_task
    url, cache, _, flags, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    timeout_s = float(os.environ.get("JOB_TIMEOUT_S", "60"))
    cfg = make_cfg(api_model(url, max_concurrency=4, timeout_s=timeout_s, max_retries=8), cache)
    task = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
    predictor = make_predictor(cfg).fit(task)
    open(os.path.join(flags, f"ready-{os.getpid()}"), "w").close()
    while not os.path.exists(os.path.join(flags, "go")):
        time.sleep(0.01)
    users = [jobfind_prompt(i) for i in range(n)]
    if os.environ.get("JOB_SHUFFLE"):  # each job asks in its own order: more overlap in flight
        __import__("random").Random(os.getpid()).shuffle(users)
    rows = predictor.predict(task, examples_frame(users))
    print(json.dumps({"predictions": [r.prediction for r in rows],
                      "sent": predictor.run_metrics().get("llm/requests_sent", 0)}))
    """
)


def _start_jobs(url, cache, flags, count, n, **env_extra):
    env = {**os.environ, "PYTHONPATH": str(REPO), "HHX_TEST_KEY": "sk-test-single-flight",
           **env_extra}
    flags.mkdir(exist_ok=True)
    return [
        subprocess.Popen([sys.executable, "-c", _JOB, url, str(cache), str(REPO / "tests"),
                          str(flags), str(n)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(count)
    ]


def _go_when_ready(procs, flags, timeout_s=900):
    import time

    deadline = time.monotonic() + timeout_s
    while len(list(flags.glob("ready-*"))) < len(procs):
        assert time.monotonic() < deadline, "jobs did not start"
        for proc in procs:
            assert proc.poll() is None, proc.communicate()[1][-2000:]
        time.sleep(0.05)
    (flags / "go").touch()


def _results(procs) -> list[dict]:
    """Each job's last output line (JSON), once every job ended without error."""
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    return outs


def _settled(srv, ceiling_s: float = 300.0) -> list[dict]:
    """The server's log once no request is still pending (bounded by readiness, not a sleep)."""
    deadline = time.monotonic() + ceiling_s
    while any(e["status"] == "pending" for e in srv.snapshot()):
        assert time.monotonic() < deadline, "requests still pending at the server"
        time.sleep(0.2)
    return srv.snapshot()


@pytest.mark.heavy  # subprocesses
def test_parallel_identical_jobs_pay_each_request_once(tmp_path):
    n = 12
    with FaultServer(latency_s=0.4) as srv:
        procs = _start_jobs(srv.url, tmp_path / "cache", tmp_path / "flags", 3, n)
        _go_when_ready(procs, tmp_path / "flags")
        outs = _results(procs)
        log = srv.snapshot()
    answered = srv.successes()
    assert len(answered) == n and set(answered.values()) == {1}  # each request paid once
    assert len(log) == n
    assert sum(o["sent"] for o in outs) == n  # the work was shared, not repeated
    assert all(o["predictions"] == ['["unemployed"]'] * n for o in outs)


def test_parallel_jobs_under_faults_and_time_outs_pay_each_request_at_most_once(tmp_path):
    """Five jobs on one cache against a server failing a quarter of its requests (500, 429,
    malformed bodies, hangs past the client's 1.5 s time-out), each job asking in its own order:
    every prompt is answered in every job, and the server delivers each answer once (a hung
    request answered after the client gave up is not delivered). The jobs themselves load the
    two cores, which is what used to make a delivered answer miss its deadline and be re-sent."""
    n = 30
    kinds = ("500", "429", "malformed", "hang")
    with FaultServer(fault_rate=0.25, fault_kinds=kinds, seed=7, retry_after="0",
                     hang_s=5.0) as srv:
        procs = _start_jobs(srv.url, tmp_path / "cache", tmp_path / "flags", 5, n,
                            JOB_TIMEOUT_S="1.5", JOB_SHUFFLE="1")
        _go_when_ready(procs, tmp_path / "flags")
        outs = _results(procs)
        log = _settled(srv)  # the hung requests answered late: the server's log is complete
    answered = srv.successes()
    assert len(answered) == n
    assert set(answered.values()) == {1}, {k: v for k, v in answered.items() if v > 1}
    assert {e["fault"] for e in log} >= {"500", "hang"}  # the faults really happened
    assert all(o["predictions"] == ['["unemployed"]'] * n for o in outs)


@pytest.mark.heavy  # subprocesses
def test_a_killed_owners_claims_are_taken_over_at_once(tmp_path):
    import signal
    import time

    n = 4
    with FaultServer(latency_s=30.0) as srv:  # the first job's requests hang in flight
        (first,) = _start_jobs(srv.url, tmp_path / "cache", tmp_path / "f1", 1, n)
        _go_when_ready([first], tmp_path / "f1")
        while len(srv.snapshot()) < 1:
            assert first.poll() is None, first.communicate()[1][-2000:]
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
        srv.latency_s = 0.0
        started = time.monotonic()
        (second,) = _start_jobs(srv.url, tmp_path / "cache", tmp_path / "f2", 1, n)
        _go_when_ready([second], tmp_path / "f2")
        out, err = second.communicate(timeout=600)
        assert second.returncode == 0, err[-2000:]
    # Not the 30 s lease: the dead owner's process is gone, its claim is taken over.
    assert json.loads(out.strip().splitlines()[-1])["predictions"] == ['["unemployed"]'] * n
    assert time.monotonic() - started < 120


def test_a_call_claimed_by_a_live_process_is_waited_for_not_sent(tmp_path):
    cache_path = tmp_path / "c.sqlite"
    other = ResponseCache(cache_path)
    mine = ResponseCache(cache_path)
    assert other.claim("k") == "mine"
    assert mine.claim("k") == "busy"  # a live owner (this very process, another connection)
    other.put("k", {"choices": [{"text": "x", "finish_reason": "stop"}]}, "t", "m")
    assert mine.claim("k") == "answered"
    assert other.claim("k2") == "mine"
    other.release(["k2"])
    assert mine.claim("k2") == "mine"
    expired = ResponseCache(cache_path, lease_s=-1.0)  # its claims are born expired
    assert expired.claim("k3") == "mine" and mine.claim("k3") == "mine"
    for c in (other, mine, expired):
        c.close()


_FULL_DISK = textwrap.dedent(
    """
    import json, os, sqlite3, sys, types
    sys.path.insert(0, sys.argv[3])
    from tests.helpers.llm_servers import api_model, examples_frame, jobfind_prompt, make_cfg
    from hhx.errors import PredictorError
    from hhx.predictors.base import make_predictor
    from hhx.predictors.llm import cache as cache_mod
    from hhx.tasks.registry import load_task
    url, small = sys.argv[1], sys.argv[2]
    cache_mod.RESERVE_BYTES = 256 << 10
    cfg = make_cfg(api_model(url, max_concurrency=4), small)
    task = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
    predictor = make_predictor(cfg).fit(task)
    predictor.cache()  # the database and its reserve exist before the disk fills
    filler = os.path.join(small, "filler")
    with open(filler, "wb", buffering=0) as fh:  # fill the file system, then give back 48 KiB
        try:
            while True:
                fh.write(b"x" * 4096)
        except OSError:
            pass
    os.truncate(filler, max(0, os.path.getsize(filler) - (48 << 10)))
    error = None
    try:
        predictor.predict(task, examples_frame([jobfind_prompt(i) for i in range(60)]))
    except PredictorError as exc:
        error = str(exc)
    predictor.close()
    os.remove(filler)
    with sqlite3.connect(os.path.join(small, "llm_responses.sqlite")) as db:
        rows = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    print(json.dumps({"error": error, "rows": rows}))
    """
)


def _mount_tmpfs_cmd(target) -> list[str] | None:
    """A command prefix running a program with a 2 MiB tmpfs mounted at target (a private mount
    namespace; root, or an unprivileged user namespace), or None where this is impossible."""
    import shutil

    if shutil.which("unshare") is None:
        return None
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=2m tmpfs {target}"],
        capture_output=True,
    )
    if probe.returncode != 0:
        return None
    return ["unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o size=2m tmpfs {target} && exec "$@"',
            "sh"]


@pytest.mark.heavy  # subprocesses
def test_a_full_disk_stops_the_run_and_loses_no_paid_answer(tmp_path):
    """A real small file system (tmpfs, 2 MiB) under the cache fills up mid-run."""
    small = tmp_path / "small"
    small.mkdir()
    prefix = _mount_tmpfs_cmd(small)
    if prefix is None:
        pytest.skip("cannot mount a tmpfs here (no user namespaces); see the simulated test")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HHX_TEST_KEY": "sk-test-disk-full"}
    with FaultServer(latency_s=0.05) as srv:
        proc = subprocess.run([*prefix, sys.executable, "-c", _FULL_DISK, srv.url, str(small),
                               str(REPO / "tests")], env=env, capture_output=True, text=True,
                              timeout=600)
        answered = srv.successes()
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["error"] and "full" in result["error"] and "\n" not in result["error"]
    assert 0 < len(answered) < 60  # it stopped part-way...
    assert result["rows"] == len(answered)  # ...and every answer the server gave is stored


def test_a_full_disk_simulated_at_the_write(tmp_path, monkeypatch):
    """The same guarantee where no small file system can be mounted: the insert raises SQLite's
    SQLITE_FULL error until the reserve is given up (as a real full disk does)."""
    import sqlite3

    from hhx.errors import PredictorError
    from hhx.predictors.llm import cache as cache_mod

    monkeypatch.setenv("HHX_TEST_KEY", "sk-test-disk-full")
    original = cache_mod.ResponseCache._insert_locked
    state = {"writes": 0}

    def insert(self, row):
        state["writes"] += 1
        if state["writes"] > 5 and self.reserve_path.exists():
            raise sqlite3.OperationalError("database or disk is full")
        return original(self, row)

    monkeypatch.setattr(cache_mod.ResponseCache, "_insert_locked", insert)
    with FaultServer(latency_s=0.05) as srv:
        cfg = make_cfg(api_model(srv.url, max_concurrency=4), tmp_path)
        predictor = make_predictor(cfg)
        with pytest.raises(PredictorError, match="full") as info:
            predictor.predict(TASK, examples_frame([jobfind_prompt(i) for i in range(40)]))
        predictor.close()
        answered = srv.successes()
    assert "\n" not in str(info.value) and "rerun the same command" in str(info.value)
    assert 5 < len(answered) < 40
    assert len(ResponseCache(tmp_path / "llm_responses.sqlite")) == len(answered)
