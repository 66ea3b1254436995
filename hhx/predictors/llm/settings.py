"""The LLM run settings, read once from the composed config and checked against the model.

A decoding setting the model cannot take (top_k on an API that has none, a seed for a provider
that refuses one...) is a ConfigError at start-up, never silently dropped.

`decoding.max_tokens` is the answer budget: `auto` (every preset's default) derives it per task
from the answer schema (`schema.answer_tokens`) plus `model.reasoning_tokens` for models that
reason before answering; a positive number fixes it; `none` sends no limit at all (the provider's
own default, as the paper's API runs did).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from hhx.bounds import declared, enum_text, rule_problem
from hhx.config import HhxConfig
from hhx.errors import ConfigError, PredictorError
from hhx.secrets import is_secret_name

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
# Placeholder key sent to a self-hosted server when the key variable is unset (vLLM's convention).
NO_KEY = "EMPTY"
MAX_TOKENS_WORDS = ("auto", "none")
REQUANTIZE_FORMATS = ("q8_0", "q4_0", "f16")  # hhx.predictors.llm.requantize.FORMATS


def _secret_like_keys(node: Any, prefix: str = "") -> list[str]:
    """Keys (nested too, e.g. extra_headers.Authorization) that look like credentials."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if is_secret_name(str(key)):
                found.append(prefix + str(key))
            found.extend(_secret_like_keys(value, f"{prefix}{key}."))
    return sorted(found)


@dataclass(frozen=True)
class LLMSettings:
    backend: str
    name: str  # hhx's label for the model (run names, outputs)
    model_id: str  # what the backend is asked for (litellm model string, HF id, GGUF path)
    api_base: str | None
    api_key_env: str | None
    k: int
    tie_rule: str
    use_n: bool  # draw all K in one request with `n`
    # Generation parameters actually sent (None = not sent, the provider's default applies).
    params: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    constrained: bool = False
    json_schema_style: str = "openai"
    max_concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 6
    retry_base_s: float = 1.0
    retry_max_s: float = 60.0
    requests_per_minute: int | None = None
    max_cost_usd: float | None = None
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    model_path: str | None = None
    lora_adapter: str | None = None
    n_ctx: int = 4096
    requantize: str | None = None  # llamacpp: the GGUF converted to this format (requantize.py)
    repair_number_formatting: bool = False
    repair_distribution_nesting: bool = False
    # Answer budget: "auto" (derived per task), "fixed" (max_tokens) or "none" (no limit sent).
    max_tokens_mode: str = "auto"
    max_tokens: int | None = None
    reasoning_tokens: int = 0
    truncation_retries: int = 1  # a cut, unparsable answer is asked again this many times...
    truncation_budget_factor: float = 4.0  # ...each time with this many times the budget
    min_draws: int | None = None  # valid draws that make an answer; None: all back, >= 1 valid

    def record(self) -> dict[str, Any]:
        """A JSON-able description for run records (names the key variable, never the key)."""
        return asdict(self)

    def answer_budget(self, answer_tokens: int) -> int | None:
        """max_tokens for a task whose answer needs `answer_tokens` (None: no limit is sent)."""
        if self.max_tokens_mode == "none":
            return None
        if self.max_tokens_mode == "fixed":
            return self.max_tokens
        return answer_tokens + self.reasoning_tokens

    def retry_budget(self, max_tokens: int | None) -> int | None:
        """The larger budget for asking a cut answer again (None: no larger budget exists)."""
        if max_tokens is None or self.truncation_retries <= 0:
            return None
        return max(max_tokens + 1, int(max_tokens * self.truncation_budget_factor))


