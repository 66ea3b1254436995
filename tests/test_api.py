"""The Python API (hhx/api.py) on the demo data: evaluate's result object, build, describe,
list_tasks and the leaderboard; typed errors with the command's one line; calls repeated in one
process leave it as they found it; and the same run through `python -m hhx` and `hhx.evaluate`
writes the same files and the same MLflow record (one code path).

One demo build (CPS) is shared by the module; the equality test copies it into a second root so
both entries start from the same state."""

from __future__ import annotations

import gc
import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import yaml

import hhx

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
TASK, OTHER = "labor_cps_jobfind", "labor_cps_ui"
SMALL = ["data.max_examples=20", "model.xgboost.n_estimators=5"]


def _store(root: Path) -> str:
    return f"sqlite:///{root}/mlflow.db"


def _own(root: Path) -> list[str]:
    """A root of the test's own: data, run folders and the MLflow store all under it."""
    return [f"paths.root={root}", f"tracking.uri={_store(root)}"]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """The demo's CPS data built once, through the API (hhx.build)."""
    folder = tmp_path_factory.mktemp("api_root")
    built = hhx.build(task=TASK, overrides=_own(folder))
    assert built.task == TASK and built.folder == folder / "data" / "demo" / "householdbench"
    assert {"table", "prompts", "sidecar", "manifest"} <= set(built.files)
    table = pd.read_csv(built.files["table"])
    assert built.counts["rows"] == len(table) > 0
    assert built.counts["rows"] == sum(v for k, v in built.counts.items()
                                       if k.startswith("rows."))
    return folder


def _process_state() -> dict[str, object]:
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    return {"handlers": list(logging.getLogger().handlers),
            "hhx_handlers": list(logging.getLogger("hhx").handlers),
            "level": logging.getLogger().level, "hhx_level": logging.getLogger("hhx").level,
            "stdout": sys.stdout, "cwd": os.getcwd(),
            "hydra": GlobalHydra.instance().is_initialized(),
            "hydra_cfg": HydraConfig.instance().cfg, "gc": gc.isenabled(),
            "mlflow_run": mlflow.active_run()}


def test_evaluate_returns_scores_details_and_the_tracked_run(root):
    before = _process_state()
    run = hhx.evaluate(task=TASK, model="xgboost", overrides=[*_own(root), *SMALL])
    assert _process_state() == before  # nothing of the run left behind in the process
    assert (run.task, run.model) == (TASK, "xgboost")
    result = json.loads((run.run_dir / "result" / f"{TASK}.json").read_text())
    assert run.result == result
    # scores: the scorer's metrics, one row; details: one row per example, as written
    assert len(run.scores) == 1
    row = run.scores.iloc[0]
    assert row["primary_metric"] == "mean_macro_f1" == run.primary_metric
    assert row["primary_score"] == run.primary_score == result["metrics"]["primary_score"]
    assert row["num_examples"] == 20 and row["task"] == TASK
    pd.testing.assert_frame_equal(
        run.details, pd.read_parquet(run.run_dir / "details" / f"{TASK}.parquet"))
    assert len(run.details) == 20 and not run.details[["id", "time"]].duplicated().any()
    assert f"{TASK} x xgboost: mean_macro_f1 = {run.primary_score:.4f}" in repr(run)
    assert "<table" in run._repr_html_()
    # the MLflow run is the one the run folder names, finished, with the same score
    logged = mlflow.MlflowClient(_store(root)).get_run(run.run_id)
    assert logged.info.status == "FINISHED"
    assert logged.data.metrics["primary_score"] == pytest.approx(run.primary_score)
    assert logged.data.tags["hhx.model"] == "xgboost"
    assert {"config", "predictions", "result", "details", ".hydra"} <= {
        p.name for p in run.run_dir.iterdir()}


