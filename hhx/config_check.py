"""Checks on the composed config that Hydra's typing does not make, run before any stage.

- Unknown keys in hhx's own groups are refused even when added with `+` (Hydra's hint for a
  misspelt key is to add it with `+`, which made a run that silently ignored it): one line with
  the closest known key ("did you mean data.max_examples").
- Numbers are range-checked (`aggregation.k=0`, `data.max_examples=-5`, `min_coverage=2`), and
  settings with a fixed set of values are checked against it.
- `data=official` needs `data.max_examples` given explicitly (a number, or null for every row):
  a download's eval split is not silently cut to the demo's 200.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from hhx.errors import ConfigError

# Settings whose values are free-form mappings (any key is fine below them).
FREE = {"model.extra", "task.xgb_seeds", "survey.raw", "survey.demo", "data.demo.surveys"}
# The short forms of sweep.force / sweep.dry_run (`+force=true`, `+dry_run=true`: hhx/sweeps/cell.py
# reads either), top-level keys Hydra adds that the schema does not list.
SHORT_FORMS = {"force", "dry_run"}

# key -> (lowest, highest, whether the lowest is allowed); None = unbounded on that side.
RANGES: dict[str, tuple[float | None, float | None, bool]] = {
    "aggregation.k": (1, None, True),
    "aggregation.min_draws": (1, None, True),
    "data.max_examples": (1, None, True),
    "min_coverage": (0, 1, True),
    "seed": (0, None, True),
    "model.n_ctx": (1, None, True),
    "model.max_concurrency": (1, None, True),
    "model.timeout_s": (0, None, False),
    "model.max_retries": (0, None, True),
    "model.requests_per_minute": (1, None, True),
    "model.max_cost_usd": (0, None, True),
    "model.reasoning_tokens": (0, None, True),
    "model.retry_base_s": (0, None, True),
    "model.retry_max_s": (0, None, True),
    "model.xgboost.threads": (1, None, True),
    "model.xgboost.train_cap": (1, None, True),
    "model.xgboost.validation_cap": (1, None, True),
    "model.xgboost.n_estimators": (1, None, True),
    "model.xgboost.early_stopping_rounds": (1, None, True),
    "decoding.temperature": (0, None, True),
    "decoding.top_p": (0, 1, False),
    "decoding.top_k": (1, None, True),
    "decoding.min_p": (0, 1, True),
    "decoding.truncation_retries": (0, None, True),
    "decoding.truncation_budget_factor": (1, None, True),
    "leaderboard.n_resamples": (1, None, True),
    "leaderboard.confidence": (0, 1, False),
    "score.min_match": (0, 1, True),
    "survey.chunk_rows": (1, None, True),
    "sft.rows_per_task": (1, None, True),
    "sft.lora_rank": (1, None, True),
    "sft.learning_rate": (0, None, False),
    "sft.epochs": (0, None, False),
    "sft.per_device_batch_size": (1, None, True),
    "sft.gradient_accumulation_steps": (1, None, True),
    "sft.max_length": (1, None, True),
}

CHOICES: dict[str, tuple[str, ...]] = {
    "aggregation.tie_rule": ("first_draw", "label_order"),
    "data.layout": ("release", "eval_sample"),
    "leaderboard.time_bin": ("year", "quarter"),
    "sft.loss": ("ce", "ntl"),
    "model.json_schema_style": ("openai", "llamacpp"),
}


def _known(schema: type) -> list[str]:
    return [f.name for f in dataclasses.fields(schema)]


def unknown_keys(node: DictConfig, prefix: str = "") -> list[tuple[str, list[str]]]:
    """(dotted key, known keys beside it) for every key the group's schema does not have."""
    found: list[tuple[str, list[str]]] = []
    schema = OmegaConf.get_type(node)
    known = _known(schema) if schema is not None and dataclasses.is_dataclass(schema) else None
    for key in node.keys():
        path = f"{prefix}{key!s}"
        if path in FREE or (not prefix and path in SHORT_FORMS):
            continue
        if known is not None and key not in known:
            found.append((path, [f"{prefix}{k}" for k in known]))
            continue
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
            found += unknown_keys(child, f"{path}.")
        elif isinstance(child, ListConfig) and not child._is_missing() and not child._is_none():
            for i, item in enumerate(child._iter_ex(resolve=False)):
                if isinstance(item, DictConfig):
                    found += unknown_keys(item, f"{path}[{i}].")
    return found


def _value(cfg: DictConfig, key: str) -> Any:
    try:
        return OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
    except Exception:  # an interpolation that cannot resolve yet is checked where it is used
        return None


def _range_problem(key: str, value: Any) -> str | None:
    low, high, low_ok = RANGES[key]
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{key}={value} must be a finite number"
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    if low is not None and (value < low or (value == low and not low_ok)):
        return f"{key}={shown} must be {'at least' if low_ok else 'more than'} {low:g}"
    if high is not None and value > high:
        return f"{key}={shown} must be at most {high:g}"
    return None


def official_data_problems(cfg: DictConfig) -> list[str]:
    """An evaluate (or a score by split) on data=official names its download and how many rows it evaluates."""
    data = cfg.get("data")
    stage = str(getattr(cfg.get("stage"), "value", cfg.get("stage")))
    score = cfg.get("score")
    if data is None or not (stage == "evaluate" or (stage == "score" and score is not None
                                                    and score.get("split"))):
        return []
    if str(getattr(data.get("source"), "value", data.get("source"))) != "official":
        return []
    out = []
    if OmegaConf.is_missing(data, "root"):
        out.append("data=official needs data.root=<folder of the official download>")
    if OmegaConf.is_missing(data, "max_examples"):
        out.append("data=official needs data.max_examples=<N> (the first N rows of the split by "
                   "split_position; 200 is the official eval-sample rule) or "
                   "data.max_examples=null (every row)")
    return out


def validate_config(cfg: DictConfig) -> None:
    """Raise ConfigError (one line) for an unknown key, a number out of range or a bad choice."""
    problems = []
    for key, known in unknown_keys(cfg):
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else (
            f"; known keys there: {', '.join(k.rsplit('.', 1)[-1] for k in known)}")
        problems.append(f"unknown setting {key}{hint}")
    for key in RANGES:
        why = _range_problem(key, _value(cfg, key))
        if why:
            problems.append(why)
    k, min_draws = _value(cfg, "aggregation.k"), _value(cfg, "aggregation.min_draws")
    if isinstance(k, int) and isinstance(min_draws, int) and min_draws > k:
        problems.append(f"aggregation.min_draws={min_draws} must be at most aggregation.k={k}")
    for key, options in CHOICES.items():
        value = _value(cfg, key)
        if value is not None and str(value) not in options:
            problems.append(f"{key}={value} is not one of {', '.join(options)}")
    problems += official_data_problems(cfg)
    if problems:
        raise ConfigError("; ".join(problems))
