"""LLM predictors: one engine, four backends (declared in hhx/catalog.py).

- `litellm_backend`: any API or OpenAI-compatible server through `litellm.acompletion`.
- `llamacpp_backend`: llama.cpp in-process on the CPU (the bundled SmolLM2-135M GGUF).
- `vllm_backend`: vLLM's offline engine on a GPU (optional extra, imported lazily).
- `transformers_backend`: Hugging Face weights (+ a LoRA adapter) on the CPU or a GPU.

Shared parts: `settings` (config -> checked run settings, answer budgets), `messages` (prompt
records -> chat messages), `plan` (draws -> requests and their cache keys), `cache` (persistent
SQLite response cache, single flight across processes, a reserve for full disks), `transport`
(what backends return or raise, retry policy, the fix for a rejected request), `probe` (the
endpoint checked before the first request), `cost` (prices, budget), `engine` (concurrency,
retries, stops, Ctrl-C), `progress` (progress lines with an ETA, also off a terminal),
`aggregation` (K draws -> one answer), `schema` (the answer's JSON schema and token budget),
`stats` (run metrics), `predictor` (the Predictor contract on top of all of it).
"""
