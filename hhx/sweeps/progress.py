"""A sweep's progress line, printed as each job ends (hhx/sweeps/callback.py `on_job_end`):

    sweep progress: 12 of 64 cells done (1 failed, 2 skipped) · 5:10 elapsed · about 7:30 left

Every launcher runs the callback in the job's own process (a joblib or Ray worker, a SLURM job),
so the line is worked out from what the sweep folder holds, not from the parent: `sweep.json`
(the expected cells and the start, written before the jobs) and each job's record with its final
status. "Left" is the elapsed time per finished cell times the cells still to run; a sweep starts
its longest cells first, so it errs long early on. `HHX_PROGRESS=0` silences it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from hhx.progress import _clock

SWEEP_FILE = "sweep.json"  # what the sweep expected (written before the jobs start)
FINAL = ("run", "skipped", "failed", "dry_run")  # a job record's statuses once it ended


def _statuses(sweep_dir: Path, sweep_id: str | None) -> list[str]:
    from hhx.sweeps.leftover import RECORD_FILE

    found = []
    for path in Path(sweep_dir).glob(f"*/{RECORD_FILE}"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):  # being written by another job: counted next time
            continue
        if sweep_id is None or record.get("sweep_id", sweep_id) == sweep_id:
            found.append(str(record.get("status")))
    return found


def progress_line(sweep_dir: Path, now: float | None = None) -> str | None:
    """The line, or None when the sweep folder holds no sweep.json (not an hhx sweep)."""
    try:
        info = json.loads((Path(sweep_dir) / SWEEP_FILE).read_text())
    except (OSError, ValueError):
        return None
    statuses = _statuses(sweep_dir, info.get("sweep_id"))
    done = [s for s in statuses if s in FINAL]
    expected = info.get("expected_jobs") or len(statuses)
    elapsed = (now or time.time()) - float(info.get("started_at") or time.time())
    extra = [f"{done.count(s)} {s}" for s in ("failed", "skipped") if done.count(s)]
    line = (f"sweep progress: {len(done)} of {expected} cells done"
            + (f" ({', '.join(extra)})" if extra else "") + f" · {_clock(elapsed)} elapsed")
    left = max(0, expected - len(done))
    if done and left:
        line += f" · about {_clock(elapsed / len(done) * left)} left"
    return line


def print_progress(sweep_dir: Path) -> None:
    if os.environ.get("HHX_PROGRESS", "1") == "0":
        return
    line = progress_line(sweep_dir)
    if line:
        print(line, flush=True)
