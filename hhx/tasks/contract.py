"""The task-builder contract, checked when a builder loads.

A task is its `conf/task/<task>.yaml` plus its builder: the module `hhx/tasks/<family>/<task>.py`
that the YAML's `builder` names, whose `TASK` constant is the task's name (mechanics shared by a
family live beside it in `common.py` and the like). A builder module defines the members of
`TaskBuilder`; the optional members (`OPTIONAL_MEMBERS`) say where a task departs from the shared
release and prompt rules:
    TASK               the task's name (when given, it must be the name of the task loading it)
    reference_answer   (row, task) -> list: the gold answer where the official renderer rounds or
                       types it its own way (default: the target columns as floats)
    JSON_SEPARATORS    json.dumps separators of the prompt records (the reference writes some
                       tasks compactly)
    OUTPUT_ORDER       sort keys of the published rows, e.g. ("time:text", "id:number")
                       (hhx.tasks.output_order; default: the canonical sampling order)
    PROMPT_RULES       the task's exceptions to the shared prompt contract (`PromptRules`)
    INTEGER_OUTPUT     numeric outputs are whole numbers: XGBoost's predictions are rounded
`build_table` may leave `table.attrs["construction_steps"]` (a frame or list of dicts: the build
report) and `table.attrs["float_columns"]` (integral columns the official frame holds as floats).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, cast

from hhx.config import TaskConfig
from hhx.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

    from hhx.tasks.context import BuildContext


@dataclass(frozen=True)
class PromptRules:
    """A task's exceptions to the shared prompt contract (spec 00_common 4.3-4.6); the defaults
    are the shared rules."""

    # The closing sentence, instead of the one the target type implies (section 4.5 (a)-(d)).
    closing: str | None = None
    # The prompt ends with the closing sentence, then the structure insertion (not the reverse).
    closing_first: bool = False
    # The replacement instruction, instead of the target type's.
    replacement: str | None = None
    # False: no current-month note, but exactly one dollar note embedded in a paragraph (4.6).
    month_note: bool = True
    # A housing task: its system prompt is the shared housing persona (4.3).
    housing_persona: bool = False


class TaskBuilder(Protocol):
    """The members every builder module defines."""

    def build_table(self, ctx: BuildContext) -> pd.DataFrame:
        """Public columns in the task's order, plus internal `_`-prefixed columns."""
        ...

    def render(self, row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
        """(system prompt, user prompt) of one row."""
        ...

    def naive_baseline(self, row: Mapping[str, Any], task: TaskConfig) -> list[Any]:
        """The no-change prediction of one row."""
        ...


# What the load check requires: the Protocol's members, in its order.
REQUIRED_MEMBERS: tuple[str, ...] = tuple(n for n in vars(TaskBuilder) if not n.startswith("_"))
# Optional members: (what a value must be, its description for the error, the default).
OPTIONAL_MEMBERS: dict[str, tuple[Callable[[Any], bool], str, Any]] = {
    "TASK": (lambda v: isinstance(v, str), "a str", None),
    "reference_answer": (callable, "a function (row, task) -> list", None),
    "JSON_SEPARATORS": (lambda v: _str_tuple(v) and len(v) == 2, "a pair of str", None),
    "OUTPUT_ORDER": (lambda v: _str_tuple(v) and len(v) > 0, "a tuple of 'column:kind'", None),
    "PROMPT_RULES": (lambda v: isinstance(v, PromptRules), "a PromptRules", PromptRules()),
    "INTEGER_OUTPUT": (lambda v: isinstance(v, bool), "a bool", False),
}


def _str_tuple(value: Any) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, str) for v in value)


