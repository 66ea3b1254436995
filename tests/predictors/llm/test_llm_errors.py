"""Deterministic request errors stop the run at once, with one line naming the endpoint and the
fix; the endpoint is probed before the first request; unreachable hosts are named as hosts and
DNS failures are never retried. What the server really received (its own log) is the evidence.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from hhx.errors import PredictorError
from hhx.predictors.base import make_predictor
from hhx.predictors.llm.litellm_backend import LiteLLMTransport
from hhx.predictors.llm.plan import plan_calls
from hhx.predictors.llm.settings import settings_from_config
from hhx.predictors.llm.transport import TransportError
from hhx.tasks.registry import load_task
from tests.helpers.llm_servers import (
    FaultServer,
    api_model,
    examples_frame,
    free_port,
    jobfind_prompt,
    make_cfg,
)

TASK = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
SECRET = "sk-test-HHX-errors-0123456789abcdef"
USERS = [jobfind_prompt(i) for i in range(6)]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("HHX_TEST_KEY", SECRET)


def _stop_message(cfg, users=USERS) -> str:
    with pytest.raises(PredictorError) as info:
        make_predictor(cfg).predict(TASK, examples_frame(users))
    message = str(info.value)
    assert "\n" not in message and SECRET not in message
    return message


@pytest.mark.parametrize(
    ("fault", "kind", "fix"),
    [
        ("401", "auth_error", "HHX_TEST_KEY"),
        ("403", "permission_denied", "model.model_id"),
        ("404", "not_found", "model.model_id"),
        ("400", "bad_request", "model.supports_top_k=false"),
        ("422", "bad_request", "decoding.seed=null"),
        ("500invalid", "bad_request", "decoding.max_tokens"),
    ],
)
def test_a_deterministic_error_stops_the_run_after_one_request(tmp_path, fault, kind, fix):
    users = [jobfind_prompt(i, f" [[fault:{fault}:99]]") for i in range(6)]
    with FaultServer() as srv:
        # Four workers: the first request still goes alone, so exactly one is ever sent.
        cfg = make_cfg(api_model(srv.url, max_concurrency=4), tmp_path)
        message = _stop_message(cfg, users)
        assert len(srv.snapshot()) == 1, srv.snapshot()  # not retried, nothing else sent
    assert kind in message and srv.url in message and "fix:" in message and fix in message, message


def test_a_server_rejecting_the_json_schema_style_names_the_setting(tmp_path):
    # llama-cpp-python's server answers HTTP 500 to OpenAI-style json_schema.
    with FaultServer(llamacpp_schema=True) as srv:
        cfg = make_cfg(api_model(srv.url, max_concurrency=4, supports_json_schema=True,
                                 constrained_decoding=True), tmp_path)
        started = time.monotonic()
        message = _stop_message(cfg)
        assert len(srv.snapshot()) == 1
        assert "model.json_schema_style=llamacpp" in message and srv.url in message
        assert time.monotonic() - started < 10
        # With the setting it names, the same server answers.
        cfg.model.json_schema_style = "llamacpp"
        rows = make_predictor(cfg).predict(TASK, examples_frame(USERS[:2]))
        assert [r.details["status"] for r in rows] == ["ok", "ok"]
        assert {e["response_format"] for e in srv.snapshot()[1:]} == {"json_object"}


def test_a_dead_port_is_named_at_once_and_nothing_is_sent(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    cfg = make_cfg(api_model(url, max_retries=6, retry_base_s=1.0), tmp_path)
    started = time.monotonic()
    message = _stop_message(cfg)
    assert time.monotonic() - started < 5  # no backoff over 7 attempts
    assert "connection refused" in message and f"127.0.0.1:{url.split(':')[2][:-3]}" in message
    assert "model.api_base" in message and "litellm" not in message


def test_a_host_name_that_does_not_resolve_is_named_and_not_retried(tmp_path):
    url = "http://hhx-no-such-host.invalid:8000/v1"
    cfg = make_cfg(api_model(url, max_retries=6), tmp_path)
    message = _stop_message(cfg)
    assert "hhx-no-such-host.invalid" in message and "resolve" in message
    assert "litellm" not in message


def test_an_api_provider_offline_is_named_by_its_host(tmp_path, monkeypatch):
    # gpt_5_mini with a bogus key and no way to the provider: the host is named, not "litellm".
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-bogus-offline-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.hhx-offline.invalid/v1")
    message = _stop_message(make_cfg("gpt_5_mini", tmp_path, decoding="provider_default"))
    assert "api.openai.hhx-offline.invalid" in message and "litellm" not in message


def test_a_dns_failure_during_a_request_is_fatal_not_a_server_error(tmp_path):
    """litellm reports a name that does not resolve as HTTP 500 "Connection error."; the chain
    holds the socket.gaierror, which makes it a dns_error (fatal, never retried)."""
    cfg = make_cfg(api_model("http://hhx-no-such-host.invalid:8000/v1"), tmp_path)
    settings = settings_from_config(cfg)
    transport = LiteLLMTransport(settings)  # the request itself, past the probe
    call = plan_calls([[{"role": "user", "content": "hi"}]], settings, transport.identity())[0][0]
    import asyncio

    with pytest.raises(TransportError) as info:
        asyncio.run(transport.send(call))
    assert info.value.kind == "dns_error" and info.value.fatal and not info.value.retryable


def test_a_key_the_endpoint_refuses_is_caught_by_the_free_probe(tmp_path):
    """An endpoint whose model list needs a key refuses it before any chat request is sent."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    chats = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = b'{"error": {"message": "invalid api key ' + SECRET.encode() + b'"}}'
            self.send_response(401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            chats.append(self.path)
            self.send_response(500)
            self.end_headers()

    port = free_port()
    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        cfg = make_cfg(api_model(f"http://127.0.0.1:{port}/v1"), tmp_path)
        message = _stop_message(cfg)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert chats == [] and "401" in message and "HHX_TEST_KEY" in message


def test_an_endpoint_that_never_answers_stops_after_three_calls(tmp_path):
    """Retryable failures on every call, nothing ever answered: the run stops (it does not grind
    through every example) and says the answers so far are cached."""
    users = [jobfind_prompt(i, " [[fault:500:99]]") for i in range(20)]
    with FaultServer() as srv:
        cfg = make_cfg(api_model(srv.url, max_retries=1, max_concurrency=4), tmp_path)
        message = _stop_message(cfg, users)
        assert len({e["rid"] for e in srv.snapshot()}) == 3  # three calls, then the stop
    assert "no request has succeeded" in message and "rerun" in message


def test_probe_names_a_silent_host(tmp_path, monkeypatch):
    """A port that accepts nothing within the connect timeout is named as a host that does not
    answer (a listening socket with a full backlog stands in for a firewalled host)."""
    import hhx.predictors.llm.probe as probe

    monkeypatch.setattr(probe, "CONNECT_TIMEOUT_S", 0.5)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen(0)
        port = blocker.getsockname()[1]
        fillers = []
        for _ in range(8):  # fill the backlog so further connects hang
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            fillers.append(s)
        ep = probe.Endpoint(f"http://127.0.0.1:{port}/v1", "127.0.0.1", port, "bearer")
        try:
            probe.check_reachable(ep, "check model.api_base")
        except PredictorError as exc:
            assert "does not answer" in str(exc) or "connect" in str(exc)
        else:  # some kernels accept past a zero backlog; nothing to assert there
            pytest.skip("this kernel accepts connections beyond the backlog")
        finally:
            for s in fillers:
                s.close()


def test_the_app_stops_on_a_name_that_does_not_resolve_within_seconds(tmp_path):
    """The whole command, as a user types it: the endpoint is checked before the release is read,
    MLflow is opened or litellm is imported, so the one-line stop comes within seconds (no build
    either: the folder holds no data)."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "hhx", "task=labor_cps_jobfind", "model=openai_compatible",
         "model.api_base=http://hhx-no-such-host.invalid:8000/v1", "model.name=served"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    elapsed = time.monotonic() - started
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert lines[-1].startswith("hhx: error: host hhx-no-such-host.invalid")
    assert not (tmp_path / "data").exists() and not (tmp_path / "mlflow.db").exists()
    assert elapsed < 10, elapsed


def test_a_resolver_that_never_answers_is_named_within_its_deadline(tmp_path, monkeypatch):
    import hhx.predictors.llm.probe as probe

    monkeypatch.setattr(probe, "DNS_TIMEOUT_S", 0.5)
    monkeypatch.setattr(probe.socket, "getaddrinfo", lambda *a, **k: time.sleep(30))
    ep = probe.Endpoint("http://slow-dns.example:8000/v1", "slow-dns.example", 8000, "bearer")
    started = time.monotonic()
    with pytest.raises(PredictorError, match="did not resolve within"):
        probe.check_reachable(ep, "check model.api_base")
    assert time.monotonic() - started < 2


def test_many_silent_addresses_share_one_connect_deadline(monkeypatch):
    """A name resolving to several addresses that all swallow the SYN costs one connect timeout,
    not one per address (the audit's 48-59 s stop)."""
    import hhx.predictors.llm.probe as probe

    monkeypatch.setattr(probe, "CONNECT_TIMEOUT_S", 0.5)

    def silent(address):  # what a firewalled address does: nothing, until the timeout
        time.sleep(probe.CONNECT_TIMEOUT_S)
        return TimeoutError("timed out")

    monkeypatch.setattr(probe, "_connect", silent)
    addresses = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (f"192.0.2.{i}", 80))
                 for i in range(1, 9)]
    started = time.monotonic()
    failure = probe._connect_any(addresses)
    assert isinstance(failure, TimeoutError)
    assert time.monotonic() - started < 1.5
