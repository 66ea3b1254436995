"""PSID panel tasks (cons_psid_wealth, house_psid_owner, income_psid_earnings): hand-built
families through hhx.surveys.psid.shelf and the task builders; every expected value below is worked
out from the spec (10_tasks 7-10) and the reference's rules, not from the builders."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from hhx.tasks.build import build_task
from hhx.tasks.psid import cons_psid_wealth, house_psid_owner, income_psid_earnings
from hhx.tasks.registry import load_task
from tests.helpers.psid_world import World, context, macro_value, release_date

pytestmark = pytest.mark.slow  # each world is built through the survey builder (seconds)

GOLDEN = __import__("pathlib").Path(__file__).parents[1] / "golden"


def _rows(table: pd.DataFrame) -> dict[tuple[str, str], dict]:
    return {(r["id"], r["time"]): r for r in table.to_dict("records")}


# --------------------------------------------------------------------------------------------
# cons_psid_wealth


@pytest.fixture(scope="module")
def wealth_world(tmp_path_factory):
    """Seven one-person families (reference persons 1001 ... 7001) in 1997-2005. Income
    20,000 + 5,000 i; net worth (1999, 2001, 2003 only) 100,000 i + 1,000 (wave - 1999), so
    families 1 and 7 sit at the yearly extremes; family 5 has a 1997 income of 900,000 (the
    1997 maximum), family 2 no metro label."""
    world = World()
    for i in range(1, 8):
        world.person(i * 1000 + 1, birth=1950 + i, sex=1 + i % 2, race=1 + i % 4)
    for wave in (1997, 1999, 2001, 2003, 2005):
        for i in range(1, 8):
            income = 900_000.0 if (i == 5 and wave == 1997) else 20_000.0 + 5_000 * i
            worth = np.nan if wave == 1997 else 100_000.0 * i + 1_000 * (wave - 1999)
            world.family(wave, {i * 1000 + 1: 1}, finc_tot_nd=income, wlth_tot_net_nd=worth,
                         wlth_savi_net_nd=worth / 10, wlth_inve_net_nd=worth / 5,
                         wlth_home_net_nd=0.0 if np.isnan(worth) else 1_000.0 * i,
                         wlth_odeb_net_nd=500.0, geo_metro=np.nan if i == 2 else 1.0,
                         home_stat=1 if i == 4 else 2, fam_size_chi=float(i % 3))
    return world.build(tmp_path_factory.mktemp("wealth"))


def test_wealth_rows_targets_and_trims(wealth_world):
    table = cons_psid_wealth.build_table(context("cons_psid_wealth", wealth_world))
    rows = _rows(table)
    # 1997: no net worth; 2005: no next wave; families 1, 7 trimmed (extremes every year);
    # family 5: its 1997 income is that year's maximum, shown as lag 1, 2, 3 (1999-2003).
    assert sorted(rows) == sorted((f"{i}001", f"{y}-01-01") for i in (2, 3, 4, 6)
                                  for y in (1999, 2001, 2003))
    r = rows[("3001", "1999-01-01")]
    assert r["wlth_tot_net_nd_next_wave"] == 302_000  # family 3's 2001 net worth
    assert r["release_date"] == release_date(2001)
    assert r["wlth_tot_net_nd"] == 300_000 and r["finc_tot_nd"] == 35_000
    assert r["history_lag1_years_ago"] == 2 and r["history_lag1_finc_tot_nd"] == 35_000
    assert pd.isna(r["history_lag1_wlth_tot_net_nd"]) and pd.isna(r["history_lag2_years_ago"])
    assert r["home_stat"] == "Pays rent" and r["history_lag1_home_stat"] == "Pays rent"
    assert r["demo_sex"] == "Female" and r["race_eth_maj_col"] == "Hispanic"
    assert r["fam_partnered"].startswith("No, reference person has no spouse")
    assert rows[("2001", "2001-01-01")]["geo_metro"] is pd.NA or pd.isna(
        rows[("2001", "2001-01-01")]["geo_metro"])
    later = rows[("4001", "2001-01-01")]
    assert later["history_lag2_years_ago"] == 4 and later["history_lag1_wlth_tot_net_nd"] == 400_000
    assert later["home_stat"] == "Owns home"
    origin = 2001 * 4 + 1
    assert later["house_price_growth_qoq_lag1"] == macro_value("house_price_growth_qoq_lag1",
                                                               origin)
    steps = pd.DataFrame(table.attrs["construction_steps"])
    assert steps["rows"].iloc[0] == 35 and steps["rows"].iloc[-1] == 12
    assert (steps["dropped"] >= 0).all()


def test_wealth_prompt_and_baseline(wealth_world, tmp_path):
    bench = build_task(context("cons_psid_wealth", wealth_world), tmp_path, synthetic=True)
    prompts = bench.prompts.set_index("id")
    record = prompts.loc["3001"]
    record = record[record["time"] == "2001-01-01"].iloc[0] if isinstance(
        record, pd.DataFrame) else record
    assert json.loads(record["assistant"]) == [304_000]
    assert json.loads(record["naive_baseline"]) == [302_000]
    golden = (GOLDEN / "cons_psid_wealth.txt").read_text()
    assert record["system"] + "\n---\n" + record["user"] + "\n" == golden
    assert record["user"].endswith("Return only a valid JSON array containing exactly one "
                                   "integer, with no explanatory text. Your output must follow "
                                   "this exact array structure: [v_1]. Replace every v "
                                   "placeholder with a single number.")
    table = bench.table  # the public table as published
    assert list(table.columns) == ["id", "time", "release_date",
                                   *load_task("cons_psid_wealth").targets,
                                   *load_task("cons_psid_wealth").prompt_predictors]


# --------------------------------------------------------------------------------------------
# house_psid_owner


@pytest.fixture(scope="module")
def owner_world(tmp_path_factory):
    """Nine one-person families in 1980-1983 (reference persons 1001 ... 9001, born 1940 + i):
    income 10,000 i (real dollars). Renters except family 9; family 3 buys in 1982, family 4
    moves to a home it neither owns nor rents in 1981, family 5 is 80 in 1980, family 6 has
    no 1981 wave, family 7 is partnered from 1981."""
    world = World()
    for i in range(1, 10):
        world.person(i * 1000 + 1, birth=1900 if i == 5 else 1940 + i)
    world.person(7002, sex=2, birth=1958)
    for wave in (1980, 1981, 1982, 1983):
        for i in range(1, 10):
            if i == 6 and wave == 1981:
                continue
            home = 1 if i == 9 or (i == 3 and wave >= 1982) else 3 if (i == 4 and wave == 1981) \
                else 2
            members = {i * 1000 + 1: 1, **({7002: 2} if i == 7 and wave >= 1981 else {})}
            world.family(wave, members, finc_tot_rd=10_000.0 * i, home_stat=home,
                         wlth_tot_net_rd=np.nan, fam_size_chi=1.0 if wave >= 1982 else 0.0)
    return world.build(tmp_path_factory.mktemp("owner"))


def test_owner_universe_target_and_changes(owner_world):
    table = house_psid_owner.build_table(context("house_psid_owner", owner_world))
    rows = _rows(table)
    # income trims drop families 1 and 9 (yearly extremes; 9 owns anyway); 5 is over 75;
    # 1983 has no next wave; family 6 has no 1981 wave (1980 -> 1981 not contiguous, 1981 none).
    want = {(f"{i}001", f"{y}-01-01") for i in (2, 3, 4, 7, 8) for y in (1980, 1981, 1982)}
    want -= {("3001", "1982-01-01"), ("3001", "1983-01-01")}  # owner from 1982: not a renter
    want -= {("4001", "1981-01-01")}  # neither owns nor rents in 1981
    want |= {("6001", "1982-01-01")}
    assert set(rows) == want
    assert rows[("3001", "1981-01-01")]["becomes_owner_next_wave"] == "yes"
    assert rows[("3001", "1980-01-01")]["becomes_owner_next_wave"] == "no"
    assert rows[("4001", "1980-01-01")]["becomes_owner_next_wave"] == "no"  # tenure 3 -> no
    r = rows[("7001", "1981-01-01")]
    assert r["forecast_horizon_years"] == 1 and r["release_date"] == release_date(1982)
    assert (r["lag1_family_size_change"], r["lag1_partnered_change"],
            r["lag1_children_change"]) == (1, 1, 0)
    assert r["fam_partnered"].startswith("Yes") and r["history_lag1_years_ago"] == 1
    assert rows[("7001", "1982-01-01")]["lag1_children_change"] == 1
    assert pd.isna(rows[("6001", "1982-01-01")]["history_lag1_years_ago"])
    assert pd.isna(rows[("6001", "1982-01-01")]["lag1_family_size_change"])


def test_owner_prompt(owner_world, tmp_path):
    bench = build_task(context("house_psid_owner", owner_world), tmp_path, synthetic=True)
    record = bench.prompts[(bench.prompts["id"] == "7001")
                           & (bench.prompts["time"] == "1981-01-01")].iloc[0]
    assert json.loads(record["assistant"]) == ["no"] and json.loads(record["naive_baseline"]) == [
        "no"]
    golden = (GOLDEN / "house_psid_owner.txt").read_text()
    assert record["system"] + "\n---\n" + record["user"] + "\n" == golden


# --------------------------------------------------------------------------------------------
# income_psid_earnings


@pytest.fixture(scope="module")
def earnings_world(tmp_path_factory):
    """Sample persons 1001 ... 7001 (born 1950 + i) current 1979-1991, earnings 10,000 i +
    100 (wave - 1979); person 2001 has no 1985 row, person 6001 is a non-sample person."""
    world = World()
    for i in range(1, 8):
        world.person(i * 1000 + 1, birth=1950 + i, sampstat=0 if i == 6 else 1)
    for wave in range(1979, 1992):
        for i in range(1, 8):
            if i == 2 and wave == 1985:
                continue
            world.family(wave, {i * 1000 + 1: 1}, earn_tot_nd=10_000.0 * i + 100 * (wave - 1979),
                         finc_tot_nd=12_000.0 * i, edu_year_max=12.0, edu_level_max=1,
                         emp_work=1, occ_1970c=65.0)
    return world.build(tmp_path_factory.mktemp("earnings"))


def test_earnings_targets_and_filters(earnings_world):
    table = income_psid_earnings.build_table(context("income_psid_earnings", earnings_world))
    rows = _rows(table)
    # base waves need +2, +4, +10 rows: 1979-1981; person 2 lacks 1985 (the +4 of 1981);
    # 1 and 7 trimmed (yearly extremes); 6 is not a sample person.
    want = {(f"{i}001", f"{y}-01-01") for i in (3, 4, 5) for y in (1979, 1980, 1981)}
    assert set(rows) == want | {("2001", "1979-01-01"), ("2001", "1980-01-01")}
    r = rows[("3001", "1980-01-01")]
    assert [r["earn_tot_nd_2y"], r["earn_tot_nd_4y"], r["earn_tot_nd_10y"]] == [30_300, 30_500,
                                                                               31_100]
    assert r["release_date"] == release_date(1990)
    assert r["occ_major_harmonized"] == "Professional or managerial occupation"
    assert r["edu_level_max"] == "Completed high school, did not attend college"
    assert r["emp_work"] == "Currently working"


def test_earnings_prompt(earnings_world, tmp_path):
    bench = build_task(context("income_psid_earnings", earnings_world), tmp_path, synthetic=True)
    record = bench.prompts[(bench.prompts["id"] == "3001")
                           & (bench.prompts["time"] == "1980-01-01")].iloc[0]
    assert json.loads(record["assistant"]) == [30_300, 30_500, 31_100]
    assert json.loads(record["naive_baseline"]) == [30_100] * 3
    golden = (GOLDEN / "income_psid_earnings.txt").read_text()
    assert record["system"] + "\n---\n" + record["user"] + "\n" == golden
