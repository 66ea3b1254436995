"""MLflow as a user browses it, against a real SQLite store: runs RUNNING while they work and
ended FINISHED/FAILED with real durations, the experiment kind MLflow 3 opens on its runs, builds
apart from evaluations, directed metric names, the evaluated examples as a dataset input and
the per-example details as a previewable table."""

from __future__ import annotations

import os
import time

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from hhx.tracking.mlflow_run import (
    begin_run,
    directed_name,
    experiment_for,
    fail_run,
    log_run,
)
from hhx.tracking.store import EXPERIMENT_KIND, EXPERIMENT_KIND_TAG


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One store for the module (a new SQLite store's migrations take seconds)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow')}/mlflow.db"


def test_a_run_is_running_while_it_works_then_finished_with_its_duration(tr, tmp_path):
    client = MlflowClient(tracking_uri=tr.uri)
    run_id = begin_run(tr, run_name="t · m · evaluate", tags={"hhx.stage": "evaluate"})
    assert client.get_run(run_id).info.status == "RUNNING"
    time.sleep(0.3)
    examples = pd.DataFrame({"id": ["a", "b"], "time": ["2020-01", "2020-02"],
                             "reference": ['["x"]', '["y"]']})
    details = examples.assign(valid=[True, False], raw_prediction=['["x"]', "nonsense"])
    assert log_run(tr, run_name="ignored", params={"a": "1"}, tags={"hhx.status": "finished"},
                   metrics={"primary_score": 0.5, directed_name("mean_macro_f1",
                                                                "higher_is_better"): 0.5},
                   artifact_dir=None, run_id=run_id, dataset=(examples, "t/pre", str(tmp_path)),
                   tables={"details/t.table.json": details}) == run_id
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "t · m · evaluate"
    assert run.info.end_time - run.info.start_time >= 300  # ms: from the start of the work
    assert run.data.metrics == {"primary_score": 0.5, "macro_f1__higher_better": 0.5}
    (ds,) = run.inputs.dataset_inputs
    assert ds.dataset.name == "t/pre" and ds.tags[0].value == "evaluation"
    assert [a.path for a in client.list_artifacts(run_id, "details")] == [
        "details/t.table.json"]
    exp = client.get_experiment_by_name(tr.experiment)
    assert exp.tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND == "custom_model_development"


def test_a_run_that_raised_is_failed_with_its_reason_once(tr, tmp_path):
    client = MlflowClient(tracking_uri=tr.uri)
    run_id = begin_run(tr, run_name="t · m · evaluate", tags={})
    fail_run(tr, run_id, "endpoint refused the key")
    fail_run(tr, run_id, "a later, outer reason")  # already ended: kept as it was
    run = client.get_run(run_id)
    assert run.info.status == "FAILED" and run.info.end_time >= run.info.start_time
    assert run.data.tags["hhx.failure_reason"] == "endpoint refused the key"
    assert run.data.tags["hhx.status"] == "failed"


def test_build_and_leaderboard_runs_have_experiments_of_their_own(tr, tmp_path):
    hhx = OmegaConf.create({"experiment": "hhx"})
    assert experiment_for(hhx, "evaluate") == "hhx"
    assert experiment_for(hhx, "build") == "hhx-builds"
    assert experiment_for(hhx, "leaderboard") == "hhx-leaderboard"
    assert experiment_for(hhx, "sweep") == "hhx-sweeps"
    log_run(tr, run_name="cps · build", params={}, tags={"hhx.stage": "build"}, metrics={},
            artifact_dir=None, experiment=experiment_for(tr, "build"))
    client = MlflowClient(tracking_uri=tr.uri)
    builds = client.get_experiment_by_name(f"{tr.experiment}-builds")
    assert builds.tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND
    assert len(client.search_runs([builds.experiment_id])) == 1
    assert client.get_experiment_by_name(tr.experiment) is None  # no evaluate run was logged


