"""Prompt variants (`prompt=` group, conf/prompt/): what an LLM is sent around the official record.

- `official` (the default): the release's prompt record as it is, [system, user]
  (`messages.build_messages`). Nothing here changes it.
- `few_shot`: k solved examples before the question, as earlier chat turns:
  [system, user_1, assistant_1, ..., user_k, assistant_k, user]. Each example is a prompt
  record of the task's OWN train split: its `user` text as the release renders it and its gold
  `assistant` field verbatim, which is the official answer format (a JSON array, the text the
  SFT set trains on). The k rows are drawn once per task: `numpy.random.default_rng(seed)`
  chooses k distinct rows among the train rows ordered by split_position, and they are sent in
  split_position order (oldest first). So every evaluated row gets the same k examples (a shared
  prefix, which local engines reuse), the choice depends only on the seed and the train split,
  and the evaluated split is never a source (evaluating data.split=train is refused).
- `system`: another system message in place of the release's (`prompt.system` text or
  `prompt.system_file`), for every row; it combines with few_shot (`prompt=few_shot
  prompt.system=...`).

The official scorer and answer format stay: the evaluated row's question, its answer schema and
its parsing are the release's. A variant's runs are labelled (`label`, `tags`: the model is
`<model> [few_shot k=3]` on the leaderboard, never the official model) and the response cache
keys on the messages sent (plan.request_identity), so a variant never reads an official answer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hhx.config import DEFAULT_SHOT_SEED, OFFICIAL_PROMPT, PromptKind
from hhx.errors import ConfigError, DataError

if TYPE_CHECKING:  # numpy and pandas are imported when used: the start-up checks read this module
    import pandas as pd

    from hhx.bench.layout import BenchTask
    from hhx.predictors.llm.messages import Messages

TRAIN_SPLIT = "train"
NOT_OFFICIAL = "prompt variant, not official"


@dataclass(frozen=True)
class PromptVariant:
    """A checked `prompt` group: its name, few-shot k and seed, and the system text it sends."""

    name: str = OFFICIAL_PROMPT
    k: int = 3
    seed: int = DEFAULT_SHOT_SEED
    system: str | None = None  # the replacement system message (a file's text, read)

    @property
    def official(self) -> bool:
        return self.name == OFFICIAL_PROMPT

    @property
    def few_shot(self) -> bool:
        return self.name == PromptKind.few_shot.value

    @property
    def system_sha256(self) -> str | None:
        return None if self.system is None else hashlib.sha256(self.system.encode()).hexdigest()

    def label(self) -> str:
        """`few_shot k=3` (`seed=` when not the default), `system 1a2b3c4d`; "" when official."""
        if self.official:
            return ""
        parts = []
        if self.few_shot:
            parts.append(f"few_shot k={self.k}")
            if self.seed != DEFAULT_SHOT_SEED:
                parts.append(f"seed={self.seed}")
        if self.system_sha256 is not None:
            parts.append(f"system {self.system_sha256[:8]}")
        return " ".join(parts)

    def tags(self) -> dict[str, str]:
        """The run's MLflow tags (none for the official prompt: its runs stay as they were)."""
        if self.official:
            return {}
        tags = {"hhx.prompt": self.name, "hhx.prompt_label": self.label()}
        if self.few_shot:
            tags |= {"hhx.prompt_k": str(self.k), "hhx.prompt_seed": str(self.seed)}
        if self.system_sha256 is not None:
            tags["hhx.prompt_system_sha256"] = self.system_sha256
        return tags


OFFICIAL = PromptVariant()


def _read_system_file(path: str) -> str:
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"prompt.system_file={path}: cannot read it as UTF-8 text ({exc})") \
            from None
    if not text.strip():
        raise ConfigError(f"prompt.system_file={path}: the file is empty; write the system "
                          "message in it")
    return text


def variant_of(node: Any) -> PromptVariant:
    """The `prompt` config node checked (None or absent: official); bad settings are one line."""
    if node is None:
        return OFFICIAL
    name = str(node.get("name") or OFFICIAL_PROMPT)
    text, file = node.get("system"), node.get("system_file")
    if text is not None and file is not None:
        raise ConfigError("prompt.system and prompt.system_file are both set; give one")
    if name == OFFICIAL_PROMPT and (text is not None or file is not None):
        raise ConfigError("prompt.system is set but prompt=official sends the release's system "
                          "message; use prompt=system prompt.system=<text> (or system_file)")
    if name == PromptKind.system.value and text is None and file is None:
        raise ConfigError("prompt=system needs prompt.system=<text> or "
                          "prompt.system_file=<path>")
    if text is not None and not str(text).strip():
        raise ConfigError("prompt.system is empty; give the system message's text")
    system = _read_system_file(str(file)) if file is not None else (
        None if text is None else str(text))
    return PromptVariant(name=name, k=int(node.get("k", 3)),
                         seed=int(node.get("seed", DEFAULT_SHOT_SEED)), system=system)


