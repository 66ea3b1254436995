"""`stage=evaluate` on answers the reference scorer cannot survive: the first run classifies
them, the rerun scores the cached answers again without a request and without a crash.

The model is the litellm backend against the loopback fault server, which replies what the
prompt's `[[answer:...]]` directive says; the task is an official-layout eval-sample file.
"""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from omegaconf import OmegaConf

from hhx.stages import evaluate
from tests.helpers.llm_servers import FaultServer, api_model, make_cfg

HOSTILE = {
    "deep": "[" * 5000,
    "huge_int": '["employed"] [' + "9" * 5000,
    "escaped_quotes": '\\"' * 20_000,
    "long_number": "[" + "7" * 400 + "]",
    "valid": '["employed"]',
    # Unpaired surrogates, sent as JSON escapes (esc) or as raw bytes that are not UTF-8 (raw),
    # inside the answer array or outside it, and control characters: stored, cached and scored
    # without an encoding error. `\\u` is unescaped by the server.
    "esc_surrogate": ("esc", '["\\ud800"]'),
    "esc_outside": ("esc", '["employed"] \\udfff'),
    "raw_surrogate": ("raw", '["\\ud800"]'),
    "raw_outside": ("raw", '["employed"] \\udcff\\ud83d'),
    "controls": ("esc", '["employed\\u0000\\u001b\\u0085"]'),
}


def _eval_sample(root: Path) -> None:
    cell = root / "pre_cutoff"
    cell.mkdir(parents=True)
    lines = []
    for i, (name, answer) in enumerate(HOSTILE.items()):
        kind, answer = answer if isinstance(answer, tuple) else ("", answer)
        directive = f"answer_{kind}" if kind else "answer"
        lines.append(json.dumps({
            "id": name, "time": "2024-01-01", "release_date": "2024-02-15",
            "system": "You are an American person answering questions about your work.",
            "user": f"Question {i}. [[{directive}:{answer} ]]",  # the space keeps "]]" unique
            "assistant": '["employed"]', "naive_baseline": '["unemployed"]',
        }, ensure_ascii=True))
    (cell / "labor_cps_jobfind.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("HHX_TEST_KEY", "sk-test-hostile")


@pytest.mark.slow
def test_evaluate_twice_on_cached_hostile_answers(tmp_path, monkeypatch):
    root = tmp_path / "householdbench_evalsample"
    _eval_sample(root)
    monkeypatch.chdir(tmp_path)
    with FaultServer() as srv:
        cfg = make_cfg(api_model(srv.url, max_concurrency=1), tmp_path / "cache")
        cfg = OmegaConf.merge(cfg, {
            "data": {"source": "official", "root": str(root), "layout": "eval_sample",
                     "split": "pre_cutoff", "max_examples": None},
            "tracking": {"uri": f"sqlite:///{tmp_path}/mlflow.db"},
            "compare_no_change": False,
        })
        first = evaluate.run(cfg)
        sent = len(srv.snapshot())
        second = evaluate.run(cfg)  # every answer is cached now: nothing is sent again
        assert len(srv.snapshot()) == sent == len(HOSTILE)
    for out in (first, second):
        errors = {d["id"].split("@")[0]: d["error"] for d in out["result"]["details"]}
        assert errors["deep"] == "nesting_too_deep"
        assert errors["huge_int"].startswith("Exceeds the limit (4300 digits)")
        assert errors["escaped_quotes"] == "expected_json_array"
        assert errors["long_number"].startswith("labor_force_status:invalid_label:")
        assert errors["valid"] is None
        written = Path(out["files"]["result"]).read_text()
        # lone surrogates are invalid labels inside the array and ignored after it, as the
        # official parser reads them; control characters inside a JSON string are not JSON
        assert errors["esc_surrogate"].startswith("labor_force_status:invalid_label:'\\ud800'")
        assert errors["raw_surrogate"] == errors["esc_surrogate"]
        assert errors["esc_outside"] is None and errors["raw_outside"] is None
        assert errors["controls"] == "expected_json_array"
        result_file = json.loads(written)
        assert result_file["num_valid"] == 3
        # the result JSON keeps the answer losslessly (a JSON escape reads back as the surrogate)
        raw = {d["id"].split("@")[0]: d["raw_prediction"] for d in result_file["details"]}
        assert raw["esc_surrogate"] == '["\ud800"] ' and raw["raw_outside"].endswith("\ud83d ")
        # the details table (Arrow) holds the escaped form, the rest byte for byte
        table = pd.read_parquet(out["files"]["details"]).set_index("id")["raw_prediction"]
        assert table["esc_surrogate"] == '["\\ud800"] '
        assert table["controls"] == '["employed\x00\x1b\x85"] '
        assert table["valid"] == '["employed"] '
    assert first["result"] == second["result"]
    # both runs are logged, with the details table as a run artifact
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("hhx").experiment_id])
    assert len(runs) == 2 and all(r.info.status == "FINISHED" for r in runs)
    assert all(r.data.metrics["num_valid"] == 3 for r in runs)
