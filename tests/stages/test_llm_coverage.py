"""Which runs count: the coverage rule of the evaluate stage and the leaderboard's selection
(a failed run never stands in for a finished one). End to end through `python -m hhx` in
test_llm_run.py; here the rules themselves, on plain records."""

from __future__ import annotations

import pandas as pd
import pytest

from hhx.errors import DataError
from hhx.leaderboard.collect import DETAIL_COLUMNS, RunRecord, select_runs
from hhx.stages.evaluation.scoring import coverage_failure, failure_causes

TAGS = {"hhx.stage": "evaluate", "hhx.task": "t", "hhx.model": "m", "hhx.backend": "litellm",
        "hhx.mode": "baseline", "hhx.target_type": "numeric", "hhx.data_source": "official",
        "hhx.synthetic": "false", "hhx.split": "pre_cutoff"}


def _record(start: float, coverage: float, status: str = "FINISHED", **tags: str) -> RunRecord:
    return RunRecord(tags={**TAGS, **tags}, metrics={"coverage_rate": coverage},
                     details=pd.DataFrame(columns=list(DETAIL_COLUMNS)), source=f"run{start:g}",
                     start_time=start, status=status)


def test_coverage_below_the_bar_names_what_is_missing():
    result = {"coverage_rate": 0.5, "num_examples": 200}
    assert coverage_failure(result, {}, 0.9) == (
        "coverage 0.50 < min_coverage 0.9: 100 of 200 examples have no answer")
    assert coverage_failure({"coverage_rate": 0.95, "num_examples": 200}, {}, 0.9) is None
    # K > 1: every example answered, but draws missing.
    draws = {"llm/draw_coverage": 0.5, "llm/draws_missing": 1600}
    assert "1600 draws are missing" in coverage_failure(
        {"coverage_rate": 1.0, "num_examples": 200}, draws, 0.9)
    assert coverage_failure({"coverage_rate": 0.0, "num_examples": 3}, {}, 0.0) is None
    causes = failure_causes({"llm/failed/server_error": 12.0, "llm/failed/timeout": 3.0})
    assert causes == "server_error x12, timeout x3"


def test_a_failed_latest_run_never_stands_in_for_the_finished_one():
    finished = _record(1.0, 1.0)
    failed = _record(2.0, 0.4, status="FAILED", **{"hhx.status": "failed",
                                                   "hhx.failure_reason": "coverage 0.40"})
    legacy = _record(3.0, 0.0)  # logged FINISHED before min_coverage existed: nothing answered
    selection = select_runs([finished, failed, legacy])
    assert selection.runs == [finished]
    assert sum("left out" in n for n in selection.notes) == 2
    assert any("coverage 0.40" in n for n in selection.notes)
    assert any("coverage 0" in n and "run3" in n for n in selection.notes)


def test_only_failed_runs_is_an_error_not_an_empty_leaderboard():
    with pytest.raises(DataError, match="failed"):
        select_runs([_record(1.0, 0.0), _record(2.0, 0.3, status="FAILED")])
