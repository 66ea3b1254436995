"""transformers backend: the K draws of a prompt share one prompt evaluation and are the same
draws `generate(num_return_sequences=K)` gives for the same seed (SmolLM2-135M, sampling)."""

from __future__ import annotations

import types

import pytest

from hhx.predictors.base import make_predictor
from hhx.predictors.llm.settings import settings_from_config
from hhx.predictors.llm.transformers_backend import generation_kwargs
from tests.helpers.llm_servers import jobfind_prompt, make_cfg, smollm2_path

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(smollm2_path() is None, reason="SmolLM2 weights not installed")

CONTEXT = " Context: " + " ".join(["Unemployment rose by 0.2 points; inflation eased."] * 12)


def _transport(tmp_path):
    cfg = make_cfg("smollm2_135m_hf", tmp_path, **{"decoding.temperature": 0.8})
    return make_predictor(cfg).transport(), settings_from_config(cfg)


def test_k_draws_from_one_prefill_equal_num_return_sequences(tmp_path):
    import torch

    transport, settings = _transport(tmp_path)
    k = 8
    for i in range(2):
        call = types.SimpleNamespace(messages=[
            {"role": "system", "content": "You are an American person."},
            {"role": "user", "content": jobfind_prompt(i) + CONTEXT}])
        kwargs = generation_kwargs(settings, k, 24)
        assert kwargs["do_sample"]
        batch = transport._encode([call]).to(transport.device)
        torch.manual_seed(40 + i)
        with torch.inference_mode():
            reference = transport.model.generate(
                **batch, pad_token_id=transport.tokenizer.pad_token_id, **kwargs)
        torch.manual_seed(40 + i)
        with torch.inference_mode():
            shared = transport._shared_prefill(batch, k, kwargs)
        assert shared is not None and torch.equal(shared, reference)
        assert len({tuple(row.tolist()) for row in reference}) > 1  # real, different draws
