"""`--multirun ... +dry_run=true` prices the grid before any job starts: nothing is built (no
demo data), nothing is written (no sweep or run folder, no MLflow store), and the table says
where each cell's sizes came from (the release catalog, or the data's own files when there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hhx.bench.catalog import catalog

REPO = Path(__file__).resolve().parents[2]


def dry(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MLFLOW_TRACKING_URI", None)  # the store would go under paths.root
    return subprocess.run([sys.executable, "-m", "hhx", "--multirun", *args, "+dry_run=true",
                           f"paths.root={tmp_path}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def test_a_dry_run_builds_nothing_writes_nothing_and_prices_every_cell(tmp_path):
    proc = dry(tmp_path, "task=cons_sce_growth,labor_cps_jobfind", "model=gpt_5,no_change")
    assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.iterdir()) == []  # no data/, outputs/, multirun/, mlflow.db
    lines = proc.stdout.splitlines()[1:]  # after "dry run: pricing 4 cells ..."
    assert lines[0].startswith("sweep dry run: 4 cells; would send 400 requests")
    rows = [line.split() for line in lines[2:6]]
    assert {(r[1], r[2]) for r in rows} == {(t, m) for t in ("cons_sce_growth", "labor_cps_jobfind")
                                            for m in ("gpt_5", "no_change")}
    assert all(r[3] == "200" and r[-2] == "catalog" for r in rows)  # the release's 200 rows
    assert "nothing was built, written or sent" in lines[-1]


def test_a_dry_run_reads_the_sizes_of_an_eval_sample_on_disk(tmp_path):
    sample = tmp_path / "sample"
    (sample / "pre_cutoff").mkdir(parents=True)
    record = {"id": "1", "time": "2020-01-01", "release_date": "2020-02-01", "system": "s" * 84,
              "user": "u" * 368, "assistant": "[1.0]", "naive_baseline": "[0.0]"}
    (sample / "pre_cutoff" / "cons_sce_growth.jsonl").write_text(
        "".join(json.dumps({**record, "id": str(i)}) + "\n" for i in range(7)))
    proc = dry(tmp_path, "task=cons_sce_growth", "model=gpt_5,qwen35_4b", "data=official",
               f"data.root={sample}", "data.layout=eval_sample", "data.split=pre_cutoff",
               "data.max_examples=200")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample"]
    rows = [line.split() for line in proc.stdout.splitlines()[3:5]]
    # 7 prompts of 84 + 368 characters and two messages' overhead, ~4 characters a token
    assert all(r[3] == "7" and r[6] == str(int(7 * (84 + 368 + 32) / 4)) for r in rows), rows
    assert all(r[-2] == "files" for r in rows)  # "data files"
    assert catalog()["cons_sce_growth"].test_pre == 200  # the catalog would have said 200


def test_a_dry_run_marks_a_cell_finished_in_mlflow_with_the_same_settings(tmp_path):
    import mlflow
    from hydra import compose, initialize_config_dir

    from hhx.paths import register_resolvers
    from hhx.predictors.base import register_schemas
    from hhx.sweeps.grid import register_resolvers as register_sweep_resolvers
    from hhx.sweeps.order import settings_hash
    from hhx.tracking.store import prepare_store

    register_schemas()
    register_resolvers()
    register_sweep_resolvers()
    with initialize_config_dir(str(REPO / "conf"), version_base="1.3"):
        job = compose("config", overrides=["task=cons_sce_growth", "model=no_change",
                                           f"paths.root={tmp_path}"], return_hydra_config=True)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"  # where paths.root puts the store
    experiment = prepare_store(uri, "hhx")
    client = mlflow.tracking.MlflowClient(uri)
    run = client.create_run(experiment, tags={  # what an evaluate run of that cell carries
        "hhx.stage": "evaluate", "hhx.task": "cons_sce_growth", "hhx.model": "no_change",
        "hhx.config_hash": settings_hash(job)})
    client.set_terminated(run.info.run_id, "FINISHED")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    proc = dry(tmp_path, "task=cons_sce_growth,house_sce_move", "model=no_change")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()[1:]
    assert lines[0].startswith("sweep dry run: 2 cells, 1 already done")
    done = {line.split()[1]: ("True" in line.split(), "False" in line.split())
            for line in lines[2:4]}
    assert done == {"cons_sce_growth": (True, False), "house_sce_move": (False, True)}
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written


def test_a_single_run_dry_run_prices_its_cell_and_leaves_nothing(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.run([sys.executable, "-m", "hhx", "task=labor_cps_jobfind", "model=gpt_5",
                           "+dry_run=true", f"paths.root={tmp_path}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("dry run: labor_cps_jobfind x gpt_5: 200 prompts, 200 requests")
    assert "nothing was built or sent" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # no run folder, no demo data, no MLflow store
