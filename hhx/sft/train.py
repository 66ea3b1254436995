"""LoRA supervised fine-tuning with peft + TRL on the SFT set; resumable; tracked in MLflow.

`train(...)` fine-tunes the base weights (hf_weights.base_weights: a HF folder, the bundled GGUF
de-quantised once, or a cached hub id) with a LoRA adapter on TRL's prompt-completion file of
the SFT set, so the loss covers the answer tokens only. Layout of `output_dir`:

- `checkpoints/checkpoint-<step>/`: TRL/transformers checkpoints every `save_steps` (adapter,
  optimizer, scheduler, RNG states). A run killed at any point continues from the last one
  (`sft.resume=true`), reproducing the uninterrupted run's steps.
- `adapter/`: the final PEFT adapter (what `model.lora_adapter=` takes) + `hhx_sft.json`
  (base weights, settings, the SFT set's SHA-256, final loss, tokens/s).
- `loss_curve.csv`: step, epoch, loss, ce_loss, ntl_loss, learning_rate, grad_norm ...
- `mlflow_run.json`: the MLflow run id, so a resumed run continues the same loss curve.

Progress lines (step/total, loss, elapsed, ETA) are printed at every `logging_steps`, also when
output is not a terminal.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hhx.errors import ConfigError
from hhx.io import write_csv_atomic, write_json_atomic
from hhx.predictors.llm.hf_weights import base_weights
from hhx.sft.dataset import SftSet
from hhx.sft.loss import answer_loss, check_loss, number_token_loss

log = logging.getLogger(__name__)

ADAPTER_DIR = "adapter"
CHECKPOINT_DIR = "checkpoints"
RUN_INFO = "hhx_sft.json"
CURVE_FILE = "loss_curve.csv"


@dataclass
class SftResult:
    output_dir: Path
    adapter_dir: Path
    steps: int
    first_loss: float | None
    final_loss: float | None
    train_tokens: int
    train_seconds: float
    tokens_per_second: float
    resumed_from: str | None
    curve: list[dict[str, Any]] = field(default_factory=list)
    mlflow_run_id: str | None = None


def _fmt_s(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600:d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _trainer_classes() -> tuple[Any, Any]:
    """HhxSFTTrainer and the progress/tracking callback (defined lazily: torch is heavy)."""
    from transformers import TrainerCallback
    from trl import SFTTrainer

    class HhxSFTTrainer(SFTTrainer):
        """SFTTrainer whose loss is hhx.sft.loss.answer_loss (CE, + weight x NTL)."""

        def __init__(self, *args: Any, ntl_fn: Any = None, ntl_weight: float = 0.0,
                     **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.ntl_fn = ntl_fn
            self.ntl_weight = ntl_weight
            self.answer_tokens = 0

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            parts = answer_loss(model, inputs, num_items_in_batch, self.ntl_fn, self.ntl_weight)
            mode = "train" if model.training else "eval"
            self._metrics[mode]["ce_loss"].append(parts.ce)
            if parts.ntl is not None:
                self._metrics[mode]["ntl_loss"].append(parts.ntl)
            self._metrics[mode]["mean_token_accuracy"].append(parts.accuracy)
            if mode == "train":
                self._total_train_tokens += int(inputs["attention_mask"].sum())
                self.answer_tokens += parts.answer_tokens
            self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
            return (parts.loss, None) if return_outputs else parts.loss

    class Progress(TrainerCallback):
        """One line per log step with an ETA; each logged value also goes to MLflow."""

        def __init__(self, mlflow_log: Any) -> None:
            self.mlflow_log = mlflow_log
            self.t0 = time.monotonic()
            self.step0: int | None = None

        def on_train_begin(self, args, state, control, **kwargs):
            self.t0, self.step0 = time.monotonic(), state.global_step

        def on_log(self, args, state, control, logs=None, **kwargs):
            logs = logs or {}
            done = state.global_step - (self.step0 or 0)
            elapsed = time.monotonic() - self.t0
            left = state.max_steps - state.global_step
            eta = elapsed / done * left if done > 0 else float("nan")
            if "loss" in logs:
                print(f"sft: step {state.global_step}/{state.max_steps} loss {logs['loss']:.4f}"
                      f" · {_fmt_s(elapsed)} elapsed · ETA {_fmt_s(eta) if done else '?'}",
                      file=sys.stderr, flush=True)
            if self.mlflow_log is not None:
                self.mlflow_log(logs, state.global_step)

    return HhxSFTTrainer, Progress


def _sft_args(sft: Any, ckpt_dir: Path, seed: int, use_cpu: bool) -> Any:
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(ckpt_dir),
        num_train_epochs=float(sft.epochs),
        max_steps=int(sft.max_steps),
        per_device_train_batch_size=int(sft.per_device_batch_size),
        gradient_accumulation_steps=int(sft.gradient_accumulation_steps),
        learning_rate=float(sft.learning_rate),
        lr_scheduler_type=str(sft.lr_scheduler),
        warmup_steps=float(sft.warmup_ratio),  # < 1: a share of the total steps
        weight_decay=float(sft.weight_decay),
        max_length=int(sft.max_length),
        completion_only_loss=True,
        packing=False,
        logging_steps=int(sft.logging_steps),
        save_strategy="steps",
        save_steps=int(sft.save_steps),
        save_total_limit=int(sft.save_total_limit),
        bf16=bool(sft.bf16),
        gradient_checkpointing=bool(sft.gradient_checkpointing),
        report_to="none",
        seed=int(seed),
        data_seed=int(seed),
        use_cpu=use_cpu,
        dataloader_num_workers=0,
        disable_tqdm=True,  # the Progress callback prints ETA lines (also into logs)
        remove_unused_columns=True,
    )


def check_settings(sft: Any) -> None:
    check_loss(str(sft.loss), float(sft.ntl_weight))
    for name in ("lora_rank", "lora_alpha", "per_device_batch_size",
                 "gradient_accumulation_steps", "max_length", "save_steps", "logging_steps"):
        if int(getattr(sft, name)) < 1:
            raise ConfigError(f"sft.{name}={getattr(sft, name)}; must be >= 1")
    if not float(sft.learning_rate) > 0:
        raise ConfigError(f"sft.learning_rate={sft.learning_rate}; must be > 0")
    if int(sft.max_steps) <= 0 and not float(sft.epochs) > 0:
        raise ConfigError("set sft.epochs > 0 or sft.max_steps > 0")


def _plain(node: Any) -> Any:
    from omegaconf import DictConfig, OmegaConf

    if isinstance(node, DictConfig):
        return OmegaConf.to_container(node, resolve=True)
    return asdict(node) if hasattr(node, "__dataclass_fields__") else dict(node)


# Settings that do not change what is learned (a resumed run may change them).
NOT_IDENTITY = {"resume", "logging_steps", "save_steps", "save_total_limit", "threads",
                "output_dir", "data_dir", "name"}
IDENTITY_FILE = "hhx_sft_identity.json"


def run_identity(sft: Any, model_path: str | None, model_id: str | None, sft_set: SftSet
                 ) -> dict[str, Any]:
    settings = {k: v for k, v in _plain(sft).items() if k not in NOT_IDENTITY}
    return {"settings": settings, "model_path": model_path, "model_id": model_id,
            "sft_set_sha256": sft_set.info["chat_sha256"]}


def check_same_run(output_dir: Path, identity: dict[str, Any], resume: bool) -> None:
    """A checkpoint is only resumed by the same run: same weights, data and settings."""
    path = output_dir / IDENTITY_FILE
    has_checkpoints = any((output_dir / CHECKPOINT_DIR).glob("checkpoint-*"))
    if path.is_file() and has_checkpoints:
        before = json.loads(path.read_text())
        if not resume:
            raise ConfigError(
                f"sft.output_dir={output_dir} holds checkpoints and sft.resume=false; use a new "
                "sft.output_dir (or remove that folder) to start over"
            )
        if before != json.loads(json.dumps(identity)):
            changed = sorted(k for k in set(before["settings"]) | set(identity["settings"])
                             if before["settings"].get(k) != identity["settings"].get(k))
            other = [k for k in ("model_path", "model_id", "sft_set_sha256")
                     if before.get(k) != identity.get(k)]
            raise ConfigError(
                f"sft.output_dir={output_dir} holds checkpoints of another run (differs in "
                f"{', '.join([f'sft.{k}' for k in changed] + other)}); use a new sft.output_dir"
            )
    write_json_atomic(path, identity)


def _load_rows(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            rows.append(json.loads(line))
            if limit is not None and len(rows) >= limit:
                break
    return rows


def count_truncated(dataset: Any, max_length: int) -> int:
    """Rows cut at max_length (their answer is partial; TRL drops rows with no answer left)."""
    return sum(1 for ids in dataset["input_ids"] if len(ids) >= max_length)


def train(
    sft: Any,
    model_path: str | None,
    model_id: str | None,
    sft_set: SftSet,
    output_dir: Path,
    *,
    seed: int = 42,
    mlflow_log: Any = None,
    limit_rows: int | None = None,
) -> SftResult:
    """Fine-tune and save the adapter; continues from the last checkpoint when sft.resume."""
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.trainer_utils import get_last_checkpoint

    check_settings(sft)
    if sft.threads:
        torch.set_num_threads(int(sft.threads))
    output_dir.mkdir(parents=True, exist_ok=True)
    ckpt_dir = output_dir / CHECKPOINT_DIR
    check_same_run(output_dir, run_identity(sft, model_path, model_id, sft_set), bool(sft.resume))
    last = get_last_checkpoint(str(ckpt_dir)) if ckpt_dir.is_dir() and sft.resume else None

    weights = base_weights(model_path, model_id)
    tokenizer = AutoTokenizer.from_pretrained(weights)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    cuda = torch.cuda.is_available()
    dtype = torch.bfloat16 if sft.bf16 else torch.float32
    model = AutoModelForCausalLM.from_pretrained(weights, dtype=dtype)
    ntl_fn = None
    if str(sft.loss) == "ntl":
        ntl_fn = number_token_loss(tokenizer, model.get_output_embeddings().weight.shape[0])

    from datasets import Dataset

    dataset = Dataset.from_list(_load_rows(sft_set.trl_file, limit_rows))
    lora = LoraConfig(
        r=int(sft.lora_rank),
        lora_alpha=int(sft.lora_alpha),
        lora_dropout=float(sft.lora_dropout),
        target_modules=list(sft.target_modules) if list(sft.target_modules) != ["all-linear"]
        else "all-linear",
        task_type="CAUSAL_LM",
    )
    trainer_cls, progress_cls = _trainer_classes()
    trainer = trainer_cls(
        model=model,
        args=_sft_args(sft, ckpt_dir, seed, use_cpu=not cuda),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=[progress_cls(mlflow_log)],
        ntl_fn=ntl_fn,
        ntl_weight=float(sft.ntl_weight),
    )
    dropped = len(dataset) - len(trainer.train_dataset)
    truncated = count_truncated(trainer.train_dataset, int(sft.max_length)) + dropped
    if truncated:
        # Nothing is dropped silently: rows cut at max_length lose (part of) their answer.
        print(f"sft: warning: {truncated} of {len(dataset)} rows are longer than "
              f"sft.max_length={sft.max_length} ({dropped} lost their whole answer and are "
              "left out); raise sft.max_length", file=sys.stderr, flush=True)
    if last:
        print(f"sft: resuming from {last}", file=sys.stderr, flush=True)
    started = time.monotonic()
    out = trainer.train(resume_from_checkpoint=last)
    seconds = time.monotonic() - started
    return _save(trainer, out, output_dir, weights, model_path, model_id, sft, sft_set, last,
                 seconds, truncated, dropped)


def _save(trainer: Any, out: Any, output_dir: Path, weights: Any, model_path: str | None,
          model_id: str | None, sft: Any, sft_set: SftSet, last: str | None, seconds: float,
          truncated: int, dropped: int) -> SftResult:
    """The adapter, the loss curve and the run's record written; the result returned."""
    tokens = int(trainer._total_train_tokens)
    adapter_dir = output_dir / ADAPTER_DIR
    trainer.model.save_pretrained(str(adapter_dir))
    curve = [row for row in trainer.state.log_history if "loss" in row]
    if curve:
        import pandas as pd

        write_csv_atomic(output_dir / CURVE_FILE, pd.DataFrame(curve))
    result = SftResult(
        output_dir=output_dir,
        adapter_dir=adapter_dir,
        steps=int(trainer.state.global_step),
        first_loss=curve[0]["loss"] if curve else None,
        final_loss=curve[-1]["loss"] if curve else None,
        train_tokens=tokens,
        train_seconds=seconds,
        tokens_per_second=tokens / seconds if seconds > 0 else 0.0,
        resumed_from=last,
        curve=curve,
    )
    write_json_atomic(adapter_dir / RUN_INFO, {
        "base_weights": str(weights),
        "model_path": model_path,
        "model_id": model_id,
        "settings": _plain(sft),
        "sft_set": {"root": str(sft_set.root), "chat_sha256": sft_set.info["chat_sha256"],
                    "total_rows": sft_set.total_rows, "synthetic": sft_set.synthetic,
                    "rows_used": len(trainer.train_dataset), "rows_truncated": truncated,
                    "rows_dropped": dropped},
        "steps": result.steps,
        "first_loss": result.first_loss,
        "final_loss": result.final_loss,
        "train_runtime_s": out.metrics.get("train_runtime"),
        "resumed_from": last,
    })
    return result


def result_record(result: SftResult) -> dict[str, Any]:
    record = asdict(result)
    record["output_dir"] = str(result.output_dir)
    record["adapter_dir"] = str(result.adapter_dir)
    record.pop("curve")
    return record
