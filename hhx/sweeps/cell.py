"""One sweep job's side of the grid: its identity tags, resume and dry run before predicting, and
the record the sweep summary reads (`sweep_cell.json` in the job's folder).

Resume and dry run act in sweeps (`--multirun`); a single run always runs (it still carries the
identity tags, so a later sweep skips what it finished).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from hhx.bench.layout import BenchTask
from hhx.bounds import enum_text
from hhx.config import TargetType, TaskConfig
from hhx.io import write_json_atomic
from hhx.predictors.llm.prompt_variants import variant_from_config
from hhx.sweeps.identity import cell_key, config_hash, data_fingerprint
from hhx.sweeps.leftover import RECORD_FILE
from hhx.tracking.labels import model_label
from hhx.tracking.lookup import CELL_TAG, FoundRun, finished_cells

log = logging.getLogger(__name__)

_STARTED: dict[str, Any] = {}  # this process's current job: its config (for record_failure)
PRIMARY = {  # the scorer's primary metric and its direction, by target type
    TargetType.categorical: ("mean_macro_f1", "higher_is_better"),
    TargetType.numeric: ("mean_relmae", "lower_is_better"),
    TargetType.distribution: ("mean_total_variation", "lower_is_better"),
}


def in_sweep() -> bool:
    try:
        return HydraConfig.get().mode == RunMode.MULTIRUN
    except ValueError:  # not inside a Hydra app
        return False


def job_dir() -> Path | None:
    try:
        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:
        return None


def write_record(**fields: Any) -> None:
    """Write (or update) this job's record; outside a sweep nothing is written."""
    out = job_dir()
    if out is None or not in_sweep():
        return
    record = read_record()
    record.update(fields, updated_at=time.time())
    write_json_atomic(out / RECORD_FILE, record)


def sweep_id() -> str | None:
    """The id the sweep wrote before its jobs (hhx/sweeps/callback.py), which ties a record to
    its sweep when a rerun uses the same folder."""
    import json

    try:
        path = Path(str(HydraConfig.get().sweep.dir)) / "sweep.json"
        return json.loads(path.read_text()).get("sweep_id")
    except (ValueError, OSError):
        return None


def read_record() -> dict[str, Any]:
    out = job_dir()
    if out is None or not (out / RECORD_FILE).is_file():
        return {}
    import json

    try:
        return json.loads((out / RECORD_FILE).read_text())
    except ValueError:
        return {}


def job_tag() -> str | None:
    """`<sweep id>/<job number>`: the tag every MLflow run of this job carries (failure.py)."""
    record = read_record()
    return f"{record['sweep_id']}/{record.get('job')}" if record.get("sweep_id") else None


def record_start(cfg: DictConfig) -> None:
    try:
        job_num = int(HydraConfig.get().job.num)
        overrides = list(HydraConfig.get().overrides.task)
    except (ValueError, TypeError):
        job_num, overrides = -1, []
    out = job_dir()
    if out is not None:  # a rerun into the same folder starts this job's record afresh
        (out / RECORD_FILE).unlink(missing_ok=True)
    _STARTED["cfg"] = cfg

    def read(get: Any) -> str:  # never let a broken setting stop the record (it is the failure)
        try:
            return get()
        except Exception:
            return "?"

    write_record(status="started", sweep_id=sweep_id(), job=job_num, overrides=overrides,
                 stage=read(lambda: enum_text(cfg.stage)),
                 task=read(lambda: str(cfg.task.name) if cfg.get("task") is not None else ""),
                 model=read(lambda: model_label(cfg.model, variant_from_config(cfg))
                            if cfg.get("model") is not None else ""),
                 # the score's metric and direction, shown even when the cell fails
                 metric=read(lambda: PRIMARY[TargetType(enum_text(cfg.task.target_type))][0]),
                 direction=read(lambda: PRIMARY[TargetType(enum_text(cfg.task.target_type))][1]),
                 started_at=time.time())


