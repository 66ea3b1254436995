"""The training loss on the answer tokens: cross-entropy, optionally + a number-token loss.

`sft.loss=ntl` adds `sft.ntl_weight` x the Wasserstein number-token loss of the `ntloss` package
(NTLoss, digit level: the distance between the predicted distribution over the digit tokens 0-9
and the true digit), the loss of the paper's appendix E on numeric and probability answers.
Categorical answers have no digit tokens, so the term is zero on them by construction. The
package's default weight 0.3 is used (the paper's weight is not in our sources).

Both terms are per answer token over the whole (accumulated) batch: sums divided by the number
of answer tokens (`num_items_in_batch`), as TRL's own loss is, so gradient accumulation gives
the same result as a larger batch. Only the positions that predict an answer token go through
the LM head (`logits_to_keep`), never the full prompt x vocabulary logits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hhx.errors import ConfigError

IGNORE = -100
LOSSES = ("ce", "ntl")
DIGITS = [str(d) for d in range(10)]


@dataclass
class LossParts:
    loss: Any  # the tensor to back-propagate
    ce: float
    ntl: float | None
    answer_tokens: int
    accuracy: float


def check_loss(name: str, weight: float) -> None:
    if name not in LOSSES:
        raise ConfigError(f"sft.loss={name!r}; use one of {', '.join(LOSSES)}")
    if name == "ntl" and not weight > 0:
        raise ConfigError(f"sft.ntl_weight={weight}; must be > 0 with sft.loss=ntl")


def number_token_loss(tokenizer: Any, vocab_size: int) -> Any:
    """ntloss.NTLoss for this tokenizer; every digit must already be one token (NTLoss would
    otherwise add tokens the model has no embeddings for)."""
    vocab = tokenizer.get_vocab()
    missing = [d for d in DIGITS if d not in vocab]
    if missing:
        raise ConfigError(
            f"sft.loss=ntl: the tokenizer has no single-token digit(s) {missing}; the number-token "
            "loss needs digit tokens 0-9 (use sft.loss=ce for this model)"
        )
    from ntloss import NTLoss

    return NTLoss(tokenizer=tokenizer, vocab_size=vocab_size, digit_level=True)


def answer_loss(
    model: Any,
    inputs: dict[str, Any],
    num_items_in_batch: Any = None,
    ntl_fn: Any = None,
    ntl_weight: float = 0.0,
) -> LossParts:
    """One forward pass: logits at answer positions only, CE (+ weight x NTL)."""
    import torch
    import torch.nn.functional as F

    labels = inputs["labels"]
    targets = labels[:, 1:]  # position t predicts token t + 1
    keep = (targets != IGNORE).any(dim=0).nonzero().squeeze(1)
    forward = {k: v for k, v in inputs.items() if k != "labels"}
    forward["use_cache"] = False
    logits = model(**forward, logits_to_keep=keep).logits.float()  # B x K x V
    wanted = targets[:, keep]  # B x K
    mask = wanted != IGNORE
    count = mask.sum() if num_items_in_batch is None else num_items_in_batch
    count = torch.as_tensor(count, device=logits.device).clamp(min=1)
    ce = F.cross_entropy(
        logits.flatten(0, 1), wanted.flatten(), ignore_index=IGNORE, reduction="sum"
    ) / count
    loss = ce
    ntl_value = None
    if ntl_fn is not None:
        ntl = ntl_fn(logits, wanted, reduction="sum", ignore_index=IGNORE) / count
        loss = ce + ntl_weight * ntl
        ntl_value = float(ntl.detach())
    with torch.no_grad():
        hits = (logits.argmax(-1) == wanted) & mask
        accuracy = float(hits.sum() / mask.sum().clamp(min=1))
    return LossParts(loss, float(ce.detach()), ntl_value, int(mask.sum()), accuracy)