def _max_tokens(value: Any, dname: str) -> tuple[str, int | None]:
    """decoding.max_tokens -> (mode, fixed value): auto | a positive integer | none (or null)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null")):
        return "none", None
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto", None
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    _check(
        number is not None and number > 0,
        f"{dname}: max_tokens={value!r}; use auto (derived from the task's answer), a positive "
        "number, or none (no limit sent)",
    )
    return "fixed", number


def _plain(node: Any) -> Any:
    if isinstance(node, DictConfig):
        return OmegaConf.to_container(node, resolve=True)
    return node


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def draws_problem(k: Any, min_draws: Any) -> str | None:
    """The one rule across aggregation's fields: min_draws valid draws out of k (also checked
    before any stage, hhx/config_check.py)."""
    if isinstance(k, int) and isinstance(min_draws, int) and min_draws > k:
        return f"aggregation.min_draws={min_draws} must be at most aggregation.k={k}"
    return None


def _select(cfg: Any, key: str) -> Any:
    node = cfg
    for part in key.split("."):
        try:
            node = getattr(node, part)
        except Exception:  # absent or `???`: nothing to check
            return None
    return node


def _declared_problems(cfg: Any) -> list[str]:
    """The model, decoding and aggregation values against the rules on their fields
    (hhx/config.py): a config that did not come through the app is held to the same rules."""
    out = []
    for key, rule in declared(HhxConfig).items():
        if key.split(".")[0] in ("model", "decoding", "aggregation"):
            why = rule_problem(key, _select(cfg, key), rule)
            if why:
                out.append(why)
    why = draws_problem(_select(cfg, "aggregation.k"), _select(cfg, "aggregation.min_draws"))
    return out + ([why] if why else [])


def _model_id(model: Any, backend: str, where: str) -> str:
    model_id = model.model_id or model.model_path
    _check(bool(model_id), f"{where}: set model.model_id (or model.model_path for local weights)")
    # "openai/<name>" is litellm's prefix for OpenAI itself and for OpenAI-compatible servers;
    # only OpenAI's own key variable means the former, so anything else needs an endpoint.
    _check(
        not (
            backend == "litellm"
            and str(model_id).startswith("openai/")
            and not model.api_base
            and model.api_key_env != "OPENAI_API_KEY"
        ),
        f"{where}: model_id {model_id} is served by an OpenAI-compatible server but "
        "model.api_base is not set; add model.api_base=http://<host>:<port>/v1",
    )
    return str(model_id)


def _sampling_params(model: Any, dec: Any, where: str, dname: str) -> dict[str, Any]:
    """The decoding parameters sent, each one the model can take (else a ConfigError)."""
    params: dict[str, Any] = {}
    for key in ("temperature", "top_p"):
        if dec[key] is not None:
            _check(
                bool(model.supports_sampling_params),
                f"{dname} sets {key} but {where} does not accept sampling parameters; "
                "use decoding=provider_default or set the model's supports_sampling_params",
            )
            params[key] = float(dec[key])
    for key in ("top_k", "min_p"):
        if dec[key] is not None:
            _check(
                bool(model.supports_top_k),
                f"{dname} sets {key} but {where} has no {key} (supports_top_k=false); "
                "use a decoding without it",
            )
            params[key] = dec[key]
    if dec.enable_thinking is not None:
        _check(
            bool(model.supports_chat_template_kwargs),
            f"{dname} sets enable_thinking but {where} takes no chat-template arguments "
            "(supports_chat_template_kwargs=false); use decoding=provider_default",
        )
        params["enable_thinking"] = bool(dec.enable_thinking)
    if model.reasoning_effort is not None:
        effort = str(model.reasoning_effort)
        _check(
            bool(model.supports_reasoning_effort),
            f"{where}: reasoning_effort is set but the model does not support it",
        )
        _check(
            effort in REASONING_EFFORTS,
            f"{where}: reasoning_effort {effort!r} unknown; use one of {', '.join(REASONING_EFFORTS)}",
        )
        params["reasoning_effort"] = effort
    return params


def _model_checks(model: Any, where: str, dname: str, seed: int | None) -> None:
    """The rules across a model's fields and the decoding: what it can take."""
    if seed is not None:
        _check(
            bool(model.supports_seed),
            f"{dname} sets seed={seed} but {where} does not accept a seed; "
            "override decoding.seed=null",
        )
    if model.constrained_decoding:
        _check(
            bool(model.supports_json_schema),
            f"{where}: constrained_decoding=true but the model has no JSON-schema support",
        )
    secret_like = _secret_like_keys(_plain(model.extra) or {})
    _check(
        not secret_like,
        f"{where}: model.extra has {', '.join(secret_like)}; keys never go in configs (they "
        "would be saved with the run): name an environment variable in model.api_key_env",
    )