def record_failure(exc: BaseException) -> None:
    """The job failed: its record says why, and an evaluate cell's failure is a FAILED MLflow
    run (the stage's own, or one logged here: hhx/sweeps/failure.py)."""
    from hhx.secrets import scrub

    error = scrub(f"{type(exc).__name__}: {exc}")[:2000]
    write_record(status="failed", error=error)
    record, cfg = read_record(), _STARTED.pop("cfg", None)
    if cfg is None or record.get("stage", "evaluate") != "evaluate":
        return
    from hhx.sweeps.failure import log_failed_cell

    run_id = log_failed_cell(cfg, record, error)
    if run_id:
        write_record(run_id=run_id)


@dataclass
class Cell:
    """What evaluate needs from the sweep layer: tags for the run, or an outcome that ends it."""

    key: str
    tags: dict[str, str] = field(default_factory=dict)
    outcome: dict[str, Any] | None = None  # set when the cell is skipped or only estimated


def _lookup(cfg: DictConfig, key: str) -> FoundRun | None:
    if not cfg.tracking.enabled:
        return None
    from hhx.tracking.store import prepare_store

    prepare_store(str(cfg.tracking.uri), str(cfg.tracking.experiment))  # a new store: locked
    return finished_cells(str(cfg.tracking.uri), str(cfg.tracking.experiment), [key]).get(key)


def score_fields(task: TaskConfig, metrics: dict[str, Any]) -> dict[str, Any]:
    metric, direction = PRIMARY[task.target_type]
    return {"metric": metric, "direction": direction, "score": metrics.get("primary_score"),
            "n": metrics.get("num_examples"), "valid_rate": metrics.get("valid_response_rate")}


def switch(cfg: DictConfig, name: str) -> bool:
    """`sweep.<name>=true`, or its short form `+<name>=true` (a top-level key Hydra adds)."""
    return bool((cfg.get("sweep") or {}).get(name) or cfg.get(name))


def prepare(cfg: DictConfig, task: TaskConfig, model_name: str, bench: BenchTask,
            examples: Any, resolved: dict[str, Any] | None = None) -> Cell:
    """Identity tags; in a sweep, the skip (finished in MLflow) or the dry-run estimate.
    `resolved`: the config resolved already (`resolved_config`), else it is resolved here."""
    chash = config_hash(cfg if resolved is None else resolved)
    fingerprint = data_fingerprint(bench, cfg.paths.cache_dir)
    key = cell_key(task.name, model_name, chash, fingerprint)
    cell = Cell(key, {CELL_TAG: key, "hhx.config_hash": chash, "hhx.data_fingerprint": fingerprint})
    if not in_sweep():
        return cell
    tag = job_tag()
    if tag:  # ties the stage's run (FINISHED or FAILED) to this job (hhx/sweeps/failure.py)
        cell.tags.update({"hhx.sweep_job": tag, "hhx.sweep_id": tag.rsplit("/", 1)[0]})
    dry_run, force = switch(cfg, "dry_run"), switch(cfg, "force")
    if dry_run:
        from hhx.sweeps.dryrun import estimate

        found = _lookup(cfg, key)
        plan = estimate(cfg, examples, bench)
        write_record(status="dry_run", done=found is not None,
                     run_id=found.run_id if found else None, cell_key=key, **plan)
        print(f"dry run: {task.name} x {model_name}: {plan['prompts']} prompts x "
              f"{cfg.aggregation.k} draws = {plan['requests']} requests, ~{plan['prompt_tokens']:,}"
              f" prompt tokens, ~${plan['cost_usd']:.2f} (at most ${plan['cost_usd_max']:.2f})"
              + ("; already done" if found else ""))
        cell.outcome = {"primary_score": None, "dry_run": plan, "done": found is not None}
        return cell
    if (cfg.get("sweep") or {}).get("resume", True) and not force:
        found = _lookup(cfg, key)
        if found is not None:
            write_record(status="skipped", run_id=found.run_id, cell_key=key,
                         **score_fields(task, found.metrics))
            print(f"skipped: {task.name} x {model_name} finished before (MLflow run "
                  f"{found.run_id}); +force=true redoes it")
            cell.outcome = {"primary_score": found.metrics.get("primary_score"),
                            "run_id": found.run_id, "skipped": True}
    return cell


def finish(cell: Cell, task: TaskConfig, run_id: str | None, metrics: dict[str, Any]) -> None:
    write_record(status="run", run_id=run_id, cell_key=cell.key, **score_fields(task, metrics))
