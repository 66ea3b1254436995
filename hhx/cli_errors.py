"""A command Hydra cannot compose, as one line with the closest name ("did you mean").

Hydra reports a misspelt group option (`task=labor_cps_jobfnd`) with its whole search path (~40
lines), a misspelt key (`data.max_exampls=5`) with its internals, a misspelt group
(`modle=no_change`) by suggesting `+modle=no_change` (which would add a setting nothing reads),
and a required setting left unset (`model=openai_compatible` without `model.name`) with a
traceback. Before the job starts nothing has run: no run folder, no MLflow run exists yet.

`install()` wraps Hydra's error reporter (`hydra._internal.utils.run_and_report`, the function
every Hydra entry point runs its steps through): a Hydra or OmegaConf error raised before hhx's
job began becomes `hhx: error: <one line>` (exit 2). Errors raised inside a job, and every error
when HYDRA_FULL_ERROR=1, are reported as Hydra does.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
import sys
from typing import Any

from hhx.cli_help import config_groups
from hhx.paths import conf_dir

_state: dict[str, Any] = {"job_started": False, "args": None}


def job_started() -> None:
    """Called first thing in the job: from here on an error is the job's, not the command's."""
    _state["job_started"] = True


def _argv() -> list[str]:
    args = _state["args"]  # the Python API's overrides (`given_line`), else the command line
    return list(args) if args is not None else sys.argv[1:]


def _given(key: str) -> str | None:
    """The value the command line gives `key` (with or without +, ++), or None."""
    for arg in _argv():
        name, sep, value = arg.lstrip("+~").partition("=")
        if sep and name.strip() == key:
            return value
    return None


def _close(word: str, options: list[str]) -> str | None:
    found = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return found[0] if found else None


def _schema_fields(node_type: Any) -> list[str]:
    if node_type is not None and dataclasses.is_dataclass(node_type):
        return [f.name for f in dataclasses.fields(node_type)]
    return []


def missing_option_line(exc: Any) -> str:
    """`task=labor_cps_jobfnd`: the group's closest option, or the closest group."""
    wanted = str(getattr(exc, "missing_cfg_file", "") or "")
    group, _, option = wanted.rpartition("/")
    groups = config_groups()
    if group not in groups:
        near = _close(group, list(groups))
        hint = f"; did you mean {near}={option}?" if near else ""
        return f"{group}={option}: there is no config group {group}{hint} (hhx --help lists them)"
    options = groups[group]
    near = _close(option, options)
    if near:
        where = "hhx stage=list lists them" if group in ("task", "model") else (
            f"options: {', '.join(options)}")
        return f"{group}={option}: no {group} named {option}; did you mean {group}={near}? ({where})"
    return f"{group}={option}: no {group} named {option}; one of: {', '.join(options)}"


def unknown_key_line(key: str, missing: str, cause: Any) -> str:
    """`data.max_exampls=5` / `modle=no_change` / `model.xgbost.threads=1`: the closest key (or
    group, with its option) put in place of the unknown part."""
    from hhx.config import HhxConfig

    value = _given(key)
    parts = key.split(".")
    at = parts.index(missing) if missing in parts else len(parts) - 1
    known = _schema_fields(getattr(cause, "object_type", None))
    if at == 0:  # a top-level name: a setting, or a config group (model=, data=...)
        known = sorted(set(_schema_fields(HhxConfig)) | set(config_groups()))
    near = _close(parts[at], known)
    if near is None:
        return f"unknown setting {key}" + (f"; known there: {', '.join(known)}" if known else "")
    fixed = ".".join([*parts[:at], near, *parts[at + 1:]])
    return f"unknown setting {key}; did you mean {fixed}" + (
        f"={value}?" if value is not None else "?")


