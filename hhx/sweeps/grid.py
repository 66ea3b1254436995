"""Named task sets for sweeps: `${hhx.tasks:all}` in a preset's `hydra.sweeper.params`.

Hydra's sweeper reads its params as override strings, so a preset cannot say `task=all` (hhx
expands that on the command line only, hhx/app.py). The resolver gives the same comma list from
the registry at composition time, so presets never carry a hand-copied list that drifts:

    ${hhx.tasks:all}                every task, registry order
    ${hhx.tasks:policy}             a mode (baseline | policy)
    ${hhx.tasks:buildable,cps,2}    filters combine: tasks hhx builds from raw files, of the cps
                                    survey, the first 2
    ${hhx.tasks:own}                the tasks of one's own task folders (hhx/tasks/own.py);
                                    every other set is of official tasks only
"""

from __future__ import annotations

from omegaconf import OmegaConf

from hhx.errors import ConfigError

SETS = ("all", "baseline", "policy", "buildable", "own")


def select_tasks(*tokens: str | int) -> list[str]:
    """Task names matching every filter, in registry order (see the module docstring)."""
    from hhx.tasks.own import ENV, SETTING, own_task_names
    from hhx.tasks.registry import load_task, task_names

    names = task_names()
    if "own" in map(str, tokens):
        names = own_task_names()
        if not names:
            raise ConfigError(f"task=own: no own task; name your task folders with "
                              f"{SETTING}=[/abs/dir] or {ENV}")
    specs = {n: load_task(n) for n in names}
    surveys = {s.survey for s in specs.values()}
    limit: int | None = None
    for raw in tokens:
        token = str(raw).strip()
        if token.isdigit():
            limit = int(token)
        elif token in ("all", "own"):
            continue
        elif token in ("baseline", "policy"):
            names = [n for n in names if specs[n].mode.value == token]
        elif token == "buildable":
            names = [n for n in names if specs[n].builder]
        elif token in surveys:
            names = [n for n in names if specs[n].survey == token]
        else:
            raise ConfigError(
                f"${{hhx.tasks:...}}: unknown filter {token!r}; use {', '.join(SETS)}, a survey "
                f"({', '.join(sorted(surveys))}) or a count"
            )
    return names[:limit] if limit is not None else names


def tasks_resolver(*tokens: str | int) -> str:
    names = select_tasks(*tokens)
    if not names:
        raise ConfigError(f"${{hhx.tasks:{','.join(map(str, tokens))}}} selects no task")
    return ",".join(names)


def register_resolvers() -> None:
    """`hhx.tasks` and `hhx.resource` (hhx/sweeps/resources.py); called before composition."""
    from hhx.sweeps.resources import resource_resolver

    OmegaConf.register_new_resolver("hhx.tasks", tasks_resolver, replace=True)
    OmegaConf.register_new_resolver("hhx.resource", resource_resolver, replace=True)
