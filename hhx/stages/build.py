"""`stage=build`: raw files -> intermediates -> the task in the official release layout.

    python -m hhx stage=build task=labor_cps_jobfind            # the task (and what it needs)
    python -m hhx stage=build survey=cps data=raw                # only a survey's intermediates
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from hhx.stages.data import build_bench_task, build_survey, is_synthetic, source_of, survey_config
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


def run(cfg: DictConfig) -> dict[str, Any]:
    t0 = time.perf_counter()
    name = survey_requested(cfg)
    tags = {"hhx.stage": "build", "hhx.data_source": source_of(cfg).value,
            "hhx.synthetic": "true" if is_synthetic(cfg) else "false"}
    if name:
        if is_synthetic(cfg):
            from hhx.stages.data import ensure_demo_raw

            ensure_demo_raw(cfg, Path(cfg.data.raw_dir))
        report = build_survey(survey_config(cfg, name), Path(cfg.data.raw_dir),
                              Path(cfg.data.intermediate_dir))
        metrics: dict[str, Any] = {f"rows.{k}": v for k, v in report.rows.items()}
        tags.update({"hhx.survey": name})
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
