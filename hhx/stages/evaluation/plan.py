"""`EvalRun`: what one evaluation is, read once from the config; each step takes the parts it needs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from hhx.bounds import enum_text
from hhx.config import DataSource, TaskConfig, TrackingConfig
from hhx.predictors.base import predictor_config
from hhx.predictors.llm.prompt_variants import OFFICIAL, PromptVariant, variant_from_config
from hhx.predictors.protocol import PredictorConfig
from hhx.tasks.registry import as_task
from hhx.tasks.sources import source_of
from hhx.tracking.labels import model_label


@dataclass(frozen=True)
class ScoreOptions:
    """The scorer's switches (`score.*`)."""

    prediction_field: str | None
    repair_number_formatting: bool
    repair_distribution_nesting: bool


@dataclass(frozen=True)
class EvalRun:
    """One task x one model: which rows, which predictor, how it is scored and where it is tracked.

    The data sources get the `data` group (and the `survey` group a command selected), the
    backend's factory the predictor's part (`predictor`: model, decoding, aggregation, prompt,
    score, seed, paths). Only what reads the config as a whole gets it, from the stage: the
    sweep cell (its identity hashes every setting that changes a result), the run's
    resolved.yaml and MLflow params, the pre-flight check (once per config)."""

    task: TaskConfig
    # `<model>`, `<model>+lora:<adapter>`, `<model> [few_shot k=3]` (hhx.tracking.labels.model_label)
    model_name: str
    backend: str
    base_model: str
    adapter: str  # the LoRA adapter's resolved path, "" for none
    model_cutoff: str
    source: DataSource
    split: str
    max_examples: int | None
    scoring: ScoreOptions
    min_coverage: float
    compare_no_change: bool
    publish_baselines: bool  # model.xgboost.publish_baselines
    tracking: TrackingConfig
    data: DictConfig  # the `data` group, as the data sources read it
    survey: DictConfig | None  # the `survey` group a command selected (its overrides), or None
    predictor: PredictorConfig
    prompt: PromptVariant = OFFICIAL  # the prompt variant (prompt=; official by default)

    @property
    def demo_data(self) -> bool:
        return self.source is DataSource.demo


def _tracking(tracking: Any) -> TrackingConfig:
    return TrackingConfig(enabled=bool(tracking.enabled), uri=str(tracking.uri),
                          experiment=str(tracking.experiment),
                          log_artifacts=bool(tracking.get("log_artifacts", True)))


def eval_run(cfg: DictConfig) -> EvalRun:
    """Read the run's settings from the config, once."""
    adapter = cfg.model.get("lora_adapter")
    xgboost = cfg.model.get("xgboost")
    prompt = variant_from_config(cfg)
    return EvalRun(
        task=as_task(cfg.task),
        model_name=model_label(cfg.model, prompt),
        backend=enum_text(cfg.model.backend),
        base_model=str(cfg.model.name),
        adapter=str(Path(adapter).resolve()) if adapter else "",
        model_cutoff=str(cfg.model.cutoff or ""),
        source=source_of(cfg.data),
        split=str(cfg.data.split),
        max_examples=cfg.data.max_examples,
        scoring=ScoreOptions(
            prediction_field=cfg.score.prediction_field,
            repair_number_formatting=bool(cfg.score.repair_number_formatting),
            repair_distribution_nesting=bool(cfg.score.repair_distribution_nesting)),
        min_coverage=float(getattr(cfg, "min_coverage", 0.0) or 0.0),
        compare_no_change=bool(cfg.compare_no_change),
        publish_baselines=xgboost is None or bool(xgboost.get("publish_baselines", True)),
        tracking=_tracking(cfg.tracking),
        data=cfg.data,
        survey=cfg.get("survey"),
        predictor=predictor_config(cfg),
        prompt=prompt,
    )
