"""LLM predictors: one engine, three backends.

- `litellm_backend`: any API or OpenAI-compatible server through `litellm.acompletion`.
- `llamacpp_backend`: llama.cpp in-process on the CPU (the bundled SmolLM2-135M GGUF).
- `vllm_backend`: vLLM's offline engine on a GPU (optional extra, imported lazily).

Shared parts: `settings` (config -> checked run settings), `messages` (prompt records -> chat
messages), `plan` (draws -> requests and their cache keys), `cache` (persistent SQLite response
cache), `transport` (what backends return or raise, retry policy), `cost` (prices, budget),
`engine` (concurrency, retries, budget, progress), `aggregation` (K draws -> one answer),
`schema` (optional constrained decoding), `stats` (run metrics), `predictor` (the Predictor
contract on top of all of it).
"""
