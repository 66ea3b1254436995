"""Check an endpoint before the first paid request: the host resolves, the port answers, and (for
OpenAI-style endpoints) the key is accepted by the free `GET /models`.

A failure is one line that names the host (never "litellm"): a name that does not resolve, a port
where nothing listens, a host that does not answer, a refused key. No chat request is sent, so
nothing is paid and nothing is retried.

`preflight` runs the DNS and TCP part first thing in a run, before the release is read, MLflow is
opened or litellm (seconds to import) is loaded: a host that cannot be reached stops the run
within DNS_TIMEOUT_S + CONNECT_TIMEOUT_S of its start. The addresses a name resolves to are tried
at once, under one connect deadline (a name with many unreachable addresses must not cost the
timeout once per address).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from hhx.errors import PredictorError
from hhx.predictors.llm.settings import NO_KEY, LLMSettings
from hhx.secrets import clean_line

DNS_TIMEOUT_S = 4.0
CONNECT_TIMEOUT_S = 4.0
HTTP_TIMEOUT_S = 10.0
# API providers' default endpoints (litellm's provider prefix -> base URL, overridable by the
# variables litellm itself reads) and how their model list is asked for.
PROVIDERS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "openai": ("https://api.openai.com/v1", ("OPENAI_BASE_URL", "OPENAI_API_BASE"), "bearer"),
    "anthropic": ("https://api.anthropic.com/v1", ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"),
                  "anthropic"),
    "deepseek": ("https://api.deepseek.com", ("DEEPSEEK_API_BASE",), "bearer"),
    "mistral": ("https://api.mistral.ai/v1", ("MISTRAL_API_BASE",), "bearer"),
    "groq": ("https://api.groq.com/openai/v1", ("GROQ_API_BASE",), "bearer"),
    "together_ai": ("https://api.together.xyz/v1", ("TOGETHERAI_API_BASE",), "bearer"),
    "openrouter": ("https://openrouter.ai/api/v1", ("OPENROUTER_API_BASE",), "bearer"),
    "xai": ("https://api.x.ai/v1", ("XAI_API_BASE",), "bearer"),
    "gemini": ("https://generativelanguage.googleapis.com", (), "none"),
}


@dataclass
class Endpoint:
    url: str  # base URL (…/v1)
    host: str
    port: int
    auth: str  # "bearer", "anthropic" or "none": how GET /models is authenticated
    served: list[str] = field(default_factory=list)  # model ids the endpoint lists, if any

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"


def endpoint_for(settings: LLMSettings) -> Endpoint | None:
    """The endpoint a litellm model talks to: model.api_base, else its provider's (None: unknown)."""
    if settings.api_base:
        url, auth = settings.api_base, "bearer"
    else:
        provider = settings.model_id.split("/", 1)[0] if "/" in settings.model_id else "openai"
        if provider not in PROVIDERS:
            return None
        default, env_names, auth = PROVIDERS[provider]
        url = next((os.environ[e] for e in env_names if os.environ.get(e)), default)
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Endpoint(url.rstrip("/"), parts.hostname, port, auth)


def _resolve(host: str, port: int) -> list[tuple]:
    # getaddrinfo cannot be given a timeout; a worker thread can be abandoned instead.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        future = pool.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
        return future.result(timeout=DNS_TIMEOUT_S)
    finally:
        pool.shutdown(wait=False)


def _connect(address: tuple) -> OSError | None:
    family, kind, proto, _, sockaddr = address
    try:
        with socket.socket(family, kind, proto) as sock:
            sock.settimeout(CONNECT_TIMEOUT_S)
            sock.connect(sockaddr)
    except OSError as exc:
        return exc
    return None


def _connect_any(addresses: list[tuple]) -> OSError | None:
    """None once any address accepts a connection; else the most telling failure (a refusal
    before a timeout). All addresses are tried at once, within one CONNECT_TIMEOUT_S."""
    if not addresses:
        return OSError("the name resolved to no address")
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(len(addresses), 16))
    failures: list[OSError] = []
    try:
        futures = [pool.submit(_connect, a) for a in addresses]
        try:
            for done in concurrent.futures.as_completed(futures, timeout=CONNECT_TIMEOUT_S + 1):
                error = done.result()
                if error is None:
                    return None
                failures.append(error)
        except concurrent.futures.TimeoutError:
            failures.append(TimeoutError("timed out"))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    refused = [f for f in failures if isinstance(f, ConnectionRefusedError)]
    timed_out = [f for f in failures if isinstance(f, TimeoutError) or "timed out" in str(f)]
    return (refused or timed_out or failures)[0]