def check_builder(module: ModuleType) -> TaskBuilder:
    """The module as a `TaskBuilder`, or one ConfigError naming it and what it lacks."""
    missing = [m for m in REQUIRED_MEMBERS if not callable(getattr(module, m, None))]
    if missing:
        raise ConfigError(
            f"builder {module.__name__} lacks function(s) {missing} "
            f"(a builder defines {', '.join(REQUIRED_MEMBERS)}; hhx/tasks/contract.py)"
        )
    for name, (valid, what, _default) in OPTIONAL_MEMBERS.items():
        if hasattr(module, name) and not valid(getattr(module, name)):
            raise ConfigError(
                f"builder {module.__name__}.{name} must be {what}, "
                f"got {getattr(module, name)!r} (hhx/tasks/contract.py)"
            )
    return cast(TaskBuilder, module)


_CHECKED: dict[str, ModuleType] = {}  # dotted name -> the module object that passed the check


def _import_builder(dotted: str) -> TaskBuilder:
    """Import and check; a module object already checked is not checked again (renderers ask for
    the task's rules once a row)."""
    try:
        module = importlib.import_module(dotted)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"builder module {dotted!r} not found ({exc})") from None
    if _CHECKED.get(dotted) is not module:
        check_builder(module)
        _CHECKED[dotted] = module
    return cast(TaskBuilder, module)


def own_module_name(task_name: str) -> str:
    """The module name an own task's builder file is loaded under (hhx/tasks/own.py)."""
    return f"hhx_own_task_{task_name}"


def _import_builder_file(task_name: str, path: Path) -> TaskBuilder:
    """An own task's builder, imported from its file and checked; one line when it cannot be."""
    name = own_module_name(task_name)
    module = sys.modules.get(name)
    if module is None or getattr(module, "__file__", None) != str(path):
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"builder {path} cannot be imported (not a Python file)")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the user's code: its error in one line, naming the file
            where = f" line {exc.lineno}" if isinstance(exc, SyntaxError) else ""
            raise ConfigError(f"builder {path}{where} failed to import: "
                              f"{type(exc).__name__}: {exc}".splitlines()[0]) from None
        sys.modules[name] = module  # joblib workers and the prompt checks find it by name
    if _CHECKED.get(name) is not module:
        try:
            check_builder(module)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace(f"builder {name}", f"builder {path}")) from None
        _CHECKED[name] = module
    return cast(TaskBuilder, module)


def load_builder(task: TaskConfig) -> TaskBuilder:
    """Import `task.builder`, checked against the contract (its `TASK`, when given, included).
    An own task's builder is a file relative to its task folder (hhx/tasks/own.py)."""
    from hhx.tasks.own import builder_file, own_task_dir

    if not task.builder:
        raise ConfigError(
            f"task {task.name}: no builder configured (conf/task/{task.name}.yaml `builder`)"
        )
    try:
        if own_task_dir(task.name) is not None:
            builder = _import_builder_file(task.name, builder_file(task.name, task.builder))
        else:
            builder = _import_builder(task.builder)
    except ConfigError as exc:
        raise ConfigError(f"task {task.name}: {exc}") from None
    named = getattr(builder, "TASK", None)
    if named is not None and named != task.name:
        raise ConfigError(
            f"task {task.name}: builder {task.builder} builds task {named!r} (its TASK); "
            f"point conf/task/{task.name}.yaml `builder` at the module of this task"
        )
    return builder


def builder_option(task: TaskConfig, name: str) -> Any:
    """An optional member of the task's builder, or its default (also for a task without one)."""
    default = OPTIONAL_MEMBERS[name][2]
    if not task.builder:
        return default
    return getattr(load_builder(task), name, default)


def prompt_rules(task: TaskConfig) -> PromptRules:
    """The task's exceptions to the shared prompt contract (its builder's PROMPT_RULES)."""
    rules = builder_option(task, "PROMPT_RULES")
    assert isinstance(rules, PromptRules)
    return rules


def integer_output(task: TaskConfig) -> bool:
    """Whether the task's numeric outputs are whole numbers (its builder's INTEGER_OUTPUT)."""
    return bool(builder_option(task, "INTEGER_OUTPUT"))
