"""Your own tasks: task folders outside hhx, run like the official ones and marked not official.

A task folder (any folder, named on the task path) holds `task/<name>.yaml`, a `TaskConfig` like
`conf/task/*.yaml`, and either
- the builder its `builder:` names: a `.py` file, relative to the task folder (or absolute),
  defining the `TaskBuilder` protocol (hhx/tasks/contract.py); it builds from the run's survey
  intermediates (data=demo or data=raw) into data.root, like an official task; or
- with no `builder:`, the task already built, in the official release layout beside the YAML:
  `tabular/<name>.csv`, `prompts/<name>.jsonl`, `splits/<name>.csv` (hhx/bench/layout.py).

The task path is `task_path=[/abs/dir,...]` on the command line (hhx/app.py takes it off before
Hydra composes and adds the folders to `hydra.searchpath`, so `task=<name>` finds the YAML), else
the environment variable HHX_TASK_PATH (folders joined by os.pathsep); the command line sets the
variable, so sweep jobs and workers see the same folders. The task path is no setting of the
composed config: an official run's config, params and tags are the same with or without it.

An own task's name must not be an official task's (a clear error), `task=all` stays the official
tasks and `task=own` names the own ones. Runs of an own task carry the MLflow tags
`hhx.task_origin=own` and `hhx.task_dir=<folder>` (official runs carry neither), and the console,
`stage=list`, `stage=describe` and the leaderboard say "own task, not official".
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from hhx.errors import ConfigError
from hhx.paths import conf_dir

ENV = "HHX_TASK_PATH"
SETTING = "task_path"
ORIGIN_TAG = "hhx.task_origin"
DIR_TAG = "hhx.task_dir"
OWN = "own"
NOT_OFFICIAL = "own task, not official"
RELEASE_FILES = ("tabular/{}.csv", "prompts/{}.jsonl", "splits/{}.csv")
_HOW = f"name task folders with {SETTING}=[/abs/dir] or {ENV}"

_FOUND: dict[str, dict[str, Path]] = {}  # the variable's value -> name -> folder


def official_names() -> list[str]:
    """The official tasks: conf/task/*.yaml of hhx itself."""
    return sorted(p.stem for p in (conf_dir() / "task").glob("*.yaml"))


def parse_path(value: str) -> list[Path]:
    """`[/a,/b]`, `/a,/b` or `/a<os.pathsep>/b` -> the folders, resolved."""
    text = value.strip().removeprefix("[").removesuffix("]")
    parts = [p.strip().strip("'\"") for chunk in text.split(",") for p in chunk.split(os.pathsep)]
    return [Path(p).expanduser().resolve() for p in parts if p]


def task_path() -> list[Path]:
    """The task folders named by HHX_TASK_PATH, in order."""
    return parse_path(os.environ.get(ENV, ""))


def set_task_path(folders: list[Path]) -> None:
    """Name the task folders for this process and the processes it starts."""
    os.environ[ENV] = os.pathsep.join(str(f) for f in folders)


def _scan(folders: list[Path]) -> dict[str, Path]:
    official = set(official_names())
    found: dict[str, Path] = {}
    for folder in folders:
        if not folder.is_dir():
            raise ConfigError(f"{SETTING}: {folder} is not a folder; {_HOW}")
        yamls = sorted((folder / "task").glob("*.yaml"))
        if not yamls:
            raise ConfigError(f"{SETTING}: {folder} holds no task/<name>.yaml; a task folder "
                              "holds task/<name>.yaml and its builder (hhx/tasks/own.py)")
        for path in yamls:
            name = path.stem
            if name in official:
                raise ConfigError(f"{path}: {name} is an official task's name; an own task "
                                  "must not shadow it: rename the file and its `name:`")
            if name in found and found[name] != folder:
                raise ConfigError(f"task {name} is defined in both {found[name]} and {folder} "
                                  f"({SETTING}); keep one")
            found[name] = folder
    return found


def own_tasks() -> dict[str, Path]:
    """Own task name -> its folder, for the task path as it is now (checked once per value)."""
    key = os.environ.get(ENV, "")
    if key not in _FOUND:
        _FOUND[key] = _scan(task_path()) if key.strip() else {}
    return dict(_FOUND[key])


def own_task_names() -> list[str]:
    return sorted(own_tasks())


def own_task_dir(name: str) -> Path | None:
    """The folder of own task `name`; None for an official (or unknown) task."""
    if not os.environ.get(ENV, "").strip():
        return None  # no task path: nothing to scan (official runs stay as they were)
    return own_tasks().get(name)


def is_own(name: str) -> bool:
    return own_task_dir(name) is not None


def origin_tags(name: str) -> dict[str, str]:
    """The MLflow tags that mark an own task's run; none for an official task."""
    folder = own_task_dir(name)
    return {} if folder is None else {ORIGIN_TAG: OWN, DIR_TAG: str(folder)}


def own_label(name: str) -> str:
    """` · own task, not official (<folder>)` for an own task, "" for an official one."""
    folder = own_task_dir(name)
    return "" if folder is None else f" · {NOT_OFFICIAL} ({folder})"


def task_file(name: str) -> Path | None:
    folder = own_task_dir(name)
    return None if folder is None else folder / "task" / f"{name}.yaml"


def builder_file(name: str, builder: str) -> Path:
    """The builder file an own task's `builder:` names, relative to its task folder."""
    folder = own_task_dir(name)
    assert folder is not None
    path = Path(builder).expanduser()
    path = path if path.is_absolute() else folder / path
    if path.suffix != ".py" or not path.is_file():
        raise ConfigError(f"{folder / 'task' / (name + '.yaml')}: builder {builder!r} is not a "
                          f".py file in {folder}; name the builder's file, relative to the task "
                          "folder (e.g. builder: my_task.py)")
    return path


def builder_digest(name: str, builder: str | None) -> str | None:
    """sha256 of an own task's builder file (a build is fresh only while it is unchanged)."""
    if not builder or not is_own(name):
        return None
    return hashlib.sha256(builder_file(name, builder).read_bytes()).hexdigest()


def has_release(name: str) -> bool:
    """Whether the own task's folder holds the task built, in the release layout."""
    folder = own_task_dir(name)
    return folder is not None and all((folder / f.format(name)).is_file() for f in RELEASE_FILES)
