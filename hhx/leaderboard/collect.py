"""Collect evaluate runs (an MLflow experiment or a folder of run outputs) and pick one per cell.

A run is one task x model evaluation in the tracking contract of the evaluate stage: tags
`hhx.*`, metrics, and the per-example `details/<task>.parquet`. Selection is explicit: filters,
one split, real and synthetic (demo) runs never mixed, and the latest run per model x task, with
a note for every choice made.

A failed run never stands in for a finished one: runs logged FAILED (coverage below
`min_coverage`, see the evaluate stage) and older runs that answered nothing (coverage 0) are
left out before the latest run is picked, so an earlier finished run of the cell is used, and a
note says which run failed and why.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hhx.errors import ConfigError, DataError
from hhx.tracking.ui import run_url

REQUIRED_TAGS = (
    "hhx.stage",
    "hhx.task",
    "hhx.model",
    "hhx.backend",
    "hhx.mode",
    "hhx.target_type",
    "hhx.data_source",
    "hhx.synthetic",
    "hhx.split",
)
DETAIL_COLUMNS = (
    "id",
    "time",
    "release_date",
    "valid",
    "parsed_prediction",
    "reference",
    "naive_baseline",
)


@dataclass
class RunRecord:
    """One evaluate run: its tags, logged metrics and per-example details."""

    tags: dict[str, str]
    metrics: dict[str, float]
    details: pd.DataFrame
    source: str  # MLflow run id or run_info.json path
    start_time: float  # seconds since the epoch; "latest" means the largest
    result: dict[str, Any] | None = None
    status: str = "FINISHED"  # FINISHED or FAILED (MLflow's run status, run_info.json's status)
    failure_reason: str | None = None
    url: str | None = None  # where a reader opens the run: the MLflow UI page, or its folder

    def failure(self) -> str | None:
        """Why this run must not be ranked (None: it may)."""
        if self.status != "FINISHED" or self.tags.get("hhx.status", "finished") == "failed":
            return self.failure_reason or self.tags.get("hhx.failure_reason") or "run failed"
        coverage = self.metrics.get("coverage_rate")
        if coverage is not None and float(coverage) == 0.0:
            return "no example was answered (coverage 0)"  # runs logged before min_coverage
        return None

    @property
    def task(self) -> str:
        return self.tags["hhx.task"]

    @property
    def model(self) -> str:
        return self.tags["hhx.model"]

    @property
    def backend(self) -> str:
        return self.tags["hhx.backend"]

    @property
    def split(self) -> str:
        return self.tags["hhx.split"]

    @property
    def synthetic(self) -> bool:
        return self.tags["hhx.synthetic"].strip().lower() == "true"

    @property
    def cutoff(self) -> str:
        return self.tags.get("hhx.model_cutoff", "") or ""


@dataclass
class Selection:
    """The runs a leaderboard is built from, and what was left out and why."""

    runs: list[RunRecord]
    split: str
    synthetic: bool
    notes: list[str] = field(default_factory=list)
    n_collected: int = 0


# --------------------------------------------------------------------------------------------
# Reading runs


def _check_tags(tags: dict[str, str], source: str) -> None:
    missing = [t for t in REQUIRED_TAGS if t not in tags]
    if missing:
        raise DataError(f"{source}: evaluate run lacks tags {missing}; re-run the evaluate stage")
    if tags["hhx.synthetic"].strip().lower() not in ("true", "false"):
        raise DataError(
            f"{source}: tag hhx.synthetic={tags['hhx.synthetic']!r}; expected true or false"
        )


def read_details(path: Path, source: str) -> pd.DataFrame:
    """Read a details parquet and check the contract columns."""
    if not path.is_file():
        raise DataError(f"{path}: details artifact not found for run {source}; re-run evaluate")
    df = pd.read_parquet(path)
    missing = [c for c in DETAIL_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"{path}: details lack columns {missing} (run {source})")
    return df


def _start_time(info: dict[str, Any], path: Path) -> float:
    raw = info.get("start_time")
    if isinstance(raw, (int, float)):
        return float(raw) / (1000.0 if raw > 1e11 else 1.0)  # MLflow-style milliseconds
    if isinstance(raw, str) and raw:
        stamp = pd.Timestamp(raw)
        if stamp.tzinfo is None:
            stamp = stamp.tz_localize("UTC")
        return stamp.timestamp()
    return path.stat().st_mtime


def collect_runs_dir(runs_dir: str | os.PathLike[str]) -> list[RunRecord]:
    """Every evaluate run under `runs_dir` (run_info.json found recursively)."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise ConfigError(f"leaderboard.runs_dir={str(root)!r} is not a folder")
    records: list[RunRecord] = []
    for info_path in sorted(root.rglob("run_info.json")):
        try:
            info = json.loads(info_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DataError(f"{info_path}: invalid JSON ({exc.msg})") from None
        tags = {str(k): str(v) for k, v in (info.get("tags") or {}).items()}
        if tags.get("hhx.stage", "evaluate") != "evaluate":
            continue
        _check_tags(tags, str(info_path))
        run_dir = info_path.parent
        task = tags["hhx.task"]
        result_path = run_dir / "result" / f"{task}.json"
        result = None
        if result_path.is_file():
            try:
                result = json.loads(result_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise DataError(f"{result_path}: invalid JSON ({exc.msg})") from None
        logged = info.get("metrics") or {}
        metrics = {str(k): float(v) for k, v in logged.items() if v is not None}
        status = str(info.get("status") or "FINISHED").upper()
        details_path = run_dir / "details" / f"{task}.parquet"
        if status != "FINISHED" and not details_path.is_file():
            details = pd.DataFrame(columns=list(DETAIL_COLUMNS))  # stopped before any answer
        else:
            details = read_details(details_path, str(info_path))
        records.append(
            RunRecord(
                tags=tags,
                metrics=metrics,
                details=details,
                source=str(info_path),
                start_time=_start_time(info, info_path),
                result=result,
                status=status,
                failure_reason=info.get("failure_reason"),
                url=run_dir.resolve().as_uri(),
            )
        )
    return records


def collect_mlflow(tracking_uri: str, experiment: str) -> tuple[list[RunRecord], list[str]]:
    """Every finished evaluate run of an MLflow experiment, with its details artifact."""
    from mlflow import MlflowClient  # imported here: mlflow takes ~1.5 s to import

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise ConfigError(
            f"MLflow experiment {experiment!r} not found at {tracking_uri}; "
            "set leaderboard.experiment or tracking.uri"
        )
    runs = []
    token = None
    while True:
        page = client.search_runs(
            [exp.experiment_id],
            filter_string="tags.`hhx.stage` = 'evaluate'",
            max_results=1000,
            page_token=token,
        )
        runs.extend(page)
        token = page.token
        if not token:
            break
    notes: list[str] = []
    records: list[RunRecord] = []
    with tempfile.TemporaryDirectory(prefix="hhx-lb-") as tmp:
        for run in runs:
            rid = run.info.run_id
            if run.info.status != "FINISHED":
                why = run.data.tags.get("hhx.failure_reason")
                notes.append(
                    f"{run.data.tags.get('hhx.model', '?')} x {run.data.tags.get('hhx.task', '?')}:"
                    f" run {rid} left out: status {run.info.status}" + (f" ({why})" if why else "")
                )
                continue
            tags = dict(run.data.tags)
            _check_tags(tags, f"MLflow run {rid}")
            task = tags["hhx.task"]
            dst = Path(tmp) / rid
            dst.mkdir()
            try:
                local = client.download_artifacts(rid, f"details/{task}.parquet", str(dst))
            except Exception as exc:  # mlflow raises several types for a missing artifact
                raise DataError(
                    f"MLflow run {rid} ({task}): cannot read details/{task}.parquet ({exc})"
                    .splitlines()[0]
                ) from None
            details = read_details(Path(local), f"MLflow run {rid}")
            result = None
            try:
                res_path = client.download_artifacts(rid, f"result/{task}.json", str(dst))
                result = json.loads(Path(res_path).read_text())
            except Exception:  # the result JSON is optional for the leaderboard
                result = None
            records.append(
                RunRecord(
                    tags=tags,
                    metrics=dict(run.data.metrics),
                    details=details,
                    source=f"mlflow:{rid}",
                    start_time=run.info.start_time / 1000.0,
                    result=result,
                    url=run_url(tracking_uri, exp.experiment_id, rid),
                )
            )
    return records, notes


# --------------------------------------------------------------------------------------------
# Selecting runs


def _check_filter(wanted: Iterable[str], present: set[str], setting: str) -> None:
    unknown = sorted(set(wanted) - present)
    if unknown:
        raise ConfigError(
            f"leaderboard.{setting} names {unknown}, which have no evaluate runs; "
            f"available: {sorted(present)}"
        )


def _finished(records: list[RunRecord], notes: list[str]) -> list[RunRecord]:
    """The runs that did not fail; a note for each one left out (an error if none is left)."""
    if not records:
        raise DataError("no evaluate runs found; run `python -m hhx stage=evaluate` first")
    counted = []
    for r in records:
        why = r.failure()
        if why is None:
            counted.append(r)
        else:
            notes.append(f"{r.model} x {r.task}: run {r.source} left out ({why})")
    if not counted:
        raise DataError(
            f"all {len(records)} evaluate runs failed (first: {notes[0]}); fix the cause and "
            "rerun them"
        )
    return counted


def _one_split(runs: list[RunRecord], split: str | None) -> tuple[list[RunRecord], str]:
    """The runs of the named split, or of the only split there is, and that split's name."""
    splits = sorted({r.split for r in runs})
    if split is None:
        if len(splits) > 1:
            raise ConfigError(
                f"evaluate runs cover splits {splits}; choose one with leaderboard.split=<name>"
            )
        split = splits[0]
    elif split not in splits:
        raise ConfigError(f"leaderboard.split={split!r} has no runs; available: {splits}")
    return [r for r in runs if r.split == split], split


def _one_data_kind(runs: list[RunRecord], include_synthetic: bool,
                   notes: list[str]) -> tuple[list[RunRecord], bool]:
    """Real or synthetic (demo) runs, never both, and whether they are synthetic."""
    synthetic = [r for r in runs if r.synthetic]
    real = [r for r in runs if not r.synthetic]
    if include_synthetic:
        if real and synthetic:
            raise ConfigError(
                f"{len(real)} real-data and {len(synthetic)} synthetic (demo) runs selected; a "
                "leaderboard never mixes them: set leaderboard.include_synthetic=false for the "
                "real runs, or filter leaderboard.models/tasks to the synthetic ones"
            )
        return runs, bool(synthetic)
    if not real:
        # Only demo runs exist (a fresh install): rank them, labelled synthetic everywhere.
        notes.append(f"all {len(synthetic)} selected runs are synthetic (demo data): the "
                     "leaderboard is labelled synthetic and says nothing about households")
        return runs, True
    if synthetic:
        notes.append(
            f"{len(synthetic)} synthetic (demo) runs excluded "
            "(leaderboard.include_synthetic=false)"
        )
    return real, False


def _latest_per_cell(runs: list[RunRecord], notes: list[str]) -> list[RunRecord]:
    """The latest run of each model x task (sorted by cell); a note where a cell has several."""
    by_cell: dict[tuple[str, str], list[RunRecord]] = {}
    for r in runs:
        by_cell.setdefault((r.model, r.task), []).append(r)
    chosen: list[RunRecord] = []
    for (model, task), cell in sorted(by_cell.items()):
        cell.sort(key=lambda r: (r.start_time, r.source))
        latest = cell[-1]
        if len(cell) > 1:
            stamp = pd.Timestamp(latest.start_time, unit="s").strftime("%Y-%m-%d %H:%M:%S")
            notes.append(
                f"{model} x {task}: {len(cell)} runs; using the latest ({latest.source}, "
                f"started {stamp} UTC)"
            )
        chosen.append(latest)
    return chosen


def select_runs(
    records: list[RunRecord],
    *,
    models: Iterable[str] = (),
    tasks: Iterable[str] = (),
    split: str | None = None,
    include_synthetic: bool = False,
) -> Selection:
    """Filter, pick one split and one data kind, and keep the latest run per model x task."""
    notes: list[str] = []
    records = _finished(records, notes)
    models, tasks = list(models), list(tasks)
    _check_filter(models, {r.model for r in records}, "models")
    _check_filter(tasks, {r.task for r in records}, "tasks")
    runs = [
        r for r in records
        if (not models or r.model in models) and (not tasks or r.task in tasks)
    ]
    runs, split = _one_split(runs, split)
    runs, is_synthetic = _one_data_kind(runs, include_synthetic, notes)
    chosen = _latest_per_cell(runs, notes)
    return Selection(
        runs=chosen, split=split, synthetic=is_synthetic, notes=notes, n_collected=len(records)
    )
