"""Get a task in the official layout from whichever data source the run names.

- `official`: read the user's download (release or eval-sample layout) as it is.
- `demo`: write seeded synthetic raw files in the official formats (once), build the survey
  intermediates and the task from them. Everything is tagged synthetic.
- `raw`: build from the user's own downloaded survey files.
Downstream stages only ever see the resulting `BenchTask`.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from hhx.bench.layout import BenchTask, load_bench_task
from hhx.config import DataSource, SurveyConfig, TaskConfig
from hhx.errors import ConfigError, DataError
from hhx.io import write_json_atomic
from hhx.surveys.base import BuildReport, input_sha256
from hhx.tasks.context import BuildContext
from hhx.tasks.registry import CONF_DIR

log = logging.getLogger(__name__)

MACRO_INTERMEDIATE = "householdbench_macro_context"
DEMO_GENERATOR_VERSION = 1


def source_of(cfg: DictConfig) -> DataSource:
    src = cfg.data.source
    return src if isinstance(src, DataSource) else DataSource(str(src))


def is_synthetic(cfg: DictConfig) -> bool:
    return source_of(cfg) is DataSource.demo


def load_survey(name: str) -> SurveyConfig:
    """Load `conf/survey/<name>.yaml` against the SurveyConfig schema."""
    path = CONF_DIR / "survey" / f"{name}.yaml"
    if not path.is_file():
        valid = ", ".join(sorted(p.stem for p in path.parent.glob("*.yaml")))
        raise ConfigError(f"unknown survey {name!r}; valid surveys: {valid}")
    merged = OmegaConf.merge(OmegaConf.structured(SurveyConfig), OmegaConf.load(path))
    survey = OmegaConf.to_object(merged)
    assert isinstance(survey, SurveyConfig)
    return survey


def survey_config(cfg: DictConfig, name: str) -> SurveyConfig:
    """The survey config for `name`: the selected `survey` group if it matches, else its file."""
    if cfg.survey is not None and cfg.survey.name == name:
        survey = OmegaConf.to_object(cfg.survey)
        assert isinstance(survey, SurveyConfig)
        return survey
    return load_survey(name)


def build_survey(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    if not survey.builder:
        raise ConfigError(
            f"survey {survey.name!r} has no builder yet (conf/survey/{survey.name}.yaml `builder`)"
        )
    module = importlib.import_module(survey.builder)
    t0 = time.perf_counter()
    report: BuildReport = module.build(survey, raw_dir, out_dir)
    report.seconds = report.seconds or time.perf_counter() - t0
    log.info("built survey %s: %s", survey.name, report.rows)
    return report


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Serialise builds of one data directory across processes (parallel sweeps share it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------------
# demo raw files


def demo_fingerprint(cfg: DictConfig) -> dict[str, Any]:
    demo = cfg.data.demo
    fred = cfg.data.fred_qd
    return {
        "generator_version": DEMO_GENERATOR_VERSION,
        "seed": int(demo.seed),
        "n_households": int(demo.n_households),
        "start": str(demo.start),
        "end": str(demo.end),
        "fred_qd": str(Path(fred).resolve()) if fred else None,
        "fred_qd_sha256": input_sha256(fred) if fred else None,
    }


def demo_end_month(cfg: DictConfig) -> str:
    """The demo's last month: its configured end, clamped to what a real FRED-QD file covers."""
    end = str(cfg.data.demo.end)
    if not cfg.data.fred_qd:
        return end
    from hhx.surveys.fred_qd import read_fred_qd

    fred = read_fred_qd(cfg.data.fred_qd)
    last = pd.Timestamp(fred["sasdate"].max()).to_period("Q")
    # Observations in quarter Q use Q-1 as their macro reference, so the next quarter is covered;
    # one more month gives the t+1 outcomes of its last baseline month.
    covered = ((last + 1).asfreq("M", "end") + 1).strftime("%Y-%m")
    return min(end, covered)


def ensure_demo_raw(cfg: DictConfig, raw_dir: Path) -> dict[str, Path]:
    """Write the demo's synthetic raw files unless the same ones (same settings) exist."""
    from hhx.surveys.synthetic.cps import write_synthetic_cps
    from hhx.surveys.synthetic.fred_qd import write_synthetic_fred_qd

    stamp_path = raw_dir / "hhx_demo.json"
    wanted = demo_fingerprint(cfg)
    cps_path = raw_dir / load_survey("cps").raw["cps_basic"]
    fred_path = raw_dir / "macro" / "fred-qd" / "synthetic-QD.csv"
    if stamp_path.is_file() and json.loads(stamp_path.read_text()) == wanted and cps_path.is_file():
        return {"cps_basic": cps_path, "fred_qd": Path(cfg.data.fred_qd or fred_path)}
    demo = cfg.data.demo
    log.info("writing synthetic demo raw files (seed %s) to %s", demo.seed, raw_dir)
    write_synthetic_cps(
        cps_path,
        seed=int(demo.seed),
        n_households=int(demo.n_households),
        start=str(demo.start),
        end=demo_end_month(cfg),
    )
    if not cfg.data.fred_qd:
        write_synthetic_fred_qd(fred_path, seed=int(demo.seed))
    write_json_atomic(stamp_path, wanted)
    return {"cps_basic": cps_path, "fred_qd": Path(cfg.data.fred_qd or fred_path)}


