"""`stage=evaluate` on answers the reference scorer cannot survive: the first run classifies
them, the rerun scores the cached answers again without a request and without a crash.

The model is the litellm backend against the loopback fault server, which replies what the
prompt's `[[answer:...]]` directive says; the task is an official-layout eval-sample file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_servers import FaultServer, api_model, make_cfg
from omegaconf import OmegaConf

from hhx.stages import evaluate

HOSTILE = {
    "deep": "[" * 5000,
    "huge_int": '["employed"] [' + "9" * 5000,
    "escaped_quotes": '\\"' * 20_000,
    "long_number": "[" + "7" * 400 + "]",
    "valid": '["employed"]',
}


def _eval_sample(root: Path) -> None:
    cell = root / "pre_cutoff"
    cell.mkdir(parents=True)
    lines = []
    for i, (name, answer) in enumerate(HOSTILE.items()):
        lines.append(json.dumps({
            "id": name, "time": "2024-01-01", "release_date": "2024-02-15",
            "system": "You are an American person answering questions about your work.",
            "user": f"Question {i}. [[answer:{answer} ]]",  # the space keeps "]]" unique
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
            "tracking": {"enabled": False},
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
        assert json.loads(written)["num_valid"] == 1
    assert first["result"] == second["result"]
