"""What hhx offers, declared once: its stages and its predictor backends (plain data).

Everything else reads these tables: the `Stage` and `Backend` enums of the config schema
(hhx/config.py), the stage dispatch (hhx/stages/__init__.py) and `--help` (hhx/cli_help.py), the
predictor factory and pre-flight (hhx/predictors/base.py), a job's cluster request
(hhx/sweeps/resources.py), a dry run's cost (hhx/sweeps/dryrun.py), a cell's time estimate
(hhx/sweeps/order.py), which models can be fine-tuned (hhx/stages/sft.py) and what `stage=list`
says a model needs (hhx/stages/listing.py).

A new backend is its module (with a `make(cfg)` factory, and a `ModelConfig` subclass if it has
settings of its own), one `BackendSpec` in `BACKENDS` below and one conf/model/<name>.yaml. A
new stage is its module (with `run(cfg)`) and one `StageSpec`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from hhx.bounds import enum_text

# --------------------------------------------------------------------------------------------
# Stages (`python -m hhx stage=<name>`), in the order `--help` and a misspelt stage's line list them.


@dataclass(frozen=True)
class StageSpec:
    name: str
    module: str  # a module with `run(cfg)`
    help: str  # one line for `hhx --help`
    # A run folder's name after its time (hhx/paths.py `stage_label`).
    folder: str = "{stage}"


STAGES: tuple[StageSpec, ...] = (
    StageSpec("evaluate", "hhx.stages.evaluate",
              "predict a task with a model, score it with the official scorer, track it "
              "(default)", folder="{stage}_{task}_{model}"),
    StageSpec("build", "hhx.stages.build",
              "raw files -> intermediates -> a task in the official release layout",
              folder="build_{task}"),
    StageSpec("score", "hhx.stages.score",
              "score a predictions file against gold prompts, like the official scorer",
              folder="{stage}_{task}_{model}"),
    StageSpec("describe", "hhx.stages.describe",
              "a task in words: metric, no-change rule, splits, example (--json: as JSON)"),
    StageSpec("list", "hhx.stages.listing", "every task and model, and what each needs here"),
    StageSpec("fetch", "hhx.stages.fetch",
              "download the official release from the Hugging Face Hub (data=official)"),
    StageSpec("leaderboard", "hhx.leaderboard.stage",
              "rank evaluate runs with bootstrap intervals, write the report"),
    StageSpec("sft_data", "hhx.stages.sft_data", "export the fine-tuning set"),
    StageSpec("sft", "hhx.stages.sft", "LoRA fine-tuning", folder="{stage}_{task}_{model}"),
)

# --------------------------------------------------------------------------------------------
# Predictor backends (`backend:` in conf/model/<name>.yaml)


class Kind(str, Enum):
    """How a backend answers, which decides its pre-flight, dry-run cost and time estimate."""

    answers = "answers"  # reads answers that exist (no-change, published predictions): no fit
    fits = "fits"  # fits a model on the task's train split (XGBoost)
    api = "api"  # sends requests to an API or a server (priced per token)
    local = "local"  # runs open weights in this process (needs the weights here)
    custom = "custom"  # the user's own code (model.target): fits and answers in this process, CPU


class Gpu(str, Enum):
    none = "none"  # runs on a CPU
    optional = "optional"  # a CPU works, a GPU is much faster
    needed = "needed"  # without a CUDA device it does not run (or only with a special build)


@dataclass(frozen=True)
class Resources:
    """What one job asks a cluster for (hydra/launcher=submitit_slurm, ray)."""

    gpus: int
    cpus: int
    mem_gb: int
    time_min: int
    partition: str | None = None


@dataclass(frozen=True)
class BackendSpec:
    name: str
    factory: str  # "module:function" building the predictor from the composed config
    kind: Kind
    resources: Resources  # one job's default request (model.resources.<field> overrides it)
    needs: str  # what a model of this backend needs, in words (`stage=list`)
    # A model setting that gives the job's CPUs (the threads it will use), e.g. xgboost.threads.
    cpus_from: str | None = None
    fine_tunable: bool = False  # stage=sft can train a LoRA adapter for its weights
    gpu: Gpu = Gpu.none
    # Modules that must import (optional extras) and how to install them.
    packages: tuple[str, ...] = ()
    install: str = ""
    # Prices unknown to the config are looked up in litellm's local cost map (dry runs, budgets).
    litellm_prices: bool = False
    # "module:Class": a subclass of hhx.config.ModelConfig adding this backend's own settings
    # (`model.<field>`), declared in the backend's module. It is registered as the schema
    # `schema/model/<backend>` (hhx.predictors.base.register_schemas), which the backend's YAML
    # takes in its defaults list; only that backend's models carry the fields, so no other
    # model's config, hash or logged params change. None: the common and LLM settings suffice.
    settings: str | None = None
    # Of those settings, the ones an evaluate run also tags as `hhx.<backend>.<setting>` (when
    # set), so runs can be searched by them (every setting is a logged param anyway).
    tagged: tuple[str, ...] = ()

    @property
    def sends_requests(self) -> bool:
        """A dry run counts its requests, tokens and cost (the others cost nothing)."""
        return self.kind in (Kind.api, Kind.local)


BACKENDS: dict[str, BackendSpec] = {spec.name: spec for spec in (
    BackendSpec("no_change", "hhx.predictors.no_change:make", Kind.answers,
                Resources(gpus=0, cpus=1, mem_gb=4, time_min=30), needs="nothing (CPU)"),
    BackendSpec("xgboost", "hhx.predictors.xgboost:make", Kind.fits,
                Resources(gpus=0, cpus=2, mem_gb=32, time_min=240), needs="nothing (CPU)",
                cpus_from="xgboost.threads"),
    BackendSpec("official_xgboost", "hhx.predictors.official_xgboost:make", Kind.answers,
                Resources(gpus=0, cpus=1, mem_gb=4, time_min=30),
                needs="the release's baselines/<task>.csv"),
    BackendSpec("litellm", "hhx.predictors.llm.litellm_backend:make", Kind.api,
                Resources(gpus=0, cpus=2, mem_gb=4, time_min=1440),
                needs="an API key, or a server", litellm_prices=True),
    BackendSpec("vllm", "hhx.predictors.llm.vllm_backend:make", Kind.local,
                Resources(gpus=1, cpus=8, mem_gb=64, time_min=720),
                needs="a GPU (NVIDIA, CUDA) and pip install 'hhx[gpu]'", fine_tunable=True,
                gpu=Gpu.needed, packages=("vllm",), install="pip install 'hhx[gpu]'"),
    BackendSpec("llamacpp", "hhx.predictors.llm.llamacpp_backend:make", Kind.local,
                Resources(gpus=0, cpus=4, mem_gb=8, time_min=240),
                needs="llama-cpp-python (bash setup.sh --dev)", fine_tunable=True,
                packages=("llama_cpp",), install="bash setup.sh --dev"),
    # local HF/GGUF weights + optional LoRA adapter (CPU or GPU)
    BackendSpec("transformers", "hhx.predictors.llm.transformers_backend:make", Kind.local,
                Resources(gpus=1, cpus=8, mem_gb=32, time_min=720),
                needs="torch and transformers (pip install 'hhx[sft]')", fine_tunable=True,
                gpu=Gpu.optional, packages=("torch", "transformers"),
                install="pip install 'hhx[sft]'"),
    # the user's own predictor: a class, an object or a function named by model.target
    BackendSpec("custom", "hhx.predictors.custom:make", Kind.custom,
                Resources(gpus=0, cpus=1, mem_gb=8, time_min=120),
                needs="model.target=<module.Class | module:function | entry point> (CPU)",
                settings="hhx.predictors.custom:CustomModelConfig", tagged=("target",)),
)}


def backend_spec(backend: object) -> BackendSpec:
    """The table entry of a config's `model.backend` (an enum member or its name)."""
    return BACKENDS[enum_text(backend)]


def custom_model_name(target: object, params: object = None) -> str:
    """The default `model.name` of a custom predictor (conf/model/custom.yaml), from its target
    text alone: a class's name (`pkg.mod.RidgePredictor` -> `RidgePredictor`), a function's with
    its module's last part (`pkg.baselines:predict` -> `baselines.predict`), an entry point's or a
    registered object's name; its params after it (`RidgePredictor(alpha=10)`). So two targets,
    or one target with two settings, are two models on the leaderboard."""
    if target is None or str(target) == "":
        return "custom"
    text = str(target).split(":", 1)[-1] if str(target).startswith("registered:") else str(target)
    module, _, attr = text.replace(":", ".").rpartition(".")
    name = attr or text
    if module and name[:1].islower():  # a function or an object: its module says which
        name = f"{module.rpartition('.')[2]}.{name}"
    items = getattr(params, "items", None)  # a mapping, or OmegaConf's DictConfig of one
    pairs = sorted((str(k), v) for k, v in items()) if callable(items) else []
    if pairs:
        name += "(" + ",".join(f"{k}={v}" for k, v in pairs) + ")"
    return name
