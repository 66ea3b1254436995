"""The names runs carry: the model's label (base or fine-tuned) and the run's name."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hhx.predictors.llm.prompt_variants import PromptVariant


def adapter_label(path: str) -> str:
    """A fine-tuned model's name part: the adapter's folder (its run folder for `.../adapter`)."""
    p = Path(path)
    return p.parent.name if p.name == "adapter" and p.parent.name else p.name


def with_prompt(name: str, prompt: PromptVariant | None) -> str:
    """`<name> [few_shot k=3]` for a prompt variant (its own row on the leaderboard, never the
    official model's); the name as it is for the official prompt."""
    return f"{name} [{prompt.label()}]" if prompt is not None and not prompt.official else name


def model_label(model: Any, prompt: PromptVariant | None = None) -> str:
    """The model's name in runs and on the leaderboard: `<model>+lora:<adapter>` when a LoRA
    adapter is applied, so base and fine-tuned models rank side by side, never merged; a prompt
    variant's label after it (`with_prompt`). `model`: the run's `model` config."""
    adapter = model.get("lora_adapter")
    name = str(model.name)
    return with_prompt(f"{name}+lora:{adapter_label(str(adapter))}" if adapter else name, prompt)


def run_name(task: str, model: str, stage: str, synthetic: bool) -> str:
    """`labor_cps_jobfind · xgboost · evaluate · synthetic · 12-01 18:40`: readable, and two runs
    of one cell told apart by their start."""
    parts = [task, model, stage, *(["synthetic"] if synthetic else []), time.strftime("%m-%d %H:%M")]
    return " · ".join(parts)
