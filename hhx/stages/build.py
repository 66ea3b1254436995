"""`stage=build`: raw files -> intermediates -> the task in the official release layout.

    python -m hhx stage=build task=labor_cps_jobfind            # the task (and what it needs)
    python -m hhx stage=build survey=cps data=raw                # only a survey's intermediates
    python -m hhx stage=build survey=all data=raw                # every source, in waves
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, HhxError
from hhx.stages.data import (
    build_bench_task,
    build_survey,
    is_synthetic,
    load_survey,
    source_of,
    survey_config,
)
from hhx.surveys.base import BuildReport
from hhx.tasks.registry import as_task
from hhx.tracking.mlflow_run import flatten_config, log_run


def survey_requested(cfg: DictConfig) -> str | None:
    """The survey named on the command line (`survey=<name>`), if any."""
    try:
        overrides = HydraConfig.get().overrides.task
    except ValueError:
        return None
    for item in overrides:
        if item.split("=", 1)[0].lstrip("+~") == "survey":
            return str(cfg.survey.name)
    return None


def survey_waves(surveys: dict[str, SurveyConfig]) -> list[list[str]]:
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


def _build_one(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport | str:
    try:
        return build_survey(survey, raw_dir, out_dir)
    except HhxError as exc:  # reported with the others at the end
        return str(exc)


def build_all(cfg: DictConfig) -> dict[str, BuildReport]:
    """Every source with a builder; independent ones in parallel. Failures (e.g. raw files not
    downloaded) are listed, their dependents skipped, and the stage then fails."""
    from joblib import Parallel, delayed

    names = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "conf" / "survey")
                   .glob("*.yaml") if p.stem != "all")
    surveys = {n: s for n in names if (s := load_survey(n)).builder}
    raw_dir, out_dir = Path(cfg.data.raw_dir), Path(cfg.data.intermediate_dir)
    reports: dict[str, BuildReport] = {}
    problems: dict[str, str] = {}
    for wave in survey_waves(surveys):
        todo = [n for n in wave if not set(surveys[n].depends_on) & set(problems)]
        for n in set(wave) - set(todo):
            problems[n] = f"skipped: needs {sorted(set(surveys[n].depends_on) & set(problems))}"
        jobs = max(1, min(len(todo), os.cpu_count() or 1))
        results = Parallel(n_jobs=jobs)(delayed(_build_one)(surveys[n], raw_dir, out_dir)
                                        for n in todo)
        for n, result in zip(todo, results, strict=True):
            if isinstance(result, str):
                problems[n] = result
            else:
                reports[n] = result
                print(f"built {n}: " + ", ".join(f"{k}={v:,}" for k, v in result.rows.items()))
    if problems:
        listing = "; ".join(f"{n}: {why}" for n, why in sorted(problems.items()))
        raise HhxError(f"survey=all built {len(reports)} of {len(surveys)} sources; {listing}")
    return reports


def run(cfg: DictConfig) -> dict[str, Any]:
    t0 = time.perf_counter()
    name = survey_requested(cfg)
    tags = {"hhx.stage": "build", "hhx.data_source": source_of(cfg).value,
            "hhx.synthetic": "true" if is_synthetic(cfg) else "false"}
    if name == "all":
        reports = build_all(cfg)
        metrics: dict[str, Any] = {f"rows.{n}.{k}": v for n, r in reports.items()
                                   for k, v in r.rows.items()}
        tags.update({"hhx.survey": "all"})
        if any(r.synthetic for r in reports.values()):  # generated raw files, even as data=raw
            tags["hhx.synthetic"] = "true"
        params = {**flatten_config(cfg), **{f"input.{k}": v for r in reports.values()
                                            for k, v in r.inputs.items()}}
    elif name:
        if is_synthetic(cfg):
            from hhx.stages.data import ensure_demo_raw

            ensure_demo_raw(cfg, Path(cfg.data.raw_dir))
        report = build_survey(survey_config(cfg, name), Path(cfg.data.raw_dir),
                              Path(cfg.data.intermediate_dir))
        metrics = {f"rows.{k}": v for k, v in report.rows.items()}
        tags.update({"hhx.survey": name})
        if report.synthetic:
            tags["hhx.synthetic"] = "true"
        params = {**flatten_config(cfg), **{f"input.{k}": v for k, v in report.inputs.items()}}
        print(f"built survey {name}: " + ", ".join(f"{k}={v:,}" for k, v in report.rows.items()))
    else:
        task = as_task(cfg.task)
        bench = build_bench_task(cfg, task)
        counts = bench.splits["split"].value_counts().to_dict() if bench.splits is not None else {}
        metrics = {"rows": len(bench.prompts), **{f"rows.{k}": v for k, v in counts.items()}}
        tags.update({"hhx.task": task.name})
        params = flatten_config(cfg)
        print(f"built {task.name} in {bench.root}: {len(bench.prompts):,} rows "
              + ", ".join(f"{k}={v:,}" for k, v in sorted(counts.items())))
    metrics["seconds"] = time.perf_counter() - t0
    log_run(cfg.tracking, run_name=f"build/{name or cfg.task.name}", params=params, tags=tags,
            metrics=metrics, artifact_dir=None)
    return metrics
