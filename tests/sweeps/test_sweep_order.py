"""A sweep starts its longest cells first (hhx/sweeps/order.py, hydra_plugins/hhx_launchers/
sweeper.py): estimates from the model and the release's table sizes, past times from MLflow when
the store has them, grid order on request. In-process; the real multirun that checks the folders'
order is in test_sweep_run.py.
"""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest
from hydra import compose, initialize_config_dir

from hhx.predictors.base import register_schemas
from hhx.sweeps.grid import register_resolvers
from hhx.sweeps.order import cell_seconds, estimated_seconds, longest_first, measured_seconds

CONF = Path(__file__).resolve().parents[2] / "conf"

register_schemas()
register_resolvers()

# (benchmark_rows, tabular_columns) as the demo grid's release holds them (2,000 households)
SIZES = {"macro_sce_uncertainty": (25673, 86), "cons_cex_categories": (4252, 122),
         "labor_cps_jobfind": (509, 43)}


@pytest.fixture
def release(tmp_path: Path) -> Path:
    lines = ["task_id,benchmark_rows,tabular_columns"]
    lines += [f"{t},{r},{c}" for t, (r, c) in SIZES.items()]
    (tmp_path / "manifest.csv").write_text("\n".join(lines) + "\n")
    return tmp_path


def cell(release: Path, task: str, model: str, *more: str):
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        return compose(config_name="config", overrides=[
            f"task={task}", f"model={model}", f"data.root={release}", *more])


def test_the_grid_s_long_cells_are_estimated_longest(release):
    cells = [cell(release, "labor_cps_jobfind", "no_change"),
             cell(release, "labor_cps_jobfind", "xgboost"),
             cell(release, "cons_cex_categories", "xgboost"),
             cell(release, "macro_sce_uncertainty", "xgboost")]
    seconds = [estimated_seconds(c) for c in cells]
    # the demo grid measured 315 s, 202 s, 4 s and under a second for these four
    assert longest_first(seconds) == [3, 2, 1, 0]
    assert 100 < seconds[3] < 1000  # in seconds on two cores, roughly
    # fewer boosting rounds, less work; an unbuilt task gets a typical table, not zero
    assert estimated_seconds(cell(release, "macro_sce_uncertainty", "xgboost",
                                  "model.xgboost.n_estimators=20")) < seconds[3] / 10
    assert estimated_seconds(cell(release, "labor_cps_ui", "xgboost")) > seconds[1]


def test_llm_cells_count_requests_over_concurrency(release):
    one = estimated_seconds(cell(release, "labor_cps_jobfind", "gpt_5_nano", "data.max_examples=100"))
    more = estimated_seconds(cell(release, "labor_cps_jobfind", "gpt_5_nano",
                                  "data.max_examples=200"))
    assert more == pytest.approx(2 * one)  # 200 prompts instead of 100
    # gpt_5_nano supports `n`: 16 draws go in one request per prompt, no longer than one draw
    assert estimated_seconds(cell(release, "labor_cps_jobfind", "gpt_5_nano",
                                  "data.max_examples=100", "aggregation=k16")) == one
    # a model without `n` sends 16 requests per prompt
    many = estimated_seconds(cell(release, "labor_cps_jobfind", "gpt_5_nano",
                                  "data.max_examples=100", "aggregation=k16",
                                  "model.supports_n=false"))
    assert many == pytest.approx(16 * one)


def test_past_finished_times_in_mlflow_win_over_the_estimate(release, tmp_path):
    uri = f"sqlite:///{tmp_path}/order.db"
    client = mlflow.MlflowClient(uri)
    exp = client.create_experiment("hhx")

    def run(task: str, model: str, seconds: float, status: str, stage: str = "evaluate") -> None:
        r = client.create_run(exp, start_time=1_000_000, tags={
            "hhx.stage": stage, "hhx.task": task, "hhx.model": model})
        client.set_terminated(r.info.run_id, status, end_time=1_000_000 + int(seconds * 1000))

    run("labor_cps_jobfind", "no_change", 900.0, "FINISHED")
    run("macro_sce_uncertainty", "xgboost", 5.0, "FAILED")  # a failed run says nothing
    run("cons_cex_categories", "xgboost", 7.0, "FINISHED", stage="build")  # nor a build
    tracking = cell(release, "labor_cps_jobfind", "no_change", f"tracking.uri={uri}").tracking
    measured = measured_seconds(tracking)
    assert measured == {("labor_cps_jobfind", "no_change"): 900.0}
    slow = cell(release, "labor_cps_jobfind", "no_change")
    long_cell = cell(release, "macro_sce_uncertainty", "xgboost")
    assert cell_seconds(slow, measured) == 900.0 > cell_seconds(long_cell, measured)
    # no store, or tracking off: estimates only
    assert measured_seconds(cell(release, "labor_cps_jobfind", "no_change",
                                 "tracking.enabled=false").tracking) == {}


def test_equal_times_keep_grid_order_and_a_bad_order_setting_is_refused(capsys):
    assert longest_first([1.0, 3.0, 1.0, 3.0]) == [1, 3, 0, 2]
    from hhx.errors import ConfigError
    from hydra_plugins.hhx_launchers.sweeper import HhxSweeper

    with pytest.raises(ConfigError, match="hydra.sweeper.order=random: choose longest_first or"):
        HhxSweeper(order="random")
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose(config_name="config", return_hydra_config=True)
    assert cfg.hydra.sweeper._target_.endswith("HhxSweeper")
    assert cfg.hydra.sweeper.order == "longest_first"
    from hhx.sweeps.callback import SweepCallback

    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        bad = compose(config_name="config", overrides=["hydra.sweeper.order=random"],
                      return_hydra_config=True)
    with pytest.raises(SystemExit) as stop:  # one line before the sweep starts
        SweepCallback().on_multirun_start(bad)
    assert stop.value.code == 2
    assert capsys.readouterr().err == ("hhx: error: hydra.sweeper.order=random: choose "
                                       "longest_first or given\n")


def test_a_past_run_with_the_same_settings_wins_over_one_with_others(release, tmp_path):
    from hhx.sweeps.identity import config_hash
    from hhx.sweeps.order import settings_hash

    uri = f"sqlite:///{tmp_path}/same.db"
    client = mlflow.MlflowClient(uri)
    exp = client.create_experiment("hhx")
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        job = compose(config_name="config", return_hydra_config=True, overrides=[
            "task=labor_cps_jobfind", "model=xgboost", f"data.root={release}"])
    # the hash the job itself logs: its config without Hydra's node
    plain = cell(release, "labor_cps_jobfind", "xgboost")
    assert settings_hash(job) == config_hash(plain) != ""
    for start, seconds, chash in ((1_000_000, 40.0, config_hash(plain)),
                                  (5_000_000, 3.0, "other")):  # the other run is the newer
        r = client.create_run(exp, start_time=start, tags={
            "hhx.stage": "evaluate", "hhx.task": "labor_cps_jobfind", "hhx.model": "xgboost",
            "hhx.config_hash": chash})
        client.set_terminated(r.info.run_id, "FINISHED", end_time=start + int(seconds * 1000))
    measured = measured_seconds(cell(release, "labor_cps_jobfind", "xgboost",
                                     f"tracking.uri={uri}").tracking)
    assert cell_seconds(job, measured) == 40.0
    assert measured[("labor_cps_jobfind", "xgboost")] == 3.0  # the latest, any settings
