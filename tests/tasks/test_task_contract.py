"""The task-builder contract: every registered builder satisfies it and follows the one naming
scheme; a broken builder is refused in one line; shared modules name no task."""

from __future__ import annotations

import ast
import types
from pathlib import Path

import pytest

from hhx.config import TaskConfig
from hhx.errors import ConfigError
from hhx.tasks import contract
from hhx.tasks.contract import (
    OPTIONAL_MEMBERS,
    REQUIRED_MEMBERS,
    PromptRules,
    TaskBuilder,
    load_builder,
    prompt_rules,
)
from hhx.tasks.registry import load_task, task_names

HHX = Path(contract.__file__).resolve().parents[1]
FAMILIES = sorted(p.name for p in (HHX / "tasks").iterdir() if (p / "__init__.py").is_file())


def test_required_members_are_the_protocols():
    assert REQUIRED_MEMBERS == ("build_table", "render", "naive_baseline")
    assert all(callable(getattr(TaskBuilder, m)) for m in REQUIRED_MEMBERS)


@pytest.mark.parametrize("name", task_names())
def test_every_builder_follows_the_contract_and_the_naming_scheme(name):
    task = load_task(name)
    builder = load_builder(task)
    family, module = task.builder.removeprefix("hhx.tasks.").split(".")
    # hhx/tasks/<family>/<task>.py, its TASK the task's name
    assert family in FAMILIES and module == name, task.builder
    assert getattr(builder, "TASK") == name
    assert isinstance(prompt_rules(task), PromptRules)


def _module(name: str, **members) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, value in members.items():
        setattr(module, key, value)
    return module


def _task(builder: str, name: str = "toy_task") -> TaskConfig:
    return TaskConfig(name=name, builder=builder)


def test_a_builder_missing_a_member_is_refused_in_one_line(monkeypatch):
    fine = {m: (lambda *a: None) for m in REQUIRED_MEMBERS}
    partial = {k: v for k, v in fine.items() if k != "render"}
    monkeypatch.setitem(__import__("sys").modules, "hhx_toy_contract",
                        _module("hhx_toy_contract", **partial))
    with pytest.raises(ConfigError) as err:
        load_builder(_task("hhx_toy_contract"))
    message = str(err.value)
    assert "\n" not in message
    assert "task toy_task: builder hhx_toy_contract lacks function(s) ['render']" in message


@pytest.mark.parametrize(
    ("member", "value", "what"),
    [("JSON_SEPARATORS", [",", ":"], "a pair of str"),
     ("OUTPUT_ORDER", ("time:text", 3), "a tuple of 'column:kind'"),
     ("PROMPT_RULES", {"closing": "x"}, "a PromptRules"),
     ("INTEGER_OUTPUT", 1, "a bool")],
)
def test_a_mistyped_optional_member_is_refused(monkeypatch, member, value, what):
    members = {m: (lambda *a: None) for m in REQUIRED_MEMBERS} | {member: value}
    name = f"hhx_toy_contract_{member.lower()}"
    monkeypatch.setitem(__import__("sys").modules, name, _module(name, **members))
    with pytest.raises(ConfigError, match=rf"builder {name}\.{member} must be {what}"):
        load_builder(_task(name))


def test_a_builder_of_another_task_is_refused(monkeypatch):
    members = {m: (lambda *a: None) for m in REQUIRED_MEMBERS} | {"TASK": "other_task"}
    monkeypatch.setitem(__import__("sys").modules, "hhx_toy_other",
                        _module("hhx_toy_other", **members))
    with pytest.raises(ConfigError, match="builds task 'other_task'"):
        load_builder(_task("hhx_toy_other"))


def test_optional_members_default():
    assert set(OPTIONAL_MEMBERS) >= {"reference_answer", "JSON_SEPARATORS", "OUTPUT_ORDER",
                                     "PROMPT_RULES", "INTEGER_OUTPUT", "TASK"}
    assert prompt_rules(TaskConfig(name="no_builder")) == PromptRules()


# --------------------------------------------------------------------------------------------
# Shared code names no task: a task's specifics live in its YAML and its builder.


def _shared_modules() -> list[Path]:
    builders = {HHX / "tasks" / family for family in FAMILIES}
    return [p for p in sorted(HHX.rglob("*.py"))
            if not any(parent in builders for parent in p.parents)]


# A survey intermediate named like the task that reads it (house_sce_financing.parquet).
INTERMEDIATE_NAMES = {"house_sce_financing"}


def test_shared_modules_name_no_task():
    names = set(task_names())
    found = []
    for path in _shared_modules():
        rel = path.relative_to(HHX.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=rel)):
            if isinstance(node, ast.Constant) and node.value in names:
                if rel.startswith("hhx/surveys/") and node.value in INTERMEDIATE_NAMES:
                    continue
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert not found, "shared modules name tasks (move it to the task's YAML or builder): " + \
        "; ".join(found)


def test_the_name_check_sees_a_table_keyed_by_task():
    tree = ast.parse('TABLE = {"labor_cps_jobfind": 1}')
    assert any(isinstance(n, ast.Constant) and n.value in task_names() for n in ast.walk(tree))
