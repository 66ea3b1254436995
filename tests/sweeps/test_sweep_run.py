"""Real sweeps through `python -m hhx --multirun`, as a user runs them (all heavy: `pytest -m heavy`):
joblib with 2 workers on a brand-new SQLite store, a sweep killed half-way that resumes, the
submitit local executor, a local Ray cluster, and a PostgreSQL-backed MLflow server on 127.0.0.1.
One tiny demo (400 households) is built once and shared; each test has its own MLflow store.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import mlflow
import pandas as pd
import pytest

pytestmark = pytest.mark.heavy
TASK = "labor_cps_jobfind"
SMALL = ["survey.demo.n_households=400", "model.xgboost.n_estimators=20", f"task={TASK}"]


def hhx_cmd(workdir: Path, uri: str, *args: str) -> list[str]:
    flags = [a for a in args if a.startswith("--")]
    overrides = [a for a in args if not a.startswith("--")]
    return [sys.executable, "-m", "hhx", *flags, f"tracking.uri={uri}", *SMALL, *overrides]


def hhx(workdir: Path, uri: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    proc = subprocess.run(hhx_cmd(workdir, uri, *args), cwd=workdir, env=env, text=True,
                          capture_output=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"hhx {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def summary_line(proc: subprocess.CompletedProcess) -> str:
    return next(ln for ln in proc.stdout.splitlines() if ln.startswith("sweep: "))


def cell_runs(uri: str) -> list:
    client = mlflow.MlflowClient(uri)
    exp = client.get_experiment_by_name("hhx")
    runs = client.search_runs([exp.experiment_id], filter_string="tags.`hhx.stage` = 'evaluate'")
    return [r for r in runs if "hhx.cell_key" in r.data.tags]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """The demo built once (a single run, so sweep jobs never race to build it)."""
    work = tmp_path_factory.mktemp("sweep")
    hhx(work, f"sqlite:///{work}/unused.db", "tracking.enabled=false", "stage=build")
    return work


def test_joblib_two_workers_on_a_fresh_sqlite_store_then_resume_and_force(workdir):
    uri = f"sqlite:///{workdir}/joblib.db"
    # more XGBoost threads than any machine here has: capped by the usable cores
    args = ["--multirun", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
            "model=no_change,xgboost", "model.xgboost.threads=256",
            f"hydra.sweep.dir={workdir}/sw_joblib"]
    first = hhx(workdir, uri, *args)
    assert summary_line(first) == "sweep: 2 run, 0 skipped, 0 failed"
    # the longer cell starts first (hhx's sweeper): job 0 is XGBoost, not the grid's first cell
    assert [p.name for p in (workdir / "sw_joblib").glob("0_*")] == [f"0_evaluate_{TASK}_xgboost"]
    logs = "".join(p.read_text() for p in (workdir / "sw_joblib").rglob("app.log"))
    capped = re.search(r"XGBoost: (\d+) thread\(s\), not model.xgboost.threads=256: "
                       r"this job may use (\d+) core", logs)
    assert capped and capped[1] == capped[2], logs[-2000:]  # the usable cores, not 256
    assert logs.count("rows chosen by:") == 2  # each job's app.log holds its result table
    runs = cell_runs(uri)
    assert sorted(r.data.tags["hhx.model"] for r in runs) == ["no_change", "xgboost"]
    assert {r.info.status for r in runs} == {"FINISHED"}
    again = hhx(workdir, uri, *args)
    assert summary_line(again) == "sweep: 0 run, 2 skipped, 0 failed"
    assert len(cell_runs(uri)) == 2  # nothing paid twice
    forced = hhx(workdir, uri, *args, "+force=true", "model=no_change")
    assert summary_line(forced) == "sweep: 1 run, 0 skipped, 0 failed"
    assert len(cell_runs(uri)) == 3


def test_failing_cells_do_not_stop_the_sweep_and_are_logged_failed_once(workdir, monkeypatch):
    """Cells fail at once (data=official without data.root) or in the predictor (an API model
    without its key); the other jobs still run; each failure is one FAILED MLflow run with its
    reason (the stage's own, or the sweep's); the summary is printed, saved and logged; exit 1."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    uri = f"sqlite:///{workdir}/failing.db"
    sweep = workdir / "sw_failing"
    proc = hhx(workdir, uri, "--multirun", "model=gpt_5_nano,no_change", "data=official,demo",
               f"hydra.sweep.dir={sweep}", check=False)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert summary_line(proc) == "sweep: 1 run, 0 skipped, 3 failed"
    assert "hhx: error: 3 sweep cell(s) failed" in proc.stderr
    assert "Traceback" not in proc.stderr
    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert list(table.columns[:4]) == ["job", "task", "model", "settings"]
    assert list(table["status"]) == ["failed", "failed", "failed", "run"]
    assert list(table["metric"]) == ["mean_macro_f1"] * 4  # a categorical task: macro F1
    assert "data.root" in table["error"][0] and "OPENAI_API_KEY" in table["error"][1]
    md = (sweep / "sweep_summary.md").read_text()
    assert md.startswith("**sweep: 1 run, 0 skipped, 3 failed**")
    client = mlflow.MlflowClient(uri)
    exp = client.get_experiment_by_name("hhx")
    runs = client.search_runs([exp.experiment_id], filter_string="tags.`hhx.stage` = 'evaluate'")
    assert sorted(r.info.status for r in runs) == ["FAILED"] * 3 + ["FINISHED"]  # none twice
    by_id = {r.info.run_id: r for r in runs}
    for pos, why in ((0, "data.root"), (1, "OPENAI_API_KEY"), (2, "data.root")):
        failed = by_id[table["run_id"][pos]]
        assert failed.info.status == "FAILED" and why in failed.data.tags["hhx.failure_reason"]
        assert failed.data.params  # the config is on file
    sweeps = client.get_experiment_by_name("hhx-sweeps")  # apart from the evaluate runs
    assert not client.search_runs([exp.experiment_id], "tags.`hhx.stage` = 'sweep'")
    [summary] = client.search_runs([sweeps.experiment_id], filter_string="tags.`hhx.stage` = 'sweep'")
    assert summary.info.status == "FAILED" and summary.data.metrics["cells_failed"] == 3
    assert "| failed |" in summary.data.tags["mlflow.note.content"]
    logged = {a.path for a in client.list_artifacts(summary.info.run_id, "sweep")}
    assert "sweep/sweep_summary_table.json" in logged and "sweep/sweep_summary.md" in logged


