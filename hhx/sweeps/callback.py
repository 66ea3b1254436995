"""Hydra callback of every `python -m hhx --multirun`: before the jobs, the MLflow store is made
(schema + experiment, so parallel jobs never race to create it) and the number of cells the sweep
expects is written down; after them, the summary table is printed, saved and logged, and the
process exits 1 when a cell failed (every job has run by then). Registered in conf/config.yaml.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from hhx.cores import USER_LIMIT_VAR
from hhx.io import write_json_atomic

log = logging.getLogger(__name__)
# The sweep folder this process started (the app removes it on Ctrl-C when no cell ran).
STARTED: dict[str, Path] = {}


def expected_cells(config: DictConfig) -> int | None:
    """How many jobs the basic sweeper (or hhx's, which orders them) will launch (None for
    another sweeper)."""
    target = str(config.hydra.sweeper.get("_target_", ""))
    if not target.endswith(("BasicSweeper", "HhxSweeper")):
        return None
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = [f"{k}={v}" for k, v in (config.hydra.sweeper.get("params") or {}).items()]
    params += list(config.hydra.overrides.task)
    overrides = OverridesParser.create().parse_overrides(params)
    batches = BasicSweeper.split_arguments(overrides, None)
    return len(batches[0]) if batches else 0


def single_run_of_a_sweep(config: DictConfig) -> str | None:
    """Why a run without --multirun should not start (None: it may): the config names a sweep
    (a preset's `hydra.sweeper.params`) whose keys the command line does not all fix."""
    params = config.hydra.sweeper.get("params") or {}
    if not params:
        return None
    given = {str(o).partition("=")[0].lstrip("+~") for o in config.hydra.overrides.task}
    open_keys = [str(k).lstrip("+~") for k in params if str(k).lstrip("+~") not in given]
    if not open_keys:
        return None  # every swept key is set: the user asked for one cell
    try:
        cells = expected_cells(config)
    except Exception:
        cells = None
    preset = config.hydra.runtime.choices.get("experiment")
    name = f"experiment={preset}" if preset else "this config"
    size = f" of {cells} cells" if cells else ""
    return (f"{name} is a sweep{size} over {', '.join(open_keys)}; add --multirun to run it "
            f"(with +dry_run=true to list its cells and cost first), or set "
            f"{'= '.join(open_keys)}= to run one cell")


def _dry_run(config: DictConfig) -> bool:
    """A dry run of hhx's sweeper (hydra_plugins/hhx_launchers/sweeper.py), which launches no
    job; another sweeper's jobs still price themselves (hhx/sweeps/cell.py)."""
    if not str(config.hydra.sweeper.get("_target_", "")).endswith("HhxSweeper"):
        return False
    from hhx.sweeps.dryrun import requested

    return requested(config)


class SweepCallback(Callback):
    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        why = single_run_of_a_sweep(config)
        if why:
            print(f"hhx: error: {why}", file=sys.stderr)
            raise SystemExit(2)

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        """A job whose stage keeps no sweep record of its own (build, describe, ...) ran when it
        returned: its record says so, else the summary would count it as killed. Then the
        sweep's progress line (hhx/sweeps/progress.py)."""
        from hydra.core.hydra_config import HydraConfig
        from hydra.core.utils import JobStatus
        from hydra.types import RunMode

        try:  # not a sweep: no record, and no import of the sweep layer (pandas...) at the end
            if HydraConfig.get().mode != RunMode.MULTIRUN:  # of every plain run
                return
        except ValueError:  # not inside a Hydra app
            return
        from hhx.sweeps import cell
        from hhx.sweeps.progress import print_progress

        if cell.read_record().get("status") == "started":
            if job_return.status == JobStatus.COMPLETED:
                cell.write_record(status="run")
            else:
                cell.write_record(status="failed", error=f"{job_return._return_value!r}"[:2000])
        print_progress(Path(str(config.hydra.sweep.dir)))  # in the job's process, any launcher

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if _dry_run(config):  # priced by the sweeper before any job: no folder, no store
            return
        if str(config.hydra.sweeper.get("_target_", "")).endswith("HhxSweeper"):
            from hhx.sweeps.order import order_error

            why = order_error(str(config.hydra.sweeper.get("order")))
            if why:  # before Hydra makes the sweeper (its error would be three lines)
                print(f"hhx: error: {why}", file=sys.stderr)
                raise SystemExit(2)
        sweep_dir = Path(str(config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        STARTED["sweep_dir"] = sweep_dir  # Ctrl-C before any cell ran removes it (hhx/app.py)
        # joblib's workers get OMP_NUM_THREADS = cores // n_jobs; the user's own stays known
        os.environ.setdefault(USER_LIMIT_VAR, os.environ.get("OMP_NUM_THREADS", ""))
        tracking = config.get("tracking")
        if tracking is not None and tracking.enabled:
            from hhx.tracking.store import prepare_store

            prepare_store(str(tracking.uri), str(tracking.experiment))
        try:
            expected = expected_cells(config)
        except Exception as exc:  # never block a sweep on the count; the summary says unknown
            log.warning("could not count the sweep's cells: %s", exc)
            expected = None
        launcher = str(config.hydra.launcher.get("_target_", "")).rsplit(".", 1)[-1]
        write_json_atomic(sweep_dir / "sweep.json", {
            "expected_jobs": expected, "sweep_id": uuid.uuid4().hex, "started_at": time.time(),
            "launcher": launcher})

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if _dry_run(config):  # the sweeper printed its table; no job ran
            return
        from hhx.sweeps.summary import (
            counts,
            format_summary,
            log_summary,
            summary_frame,
            write_summary,
        )

        sweep_dir = Path(str(config.hydra.sweep.dir))
        frame = summary_frame(sweep_dir)
        text = format_summary(frame)
        write_summary(sweep_dir, frame, text)
        print("\n" + text)
        print(f"sweep summary: {sweep_dir / 'sweep_summary.csv'}")
        tracking = config.get("tracking")
        if tracking is not None and frame is not None and not frame.empty:
            try:
                run_id = log_summary(tracking, sweep_dir, frame)
                if run_id:
                    print(f"sweep summary logged: MLflow run {run_id}")
            except Exception as exc:  # the table is saved either way
                print(f"hhx: warning: sweep summary not logged to MLflow: {exc}", file=sys.stderr)
        failed = counts(frame)["failed"] if not frame.empty else 0
        if failed:
            print(f"hhx: error: {failed} sweep cell(s) failed; see {sweep_dir / 'sweep_summary.txt'}",
                  file=sys.stderr)
            raise SystemExit(1)
