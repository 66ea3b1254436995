"""cons_cex_sspay: the OASDI calendar, event time and histories (also on the real 2020 Diary
slice, outside the task's years), and the task on a hand-built 1995 Diary package.

Expected values are written out here from spec 10_tasks section 6 and the raw rows each test
builds; calendar facts are dates checked on a calendar.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.surveys.cex import diary as cex_diary
from hhx.tasks.build import check_builder_columns
from hhx.tasks.cex import cons_cex_sspay as sspay
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import check_prompt
from hhx.tasks.registry import load_task
from tests.helpers.cex_raw import crosswalk, diary_package, macro_frame, qredate

SHARED = Path(__file__).resolve().parents[3] / "shared"
DIARY20 = SHARED / "data" / "cex_diary" / "diary20"
GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def test_payment_calendar_moves_to_the_preceding_business_day():
    cal = sspay.oasdi_calendar(1986, 1996).set_index("payment_month")["scheduled_payment_date"]
    got = {m: cal[m].strftime("%Y-%m-%d") for m in cal.index}
    assert got["1986-05"] == "1986-05-02"  # Saturday 3rd -> Friday
    assert got["1990-09"] == "1990-08-31"  # Monday 3rd is Labor Day -> Friday 31 August
    assert got["1993-01"] == "1992-12-31"  # Sunday 3rd -> Friday 1st is New Year's Day
    assert got["1987-07"] == "1987-07-02"  # Friday 3rd is the observed Independence Day
    assert got["1995-06"] == "1995-06-02"  # Saturday
    assert got["1996-07"] == "1996-07-03"  # Wednesday: no move
    assert len(cal) == 132


def test_event_time_is_to_the_nearest_payment_ties_to_the_earlier():
    calendar = pd.DataFrame({"payment_month": ["a", "b"],
                             "normal_payment_date": pd.to_datetime(["2001-01-03", "2001-01-13"]),
                             "scheduled_payment_date": pd.to_datetime(["2001-01-03",
                                                                       "2001-01-13"])})
    days = pd.DataFrame({"diary_date": pd.to_datetime(["2001-01-08", "2001-01-09", "2001-01-01",
                                                       "2001-01-20"])})
    out = sspay.attach_events(days, calendar)
    assert out["event_time"].tolist() == [5, -4, -2, 7]  # the 8th: 5 days after / 5 before
    with pytest.raises(Exception, match="no scheduled payment within 17 days"):
        sspay.attach_events(pd.DataFrame({"diary_date": pd.to_datetime(["2001-03-01"])}),
                            calendar)


# --------------------------------------------------------------------------------------------
# The real 2020 slice (outside 1986-1996): dates, event time, histories


@pytest.fixture(scope="module")
def real_days(tmp_path_factory) -> pd.DataFrame:
    if not DIARY20.is_dir():
        pytest.skip("shared/data/cex_diary/diary20 is absent")
    out = tmp_path_factory.mktemp("real")
    survey = SurveyConfig(name="cex_diary", raw={"diary": str(DIARY20)})
    report = cex_diary.build(survey, out, out, require_all_quarters=False)
    daily = pd.read_parquet(report.outputs["cex_diary_daily"])
    for target, source in (("daily_total_expenditure", "daily_total_expenditure"),
                           ("daily_food_at_home", "daily_total_expenditure"),
                           ("daily_food_away_from_home", "daily_total_expenditure")):
        daily[target] = daily[source]
    return daily


@pytest.mark.slow
def test_real_2020_days_get_event_times_and_seven_day_histories(real_days):
    # From 2012 the files give no start day; about a tenth of the weeks' purchases pin it down.
    dated = real_days.loc[real_days["diary_date"].notna()].copy()
    assert len(dated) > 0.05 * len(real_days)
    events = sspay.attach_events(dated, sspay.oasdi_calendar(2019, 2021))
    # 2020 payment days: 3 May was a Sunday -> Friday 1 May; 3 October a Saturday -> 2 October.
    by_date = dict(zip(dated["diary_date"], events["event_time"], strict=True))
    for day, event in (("2020-05-01", 0), ("2020-05-04", 3), ("2020-05-20", -14),
                       ("2020-06-03", 0), ("2020-06-18", 15), ("2020-09-30", -2)):
        if pd.Timestamp(day) in by_date:
            assert by_date[pd.Timestamp(day)] == event, day
    history = sspay.add_history(real_days, years=[2020])
    # Few 2020 CUs have both weeks dated, so histories here run within a week: day k of a dated
    # week has k - 1 prior days, each exactly one day apart.
    within = history.loc[history["calendar_day_gap_lag1"].eq(1)]
    assert len(within) > 1000
    row = within.iloc[0]
    days = real_days.loc[real_days["cu_id"].eq(row["cu_id"]) & real_days["diary_date"].notna()]
    before = days.loc[days["diary_date"] < row["diary_date"]].sort_values("diary_date")
    assert row["daily_total_expenditure_lag1"] == pytest.approx(
        before["daily_total_expenditure"].iloc[-1])
    assert row["prior_observed_date_lag1"] == row["diary_date"] - pd.Timedelta(days=1)
    sixth = history.loc[history["diary_day_sequence"].eq(7) & history["diary_date"].notna()]
    assert sixth["calendar_day_gap_lag6"].dropna().eq(6).all()


# --------------------------------------------------------------------------------------------
# A hand-built 1995 package


HOUSEHOLD = {"AGE_REF": "68", "SEX_REF": "2", "MARITAL1": "2", "REF_RACE": "1", "EDUC_REF": "3",
             "REGION": "2", "BLS_URBN": "1", "SMSASTAT": "1", "CUTENURE": "2", "EMPLTYP1": "",
             "FAM_SIZE": "1", "PERSLT18": "0", "FINCBEFX": "24000", "FSS_RRX": "9600",
             "FSUPPX": "0", "PICK_UP": "01", "RESPSTAT": "1", "INCLASS": "04"}


def _cu(cu7: str, starts: list[dt.date], spend: dict[int, float], *, ss: bool,
        weight: str, household: dict | None = None, quarter: int = 2) -> tuple:
    """Weeks, members and purchases of one CU; `spend` maps day number (1-14) to that day's
    total, of which 40% food at home (UCC 010210), 20% food away (190110), the rest gasoline."""
    weeks, members, purchases = [], [], []
    values = {**HOUSEHOLD, **(household or {})}
    for w, start in enumerate(starts, start=1):
        newid = f"{cu7}{w}"
        weeks.append({**values, "NEWID": newid, "WEEKI": str(w), "WEEKN": str(len(starts)),
                      "STRTDAY": f"{start.day:02d}", "STRTMNTH": f"{start.month:02d}",
                      "STRTYEAR": str(start.year), "FINLWT21": weight, "quarter": quarter})
        members.append({"NEWID": newid, "MEMBNO": "1", "CU_CODE1": "1",
                        "ANYSSINC": "1" if ss else "2", "ANYRAIL": "2", "US_SUPP": "2",
                        "WHYNOWRK": "5", "quarter": quarter})
        for seq in range(1, 8):
            amount = spend.get(7 * (w - 1) + seq, 0.0)
            day = start + dt.timedelta(days=seq - 1)
            for share, ucc in ((0.4, "010210"), (0.2, "190110"), (0.4, "470111")):
                if amount:
                    purchases.append({"NEWID": newid, "COST": f"{amount * share:.2f}",
                                      "UCC": ucc, "QREDATE": qredate(day, seq, False),
                                      "quarter": quarter})
    return weeks, members, purchases


@pytest.fixture(scope="module")
def task_1995(tmp_path_factory) -> tuple[pd.DataFrame, Path]:
    tmp = tmp_path_factory.mktemp("sspay")
    # June 1995 pays on Friday the 2nd (the 3rd is a Saturday). R's second week, 3-9 June, is
    # 1-7 days after it and has seven prior days (27 May - 2 June).
    recipient = _cu("0101010", [dt.date(1995, 5, 27), dt.date(1995, 6, 3)],
                    {d: 10.0 * d for d in range(1, 15)}, ss=True, weight="21000.5")
    # Not a Social Security household, the year's two largest days and incomes.
    other = _cu("0202020", [dt.date(1995, 5, 27), dt.date(1995, 6, 3)],
                {3: 900.0, 4: 1000.0, **{d: 5.0 for d in range(5, 15)}}, ss=False,
                weight="30000.25", household={"FINCBEFX": "90000", "FSS_RRX": "0"})
    # A recipient with one diary week only (two-week quality fails).
    single = _cu("0303030", [dt.date(1995, 6, 3)], {d: 20.0 for d in range(1, 8)}, ss=True,
                 weight="15000.0")
    # A recipient whose days are nearest the (excluded) January payment.
    january = _cu("0404040", [dt.date(1995, 1, 1), dt.date(1995, 1, 8)],
                  {d: 12.0 for d in range(1, 15)}, ss=True, weight="18000.0", quarter=1)
    # A second recipient (the reference refuses a table with one analysis weight).
    second = _cu("0505050", [dt.date(1995, 5, 27), dt.date(1995, 6, 3)],
                 {d: 8.0 for d in range(1, 15)}, ss=True, weight="17000.0")
    parts = [recipient, other, single, january, second]
    raw = tmp / "raw"
    diary_package(raw / "bls", 1995, *[sum((p[i] for p in parts), []) for i in range(3)])
    survey = SurveyConfig(name="cex_diary", raw={
        "diary": str(raw / "bls"),
        "release_crosswalk": str(crosswalk(raw / "release_dates", range(1982, 2012)))})
    out = tmp / "intermediate"
    cex_diary.build(survey, raw, out)
    return out


def _build_task(intermediate: Path, years=range(1995, 1996)) -> pd.DataFrame:
    task = load_task("cons_cex_sspay")
    ctx = BuildContext(task=task, intermediate_dir=intermediate,
                       macro_context=macro_frame(1994, 1997))
    table = sspay.build_years(ctx, years)  # the hand-built package holds 1995 only
    check_builder_columns(table, task)
    return table


@pytest.mark.slow
def test_sspay_keeps_the_recipient_days_near_the_payment(task_1995):
    table = _build_task(task_1995).set_index("id")
    assert sorted(table.index) == sorted(f"1995:{cu}:199506{d:02d}" for d in range(3, 10)
                                         for cu in ("0101010", "0505050"))
    assert table["_event_time"].tolist() == [1, 2, 3, 4, 5, 6, 7] * 2
    row = table.loc["1995:0101010:19950605"]  # day 10 of the diary
    assert row["daily_total_expenditure"] == pytest.approx(100.0)
    assert row["daily_food_at_home"] == pytest.approx(40.0)
    assert row["daily_food_away_from_home"] == pytest.approx(20.0)
    for k in range(1, 8):
        assert row[f"daily_total_expenditure_lag{k}"] == pytest.approx(10.0 * (10 - k))
        assert row[f"daily_food_at_home_lag{k}"] == pytest.approx(4.0 * (10 - k))
    assert row["social_security_share"] == pytest.approx(0.4)
    assert (row["household_size"], row["n_adults"], row["children_under_18"]) == (1, 1, 0)
    assert (row["sex"], row["race"], row["education"], row["marital_status"], row["region"],
            row["urban_status"], row["home_tenure"], row["reference_person_work_status"]) == (
        "female", "White", "high school graduate", "widowed", "Midwest", "urban area",
        "owns a home without a mortgage", "retired")
    assert (row["current_day_of_week"], row["current_day_of_month"], row["current_month"]) == (
        "Monday", 5, "June")
    assert row["release_date"] == "1996-09-10"
    steps = table.attrs["construction_steps"]
    fails = dict(zip(steps["filter"], steps["fails"], strict=True))
    assert fails["nearest_payment_not_in_january"] > 0
    assert fails["two_source_week_records"] == 0  # the single-week CU fails earlier: no lags


@pytest.mark.slow
def test_days_of_other_source_years_are_counted_not_read(task_1995, tmp_path):
    """An intermediate that also holds another year's days (here: 1995's again, as 2001, half of
    them undated) gives the same table; the report counts those days as read and dropped."""
    name = f"{sspay.INTERMEDIATE}.parquet"
    days = pd.read_parquet(task_1995 / name)
    extra = days.assign(source_year=2001, source_day_id="2001:" + days["source_day_id"])
    extra.loc[extra.index[::2], "diary_date"] = pd.NaT
    wider = tmp_path / "wider"
    wider.mkdir()
    pd.concat([days, extra], ignore_index=True).to_parquet(wider / name, index=False)
    ctx = BuildContext(task=load_task("cons_cex_sspay"), intermediate_dir=wider,
                       macro_context=macro_frame(1994, 1997))
    read, (unread, _) = sspay.load_days(ctx, [1995])
    assert read["source_year"].eq(1995).all() and (len(read), unread) == (len(days), len(extra))
    alone, both = _build_task(task_1995), _build_task(wider)
    pd.testing.assert_frame_equal(alone, both)
    steps = {k: t.attrs["construction_steps"].set_index(["step", "filter"])
             for k, t in (("alone", alone), ("both", both))}
    start = ("Start from source observations", "")
    assert steps["both"].loc[start, "rows"] == 2 * steps["alone"].loc[start, "rows"]
    fails = {k: s.xs("", level="step")["fails"] for k, s in steps.items()}
    n, undated = len(extra), int(extra["diary_date"].isna().sum())
    assert fails["both"]["source_year_1986_1996"] == fails["alone"]["source_year_1986_1996"] + n
    assert fails["both"]["dated"] == fails["alone"]["dated"] + undated
    assert fails["both"]["event_time_within_7_days"] == (
        fails["alone"]["event_time_within_7_days"] + n)
    universe = ("Restrict universe", "")
    assert steps["both"].loc[universe, "rows"] == steps["alone"].loc[universe, "rows"]
    assert steps["both"].loc[universe, "dropped"] == steps["alone"].loc[universe, "dropped"] + n


def test_upper_tails_drop_values_strictly_above_the_year_p99():
    """101 reference days of 1995 with totals 0..100 (p99 = 99) and incomes 1000 + day."""
    day = pd.Timestamp("1995-03-01")
    reference = pd.DataFrame({"source_year": 1995, "diary_date": day,
                              "daily_total_expenditure": [float(v) for v in range(101)],
                              "annual_income_before_tax": [1000.0 + v for v in range(101)]})
    lag = {f"daily_total_expenditure_lag{k}": 1.0 for k in range(1, 8)}
    lag.update({f"prior_observed_date_lag{k}": day for k in range(1, 8)})
    pool = pd.DataFrame([
        {"diary_date": day, "daily_total_expenditure": 99.0, "annual_income_before_tax": 1099.0,
         **lag},                                                # equal to p99: kept
        {"diary_date": day, "daily_total_expenditure": 99.5, "annual_income_before_tax": 50.0,
         **lag},                                                # current above: dropped
        {"diary_date": day, "daily_total_expenditure": 1.0, "annual_income_before_tax": 1100.0,
         **lag},                                                # income above: dropped
        {"diary_date": day, "daily_total_expenditure": 1.0, "annual_income_before_tax": 50.0,
         **lag, "daily_total_expenditure_lag5": 100.0},         # a lag above: dropped
    ])
    masks = dict(sspay.upper_tails(pool, reference, "cons_cex_sspay", [1995]))
    keep = masks["daily_total_expenditure_upper_tail"] & masks[
        "history_total_expenditure_upper_tail"] & masks["annual_income_before_tax_upper_tail"]
    assert keep.tolist() == [True, False, False, False]


@pytest.mark.slow
def test_sspay_golden_prompt(task_1995):
    table = _build_task(task_1995).set_index("id")
    task = load_task("cons_cex_sspay")
    row = dict(table.loc["1995:0101010:19950605"]) | {"id": "1995:0101010:19950605"}
    system, user = sspay.render(row, task)
    check_prompt(system, user, task, int(row["time"][5:7]))
    text = "\n\n".join([system, user, json.dumps(sspay.reference_answer(row, task)),
                        json.dumps(sspay.naive_baseline(row, task))]) + "\n"
    assert text == (GOLDEN / "cons_cex_sspay.txt").read_text()


@pytest.mark.slow
def test_release_follows_the_reference_order_and_answers(tmp_path, monkeypatch):
    """build_task publishes in the builder's OUTPUT_ORDER (`_output_order`: the official keys
    source year, diary date, CU, week) and takes
    the answers from `reference_answer` (2-decimal floats, as the reference writes them)."""
    from hhx.tasks.build import build_task

    # Three quarters (the quarter split needs them): June, September and December 1995 pay on
    # Friday the 2nd, the 1st and the 1st; each CU's second week is days 1-7 after.
    parts = [_cu("0909090", [dt.date(1995, 5, 27), dt.date(1995, 6, 3)],
                 {d: 10.0 * d for d in range(1, 15)}, ss=True, weight="21000.5"),
             _cu("0101010", [dt.date(1995, 8, 26), dt.date(1995, 9, 2)],
                 {d: 7.0 for d in range(1, 15)}, ss=True, weight="17000.0", quarter=3),
             _cu("0505050", [dt.date(1995, 11, 25), dt.date(1995, 12, 2)],
                 {d: 9.0 for d in range(1, 15)}, ss=True, weight="16000.0", quarter=4)]
    raw = tmp_path / "raw"
    diary_package(raw / "bls", 1995, *[sum((p[i] for p in parts), []) for i in range(3)])
    survey = SurveyConfig(name="cex_diary", raw={
        "diary": str(raw / "bls"),
        "release_crosswalk": str(crosswalk(raw / "release_dates", range(1982, 2012)))})
    cex_diary.build(survey, raw, tmp_path / "inter")
    monkeypatch.setattr(sspay, "build_table", lambda ctx: sspay.build_years(ctx, [1995]))
    ctx = BuildContext(task=load_task("cons_cex_sspay"), intermediate_dir=tmp_path / "inter",
                       macro_context=macro_frame(1994, 1997), synthetic=True)
    bench = build_task(ctx, tmp_path / "hb", synthetic=True)
    table = pd.read_csv(tmp_path / "hb" / "tabular" / "cons_cex_sspay.csv", dtype=str)
    # 9 June (140, the year's largest day, above its p99) is trimmed.
    expected = ([f"1995:0909090:199506{d:02d}" for d in range(3, 9)]
                + [f"1995:0101010:199509{d:02d}" for d in range(2, 9)]
                + [f"1995:0505050:199512{d:02d}" for d in range(2, 9)])
    assert table["id"].tolist() == expected  # by date (id order would put 0101010 first)
    prompts = bench.prompts.set_index("id")
    assert prompts.loc["1995:0909090:19950605", "assistant"] == "[100.0, 40.0, 20.0]"
    assert prompts.loc["1995:0909090:19950605", "naive_baseline"] == "[90.0, 36.0, 18.0]"
