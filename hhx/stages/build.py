"""`stage=build`: raw files -> intermediates -> the task in the official release layout.

    python -m hhx stage=build task=labor_cps_jobfind            # the task (and what it needs)
    python -m hhx stage=build survey=cps data=raw                # only a survey's intermediates
    python -m hhx stage=build survey=all data=raw                # every source, in waves
"""

from __future__ import annotations

import time
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from hhx.errors import HhxError
from hhx.surveys.base import BuildReport
from hhx.surveys.registry import ALL, survey_names, survey_waves
from hhx.tasks.own import origin_tags, own_label
from hhx.tasks.registry import as_task
from hhx.tasks.sources import (
    build_bench_task,
    is_synthetic,
    run_surveys,
    source_of,
    synthetic_inputs,
)
from hhx.tracking.mlflow_run import begin_run, experiment_for, fail_run, flatten_config, log_run

__all__ = ["run", "survey_waves"]


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


def build_sources(cfg: DictConfig, names: list[str]) -> dict[str, BuildReport | None]:
    """Build `names` and their dependencies (stale ones only); print one line per source."""
    from hhx.tasks.sources import ensure_demo_raw, ensure_surveys

    surveys = run_surveys(cfg.data, names, cfg.get("survey"))
    if is_synthetic(cfg.data):
        ensure_demo_raw(cfg.data, surveys)
    results = ensure_surveys(cfg.data, surveys, force=bool(cfg.data.rebuild))
    for wave in survey_waves(surveys):
        for n in wave:
            report = results.get(n)
            if report is None:
                print(f"up to date {n}")
            else:
                print(f"built {n}: " + ", ".join(f"{k}={v:,}" for k, v in report.rows.items()))
    return results


def run(cfg: DictConfig) -> dict[str, Any]:
    """Build runs go to `<tracking.experiment>-builds`, created RUNNING when the build starts."""
    name = survey_requested(cfg)
    target = name or str(cfg.task.name)
    experiment = experiment_for(cfg.tracking, "build")
    run_id = begin_run(cfg.tracking, run_name=f"{target} · build · {time.strftime('%m-%d %H:%M')}",
                       tags={"hhx.stage": "build", "hhx.status": "running"},
                       experiment=experiment)
    try:
        return _build(cfg, name, run_id, experiment)
    except BaseException as exc:
        fail_run(cfg.tracking, run_id, str(exc) or type(exc).__name__)
        raise


def _build(cfg: DictConfig, name: str | None, run_id: str | None,
           experiment: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    tags = {"hhx.stage": "build", "hhx.data_source": source_of(cfg.data).value,
            "hhx.synthetic": "true" if is_synthetic(cfg.data) else "false", "hhx.status": "finished"}
    if name:
        names = survey_names() if name == ALL else [name]
        try:
            results = build_sources(cfg, names)
        except HhxError as exc:
            if name == ALL:
                raise HhxError(f"survey=all {exc}") from None
            raise
        built = {n: r for n, r in results.items() if r is not None}
        metrics: dict[str, Any] = {f"rows.{n}.{k}": v for n, r in built.items()
                                   for k, v in r.rows.items()}
        metrics.update({f"counts.{n}.{k}": v for n, r in built.items()
                        for k, v in r.counts.items()})
        metrics["sources_built"] = len(built)
        metrics["sources_up_to_date"] = len(results) - len(built)
        tags["hhx.survey"] = name
        if synthetic_inputs(cfg.data, list(results)):  # generated raw files, even as data=raw
            tags["hhx.synthetic"] = "true"
        params = {**flatten_config(cfg), **{f"input.{k}": v for r in built.values()
                                            for k, v in r.inputs.items()}}
    else:
        task = as_task(cfg.task)
        bench = build_bench_task(cfg.data, task, cfg.get("survey"))
        counts = bench.splits["split"].value_counts().to_dict() if bench.splits is not None else {}
        metrics = {"rows": len(bench.prompts), **{f"rows.{k}": v for k, v in counts.items()}}
        tags.update({"hhx.task": task.name, **origin_tags(task.name)})
        if bench.synthetic:
            tags["hhx.synthetic"] = "true"
        params = flatten_config(cfg)
        print(f"built {task.name} in {bench.root}: {len(bench.prompts):,} rows "
              + ", ".join(f"{k}={v:,}" for k, v in sorted(counts.items()))
              + own_label(task.name))
    metrics["seconds"] = time.perf_counter() - t0
    log_run(cfg.tracking, run_name=f"{name or cfg.task.name} · build", params=params, tags=tags,
            metrics=metrics, artifact_dir=None, run_id=run_id, experiment=experiment)
    return metrics