def _requantize(model: Any, backend: str, where: str) -> str | None:
    requantize = getattr(model, "requantize", None)
    if requantize is None:
        return None
    requantize = str(requantize).lower()
    _check(
        requantize in REQUANTIZE_FORMATS,
        f"{where}: requantize={requantize!r}; use one of {', '.join(REQUANTIZE_FORMATS)} "
        "or null (the weights as they are)",
    )
    _check(backend == "llamacpp", f"{where}: requantize applies to the llamacpp backend only")
    return requantize


def settings_from_config(cfg: Any) -> LLMSettings:
    """Build and validate the settings from a composed config (cfg.model/.decoding/.aggregation)."""
    model, dec, agg = cfg.model, cfg.decoding, cfg.aggregation
    if isinstance(model, DictConfig) and OmegaConf.is_missing(model, "name"):
        raise ConfigError(
            "model.name is not set; for model=openai_compatible or model=llamacpp_server give "
            "the served model name, e.g. model.name=Qwen/Qwen3.5-4B"
        )
    problems = _declared_problems(cfg)
    _check(not problems, "; ".join(problems))
    name, backend = str(model.name), enum_text(model.backend)
    dname, where = f"decoding={dec.name}", f"model={name}"
    model_id = _model_id(model, backend, where)
    k = int(agg.k)
    min_draws = None if getattr(agg, "min_draws", None) is None else int(agg.min_draws)
    params = _sampling_params(model, dec, where, dname)
    max_tokens_mode, max_tokens = _max_tokens(dec.max_tokens, dname)
    seed = None if dec.seed is None else int(dec.seed)
    _model_checks(model, where, dname, seed)
    rpm, budget = model.requests_per_minute, model.max_cost_usd
    score = getattr(cfg, "score", None)
    return LLMSettings(
        backend=backend,
        name=name,
        model_id=model_id,
        api_base=None if model.api_base is None else str(model.api_base).rstrip("/"),
        api_key_env=model.api_key_env,
        k=k,
        tie_rule=str(getattr(agg, "tie_rule", "first_draw")),
        use_n=bool(model.supports_n) and k > 1,
        params=params,
        seed=seed,
        constrained=bool(model.constrained_decoding),
        json_schema_style=str(model.json_schema_style),
        max_concurrency=int(model.max_concurrency),
        timeout_s=float(model.timeout_s),
        max_retries=int(model.max_retries),
        retry_base_s=float(model.retry_base_s),
        retry_max_s=float(model.retry_max_s),
        requests_per_minute=None if rpm is None else int(rpm),
        max_cost_usd=None if budget is None else float(budget),
        input_cost_per_token=model.input_cost_per_token,
        output_cost_per_token=model.output_cost_per_token,
        extra=dict(_plain(model.extra) or {}),
        model_path=model.model_path,
        lora_adapter=model.lora_adapter,
        n_ctx=int(model.n_ctx),
        requantize=_requantize(model, backend, where),
        repair_number_formatting=bool(getattr(score, "repair_number_formatting", False)),
        repair_distribution_nesting=bool(getattr(score, "repair_distribution_nesting", False)),
        max_tokens_mode=max_tokens_mode,
        max_tokens=max_tokens,
        reasoning_tokens=int(getattr(model, "reasoning_tokens", 0) or 0),
        truncation_retries=int(getattr(dec, "truncation_retries", 1)),
        truncation_budget_factor=float(getattr(dec, "truncation_budget_factor", 4.0)),
        min_draws=min_draws,
    )


def read_api_key(settings: LLMSettings) -> str | None:
    """The key from the variable model.api_key_env names, read at request time.

    A self-hosted endpoint (api_base set) may run without a key; an API provider may not.
    """
    if not settings.api_key_env:
        return NO_KEY if settings.api_base else None
    key = os.environ.get(settings.api_key_env)
    if key:
        return key
    if settings.api_base:
        return NO_KEY
    raise PredictorError(
        f"model={settings.name}: environment variable {settings.api_key_env} is not set; "
        f"export it with your API key"
    )
