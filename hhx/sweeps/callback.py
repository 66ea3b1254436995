"""Hydra callback of every `python -m hhx --multirun`: before the jobs, the MLflow store is made
(schema + experiment, so parallel jobs never race to create it) and the number of cells the sweep
expects is written down; after them, the summary table is printed, saved and logged, and the
process exits 1 when a cell failed (every job has run by then). Registered in conf/config.yaml.
"""

from __future__ import annotations

import logging
import sys
import uuid
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from hhx.io import write_json_atomic

log = logging.getLogger(__name__)


def expected_cells(config: DictConfig) -> int | None:
    """How many jobs the basic sweeper will launch (None for another sweeper)."""
    target = str(config.hydra.sweeper.get("_target_", ""))
    if not target.endswith("BasicSweeper"):
        return None
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = [f"{k}={v}" for k, v in (config.hydra.sweeper.get("params") or {}).items()]
    params += list(config.hydra.overrides.task)
    overrides = OverridesParser.create().parse_overrides(params)
    batches = BasicSweeper.split_arguments(overrides, None)
    return len(batches[0]) if batches else 0


class SweepCallback(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        tracking = config.get("tracking")
        if tracking is not None and tracking.enabled:
            from hhx.tracking.store import prepare_store

            prepare_store(str(tracking.uri), str(tracking.experiment))
        try:
            expected = expected_cells(config)
        except Exception as exc:  # never block a sweep on the count; the summary says unknown
            log.warning("could not count the sweep's cells: %s", exc)
            expected = None
        write_json_atomic(sweep_dir / "sweep.json", {"expected_jobs": expected,
                                                      "sweep_id": uuid.uuid4().hex})

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
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
