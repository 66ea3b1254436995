"""The task registry: each task is one YAML file in `conf/task/`, validated by `TaskConfig`.

Code outside Hydra (the scorer, tests, the bench layer) loads tasks from here. A task's whole
definition is its config file plus the builder module it names (hhx.tasks.contract), so adding a
task is its YAML, its builder and its test: nothing shared lists tasks.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from hhx.config import DistributionConfig, TargetType, TaskConfig
from hhx.errors import ConfigError
from hhx.paths import conf_dir

CONF_DIR = conf_dir()  # the working copy's conf/, or the one a wheel carries (hhx/paths.py)
TASK_DIR = CONF_DIR / "task"

# The 20 core macro predictors present in every task (spec 3.3), in registry order.
CORE_MACRO_COLUMNS: tuple[str, ...] = tuple(
    f"{series}_{suffix}"
    for series, last in (
        ("gdp_growth_qoq", "5y_compound"),
        ("unemployment_rate", "5y_mean"),
        ("headline_cpi_qoq", "5y_compound"),
        ("fedfunds_rate", "5y_mean"),
    )
    for suffix in ("lag1", "lag2", "lag3", "lag4", last)
)
# macro_sce_revision carries its macro context from the month-12 interview (spec 3.2).
MACRO_SUFFIXES: tuple[str, ...] = ("", "_m12")
_TYPED_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*:(integer|string)$")


def task_names() -> list[str]:
    """All task names with a config file, sorted."""
    return sorted(p.stem for p in TASK_DIR.glob("*.yaml"))


def load_task(name: str) -> TaskConfig:
    """Load and validate one task config: an official one (conf/task/), else an own task on the
    task path (hhx/tasks/own.py); an unknown name lists the valid ones."""
    from hhx.tasks.own import task_file

    own = task_file(name)
    return _load_official(name) if own is None else _load_own(own)


@functools.cache
def _load_official(name: str) -> TaskConfig:
    path = TASK_DIR / f"{name}.yaml"
    if not path.is_file():
        from hhx.tasks.own import own_task_names

        valid = ", ".join(task_names())
        own = ", ".join(own_task_names())
        raise ConfigError(f"unknown task {name!r}; valid tasks: {valid}"
                          + (f"; own tasks (task path): {own}" if own else
                             "; a task of your own: its folder on task_path=[dir]"))
    return load_task_file(path)


@functools.cache
def _load_own(path: Path) -> TaskConfig:
    task = load_task_file(path)
    if task.name != path.stem:
        raise ConfigError(f"{path}: name {task.name!r} differs from the file's name; "
                          f"set name: {path.stem}")
    return task


def load_task_file(path: Path) -> TaskConfig:
    """Load and validate a task config from any YAML file (misspelt keys and bad types rejected)."""
    if not path.is_file():
        raise ConfigError(f"task config {path} does not exist")
    schema = OmegaConf.structured(TaskConfig)
    try:
        merged = OmegaConf.merge(schema, OmegaConf.load(path))
    except Exception as exc:  # OmegaConf validation errors name the key
        raise ConfigError(f"{path}: {exc}".splitlines()[0]) from None
    task = OmegaConf.to_object(merged)
    assert isinstance(task, TaskConfig)
    validate_task(task, source=str(path))
    return task


def as_task(task: TaskConfig | object) -> TaskConfig:
    """Accept a TaskConfig or a DictConfig of one (as Hydra passes it) and return the dataclass."""
    if isinstance(task, TaskConfig):
        return task
    obj = OmegaConf.to_object(task)
    if not isinstance(obj, TaskConfig):
        raise ConfigError(f"expected a task config, got {type(obj).__name__}")
    return obj


def answer_names(task: TaskConfig) -> list[str]:
    """Names of the answer elements in order: fields for arrays, distributions otherwise."""
    if task.target_type is TargetType.distribution:
        return [d.name for d in task.distributions]
    return [f.name for f in task.fields]


def output_names(task: TaskConfig) -> list[str]:
    """Model outputs in answer order (spec 10.5): target columns, or distribution group names."""
    if task.target_type is TargetType.distribution:
        return [d.group or d.name for d in task.distributions]
    return list(task.targets)


def core_macro_columns(task: TaskConfig) -> list[str]:
    """The task's names for the 20 core macro predictors (suffixed `_m12` in macro_sce_revision)."""
    predictors = set(task.prompt_predictors)
    for suffix in MACRO_SUFFIXES:
        names = [c + suffix for c in CORE_MACRO_COLUMNS]
        if predictors.issuperset(names):
            return names
    missing = [c for c in CORE_MACRO_COLUMNS if c not in predictors]
    raise ConfigError(f"task {task.name}: prompt_predictors lack core macro columns {missing}")


