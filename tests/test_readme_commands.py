"""Every `python -m hhx …` command the README shows composes and passes the settings check.

A README command that a settings change breaks (a renamed key, a refused `+key`, a preset
gone) fails here, not in a new user's first minutes. Placeholders (`<acct>`, `<served>`) get a
dummy value; a sweep (`a,b` or a task set) is checked with its first value, as its first job.
Running the commands is the job of the tests of each stage; this checks only what is written.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import open_dict

from hhx.app import expand_task_sets, own_task_args
from hhx.config_check import validate_config
from hhx.paths import conf_dir, register_resolvers
from hhx.predictors.base import register_schemas
from hhx.sweeps.grid import register_resolvers as register_sweep_resolvers

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_commands() -> list[str]:
    """The argument part of each `-m hhx` line in the README's bash blocks (continuations
    joined, comments dropped)."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if "-m hhx" in line:
                found.append(re.sub(r"\s#.*$", "", line).split("-m hhx", 1)[1].strip())
    return found


def first_job(command: str) -> list[str]:
    command = command.replace("$PWD", str(README.parent))  # the README's commands run from the root
    args = shlex.split(re.sub(r"<[^>]*>", "x", command))
    if "--cfg" in args:  # `--cfg hydra|job …`: the value is not an override
        del args[args.index("--cfg"):args.index("--cfg") + 2]
    # `task_path=[...]` (own task folders) as the command takes it: off the line, into Hydra's
    # search path (and HHX_TASK_PATH, restored by the test)
    args = [a for a in expand_task_sets(own_task_args(args)) if not a.startswith("-")]
    out = []
    for override in OverridesParser.create().parse_overrides(args):
        if override.is_sweep_override():
            first = next(iter(override.sweep_string_iterator()))
            out.append(f"{'+' if override.is_add() else ''}{override.key_or_group}={first}")
        else:
            out.append(override.input_line)
    return out


COMMANDS = readme_commands()


def test_the_readme_shows_its_commands():
    assert len(COMMANDS) >= 25, COMMANDS  # the parser above still finds them


@pytest.mark.parametrize("command", COMMANDS)
def test_a_readme_command_composes_and_passes_the_settings_check(command, monkeypatch):
    from hhx.tasks.own import ENV

    monkeypatch.setenv(ENV, "")  # a task path a command sets ends with the test
    register_schemas()
    register_resolvers()
    register_sweep_resolvers()
    GlobalHydra.instance().clear()
    with initialize_config_dir(str(conf_dir()), version_base="1.3"):
        # hydra/launcher=… and hydra.launcher.… overrides compose only with Hydra's own node;
        # the app checks the job's config without it
        cfg = compose("config", overrides=first_job(command), return_hydra_config=True)
    with open_dict(cfg):
        del cfg["hydra"]
    validate_config(cfg)