def test_sweep_killed_half_way_resumes_with_the_finished_cells_skipped(workdir):
    uri = f"sqlite:///{workdir}/killed.db"
    sweep = workdir / "sw_killed"
    args = ["--multirun", "model=no_change,xgboost", "hydra.sweeper.order=given",
            f"hydra.sweep.dir={sweep}"]
    proc = subprocess.Popen(hhx_cmd(workdir, uri, *args), cwd=workdir, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record = sweep / f"0_evaluate_{TASK}_no_change" / "sweep_cell.json"
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        if record.is_file() and json.loads(record.read_text()).get("status") == "run":
            break
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)  # the basic launcher: job 1 (xgboost) is under way
    proc.wait()
    assert json.loads(record.read_text())["status"] == "run"
    resumed = hhx(workdir, uri, *args)
    assert summary_line(resumed) == "sweep: 1 run, 1 skipped, 0 failed"
    assert sorted(r.data.tags["hhx.model"] for r in cell_runs(uri)) == ["no_change", "xgboost"]


def test_submitit_local_executor_runs_a_sweep(workdir):
    uri = f"sqlite:///{workdir}/submitit.db"
    proc = hhx(workdir, uri, "--multirun", "hydra/launcher=submitit_local",
               "model=no_change,xgboost", f"hydra.sweep.dir={workdir}/sw_submitit")
    assert summary_line(proc) == "sweep: 2 run, 0 skipped, 0 failed"
    assert len(cell_runs(uri)) == 2
    # submitted through submitit's local executor: one submission per job, results pickled
    assert len(list((workdir / "sw_submitit" / ".submitit").glob("*/*_0_result.pkl"))) == 2


