"""LoRA SFT step throughput on one GPU for a ~4B decoder in the Qwen3 layout, with and without
the number-token loss. Prepared for a lent H200 (nothing can be downloaded there: the model is
randomly initialised from the config below; needs only torch, transformers and peft).

    python benchmarks/gpu_sft_throughput.py [--seq 1024] [--batch 8] [--steps 10] [--warmup 3]

Each step is one optimizer step on `--batch` sequences of `--seq` random tokens whose last
`--answer` tokens are the answer (the loss covers only them, as in hhx's SFT: prompt-completion
with completion-only loss); answer tokens are digits, so the number-token loss is active on all
of them. LoRA r=16, alpha=32 on every linear layer; bfloat16 weights; gradient checkpointing
on; AdamW. Only the answer positions go through the LM head (as hhx.sft.loss does). The number-
token loss is the Wasserstein digit loss (`ntloss.NTLoss`, digit level, reweighted) when the
package is importable, else the same quantity computed here. The table: tokens/s (all tokens of
the batch) for CE and CE + 0.3 NTL, the ratio, peak memory. Runs in about 3-5 minutes.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

# Qwen3-4B's published shape (hidden 2560, 36 layers, GQA 32/8 heads of 128, SwiGLU 9728,
# vocab 151,936, tied embeddings): about 4.0 B parameters.
QWEN3_4B = dict(
    vocab_size=151_936, hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
    num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=40_960,
    rms_norm_eps=1e-6, rope_theta=1_000_000.0, tie_word_embeddings=True, attention_bias=False,
)
DIGIT_IDS = list(range(15, 25))  # Qwen's single-digit tokens "0".."9"


class DigitVocab:
    """The tokenizer interface ntloss reads (vocab with the ten digit tokens)."""

    def __init__(self, size: int) -> None:
        self.vocab = {f"<t{i}>": i for i in range(size)}
        for d, i in enumerate(DIGIT_IDS):
            self.vocab.pop(f"<t{i}>")
            self.vocab[str(d)] = i

    def get_vocab(self):
        return dict(self.vocab)

    def add_tokens(self, tokens):
        return 0

    def __len__(self):
        return len(self.vocab)


def make_ntl(vocab_size: int, device: str):
    try:
        from ntloss import NTLoss

        fn = NTLoss(tokenizer=DigitVocab(vocab_size), vocab_size=vocab_size, digit_level=True)
        return lambda logits, y: fn(logits, y, reduction="mean"), "ntloss.NTLoss"
    except ImportError:
        pass
    ids = torch.tensor(DIGIT_IDS, device=device)
    values = torch.arange(10.0, device=device)
    lookup = torch.full((vocab_size,), -1, dtype=torch.long, device=device)
    lookup[ids] = torch.arange(10, device=device)

    def ntl(logits, y):  # E_p[|d - y|] over digit tokens, reweighted by the digit mass
        pos = (y >= 0) & (lookup[y.clamp(min=0)] >= 0)
        sel = logits[pos]
        probs = torch.softmax(sel[:, ids], dim=-1)
        target = values[lookup[y[pos]]]
        loss = (probs * (values[None, :] - target[:, None]).abs()).sum(-1)
        mass = torch.softmax(sel, dim=-1)[:, ids].sum(-1)
        loss = loss * mass + 1.01 * 9.0 * (1 - mass)
        return loss.mean()

    return ntl, "inline Wasserstein digit loss"


def step_loss(model, ids, labels, ntl_fn, weight):
    targets = labels[:, 1:]
    keep = (targets != -100).any(0).nonzero().squeeze(1)
    logits = model(input_ids=ids, logits_to_keep=keep, use_cache=False).logits.float()
    wanted = targets[:, keep]
    loss = F.cross_entropy(logits.flatten(0, 1), wanted.flatten(), ignore_index=-100)
    if ntl_fn is not None:
        loss = loss + weight * ntl_fn(logits, wanted)
    return loss


def run(model, opt, args, ntl_fn) -> tuple[float, float]:
    dev = "cuda"
    g = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(100, 150_000, (args.batch, args.seq), generator=g).to(dev)
    digits = torch.tensor(DIGIT_IDS)[torch.randint(0, 10, (args.batch, args.answer),
                                                   generator=g)].to(dev)
    ids[:, -args.answer:] = digits
    labels = torch.full_like(ids, -100)
    labels[:, -args.answer:] = digits
    torch.cuda.reset_peak_memory_stats()
    for i in range(args.warmup + args.steps):
        if i == args.warmup:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        loss = step_loss(model, ids, labels, ntl_fn, 0.3)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    tokens = args.steps * args.batch * args.seq
    return tokens / seconds, torch.cuda.max_memory_allocated() / 2**30


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--answer", type=int, default=16)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3Config, Qwen3ForCausalLM

    assert torch.cuda.is_available(), "needs a CUDA device"
    torch.manual_seed(0)
    t0 = time.perf_counter()
    config = Qwen3Config(**QWEN3_4B)
    with torch.device("cuda"):
        model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    n_params = sum(p.numel() for p in model.parameters())
    model.gradient_checkpointing_enable()
    model.enable_input_require_grads()
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0,
                                             target_modules="all-linear", task_type="CAUSAL_LM"))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.train()
    init_s = time.perf_counter() - t0
    ntl_fn, ntl_name = make_ntl(config.vocab_size, "cuda")
    rows = []
    for name, fn in (("ce", None), ("ntl", ntl_fn)):
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
        tps, mem = run(model, opt, args, fn)
        rows.append((name, tps, mem))
        del opt
    print(f"\n{torch.cuda.get_device_name()} · Qwen3 layout, {n_params / 1e9:.2f} B params "
          f"(random init, bf16), LoRA r=16 all-linear: {trainable / 1e6:.1f} M trainable · "
          f"batch {args.batch} x {args.seq} tokens, answer {args.answer} · {args.steps} steps "
          f"after {args.warmup} warm-up · init {init_s:.0f} s · NTL: {ntl_name}")
    print(f"{'loss':<6}{'tokens/s':>12}{'vs ce':>8}{'peak GiB':>10}")
    for name, tps, mem in rows:
        print(f"{name:<6}{tps:>12.0f}{tps / rows[0][1]:>8.3f}{mem:>10.1f}")


if __name__ == "__main__":
    main()
