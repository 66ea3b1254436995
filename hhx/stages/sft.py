"""`stage=sft`: LoRA fine-tuning of an open-weight model on the SFT set (stage=sft_data first).

    python -m hhx stage=sft model=smollm2_135m_hf sft=cpu_tiny          # CPU pipeline check
    python -m hhx stage=sft model=qwen35_4b model.model_path=/w/Qwen3.5-4B   # the paper's preset
    python -m hhx stage=sft model=qwen35_4b model.model_path=/w/Qwen3.5-4B sft.loss=ntl

The adapter lands in `sft.output_dir` (default `<paths.runs_dir>/sft/<model>-<sft.name>-<loss>`)
under `adapter/`; evaluate it with
`python -m hhx task=<t> model=<model> model.lora_adapter=<that>/adapter aggregation=k16`.
A killed run continues from its last checkpoint when started again with the same settings.
The MLflow run (hhx/sft/tracking.py) is RUNNING while the model trains, its loss logged step by
step, and ends FINISHED, or FAILED with the reason.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from hhx.catalog import backend_spec
from hhx.errors import ConfigError
from hhx.sft.dataset import read_sft_set
from hhx.sft.tracking import SftTracker
from hhx.stages.sft_data import sft_data_dir
from hhx.tasks.sources import source_of
from hhx.tracking.mlflow_run import flatten_config


def output_dir(cfg: DictConfig) -> Path:
    if cfg.sft.output_dir:
        return Path(cfg.sft.output_dir)
    return Path(cfg.paths.runs_dir) / "sft" / f"{cfg.model.name}-{cfg.sft.name}-{cfg.sft.loss}"


def run(cfg: DictConfig) -> dict[str, Any]:
    from hhx.sft.train import CURVE_FILE, result_record, train

    spec = backend_spec(cfg.model.backend)
    if not spec.fine_tunable:
        raise ConfigError(
            f"stage=sft needs open weights; model={cfg.model.name} is served by {spec.name}. "
            "Use an open-weight model (e.g. model=qwen35_4b model.model_path=<HF folder>)"
        )
    sft_set = read_sft_set(sft_data_dir(cfg))
    out = output_dir(cfg)
    synthetic = sft_set.synthetic
    tracker = SftTracker(cfg.tracking, out)
    tags = {
        "hhx.stage": "sft",
        "hhx.model": str(cfg.model.name),
        "hhx.base_model": str(cfg.model.model_path or cfg.model.model_id),
        "hhx.sft.preset": str(cfg.sft.name),
        "hhx.sft.loss": str(cfg.sft.loss),
        "hhx.data_source": source_of(cfg.data).value,
        "hhx.synthetic": "true" if synthetic else "false",
        "hhx.sft.chat_sha256": sft_set.info["chat_sha256"],
    }
    run_name = f"sft/{cfg.model.name}/{cfg.sft.name}-{cfg.sft.loss}" + (
        " [synthetic]" if synthetic else "")
    t0 = time.perf_counter()
    tracker.start(run_name, flatten_config(cfg), tags)
    try:
        result = train(cfg.sft, cfg.model.model_path, cfg.model.model_id, sft_set, out,
                       seed=int(cfg.seed), mlflow_log=tracker.step_logger())
    except BaseException as exc:
        tracker.fail(exc)  # FAILED with the reason (KILLED for a Ctrl-C: resumable)
        raise
    metrics = {
        "steps": result.steps,
        "first_loss": result.first_loss,
        "final_loss": result.final_loss,
        "train_tokens": result.train_tokens,
        "train_seconds": result.train_seconds,
        "tokens_per_second": result.tokens_per_second,
        "wall_time_s": time.perf_counter() - t0,
        "sft_rows": sft_set.total_rows,
    }
    tracker.finish(metrics, [result.adapter_dir, out / CURVE_FILE])
    label = "SYNTHETIC demo data" if synthetic else f"{source_of(cfg.data).value} data"
    print(f"\nSFT {cfg.model.name} · {cfg.sft.name} · loss={cfg.sft.loss} · {label}")
    first = "—" if result.first_loss is None else f"{result.first_loss:.4f}"
    final = "—" if result.final_loss is None else f"{result.final_loss:.4f}"
    print(f"steps {result.steps} · loss {first} -> {final} · "
          f"{result.tokens_per_second:,.0f} tokens/s"
          + (f" · resumed from {result.resumed_from}" if result.resumed_from else ""))
    print(f"adapter: {result.adapter_dir}\nevaluate: python -m hhx task=<task> "
          f"model={cfg.model.name} model.lora_adapter={result.adapter_dir} aggregation=k16")
    record = result_record(result)
    record["mlflow_run_id"] = tracker.run_id
    return record
