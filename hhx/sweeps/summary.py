"""The sweep summary: one row per cell (task x model) with its score, the metric and direction,
n, valid-response rate and status (run / skipped / failed, or the dry run's estimate), printed,
saved in the sweep folder (`sweep_summary.csv` with every field, `sweep_summary.txt` as printed,
`sweep_summary.md` as a markdown table) and logged to MLflow as a run tagged `hhx.stage=sweep` (in
experiment `<experiment>-sweeps`, apart from the evaluate runs): the
counts as metrics, the table as the run's description and as an MLflow table artifact (previewed
in the UI), the files as artifacts, and the sweep's real start and end times. When two cells share
task and model, a `settings` column shows the overrides that tell them apart.

A job that started but left no final status (killed, out of memory) is `failed`; so is a cell the
sweep expected but that never wrote a record (its job died before it started).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from hhx.io import write_csv_atomic, write_json_atomic, write_text_atomic
from hhx.sweeps.leftover import RECORD_FILE
from hhx.sweeps.progress import FINAL, SWEEP_FILE

RUN_COLUMNS = ["job", "task", "model", "settings", "metric", "direction", "score", "n",
               "valid_rate", "status"]
DIRECTIONS = {"higher_is_better": "higher", "lower_is_better": "lower"}
DRY_COLUMNS = ["job", "task", "model", "settings", "prompts", "draws", "requests", "prompt_tokens",
               "completion_tokens_max", "cost_usd", "cost_usd_max", "done", "sizes"]


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
    return records_frame(records)


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The summary table of job records (a sweep's, or a dry run's made before any job)."""
    frame = pd.DataFrame.from_records(records)
    if frame.empty:
        return pd.DataFrame(columns=RUN_COLUMNS)
    for col in RUN_COLUMNS:  # a sweep whose cells all failed early still shows every column
        if col not in frame:
            frame[col] = None
    frame["settings"] = distinguishing_settings(records)
    for col in ("n", "job"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Int64")
    frame = frame[RUN_COLUMNS + [c for c in frame.columns if c not in RUN_COLUMNS]]
    frame = frame.sort_values(["job", "task", "model"] if "job" in frame else ["task", "model"],
                              kind="mergesort", na_position="last")
    return frame.reset_index(drop=True)


def distinguishing_settings(records: list[dict[str, Any]]) -> list[str]:
    """Per record, the overrides that differ between cells sharing its task and model ('' when
    task and model alone tell the cells apart)."""
    def parsed(record: dict[str, Any]) -> dict[str, str]:
        pairs = (str(o).partition("=") for o in record.get("overrides") or [])
        return {k: v for k, _, v in pairs if k not in ("task", "model")}

    groups: dict[tuple[str, str], list[int]] = {}
    for pos, record in enumerate(records):
        groups.setdefault((str(record.get("task")), str(record.get("model"))), []).append(pos)
    out = [""] * len(records)
    for positions in groups.values():
        if len(positions) < 2:
            continue
        settings = [parsed(records[p]) for p in positions]
        keys = sorted({k for s in settings for k in s})
        varying = [k for k in keys if len({s.get(k) for s in settings}) > 1]
        for p, s in zip(positions, settings, strict=True):
            out[p] = " ".join(f"{k}={s[k]}" for k in varying if k in s)
    return out


def counts(frame: pd.DataFrame) -> dict[str, int]:
    status = frame["status"] if "status" in frame else pd.Series(dtype=str)
    return {s: int((status == s).sum()) for s in FINAL}


def is_dry(frame: pd.DataFrame) -> bool:
    return counts(frame)["dry_run"] > 0


def shown_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns a reader needs (the csv keeps every field); `settings` only when it says
    something."""
    dry = is_dry(frame)
    cols = [col for col in (DRY_COLUMNS if dry else RUN_COLUMNS) if col in frame]
    if "settings" in frame and not frame["settings"].fillna("").astype(bool).any():
        cols.remove("settings")
    shown = frame[cols + (["status"] if dry and "status" in frame else [])].copy()
    if "direction" in shown:
        shown["direction"] = shown["direction"].map(DIRECTIONS).fillna(shown["direction"])
    return shown


def headline(frame: pd.DataFrame) -> str:
    c = counts(frame)
    if not is_dry(frame):
        return f"sweep: {c['run']} run, {c['skipped']} skipped, {c['failed']} failed"
    done_col = frame.get("done", pd.Series(dtype=object))
    done = int(done_col.fillna(False).astype(bool).sum())
    total = float(frame.get("cost_usd", pd.Series(dtype=float)).fillna(0).sum())
    bound = float(frame.get("cost_usd_max", pd.Series(dtype=float)).fillna(0).sum())
    looked_up = f", {done} already done" if done_col.notna().any() else ""
    return (f"sweep dry run: {len(frame)} cells{looked_up}; would send "
            f"{int(frame.get('requests', pd.Series(dtype=float)).fillna(0).sum()):,} requests,"
            f" ~${total:.2f} (at most ${bound:.2f}); nothing was sent")


def failure_lines(frame: pd.DataFrame) -> list[str]:
    errors = frame[frame["status"] == "failed"] if "status" in frame else frame.iloc[:0]
    lines = []
    for row in errors.itertuples(index=False):
        job = getattr(row, "job", None)
        where = f" (job {job})" if job is not None and not pd.isna(job) else ""
        lines.append(f"failed: {getattr(row, 'task', '?')} x {getattr(row, 'model', '?')}{where}:"
                     f" {getattr(row, 'error', '') or ''}"[:400])
    return lines


def cell_text(value: Any) -> str:
    """One table cell as printed: '—' for nothing, 4 decimals for a score or rate."""
    if value is None or (not isinstance(value, (str, list, dict)) and pd.isna(value)):
        return "—"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def format_markdown(frame: pd.DataFrame) -> str:
    """The summary as a markdown table (headline first, failures after)."""
    if frame.empty:
        return "sweep: no cell reported\n"

    def cell(value: Any) -> str:
        return cell_text(value).replace("|", "\\|").replace("\n", " ")

    shown = shown_table(frame)
    lines = [f"**{headline(frame)}**", "",
             "| " + " | ".join(shown.columns) + " |",
             "|" + "|".join("---" for _ in shown.columns) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in shown.itertuples(index=False)]
    fails = failure_lines(frame)
    if fails:
        lines += [""] + [f"- {line}" for line in fails]
    return "\n".join(lines) + "\n"


def format_summary(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "sweep: no cell reported"
    shown = shown_table(frame).astype(object).map(cell_text)
    text = shown.to_string(index=False)
    return "\n".join([headline(frame), text, *failure_lines(frame)])


def write_summary(sweep_dir: Path, frame: pd.DataFrame, text: str) -> list[Path]:
    sweep_dir = Path(sweep_dir)
    return [write_csv_atomic(sweep_dir / "sweep_summary.csv", frame),
            write_text_atomic(sweep_dir / "sweep_summary.txt", text + "\n"),
            write_text_atomic(sweep_dir / "sweep_summary.md", format_markdown(frame)),
            write_json_atomic(sweep_dir / "sweep_counts.json", counts(frame))]


def log_summary(tracking: Any, sweep_dir: Path, frame: pd.DataFrame) -> str | None:
    """One MLflow run for the sweep (tag hhx.stage=sweep, experiment `<experiment>-sweeps`, apart
    from the evaluate runs it summarises): counts as metrics, the table as its
    description and as a table artifact, the summary files; FAILED when a cell failed."""
    if not tracking.enabled or frame.empty:
        return None
    import time

    import mlflow
    from mlflow.entities import Metric, Param, RunTag

    from hhx.tracking.mlflow_run import experiment_for
    from hhx.tracking.store import prepare_store

    uri, experiment = str(tracking.uri), experiment_for(tracking, "sweep")
    experiment_id = prepare_store(uri, experiment)
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    c = counts(frame)
    info = sweep_info(sweep_dir)
    now = int(time.time() * 1000)
    started = int(float(info.get("started_at") or time.time()) * 1000)
    tags = {"hhx.stage": "sweep", "hhx.sweep_dir": str(sweep_dir),
            "hhx.status": "failed" if c["failed"] else "finished",
            "mlflow.note.content": format_markdown(frame)[:5000]}
    if info.get("sweep_id"):
        tags["hhx.sweep_id"] = str(info["sweep_id"])
    run = client.create_run(experiment_id, start_time=started,
                            run_name=f"sweep {Path(sweep_dir).name}", tags=tags)
    run_id = run.info.run_id
    params = {"cells": str(len(frame)), "expected_jobs": str(info.get("expected_jobs")),
              "launcher": str(info.get("launcher") or "")}
    client.log_batch(run_id, metrics=[Metric(f"cells_{k}", v, now, 0) for k, v in c.items()],
                     params=[Param(k, v) for k, v in params.items()],
                     tags=[RunTag("hhx.cells", str(len(frame)))])
    table = shown_table(frame).astype(object).where(lambda t: t.notna(), None)
    if "run_id" in frame:
        table["run_id"] = frame["run_id"].astype(object).where(frame["run_id"].notna(), None)
    client.log_table(run_id, data=table, artifact_file="sweep/sweep_summary_table.json")
    for name in ("sweep_summary.csv", "sweep_summary.txt", "sweep_summary.md"):
        client.log_artifact(run_id, str(Path(sweep_dir) / name), "sweep")
    client.set_terminated(run_id, "FAILED" if c["failed"] else "FINISHED", end_time=now)
    return run_id
