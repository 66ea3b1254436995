"""MLflow logging: params are the flattened config, secrets never reach the store."""

from __future__ import annotations

from pathlib import Path

import mlflow
from omegaconf import OmegaConf

from hhx.tracking.mlflow_run import flatten_config, log_run


def test_flatten_config_nests_with_dots_and_drops_secret_keys():
    cfg = OmegaConf.create({"model": {"name": "m", "api_key": "sk-abc", "api_key_env": "OPENAI_API_KEY",
                                      "stop": ["a", "b"]}, "seed": 3})
    flat = flatten_config(cfg)
    assert flat["model.name"] == "m"
    assert flat["model.stop"] == '["a", "b"]'
    assert flat["seed"] == "3"
    assert "model.api_key" not in flat  # a key-holding setting is never logged
    assert flat["model.api_key_env"] == "OPENAI_API_KEY"  # the variable's name is fine


def test_log_run_writes_params_tags_metrics_artifacts_and_redacts(tmp_path: Path, monkeypatch):
    secret = "sk-test-DO-NOT-LOG-1234567890"
    monkeypatch.setenv("HHX_FAKE_API_KEY", secret)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracking = OmegaConf.create({"enabled": True, "uri": uri, "experiment": "t", "log_artifacts": True})
    art = tmp_path / "art"
    (art / "predictions").mkdir(parents=True)
    (art / "predictions" / "x.jsonl").write_text('{"id": "1"}\n')
    params = flatten_config(OmegaConf.create({"model": {"base": f"http://h/{secret}"}}))
    run_id = log_run(tracking, run_name="x", params=params, tags={"hhx.task": "x", "note": secret},
                     metrics={"primary_score": 0.5, "missing": None, "nan": float("nan")},
                     artifact_dir=art)
    client = mlflow.MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    assert run.data.metrics == {"primary_score": 0.5}
    assert run.data.tags["hhx.task"] == "x"
    assert secret not in str(run.data.params) and secret not in str(run.data.tags)
    assert [a.path for a in client.list_artifacts(run_id)] == ["predictions"]
    assert secret not in (tmp_path / "mlflow.db").read_bytes().decode("latin-1")


def test_disabled_tracking_logs_nothing(tmp_path: Path):
    tracking = OmegaConf.create({"enabled": False})
    assert log_run(tracking, run_name="x", params={}, tags={}, metrics={}, artifact_dir=None) is None


def test_artifacts_stay_beside_the_store_whatever_folder_runs_start_in(tmp_path: Path, monkeypatch):
    """MLflow alone puts a SQLite store's artifacts in `./mlruns` of the first run's folder; the
    project's store keeps them beside it, so the project is one folder to copy or delete."""
    project, elsewhere = tmp_path / "project", tmp_path / "notebooks"
    project.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    uri = f"sqlite:///{project}/mlflow.db"
    art = tmp_path / "art"
    art.mkdir()
    (art / "x.jsonl").write_text('{"id": "1"}\n')
    ids = []
    for experiment in ("hhx", "my runs/1"):  # a name that is not a folder name, too
        tracking = OmegaConf.create({"enabled": True, "uri": uri, "experiment": experiment,
                                     "log_artifacts": True})
        ids.append(log_run(tracking, run_name="x", params={}, tags={}, metrics={},
                           artifact_dir=art))
    client = mlflow.MlflowClient(tracking_uri=uri)
    folders = {Path(client.get_run(i).info.artifact_uri.removeprefix("file://")) for i in ids}
    assert all(project / "mlruns" in f.parents for f in folders) and len(folders) == 2
    assert all((f / "x.jsonl").is_file() for f in folders)
    assert not (elsewhere / "mlruns").exists()
