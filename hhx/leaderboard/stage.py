"""`python -m hhx stage=leaderboard`: collect evaluate runs, bootstrap, write and track the board.

Output folder (leaderboard.output_dir): `report.html` (self-contained), `leaderboard.json`
(settings, notes, file list, figures not drawn and why), tables as CSV and Markdown,
`analyses/*.csv`, `figures/*.png` (summary figures and one `task_<task>.png` diagnostic per task).
The whole folder is logged as one MLflow run tagged hhx.stage=leaderboard in
`<tracking.experiment>-leaderboard` (when tracking is enabled), created RUNNING when the stage
starts and ended FINISHED, or FAILED with the reason. The paired bootstrap shows its progress
(hhx.leaderboard.bootstrap.bootstrap_bar).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from hhx.config import LeaderboardConfig, TaskConfig, TrackingConfig
from hhx.errors import ConfigError
from hhx.io import write_csv_atomic, write_json_atomic, write_text_atomic
from hhx.leaderboard.collect import RunRecord, collect_mlflow, collect_runs_dir, select_runs
from hhx.leaderboard.console import rank_table, score_table
from hhx.leaderboard.examples import task_loader
from hhx.leaderboard.figures import write_figures
from hhx.leaderboard.report import SYNTHETIC_BANNER, to_markdown, write_html
from hhx.leaderboard.tables import Leaderboard, Settings, compute

TABLES = ("leaderboard", "summary", "matrix", "task_metrics", "comparisons", "targets")


def _section(cfg: Any, name: str, kind: type) -> Any | None:
    """A typed config section, or None where it is absent or unset (MISSING)."""
    if isinstance(cfg, DictConfig):
        if name not in cfg or OmegaConf.is_missing(cfg, name):
            return None
        node = cfg[name]
        obj = OmegaConf.to_object(node) if isinstance(node, DictConfig) else node
    else:
        obj = getattr(cfg, name, None)
    if obj is None or isinstance(obj, str):  # dataclass fields left at MISSING ("???")
        return None
    if isinstance(obj, dict):
        obj = kind(**{str(key): value for key, value in obj.items()})
    return obj


def write_outputs(
    lb: Leaderboard, out_dir: Path, meta: dict[str, Any]
) -> dict[str, Path]:
    """Write tables (CSV + Markdown), analyses, figures and the HTML report under out_dir."""
    files: dict[str, Path] = {}
    frames = {
        "leaderboard": lb.leaderboard, "summary": lb.summary,
        "matrix": lb.matrix.reset_index(), "task_metrics": lb.task_metrics,
        "comparisons": lb.comparisons, "targets": lb.targets,
    }
    # Synthetic (demo) results carry the label in every table, not only in the report.
    banner = f"> {SYNTHETIC_BANNER}\n\n" if lb.synthetic else ""

    def labelled(df: pd.DataFrame) -> pd.DataFrame:
        return df if "synthetic" in df.columns else df.assign(synthetic=lb.synthetic)

    for name, df in frames.items():
        df = df if name == "matrix" else labelled(df)
        files[f"{name}.csv"] = write_csv_atomic(out_dir / f"{name}.csv", df)
        files[f"{name}.md"] = write_text_atomic(out_dir / f"{name}.md", banner + to_markdown(df))
    for name, df in lb.analyses.items():
        files[f"analyses/{name}.csv"] = write_csv_atomic(
            out_dir / "analyses" / f"{name}.csv", labelled(df)
        )
    figures, omitted = write_figures(lb, out_dir / "figures")
    files.update({f"figures/{k}.png": v for k, v in figures.items()})
    files["report.html"] = write_html(lb, figures, out_dir / "report.html", meta, omitted)
    files["leaderboard.json"] = write_json_atomic(
        out_dir / "leaderboard.json",
        {**meta, "notes": lb.notes, "models": lb.models, "tasks": list(lb.tds),
         "xgboost_comparator": lb.xgb_model, "files": sorted(files),
         "figures_not_drawn": omitted,
         **({"own_tasks_not_official": lb.own_tasks} if lb.own_tasks else {})},
    )
    return files


def _metric_key(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_\-. /]", "_", text)


def begin_leaderboard_run(tracking: TrackingConfig | None) -> str | None:
    """The leaderboard's MLflow run, RUNNING from the stage's start (None when not tracked), in
    the experiment `<tracking.experiment>-leaderboard`: apart from the evaluate runs it ranks."""
    if tracking is None or not tracking.enabled:
        return None
    from hhx.tracking.mlflow_run import begin_run, experiment_for

    return begin_run(tracking, run_name=f"leaderboard · {time.strftime('%m-%d %H:%M')}",
                     tags={"hhx.stage": "leaderboard", "hhx.status": "running"},
                     experiment=experiment_for(tracking, "leaderboard"))


def log_to_mlflow(
    lb: Leaderboard, out_dir: Path, tracking: TrackingConfig, meta: dict[str, Any],
    run_id: str | None = None,
) -> str:
    """The leaderboard's run (tag hhx.stage=leaderboard; `run_id` from begin_leaderboard_run,
    else begun now) holding the whole output folder, ended FINISHED."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    client = MlflowClient(tracking_uri=tracking.uri)
    rid = run_id or begin_leaderboard_run(tracking)
    assert rid is not None  # tracking is enabled here
    label = " · synthetic" if lb.synthetic else ""
    name = f"leaderboard · {len(lb.tds)} tasks · {len(lb.models)} models{label}"
    client.update_run(rid, name=name)
    for key, value in {
        "hhx.split": lb.split, "hhx.synthetic": "true" if lb.synthetic else "false",
        "hhx.source": str(meta["source"]), "hhx.xgboost_comparator": lb.xgb_model or "",
    }.items():
        client.set_tag(rid, key, value)
    now = int(time.time() * 1000)
    params = {"n_resamples": lb.settings.n_resamples, "seed": lb.settings.seed,
              "confidence": lb.settings.confidence, "n_runs": meta["n_runs"],
              "n_models": len(lb.models), "n_tasks": len(lb.tds)}
    metrics = [Metric(_metric_key(f"avg_rank.{r.model}"), float(r.avg_rank), now, 0)
               for r in lb.leaderboard.itertuples() if r.avg_rank == r.avg_rank]
    for r in lb.summary[lb.summary["group"] != "all"].itertuples():
        if r.mean == r.mean:
            key = f"{r.target_type}.{r.group}.{r.model}"
            metrics.append(Metric(_metric_key(key), float(r.mean), now, 0))
    try:
        client.log_batch(rid, metrics=metrics[:1000],
                         params=[Param(k, str(v)) for k, v in params.items()])
        client.log_artifacts(rid, str(out_dir))
    except Exception:
        client.set_terminated(rid, "FAILED")
        raise
    client.set_tag(rid, "hhx.status", "finished")
    client.set_terminated(rid, "FINISHED")
    return rid