def variant_from_config(cfg: Any) -> PromptVariant:
    """The run's prompt variant (`cfg.prompt`; a config without the group is official)."""
    return variant_of(cfg.get("prompt") if hasattr(cfg, "get") else None)


def with_system_digest(container: dict[str, Any]) -> dict[str, Any]:
    """A resolved config whose `prompt.system_file` also names the digest of the file's text, so
    a cell's identity changes when the text does (used by the sweep cell hash)."""
    prompt = container.get("prompt")
    if not isinstance(prompt, dict) or prompt.get("system_file") is None:
        return container
    try:
        text = _read_system_file(str(prompt["system_file"]))
    except ConfigError:
        return container  # the run says why, in one line, when it starts
    digest = hashlib.sha256(text.encode()).hexdigest()
    return {**container, "prompt": {**prompt, "system_sha256": digest}}


def variant_chars(per_prompt: float, variant: PromptVariant) -> float:
    """A prompt's characters under `variant`, from an official prompt's (the grid's dry run,
    before any data is read): k few-shot turns are about k more prompts of the task (user text
    and answer; the system message counted again, so at most); another system message adds its
    length (the release's is not subtracted: at most)."""
    chars = per_prompt * (1 + variant.k) if variant.few_shot else per_prompt
    return chars + (len(variant.system) if variant.system is not None else 0)


def select_shots(bench: BenchTask, variant: PromptVariant) -> pd.DataFrame:
    """The k solved train rows (the 7 record columns plus split_position), in split order."""
    import numpy as np

    name = bench.spec.name
    if bench.splits is None:
        raise DataError(f"task {name}: prompt=few_shot draws its examples from the train split; "
                        f"{bench.root} is in the eval-sample layout (no train rows); point "
                        "data.root at the full release")
    train = bench.splits["split"].to_numpy() == TRAIN_SPLIT
    positions = np.flatnonzero(train)
    if len(positions) < variant.k:
        raise DataError(f"task {name}: prompt.k={variant.k} but the train split has "
                        f"{len(positions)} rows; lower prompt.k")
    order = np.argsort(bench.splits["split_position"].to_numpy(dtype="int64")[positions],
                       kind="stable")
    ordered = positions[order]  # train rows by split_position
    chosen = np.sort(np.random.default_rng(variant.seed).choice(
        len(ordered), size=variant.k, replace=False))
    rows = ordered[chosen]
    shots = bench.prompts.iloc[rows].reset_index(drop=True)
    shots["split_position"] = bench.splits["split_position"].iloc[rows].to_numpy()
    return shots


def _check_evaluated(examples: pd.DataFrame, shots: pd.DataFrame, task: str) -> None:
    evaluated = set(examples["split"].astype(str)) if "split" in examples.columns else set()
    if TRAIN_SPLIT in evaluated:
        raise ConfigError(f"task {task}: prompt=few_shot takes its examples from the train split, "
                          "which data.split=train evaluates; evaluate another split")
    rows = set(zip(examples["id"].astype(str), examples["time"].astype(str), strict=True))
    shared = rows & set(zip(shots["id"].astype(str), shots["time"].astype(str), strict=True))
    if shared:  # by construction never (train rows are not evaluated); kept as a guard
        raise DataError(f"task {task}: few-shot example(s) {sorted(shared)[:3]} are evaluated rows")


def render(base: list[Messages], variant: PromptVariant,
           shots: pd.DataFrame | None = None) -> list[Messages]:
    """Each row's official [system, user] messages with the variant applied."""
    turns: Messages = []
    if shots is not None:
        for user, answer in zip(shots["user"], shots["assistant"], strict=True):
            turns += [{"role": "user", "content": str(user)},
                      {"role": "assistant", "content": str(answer)}]
    out: list[Messages] = []
    for messages in base:
        system = [m for m in messages if m["role"] == "system"]
        if variant.system is not None:
            system = [{"role": "system", "content": variant.system}]
        out.append([*system, *turns, *(m for m in messages if m["role"] != "system")])
    return out


def variant_messages(bench: BenchTask | None, examples: pd.DataFrame,
                     variant: PromptVariant, source: str = "examples") -> list[Messages]:
    """The messages sent for `examples` under `variant` (official: `build_messages` as it is).
    `bench`: the task the rows come from (its train split holds the few-shot examples)."""
    from hhx.predictors.llm.messages import build_messages

    base = build_messages(examples, source=source)
    if variant.official:
        return base
    shots = None
    if variant.few_shot:
        if bench is None:
            raise ConfigError(f"{source}: prompt=few_shot needs the task's train split")
        shots = select_shots(bench, variant)
        _check_evaluated(examples, shots, bench.spec.name)
    return render(base, variant, shots)
