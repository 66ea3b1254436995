"""hhx's vLLM backend against vLLM's own `LLM.generate` on one GPU, K=1 and K=16 draws per prompt.
Prepared for a lent GPU (nothing can be downloaded there): a ~4B model in the Qwen3 layout is
randomly initialised from the config below and saved with a local word-level tokenizer (with a
chat template) to a temporary folder; needs torch, transformers, tokenizers and vllm.

    python benchmarks/gpu_vllm_throughput.py [--prompts 256] [--max-tokens 54] [--k 1,16]

One engine (`LLM`, bfloat16, prefix caching on, as hhx's `engine_kwargs`) serves both sides:
- hhx: `make_predictor(model=qwen35_4b).predict` on the prompts (one request of `n = K` per
  prompt, `LLM.chat` in chunks of max_concurrency, every answer stored in hhx's response cache);
- bare: `LLM.generate` on the same prompts rendered with the same chat template, one
  `SamplingParams(n=K, seed=42, ...)` per prompt, all at once.
The prefix cache is emptied before each timed run (neither side inherits the other's prompts);
each side first answers 8 prompts untimed (CUDA graphs, compilation). Random weights rarely
stop early, so both sides generate close to `--max-tokens` tokens per draw (no constrained
decoding: the random tokenizer's vocabulary is not a JSON one). Prints prompts/s, completion
tokens/s and the ratio hhx/bare per K. Not run in the session that wrote it (no GPU was lent).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]  # hhx and the test helpers (tests.helpers) of this checkout

# Qwen3-4B's published shape (hidden 2560, 36 layers, GQA 32/8 heads of 128, SwiGLU 9728,
# vocab 151,936, tied embeddings): about 4.0 B parameters.
QWEN3_4B = dict(
    vocab_size=151_936, hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
    num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=40_960,
    rms_norm_eps=1e-6, rope_theta=1_000_000.0, tie_word_embeddings=True, attention_bias=False,
)
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SYSTEM = "You are an American person answering questions about your work and job search."
SAMPLING = {"temperature": 0.7, "top_p": 0.8, "top_k": 20}


def prompt(i: int) -> str:
    """A labor_cps_jobfind-like prompt (~300 words), varied per household."""
    from bench_llm_cpu import prompt as cpu_prompt  # the CPU benchmark's realistic prompt

    return cpu_prompt(i)


def build_model(folder: Path, words: set[str]) -> None:
    """Random Qwen3-4B weights (bfloat16) and a word-level tokenizer padded to the vocab size."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    specials = ["<unk>", "<|im_start|>", "<|im_end|>", "<|endoftext|>"]
    vocab = {t: i for i, t in enumerate(specials + sorted(words))}
    for i in range(len(vocab), QWEN3_4B["vocab_size"]):
        vocab[f"w{i}"] = i
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>",
                                   eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = TEMPLATE
    fast.save_pretrained(folder)
    config = Qwen3Config(**QWEN3_4B, eos_token_id=vocab["<|im_end|>"],
                         pad_token_id=vocab["<|endoftext|>"], torch_dtype="bfloat16")
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder, safe_serialization=True)
    del model
    torch.cuda.empty_cache()


def hhx_predictor(folder: Path, cache: Path, k: int, max_tokens: int, extra: dict,
                  transport=None):
    """hhx's vLLM predictor for K draws; `transport`: an engine already loaded (one per run)."""
    from hhx.predictors.base import make_predictor
    from hhx.tasks.registry import load_task
    from tests.helpers.llm_servers import make_cfg

    cfg = make_cfg("qwen35_4b", cache, decoding="qwen_nonthinking", aggregation="k16", **{
        "decoding.enable_thinking": None, "aggregation.k": k, "decoding.max_tokens": max_tokens,
        "decoding.truncation_retries": 0, "model.constrained_decoding": False,
        "model.model_path": str(folder), "model.n_ctx": 2048, "model.max_concurrency": 4096,
        "model.extra": extra})
    task = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
    predictor = make_predictor(cfg)
    predictor._transport = transport  # None: fit() loads the engine
    return predictor.fit(task), task


def run_hhx(predictor, task, users: list[str], cache: Path) -> tuple[float, int]:
    from tests.helpers.llm_servers import examples_frame

    predictor.close()
    shutil.rmtree(cache, ignore_errors=True)  # an empty response cache for every timed run
    cache.mkdir(parents=True)
    predictor._transport.llm.reset_prefix_cache()
    started = time.perf_counter()
    rows = predictor.predict(task, examples_frame(users, system=SYSTEM))
    wall = time.perf_counter() - started
    return wall, sum(r.details["completion_tokens"] for r in rows)


def run_bare(llm, tokenizer, users: list[str], k: int, max_tokens: int) -> tuple[float, int]:
    from vllm import SamplingParams

    texts = [tokenizer.apply_chat_template([{"role": "system", "content": SYSTEM},
                                            {"role": "user", "content": u}],
                                           tokenize=False, add_generation_prompt=True)
             for u in users]
    params = [SamplingParams(n=k, seed=42, max_tokens=max_tokens, **SAMPLING) for _ in users]
    llm.reset_prefix_cache()
    started = time.perf_counter()
    outs = llm.generate(texts, params, use_tqdm=False)
    wall = time.perf_counter() - started
    return wall, sum(len(o.token_ids) for out in outs for o in out.outputs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=256)
    parser.add_argument("--max-tokens", type=int, default=54)  # labor_cps_jobfind's answer budget
    parser.add_argument("--k", default="1,16")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    tmp = Path(tempfile.mkdtemp(prefix="hhx-vllm-bench-"))
    users = [prompt(i) for i in range(args.prompts)]
    words = {w for u in users + [SYSTEM] for w in u.split()}
    lines = []
    try:
        build_model(tmp / "model", words)
        extra = {"dtype": "bfloat16", "gpu_memory_utilization": args.gpu_memory_utilization}
        transport = None
        for k in [int(x) for x in args.k.split(",")]:
            predictor, task = hhx_predictor(tmp / "model", tmp / f"cache{k}", k,
                                            args.max_tokens, extra, transport)
            transport = predictor._transport
            llm = transport.llm
            tokenizer = llm.get_tokenizer()
            run_hhx(predictor, task, users[:8], tmp / f"cache{k}")  # warm-up, untimed
            run_bare(llm, tokenizer, users[:8], k, args.max_tokens)
            bw, bt = run_bare(llm, tokenizer, users, k, args.max_tokens)
            hw, ht = run_hhx(predictor, task, users, tmp / f"cache{k}")
            n = len(users)
            lines.append((k, n / bw, bt / bw, n / hw, ht / hw, bw / hw))
            predictor.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    import torch

    print(f"vLLM offline engine, random Qwen3-4B layout (bfloat16), {torch.cuda.get_device_name()}, "
          f"{args.prompts} prompts, {args.max_tokens} tokens per draw, prefix caching on")
    print(f"{'K':>3}{'bare prompts/s':>16}{'bare tok/s':>12}{'hhx prompts/s':>15}{'hhx tok/s':>11}"
          f"{'hhx/bare':>10}")
    for k, bp, btk, hp, htk, ratio in lines:
        print(f"{k:>3}{bp:>16.2f}{btk:>12.0f}{hp:>15.2f}{htk:>11.0f}{ratio:>10.2f}")
    print(json.dumps({"rows": lines}))


if __name__ == "__main__":
    main()
