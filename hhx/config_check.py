"""Checks on the composed config that Hydra's typing does not make, run before any stage.

- Unknown keys in hhx's own groups are refused even when added with `+` (Hydra's hint for a
  misspelt key is to add it with `+`, which made a run that silently ignored it): one line with
  the closest known key ("did you mean data.max_examples").
- Numbers are range-checked (`aggregation.k=0`, `data.max_examples=-5`, `min_coverage=2`), and
  settings with a fixed set of values are checked against it: the rules are declared on the
  fields (hhx/config.py, hhx/bounds.py); the checks across fields are the LLM settings' own
  (hhx/predictors/llm/settings.py `draws_problem`).
- `data=official` needs `data.max_examples` given explicitly (a number, or null for every row):
  a download's eval split is not silently cut to the demo's 200.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from hhx.bounds import declared, enum_text, rule_problem
from hhx.catalog import BACKENDS
from hhx.config import HhxConfig
from hhx.errors import ConfigError
from hhx.predictors.llm.prompt_variants import variant_of
from hhx.predictors.llm.settings import draws_problem

# Settings whose values are free-form mappings (any key is fine below them).
FREE = {"model.extra", "model.params", "task.xgb_seeds", "survey.raw", "survey.demo", "data.demo.surveys"}
# The short forms of sweep.force / sweep.dry_run (`+force=true`, `+dry_run=true`: hhx/sweeps/cell.py
# reads either), top-level keys Hydra adds that the schema does not list; `+fetch.<key>=` is
# stage=fetch's options (checked there, hhx/stages/fetch.py).
SHORT_FORMS = {"force", "dry_run", "fetch"}

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


def prompt_problems(cfg: DictConfig) -> list[str]:
    """A prompt variant is checked (system text or file, one of them) and applies to the LLM
    backends only: a model that sends no prompt (no_change, XGBoost) with a variant is refused,
    so a run labelled `[few_shot k=3]` never holds an unchanged baseline; few-shot examples come
    from the train split, so they are refused on data.split=train."""
    try:
        variant = variant_of(cfg.get("prompt"))  # e.g. prompt.system without prompt=system
    except ConfigError as exc:
        return [str(exc)]
    if variant.official:
        return []
    out = []
    backend = _value(cfg, "model.backend")
    spec = BACKENDS.get(enum_text(backend)) if backend is not None else None
    stage = enum_text(cfg.get("stage") or "evaluate")
    if stage == "evaluate" and spec is not None and not spec.sends_requests:
        out.append(f"prompt={variant.name}: model={_value(cfg, 'model.name')} (backend "
                   f"{enum_text(backend)}) sends no prompt; prompt variants apply to the LLM "
                   "backends only, so drop prompt= for this model")
    if variant.few_shot and str(_value(cfg, "data.split")) == "train":
        out.append("prompt=few_shot takes its examples from the train split, which "
                   "data.split=train evaluates; evaluate another split")
    return out


def validate_config(cfg: DictConfig) -> None:
    """Raise ConfigError (one line) for an unknown key, a number out of range or a bad choice."""
    problems = []
    for key, known in unknown_keys(cfg):
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else (
            f"; known keys there: {', '.join(k.rsplit('.', 1)[-1] for k in known)}")
        problems.append(f"unknown setting {key}{hint}")
    for key, rule in declared(HhxConfig).items():  # ranges and value sets, on their fields
        why = rule_problem(key, _value(cfg, key), rule)
        if why:
            problems.append(why)
    why = draws_problem(_value(cfg, "aggregation.k"), _value(cfg, "aggregation.min_draws"))
    problems += [why] if why else []
    problems += official_data_problems(cfg)
    problems += prompt_problems(cfg)
    if problems:
        raise ConfigError("; ".join(problems))
