"""Fine-tuning pieces: the loss, generation settings, labels, settings. The loss tests import
torch + transformers (10-20 s on 2 cores), so they are marked slow; the rest take milliseconds."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from hhx.errors import ConfigError, PredictorError
from tests.helpers.sft_fixtures import HAS_SFT_STACK


class DigitTokenizer:
    """The tokenizer interface NTLoss reads: ids 0-9 are the digits, 10-15 words."""

    def __init__(self) -> None:
        self.vocab = {str(d): d for d in range(10)} | {f"w{i}": 10 + i for i in range(6)}

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)

    def add_tokens(self, tokens) -> int:
        return 0

    def __len__(self) -> int:
        return len(self.vocab)


class FixedLogits:
    """A 'model' returning given logits at the requested positions (what logits_to_keep does)."""

    def __init__(self, logits) -> None:
        self.logits = logits
        self.kept = None

    def __call__(self, input_ids=None, attention_mask=None, use_cache=None, logits_to_keep=None):
        import types

        self.kept = logits_to_keep
        return types.SimpleNamespace(logits=self.logits[:, logits_to_keep, :])


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SFT_STACK, reason="needs torch/transformers/peft/trl")
def test_answer_loss_is_token_ce_over_answer_positions_plus_weighted_ntl():
    import torch
    import torch.nn.functional as F

    from hhx.sft.loss import answer_loss, number_token_loss

    torch.manual_seed(0)
    logits = torch.randn(2, 6, 16, requires_grad=True)
    # Row 0 answers with digits 7, 3 at positions 4, 5; row 1 with the word w2 at position 5.
    labels = torch.full((2, 6), -100)
    labels[0, 4], labels[0, 5], labels[1, 5] = 7, 3, 12
    model = FixedLogits(logits)
    inputs = {"input_ids": torch.zeros(2, 6, dtype=torch.long), "labels": labels}
    ce_only = answer_loss(model, inputs)
    assert model.kept.tolist() == [3, 4]  # only positions that predict an answer token
    reference = F.cross_entropy(logits[:, :-1].reshape(-1, 16), labels[:, 1:].reshape(-1),
                                ignore_index=-100)
    assert ce_only.loss.item() == pytest.approx(reference.item(), rel=1e-6)
    assert ce_only.answer_tokens == 3 and ce_only.ntl is None

    ntl_fn = number_token_loss(DigitTokenizer(), 16)
    with_ntl = answer_loss(model, inputs, ntl_fn=ntl_fn, ntl_weight=0.5)
    assert with_ntl.ntl > 0
    assert with_ntl.loss.item() == pytest.approx(ce_only.ce + 0.5 * with_ntl.ntl, rel=1e-6)
    with_ntl.loss.backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0

    # A categorical answer (no digit tokens) gets no number-token loss at all.
    words = torch.full((2, 6), -100)
    words[0, 5], words[1, 5] = 11, 12
    parts = answer_loss(model, {"input_ids": inputs["input_ids"], "labels": words},
                        ntl_fn=ntl_fn, ntl_weight=0.5)
    assert parts.ntl == 0.0 and parts.loss.item() == pytest.approx(parts.ce)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SFT_STACK, reason="needs torch/transformers/peft/trl")
def test_ntl_closer_digit_costs_less():
    import torch

    from hhx.sft.loss import number_token_loss

    ntl = number_token_loss(DigitTokenizer(), 16)
    target = torch.tensor([[5]])
    near, far = torch.full((1, 1, 16), -20.0), torch.full((1, 1, 16), -20.0)
    near[0, 0, 4], far[0, 0, 0] = 10.0, 10.0
    assert ntl(near, target).item() < ntl(far, target).item()


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SFT_STACK, reason="needs torch/transformers/peft/trl")
def test_ntl_refuses_a_tokenizer_without_digit_tokens():
    from hhx.sft.loss import number_token_loss

    tok = DigitTokenizer()
    del tok.vocab["7"]
    with pytest.raises(ConfigError, match="single-token digit"):
        number_token_loss(tok, 16)


def test_loss_and_settings_are_checked():
    from hhx.config import SftConfig
    from hhx.sft.train import check_settings

    check_settings(SftConfig())
    with pytest.raises(ConfigError, match="sft.loss='mse'"):
        check_settings(SftConfig(loss="mse"))
    with pytest.raises(ConfigError, match="ntl_weight"):
        check_settings(SftConfig(loss="ntl", ntl_weight=0.0))
    with pytest.raises(ConfigError, match="sft.lora_rank=0"):
        check_settings(SftConfig(lora_rank=0))


def test_generation_follows_the_decoding_settings():
    from hhx.predictors.llm.settings import settings_from_config
    from hhx.predictors.llm.transformers_backend import generation_kwargs
    from tests.helpers.llm_servers import make_cfg

    sampled = settings_from_config(make_cfg("smollm2_135m_hf", "/tmp", decoding="qwen_nonthinking",
                                            aggregation="k16",
                                            **{"decoding.enable_thinking": None}))
    assert sampled.use_n and sampled.k == 16
    assert generation_kwargs(sampled, 16, 40) == {
        "num_return_sequences": 16, "do_sample": True, "temperature": 0.7, "top_p": 0.8,
        "top_k": 20, "max_new_tokens": 40}  # the call's answer budget
    greedy = settings_from_config(make_cfg("smollm2_135m_hf", "/tmp", decoding="greedy"))
    kwargs = generation_kwargs(greedy, 1, None)
    assert kwargs["do_sample"] is False and kwargs["temperature"] is None
    assert kwargs["max_new_tokens"] == greedy.n_ctx  # no limit sent: up to the context length


def test_constrained_decoding_is_refused_on_the_transformers_backend():
    from hhx.predictors.llm.settings import settings_from_config
    from tests.helpers.llm_servers import make_cfg

    cfg = make_cfg("smollm2_135m_hf", "/tmp", **{"model.constrained_decoding": True})
    with pytest.raises(ConfigError, match="no JSON-schema support"):
        settings_from_config(cfg)


def test_adapter_runs_are_labelled_apart_from_the_base_model():
    from hhx.tracking.labels import model_label

    base = OmegaConf.create({"model": {"name": "qwen35_4b", "lora_adapter": None}})
    tuned = OmegaConf.create({"model": {"name": "qwen35_4b",
                                        "lora_adapter": "outputs/sft/qwen35_4b-paper-ntl/adapter"}})
    assert model_label(base.model) == "qwen35_4b"
    assert model_label(tuned.model) == "qwen35_4b+lora:qwen35_4b-paper-ntl"


def test_an_adapter_folder_without_peft_config_is_a_clear_error(tmp_path):
    from hhx.predictors.llm.hf_weights import adapter_identity

    with pytest.raises(PredictorError, match="no adapter_config.json"):
        adapter_identity(str(tmp_path))
    (tmp_path / "adapter_config.json").write_text("{}")
    assert adapter_identity(str(tmp_path))["files"][0][0] == "adapter_config.json"


def test_weights_must_be_a_hf_folder_or_gguf(tmp_path):
    from hhx.predictors.llm.hf_weights import hf_folder

    with pytest.raises(PredictorError, match="no config.json"):
        hf_folder(str(tmp_path))


def test_policy_tasks_never_enter_the_sft_set(tmp_path):
    from hhx.sft.dataset import choose_tasks

    with pytest.raises(ConfigError, match="labor_cps_ui is a policy task"):
        choose_tasks(tmp_path, ["labor_cps_jobfind", "labor_cps_ui"])
    assert choose_tasks(tmp_path, ["labor_cps_jobfind"]) == ["labor_cps_jobfind"]


def test_a_checkpoint_is_resumed_only_by_the_same_run(tmp_path):
    from hhx.config import SftConfig
    from hhx.sft.dataset import SftSet
    from hhx.sft.train import check_same_run, run_identity

    sft_set = SftSet(tmp_path, None, {"chat_sha256": "abc"})
    first = run_identity(SftConfig(), "/w/base", None, sft_set)
    check_same_run(tmp_path, first, resume=True)
    (tmp_path / "checkpoints" / "checkpoint-4").mkdir(parents=True)
    # Logging and checkpoint cadence may change on resume; what is learned may not.
    check_same_run(tmp_path, run_identity(SftConfig(save_steps=7, threads=1), "/w/base", None,
                                          sft_set), resume=True)
    with pytest.raises(ConfigError, match="differs in sft.learning_rate"):
        check_same_run(tmp_path, run_identity(SftConfig(learning_rate=1.0), "/w/base", None,
                                              sft_set), resume=True)
    with pytest.raises(ConfigError, match="sft.resume=false"):
        check_same_run(tmp_path, first, resume=False)
