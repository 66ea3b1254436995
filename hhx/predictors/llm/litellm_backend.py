"""litellm backend: any API provider or OpenAI-compatible server through `litellm.acompletion`.

`model.model_id` is the litellm model string ("openai/gpt-5-mini", "anthropic/claude-...",
"openai/<served name>" with `model.api_base` for a self-hosted server). `model.extra` is passed
to every request as extra keyword arguments. Retries are ours (litellm's and the OpenAI client's
own are switched off), so the retry policy and the request counts are exact.

Before the first request the endpoint is probed (`probe`: DNS, TCP, the free `GET /models`).
litellm reports a name that does not resolve and a refused connection alike, as a "server error"
(HTTP 500, "Connection error."); the exception chain tells them apart, so a DNS failure is named
as such and never retried. Error text is scrubbed of keys before it is cut.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from typing import TYPE_CHECKING, Any

from hhx.predictors.llm.cost import Prices, cost_from_usage, prices_for
from hhx.predictors.llm.deadline import backstop_s
from hhx.predictors.llm.plan import Call
from hhx.predictors.llm.predictor import LLMPredictor
from hhx.predictors.llm.probe import endpoint_for, probe
from hhx.predictors.llm.prompt_variants import variant_from_config
from hhx.predictors.llm.schema import response_format
from hhx.predictors.llm.settings import LLMSettings, read_api_key, settings_from_config
from hhx.predictors.llm.transport import (
    Choice,
    Response,
    TransportError,
    fix_for_request_error,
    kind_for_status,
    retry_after_from_headers,
)
from hhx.secrets import clean_line

if TYPE_CHECKING:
    from hhx.predictors.protocol import PredictorConfig


def import_litellm() -> Any:
    # Without this litellm fetches a price list over the network at import (and retries it in a
    # background thread); the bundled local map is what we price with.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # Imported lazily by the first request otherwise (2-3 s on a busy machine, counted against
    # that request's timeout); at start-up they cost the same and nothing waits on them.
    import litellm._service_logger  # noqa: F401
    import litellm.proxy._types  # noqa: F401
    import openai.resources  # noqa: F401

    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on errors
    # litellm logs one INFO line per request ("LiteLLM completion() model=..."): the progress bar
    # already says what is happening; keep its warnings and errors.
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return litellm


def request_kwargs(settings: LLMSettings, call: Call) -> dict[str, Any]:
    """The acompletion keyword arguments of one call, without the key (added at send time)."""
    kwargs: dict[str, Any] = {"model": settings.model_id, "messages": call.messages}
    for name in ("temperature", "top_p", "top_k", "min_p", "reasoning_effort"):
        if name in settings.params:
            kwargs[name] = settings.params[name]
    if call.max_tokens is not None:
        kwargs["max_tokens"] = call.max_tokens
    if "enable_thinking" in settings.params:
        # vLLM / SGLang servers read chat-template arguments from the request body.
        kwargs["extra_body"] = {
            "chat_template_kwargs": {"enable_thinking": settings.params["enable_thinking"]}
        }
    if call.n > 1:
        kwargs["n"] = call.n
    if call.seed is not None:
        kwargs["seed"] = call.seed
    if call.schema is not None:
        kwargs["response_format"] = response_format(call.schema, settings.json_schema_style)
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    kwargs.update(settings.extra)
    return kwargs


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and everything it was raised from (litellm wraps errors several deep)."""
    out: list[BaseException] = []
    node: BaseException | None = exc
    while node is not None and all(node is not seen for seen in out):
        out.append(node)
        node = node.__cause__ or node.__context__
    return out


def _caused_by_bad_json(exc: BaseException) -> bool:
    return any(isinstance(e, json.JSONDecodeError) for e in _chain(exc))


def _caused_by_dns(exc: BaseException) -> bool:
    """A host name that does not resolve (socket.gaierror somewhere in the chain)."""
    return any(isinstance(e, socket.gaierror) for e in _chain(exc))


def _caused_by_connection(exc: BaseException, openai: Any) -> bool:
    # litellm reports a refused connection as an InternalServerError("Connection error.").
    return any(
        isinstance(e, ConnectionError)
        or (isinstance(e, openai.APIConnectionError) and not isinstance(e, openai.APITimeoutError))
        for e in _chain(exc)
    )


def _body_text(exc: BaseException) -> str:
    """The endpoint's own error text (its JSON body), where litellm kept it."""
    text = str(exc)
    response = getattr(exc, "response", None)
    try:
        body = str(getattr(response, "text", "") or "")
    except Exception:  # a streamed or closed body: the message is all there is
        body = ""
    return f"{text} {body}" if body and body not in text else text


