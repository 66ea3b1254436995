"""The six SCE Core task builders on hand-made NY Fed rows: workbook -> hhx.surveys.sce.microdata ->
builder table, checked against values worked out by hand from the spec (20_tasks 9, 10, 12, 13;
10_tasks 15, 17), every filter dropping the rows it should, golden prompts, and a deterministic
release build."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.surveys.sce import microdata as sce
from hhx.surveys.sce.workbook import read_workbook
from hhx.surveys.synthetic.sce.microdata import Sheet, write_workbook
from hhx.tasks.build import build_task
from hhx.tasks.context import BuildContext
from hhx.tasks.registry import load_task
from hhx.tasks.sce import common

GOLDEN = Path(__file__).parents[1] / "golden"
BINS = [0, 0, 5, 20, 50, 20, 5, 0, 0, 0]  # a valid ten-bin density (sums to 100)
BINS_C = [0, 5, 10, 25, 40, 15, 5, 0, 0, 0]
FILLERS = ("90000001", "90000002")  # extreme IQR / income growth: trimmed, keep others inside


def _row(rid: str, month: int, tenure: int, **values) -> dict:
    """One core row in 2020 (month 1-12) with ordinary answers; `values` override."""
    row = {
        "userid": int(rid), "date": 202000 + month, "weight": 1.0, "tenure": tenure,
        "Q1": 3, "Q2": 4, "Q3": 20, "Q4new": 40, "Q5new": 30, "Q6new": 50,
        **{f"Q9_bin{i + 1}": v for i, v in enumerate(BINS)}, "Q9_mean": 2.5, "Q9_iqr": 2.0,
        **{f"Q9c_bin{i + 1}": v for i, v in enumerate(BINS_C)}, "Q9c_mean": 3.0, "Q9c_iqr": 3.0,
        "Q10_1": 1, "Q10_2": 0, "Q10_3": 0, "Q10_4": 0, "Q10_5": 0, "Q11": 1, "Q12new": 1,
        "Q13new": 10, "Q14new": 15, "Q15": 2, "Q16": None, "Q17new": None, "Q18new": None,
        "Q19": None, "Q22new": 60, "Q25v2part2": 3.0, "Q32": 45 if tenure == 1 else None,
        "Q41": 7, "Q42": 20, "Q43": 1, "Q44": 2, "Q45b": 2, "Q47": 6 if tenure == 1 else None,
        "D3": 2, "D6": 6 if tenure > 1 else None, "_NUM_CAT": "High", "_REGION_CAT": "West",
        "_EDU_CAT": "College",
    }  # fmt: skip
    row.update(values)
    return row


def _rows() -> list[dict]:
    rows = []
    # A: months 1-3 contiguous, ordinary answers
    rows += [_row("70000001", m, m) for m in (1, 2, 3)]
    # B: months 1 and 3 (tenure 1, 2): the calendar gap breaks the lag at month 3
    rows += [_row("70000002", 1, 1), _row("70000002", 3, 2, Q3=35)]
    # C: Q13new 150 in month 1 stays valid (unbounded, as the reference) but breaks the lag
    rows += [_row("70000003", 1, 1, Q13new=150), _row("70000003", 2, 2)]
    # D: 17 years old
    rows += [_row("70000004", 1, 1, Q32=17), _row("70000004", 2, 2)]
    # E: looking for work, unemployed 4 then 5 months; finding probabilities
    rows += [_row("70000005", m, m, Q10_1=0, Q10_3=1, Q11=None, Q12new=None, Q15=1, Q16=3 + m,
                  Q17new=70 - 10 * m, Q18new=40 - 10 * m, Q13new=None, Q14new=None,
                  Q22new=None, Q19=5) for m in (1, 2)]
    # F: month 2 density sums to 90 (not valid) -> out of uncertainty only
    rows += [_row("70000006", 1, 1),
             _row("70000006", 2, 2, **{"Q9_bin5": 40})]
    # fillers in each month: extreme IQRs and income growth, so the others lie strictly inside
    for m in (1, 2, 3):
        rows += [_row(FILLERS[0], m, m, Q9_iqr=0.1, Q9c_iqr=0.1, Q25v2part2=-30.0),
                 _row(FILLERS[1], m, m, Q9_iqr=20.0, Q9c_iqr=20.0, Q25v2part2=60.0)]
    return rows


def _macro() -> pd.DataFrame:
    rows = []
    for q in range(2019 * 4 + 1, 2022 * 4 + 1):
        row = {"eligible_origin_q_index": q, "macro_reference_q_index": q - 1}
        row.update({c: round(1.0 + 0.01 * i + 0.1 * (q % 4), 4)
                    for i, c in enumerate(CORE_MACRO_COLUMNS)})
        rows.append(row)
    return pd.DataFrame(rows)


def _intermediates(tmp: Path, rows: list[dict]) -> Path:
    path = write_workbook(tmp / "raw" / "core.xlsx",
                          [Sheet("Data", [["title"]], pd.DataFrame(rows))])
    tables, manifest = sce.build_tables(read_workbook("core_20_24", path))
    out = tmp / "inter"
    out.mkdir()
    tables["core"].to_parquet(out / "sce_core.parquet")
    months = pd.date_range("2019-01-01", "2021-12-01", freq="MS")
    pd.DataFrame({"date": months, "cpi_all_items": 100 * 1.002 ** np.arange(len(months))}
                 ).to_parquet(out / "cpi_major_groups.parquet")
    return out


@pytest.fixture(scope="module")
def inter(tmp_path_factory):
    return _intermediates(tmp_path_factory.mktemp("sce_tasks"), _rows())


def _table(task: str, inter: Path) -> pd.DataFrame:
    from importlib import import_module

    ctx = BuildContext(load_task(task), inter, _macro())
    return import_module(f"hhx.tasks.sce.{task}").build_table(ctx)


def _keys(table: pd.DataFrame) -> list[tuple[str, str]]:
    return sorted(zip(table["id"], table["time"], strict=True))


def _golden(task: str, table: pd.DataFrame, rid: str, time: str) -> None:
    from importlib import import_module

    module = import_module(f"hhx.tasks.sce.{task}")
    spec = load_task(task)
    row = table[(table["id"] == rid) & (table["time"] == time)].iloc[0].to_dict()
    system, user = module.render(row, spec)
    from hhx.tasks.prompting import check_prompt

    check_prompt(system, user, spec, int(time[5:7]))
    text = (f"{system}\n\n{user}\n\nassistant: {json.dumps(module.reference_answer(row, spec))}"
            f"\nnaive_baseline: {json.dumps(module.naive_baseline(row, spec))}\n")
    path = GOLDEN / f"{task}.txt"
    if os.environ.get("HHX_UPDATE_GOLDEN"):  # wording changes are deliberate: rewrite on request
        path.write_text(text)
    assert path.is_file(), f"{path} missing; HHX_UPDATE_GOLDEN=1 writes it"
    assert text == path.read_text(), f"{task}: prompt differs from {path}"


def test_labor_sce_risk_rows_lags_and_filters(inter):
    table = _table("labor_sce_risk", inter)
    # A months 2, 3 (contiguous); B month 3 gap; C month 2: lag 150 out of 0-100; D age 17
    # (age advanced from 17: still 17); E: no Q13new; F month 2 kept (densities unused)
    kept = {(r, t) for r, t in _keys(table) if r not in FILLERS}
    assert kept == {("70000001", "2020-02-01"), ("70000001", "2020-03-01"),
                    ("70000006", "2020-02-01")}
    row = table[(table["id"] == "70000001") & (table["time"] == "2020-02-01")].iloc[0]
    assert row["Q13new__clean"] == pytest.approx(0.10) and row["Q22new__clean"] == 0.6
    assert row["lag1_job_loss_probability"] == pytest.approx(0.10)
    assert row["release_date"] == "2020-11-01"  # core: survey month + 9 months
    assert row["Q10_1"] == "yes" and row["_HH_INC_DETAILED"] == "$50,000 to $59,999"
    assert row["Q12new"] == "work for someone else" and row["Q2"] == "somewhat better off"
    steps = {s["step"]: s for s in table.attrs["construction_steps"]}
    contiguity = next(v for k, v in steps.items() if "contiguous_lag1_risk" in k)
    assert contiguity["dropped"] >= 4  # first months, B's gap, C's out-of-range lag
    _golden("labor_sce_risk", table, "70000001", "2020-02-01")


def test_labor_sce_search_universe_is_active_job_seekers(inter):
    table = _table("labor_sce_search", inter)
    assert _keys(table) == [("70000005", "2020-02-01")]
    row = table.iloc[0]
    assert row["Q17new__clean"] == pytest.approx(0.5) and row["Q18new__clean"] == 0.2
    assert row["lag1_find_12m_probability"] == pytest.approx(0.6)
    assert row["Q15"] == "yes" and row["Q16_prompt_clean"] == 5
    _golden("labor_sce_search", table, "70000005", "2020-02-01")


def test_house_sce_move_uses_raw_q3_and_its_lag(inter):
    table = _table("house_sce_move", inter)
    kept = {(r, t) for r, t in _keys(table) if r not in FILLERS}
    # D: age; B month 3: gap. E (not working) and F kept.
    assert kept == {("70000001", "2020-02-01"), ("70000001", "2020-03-01"),
                    ("70000003", "2020-02-01"), ("70000005", "2020-02-01"),
                    ("70000006", "2020-02-01")}
    row = table[table["id"] == "70000005"].iloc[0]
    assert row["Q3"] == pytest.approx(0.2) and row["lag1_move_probability"] == 0.2
    assert row["Q19"] == 5 and row["Q43"] == "owns the home"
    _golden("house_sce_move", table, "70000005", "2020-02-01")


def test_income_sce_growth_trims_inside_monthly_percentiles(inter):
    table = _table("income_sce_growth", inter)
    ids = {r for r, _ in _keys(table)}
    assert not ids & set(FILLERS)  # the fillers hold each month's extremes
    assert "70000004" not in ids  # 17 in month 1 (and in month 2: age stays 17)
    assert len(table) == 11  # 13 ordinary rows - D's two
    assert (table["Q25v2part2"] == 3.0).all()
    row = table[(table["id"] == "70000005")].iloc[0]
    assert np.isnan(row["Q11"]) and row["Q16"] == 4
    _golden("income_sce_growth", table, "70000001", "2020-01-01")


def test_macro_sce_uncertainty_normalises_bins_and_needs_valid_densities(inter):
    table = _table("macro_sce_uncertainty", inter)
    kept = {(r, t) for r, t in _keys(table)}
    # F month 2: density sums to 90; fillers: trimmed IQRs
    assert ("70000006", "2020-02-01") not in kept
    assert ("70000001", "2020-02-01") in kept and ("70000005", "2020-02-01") in kept
    row = table[(table["id"] == "70000001") & (table["time"] == "2020-02-01")].iloc[0]
    bins = [row[f"Q9_bin{i}__clean"] for i in range(1, 11)]
    assert bins == [0, 0, 0.05, 0.2, 0.5, 0.2, 0.05, 0, 0, 0]
    assert row["Q4new__clean"] == pytest.approx(0.4)
    assert row["lag1_stock_prices_higher_probability"] == pytest.approx(0.5)
    _golden("macro_sce_uncertainty", table, "70000001", "2020-02-01")


def test_normalize_bins_puts_the_residual_on_the_first_largest_bin():
    frame = pd.DataFrame([[1, 1, 1]], columns=["a", "b", "c"])
    out = common.normalize_bins(frame, ["a", "b", "c"])
    assert out.iloc[0].tolist() == [0.334, 0.333, 0.333]


def _revision_rows() -> list[dict]:
    rows = []
    # R: panel months 1..12, Jan-Dec 2020 (exact 11-month gap); S: month 12 after a skipped
    # month is panel month 11 -> no pair; T: like R but density invalid at month 1
    for m in range(1, 13):
        rows.append(_row("71000001", m, m, Q9_mean=2.0 if m == 1 else 4.0,
                         Q9c_mean=3.0 if m == 1 else 3.5))
        rows.append(_row("71000003", m, m, **({"Q9_bin5": 40} if m == 1 else {})))
    for i, m in enumerate([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12], start=1):
        rows.append(_row("71000002", m, i))
    for k, value in enumerate((1.0, 9.0)):  # month-12 fillers hold the extremes
        fid = f"7200000{k}"
        for m in range(1, 13):
            rows.append(_row(fid, m, m, Q9_mean=value, Q9c_mean=value))
    return rows


def test_macro_sce_revision_pairs_cpi_and_surprise(tmp_path):
    inter = _intermediates(tmp_path, _revision_rows())
    table = _table("macro_sce_revision", inter)
    assert _keys(table) == [("71000001", "2020-12-01")]
    row = table.iloc[0]
    assert row["expected_inflation_next_12m_m12"] == 4.0
    assert row["expected_inflation_next_12m_m1"] == 2.0
    # CPI grows 0.2% a month: Dec 2019 -> Nov 2020 is 11 months
    assert row["realized_inflation_11m"] == pytest.approx(100 * (1.002 ** 11 - 1))
    implied = 100 * ((1 + 2.0 / 100) ** (11 / 12) - 1)
    assert row["implied_expected_inflation_11m_m1"] == pytest.approx(implied)
    assert row["inflation_surprise_11m"] == pytest.approx(100 * (1.002 ** 11 - 1) - implied)
    assert row["release_date"] == "2021-09-01" and row["Q1_m12"] == "about the same"
    assert row["gdp_growth_qoq_lag1_m12"] == _macro().set_index("eligible_origin_q_index").loc[
        2020 * 4 + 4, "gdp_growth_qoq_lag1"]
    _golden("macro_sce_revision", table, "71000001", "2020-12-01")


def test_degenerate_monthly_cutoffs_are_an_error(tmp_path):
    inter = _intermediates(tmp_path, [_row("70000001", 1, 1), _row("70000002", 1, 1)])
    from hhx.errors import DataError

    with pytest.raises(DataError, match="Q25v2part2 has the same 1st and 99th percentile"):
        _table("income_sce_growth", inter)


def test_release_build_is_deterministic(tmp_path):
    rows = []
    for k in range(30):  # three quarters of respondents answering every month
        rid = str(73000000 + k)
        rows += [_row(rid, m, m, Q3=(k * 7 + m * 3) % 100, Q25v2part2=float(k % 9))
                 for m in range(1, 10)]
    inter = _intermediates(tmp_path, rows)
    ctx = BuildContext(load_task("house_sce_move"), inter, _macro())
    first = build_task(ctx, tmp_path / "a", synthetic=True)
    second = build_task(ctx, tmp_path / "b", synthetic=True)
    for part in ("tabular", "prompts", "splits"):
        a = sorted((tmp_path / "a" / part).glob("house_sce_move*"))
        b = sorted((tmp_path / "b" / part).glob("house_sce_move*"))
        assert a and [p.read_bytes() for p in a] == [p.read_bytes() for p in b], part
    assert len(first.table) == len(second.table) == 30 * 8
    record = json.loads((tmp_path / "a" / "prompts" / "house_sce_move.jsonl").read_text()
                        .splitlines()[0])
    assert json.loads(record["assistant"])[0][1] == round(
        float(first.table.iloc[0]["Q3"]), 3)