def test_the_evaluate_experiment_stores_hhx_runs_view_and_others_do_not(tr):
    """MLflow 3.17's UI shows no metric column unless the address names a shared view; the
    evaluate experiment holds hhx's (hhx/tracking/ui.py), the other experiments none."""
    import json

    from hhx.tracking.ui import VIEW_TAG, experiment_url, run_url

    run_id = begin_run(tr, run_name="t · m · evaluate", tags={"hhx.stage": "evaluate"})
    log_run(tr, run_name="b", params={}, tags={}, metrics={}, artifact_dir=None,
            experiment=experiment_for(tr, "sweep"))
    client = MlflowClient(tracking_uri=tr.uri)
    exp = client.get_experiment_by_name(tr.experiment)
    view = json.loads(exp.tags[VIEW_TAG])
    assert view["searchFilter"] == "tags.`hhx.stage` = 'evaluate'"
    assert view["selectedColumns"][:4] == ["tags.`hhx.task`", "tags.`hhx.model`",
                                           "tags.`hhx.metric`", "metrics.`primary_score`"]
    sweeps = client.get_experiment_by_name(f"{tr.experiment}-sweeps")
    assert VIEW_TAG not in sweeps.tags and sweeps.tags[EXPERIMENT_KIND_TAG] == EXPERIMENT_KIND
    assert experiment_url(tr.uri, exp.experiment_id).endswith(
        f"/#/experiments/{exp.experiment_id}/runs?viewStateShareKey=hhx"
        "&workflowType=machine_learning")
    assert run_url(tr.uri, exp.experiment_id, run_id).startswith("http://127.0.0.1:5000/#/")
    client.set_experiment_tag(exp.experiment_id, VIEW_TAG, "{}")  # an older hhx's view
    begin_run(tr, run_name="again", tags={})
    assert client.get_experiment(exp.experiment_id).tags[VIEW_TAG] == exp.tags[VIEW_TAG]


def test_directed_names_say_metric_and_direction():
    assert directed_name("mean_relmae", "lower_is_better") == "relmae__lower_better"
    assert directed_name("mean_total_variation", "lower_is_better") == \
        "total_variation__lower_better"


def test_a_run_whose_process_died_is_ended_killed_at_the_next_start_and_no_other(tr):
    """A process killed outright (SIGKILL) ends nothing; the next hhx start on this machine ends
    its run KILLED with the reason. Runs of live processes, of a process whose PID now names
    another one, of other hosts and of other PID namespaces, and untagged runs: as they were."""
    import signal
    import subprocess

    from hhx.tracking.mlflow_run import ensure_experiment
    from hhx.tracking.orphans import HOST_TAG, PROCESS_TAG, process_tags

    client = MlflowClient(tracking_uri=tr.uri)
    live = begin_run(tr, run_name="live", tags={})  # this process
    exp_id = client.get_run(live).info.experiment_id
    victim = subprocess.Popen(["sleep", "60"])
    survivor = subprocess.Popen(["sleep", "60"])
    try:
        def run(**tags: str) -> str:
            return client.create_run(exp_id, tags=tags).info.run_id

        dead = run(**process_tags(victim.pid))
        recycled = {**process_tags(survivor.pid)}
        boot, ns, ticks = recycled[PROCESS_TAG].split("/")
        recycled = run(**{**recycled, PROCESS_TAG: f"{boot}/{ns}/{int(ticks) - 1}"})
        alive = run(**process_tags(survivor.pid))
        elsewhere = run(**{**process_tags(victim.pid), HOST_TAG: "another-machine"})
        other_ns = run(**{**process_tags(victim.pid),
                          PROCESS_TAG: f"{boot}/pid:[1]/{ticks}"})
        untagged = run()
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        ensure_experiment(tr.uri, tr.experiment)
    finally:
        survivor.kill()
        survivor.wait()
    status = {rid: client.get_run(rid).info.status for rid in
              (dead, recycled, alive, elsewhere, other_ns, untagged, live)}
    assert status == {dead: "KILLED", recycled: "KILLED", alive: "RUNNING",
                      elsewhere: "RUNNING", other_ns: "RUNNING", untagged: "RUNNING",
                      live: "RUNNING"}
    tags = client.get_run(dead).data.tags
    assert tags["hhx.status"] == "killed"
    assert f"pid {victim.pid}" in tags["hhx.failure_reason"]
    assert "run the same command again" in tags["hhx.failure_reason"]
    assert client.get_run(live).data.tags["hhx.pid"] == str(os.getpid())


def test_the_printed_mlflow_hint_is_runnable_as_printed():
    """The hint names the venv's own `mlflow` (not on PATH unless the venv is active) and serves
    on the host and port its printed addresses use."""
    import shlex
    from pathlib import Path as _Path
    from urllib.parse import urlsplit

    from hhx.tracking.ui import browse_hint

    hint = browse_hint("sqlite:////tmp/hhx-hint.db", "3", "r1")
    command, _, pages = hint.partition(", then open ")
    words = shlex.split(command)
    assert words[0] == "LITELLM_LOCAL_MODEL_COST_MAP=True"
    assert _Path(words[1]).is_file() and words[2] == "ui"
    served = f"http://{words[words.index('--host') + 1]}:{words[words.index('--port') + 1]}"
    for url in pages.replace("(all runs: ", " ").rstrip(")").split():
        parts = urlsplit(url)
        assert f"{parts.scheme}://{parts.netloc}" == served
