"""hhx from Python: `hhx.evaluate`, `hhx.build`, `hhx.describe`, `hhx.leaderboard`, `hhx.list_tasks`.

The public face for notebooks and scripts (re-exported by `hhx/__init__.py`, imported lazily so
`import hhx` stays as light as `hhx --help`). It sits at the app layer, beside `hhx/app.py`, and
takes ONE code path with the command line: each call turns its arguments into Hydra override
strings (exactly what one would type after `hhx`), composes and runs them through
`hhx.app.run_one` (Hydra's own `Hydra.run` -> `run_job`, as `hydra.main` does for the command),
and its job is `hhx.app.run_job` inside `hhx.app.run_folder`, the same job `hhx.app._job` runs.
So a call and the same command give the same config, run folder (config/resolved.yaml,
predictions, result JSON, details, run_info.json, app.log, .hydra/) and MLflow run.

What differs is only the caller's side: an error raises a typed exception (`hhx.errors`:
`ConfigError` for an unknown task, model or setting, with the one line the command prints after
"hhx: error: "; `DataError`, `PredictorError`, `RunFailed`...; an OS error stays an `OSError`)
instead of printing and exiting; and every call leaves the process as it found it (Hydra's
global state, logging handlers, sys.stdout, the working folder), so it can be called again.
Sweeps (`--multirun`, a list of tasks) are the command's: loop in Python or use the CLI.
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import io
import logging
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hhx.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

_PLAIN_VALUE = re.compile(r"[\w./:@+~-]*")


# --------------------------------------------------------------------------------------------
# arguments -> override strings (each keyword convenience is one override)


def _quoted(value: object) -> str:
    """A value as Hydra's override grammar reads it back unchanged (a path with spaces...)."""
    text = str(value)
    if _PLAIN_VALUE.fullmatch(text) and text:
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _model_override(model: object) -> list[str]:
    """`model=` as overrides: a config name (conf/model/<name>.yaml), or a Python object of your
    own -- a Predictor instance or class, a `predict(rows)` function, a scikit-learn estimator --
    registered in this process and run by the custom backend (`model=custom
    model.target=registered:<name>`, hhx/predictors/custom.py). Its name is the object's `name`
    attribute where it has one (the Predictor protocol's), else its class's or function's name;
    `overrides=["model.name=..."]` gives another."""
    if isinstance(model, str):
        return [f"model={model}"]
    from hhx.predictors.custom import register_instance

    name = getattr(model, "name", None)
    target = register_instance(model, name if isinstance(name, str) and name else None)
    return ["model=custom", f"model.target={target}"]


def _task_override(task: object) -> list[str]:
    from hhx.app import TASK_SETS

    if not isinstance(task, str) or "," in task or task in TASK_SETS:
        raise ConfigError(
            f"task={task}: the Python API runs one task at a time; loop over the tasks in Python "
            "(hhx.list_tasks()) or run the sweep from the command line with --multirun")
    return [f"task={task}"]


def _overrides(task: object | None, model: object | None, overrides: Sequence[str] | None,
               *, max_examples: int | None = None, split: str | None = None,
               tracking: bool | None = None, root: str | Path | None = None,
               stage: str | None = None) -> list[str]:
    """The override list a call stands for: stage, task, model, the keyword conveniences, then
    the caller's own overrides (so theirs win, as later overrides do on the command line)."""
    if isinstance(overrides, str):
        raise ConfigError(f"overrides={overrides!r}: give a list of override strings, e.g. "
                          "overrides=['data.max_examples=20']")
    out = [f"stage={stage}"] if stage else []
    out += _task_override(task) if task is not None else []
    out += _model_override(model) if model is not None else []
    if max_examples is not None:
        out.append(f"data.max_examples={int(max_examples)}")
    if split is not None:
        out.append(f"data.split={split}")
    if tracking is not None:
        out.append("tracking=mlflow" if tracking else "tracking=none")
    if root is not None:
        out.append(f"paths.root={_quoted(Path(root).expanduser().resolve())}")
    given = [str(o) for o in (overrides or ())]
    for item in given:
        key, sep, value = item.lstrip("+~").partition("=")
        if item in ("-m", "--multirun") or key.strip().startswith("hydra.mode"):
            raise ConfigError(f"{item}: the Python API runs one job, not a sweep; run sweeps "
                              "from the command line (hhx --multirun ...)")
        if sep and key.strip() == "task":
            _task_override(value)
    return out + given