def own_task_configs(runs: list[RunRecord]) -> dict[str, TaskConfig]:
    """Own tasks' configs from the folder their runs name (tag hhx.task_dir), for a leaderboard
    run without that folder on its task path."""
    from hhx.tasks.own import DIR_TAG, ORIGIN_TAG, OWN, own_task_dir
    from hhx.tasks.registry import load_task_file

    out: dict[str, TaskConfig] = {}
    for r in runs:
        folder = r.tags.get(DIR_TAG)
        if r.tags.get(ORIGIN_TAG) != OWN or not folder or r.task in out or own_task_dir(r.task):
            continue
        path = Path(folder) / "task" / f"{r.task}.yaml"
        if not path.is_file():
            raise ConfigError(f"own task {r.task}: {path} (tag {DIR_TAG} of run {r.source}) is "
                              "gone; name the task's folder with task_path=[dir]")
        out[r.task] = load_task_file(path)
    return out


def run(cfg: Any, task_configs: Mapping[str, TaskConfig] | None = None) -> dict[str, Any]:
    """Build, write and track the leaderboard; returns a summary (paths, run id, ranks)."""
    tracking = _section(cfg, "tracking", TrackingConfig)
    run_id = begin_leaderboard_run(tracking)
    try:
        return _run(cfg, task_configs, tracking, run_id)
    except BaseException as exc:
        if run_id is not None and tracking is not None:  # a run is begun only with tracking
            from hhx.tracking.mlflow_run import fail_run

            fail_run(tracking, run_id, str(exc) or type(exc).__name__)
        raise


def _run(cfg: Any, task_configs: Mapping[str, TaskConfig] | None,
         tracking: TrackingConfig | None, run_id: str | None) -> dict[str, Any]:
    lbc = _section(cfg, "leaderboard", LeaderboardConfig) or LeaderboardConfig()
    collect_notes: list[str] = []
    if lbc.runs_dir:
        records = collect_runs_dir(lbc.runs_dir)
        source = f"runs_dir {lbc.runs_dir}"
    else:
        if tracking is None:
            raise ConfigError("leaderboard needs tracking.uri (MLflow) or leaderboard.runs_dir")
        experiment = lbc.experiment or tracking.experiment
        records, collect_notes = collect_mlflow(tracking.uri, experiment)
        source = f"MLflow {tracking.uri} experiment {experiment}"
    selection = select_runs(records, models=lbc.models, tasks=lbc.tasks, split=lbc.split,
                            include_synthetic=lbc.include_synthetic)
    selection.notes = collect_notes + selection.notes
    settings = Settings(n_resamples=lbc.n_resamples, seed=lbc.seed, confidence=lbc.confidence,
                        xgboost_model=lbc.xgboost_model, derive_no_change=lbc.derive_no_change,
                        time_bin=lbc.time_bin)
    configs = {**own_task_configs(selection.runs), **(task_configs or {})}
    lb = compute(selection, task_loader(configs), settings)
    out_dir = Path(lbc.output_dir)
    meta = {
        "source": source, "split": lb.split, "synthetic": lb.synthetic,
        "n_runs": len(selection.runs), "n_collected": selection.n_collected,
        "n_resamples": settings.n_resamples, "seed": settings.seed,
        "confidence": settings.confidence,
        "created": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    files = write_outputs(lb, out_dir, meta)
    if tracking is not None and tracking.enabled:
        run_id = log_to_mlflow(lb, out_dir, tracking, meta, run_id)
    label = " (SYNTHETIC demo data)" if lb.synthetic else ""
    print(f"\nleaderboard{label}: {len(selection.runs)} run(s), split {lb.split}, "
          f"{settings.n_resamples:,} bootstrap resamples")
    print(score_table(lb))
    print()
    print(rank_table(lb))
    for note in lb.notes:
        print(f"note: {note}")
    print(f"report: {files['report.html']}" + (f" · MLflow run {run_id}" if run_id else ""))
    return {
        "output_dir": str(out_dir), "report": str(files["report.html"]),
        "mlflow_run_id": run_id, "synthetic": lb.synthetic, "split": lb.split,
        "n_runs": len(selection.runs), "models": lb.models, "tasks": list(lb.tds),
        "leaderboard": lb.leaderboard[["model", "avg_rank", "rank_lo", "rank_hi",
                                       "n_tasks_ranked", "complete", "same_examples",
                                       "different_examples"]].to_dict("records"),
        "notes": lb.notes,
        **({"own_tasks_not_official": lb.own_tasks} if lb.own_tasks else {}),
    }
