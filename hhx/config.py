"""Structured configs: the typed schema of every Hydra config group.

Registered with Hydra's ConfigStore, so a misspelt key or a wrong type in any YAML file or
command-line override fails at start-up with the offending key named, not later in a run.
One dataclass per concern; `conf/<group>/*.yaml` files fill them in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from omegaconf import MISSING

from hhx.bounds import at_least, between, more_than, one_of
from hhx.catalog import BACKENDS, STAGES

# --------------------------------------------------------------------------------------------
# Enumerations (OmegaConf validates enum members by name)


# The stages and the backends are declared once, in hhx/catalog.py; the schema's enums follow.
Stage = Enum(  # type: ignore[misc]
    "Stage", [(s.name, s.name) for s in STAGES], type=str, module=__name__, qualname="Stage")


class Mode(str, Enum):
    baseline = "baseline"
    policy = "policy"


class TargetType(str, Enum):
    numeric = "numeric"
    categorical = "categorical"
    distribution = "distribution"


class Shape(str, Enum):
    array = "array"
    distribution_array = "distribution_array"


class SplitUnit(str, Enum):
    quarter = "quarter"
    row = "row"


class SortOrder(str, Enum):
    id_time = "id_time"
    time_typed_id_id = "time_typed_id_id"


class DataSource(str, Enum):
    demo = "demo"  # seeded synthetic raw files, built by hhx (always tagged synthetic)
    official = "official"  # a directory in the official release or eval-sample layout
    raw = "raw"  # the user's downloaded survey files, built by hhx


Backend = Enum(  # type: ignore[misc]
    "Backend", [(name, name) for name in BACKENDS], type=str, module=__name__, qualname="Backend")


# Fixed value sets of settings kept as text in the config (so logged params, hashes and error
# lines stay the text); each field names its set with `one_of` (hhx/bounds.py).


class TieRule(str, Enum):
    first_draw = "first_draw"  # the tied label drawn earliest
    label_order = "label_order"  # the tied label listed first in the task


class SchemaStyle(str, Enum):
    openai = "openai"  # response_format json_schema
    llamacpp = "llamacpp"  # json_object + schema, what llama.cpp's server accepts


class Layout(str, Enum):
    release = "release"  # tabular/prompts/splits
    eval_sample = "eval_sample"  # {split}/<task>.jsonl


class TimeBin(str, Enum):
    year = "year"
    quarter = "quarter"


class SftLoss(str, Enum):
    ce = "ce"  # token cross-entropy on the answer
    ntl = "ntl"  # + ntl_weight x number-token loss


# --------------------------------------------------------------------------------------------
# task/


@dataclass
class FieldConfig:
    """One answer element of an `array` task (scorer name, answer order)."""

    name: str = MISSING
    # Categorical label set in the scorer's order; None for numeric fields.
    labels: list[str] | None = None
    # Class domain in the pipeline registry's order (XGBoost class indices); None = `labels`.
    domain: list[str] | None = None


@dataclass
class DistributionConfig:
    """One probability vector of a `distribution_array` task."""

    name: str = MISSING
    # Pipeline registry group (e.g. `move`, `inflation_3y`): names the XGBoost output and its seed
    # (spec 10.5); None = `name`.
    group: str | None = None
    labels: list[str] = MISSING
    # Table target columns holding it: one column p -> [1-p, p]; several -> the columns in order.
    columns: list[str] = MISSING
    # Values in the table are percentages (0-100) to be divided by 100.
    percent: bool = True


@dataclass
class PromptMonthConfig:
    fixed_month: int | None = None
    currency: bool = True


@dataclass
class TaskConfig:
    name: str = MISSING
    topic: str = MISSING
    mode: Mode = MISSING
    survey: str = MISSING
    description: str = ""
    target_type: TargetType = MISSING
    shape: Shape = MISSING
    fields: list[FieldConfig] = field(default_factory=list)
    distributions: list[DistributionConfig] = field(default_factory=list)
    # Registry view: table target columns (answer order) and predictors (table order).
    targets: list[str] = field(default_factory=list)
    prompt_predictors: list[str] = field(default_factory=list)
    categorical_predictors: list[str] = field(default_factory=list)
    # Predictors the official table reader rejects when missing (spec 30: six SCE tasks).
    required_predictors: list[str] = field(default_factory=list)
    split_unit: SplitUnit = SplitUnit.quarter
    sort_order: SortOrder = SortOrder.time_typed_id_id
    typed_id: str | None = None  # e.g. "id:integer", "CASEID:integer"
    prompt_month: PromptMonthConfig | None = None
    naive_baseline: str = ""  # what the no-change prediction is, in words
    # XGBoost seeds per model output (spec 10.5), keyed by target column or distribution group.
    xgb_seeds: dict[str, int] = field(default_factory=dict)
    # Dotted module of hhx's builder for this task; None until hhx can build it from raw files.
    builder: str | None = None
    # The sources (conf/survey/<name>.yaml) whose intermediates the builder reads; a build
    # resolves them with their dependencies. Every task reads fred_qd (the macro context).
    intermediates: list[str] = field(default_factory=list)
    on_hf: bool = False  # part of the official public eval sample / full release


# --------------------------------------------------------------------------------------------
# survey/, data/


@dataclass
class SurveyConfig:
    name: str = MISSING
    description: str = ""
    # Dotted module with `build(survey, raw_dir, out_dir) -> BuildReport`.
    builder: str | None = None
    # Surveys whose intermediates this one needs first (e.g. macro context before survey builders).
    depends_on: list[str] = field(default_factory=list)
    # Raw input files by role, e.g. {"cps_basic": "/path/cps_basic.csv.gz"}; relative to data.raw_dir;
    # null = an optional input left out.
    raw: dict[str, str | None] = field(default_factory=dict)
    # Keys of `raw` the build goes on without when the file is absent, saying so in one line
    # (e.g. the CPS release-date crosswalk: then the proxy rule); listings do not call them missing.
    optional_raw: list[str] = field(default_factory=list)
    # Where the public data comes from (used in missing-file errors).
    source_url: str = ""
    chunk_rows: int = field(default=250_000, metadata=at_least(1))
    # Settings of this source's seeded generator for `data=demo` (sizes, spans), passed to its
    # writer in hhx/surveys/synthetic/demo.py.
    demo: dict[str, Any] = field(default_factory=dict)
    # Named deliberate deviations from the reference builder, all off by default; each builder
    # documents the names it knows (e.g. CPS: cps_extra_missing_codes, cps_raw_dws_columns).
    improvements: list[str] = field(default_factory=list)


@dataclass
class DemoConfig:
    # One seed for every source's generator; sizes and spans are each source's own
    # (`demo:` in conf/survey/<name>.yaml, e.g. survey.demo.n_households=4000 for cps).
    seed: int = 20261130
    # Per-source generator settings over the files' `demo:` blocks, e.g.
    # data.demo.surveys='{cps: {n_households: 300}, psid: {n_families: 20}}'.
    # (Typed Any so that a whole mapping can be given without `++`.)
    surveys: Any = None


@dataclass
class DataConfig:
    source: DataSource = DataSource.demo
    # Root of the benchmark layout: our builds write here; for `official` it is the user's download
    # (no default there: `data=official` without `data.root=` is an error, not the demo).
    root: str = MISSING
    raw_dir: str = "data/demo/raw"
    intermediate_dir: str = "data/demo/intermediate"
    # Official layout flavour: "release" (tabular/prompts/splits) or "eval_sample" ({split}/<task>.jsonl).
    layout: str = field(default="release", metadata=one_of(Layout))
    split: str = "pre_cutoff_test"
    # Evaluate the first N rows of the split by split_position (200 = the official eval-sample
    # rule); null = every row. The demo and raw groups set 200; data=official needs it given.
    max_examples: int | None = field(default=MISSING, metadata=at_least(1))
    # A real FRED-QD file in its published layout; None = the demo's synthetic macro series.
    fred_qd: str | None = None
    rebuild: bool = False
    demo: DemoConfig = field(default_factory=DemoConfig)


# --------------------------------------------------------------------------------------------
# model/, decoding/, aggregation/


@dataclass
class XGBoostConfig:
    threads: int = field(default=2, metadata=at_least(1))
    train_cap: int = field(default=400_000, metadata=at_least(1))
    validation_cap: int = field(default=50_000, metadata=at_least(1))
    # None = the reference settings (spec 10.4); an int overrides n_estimators for quick runs.
    n_estimators: int | None = field(default=None, metadata=at_least(1))
    early_stopping_rounds: int = field(default=300, metadata=at_least(1))
    # Write the official baselines/<task>.csv (every row's prediction), its manifest, READY.json
    # and the diagnostics (hhx/bench/baselines.py) after the fit.
    publish_baselines: bool = True


@dataclass
class ResourcesConfig:
    """What one job of this model asks a cluster for (hydra/launcher=submitit_slurm, ray).

    None = the backend's default (its entry in hhx/catalog.py: a vLLM model asks for a GPU, XGBoost
    for `xgboost.threads` CPUs, an API model for one CPU)."""

    gpus: int | None = None
    cpus: int | None = None
    mem_gb: int | None = None
    time_min: int | None = None
    partition: str | None = None


# A model's settings, grouped by who reads them: every backend (`ModelCommon`), the LLM backends
# (`LLMModelSettings`: litellm, vllm, llamacpp, transformers), XGBoost (`model.xgboost`), cluster
# jobs (`model.resources`). `ModelConfig` joins them into one flat `model:` node because the
# README's overrides (model.model_path=..., model.api_base=...), the logged MLflow params, the
# run's config.yaml and `hhx.config_hash` all name the settings `model.<field>`: the groups
# keep that order and those names. A backend's option that no field names goes in model.extra;
# a backend with settings of its own declares them in a subclass of ModelConfig in its module
# (its `BackendSpec.settings` in hhx/catalog.py; the custom backend's `target` and `params`).


@dataclass
class ModelCommon:
    name: str = MISSING
    backend: Backend = MISSING
    description: str = ""
    # Knowledge cutoff (ISO date) for before/after-cutoff analyses; None if unknown/not applicable.
    cutoff: str | None = None


@dataclass
class LLMModelSettings:
    """What the LLM backends read (hhx/predictors/llm/settings.py); the others ignore it."""

    model_id: str | None = None  # provider model string, e.g. "openai/gpt-5-mini"
    api_base: str | None = None
    api_key_env: str | None = None  # name of the env var holding the key (never the key)
    model_path: str | None = None  # local weights (GGUF file or HF directory)
    lora_adapter: str | None = None
    supports_n: bool = False
    supports_top_k: bool = False
    supports_reasoning_effort: bool = False
    supports_json_schema: bool = False
    reasoning_effort: str | None = None
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    n_ctx: int = field(default=4096, metadata=at_least(1))
    # llamacpp: convert the GGUF once to q8_0 / q4_0 / f16 for faster CPU kernels (null: as is).
    requantize: str | None = None
    max_concurrency: int = field(default=8, metadata=at_least(1))
    timeout_s: float = field(default=120.0, metadata=more_than(0))
    max_retries: int = field(default=6, metadata=at_least(0))
    requests_per_minute: int | None = field(default=None, metadata=at_least(1))
    max_cost_usd: float | None = field(default=None, metadata=at_least(0))
    constrained_decoding: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    # More capabilities (LLM backends): a decoding setting the model cannot take is a ConfigError.
    supports_seed: bool = True
    supports_sampling_params: bool = True  # temperature / top_p (some reasoning models refuse them)
    supports_chat_template_kwargs: bool = False  # enable_thinking (vLLM, OpenAI-compatible servers)
    # How a JSON schema is sent: "openai" (response_format json_schema) or "llamacpp" (json_object
    # + schema, what llama.cpp's server accepts).
    json_schema_style: str = field(default="openai", metadata=one_of(SchemaStyle))
    # first backoff delay; doubles per attempt, with jitter
    retry_base_s: float = field(default=1.0, metadata=at_least(0))
    retry_max_s: float = field(default=60.0, metadata=at_least(0))
    # Tokens a model may spend reasoning/thinking before its answer: added to the derived answer
    # budget (decoding.max_tokens=auto). 0 for models that answer directly.
    reasoning_tokens: int = field(default=0, metadata=at_least(0))


@dataclass
class ModelConfig(LLMModelSettings, ModelCommon):
    """conf/model/<name>.yaml: the common settings, then the LLM ones, then these."""

    xgboost: XGBoostConfig = field(default_factory=XGBoostConfig)  # the xgboost backend's
    resources: ResourcesConfig = field(default_factory=ResourcesConfig)  # cluster jobs (sweeps)


@dataclass
class DecodingConfig:
    name: str = "provider_default"
    temperature: float | None = field(default=None, metadata=at_least(0))
    top_p: float | None = field(default=None, metadata=between(0, 1, low_ok=False))
    top_k: int | None = field(default=None, metadata=at_least(1))
    min_p: float | None = field(default=None, metadata=between(0, 1))
    # Answer budget: "auto" (derived from the task's answer schema + model.reasoning_tokens), a
    # positive number, or "none" (no limit sent: the provider's default). Checked in
    # hhx.predictors.llm.settings (a str or an int, hence Any).
    max_tokens: Any = "auto"
    seed: int | None = 42
    enable_thinking: bool | None = None
    # A cut answer (finish_reason=length) that does not parse is asked again this many times,
    # each time with truncation_budget_factor times the budget (0 = never).
    truncation_retries: int = field(default=1, metadata=at_least(0))
    truncation_budget_factor: float = field(default=4.0, metadata=more_than(1))


@dataclass
class AggregationConfig:
    name: str = "k1"
    k: int = field(default=1, metadata=at_least(1))
    # Categorical majority-vote tie: "first_draw" (the tied label drawn earliest) or "label_order"
    # (the tied label listed first in the task).
    tie_rule: str = field(default="first_draw", metadata=one_of(TieRule))
    # Valid draws that make an answer. None: every draw must come back (an example with a draw
    # missing, its request failed, stays unanswered until a rerun completes it) and the valid
    # ones are aggregated. m in 1..k: m valid draws suffice, missing draws allowed.
    min_draws: int | None = field(default=None, metadata=at_least(1))


# --------------------------------------------------------------------------------------------
# prompt/ (prompt variants of the LLM backends; hhx/predictors/llm/prompt_variants.py)


class PromptKind(str, Enum):
    official = "official"  # the release's prompt records, sent as they are
    few_shot = "few_shot"  # k solved train examples as prior chat turns
    system = "system"  # another system message in place of the release's


OFFICIAL_PROMPT = PromptKind.official.value
DEFAULT_SHOT_SEED = 20261207


@dataclass
class PromptConfig:
    """conf/prompt/<name>.yaml: what the LLM is sent around the official prompt record.

    `official` (the default) leaves no trace in a run's resolved config, params or cell hash
    (`without_official_prompt`), so official runs stay exactly as before the group existed."""

    name: str = field(default=OFFICIAL_PROMPT, metadata=one_of(PromptKind))
    # few_shot: k solved examples from the task's train split, drawn once per task by `seed`.
    k: int = field(default=3, metadata=between(1, 64))
    seed: int = field(default=DEFAULT_SHOT_SEED, metadata=at_least(0))
    # A system message in place of the release's: the text, or a UTF-8 file holding it.
    system: str | None = None
    system_file: str | None = None


def without_official_prompt(container: dict[str, Any]) -> dict[str, Any]:
    """A resolved config as it was before prompt variants: the `prompt` node dropped when it is
    the official prompt (what resolved.yaml, the MLflow params and the cell hash are made from)."""
    prompt = container.get("prompt")
    if isinstance(prompt, dict) and prompt.get("name") == OFFICIAL_PROMPT:
        return {k: v for k, v in container.items() if k != "prompt"}
    return container


# --------------------------------------------------------------------------------------------
# tracking/, score, paths


@dataclass
class TrackingConfig:
    enabled: bool = True
    # MLflow tracking URI; default (conf/tracking/mlflow.yaml): $MLFLOW_TRACKING_URI, else a
    # SQLite store in the project root.
    uri: str = "sqlite:///mlflow.db"
    experiment: str = "hhx"
    log_artifacts: bool = True


@dataclass
class ScoreConfig:
    gold: str | None = None
    predictions: str | None = None
    output: str | None = None
    prediction_field: str | None = None
    repair_number_formatting: bool = False
    repair_distribution_nesting: bool = False
    include_details: bool = True
    # hhx's additions (unset = the reference's behaviour): score against a split's evaluated rows
    # as `data` selects them; warn below min_match of gold rows matched, exit 1 with the flag.
    split: str | None = None
    min_match: float = field(default=0.9, metadata=between(0, 1))
    fail_below_min_match: bool = False


@dataclass
class PathsConfig:
    """One project root for data, run folders and the store (conf/paths/default.yaml, hhx/paths.py)."""

    root: str = "."
    data_dir: str = "data"
    runs_dir: str = "outputs"
    cache_dir: str = "data/cache"


@dataclass
class LeaderboardConfig:
    """The leaderboard stage: which evaluate runs to collect and how to bootstrap them."""

    # MLflow experiment to collect evaluate runs from; None = tracking.experiment.
    experiment: str | None = None
    # A folder of run outputs (run_info.json found recursively) instead of MLflow.
    runs_dir: str | None = None
    output_dir: str = "outputs/leaderboard"
    n_resamples: int = field(default=10_000, metadata=at_least(1))
    seed: int = 20261130
    confidence: float = field(default=0.95, metadata=between(0, 1, low_ok=False))
    # Demo runs are synthetic and never mixed with real-data runs: by default real runs are ranked
    # and synthetic ones excluded; when only synthetic runs exist they are ranked, labelled so.
    # true = rank the synthetic runs (refused if real runs are selected too).
    include_synthetic: bool = False
    models: list[str] = field(default_factory=list)  # empty = all
    tasks: list[str] = field(default_factory=list)  # empty = all
    split: str | None = None  # None = the only split present (several -> error)
    # Model name of the XGBoost comparator; None = the one run with backend xgboost, if any.
    xgboost_model: str | None = None
    # Derive a no-change entry from the details' naive_baseline where no no_change run exists.
    derive_no_change: bool = True
    # performance over release time by year or quarter
    time_bin: str = field(default="year", metadata=one_of(TimeBin))


# --------------------------------------------------------------------------------------------
# sft/ (fine-tuning; hhx/sft/)


@dataclass
class SftConfig:
    """LoRA supervised fine-tuning on the SFT set (spec 6.2) and its export (stage=sft_data)."""

    name: str = "paper"
    # Baseline tasks to export/train on; empty = every baseline task built under data.root.
    tasks: list[str] = field(default_factory=list)
    # the first N train rows by split_position (spec 6.2)
    rows_per_task: int = field(default=6000, metadata=at_least(1))
    # Where stage=sft_data writes and stage=sft reads the set; None = `<data.root>_sft` beside it.
    data_dir: str | None = None
    # Adapter, checkpoints, loss curve; None = <paths.runs_dir>/sft/<model>-<name>-<loss>.
    output_dir: str | None = None
    # Loss: "ce" (token cross-entropy on the answer) or "ntl" (+ ntl_weight x number-token loss).
    loss: str = field(default="ce", metadata=one_of(SftLoss))
    ntl_weight: float = 0.3
    lora_rank: int = field(default=16, metadata=at_least(1))
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: ["all-linear"])
    learning_rate: float = field(default=1e-4, metadata=more_than(0))
    epochs: float = field(default=1.0, metadata=more_than(0))
    max_steps: int = -1  # > 0 overrides epochs (quick runs)
    per_device_batch_size: int = field(default=4, metadata=at_least(1))
    gradient_accumulation_steps: int = field(default=4, metadata=at_least(1))
    max_length: int = field(default=4096, metadata=at_least(1))
    lr_scheduler: str = "cosine"
    warmup_ratio: float = 0.03
    weight_decay: float = 0.0
    bf16: bool = False
    gradient_checkpointing: bool = False
    logging_steps: int = 10
    save_steps: int = 200
    save_total_limit: int = 2
    threads: int | None = None  # torch CPU threads; None = torch's default
    resume: bool = True  # continue from the last checkpoint in output_dir


@dataclass
class SweepConfig:
    """Grids of runs (hhx/sweeps/): resume, force, dry run."""

    # A cell (task x model x resolved config x data) already FINISHED in MLflow is skipped.
    resume: bool = True
    # Redo every cell, finished or not (the old runs stay in MLflow).
    force: bool = False
    # List what each cell would send (prompts x draws, tokens, cost) and what is done; no run.
    dry_run: bool = False


@dataclass
class HhxConfig:
    stage: Stage = Stage("evaluate")
    seed: int = field(default=42, metadata=at_least(0))
    task: TaskConfig = MISSING
    survey: SurveyConfig = MISSING
    model: ModelConfig = MISSING
    decoding: DecodingConfig = MISSING
    aggregation: AggregationConfig = MISSING
    # The official prompt unless conf/prompt/ says otherwise (the default: prompt=official).
    prompt: PromptConfig = field(default_factory=PromptConfig)
    data: DataConfig = MISSING
    tracking: TrackingConfig = MISSING
    score: ScoreConfig = field(default_factory=ScoreConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    # Also score the no-change baseline on the same rows and print both side by side.
    compare_no_change: bool = True
    # An evaluate run answering fewer than this share of its examples (or, for K > 1, of its
    # draws) is logged FAILED with its reason and exits non-zero; the leaderboard skips it.
    min_coverage: float = field(default=0.9, metadata=between(0, 1))
    leaderboard: LeaderboardConfig = field(default_factory=LeaderboardConfig)
    sft: SftConfig = field(default_factory=SftConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)


def as_plain(value: Any) -> Any:
    """A config dataclass as plain data: what `OmegaConf.to_container(OmegaConf.structured(x),
    enum_to_str=True)` gives (enums by name, tuples as lists), without building an OmegaConf tree
    (~0.05 s for a task, a thousandth of that here)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, (list, tuple)):
        return [as_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: as_plain(v) for k, v in value.items()}
    return value


def register_configs() -> None:
    """Register the schema of the primary config with Hydra (and the path resolvers conf/ uses).
    The backends' own model schemas come on top: hhx.predictors.base.register_schemas."""
    from hydra.core.config_store import ConfigStore

    from hhx.paths import register_resolvers

    register_resolvers()
    cs = ConfigStore.instance()
    # Group options are merged into the typed fields of HhxConfig, which validates them.
    cs.store(name="hhx_schema", node=HhxConfig)
