"""Your own predictor (`model=custom model.target=...`, hhx/predictors/custom.py): the example
class (scikit-learn on the task's features), a plain function, a scikit-learn estimator as it is,
an object registered in the process and an entry point, on real demo tasks of two shapes
(categorical labor_cps_jobfind, numeric income_cps_displace); tracking, the leaderboard, the
sweep's resume identity, and one line for every bad target or bad answer.

One demo build shared by the module; the CLI runs are real `python -m hhx` subprocesses.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mlflow
import pandas as pd
import pytest

from hhx.bench.layout import BenchTask, load_bench_task
from hhx.catalog import custom_model_name
from hhx.errors import ConfigError, PredictorError
from hhx.predictors import custom
from hhx.predictors.protocol import PredictionRow
from hhx.scoring.parser import answer_spec, validate_value
from hhx.tasks.registry import load_task

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
JOBFIND, DISPLACE = "labor_cps_jobfind", "income_cps_displace"
RIDGE = "examples.custom_predictor.ridge_predictor.RidgePredictor"
RULES = "examples.custom_predictor.rules"


def hhx(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`python -m hhx ...` in workdir (the repository importable, as after `pip install -e .`)."""
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "HHX_NO_PROGRESS": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    flags = [a for a in args if a.startswith("--")]
    overrides = [a for a in args if not a.startswith("--")]
    cmd = [sys.executable, "-m", "hhx", *flags, f"tracking.uri=sqlite:///{workdir}/mlflow.db",
           *overrides]
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"hhx {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def scores(stdout: str) -> dict[str, list[str]]:
    """The printed result table: model -> its values as printed."""
    lines = [ln.split() for ln in stdout.splitlines()]
    header = next(ln for ln in lines if ln[:1] == ["model"])
    return {ln[0]: ln[1:] for ln in lines if len(ln) == len(header) and ln[0] != "model"}


def runs(workdir: Path, **tags: str) -> pd.DataFrame:
    mlflow.set_tracking_uri(f"sqlite:///{workdir}/mlflow.db")
    found = mlflow.search_runs(experiment_names=["hhx"])
    for key, value in tags.items():
        found = found[found[f"tags.hhx.{key}"] == value]
    return found


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> dict[str, Any]:
    """The example class with a param on the categorical task (builds the demo), and on the
    numeric task without; a plain function on the categorical task."""
    workdir = tmp_path_factory.mktemp("custom")
    ridge = hhx(workdir, f"task={JOBFIND}", "model=custom", f"model.target={RIDGE}",
                "+model.params.alpha=10")
    numeric = hhx(workdir, f"task={DISPLACE}", "model=custom", f"model.target={RIDGE}")
    function = hhx(workdir, f"task={JOBFIND}", "model=custom", f"model.target={RULES}.no_change")
    return {"dir": workdir, "ridge": ridge, "numeric": numeric, "function": function}


def bench(work: dict[str, Any], task: str) -> BenchTask:
    return load_bench_task(work["dir"] / "data" / "demo" / "householdbench", load_task(task),
                           source="demo", synthetic=True)