# --------------------------------------------------------------------------------------------
# intermediates and tasks


def ensure_macro_context(fred_qd: Path, intermediate_dir: Path, rebuild: bool) -> pd.DataFrame:
    from hhx.surveys.fred_qd import build_macro_context, read_fred_qd

    out = intermediate_dir / f"{MACRO_INTERMEDIATE}.parquet"
    stamp = intermediate_dir / f"{MACRO_INTERMEDIATE}.source.json"
    wanted = {"fred_qd": str(fred_qd.resolve()), "sha256": input_sha256(fred_qd)}
    if not rebuild and out.is_file() and stamp.is_file() and json.loads(stamp.read_text()) == wanted:
        return pd.read_parquet(out)
    from hhx.io import write_parquet_atomic

    macro = build_macro_context(read_fred_qd(fred_qd))
    write_parquet_atomic(out, macro)
    write_json_atomic(stamp, wanted)
    return macro


def file_state(paths: list[Path]) -> dict[str, list[int]]:
    """Cheap identity of input files (size, mtime): a changed input invalidates what was built."""
    return {str(p): [p.stat().st_size, p.stat().st_mtime_ns] for p in paths if p.is_file()}


def is_fresh(stamp: Path, state: dict[str, Any]) -> bool:
    return stamp.is_file() and json.loads(stamp.read_text()) == json.loads(json.dumps(state))


def ensure_intermediates(
    cfg: DictConfig, task: TaskConfig, raw_dir: Path, intermediate_dir: Path
) -> dict[str, Any]:
    """Build the task's survey intermediates unless up to date; return their state."""
    survey = survey_config(cfg, task.survey)
    raw_paths = [raw_dir / rel for rel in survey.raw.values() if rel]
    state = {"survey": survey.name, "raw": file_state(raw_paths)}
    stamp = intermediate_dir / f"{survey.name}.built.json"
    marker = intermediate_dir / f"{survey.name}.synthetic"
    if cfg.data.rebuild or not is_fresh(stamp, state):
        report = build_survey(survey, raw_dir, intermediate_dir)
        # A builder that recognises generated raw files (e.g. the CPS generator's sidecar) says
        # so; that label follows the data even when it is read as `data=raw`.
        if report.synthetic:
            marker.touch()
        else:
            marker.unlink(missing_ok=True)
        write_json_atomic(stamp, state)
    return {"intermediates": file_state(sorted(intermediate_dir.glob("*.parquet"))),
            "synthetic_inputs": marker.is_file()}


def build_bench_task(cfg: DictConfig, task: TaskConfig) -> BenchTask:
    """Raw files -> intermediates -> the task in the official release layout (demo or raw)."""
    from hhx.tasks.build import build_task

    if not task.builder:
        raise ConfigError(
            f"task {task.name!r} cannot be built by hhx yet; evaluate it on the official release "
            f"with data=official data.root=<download>"
        )
    synthetic = is_synthetic(cfg)
    raw_dir = Path(cfg.data.raw_dir)
    inter_dir = Path(cfg.data.intermediate_dir)
    root = Path(cfg.data.root)
    with file_lock(root.parent / ".hhx-build.lock"):
        if synthetic:
            fred_qd = ensure_demo_raw(cfg, raw_dir)["fred_qd"]
        else:
            if not cfg.data.fred_qd:
                raise ConfigError("data.fred_qd is not set; point it at a FRED-QD quarterly CSV")
            fred_qd = Path(cfg.data.fred_qd)
            if not fred_qd.is_file():
                raise DataError(
                    f"{fred_qd}: FRED-QD file not found; download the quarterly vintage from "
                    "https://www.stlouisfed.org/research/economists/mccracken/fred-databases"
                )
        macro = ensure_macro_context(fred_qd, inter_dir, bool(cfg.data.rebuild))
        state = ensure_intermediates(cfg, task, raw_dir, inter_dir)
        synthetic = synthetic or bool(state["synthetic_inputs"])
        state["task"] = OmegaConf.to_container(OmegaConf.structured(task), enum_to_str=True)
        state["synthetic"] = synthetic
        stamp = root / "build_reports" / f"{task.name}.built.json"
        if not cfg.data.rebuild and is_fresh(stamp, state):
            return load_bench_task(root, task, source=source_of(cfg).value, synthetic=synthetic)
        # Prompt rendering and its text checks run in parallel above ~20k rows.
        ctx = BuildContext(task, inter_dir, macro, synthetic=synthetic, n_jobs=os.cpu_count() or 1)
        bench = build_task(ctx, root, synthetic=synthetic)
        write_json_atomic(stamp, state)
        return bench


def load_bench(cfg: DictConfig, task: TaskConfig) -> BenchTask:
    """The task in the official layout, from the configured data source."""
    source = source_of(cfg)
    if source is DataSource.official:
        if OmegaConf.is_missing(cfg.data, "root"):
            raise ConfigError("data=official needs data.root=<folder of the official download>")
        return load_bench_task(
            Path(cfg.data.root),
            task,
            layout=str(cfg.data.layout),
            split=str(cfg.data.split),
            source=source.value,
            synthetic=False,
        )
    return build_bench_task(cfg, task)
