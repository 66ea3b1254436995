"""The four CEX Interview tasks on hand-built packages: survey builder -> task builder -> rows.

Each package holds two filler consumer units per quarter (the lowest and the highest income and
spending: the period trims drop them) and a few test units whose expected rows, targets, lags,
baselines and payments are written out here from spec 10_tasks sections 1-5.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.surveys.cex import interview as cex_interview
from hhx.tasks.build import check_builder_columns
from hhx.tasks.cex import cons_cex_categories as categories
from hhx.tasks.cex import cons_cex_total as total
from hhx.tasks.cex import policy
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import check_prompt
from hhx.tasks.registry import load_task
from tests.helpers.cex_raw import (
    crosswalk,
    csv_bytes,
    fmli_row,
    macro_frame,
    spending,
    write_package,
)

pytestmark = pytest.mark.slow  # each fixture builds a package (seconds)
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
BASE = {"cons_food": 1000, "cons_alcohol": 50, "cons_housing": 3000, "cons_apparel": 200,
        "cons_transport": 1500, "cons_health": 600, "cons_entertainment": 300,
        "cons_personal_care": 100, "cons_read": 20, "cons_education": 0, "cons_tobacco": 0,
        "cons_misc": 80}
PARTS = {"util": 300, "housop": 100, "pubtra": 50, "gasmo": 400}
OTHER = {"cash": 100, "lifins": 50, "retpen": 200}


def amounts(scale: float, pq_food: float = 0.0) -> dict[str, float]:
    """The spec's aggregates of one interview built by `fields(scale)`, computed by hand."""
    cats = {k: v * scale for k, v in BASE.items()}
    cats["cons_food"] += pq_food
    parts = {k: v * scale for k, v in PARTS.items()}
    parker = sum(cats.values())
    nondur = (cats["cons_food"] + cats["cons_alcohol"] + parts["util"] + parts["housop"]
              + parts["pubtra"] + parts["gasmo"] + cats["cons_personal_care"]
              + cats["cons_tobacco"] + cats["cons_misc"] + cats["cons_apparel"]
              + cats["cons_health"] + cats["cons_read"])
    return {"cons_parker_total": parker, "cons_nondurables": nondur,
            "cons_durables": parker - nondur, **cats}


def fields(scale: float, pq_food: float = 0.0) -> dict[str, str]:
    pq = {"FOOD": pq_food, "FDHOME": pq_food, "TOTEXP": pq_food} if pq_food else None
    return spending({k: v * scale for k, v in BASE.items()},
                    **{k: v * scale for k, v in PARTS.items()}, **OTHER, pq=pq)


def fillers(year: int, month: int, number: int) -> list[dict[str, str]]:
    return [fmli_row(f"100000{1}{number}", year, month, 1200, fields(0.05)),
            fmli_row(f"100000{2}{number}", year, month, 500000, fields(20.0))]


def build_survey(tmp: Path, packages: dict[int, dict], extra: dict[int, dict] | None = None,
                 years: range = range(2000, 2021)) -> Path:
    raw = tmp / "raw"
    for year, quarters in packages.items():
        write_package(raw / "interview", year, quarters, (extra or {}).get(year))
    survey = SurveyConfig(name="cex_interview", raw={
        "interview": str(raw / "interview"),
        "release_crosswalk": str(crosswalk(raw / "release_dates", years))})
    out = tmp / "intermediate"
    cex_interview.build(survey, raw, out)
    return out


def build(task: str, intermediate: Path, module) -> pd.DataFrame:
    cfg = load_task(task)
    ctx = BuildContext(task=cfg, intermediate_dir=intermediate, macro_context=macro_frame(2000,
                                                                                           2021))
    table = module.build_table(ctx)
    check_builder_columns(table, cfg)
    return table.set_index(["id", "time"])


def qi(year: int, quarter: int) -> int:
    return year * 4 + quarter


# --------------------------------------------------------------------------------------------
# cons_cex_total and cons_cex_categories: package 2019 (frame_2015, interviews numbered 1-4)

MONTHS = {1: 2, 2: 5, 3: 8, 4: 11}  # quarter -> interview month