# --------------------------------------------------------------------------------------------
# one run, and the process left as it was found


@dataclasses.dataclass
class _Job:
    """What one run's job hands back: its folder, what its stage returned, a few settings."""

    run_dir: Path | None
    value: Any
    settings: dict[str, str | None]


_SETTINGS = ("task.name", "model.name", "data.root", "leaderboard.output_dir", "paths.runs_dir")


def _settings(cfg: Any) -> dict[str, str | None]:
    from omegaconf import OmegaConf

    out: dict[str, str | None] = {}
    for key in _SETTINGS:
        try:
            value = OmegaConf.select(cfg, key, default=None)
        except Exception:  # an unresolvable interpolation: the stage would have said so
            value = None
        out[key] = None if value is None else str(value)
    return out


def _configured_loggers() -> set[str]:
    """The loggers the run's logging configs set (conf/hydra/job_logging/hhx.yaml: `hhx`)."""
    from hydra.core.hydra_config import HydraConfig

    names: set[str] = set()
    for part in ("job_logging", "hydra_logging"):
        section: Any = getattr(HydraConfig.get(), part, None) or {}
        names.update(str(k) for k in (section.get("loggers") or {}))
    return names


def _all_loggers() -> list[logging.Logger]:
    return [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                   if isinstance(lg, logging.Logger))]


@contextlib.contextmanager
def _logging_kept(configured: set[str]) -> Iterator[None]:
    """Hydra configures logging per run (dictConfig: root handlers replaced, the old ones
    closed); afterwards the caller's handlers and levels come back and the run's are closed, so
    a second call neither duplicates handlers nor writes into the last run's app.log. A logger
    first made during the run keeps what its library set, unless the run's config set it
    (`configured`, filled by the job)."""
    kept = {id(lg): (lg.level, list(lg.handlers), lg.propagate, lg.disabled)
            for lg in _all_loggers()}
    try:
        yield
    finally:
        for lg in _all_loggers():
            before = kept.get(id(lg))
            if before is None and lg.name not in configured:
                continue
            level, old, propagate, disabled = before or (logging.NOTSET, [], True, False)
            for handler in lg.handlers:
                if handler not in old:
                    handler.close()
            lg.setLevel(level)
            lg.handlers, lg.propagate, lg.disabled = old, propagate, disabled


@contextlib.contextmanager
def _process_kept(configured: set[str]) -> Iterator[None]:
    """cwd, sys.stdout/stderr, Hydra's run config and logging as they were before the call."""
    from hydra.core.hydra_config import HydraConfig

    cwd, stdout, stderr = os.getcwd(), sys.stdout, sys.stderr
    hydra_cfg = HydraConfig.instance().cfg
    try:
        with _logging_kept(configured):
            yield
    finally:
        sys.stdout, sys.stderr = stdout, stderr
        HydraConfig.instance().cfg = hydra_cfg
        if os.getcwd() != cwd:
            os.chdir(cwd)


def _run(overrides: list[str], *, capture: io.StringIO | None = None) -> _Job:
    """Run `hhx <overrides>` (one job) in this process; a composition error as `ConfigError`."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from hhx import app, cli_errors

    started: list[bool] = []
    configured: set[str] = set()

    def job(cfg: Any) -> _Job:  # the command's job (hhx.app._job) minus its error printing
        started.append(True)
        configured.update(_configured_loggers())
        with app.run_folder(cfg, sweep=False) as out:
            value = app.run_job(cfg)
        return _Job(out if out is not None and out.is_dir() else None, value, _settings(cfg))

    with _process_kept(configured):
        if capture is not None:
            sys.stdout = capture
        try:
            # `task_path=[...]` (own task folders) as the command takes it: HHX_TASK_PATH and
            # Hydra's search path (hhx/tasks/own.py)
            result: _Job = app.run_one(app.own_task_args(list(overrides)), job)
            return result
        except (HydraException, OmegaConfBaseException) as exc:
            if started:
                raise
            raise ConfigError(cli_errors.given_line(exc, overrides)) from None


# --------------------------------------------------------------------------------------------
# evaluate


@dataclasses.dataclass(frozen=True, eq=False)
class EvalResult:
    """One evaluate run: the official scorer's result, per-example details, where it is kept."""

    task: str
    model: str
    result: dict[str, Any] = dataclasses.field(repr=False)  # the scorer's result (result/<task>.json)
    scores: pd.DataFrame = dataclasses.field(repr=False)  # its metrics, one row
    details: pd.DataFrame = dataclasses.field(repr=False)  # one row per example (details/<task>.parquet)
    run_dir: Path
    run_id: str | None  # the MLflow run; None with tracking off

    @property
    def metrics(self) -> dict[str, Any]:
        return dict(self.result.get("metrics") or {})

    @property
    def primary_metric(self) -> str | None:
        return self.metrics.get("primary_metric")

    @property
    def primary_score(self) -> float | None:
        score = self.metrics.get("primary_score")
        return float(score) if isinstance(score, (int, float)) else None

    def _headline(self) -> str:
        score = "none" if self.primary_score is None else f"{self.primary_score:.4f}"
        direction = str(self.metrics.get("score_direction", "")).replace("_", " ")
        return (f"{self.task} x {self.model}: {self.primary_metric} = {score}"
                + (f" ({direction})" if direction else "")
                + f", {self.result.get('num_valid')} of {self.result.get('num_examples')} valid")

    def __repr__(self) -> str:
        return (f"EvalResult({self._headline()}; run_id={self.run_id}, "
                f"run_dir={str(self.run_dir)!r})")

    def _repr_html_(self) -> str:
        return (f"<p><b>{html.escape(self._headline())}</b><br>run {html.escape(str(self.run_id))}"
                f" · {html.escape(str(self.run_dir))}</p>" + self.scores.to_html(index=False))