def test_ray_launcher_on_a_local_cluster(workdir):
    pytest.importorskip("ray")
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    uri = f"sqlite:///{workdir}/ray.db"
    proc = hhx(workdir, uri, "--multirun", "hydra/launcher=ray", "model=no_change,xgboost",
               "+hydra.launcher.ray.init.num_cpus=2", f"hydra.sweep.dir={workdir}/sw_ray")
    assert summary_line(proc) == "sweep: 2 run, 0 skipped, 0 failed"
    assert len(cell_runs(uri)) == 2


def test_ray_start_that_times_out_is_retried_once_then_one_line(monkeypatch):
    pytest.importorskip("ray")
    import ray
    from hydra_plugins.hydra_ray_launcher import _launcher_util
    from omegaconf import OmegaConf

    from hydra_plugins.hhx_launchers import ray_launcher

    calls = []

    def start_ray(cfg):  # what ray.init raises when the raylet gave up on its agents
        calls.append(cfg)
        raise Exception("The current node timed out during startup. This could happen ...")

    monkeypatch.setattr(_launcher_util, "start_ray", start_ray)
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    monkeypatch.setattr(ray_launcher, "agent_bytecode_missing", lambda: False)
    cfg = OmegaConf.create({"address": None, "_temp_dir": "/tmp/rt"})
    with pytest.raises(ray_launcher.RayStartError) as err:
        ray_launcher.start_local_ray(cfg)
    assert calls == [cfg, "shutdown", cfg, "shutdown"]
    assert "\n" not in str(err.value) and "/tmp/rt/session_latest/logs/raylet.out" in str(err.value)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bin(name: str) -> str | None:
    found = shutil.which(name) or sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found if isinstance(found, str) else (found[-1] if found else None)


@pytest.fixture
def postgres():
    """A throwaway PostgreSQL server on 127.0.0.1 (Debian's package; .ci/run installs it)."""
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("PostgreSQL server binaries absent (Debian package `postgresql`)")
    data = Path(tempfile.mkdtemp(prefix="hhx-pg-"))
    run_as: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run the server as the package's user
        shutil.chown(data, "postgres", "postgres")
        run_as = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run([*run_as, initdb, "-D", str(data / "db"), "-U", "hhx", "--auth=trust"],
                   check=True, capture_output=True)
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {data}"
    subprocess.run([*run_as, pg_ctl, "-D", str(data / "db"), "-o", opts, "-l",
                    str(data / "log"), "-w", "start"], check=True, capture_output=True)
    try:
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=port, user="hhx", dbname="postgres")
        conn.autocommit = True
        conn.cursor().execute("CREATE DATABASE mlflow")
        conn.close()
        # SQLAlchemy 2.1's bare postgresql:// means psycopg 3; hhx pins psycopg2-binary
        yield f"postgresql+psycopg2://hhx@127.0.0.1:{port}/mlflow"
    finally:
        subprocess.run([*run_as, pg_ctl, "-D", str(data / "db"), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


def test_sweep_against_an_mlflow_server_on_postgresql(workdir, postgres):
    port = free_port()
    artifacts = workdir / "shared_artifacts"
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "mlflow"), "server", "--backend-store-uri", postgres,
         "--artifacts-destination", str(artifacts), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"],
        cwd=workdir, start_new_session=True, stdout=subprocess.DEVNULL,
        stderr=open(workdir / "mlflow_server.log", "w"))
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 300
        while True:
            try:
                if urllib.request.urlopen(f"{uri}/health", timeout=5).status == 200:
                    break
            except OSError:
                pass
            assert server.poll() is None and time.time() < deadline, \
                (workdir / "mlflow_server.log").read_text()[-3000:]
            time.sleep(1)
        proc = hhx(workdir, uri, "--multirun", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                   "model=no_change,xgboost", f"hydra.sweep.dir={workdir}/sw_pg")
        assert summary_line(proc) == "sweep: 2 run, 0 skipped, 0 failed"
        runs = cell_runs(uri)
        assert sorted(r.data.tags["hhx.model"] for r in runs) == ["no_change", "xgboost"]
        client = mlflow.MlflowClient(uri)
        for run in runs:
            assert run.info.status == "FINISHED" and "primary_score" in run.data.metrics
            paths = {a.path for a in client.list_artifacts(run.info.run_id, "result")}
            assert paths == {f"result/{TASK}.json"}
        assert list(artifacts.rglob(f"{TASK}.json"))  # the shared artifact root holds them
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)