@pytest.fixture(scope="module")
def panel_2019(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("p2019")
    quarters: dict[int, list] = {}
    for q, month in MONTHS.items():
        rows = fillers(2019, month, q)
        rows.append(fmli_row(f"100000{3}{q}", 2019, month, 40000,
                             fields(0.03 if q == 3 else 1.0 + 0.1 * q)))  # C: Aug Parker < 250
        rows.append(fmli_row(f"100000{4}{q}", 2019, month, 60000,
                             fields(1.0 + 0.1 * q, pq_food=100 if q == 2 else 0.0)))  # D
        if q != 3:  # E misses its August interview
            rows.append(fmli_row(f"100000{5}{q}", 2019, month, 50000, fields(0.9),
                                 AGE_REF="80", SEX_REF="2", MARITAL1="5", PERSLT18="0",
                                 FAM_SIZE="1", BLS_URBN="2", REF_RACE="2", EDUC_REF="13"))
        quarters[qi(2019, q)] = rows
    return build_survey(tmp, {2019: quarters})


def test_total_keeps_exactly_the_rows_the_spec_keeps(panel_2019):
    table = build("cons_cex_total", panel_2019, total)
    panel = "frame_2015:{}"
    expected = {(panel.format("1000003"), "2019-05-01"), (panel.format("1000004"), "2019-05-01"),
                (panel.format("1000004"), "2019-08-01"), (panel.format("1000004"), "2019-11-01"),
                (panel.format("1000005"), "2019-05-01")}
    # Fillers: trimmed each quarter; first interviews: no lag 1; C in Aug: Parker < 250, C in
    # Nov: its lag 1 (Aug) < 250; E in Nov: its previous interview is 6 months back.
    assert set(table.index) == expected
    steps = table.attrs["construction_steps"]
    fails = dict(zip(steps["filter"], steps["fails"], strict=True))
    assert fails["current_cons_parker_total_minimum"] == 1  # C, August
    assert fails["lag1_cons_parker_total_minimum"] == 1  # C, November


def test_total_targets_lags_and_baseline_equal_hand_sums(panel_2019):
    table = build("cons_cex_total", panel_2019, total)
    row = table.loc[("frame_2015:1000004", "2019-11-01")]
    now, lag1, lag2, lag3 = amounts(1.4), amounts(1.3), amounts(1.2, pq_food=100), amounts(1.1)
    for target in ("cons_parker_total", "cons_nondurables", "cons_durables"):
        assert row[target] == pytest.approx(now[target])
        assert row[f"{target}_lag1"] == pytest.approx(lag1[target])
        assert row[f"{target}_lag2"] == pytest.approx(lag2[target])
        assert row[f"{target}_lag3"] == pytest.approx(lag3[target])
    assert (row["fam_size"], row["n_kids"], row["n_adults"], row["age_ref"]) == (3, 1, 2, 45)
    assert (row["sex_ref"], row["race_ref_harmonized"], row["educ_ref_harmonized"],
            row["marital1"], row["region"], row["bls_urbn"]) == (
        "Man", "White", "Bachelor's degree", "Married", "South", "Urban")
    assert row["release_date"] == "2020-09-10"
    assert row["gdp_growth_qoq_lag4"] == 4.25
    full = dict(row) | {"id": "x", "time": "2019-11-01"}
    assert total.naive_baseline(full, load_task("cons_cex_total")) == [
        int(np.round(lag1[t])) for t in ("cons_parker_total", "cons_nondurables",
                                         "cons_durables")]
    first = table.loc[("frame_2015:1000004", "2019-05-01")]
    assert np.isnan(first["cons_parker_total_lag2"])  # Feb is the panel's first interview


def test_categories_sum_to_parker_and_use_category_lags(panel_2019):
    table = build("cons_cex_categories", panel_2019, categories)
    assert len(table) == 5
    row = table.loc[("frame_2015:1000004", "2019-08-01")]
    now, lag1 = amounts(1.3), amounts(1.2, pq_food=100)
    for column in BASE:
        assert row[column] == pytest.approx(now[column])
        assert row[f"{column}_lag1"] == pytest.approx(lag1[column])
    assert row["cons_food_lag1"] == pytest.approx(1200 + 100)  # current + previous quarter
    parts = sum(row[c] for c in BASE)
    assert parts == pytest.approx(now["cons_parker_total"])
    assert row["cpi_food_beverages_qoq_lag1"] == 1.25


def _prompt(task: str, table: pd.DataFrame, key: tuple[str, str], module) -> dict:
    cfg = load_task(task)
    row = dict(table.loc[key]) | {"id": key[0], "time": key[1]}
    system, user = module.render(row, cfg)
    check_prompt(system, user, cfg, int(key[1][5:7]))
    answer = module.reference_answer(row, cfg)
    return {"system": system, "user": user, "assistant": json.dumps(answer),
            "naive_baseline": json.dumps(module.naive_baseline(row, cfg))}


@pytest.mark.parametrize("task,module,key", [
    ("cons_cex_total", total, ("frame_2015:1000004", "2019-11-01")),
    ("cons_cex_categories", categories, ("frame_2015:1000005", "2019-05-01")),
])
def test_golden_prompt(panel_2019, task, module, key):
    record = _prompt(task, build(task, panel_2019, module), key, module)
    text = "\n\n".join([record["system"], record["user"], record["assistant"],
                        record["naive_baseline"]]) + "\n"
    assert text == (GOLDEN / f"{task}.txt").read_text()


# --------------------------------------------------------------------------------------------
# cons_cex_stimulus08: package 2008 (frame_2005, numbers 2-5) with expn08/rbt08.csv

STIMULUS_MONTHS = {qi(2008, 1): 3, qi(2008, 2): 6, qi(2008, 3): 9, qi(2008, 4): 12,
                   qi(2009, 1): 3}
RBT = ["NEWID", "CUID", "RBTMO", "RBTMO_", "RBTAMT", "RBTAMT_", "CHCKEFT", "CHCKEFT_",
       "HOWUSED", "HOWUSED_", "USDINTMO", "USDINTYR"]


@pytest.fixture(scope="module")
def stimulus(tmp_path_factory) -> pd.DataFrame:
    tmp = tmp_path_factory.mktemp("s2008")
    quarters = {}
    for n, (q, month) in enumerate(STIMULUS_MONTHS.items(), start=2):
        year = (q - 1) // 4
        rows = fillers(year, month, n) if n <= 5 else []
        if n <= 5:
            rows.append(fmli_row(f"200000{1}{n}", year, month, 45000, fields(1.0)))  # S1
            rows.append(fmli_row(f"200000{2}{n}", year, month, 55000, fields(1.1)))  # S2
        quarters[q] = rows
    payments = [
        {"NEWID": "20000013", "CUID": "2000001", "RBTMO": "5", "RBTAMT": "600", "CHCKEFT": "2"},
        # reported in December, paid in July: July is in September's window
        {"NEWID": "20000025", "CUID": "2000002", "RBTMO": "7", "RBTAMT": "300", "CHCKEFT": "1"},
        {"NEWID": "20000014", "CUID": "2000001", "RBTMO": "8", "RBTAMT": "NA", "CHCKEFT": "1"},
    ]
    for p in payments:
        p.update(RBTMO_="D", RBTAMT_="D", CHCKEFT_="D", HOWUSED="1", HOWUSED_="D")
    out = build_survey(tmp, {2008: quarters},
                       {2008: {"expn08/rbt08.csv": csv_bytes(RBT, payments)}})
    return build("cons_cex_stimulus08", out, policy)


def test_stimulus_payments_go_to_the_window_holding_the_payment_month(stimulus):
    rows = stimulus["rebate_amount_total"]
    assert rows[("frame_2005:2000001", "2008-06-01")] == 600  # May is in Jun's window
    assert rows[("frame_2005:2000001", "2008-09-01")] == 0
    assert stimulus.loc[("frame_2005:2000001", "2008-09-01"), "rebate_amount_total_lag1"] == 600
    assert stimulus.loc[("frame_2005:2000001", "2008-12-01"), "rebate_amount_total_lag2"] == 600
    assert rows[("frame_2005:2000002", "2008-09-01")] == 300  # reported in Dec, paid in Jul
    assert rows[("frame_2005:2000002", "2008-12-01")] == 0
    # the row without an amount was dropped by the survey's keep rule (RBTAMT > 0)
    assert set(stimulus.index.get_level_values("id")) == {"frame_2005:2000001",
                                                          "frame_2005:2000002"}
    late = stimulus["_stimulus_timing_group"]
    assert late[("frame_2005:2000002", "2008-09-01")] == "on_time_only_payment_reporter"
    assert late[("frame_2005:2000001", "2008-09-01")] == "on_time_only_payment_reporter"


def test_stimulus_golden_prompt(stimulus):
    record = _prompt("cons_cex_stimulus08", stimulus, ("frame_2005:2000001", "2008-12-01"),
                     policy)
    text = "\n\n".join([record["system"], record["user"], record["assistant"],
                        record["naive_baseline"]]) + "\n"
    assert text == (GOLDEN / "cons_cex_stimulus08.txt").read_text()


# --------------------------------------------------------------------------------------------
# cons_cex_rebate01: package 2001 (frame_1996) with the TAX013/TAX014 addendum

REBATE_MONTHS = {qi(2001, 1): 2, qi(2001, 2): 5, qi(2001, 3): 8, qi(2001, 4): 11,
                 qi(2002, 1): 2}
TAX = ["NEWID", "TAXQ1", "TAXQ1_", "TAXQ3", "TAXQ3_"] + [
    c for i in range(1, 6) for c in (f"TAXMO{i}", f"TAXMO{i}_", f"TAXAMT{i}", f"TAXAMT{i}_")]


def tax_row(newid: str, lead: str | None, checks: list[tuple[int, int]]) -> dict[str, str]:
    row = {"NEWID": newid, "TAXQ1": lead or "NA", "TAXQ1_": "D" if lead else "B",
           "TAXQ3": "2" if lead == "1" else "NA", "TAXQ3_": "D" if lead == "1" else "A"}
    for i in range(1, 6):
        month, amount = checks[i - 1] if i <= len(checks) else (None, None)
        row.update({f"TAXMO{i}": str(month) if month else "NA", f"TAXMO{i}_": "D" if month else "A",
                    f"TAXAMT{i}": str(amount) if amount else "NA",
                    f"TAXAMT{i}_": "D" if amount else "A"})
    return row


@pytest.fixture(scope="module")
def rebate(tmp_path_factory) -> pd.DataFrame:
    tmp = tmp_path_factory.mktemp("r2001")
    quarters = {}
    for n, (q, month) in enumerate(REBATE_MONTHS.items(), start=2):
        year = (q - 1) // 4
        rows = fillers(year, month, n) if n <= 5 else []
        for cu, income in ((1, 41000), (2, 42000), (3, 43000), (4, 44000)):
            if n <= 5:
                rows.append(fmli_row(f"300000{cu}{n}", year, month, income, fields(1.0)))
        quarters[q] = rows
    # Interview n: 2 = Feb 2001, 3 = May, 4 = Aug (TAX013), 5 = Nov (TAX014); Feb 2002 is the
    # next package's first quarter here, left out.
    q3 = [tax_row("30000014", "1", [(7, 600)]), tax_row("30000024", "2", []),
          tax_row("30000034", "2", []), tax_row("30000044", None, [])]
    q4 = [tax_row("30000015", "2", []), tax_row("30000025", "1", [(8, 300)]),
          tax_row("30000035", "1", [(7, 500)]), tax_row("30000045", "2", [])]
    for filler in ("1000001", "1000002"):
        q3.append(tax_row(f"{filler}4", "2", []))
        q4.append(tax_row(f"{filler}5", "2", []))
    folder = "intrvw01/intrvw01/Addendum - Tax Rebate"
    out = build_survey(tmp, {2001: quarters}, {2001: {
        f"{folder}/TAX013.csv": csv_bytes(TAX, q3), f"{folder}/TAX014.csv": csv_bytes(TAX, q4)}})
    return build("cons_cex_rebate01", out, policy)


def test_rebate_statuses_assignments_and_recall_shift(rebate):
    amount = rebate["rebate_amount_total"]
    p = "frame_1996:{}"
    assert amount[(p.format("3000001"), "2001-08-01")] == 600  # Jul check, Aug interview
    assert amount[(p.format("3000001"), "2001-05-01")] == 0  # window ends by June: known zero
    assert amount[(p.format("3000001"), "2001-11-01")] == 0  # valid "no"
    assert amount[(p.format("3000002"), "2001-11-01")] == 300  # Aug check, Nov window
    # CU 3: its Nov report has a July check, which falls in August's window; August said "no"
    # and November has no check of its own period -> recall shift to November.
    assert amount[(p.format("3000003"), "2001-11-01")] == 500
    assert amount[(p.format("3000003"), "2001-08-01")] == 0
    # CU 4: an unresolved August lead-in: August is left out, and November (whose lag 1 has no
    # resolved rebate) too; May keeps its known zero.
    kept = {t for i, t in rebate.index if i == p.format("3000004")}
    assert kept == {"2001-05-01"}
    assert rebate.loc[(p.format("3000001"), "2001-11-01"), "rebate_amount_total_lag1"] == 600
    assert rebate["_rebate_status"].isin(["valid_positive", "valid_zero"]).all()


def test_rebate_golden_prompt(rebate):
    record = _prompt("cons_cex_rebate01", rebate, ("frame_1996:3000001", "2001-11-01"), policy)
    text = "\n\n".join([record["system"], record["user"], record["assistant"],
                        record["naive_baseline"]]) + "\n"
    assert text == (GOLDEN / "cons_cex_rebate01.txt").read_text()