def _scores(task: str, model: str, result: dict[str, Any]) -> pd.DataFrame:
    """The scorer's metrics as one row (nested per-target metrics as `metric.target` columns)."""
    import pandas as pd

    metrics = pd.json_normalize(result.get("metrics") or {}, sep=".")
    counts = {k: result.get(k) for k in ("num_examples", "num_valid", "valid_response_rate",
                                          "coverage_rate")}
    first = pd.DataFrame([{"task": task, "model": model, **counts}])
    return pd.concat([first, metrics], axis=1)


def evaluate(task: str | None = None, model: Any = None,
             overrides: Sequence[str] | None = None, *, max_examples: int | None = None,
             split: str | None = None, tracking: bool | None = None,
             root: str | Path | None = None) -> EvalResult:
    """`hhx task=<task> model=<model> <overrides>` from Python: predict, score with the official
    scorer, track in MLflow; the same run folder and MLflow run as the command.

    task, model: config names (conf/task, conf/model; `hhx stage=list`; left out: conf/config.yaml's
    defaults, as on the command line). overrides: Hydra override
    strings exactly as on the command line (`["data.max_examples=20"]`). Conveniences, each one
    override: max_examples -> data.max_examples, split -> data.split, tracking=False ->
    tracking=none, root -> paths.root (data, run folders and the MLflow store). One task and one
    model per call: sweeps (`--multirun`) are the command line's. Raises ConfigError (unknown task,
    model or setting), DataError, PredictorError, RunFailed (written and logged FAILED)...
    """
    import pandas as pd

    job = _run(_overrides(task, model, overrides, max_examples=max_examples, split=split,
                          tracking=tracking, root=root, stage="evaluate"))
    value = job.value if isinstance(job.value, dict) else {}
    if "result" not in value or job.run_dir is None:  # a dry run (+dry_run=true) scores nothing
        raise ConfigError("evaluate ran no model (a dry run?): drop dry_run from the overrides")
    name, model_name = str(job.settings["task.name"]), str(job.settings["model.name"])
    files = value.get("files") or {}
    details = Path(files.get("details") or job.run_dir / "details" / f"{name}.parquet")
    return EvalResult(task=name, model=model_name, result=value["result"],
                      scores=_scores(name, model_name, value["result"]),
                      details=pd.read_parquet(details), run_dir=job.run_dir,
                      run_id=value.get("run_id"))


# --------------------------------------------------------------------------------------------
# build, describe, list


@dataclasses.dataclass(frozen=True)
class BuildResult:
    """A task built in the official release layout under `folder` (data.root)."""

    task: str
    folder: Path  # the release root (data.root): tabular/, prompts/, splits/, manifest.csv
    files: dict[str, Path]  # this task's files there (table, prompts, sidecar, manifests)
    counts: dict[str, Any]  # rows, rows per split, seconds (what the build run logs)