def translate_error(
    litellm: Any, exc: Exception, secret: str | None, openai: Any = None,
    json_schema_style: str | None = None,
) -> TransportError:
    """Map a litellm exception to a TransportError kind; the message is scrubbed of the key
    (whole, before it is cut)."""
    raw = _body_text(exc)
    message = clean_line(raw, [secret])
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    headers = getattr(exc, "litellm_response_headers", None) or getattr(
        getattr(exc, "response", None), "headers", None
    )
    retry_after = retry_after_from_headers(headers)
    ex = litellm.exceptions
    if _caused_by_dns(exc):
        return TransportError("dns_error", f"the host name does not resolve ({message})")
    if status in (401, 403, 404, 429):
        # The status decides: litellm picks its exception class from the message text too (a
        # 401 whose text does not mention a key becomes a BadRequestError).
        return TransportError(kind_for_status(status), message, retry_after, status=status)
    if isinstance(exc, ex.Timeout):
        kind = "timeout"
    elif isinstance(exc, ex.RateLimitError):
        kind = "rate_limited"
    elif isinstance(exc, ex.ContextWindowExceededError):
        kind = "context_window_exceeded"
    elif isinstance(exc, ex.ContentPolicyViolationError):
        kind = "content_filtered"
    elif isinstance(exc, ex.AuthenticationError):
        kind = "auth_error"
    elif isinstance(exc, ex.PermissionDeniedError):
        kind = "permission_denied"
    elif isinstance(exc, ex.NotFoundError):
        kind = "not_found"
    elif isinstance(exc, (ex.BadRequestError, ex.UnprocessableEntityError)):
        kind = "bad_request"
    elif _caused_by_bad_json(exc):
        kind = "malformed_response"
    elif isinstance(exc, ex.APIConnectionError) or (
        openai is not None and _caused_by_connection(exc, openai)
    ):
        kind = "connection_error"
    else:
        kind = kind_for_status(status, raw)
    fix = fix_for_request_error(raw, json_schema_style) if kind == "bad_request" else None
    return TransportError(kind, message, retry_after, status=status, fix=fix)


class LiteLLMTransport:
    backend = "litellm"
    batch = False
    cancellable = True

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        read_api_key(settings)  # a missing key variable fails here, before any request
        self.litellm = import_litellm()
        import openai  # a litellm dependency; its APIError is the root of litellm's errors

        self.openai = openai
        self.prices: Prices = prices_for(
            settings.model_id, settings.input_cost_per_token, settings.output_cost_per_token
        )
        ep = endpoint_for(settings)
        self.endpoint = ep.url if ep is not None else settings.model_id

    def probe(self) -> list[str]:
        """Check the endpoint before the first request; the models it serves (when it lists)."""
        found = probe(self.settings, read_api_key(self.settings))
        return found.served if found is not None else []

    def identity(self) -> dict[str, Any]:
        return {"model_id": self.settings.model_id, "api_base": self.settings.api_base}

    def _cost(self, raw: Any, prompt_tokens: int, completion_tokens: int) -> float:
        if self.prices.source == "litellm":
            try:
                return float(self.litellm.completion_cost(completion_response=raw))
            except Exception:  # unmapped variant: fall back to the per-token prices we know
                pass
        return cost_from_usage(self.prices, prompt_tokens, completion_tokens)

    async def send(self, call: Call) -> Response:
        kwargs = request_kwargs(self.settings, call)
        key = read_api_key(self.settings)
        try:
            raw = await self.litellm.acompletion(
                **kwargs,
                api_key=key,
                timeout=backstop_s(self.settings.timeout_s),  # the engine's deadline decides
                max_retries=0,  # the OpenAI client's own retries: off, ours count
                num_retries=0,
            )
        except Exception as exc:
            # litellm's errors are openai.APIError subclasses or carry an HTTP status; anything
            # else is a bug and propagates as is.
            known = isinstance(exc, self.openai.APIError) or hasattr(exc, "status_code")
            if known or _caused_by_bad_json(exc):
                raise translate_error(
                    self.litellm, exc, key, self.openai, self.settings.json_schema_style
                ) from None
            raise
        return self._response(raw, call)

    def _response(self, raw: Any, call: Call) -> Response:
        choices = getattr(raw, "choices", None) or []
        if not choices:
            raise TransportError("malformed_response", "response without choices")
        out = []
        for choice in choices:
            message = getattr(choice, "message", None)
            text = getattr(message, "content", None) or ""
            out.append(Choice(text=str(text), finish_reason=getattr(choice, "finish_reason", None)))
        usage = getattr(raw, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        return Response(
            choices=out,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=self._cost(raw, prompt_tokens, completion_tokens),
            meta={"id": getattr(raw, "id", None), "model": getattr(raw, "model", None)},
        )


def make(cfg: PredictorConfig) -> LLMPredictor:
    settings = settings_from_config(cfg)
    return LLMPredictor(settings, LiteLLMTransport, cfg.paths.cache_dir, seed=int(cfg.seed),
                        prompt=variant_from_config(cfg))
