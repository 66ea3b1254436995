"""`stage=sft_data`: write the SFT set (spec 6.2) of the built baseline tasks.

    python -m hhx stage=sft_data                                   # demo: builds what hhx can
    python -m hhx stage=sft_data sft.tasks=[labor_cps_jobfind] sft.rows_per_task=300
    python -m hhx stage=sft_data data=official data.root=/path/to/householdbench-full

With `data=demo`/`raw`, every baseline task hhx has a builder for (or those in `sft.tasks`) is
built first; with `data=official` the download is read as it is. The set goes to
`sft.data_dir` (default `<data.root>_sft`): see hhx/sft/dataset.py for the files.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from hhx.config import DataSource, Mode
from hhx.errors import ConfigError
from hhx.progress import progress
from hhx.sft.dataset import write_sft_set
from hhx.tasks.registry import load_task, task_names
from hhx.tasks.sources import build_bench_task, source_of
from hhx.tracking.mlflow_run import flatten_config, log_run


def release_root(cfg: DictConfig) -> Path:
    if source_of(cfg.data) is DataSource.official:
        if OmegaConf.is_missing(cfg.data, "root"):
            raise ConfigError("data=official needs data.root=<folder of the official release>")
        if str(cfg.data.layout) != "release":
            raise ConfigError(
                "the SFT set needs training rows; the eval-sample layout has none: point "
                "data.root at the full release (data.layout=release)"
            )
    return Path(cfg.data.root)


def sft_data_dir(cfg: DictConfig) -> Path:
    """Where the SFT set is written and read: sft.data_dir, or `<data.root>_sft` beside it."""
    if cfg.sft.data_dir:
        return Path(cfg.sft.data_dir)
    root = release_root(cfg)
    return root.with_name(root.name + "_sft")


def build_baseline_tasks(cfg: DictConfig, wanted: list[str]) -> list[str]:
    """Build (or find up to date) the baseline tasks hhx can build; returns those built."""
    names = wanted or [t for t in task_names() if load_task(t).mode is Mode.baseline]
    built = []
    with progress(total=len(names), desc="SFT set: task builds", unit="task") as bar:
        for name in names:
            bar.set_postfix_str(name)
            task = load_task(name)
            if not task.builder:
                if wanted:
                    raise ConfigError(
                        f"sft.tasks: hhx cannot build {name} yet; use data=official with the "
                        "release"
                    )
                bar.update(1)
                continue
            build_bench_task(cfg.data, task, cfg.get("survey"))
            built.append(name)
            bar.update(1)
    return built


def run(cfg: DictConfig) -> dict[str, Any]:
    t0 = time.perf_counter()
    root = release_root(cfg)
    wanted = list(cfg.sft.tasks)
    if source_of(cfg.data) is not DataSource.official:
        built = build_baseline_tasks(cfg, wanted)
        wanted = wanted or built
    out = sft_data_dir(cfg)
    sft_set = write_sft_set(root, out, wanted, int(cfg.sft.rows_per_task))
    label = "SYNTHETIC demo data" if sft_set.synthetic else f"{source_of(cfg.data).value} data"
    print(f"\nSFT set · {sft_set.total_rows:,} rows · {len(sft_set.manifest)} baseline tasks · "
          f"{label}")
    print(sft_set.manifest.to_string(index=False))
    print(f"written to {out} (TRL: {sft_set.trl_file}; LLaMA-Factory: "
          f"dataset_dir={out / 'llamafactory'} dataset=householdbench_sft)")
    metrics: dict[str, float] = {f"rows.{r.task_id}": int(r.rows) for r in sft_set.manifest.itertuples()}
    metrics.update(total_rows=sft_set.total_rows, seconds=time.perf_counter() - t0)
    log_run(cfg.tracking, run_name="sft_data" + (" [synthetic]" if sft_set.synthetic else ""),
            params=flatten_config(cfg),
            tags={"hhx.stage": "sft_data", "hhx.data_source": source_of(cfg.data).value,
                  "hhx.synthetic": "true" if sft_set.synthetic else "false",
                  "hhx.sft.chat_sha256": sft_set.info["chat_sha256"]},
            metrics=metrics, artifact_dir=None)
    return {"sft_set": str(out), "total_rows": sft_set.total_rows,
            "manifest": sft_set.manifest.to_dict("records")}