def validate_task(task: TaskConfig, source: str = "") -> None:
    """Internal consistency of one task definition (spec 11.2 test_tasks)."""
    where = source or task.name
    if task.target_type is TargetType.distribution:
        if task.shape.value != "distribution_array" or not task.distributions or task.fields:
            raise ConfigError(f"{where}: distribution tasks need shape=distribution_array and only `distributions`")
        for d in task.distributions:
            if len(d.labels) < 2:
                raise ConfigError(f"{where}: distribution {d.name} needs at least 2 labels")
            if len(d.columns) not in (1, len(d.labels)):
                raise ConfigError(f"{where}: distribution {d.name} has {len(d.columns)} columns for {len(d.labels)} labels")
    else:
        if task.shape.value != "array" or not task.fields or task.distributions:
            raise ConfigError(f"{where}: {task.target_type.value} tasks need shape=array and only `fields`")
        for f in task.fields:
            is_cat = task.target_type is TargetType.categorical
            if is_cat and (not f.labels or len(f.labels) < 2):
                raise ConfigError(f"{where}: categorical field {f.name} needs at least 2 labels")
            if not is_cat and f.labels:
                raise ConfigError(f"{where}: numeric field {f.name} must not have labels")
            if f.domain is not None and sorted(f.domain) != sorted(f.labels or []):
                raise ConfigError(f"{where}: field {f.name} domain must be a reordering of its labels")
        if task.targets and len(task.targets) != len(task.fields):
            raise ConfigError(f"{where}: {len(task.targets)} targets for {len(task.fields)} fields")
    for key in ("categorical_predictors", "required_predictors"):
        unknown = set(getattr(task, key)) - set(task.prompt_predictors)
        if unknown:
            raise ConfigError(f"{where}: {key} not in prompt_predictors: {sorted(unknown)}")
    validate_registry_fields(task, where)


def validate_registry_fields(task: TaskConfig, where: str) -> None:
    """Registry-view consistency: targets vs distribution columns, seeds, typed id, fixed month."""
    if task.target_type is TargetType.distribution and task.targets:
        columns = [c for d in task.distributions for c in d.columns]
        if task.targets != columns:
            raise ConfigError(
                f"{where}: targets {task.targets} must equal the distribution columns {columns}"
            )
    # YAML 1.1 reads unquoted yes/no/on/off as booleans, which OmegaConf turns into "True"/"False".
    label_sets = [f.labels or [] for f in task.fields] + [f.domain or [] for f in task.fields]
    label_sets += [d.labels for d in task.distributions]
    if any(label in ("True", "False") for labels in label_sets for label in labels):
        raise ConfigError(f"{where}: a label reads as a boolean; quote yes/no/on/off labels")
    predictors = task.prompt_predictors
    duplicated = sorted({p for p in predictors if predictors.count(p) > 1})
    if duplicated:
        raise ConfigError(f"{where}: prompt_predictors lists {duplicated} more than once")
    if task.xgb_seeds:
        outputs = output_names(task)
        if sorted(task.xgb_seeds) != sorted(outputs):
            raise ConfigError(
                f"{where}: xgb_seeds keys {sorted(task.xgb_seeds)} must equal the outputs {outputs}"
            )
        bad = {k: v for k, v in task.xgb_seeds.items() if not 0 <= v < 2**32}
        if bad:
            raise ConfigError(f"{where}: xgb_seeds must lie in [0, 2**32): {bad}")
    if task.typed_id is not None and not _TYPED_ID.match(task.typed_id):
        raise ConfigError(
            f"{where}: typed_id {task.typed_id!r} must be 'column:integer' or 'column:string'"
        )
    from hhx.surveys.registry import survey_names

    unknown = sorted(set(task.intermediates) - set(survey_names()))
    if unknown:
        raise ConfigError(f"{where}: intermediates names unknown sources {unknown} "
                          f"(valid: {', '.join(survey_names())})")
    if task.builder and "fred_qd" not in task.intermediates:
        raise ConfigError(f"{where}: intermediates must include fred_qd (the macro context)")
    month = task.prompt_month.fixed_month if task.prompt_month else None
    if month is not None and not 1 <= month <= 12:
        raise ConfigError(f"{where}: prompt_month.fixed_month must be 1-12, got {month}")


def distribution_vectors(dist: DistributionConfig, values: np.ndarray) -> np.ndarray:
    """Table columns of one distribution group (n x columns) -> probability vectors (n x labels).

    One column p -> [1 - p, p]; several columns -> the columns in order. Percentages are scaled
    as the reference does: a single probability by 100, a multi-bin density by its row sum (the
    published bins are 0-100 and may miss 100 by rounding).
    """
    v = np.asarray(values, dtype=float).reshape(len(values), len(dist.columns))
    if len(dist.columns) == 1:
        p = v[:, 0] / 100.0 if dist.percent else v[:, 0]
        return np.column_stack([1.0 - p, p])
    if dist.percent:
        with np.errstate(invalid="ignore", divide="ignore"):
            v = v / v.sum(axis=1, keepdims=True)
    return v
