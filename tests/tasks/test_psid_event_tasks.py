"""PSID job-loss tasks (cons_psid_jobloss, labor_psid_addedworker): one hand-built SRC world
through hhx.surveys.psid.shelf and both task builders. Expected rows are worked out from the spec
(10_tasks 11, 20_tasks_labor_macro 6) and the reference's rules, not read from the builders.

The world, waves 1976-1985 (annual): one-person families 1001 ... 8001 (born 1940, family income
20,000 + 1,000 i, so 1 and 8 are each year's extremes, earnings 15,000 + 1,000 i, hours
2,000 + 10 i, food at home 3,000 + 100 i + 10 (wave - 1976), away 1,000); 3001 loses a job
(layoff, employed route) reported in 1982; 6001 is born 1910 (over 65); 7001 reports no food.
Couples c = 9, 10, 11: c001 (reference person, born 1945) and c002 (spouse, born 1947), family
income 24,500; c001 loses a job (plant closure, unemployed route) reported in 1983, 1981, 1979;
the spouse works 1,000 + 10 (wave - 1976) hours for 8,000 + 100 (wave - 1976) dollars, 1,500
hours in the wave after the report."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from hhx.tasks.build import build_task
from tests.helpers.psid_world import World, context, main_study, release_date

pytestmark = pytest.mark.slow  # the world is built through the survey builder (seconds)

GOLDEN = __import__("pathlib").Path(__file__).parents[1] / "golden"
WAVES = range(1976, 1986)
ZERO_CODES = {"job_end_reason_employed_rp": 0.0, "job_end_reason_unemployed_rp": 0.0}
SPOUSE_CODES = {"job_end_reason_employed_sp": 0.0, "job_end_reason_unemployed_sp": 0.0}
COUPLES = {9: 1983, 10: 1981, 11: 1979}  # couple -> survey year of the reference's report
SPOUSE_ASKED = [1976, *range(1979, 1986)]  # the spouse's job-end questions


def _food_home(i: int, wave: int) -> float:
    return 3_000.0 + 100 * i + 10 * (wave - 1976)


@pytest.fixture(scope="module")
def event_world(tmp_path_factory):
    world = World()
    for i in range(1, 9):
        world.person(i * 1000 + 1, birth=1910 if i == 6 else 1940)
    for c in COUPLES:
        world.person(c * 1000 + 1, birth=1945)
        world.person(c * 1000 + 2, sex=2, birth=1947)
    for wave in WAVES:
        for i in range(1, 9):
            pid = i * 1000 + 1
            world.family(wave, {pid: 1}, finc_tot_nd=20_000.0 + 1_000 * i,
                         earn_tot_nd=15_000.0 + 1_000 * i, edu_year=12.0, emp_work=1)
            codes = dict(ZERO_CODES)
            if pid == 3001 and wave == 1982:
                codes["job_end_reason_employed_rp"] = 3.0
            food = {} if i == 7 else {"food_at_home_family": _food_home(i, wave),
                                      "food_away_family": 1_000.0, "food_stamps_family": 0.0}
            main_study(world, [pid], wave, codes=codes, annual_hours_rp=2_000.0 + 10 * i, **food)
        k = wave - 1976
        for c, report in COUPLES.items():
            rp, sp = c * 1000 + 1, c * 1000 + 2
            world.family(wave, {rp: 1, sp: 2}, finc_tot_nd=24_500.0,
                         earn_tot_nd={rp: 20_000.0, sp: 8_000.0 + 100 * k}, edu_year=14.0,
                         emp_work=1)
            codes = dict(ZERO_CODES) | (SPOUSE_CODES if wave in SPOUSE_ASKED else {})
            if wave == report:
                codes["job_end_reason_unemployed_rp"] = 1.0
            main_study(world, [rp, sp], wave, codes=codes, annual_hours_rp=2_100.0,
                       annual_hours_sp=1_500.0 if wave == report + 1 else 1_000.0 + 10 * k,
                       food_at_home_family=_food_home(c, wave), food_away_family=1_000.0,
                       food_stamps_family=0.0)
    return world.build(tmp_path_factory.mktemp("events"))


def _control_wave(subject: str, eligible: list[int]) -> int:
    """The reference's control draw: the smallest sha256("42018|<subject>|<T>")."""
    return min(eligible, key=lambda t: hashlib.sha256(f"42018|{subject}|{t}".encode()).hexdigest())


@pytest.fixture(scope="module")
def jobloss(event_world, tmp_path_factory):
    """The task built and published once (table as published, prompts, build report)."""
    return build_task(context("cons_psid_jobloss", event_world),
                      tmp_path_factory.mktemp("jobloss"), synthetic=True)


@pytest.fixture(scope="module")
def addedworker(event_world, tmp_path_factory):
    return build_task(context("labor_psid_addedworker", event_world),
                      tmp_path_factory.mktemp("addedworker"), synthetic=True)


