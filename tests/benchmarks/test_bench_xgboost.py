"""benchmarks/bench_xgboost.py kept working at a tiny scale: its two paths fit the same model (the
ratio compares equal work), one whole run prints the table, and the 32-task extrapolation covers
every task with training rows that agree with the paper's total."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_xgboost as bench  # noqa: E402


@pytest.mark.parametrize("kind", bench.KINDS)
def test_hhx_and_plain_xgboost_fit_the_same_model(kind: str) -> None:
    table, sidecar = bench.synthetic_table(600, 120)
    own = bench.run_hhx(kind, table, sidecar, rounds=8, threads=1)
    ref = bench.run_plain(kind, table, sidecar, rounds=8, threads=1)
    assert own["rounds"] == ref["rounds"] == 8
    # the same predictions for all 120 validation rows: same rows, encoding and parameters
    assert own["digest"] == ref["digest"]
    assert own["seconds"] >= own["xgb_fit_s"] > 0 and ref["seconds"] >= ref["xgb_fit_s"] > 0


def test_the_synthetic_table_is_in_split_position_order() -> None:
    table, sidecar = bench.synthetic_table(300, 50)
    assert len(table) == len(sidecar) == 350
    assert list(sidecar["split_position"][:300]) == list(range(1, 301))
    assert set(table["label"]) == set(bench.CLASSES)
    assert table["region"].isna().any() and table["x0"].isna().any()  # missing values exercised


@pytest.mark.slow
def test_a_tiny_run_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    results = bench.main(["--train", "400", "--rounds", "5", "--kinds", "distribution",
                          "--threads", "1", "--no-grid"])
    out = capsys.readouterr().out
    assert results["distribution"]["hhx"]["digest"] == results["distribution"]["xgboost"]["digest"]
    row = next(line for line in out.splitlines() if line.startswith("distribution "))
    assert row.split()[-1] == "yes", out
    assert results["distribution"]["hhx"]["peak_mb"] > 0


def test_the_grid_covers_the_32_tasks() -> None:
    work = bench.grid_work()
    assert {t for t, _, _ in work} == set(bench.README_ROWS)
    assert {k for _, k, _ in work} == set(bench.KINDS)
    total = sum(bench.task_rows(t) for t in bench.README_ROWS)
    assert abs(total - bench.PAPER_TRAIN_ROWS) / bench.PAPER_TRAIN_ROWS < 0.01
