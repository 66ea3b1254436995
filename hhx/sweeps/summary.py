"""The sweep summary: one row per cell (task x model) with its score, the metric and direction,
n, valid-response rate and status (run / skipped / failed, or the dry run's estimate), printed,
saved in the sweep folder (`sweep_summary.csv`, `sweep_summary.txt`) and logged to MLflow as a
run tagged `hhx.stage=sweep`.

A job that started but left no final status (killed, out of memory) is `failed`; so is a cell the
sweep expected but that never wrote a record (its job died before it started).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from hhx.io import write_csv_atomic, write_json_atomic, write_text_atomic
from hhx.sweeps.cell import RECORD_FILE

SWEEP_FILE = "sweep.json"  # what the sweep expected (written before the jobs start)
RUN_COLUMNS = ["task", "model", "metric", "direction", "score", "n", "valid_rate", "status"]
DRY_COLUMNS = ["task", "model", "prompts", "draws", "requests", "prompt_tokens",
               "completion_tokens_max", "cost_usd", "cost_usd_max", "done"]
FINAL = ("run", "skipped", "failed", "dry_run")


def sweep_info(sweep_dir: Path) -> dict[str, Any]:
    """What the sweep wrote before its jobs: expected_jobs, sweep_id (either may be absent)."""
    path = Path(sweep_dir) / SWEEP_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def read_records(sweep_dir: Path, sweep_id: str | None = None) -> list[dict[str, Any]]:
    """The job records of the sweep; with `sweep_id`, only this sweep's (a rerun into the same
    folder leaves the earlier sweep's job folders there)."""
    records = []
    for path in sorted(Path(sweep_dir).glob(f"*/{RECORD_FILE}")):
        try:
            record = json.loads(path.read_text())
        except ValueError:
            record = {"status": "failed", "error": f"{path}: unreadable record"}
        if sweep_id is not None and record.get("sweep_id", sweep_id) != sweep_id:
            continue
        record["folder"] = path.parent.name
        if record.get("status") not in FINAL:
            record["error"] = record.get("error") or "the job ended before reporting a result"
            record["status"] = "failed"
        records.append(record)
    return records


def summary_frame(sweep_dir: Path) -> pd.DataFrame:
    info = sweep_info(sweep_dir)
    records = read_records(sweep_dir, info.get("sweep_id"))
    missing = (info.get("expected_jobs") or 0) - len(records)
    for _ in range(max(0, missing)):
        records.append({"task": "?", "model": "?", "status": "failed",
                        "error": "no record: the job never started or its folder is elsewhere"})
    frame = pd.DataFrame.from_records(records)
    if frame.empty:
        return pd.DataFrame(columns=RUN_COLUMNS)
    if "n" in frame:
        frame["n"] = pd.to_numeric(frame["n"], errors="coerce").astype("Int64")
    frame = frame.sort_values(["job", "task", "model"] if "job" in frame else ["task", "model"],
                              kind="mergesort", na_position="last")
    return frame.reset_index(drop=True)


def counts(frame: pd.DataFrame) -> dict[str, int]:
    status = frame["status"] if "status" in frame else pd.Series(dtype=str)
    return {s: int((status == s).sum()) for s in FINAL}


def format_summary(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "sweep: no cell reported"
    c = counts(frame)
    dry = c["dry_run"] > 0
    cols = [col for col in (DRY_COLUMNS if dry else RUN_COLUMNS) if col in frame]
    shown = frame[cols + (["status"] if dry and "status" in frame else [])].copy()
    if "direction" in shown:
        shown["direction"] = shown["direction"].map(
            {"higher_is_better": "higher", "lower_is_better": "lower"}).fillna("")
    text = shown.to_string(index=False, na_rep="—", float_format=lambda v: f"{v:.4f}")
    if dry:
        done = int(frame.get("done", pd.Series(dtype=bool)).fillna(False).astype(bool).sum())
        total = float(frame.get("cost_usd", pd.Series(dtype=float)).fillna(0).sum())
        bound = float(frame.get("cost_usd_max", pd.Series(dtype=float)).fillna(0).sum())
        head = (f"sweep dry run: {len(frame)} cells, {done} already done; would send "
                f"{int(frame.get('requests', pd.Series(dtype=float)).fillna(0).sum()):,} requests,"
                f" ~${total:.2f} (at most ${bound:.2f}); nothing was sent")
    else:
        head = f"sweep: {c['run']} run, {c['skipped']} skipped, {c['failed']} failed"
    lines = [head, text]
    errors = frame[frame["status"] == "failed"] if "status" in frame else frame.iloc[:0]
    for row in errors.itertuples(index=False):
        lines.append(f"failed: {getattr(row, 'task', '?')} x {getattr(row, 'model', '?')}: "
                     f"{getattr(row, 'error', '') or ''}"[:400])
    return "\n".join(lines)


def write_summary(sweep_dir: Path, frame: pd.DataFrame, text: str) -> list[Path]:
    sweep_dir = Path(sweep_dir)
    return [write_csv_atomic(sweep_dir / "sweep_summary.csv", frame),
            write_text_atomic(sweep_dir / "sweep_summary.txt", text + "\n"),
            write_json_atomic(sweep_dir / "sweep_counts.json", counts(frame))]


def log_summary(tracking: Any, sweep_dir: Path, frame: pd.DataFrame) -> str | None:
    """One MLflow run for the sweep (tag hhx.stage=sweep) with the table as artifacts."""
    if not tracking.enabled or frame.empty:
        return None
    import mlflow

    from hhx.tracking.store import prepare_store

    uri, experiment = str(tracking.uri), str(tracking.experiment)
    experiment_id = prepare_store(uri, experiment)
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    c = counts(frame)
    run = client.create_run(experiment_id, run_name=f"sweep {Path(sweep_dir).name}",
                            tags={"hhx.stage": "sweep", "hhx.sweep_dir": str(sweep_dir)})
    for status, value in c.items():
        client.log_metric(run.info.run_id, f"cells_{status}", value)
    for name in ("sweep_summary.csv", "sweep_summary.txt"):
        client.log_artifact(run.info.run_id, str(Path(sweep_dir) / name), "sweep")
    client.set_terminated(run.info.run_id, "FAILED" if c["failed"] else "FINISHED")
    return run.info.run_id