class _Kept(logging.Handler):
    """A notebook user's own handler on the root logger."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_called_again_in_the_same_process_with_other_tasks_and_models(root, capsys):
    mine = _Kept()
    logging.getLogger().addHandler(mine)
    try:
        before = _process_state()
        runs = [hhx.evaluate(task=task, model=model, overrides=_own(root), max_examples=10)
                for task, model in [(TASK, "no_change"), (OTHER, "no_change"),
                                    (OTHER, "xgboost"), (TASK, "no_change"), (OTHER, "no_change")]]
        assert _process_state() == before
        mine.lines.clear()
        logging.getLogger("hhx.user").debug("hhx's detail stays out of the user's handler")
        logging.getLogger("user").warning("the user's own line")
        assert mine.lines == ["the user's own line"]  # still attached, hhx's levels restored
    finally:
        logging.getLogger().removeHandler(mine)
    assert [(r.task, r.model) for r in runs] == [
        (TASK, "no_change"), (OTHER, "no_change"), (OTHER, "xgboost"), (TASK, "no_change"),
        (OTHER, "no_change")]
    assert len({r.run_dir for r in runs}) == len({r.run_id for r in runs}) == 5
    assert all(len(r.details) == 10 for r in runs)
    # the same run twice gives the same scores; every run's log holds only its own lines
    pd.testing.assert_frame_equal(runs[0].details, runs[3].details)
    for r in runs:
        log = (r.run_dir / "app.log").read_text()
        assert f"run directory: {r.run_dir}" in log
        assert log.count("run directory:") == 1
    out = capsys.readouterr().out
    assert out.count("run directory:") == 5  # each result printed once: no duplicated handler


@pytest.mark.parametrize("kwargs, line", [
    ({"task": "labor_cps_jobfnd"},
     "task=labor_cps_jobfnd: no task named labor_cps_jobfnd; did you mean task=labor_cps_jobfind?"),
    ({"overrides": ["data.max_exampls=5"]},
     "unknown setting data.max_exampls; did you mean data.max_examples=5?"),
    ({"model": "xgbost"}, "model=xgbost: no model named xgbost; did you mean model=xgboost?"),
])
def test_a_bad_setting_raises_config_error_with_the_commands_line(root, kwargs, line):
    args = {"task": TASK, "model": "no_change", "overrides": [], **kwargs}
    words = [f"task={args['task']}", f"model={args['model']}", *args["overrides"]]
    before = _process_state()
    with pytest.raises(hhx.ConfigError) as info:
        hhx.evaluate(task=args["task"], model=args["model"],
                     overrides=[*_own(root), *args["overrides"]])
    assert _process_state() == before
    assert str(info.value).startswith(line)
    proc = subprocess.run([sys.executable, "-m", "hhx", *_own(root), *words],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO), "HYDRA_FULL_ERROR": "0"})
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"hhx: error: {info.value}"


def test_sweeps_are_refused_in_one_clear_line(root):
    with pytest.raises(hhx.ConfigError, match="one task at a time.*--multirun"):
        hhx.evaluate(task="all", model="no_change", overrides=_own(root))
    with pytest.raises(hhx.ConfigError, match="not a sweep"):
        hhx.evaluate(task=TASK, model="no_change", overrides=["--multirun"])


class RidgeOfMine:
    """A user's own predictor, defined where they work (a notebook): the Predictor protocol
    with a scikit-learn model on the task's features."""

    name = "ridge_of_mine"

    def fit(self, task):
        from sklearn.linear_model import Ridge, RidgeClassifier

        from hhx.predictors.features import TaskFeatures

        self.data = TaskFeatures(task, one_hot=True, impute=True)
        x, y = self.data.train()
        self.models = {o.name: (RidgeClassifier if o.kind == "categorical" else Ridge)().fit(
            x, y[o.name]) for o in self.data.outputs}
        return self

    def predict(self, task, examples):
        x = self.data.features(examples)
        return self.data.rows(examples, {n: m.predict(x) for n, m in self.models.items()})


def test_your_own_python_objects_are_evaluated_tracked_and_named(root):
    """hhx.evaluate(model=obj): an object of one's own (the custom backend, registered in the
    process) on two tasks, tracked like any model; a plain function answering the no-change
    answer scores exactly what no-change scores."""
    for task in (TASK, OTHER):
        run = hhx.evaluate(task=task, model=RidgeOfMine(), overrides=[*_own(root), *SMALL])
        assert run.model == "ridge_of_mine" and run.primary_score is not None
        tags = mlflow.MlflowClient(_store(root)).get_run(run.run_id).data.tags
        assert tags["hhx.backend"] == "custom" and tags["hhx.model"] == "ridge_of_mine"
        assert len(run.details) == 20

    def repeat_last(rows):
        return [json.loads(v) for v in rows["naive_baseline"]]

    mine = hhx.evaluate(task=TASK, model=repeat_last, overrides=[*_own(root), *SMALL])
    base = hhx.evaluate(task=TASK, model="no_change", overrides=[*_own(root), *SMALL])
    assert mine.model == "repeat_last"
    assert mine.primary_score == pytest.approx(base.primary_score)


