"""The survey sources in `conf/survey/` and the graph their `depends_on` lists form.

A task names the sources it reads (`conf/task/<t>.yaml` `intermediates`); a source names the
sources whose intermediates it reads first (`depends_on`). `build_order` turns either into the
sources to build, dependencies first, each once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

from omegaconf import OmegaConf

from hhx.config import SurveyConfig
from hhx.errors import ConfigError
from hhx.paths import conf_dir

SURVEY_DIR = conf_dir() / "survey"  # working copy or wheel (hhx/paths.py)
ALL = "all"  # conf/survey/all.yaml: every source (no builder of its own)


def survey_names() -> list[str]:
    """Every source with a config file (not `all`), sorted."""
    return sorted(p.stem for p in SURVEY_DIR.glob("*.yaml") if p.stem != ALL)


@functools.cache
def _load(name: str) -> SurveyConfig:
    path = SURVEY_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"unknown survey {name!r}; valid surveys: {', '.join(survey_names())}")
    try:
        merged = OmegaConf.merge(OmegaConf.structured(SurveyConfig), OmegaConf.load(path))
    except Exception as exc:  # OmegaConf names the key
        raise ConfigError(f"{path}: {exc}".splitlines()[0]) from None
    survey = OmegaConf.to_object(merged)
    assert isinstance(survey, SurveyConfig)
    return survey


def load_survey(name: str) -> SurveyConfig:
    """`conf/survey/<name>.yaml` validated against SurveyConfig (a fresh copy each call)."""
    import copy

    return copy.deepcopy(_load(name))


def survey_waves(surveys: Mapping[str, SurveyConfig]) -> list[list[str]]:
    """Sources in dependency order: each wave needs only earlier waves (Kahn's algorithm)."""
    pending = {name: set(s.depends_on) for name, s in surveys.items()}
    for name, deps in pending.items():
        unknown = deps - set(pending)
        if unknown:
            raise ConfigError(f"conf/survey/{name}.yaml: depends_on names unknown {sorted(unknown)}")
    waves: list[list[str]] = []
    done: set[str] = set()
    while pending:
        ready = sorted(n for n, deps in pending.items() if deps <= done)
        if not ready:
            raise ConfigError(f"conf/survey: circular depends_on among {sorted(pending)}")
        waves.append(ready)
        done |= set(ready)
        for n in ready:
            del pending[n]
    return waves


def with_dependencies(
    names: Iterable[str], surveys: Mapping[str, SurveyConfig] | None = None
) -> dict[str, SurveyConfig]:
    """`names` and everything they depend on, transitively (configs from `surveys` first)."""
    given = dict(surveys or {})
    out: dict[str, SurveyConfig] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out[name] = given.get(name) or load_survey(name)
        todo.extend(out[name].depends_on)
    return out


def build_order(
    names: Iterable[str], surveys: Mapping[str, SurveyConfig] | None = None
) -> list[list[str]]:
    """The waves that build `names` with their dependencies (each source once)."""
    return survey_waves(with_dependencies(names, surveys))
