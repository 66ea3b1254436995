"""`stage=list`: what can run here — every task and model, and what each needs.

    python -m hhx stage=list                                   # demo and data/raw checked
    python -m hhx stage=list data=official data.root=<download>  # also the official release

Tasks: survey, mode, target type, whether hhx builds it from raw files, and what data is here:
`demo` (generated on demand; `built` once it is), `raw` (the survey downloads it reads, under
the raw layout of conf/data/raw.yaml), `official` (the task's files in the download named by
data.root with data=official). Models: backend and what they need (an API key's variable and
whether it is set, a GPU, a server, a local file).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from hhx.config import Backend, DataConfig, ModelConfig
from hhx.surveys.registry import with_dependencies
from hhx.tasks.registry import CONF_DIR, load_task, task_names


def _data_config(name: str, cfg: DictConfig | None = None) -> DataConfig:
    """conf/data/<name>.yaml with its folders under this run's project root (`paths`)."""
    paths = cfg.paths if cfg is not None and cfg.get("paths") is not None else {"data_dir": "data"}
    root = OmegaConf.create({"paths": OmegaConf.to_container(paths, resolve=True)
                             if OmegaConf.is_config(paths) else paths})
    root.data = OmegaConf.merge(OmegaConf.structured(DataConfig),
                                OmegaConf.load(CONF_DIR / "data" / f"{name}.yaml"))
    OmegaConf.resolve(root)
    return OmegaConf.to_object(root.data)  # type: ignore[return-value]


def model_configs() -> dict[str, ModelConfig]:
    out = {}
    for path in sorted((CONF_DIR / "model").glob("*.yaml")):
        raw = OmegaConf.load(path)
        if OmegaConf.is_missing(raw, "name"):
            raw.name = path.stem  # a template (e.g. openai_compatible): the name comes later
        root = OmegaConf.create({"model": raw})  # interpolations name `model.<key>`
        OmegaConf.resolve(root)
        merged = OmegaConf.merge(OmegaConf.structured(ModelConfig), root.model)
        out[path.stem] = OmegaConf.to_object(merged)
    return out  # type: ignore[return-value]


def _missing_raw(task_name: str, raw_dir: Path) -> list[Path]:
    """Raw inputs of the task's sources (and their dependencies) absent under `raw_dir`."""
    task = load_task(task_name)
    missing = []
    for survey in with_dependencies(task.intermediates).values():
        for key, rel in survey.raw.items():
            if rel and key not in survey.optional_raw:
                path = Path(rel).expanduser()
                path = path if path.is_absolute() else raw_dir / path
                if not path.exists():
                    missing.append(path)
    return missing


def task_rows(cfg: DictConfig) -> list[dict[str, Any]]:
    demo, raw = _data_config("demo", cfg), _data_config("raw", cfg)
    official_root = None
    if str(cfg.data.source.value if hasattr(cfg.data.source, "value") else cfg.data.source) \
            == "official" and not OmegaConf.is_missing(cfg.data, "root"):
        official_root = Path(cfg.data.root)
    rows = []
    for name in task_names():
        task = load_task(name)
        builds = bool(task.builder)
        present = []
        if builds:
            built = (Path(demo.root) / "prompts" / f"{name}.jsonl").is_file()
            present.append("demo (built)" if built else "demo")
            missing = _missing_raw(name, Path(raw.raw_dir))
            present.append("raw" if not missing else f"raw: missing {missing[0]}")
        if official_root is not None:
            release = (official_root / "prompts" / f"{name}.jsonl").is_file()
            sample = any((official_root / c / f"{name}.jsonl").is_file()
                         for c in ("pre_cutoff", "post_cutoff"))
            if release or sample:
                present.append("official" + ("" if release else " (eval sample)"))
            else:
                present.append(f"official: not in {official_root}")
        elif not builds:
            present.append("official download needed (data=official data.root=...)")
        rows.append({"task": name, "survey": task.survey, "mode": task.mode.value,
                     "target": task.target_type.value, "hhx builds": "yes" if builds else "no",
                     "data here": "; ".join(present)})
    return rows


def model_needs(model: ModelConfig) -> str:
    if model.backend in (Backend.no_change, Backend.xgboost):
        return "nothing (CPU)"
    if model.backend is Backend.official_xgboost:
        return "the release's baselines/<task>.csv"
    if model.backend is Backend.vllm:
        gpu = "a GPU (NVIDIA, CUDA) and pip install hhx[gpu]"
        have = importlib.util.find_spec("vllm") is not None
        return gpu + ("" if have else "; vllm not installed here")
    if model.backend is Backend.llamacpp:
        have = importlib.util.find_spec("llama_cpp") is not None
        return "llama-cpp-python (bash setup.sh --dev)" + ("" if have else "; not installed here")
    needs = []
    if model.api_base is None and model.name == "openai_compatible":
        needs.append("a server: model.api_base=http://host:port/v1 model.name=<served>")
    elif model.api_base:
        needs.append(f"a server at {model.api_base}")
    if model.api_key_env:
        state = "set" if os.environ.get(model.api_key_env) else "not set"
        needs.append(f"${model.api_key_env} ({state})")
    return "; ".join(needs) or "nothing"


def _table(rows: list[dict[str, Any]]) -> str:
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    line = "  ".join(c.ljust(widths[c]) for c in cols)
    body = ["  ".join(str(r[c]).ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join([line, "  ".join("-" * widths[c] for c in cols), *body])


def run(cfg: DictConfig) -> dict[str, Any]:
    tasks = task_rows(cfg)
    models = [{"model": name, "backend": m.backend.value, "needs": model_needs(m)}
              for name, m in model_configs().items()]
    print(f"Tasks ({len(tasks)}; {sum(r['hhx builds'] == 'yes' for r in tasks)} built by hhx "
          "from raw files, the others read from the official release):")
    print(_table(tasks))
    print(f"\nModels ({len(models)}):")
    print(_table(models))
    print("\nRun one: python -m hhx task=<task> model=<model>   "
          "(data=demo by default; data=raw or data=official data.root=<dir>)")
    return {"tasks": tasks, "models": models}
