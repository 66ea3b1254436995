"""Sweeps (hhx/sweeps/, hhx/tracking/store.py, lookup.py): presets and launcher configs compose,
each model asks for its own resources, a cell's identity ignores what does not change a result,
a fresh SQLite store loses no run under parallel writers, finished cells are found, the summary
counts what happened. Fast: in-process, tiny inputs; the real multiruns are in test_sweep_run.py.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from hhx.catalog import Resources
from hhx.errors import ConfigError
from hhx.predictors.base import register_schemas
from hhx.sweeps.callback import expected_cells
from hhx.sweeps.grid import register_resolvers, select_tasks
from hhx.sweeps.identity import cell_key, config_hash
from hhx.sweeps.resources import job_resources
from hhx.sweeps.summary import counts, format_summary, summary_frame, write_summary
from hhx.tasks.registry import task_names
from hhx.tracking.lookup import CELL_TAG, finished_cells
from hhx.tracking.store import prepare_store

CONF = Path(__file__).resolve().parents[2] / "conf"
PAPER_MODELS = 12

register_schemas()
register_resolvers()


def composed(*overrides: str, hydra: bool = False):
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        return compose(config_name="config", overrides=list(overrides), return_hydra_config=hydra)


def test_task_filters_select_from_the_registry():
    assert select_tasks("all") == task_names()
    policy = select_tasks("policy")
    assert policy and set(policy) | set(select_tasks("baseline")) == set(task_names())
    assert select_tasks("all", "cps", "1") == [next(t for t in task_names() if "_cps_" in t)]
    with pytest.raises(ConfigError, match="unknown filter 'bogus'"):
        select_tasks("bogus")


def test_paper_presets_span_every_task_and_the_model_suite():
    cfg = composed("experiment=paper_main", hydra=True)
    params = cfg.hydra.sweeper.params
    assert params.task.split(",") == task_names()
    assert len(params["+experiment/paper_model"].split(",")) == PAPER_MODELS
    assert expected_cells(cfg) == len(task_names()) * PAPER_MODELS
    policy = composed("experiment=paper_policy", hydra=True).hydra.sweeper.params
    assert policy.task.split(",") == select_tasks("policy")
    smoke = composed("experiment=smoke", hydra=True)
    assert smoke.hydra.sweeper.params.model == "no_change,xgboost"
    assert smoke.hydra.sweeper.params.task.split(",") == select_tasks("buildable")[:2]
    assert expected_cells(smoke) == 4
    assert smoke.model.xgboost.n_estimators == 50


def test_paper_model_cell_carries_its_decoding_and_aggregation():
    cfg = composed("+experiment/paper_model=qwen36_27b", "task=labor_cps_jobfind")
    assert cfg.model.name == "qwen36_27b" and cfg.model.backend.value == "vllm"
    assert cfg.aggregation.k == 1
    assert cfg.decoding.temperature == pytest.approx(0.7)


def test_slurm_preset_resources_come_from_the_model():
    gpu = composed("hydra/launcher=submitit_slurm", "model=qwen35_4b", hydra=True)
    launcher = gpu.hydra.launcher
    assert (launcher.gpus_per_node, launcher.cpus_per_task, launcher.mem_gb) == (1, 8, 64)
    assert launcher._target_.endswith("HhxSlurmLauncher")
    cpu = composed("hydra/launcher=submitit_slurm", "model=xgboost", "model.xgboost.threads=6",
                   "model.resources.partition=cpu", hydra=True).hydra.launcher
    assert (cpu.gpus_per_node, cpu.cpus_per_task, cpu.partition) == (0, 6, "cpu")


def test_each_job_gets_its_own_model_resources():
    assert job_resources(composed("model=qwen35_4b").model).gpus == 1
    assert job_resources(composed("model=gpt_5").model) == Resources(0, 2, 4, 1440)
    over = composed("model=qwen35_4b", "model.resources.gpus=2", "model.resources.time_min=60")
    assert (job_resources(over.model).gpus, job_resources(over.model).time_min) == (2, 60)


def test_submitit_parameters_per_group():
    from hydra_plugins.hhx_launchers.submitit_launchers import submitit_params

    base = {"submitit_folder": "f", "timeout_min": 1, "gpus_per_node": 0, "account": "a",
            "partition": "default", "max_num_timeout": 0}
    out = submitit_params(base, "slurm", Resources(1, 8, 64, 720, "gpu"))
    assert out["gpus_per_node"] == 1 and out["timeout_min"] == 720 and out["mem_gb"] == 64
    assert out["slurm_partition"] == "gpu" and out["slurm_account"] == "a"
    assert "submitit_folder" not in out and "slurm_max_num_timeout" not in out


def test_config_hash_ignores_where_results_go_and_secrets():
    base = composed("model=xgboost")
    same = composed("model=xgboost", "tracking.uri=sqlite:///elsewhere.db",
                    "model.resources.gpus=3", "+force=true", "+dry_run=true")
    other = composed("model=xgboost", "model.xgboost.n_estimators=7")
    assert config_hash(base) == config_hash(same)
    assert config_hash(base) != config_hash(other)
    assert cell_key("t", "m", "a", "b") != cell_key("t", "m", "a", "c")


def _log_one(uri: str, n: int) -> None:
    prepare_store(uri, "race")
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("race")
    with mlflow.start_run(run_name=f"job{n}"):
        mlflow.log_metric("n", n)


@pytest.mark.heavy  # three MLflow schema migrations in a row (~10 s each on a busy 2-core box)
def test_fresh_sqlite_store_loses_no_run_under_parallel_jobs(tmp_path):
    uri = f"sqlite:///{tmp_path}/fresh.db"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_log_one, args=(uri, n)) for n in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 3
    found = mlflow.MlflowClient(uri).search_runs(
        [mlflow.MlflowClient(uri).get_experiment_by_name("race").experiment_id])
    assert sorted(r.data.metrics["n"] for r in found) == [0, 1, 2]


@pytest.mark.slow  # one MLflow schema migration
def test_finished_cells_finds_only_finished_runs(tmp_path):
    uri = f"sqlite:///{tmp_path}/m.db"
    exp = prepare_store(uri, "e")
    client = mlflow.MlflowClient(uri)
    for key, status in (("k1", "FINISHED"), ("k2", "FAILED"), ("k1", "FAILED")):
        run = client.create_run(exp, tags={CELL_TAG: key})
        client.log_metric(run.info.run_id, "primary_score", 0.5)
        client.set_terminated(run.info.run_id, status)
    found = finished_cells(uri, "e", ["k1", "k2", "k3"])
    assert set(found) == {"k1"} and found["k1"].metrics["primary_score"] == 0.5
    assert finished_cells(uri, "absent", ["k1"]) == {}


def _record(folder: Path, **fields) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sweep_cell.json").write_text(json.dumps(fields))


def test_summary_counts_run_skipped_failed_and_missing_jobs(tmp_path):
    (tmp_path / "sweep.json").write_text(json.dumps({"expected_jobs": 4}))
    _record(tmp_path / "0_a_x", status="run", job=0, task="a", model="x", score=0.5,
            metric="mean_macro_f1", direction="higher_is_better")
    _record(tmp_path / "1_a_y", status="skipped", job=1, task="a", model="y", score=0.25)
    _record(tmp_path / "2_b_x", status="started", job=2, task="b", model="x")  # killed
    frame = summary_frame(tmp_path)
    assert counts(frame) == {"run": 1, "skipped": 1, "failed": 2, "dry_run": 0}
    text = format_summary(frame)
    assert text.splitlines()[0] == "sweep: 1 run, 1 skipped, 2 failed"
    assert "failed: b x x (job 2): the job ended before reporting a result" in text


def test_progress_line_counts_finished_cells_of_this_sweep_and_estimates_the_rest(tmp_path):
    from hhx.sweeps.progress import progress_line

    assert progress_line(tmp_path) is None  # not an hhx sweep folder
    (tmp_path / "sweep.json").write_text(json.dumps(
        {"expected_jobs": 8, "sweep_id": "s1", "started_at": 1000.0}))
    _record(tmp_path / "0_a_x", status="run", sweep_id="s1")
    _record(tmp_path / "1_a_y", status="failed", sweep_id="s1")
    _record(tmp_path / "2_b_x", status="skipped", sweep_id="s1")
    _record(tmp_path / "3_b_y", status="started", sweep_id="s1")  # still running
    _record(tmp_path / "9_old", status="run", sweep_id="s0")  # an earlier sweep's folder
    assert progress_line(tmp_path, now=1300.0) == (
        "sweep progress: 3 of 8 cells done (1 failed, 1 skipped) · 5:00 elapsed · about 8:20 left")
    for job in range(4, 8):
        _record(tmp_path / f"{job}_c", status="run", sweep_id="s1")
    _record(tmp_path / "3_b_y", status="run", sweep_id="s1")
    assert progress_line(tmp_path, now=1600.0) == (
        "sweep progress: 8 of 8 cells done (1 failed, 1 skipped) · 10:00 elapsed")


def test_dry_run_summary_totals_requests_and_cost(tmp_path):
    _record(tmp_path / "0", status="dry_run", job=0, task="a", model="gpt_5", prompts=10,
            draws=10, requests=10, prompt_tokens=5000, cost_usd=0.5, cost_usd_max=2.0, done=False)
    _record(tmp_path / "1", status="dry_run", job=1, task="a", model="no_change", prompts=10,
            draws=0, requests=0, prompt_tokens=0, cost_usd=0.0, cost_usd_max=0.0, done=True)
    head = format_summary(summary_frame(tmp_path)).splitlines()[0]
    assert head == ("sweep dry run: 2 cells, 1 already done; would send 10 requests, ~$0.50 "
                    "(at most $2.00); nothing was sent")


def test_sweep_settings_are_typed():
    cfg = composed()
    assert OmegaConf.to_container(cfg.sweep) == {"resume": True, "force": False,
                                                 "dry_run": False}


def test_dry_run_estimate_counts_draws_tokens_and_cost_from_the_model_prices():
    import pandas as pd

    from hhx.sweeps.dryrun import estimate

    examples = pd.DataFrame({"id": ["1", "2"], "time": ["t", "t"], "system": ["s" * 84] * 2,
                             "user": ["u" * 368] * 2})
    cfg = composed("model=qwen35_4b", "aggregation=k16", "decoding.max_tokens=100",
                   "model.input_cost_per_token=1e-6", "model.output_cost_per_token=2e-6")
    plan = estimate(cfg, examples)
    # vLLM draws K with `n`: one request per prompt, each prompt (84+368+2*16 chars) sent once
    assert (plan["prompts"], plan["draws"], plan["requests"]) == (2, 32, 2)
    assert plan["prompt_tokens"] == 242 and plan["completion_tokens_max"] == 3200
    assert plan["cost_usd"] == pytest.approx(242e-6 + 64 * 32 * 2e-6)
    assert plan["cost_usd_max"] == pytest.approx(484e-6 + 3200 * 2e-6)
    assert estimate(composed("model=xgboost"), examples)["requests"] == 0


def test_summary_ignores_an_earlier_sweep_in_the_same_folder(tmp_path):
    (tmp_path / "sweep.json").write_text(json.dumps({"expected_jobs": 1, "sweep_id": "new"}))
    _record(tmp_path / "0_a_x", status="run", job=0, task="a", model="x", sweep_id="new")
    _record(tmp_path / "1_a_y", status="skipped", job=1, task="a", model="y", sweep_id="old")
    assert counts(summary_frame(tmp_path))["skipped"] == 0


def test_summary_table_names_metric_direction_and_what_tells_cells_apart(tmp_path):
    (tmp_path / "sweep.json").write_text(json.dumps({"expected_jobs": 3, "sweep_id": "s"}))
    common = {"sweep_id": "s", "task": "a", "metric": "mean_relmae",
              "direction": "lower_is_better"}
    _record(tmp_path / "0", status="run", job=0, model="x", score=0.125, n=200, valid_rate=1.0,
            overrides=["task=a", "model=x", "data.max_examples=200"], **common)
    _record(tmp_path / "1", status="failed", job=1, model="x", error="DataError: no file",
            overrides=["task=a", "model=x", "data.max_examples=10"], **common)
    _record(tmp_path / "2", status="run", job=2, model="y", score=0.5, n=200, valid_rate=0.5,
            overrides=["task=a", "model=y", "data.max_examples=200"], **common)
    frame = summary_frame(tmp_path)
    # two cells share task x model: the override that differs is shown; a unique one shows none
    assert list(frame["settings"]) == ["data.max_examples=200", "data.max_examples=10", ""]
    text = format_summary(frame).splitlines()
    assert text[0] == "sweep: 2 run, 0 skipped, 1 failed"
    assert text[1].split() == ["job", "task", "model", "settings", "metric", "direction",
                               "score", "n", "valid_rate", "status"]
    assert text[2].split() == ["0", "a", "x", "data.max_examples=200", "mean_relmae", "lower",
                               "0.1250", "200", "1.0000", "run"]
    # a failed cell still says which metric it would have had; its score is missing, not 0
    assert text[3].split() == ["1", "a", "x", "data.max_examples=10", "mean_relmae", "lower",
                               "—", "—", "—", "failed"]
    assert text[-1] == "failed: a x x (job 1): DataError: no file"
    write_summary(tmp_path, frame, format_summary(frame))
    md = (tmp_path / "sweep_summary.md").read_text().splitlines()
    assert md[0] == "**sweep: 2 run, 0 skipped, 1 failed**"
    assert md[2] == ("| job | task | model | settings | metric | direction | score | n | "
                     "valid_rate | status |")
    assert md[5] == "| 1 | a | x | data.max_examples=10 | mean_relmae | lower | — | — | — | failed |"
    assert md[-1] == "- failed: a x x (job 1): DataError: no file"
    assert len(pd.read_csv(tmp_path / "sweep_summary.csv")) == 3


@pytest.mark.parametrize(("overrides", "refused"), [
    (["experiment=smoke"], True),
    (["experiment=smoke", "task=labor_cps_jobfind"], True),  # model is still swept
    (["experiment=smoke", "task=labor_cps_jobfind", "model=no_change"], False),  # one cell
    (["task=labor_cps_jobfind"], False),  # no preset: an ordinary run
])
def test_a_sweep_preset_without_multirun_says_so(overrides, refused):
    from hhx.sweeps.callback import single_run_of_a_sweep

    why = single_run_of_a_sweep(composed(*overrides, hydra=True))
    assert (why is not None) == refused
    if refused:
        assert why.startswith("experiment=smoke is a sweep of ") and "add --multirun" in why


def test_a_stage_without_a_sweep_record_counts_as_run_when_its_job_returns(tmp_path, capsys):
    """stage=build task=a,b is a sweep too: a job that returned is `run`, not `killed`."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import JobReturn, JobStatus
    from omegaconf import open_dict

    from hhx.sweeps import cell
    from hhx.sweeps.callback import SweepCallback

    cfg = composed("stage=build", hydra=True)
    with open_dict(cfg):
        cfg.hydra.mode = "MULTIRUN"
        cfg.hydra.job.num = 0
        cfg.hydra.runtime.output_dir = str(tmp_path / "0_a")
        cfg.hydra.sweep.dir = str(tmp_path)
    saved = HydraConfig.instance().cfg
    HydraConfig.instance().set_config(cfg)
    try:
        cell.record_start(cfg)
        assert cell.read_record()["status"] == "started"
        (tmp_path / "sweep.json").write_text(json.dumps({"expected_jobs": 2}))
        SweepCallback().on_job_end(cfg, JobReturn(status=JobStatus.COMPLETED))
        assert cell.read_record()["status"] == "run"
        assert "sweep progress: 1 of 2 cells done" in capsys.readouterr().out  # how far the sweep got
    finally:
        HydraConfig.instance().cfg = saved
    assert counts(summary_frame(tmp_path))["run"] == 1


def test_without_the_ray_extra_no_plugin_warning_and_the_ray_launcher_says_what_to_install(
        tmp_path):
    """Hydra imports every plugin module at every start: on a plain setup (no `hhx[ray]`) hhx's
    Ray launcher module must import cleanly, and choosing it names what to install."""
    import subprocess
    import sys

    script = tmp_path / "no_ray.py"
    script.write_text(
        "import sys\n"
        "sys.modules['hydra_plugins.hydra_ray_launcher'] = None  # as if not installed\n"
        "sys.modules['hydra_plugins.hydra_ray_launcher.ray_launcher'] = None\n"
        "from hhx.app import main\n"
        "sys.argv = ['hhx', *sys.argv[1:]]\n"
        "main()\n")
    proc = subprocess.run(
        [sys.executable, str(script), "--multirun", "hydra/launcher=ray", "stage=describe",
         "task=labor_cps_jobfind", "tracking=none", f"hydra.sweep.dir={tmp_path}/sw"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-2000:]  # a setting's error, like any other
    assert "Error importing" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.count("hhx: error:") == 1
    assert ("hhx: error: hydra/launcher=ray needs Ray and Hydra's Ray launcher: "
            "pip install 'hhx[ray]'") in proc.stderr
