"""A sweep stopped before any cell ran leaves no folder behind.

The sweep callback makes the sweep folder (multirun/<day>/<time>, with multirun.yaml and
sweep.json) before Hydra composes the cells' configs; a misspelt value (`model=no_chang,xgboost`)
or Ctrl-C then stops it with nothing run. A cell's record of a dry run or of a start is not a
result either. Where anything else was written, the folder is kept.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

# What a sweep folder holds before any cell has run (or when every cell was only estimated).
SWEEP_BOOKKEEPING = {"multirun.yaml", "sweep.json"}
RECORD_FILE = "sweep_cell.json"  # a sweep job's record (hhx/sweeps/cell.py writes it)


def _only_estimated(record: Path) -> bool:
    try:
        status = json.loads(record.read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError):
        return False
    return status in ("dry_run", "started")


def nothing_ran(sweep_dir: Path) -> bool:
    for path in sweep_dir.rglob("*"):
        if path.is_dir() or ".hydra" in path.parts or path.suffix == ".log":
            continue
        if path.name in SWEEP_BOOKKEEPING and path.parent == sweep_dir:
            continue
        if path.name == RECORD_FILE and _only_estimated(path):
            continue
        return False
    return True


def remove_unfinished_sweep() -> None:
    """Remove the sweep folder this process started when no cell ran (and the day's folder and
    multirun/ when that leaves them empty); a no-op outside a sweep."""
    callback = sys.modules.get("hhx.sweeps.callback")
    sweep_dir = getattr(callback, "STARTED", {}).get("sweep_dir") if callback else None
    try:
        if sweep_dir is None or not sweep_dir.is_dir() or not nothing_ran(sweep_dir):
            return
        shutil.rmtree(sweep_dir, ignore_errors=True)
        for folder in (sweep_dir.parent, sweep_dir.parent.parent):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    except OSError:  # the stop message matters more than the tidying
        pass
