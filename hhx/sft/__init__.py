"""Fine-tuning as in the paper (§5, appendix E): the SFT set, LoRA SFT with an optional
number-token loss, and the adapter evaluated through the evaluate stage.

- `dataset`: the SFT set (spec 6.2) from built baseline tasks, in TRL's and LLaMA-Factory's
  formats, with a manifest of counts per task.
- `loss`: the number-token loss (package `ntloss`) added to the answer's cross-entropy.
- `train`: LoRA SFT with peft + TRL, checkpointed and resumable, tracked in MLflow.
"""