def check_reachable(ep: Endpoint, fix: str) -> None:
    """DNS, then a TCP connection; PredictorError naming the host on failure."""
    try:
        addresses = _resolve(ep.host, ep.port)
    except concurrent.futures.TimeoutError:
        raise PredictorError(
            f"host {ep.host}: its name did not resolve within {DNS_TIMEOUT_S:.0f} s (no DNS "
            f"answer: offline?); {fix}"
        ) from None
    except socket.gaierror as exc:
        raise PredictorError(
            f"host {ep.host}: the name does not resolve ({exc.strerror or exc}); {fix}"
        ) from None
    last = _connect_any(addresses)
    if last is None:
        return
    if isinstance(last, ConnectionRefusedError):
        raise PredictorError(
            f"{ep.url}: nothing listens at {ep.where} (connection refused); start the server "
            f"or {fix}"
        )
    if isinstance(last, TimeoutError) or (last is not None and "timed out" in str(last)):
        raise PredictorError(
            f"{ep.url}: host {ep.where} does not answer (no connection within "
            f"{CONNECT_TIMEOUT_S:.0f} s); {fix}"
        )
    raise PredictorError(f"{ep.url}: cannot connect to {ep.where} ({last}); {fix}")


def list_models(ep: Endpoint, key: str | None, key_env: str | None) -> list[str]:
    """GET <base>/models (free): the served model ids; a refused key is a PredictorError."""
    if ep.auth == "none":
        return []
    headers = {"Accept": "application/json"}
    if key and key != NO_KEY:
        if ep.auth == "anthropic":
            headers.update({"x-api-key": key, "anthropic-version": "2023-06-01"})
        else:
            headers["Authorization"] = f"Bearer {key}"
    elif key == NO_KEY:
        headers["Authorization"] = f"Bearer {NO_KEY}"
    request = urllib.request.Request(f"{ep.url}/models", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as resp:
            body = json.loads(resp.read(1 << 20) or b"{}")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            detail = clean_line(exc.read(2000).decode("utf-8", "replace"), [key], 160)
            which = f"the key in {key_env}" if key_env and key != NO_KEY else "a key"
            fix = (f"check {key_env}" if key_env and key != NO_KEY
                   else f"export {key_env or 'the key variable'} with a valid key")
            raise PredictorError(
                f"{ep.url}: HTTP {exc.code}, {which} is refused ({detail}); {fix}"
            ) from None
        return []  # no model list there (404, 405...): the chat request will tell
    except (urllib.error.URLError, OSError, ValueError):
        return []  # reachable (checked above) but no usable list: not an error
    data = body.get("data") if isinstance(body, dict) else None
    return [str(m.get("id")) for m in data or [] if isinstance(m, dict) and m.get("id")]


def _fix(settings: LLMSettings) -> str:
    return ("check model.api_base" if settings.api_base
            else "check the network (or the provider's base-URL variable)")


def _behind_proxy(ep: Endpoint) -> bool:
    scheme = urlsplit(ep.url).scheme or "http"
    proxies = urllib.request.getproxies()
    return (scheme in proxies or "all" in proxies) and not urllib.request.proxy_bypass(ep.host)


def preflight(settings: LLMSettings) -> None:
    """DNS and TCP to the endpoint, before anything slow: PredictorError naming the host."""
    ep = endpoint_for(settings)
    if ep is not None and not _behind_proxy(ep):  # behind a proxy only the proxy resolves
        check_reachable(ep, _fix(settings))


def probe(settings: LLMSettings, key: str | None) -> Endpoint | None:
    """Check the endpoint of a litellm model; returns it (with its served models) or None when
    the provider's endpoint is not known (the first request then tells)."""
    ep = endpoint_for(settings)
    if ep is None:
        return None
    if not _behind_proxy(ep):  # behind a proxy only the proxy resolves and connects
        check_reachable(ep, _fix(settings))
    ep.served = list_models(ep, key, settings.api_key_env)
    return ep