def _yaml_comment(group: str, leaf: str) -> str:
    """The comment on `leaf: ???` in the chosen option's YAML (e.g. 'the served model name')."""
    option = _given(group)
    if not option:
        return ""
    path = conf_dir() / group / f"{option}.yaml"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    for line in lines:
        if line.startswith(f"{leaf}:") and "???" in line and "#" in line:
            return line.split("#", 1)[1].strip().removeprefix("required:").strip()
    return ""


def missing_value_line(key: str) -> str:
    """`model=openai_compatible` without `model.name`: which setting, and what it is."""
    group, _, leaf = key.partition(".")
    what = _yaml_comment(group, leaf)
    option = _given(group)
    needs = f" ({group}={option} needs it{': ' + what if what else ''})" if option else ""
    return f"{key} is required and has no value{needs}; add {key}=<value> to the command"


def _one_line(text: object) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def error_line(exc: BaseException) -> str:
    """One line for a Hydra/OmegaConf error raised while composing the command's config."""
    return _line(exc).removeprefix("hhx: error: ")  # hhx's own launchers word theirs already


def given_line(exc: BaseException, args: list[str]) -> str:
    """`error_line` for a config composed from `args` rather than the command line (the Python
    API, hhx/api.py): the same one line the command `hhx <args>` prints after "hhx: error: "."""
    _state["args"] = list(args)
    try:
        return error_line(exc)
    finally:
        _state["args"] = None


def _line(exc: BaseException) -> str:
    from hydra.errors import MissingConfigException

    if isinstance(exc, MissingConfigException) and getattr(exc, "missing_cfg_file", None):
        return missing_option_line(exc)
    chain = [exc] + ([exc.__cause__] if exc.__cause__ is not None else [])
    text = " ".join(_one_line(e) for e in chain)
    match = re.search(r"Could not override '([^']+)'", text)
    missing = re.search(r"Key '([^']+)' not in", text)
    if match and missing:
        return unknown_key_line(match.group(1), missing.group(1), exc.__cause__)
    match = re.search(r"Value '(.*?)' of type '\w+' could not be converted to (\w+)"
                      r".*?full_key: ([\w.]+)", text)
    if match:
        value, kind, key = match.groups()
        return f"{key}={value}: not a valid {kind.lower()}; give {key}=<{kind.lower()}>"
    match = re.search(r"Missing mandatory value: ([\w.]+)", text)
    if match:
        return missing_value_line(match.group(1))
    match = re.search(r"Invalid value '([^']*)', expected one of \[([^\]]*)\]", text)
    if match:
        bad, options = match.group(1), [o.strip() for o in match.group(2).split(",")]
        merged = re.search(r"override ([\w.]+)=", text)
        key = merged.group(1) if merged else "value"
        near = _close(bad, options)
        hint = f"; did you mean {key}={near}?" if near else ""
        return f"{key}={bad} is not one of {', '.join(options)}{hint}"
    return text  # anything else: Hydra's words and their cause, on one line


def _reraise(exc: BaseException) -> None:
    raise exc


def install() -> None:
    """Route composition errors to one line; keep Hydra's report for everything else."""
    import hydra._internal.utils as hydra_utils
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    report = hydra_utils.run_and_report
    if getattr(report, "hhx_one_line", False):
        return

    def run_and_report(func: Any) -> Any:
        try:
            return func()
        except (HydraException, OmegaConfBaseException) as exc:
            if _state["job_started"] or hydra_utils._is_env_set("HYDRA_FULL_ERROR"):
                return report(functools.partial(_reraise, exc))
            print(f"hhx: error: {error_line(exc)}", file=sys.stderr)
            from hhx.sweeps.leftover import remove_unfinished_sweep

            remove_unfinished_sweep()  # a sweep's folder made before its cells were composed
            raise SystemExit(2) from None
        except Exception as exc:
            return report(functools.partial(_reraise, exc))

    run_and_report.hhx_one_line = True  # type: ignore[attr-defined]
    hydra_utils.run_and_report = run_and_report