def test_jobloss_events_controls_and_filters(jobloss):
    rows = {r["id"]: r for r in jobloss.table.to_dict("records")}
    want = {"psid_household_shock_psid_single_3001_1982",
            *(f"psid_household_shock_psid_pair_{c}001_{c}002_{t}" for c, t in COUPLES.items())}
    for i in (2, 3, 4, 5):  # 1, 8: income trims; 6: over 65; 7: no food
        # no shock in the wave, no earlier report (3001 reports in 1982)
        eligible = [t for t in WAVES if not (i == 3 and t >= 1982)]
        t = _control_wave(f"psid_single_{i}001", eligible)
        if t >= 1978:  # needs the waves T - 1 and T - 2
            want.add(f"psid_control_psid_single_{i}001_{t}")
    for c, report in COUPLES.items():  # both adults asked, up to the report (not its wave)
        t = _control_wave(f"psid_pair_{c}001_{c}002", [y for y in SPOUSE_ASKED if y < report])
        if t >= 1978:
            want.add(f"psid_control_psid_pair_{c}001_{c}002_{t}")
    assert set(rows) == want

    r = rows["psid_household_shock_psid_single_3001_1982"]
    assert r["time"] == "1981-12-31" and r["release_date"] == release_date(1982)
    assert r["annual_food_spending"] == _food_home(3, 1982) + 1_000  # 4,360
    assert r["observation_type"] == "event" and r["household_structure"] == "unpartnered"
    assert r["reference_current_displacement_reasons"] == "layoff_or_firing"
    assert pd.isna(r["partner_current_displacement_reasons"])  # "" is an empty CSV field
    # history: T - 2, T - 3, T - 4 (1980, 1979, 1978)
    assert [r[f"history_lag{k}_elapsed_years"] for k in (1, 2, 3)] == [2, 3, 4]
    assert [r[f"history_lag{k}_annual_food_spending"] for k in (1, 2, 3)] == [
        _food_home(3, y) + 1_000 for y in (1980, 1979, 1978)]
    assert r["history_lag1_reference_annual_hours"] == 2_030
    assert r["history_lag1_reference_finc_tot_nd"] == 23_000
    assert r["current_reference_demo_age_gen"] == 41 and r["current_reference_demo_sex_label"] == "Male"

    pair = rows["psid_household_shock_psid_pair_9001_9002_1983"]
    assert pair["household_structure"] == "partnered"
    assert pair["reference_current_displacement_reasons"] == "plant_closure_or_employer_move"
    assert pair["history_lag1_partner_annual_hours"] == 1_050  # wave 1981
    assert pair["history_lag1_partner_earn_tot_nd"] == 8_500
    assert pair["current_partner_demo_age_gen"] == 35
    steps = pd.read_csv(jobloss.root / "build_reports" / "cons_psid_jobloss_steps.csv")
    assert steps["rows"].iloc[-1] == len(rows) and (steps["dropped"] >= 0).all()
    # 1001 and 8001's controls fall to the income trim, 6001's to the age rule, 7001's to food
    assert steps["dropped"].iloc[-3:].sum() >= 1


def test_jobloss_prompt_answer_and_baseline(jobloss):
    record = jobloss.prompts.set_index("id").loc["psid_household_shock_psid_single_3001_1982"]
    assert record["assistant"] == "[4360.0]"  # a float list, compact, as the reference writes
    assert record["naive_baseline"] == "[4340.0]"  # the latest positive history value (1980)
    golden = (GOLDEN / "cons_psid_jobloss.txt").read_text()
    assert record["system"] + "\n---\n" + record["user"] + "\n" == golden
    line = (jobloss.root / "prompts" / "cons_psid_jobloss.jsonl").read_text().splitlines()[0]
    assert line.startswith('{"id":"') and '", "' not in line  # compact separators


def test_addedworker_row_targets_and_history(addedworker):
    rows = {r["id"]: r for r in addedworker.table.to_dict("records")}
    # the single adult's job loss (3001) has no partner: only the couples' shocks stay
    assert set(rows) == {f"psid_household_shock_psid_pair_{c}001_{c}002_{t}"
                         for c, t in COUPLES.items()}
    r = rows["psid_household_shock_psid_pair_9001_9002_1983"]
    assert r["time"] == "1982-12-31" and r["release_date"] == release_date(1984)
    assert [r["partner_annual_hours_event_year"], r["partner_annual_earnings_event_year"],
            r["partner_annual_hours_following_year"],
            r["partner_annual_earnings_following_year"]] == [1_070, 8_700, 1_500, 8_800]
    assert [r[f"history_lag{k}_elapsed_years_to_event"] for k in (1, 2, 3)] == [1, 2, 3]
    assert r["history_lag1_nondisplaced_partner_annual_hours"] == 1_060
    assert r["history_lag1_displaced_earn_tot_nd"] == 20_000
    assert r["current_you_demo_sex_label"] == "Female" and r["current_you_demo_age_gen"] == 36
    assert r["displacement_reason"] == "plant_closure_or_employer_move"
    assert np.isclose(r["history_lag3_finc_tot_nd"], 24_500)


def test_addedworker_prompt(addedworker):
    record = addedworker.prompts.set_index("id").loc["psid_household_shock_psid_pair_9001_9002_1983"]
    assert json.loads(record["assistant"]) == [1070.0, 8700.0, 1500.0, 8800.0]
    assert record["naive_baseline"] == "[1060.0,8600.0,1060.0,8600.0]"
    golden = (GOLDEN / "labor_psid_addedworker.txt").read_text()
    assert record["system"] + "\n---\n" + record["user"] + "\n" == golden