def test_list_tasks_and_describe(root):
    tasks = hhx.list_tasks()
    assert len(tasks) == 32 and tasks["task"].is_unique and TASK in set(tasks["task"])
    assert {"topic", "survey", "mode", "target_type", "rows"} <= set(tasks.columns)
    about = hhx.describe(TASK, overrides=_own(root))
    assert about.task == TASK and about.info["name"] == TASK
    proc = subprocess.run([sys.executable, "-m", "hhx", "stage=describe", f"task={TASK}",
                           "--json", *_own(root)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(json.dumps(about.info, default=str)) == json.loads(proc.stdout)
    assert about.text.startswith(f"{TASK}: ") and "official metric" in about.text
    assert repr(about) == about.text


def _tracked(store: str, run_id: str, root: Path) -> dict[str, str]:
    """An MLflow run's params, tags and metrics, less what varies by nature (times, ids, the
    run's source and folder; tools/demo_grid.py's rule), the root written as <ROOT>."""
    spec = importlib.util.spec_from_file_location("demo_grid", REPO / "tools" / "demo_grid.py")
    assert spec and spec.loader
    grid = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(grid)
    data = mlflow.MlflowClient(store).get_run(run_id).data
    out = {}
    for kind, values in (("param", data.params), ("tag", data.tags), ("metric", data.metrics)):
        for key, value in values.items():
            if not grid._VOLATILE_KEY.search(key):  # a run name's "12-07 18:04" as <STAMP>
                text = grid._RUN_ID.sub("<ID>", str(value).replace(str(root), "<ROOT>"))
                out[f"{kind}:{key}"] = grid._STAMP.sub("<STAMP>", text)
    return out


def test_the_same_run_through_the_command_and_the_api_is_the_same(root, tmp_path):
    cli_root, api_root = tmp_path / "cli", tmp_path / "api"
    for where in (cli_root, api_root):  # the same built data, stores of their own
        shutil.copytree(root / "data", where / "data")
    words = [f"task={TASK}", "model=xgboost", *SMALL]
    proc = subprocess.run([sys.executable, "-m", "hhx", "stage=evaluate", *words,
                           *_own(cli_root)], cwd=cli_root, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = hhx.evaluate(task=TASK, model="xgboost", overrides=[*SMALL, *_own(api_root)])
    folder = next((cli_root / "outputs").glob("*/*_evaluate_*"))
    assert folder.name[9:] == run.run_dir.name[9:]  # <time>_evaluate_<task>_<model>

    def files(base: Path) -> list[str]:
        return sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())

    assert files(folder) == files(run.run_dir)
    for same in (f"result/{TASK}.json", f"predictions/{TASK}.jsonl"):
        assert (folder / same).read_bytes() == (run.run_dir / same).read_bytes(), same
    pd.testing.assert_frame_equal(pd.read_parquet(folder / "details" / f"{TASK}.parquet"),
                                  run.details)
    for text in ("config/resolved.yaml", ".hydra/config.yaml"):
        cli = (folder / text).read_text().replace(str(cli_root), "<ROOT>")
        assert cli == (run.run_dir / text).read_text().replace(str(api_root), "<ROOT>"), text
    hydra_cli, hydra_api = (yaml.safe_load((f / ".hydra" / "hydra.yaml").read_text())["hydra"]
                            for f in (folder, run.run_dir))
    for key in ("mode", "job", "overrides", "job_logging", "hydra_logging", "run"):
        cli_part = json.dumps(hydra_cli[key]).replace(str(cli_root), "<ROOT>")
        assert cli_part == json.dumps(hydra_api[key]).replace(str(api_root), "<ROOT>"), key
    assert hydra_cli["runtime"]["choices"] == hydra_api["runtime"]["choices"]
    # the MLflow record: the same params, tags and metrics
    cli_id = re.search(r"MLflow run ([0-9a-f]{32})", proc.stdout).group(1)
    cli_rec = _tracked(_store(cli_root), cli_id, cli_root)
    api_rec = _tracked(_store(api_root), run.run_id, api_root)
    assert cli_rec == api_rec
    assert len(cli_rec) > 50 and "metric:primary_score" in cli_rec


def test_import_hhx_is_light_and_its_leaderboard_is_the_function():
    code = ("import sys, hhx; names = [hhx.evaluate, hhx.ConfigError]; "
            "import hhx.leaderboard.stage; assert callable(hhx.leaderboard), hhx.leaderboard; "
            "print([m for m in ('hydra', 'mlflow', 'pandas', 'omegaconf') if m in sys.modules])")
    light = ("import sys, hhx; "
             "print([m for m in ('hydra', 'mlflow', 'pandas', 'omegaconf') if m in sys.modules])")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", light], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "[]", done.stderr
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr


def test_leaderboard_returns_its_tables_and_report(root):
    import hhx.leaderboard.stage  # noqa: F401  (the subpackage bound by name must not shadow it)

    board = hhx.leaderboard(overrides=_own(root), n_resamples=200)
    assert board.report.is_file() and board.report.name == "report.html"
    ranks = board.ranks
    assert {"no_change", "xgboost", "ridge_of_mine"} <= set(ranks["model"])
    assert ranks["avg_rank"].between(1, len(ranks)).all()
    pd.testing.assert_frame_equal(ranks, pd.read_csv(board.output_dir / "leaderboard.csv"))
    assert {TASK, OTHER} <= set(board.matrix.columns)
    assert {"leaderboard", "matrix", "task_metrics"} <= set(board.tables)
    assert board.run_id and mlflow.MlflowClient(_store(root)).get_run(
        board.run_id).info.status == "FINISHED"
    assert board.info["n_runs"] >= 2
