"""house_sce_financing on hand-made FZdata_raw.dta rows: Stata file -> hhx.surveys.sce.financing ->
task builder, checked against values worked out by hand from the spec (10_tasks 18, 00_common
1.9) and the reference's filters; every filter drops the rows it should; a golden prompt.

The file has the experiment's shape (1,211 respondents, 1,200 assigned): a dozen hand-made
respondents plus assigned respondents who did not answer (dropped at "targets observed") and
eleven unassigned ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.bench.table import coerce_table
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.surveys.sce import financing as fz
from hhx.surveys.synthetic.sce.financing import exact_payment, write_fz_dta
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import check_prompt
from hhx.tasks.registry import load_task
from hhx.tasks.sce import house_sce_financing as task_module

GOLDEN = Path(__file__).parents[1] / "golden" / "house_sce_financing.txt"
HYPO = [f"hypo_{x}{k}" for k in range(1, 5) for x in ("q", "d")]


def _person(uid: int, version: float, home: int, prices: list[int], downs: list[int],
            **values) -> dict:
    """One respondent: an owner (45, man, college, married, South) unless `values` override;
    prices / downs are scenarios 1-4 (scenario 1's down is 20%)."""
    row = {
        "userid": uid, "hypoversion": version, "age": 45, "male": 1, "college": 1, "q38": 1,
        "region": "South", "residence_children_under18": 1, "residence_children_over18": 0,
        "hh_income": 7, "q4": 1, "house_value": 300_000.0, "house_debt": 150_000.0, "q16_6": 0,
        "liquid_savings": 20.0, "non_house_debt": 2_500.0, "q14": 4, "total_numeracy": 4,
        "q13": 6, "prob_move_3yr": 25, "zip_good_inv": 1, "sce_acs_weights": 1.0,
        "homevalue": float(home),
    }  # fmt: skip
    initial, alternative = (4.5, 6.5) if version == 1 else (6.5, 4.5)
    for k, (price, down) in enumerate(zip(prices, [prices[0] // 5, *downs], strict=True), 1):
        rate = initial if k <= 2 else alternative
        row[f"hypo_q{k}"], row[f"hypo_d{k}"] = float(price), float(down)
        row[f"hypo_mpayment_q{k}"] = float(exact_payment(price, down, home, rate)[0])
        row[f"qtime_hypo_q{k}"] = 30.0
    row.update(values)
    return row


M1 = _person(1001, 1, 250_000, [300_000, 310_000, 260_000, 330_000], [40_000, 30_000, 110_000])
RENTER = {"q4": 0, "house_value": np.nan, "house_debt": np.nan}
M2 = _person(1002, 2, 200_000, [180_000, 185_000, 210_000, 280_000], [9_250, 10_500, 90_000],
             q38=2, male=0, college=0, q16_6=1, liquid_savings=np.nan, non_house_debt=0.0,
             hh_income=1, residence_children_under18=0, **RENTER)
M3 = _person(1003, 2, 400_000, [420_000, 430_000, 500_000, 560_000], [86_000, 100_000, 180_000],
             age=18, hh_income=11, residence_children_under18=2, residence_children_over18=1)
M4 = _person(1004, 1, 150_000, [140_000, 150_000, 120_000, 200_000], [15_000, 12_000, 70_000],
             age=80, q14=6, zip_good_inv=0, **RENTER)
# strict minimum / maximum of all eight trimmed columns: the trim drops exactly these two
LO = _person(1005, 1, 50_000, [50_000, 50_000, 40_000, 60_000], [2_500, 2_000, 3_000])
HI = _person(1006, 2, 900_000, [900_000, 950_000, 800_000, 1_000_000],
             [300_000, 250_000, 400_000])
DROPPED = {  # userid -> the filter that drops it
    1101: ("5.1 all_six_scored_answers_observed", {"hypo_d3": np.nan}),
    1102: ("6.6 tenure_and_owner_housing_context", {"house_value": 0.0}),
    1103: ("6.5 demographic_context", {"q38": np.nan}),
    1104: ("6.8 numeracy_and_preferences", {"total_numeracy": np.nan}),
    1105: ("7.2 five_percent_minimum_down_payment", {"hypo_d2": 10_000.0}),
    1106: ("7.4 context_ranges", {"age": 17}),
}


def _raw_rows() -> pd.DataFrame:
    rows = [M1, M2, M3, M4, LO, HI]
    rows += [{**M1, "userid": uid, **change} for uid, (_, change) in DROPPED.items()]
    template = {k: v for k, v in M1.items() if not k.startswith(("hypo_", "qtime_"))}
    n_assigned = 1200 - len(rows)
    rows += [{**template, "userid": 2000 + i} for i in range(n_assigned)]  # did not answer
    rows += [{**template, "userid": 5000 + i, "hypoversion": np.nan} for i in range(11)]
    frame = pd.DataFrame(rows)
    for column in ("age", "q38", "total_numeracy"):
        frame[column] = frame[column].astype("float64")
    return frame


def _macro() -> pd.DataFrame:
    rows = []
    for q in range(2013 * 4 + 1, 2015 * 4 + 1):
        row = {"eligible_origin_q_index": q, "macro_reference_q_index": q - 1}
        row.update({c: round(1.0 + 0.01 * i + 0.1 * (q % 4), 4)
                    for i, c in enumerate(CORE_MACRO_COLUMNS)})
        rows.append(row)
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fz_task")
    path = write_fz_dta(_raw_rows(), tmp / "FZdata_raw.dta")
    frame, _ = fz.clean_financing(path)
    inter = tmp / "inter"
    inter.mkdir()
    frame.to_parquet(inter / "house_sce_financing.parquet")
    ctx = BuildContext(load_task("house_sce_financing"), inter, _macro())
    return task_module.build_table(ctx)


def test_rows_keys_and_hand_computed_values(table):
    assert sorted(table["id"]) == ["fz_1001", "fz_1002", "fz_1003", "fz_1004"]
    assert set(table["time"]) == {"2014-02-01"}
    assert set(table["release_date"]) == {"2015-08-01"}  # housing Feb 2014 + 18 months
    spec = load_task("house_sce_financing")
    assert list(table.columns[: 3 + 6 + len(spec.prompt_predictors)]) == [
        "id", "time", "release_date", *spec.targets, *spec.prompt_predictors]
    m1 = table.set_index("id").loc["fz_1001"]
    assert [m1[t] for t in spec.targets] == [310_000, 40_000, 260_000, 30_000, 330_000, 110_000]
    assert m1["initial_rate"] == 4.5 and m1["initial_wtp"] == 300_000
    assert m1["initial_down_payment"] == 60_000
    # 240,000 at 4.5%: P&I 1216.04 - tax 0.95*0.34*900 = 290.70 -> 925.34, + 250,000*0.0335/12
    # = 697.92 -> 1,623.26 -> $1,623
    assert m1["initial_effective_monthly_payment"] == 1623
    assert (m1["tenure"], m1["current_home_value"], m1["housing_debt"]) == ("owner", 300_000,
                                                                            150_000)
    assert (m1["sex"], m1["education"], m1["married"]) == ("man", "college degree or higher",
                                                           "True")
    assert m1["income_band"] == "$60,000 to $75,000"
    assert m1["liquid_savings_band"] == "$5,000 to $30,000"
    assert m1["non_housing_debt_band"] == "$1,000 to $5,000"
    assert m1["credit_score_band"] == "720 to 760" and m1["region"] == "South"
    assert m1["property_good_investment"] == "yes" and m1["comparable_home_value"] == 250_000
    m2 = table.set_index("id").loc["fz_1002"]
    assert (m2["initial_rate"], m2["tenure"], m2["current_home_value"], m2["married"]) == (
        6.5, "renter", 0.0, "False")
    assert (m2["liquid_savings_band"], m2["non_housing_debt_band"], m2["income_band"]) == (
        "no liquid savings", "no non-housing debt", "less than $10,000")
    macro = _macro().set_index("eligible_origin_q_index").loc[2014 * 4 + 1]
    assert m1["gdp_growth_qoq_lag1"] == macro["gdp_growth_qoq_lag1"]


def test_targets_are_written_as_the_official_floats(table):
    """The official frame holds the targets (and the renter's 0.0 home value) as float64, so its
    CSV says 310000.0; the answer keeps whole dollars as integers."""
    spec = load_task("house_sce_financing")
    floats = set(table.attrs["float_columns"])
    assert {*spec.targets, "current_home_value", "housing_debt", "initial_wtp",
            "initial_down_payment", "initial_effective_monthly_payment"} <= floats
    public = table[["id", "time", "release_date", *spec.targets, *spec.prompt_predictors]]
    typed = coerce_table(public, spec, float_columns=sorted(floats))
    row = typed.set_index("id").loc[["fz_1001", "fz_1002"]]
    text = row.to_csv().splitlines()
    assert text[1].split(",")[3:9] == ["310000.0", "40000.0", "260000.0", "30000.0",
                                        "330000.0", "110000.0"]
    assert row.loc["fz_1002", "current_home_value"] == 0.0
    assert ",renter,0.0,0.0," in text[2]
    assert task_module.reference_answer(table.iloc[0].to_dict(), spec)[0] == int(
        table.iloc[0]["wtp_flexible_original_rate"])


def test_every_filter_drops_the_rows_it_should(table):
    steps = {r["step"]: r for r in table.attrs["construction_steps"]}
    assert steps["1 Start from source observations"]["rows"] == 1211
    # 11 unassigned + 1,188 who did not answer + 1101 (a down payment missing)
    assert steps["5 Require observed targets"]["dropped"] == 11 + 1188 + 1
    for label, _ in DROPPED.values():
        if not label.startswith("5."):
            assert steps[[k for k in steps if k.startswith(label)][0]]["dropped"] == 1, label
    assert steps["6 Require observed predictors"]["dropped"] == 3
    assert steps["7 Apply logical and validity filters"]["dropped"] == 2
    assert steps["8 Apply outlier trimming"]["dropped"] == 2  # LO and HI
    assert steps["9 Export sample"]["rows"] == 4


def test_universe_must_be_the_experiment(tmp_path):
    frame = _raw_rows().iloc[:-1]  # 1,210 respondents
    inter = tmp_path / "inter"
    inter.mkdir()
    fz.add_mapping(frame.copy(), "x").to_parquet(inter / "house_sce_financing.parquet")
    ctx = BuildContext(load_task("house_sce_financing"), inter, _macro())
    with pytest.raises(DataError, match=r"1210 respondents, 1200 assigned.*1211 and 1200"):
        task_module.build_table(ctx)


def _rendered(table, rid):
    spec = load_task("house_sce_financing")
    row = table[table["id"] == rid].iloc[0].to_dict()
    system, user = task_module.render(row, spec)
    check_prompt(system, user, spec, 2)
    return spec, row, system, user


def test_golden_prompt_owner_and_the_renter_variant(table):
    spec, row, system, user = _rendered(table, "fz_1001")
    text = (f"{system}\n\n{user}\n\nassistant: "
            f"{json.dumps(task_module.reference_answer(row, spec))}\n"
            f"naive_baseline: {json.dumps(task_module.naive_baseline(row, spec))}\n")
    if os.environ.get("HHX_UPDATE_GOLDEN"):  # wording changes are deliberate
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "house_sce_financing: prompt differs from the golden file"
    assert task_module.naive_baseline(row, spec) == [300_000, 60_000] * 3
    _, _, _, renter = _rendered(table, "fz_1002")
    assert "You rent your current home. Your liquid savings are no liquid savings" in renter
    assert "You do not need to sell a current home." in renter
    assert "housing-related debt" not in renter and "are not married" in renter
    assert "have no children living with you" in renter
    assert "rate remains 6.5%" in renter and "The mortgage rate is 4.5%" in renter
    _, _, _, young = _rendered(table, "fz_1003")
    assert "You are an 18-year-old man" in young
    assert "have 2 children under 18 and 1 adult child living with you" in young
    assert "Your household income is $200,000 or more." in young
    _, _, _, old = _rendered(table, "fz_1004")
    assert "an 80-year-old" in old and "credit-score band is does not know" in old
    assert "You do not regard property in your ZIP code" in old