def config(target: str, params: dict[str, Any] | None = None,
           name: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(model=SimpleNamespace(
        target=target, params=params, name=name or custom_model_name(target, params)))


def answer(task: BenchTask, predictor: Any, n: int = 30) -> list[PredictionRow]:
    examples = task.eval_examples("pre_cutoff_test", n)
    rows = predictor.fit(task).predict(task, examples)
    spec = answer_spec(task.spec)
    assert [r.id for r in rows] == [str(i) for i in examples["id"]]
    for row in rows:
        validate_value(row.prediction, spec)  # the official form, or ValueError
    return rows


# --------------------------------------------------------------------------------------------
# the CLI


def test_example_class_on_a_categorical_and_a_numeric_task_is_tracked(work):
    table = scores(work["ridge"].stdout)
    ridge, naive = table["RidgePredictor(alpha=10)"], table["no_change"]
    assert ridge[2:4] == ["200", "1.0000"]  # n, valid_rate
    assert float(ridge[0]) > float(naive[0])  # macro-F1: it learned something
    numeric = scores(work["numeric"].stdout)["RidgePredictor"]
    assert numeric[3] == "1.0000" and float(numeric[0]) < 1.0  # RelMAE below no-change's 1
    found = runs(work["dir"], backend="custom", task=JOBFIND)
    run = found[found["tags.hhx.model"] == "RidgePredictor(alpha=10)"].iloc[0]
    assert run["tags.hhx.custom.target"] == RIDGE
    assert run["params.model.target"] == RIDGE and run["params.model.params.alpha"] == "10"
    assert run["metrics.ridge_alpha"] == 10.0  # the class's own run_metrics
    assert run["status"] == "FINISHED"


def test_a_function_answers_like_the_baseline_it_reimplements(work):
    table = scores(work["function"].stdout)
    assert table["rules.no_change"] == table["no_change"]
    assert len(runs(work["dir"], model="rules.no_change", backend="custom")) == 1


def test_two_targets_are_two_leaderboard_rows(work):
    workdir = work["dir"]
    hhx(workdir, "stage=leaderboard", "leaderboard.n_resamples=200",
        f"leaderboard.output_dir={workdir}/lb")
    board = pd.read_csv(workdir / "lb" / "leaderboard.csv")
    rows = board.set_index("model")
    assert {"RidgePredictor(alpha=10)", "RidgePredictor", "rules.no_change"} <= set(rows.index)
    assert rows.loc["RidgePredictor(alpha=10)", "backend"] == "custom"


def test_a_sweep_skips_the_same_target_and_runs_another(work):
    workdir = work["dir"]
    proc = hhx(workdir, "--multirun", f"task={JOBFIND}", "model=custom",
               f"model.target={RULES}.no_change,{RULES}.short_spells_find_work")
    assert f"skipped: {JOBFIND} x rules.no_change finished before" in proc.stdout
    assert "sweep: 1 run, 1 skipped, 0 failed" in proc.stdout
    assert len(runs(workdir, model="rules.short_spells_find_work")) == 1
    # the same target with other params is another cell
    again = hhx(workdir, "--multirun", f"task={JOBFIND}", "model=custom",
                f"model.target={RULES}.short_spells_find_work", "+model.params.weeks=10")
    assert "1 run, 0 skipped" in again.stdout
    assert len(runs(workdir, model="rules.short_spells_find_work(weeks=10)")) == 1


def test_a_dry_run_prices_it_as_free_cpu_work(work):
    proc = hhx(work["dir"], "--multirun", f"task={JOBFIND}", "model=custom",
               f"model.target={RIDGE}", "+dry_run=true")
    assert "would send 0 requests, ~$0.00" in proc.stdout
    listing = hhx(work["dir"], "stage=list").stdout
    assert any(line.split()[:2] == ["custom", "custom"] for line in listing.splitlines())


@pytest.mark.parametrize(("args", "message"), [
    ([], "model=custom needs model.target="),
    (["model.target=examples.custom_predictor.nothere.X"],
     "module 'examples.custom_predictor.nothere' not found"),
    ([f"model.target={RULES}.nothere"], f"{RULES} has no attribute 'nothere'"),
    (["model.target=json.JSONDecoder"], "class JSONDecoder is not a predictor: it lacks fit, "
                                        "predict"),
    (["model.target=no_such_entry_point"], "no entry point 'no_such_entry_point' in the group "
                                           "hhx.predictors"),
    ([f"model.target={RIDGE}", "+model.params.beta=1"], "RidgePredictor(**model.params) failed"),
    ([f"model.target={RULES}.no_change", "+model.params.weeks=1"],
     "the function cannot take (rows, **model.params)"),
    (["model.target=registered:mine"], "no object registered as 'mine' in this process"),
])
def test_a_bad_target_is_one_line(work, args, message):
    proc = hhx(work["dir"], f"task={JOBFIND}", "model=custom", "tracking=none", *args,
               check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if "error" in ln.lower()]
    assert len(errors) == 1 and message in errors[0], proc.stderr


def test_a_wrong_answer_count_stops_the_run_with_one_line(work):
    # a module in the folder hhx runs from is importable, as with `python -m`
    (work["dir"] / "short.py").write_text("def predict(rows):\n    return [['employed']]\n")
    proc = hhx(work["dir"], f"task={JOBFIND}", "model=custom", "model.target=short.predict",
               "tracking=none", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert ("predict returned 1 answers for the 200 examples of task labor_cps_jobfind (the "
            "first without one is row id ") in proc.stderr


# --------------------------------------------------------------------------------------------
# in this process: objects, entry points, estimators, bad answers


def test_a_registered_object_a_class_and_a_function_resolve_in_process(work):
    from examples.custom_predictor.ridge_predictor import RidgePredictor

    task = bench(work, JOBFIND)
    target = custom.register_instance(RidgePredictor(alpha=3.0), name="ridge3")
    assert target == "registered:ridge3" and custom_model_name(target) == "ridge3"
    predictor = custom.make(config(target))
    assert predictor.name == "ridge3"
    rows = answer(task, predictor)
    assert {r.prediction[0] for r in rows} <= {"employed", "unemployed", "not_in_labor_force"}
    assert predictor.save(Path("unused")) == [] and predictor.run_metrics() == {"ridge_alpha": 3.0}
    # a class registered is built with model.params; a function registered answers rows
    built = custom.make(config(custom.register_instance(RidgePredictor), {"alpha": 2.0}))
    assert built.run_metrics() == {"ridge_alpha": 2.0}
    assert answer(task, built)
    fn = custom.register_instance(lambda rows: [["employed"]] * len(rows), name="always")
    assert {r.prediction[0] for r in answer(task, custom.make(config(fn)))} == {"employed"}
    # an object already made takes no params
    with pytest.raises(ConfigError, match="names an object already made"):
        custom.make(config(target, {"alpha": 1.0}))


def test_an_entry_point_names_an_installed_predictor(work, tmp_path, monkeypatch):
    (tmp_path / "my_hhx_models.py").write_text(
        "import json\n\ndef baseline(rows):\n"
        "    return [json.loads(t) for t in rows['naive_baseline']]\n")
    dist = tmp_path / "my_hhx_models-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-hhx-models\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[hhx.predictors]\nmy_baseline = my_hhx_models:baseline\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    predictor = custom.make(config("my_baseline"))
    assert predictor.name == "my_baseline"
    task = bench(work, JOBFIND)
    examples = task.eval_examples("pre_cutoff_test", 20)
    rows = predictor.fit(task).predict(task, examples)
    assert [r.prediction for r in rows] == [__import__("json").loads(t)
                                             for t in examples["naive_baseline"]]


def test_scikit_learn_estimators_are_fitted_per_output_on_the_features(work):
    labels = answer(bench(work, JOBFIND), custom.make(config(
        "sklearn.ensemble.HistGradientBoostingClassifier", {"max_iter": 30})))
    assert len({r.prediction[0] for r in labels}) > 1
    numbers = answer(bench(work, DISPLACE), custom.make(config("sklearn.linear_model:Ridge")))
    assert all(isinstance(r.prediction[0], float) for r in numbers)


def test_the_function_rows_hold_the_features_but_not_the_gold_answer(work):
    seen: list[pd.DataFrame] = []

    def spy(rows: pd.DataFrame) -> list:
        seen.append(rows)
        return [["employed"]] * len(rows)

    task = bench(work, JOBFIND)
    answer(task, custom.make(config(custom.register_instance(spy, name="spy"))), n=10)
    columns = set(seen[0].columns)
    assert {"id", "time", "user", "naive_baseline", "durunemp_baseline", "prompt_month"} <= columns
    assert not {"assistant", "target"} & columns


def bad(rows: pd.DataFrame) -> list:
    return [["hired"]] + [["employed"]] * (len(rows) - 1)


class Reversed:
    def fit(self, task: BenchTask) -> Reversed:
        return self

    def predict(self, task: BenchTask, examples: pd.DataFrame) -> list[PredictionRow]:
        return [PredictionRow(str(r.id), str(r.time), ["employed"])
                for r in examples.iloc[::-1].itertuples()]


class Crashing(Reversed):
    def predict(self, task: BenchTask, examples: pd.DataFrame) -> list[PredictionRow]:
        return {}["no such key"]


@pytest.mark.parametrize(("obj", "message"), [
    (bad, "row id {id} (time {time}): answer [\"hired\"] is not an answer of task "
          "labor_cps_jobfind (labor_force_status:invalid_label:'hired';allowed=employed,unemployed,"
          "not_in_labor_force); expected a list of 1 label(s) [labor_force_status: one of employed, "
          "unemployed, not_in_labor_force]"),
    (Reversed(), "an answer for row id {last} "),
    (Crashing(), "predict raised KeyError: 'no such key' ("),
    (lambda rows: "employed", "the function returned no list of answers"),
])
def test_a_bad_answer_names_the_row_and_the_expected_form(work, obj, message):
    task = bench(work, JOBFIND)
    examples = task.eval_examples("pre_cutoff_test", 5)
    predictor = custom.make(config(custom.register_instance(obj, name="bad")))
    first, last = examples.iloc[0], examples.iloc[-1]
    with pytest.raises(PredictorError) as err:
        predictor.fit(task).predict(task, examples)
    assert message.format(id=first["id"], time=first["time"], last=last["id"]) in str(err.value)


def test_the_default_name_says_the_target_and_its_params():
    assert custom_model_name(None) == "custom"
    assert custom_model_name("pkg.models.Ridge") == "Ridge"
    assert custom_model_name("pkg.models:Ridge", {"alpha": 1, "fit_intercept": False}) == \
        "Ridge(alpha=1,fit_intercept=False)"
    assert custom_model_name("pkg.rules.predict") == "rules.predict"
    assert custom_model_name("pkg.rules:predict") == "rules.predict"
    assert custom_model_name("my_entry_point") == "my_entry_point"
    assert custom_model_name("registered:mine") == "mine"


def example_commands() -> list[list[str]]:
    """The `python -m hhx` lines of examples/custom_predictor/README.md, each sweep at its
    first value."""
    import re
    import shlex

    text = (REPO / "examples" / "custom_predictor" / "README.md").read_text()
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if "-m hhx" in line:
                args = shlex.split(re.sub(r"\s#.*$", "", line).split("-m hhx", 1)[1])
                found.append([a.split(",")[0] for a in args if not a.startswith("-")])
    return found


@pytest.mark.parametrize("args", example_commands())
def test_the_example_readme_commands_compose_and_pass_the_settings_check(args):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from hhx.config_check import validate_config
    from hhx.paths import conf_dir
    from hhx.predictors.base import register_schemas

    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(str(conf_dir()), version_base="1.3"):
        cfg = compose("config", overrides=args)
    validate_config(cfg)
    if "model=custom" in args:
        target = next(a.split("=", 1)[1] for a in args if a.startswith("model.target="))
        assert cfg.model.target == target and cfg.model.backend.name == "custom"
        assert cfg.model.name.split("(")[0] in ("RidgePredictor", "HistGradientBoostingClassifier",
                                                "rules.short_spells_find_work")