def build(task: str | None = None, overrides: Sequence[str] | None = None, *,
          tracking: bool | None = None, root: str | Path | None = None) -> BuildResult:
    """`hhx stage=build task=<task> <overrides>`: the task's table, prompts and splits under
    data.root (the demo's by default), up to date or rebuilt. One task per call."""
    from hhx.bench.layout import release_paths

    job = _run(_overrides(task, None, overrides, tracking=tracking, root=root, stage="build"))
    name, folder = str(job.settings["task.name"]), Path(str(job.settings["data.root"]))
    files = {k: p for k, p in release_paths(folder, name).items() if p.exists()}
    counts = dict(job.value) if isinstance(job.value, dict) else {}
    return BuildResult(task=name, folder=folder, files=files, counts=counts)


@dataclasses.dataclass(frozen=True)
class TaskDescription:
    """`hhx stage=describe task=<task>`: `info` is what `--json` prints, `text` the words."""

    task: str
    info: dict[str, Any]
    text: str

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.text)}</pre>"


def describe(task: str, overrides: Sequence[str] | None = None, *,
             root: str | Path | None = None) -> TaskDescription:
    """A task in words (its metric, no-change rule, splits, an example prompt) and as data."""
    from hhx.stages.describe import JSON_ENV

    text = io.StringIO()
    json_flag = os.environ.pop(JSON_ENV, None)  # the words, whatever a `--json` run left set
    try:
        job = _run(_overrides(task, None, overrides, root=root, stage="describe"), capture=text)
    finally:
        if json_flag is not None:
            os.environ[JSON_ENV] = json_flag
    info = dict(job.value) if isinstance(job.value, dict) else {}
    return TaskDescription(task=str(job.settings["task.name"]), info=info,
                           text=text.getvalue().rstrip("\n"))


def list_tasks() -> pd.DataFrame:
    """The 32 tasks as the official release describes them (hhx/bench/catalog.csv): topic,
    survey, mode, target type, rows, splits, whether the release ships it or it is rebuilt."""
    import pandas as pd

    from hhx.bench.catalog import catalog

    return pd.DataFrame([dataclasses.asdict(row) for row in catalog().values()])


# --------------------------------------------------------------------------------------------
# leaderboard


@dataclasses.dataclass(frozen=True, eq=False)
class LeaderboardResult:
    """The leaderboard's tables as written under `output_dir` (CSV), and its report."""

    tables: dict[str, pd.DataFrame] = dataclasses.field(repr=False)
    report: Path
    output_dir: Path
    run_id: str | None
    info: dict[str, Any] = dataclasses.field(repr=False)  # what the stage returns (run counts...)

    @property
    def ranks(self) -> pd.DataFrame:
        """One row per model: average rank over tasks and its interval."""
        return self.tables["leaderboard"]

    @property
    def matrix(self) -> pd.DataFrame:
        """Model x task: each model's official score per task (a row per model)."""
        return self.tables["matrix"]

    @property
    def task_metrics(self) -> pd.DataFrame:
        """Per task and model: the score, its interval and the model's rank on the task."""
        return self.tables["task_metrics"]

    def _repr_html_(self) -> str:
        return (f"<p>report: {html.escape(str(self.report))}</p>"
                + self.ranks.to_html(index=False) + self.matrix.to_html(index=False))


def leaderboard(overrides: Sequence[str] | None = None, *, n_resamples: int | None = None,
                tracking: bool | None = None, root: str | Path | None = None) -> LeaderboardResult:
    """`hhx stage=leaderboard <overrides>`: rank the tracked evaluate runs (paired bootstrap),
    write the tables and the HTML report; returns the tables as DataFrames."""
    import pandas as pd

    from hhx.leaderboard.stage import TABLES

    extra = [f"leaderboard.n_resamples={int(n_resamples)}"] if n_resamples is not None else []
    job = _run(_overrides(None, None, [*extra, *(overrides or ())], tracking=tracking, root=root,
                          stage="leaderboard"))
    info = dict(job.value) if isinstance(job.value, dict) else {}
    out = Path(info.get("output_dir") or str(job.settings["leaderboard.output_dir"]))
    tables = {name: pd.read_csv(out / f"{name}.csv") for name in TABLES
              if (out / f"{name}.csv").is_file()}
    tables.update({f"analyses/{p.stem}": pd.read_csv(p)
                   for p in sorted((out / "analyses").glob("*.csv"))})
    return LeaderboardResult(tables=tables, report=Path(info.get("report") or out / "report.html"),
                             output_dir=out, run_id=info.get("mlflow_run_id"), info=info)
