"""labor_psid_addedworker: the other partner's annual hours and earnings in the year of a
spouse's job loss and the year after (spec 20_tasks_labor_macro 6; the reference's
scripts/2_tasks/labor_psid_addedworker/).

Layers: hhx.tasks.psid.events. A shock in wave t (event year t - 1; time = <t-1>-12-31) is kept
when, in order:
1. exactly one adult lost a job; that adult had a partner; no other shock of the same household
   subject within one survey year; the household of wave t has exactly the two adults, both
   observed as adults in waves t - 1, t and t + 1;
2. targets: the non-displaced partner is labor-observed (work status, valid hours, valid
   earnings) in waves t and t + 1;
3. both adults' age, sex, family size and children present in wave t; both labor-observed in
   wave t - 1 with family income present; history waves t - 2, t - 3 while both adults are in
   the same household subject, labor-observed, with family income present;
4. both adults in the same household subject in t - 1, t, t + 1, aged 25-65 in all three, and
   both job-end questions asked in wave t;
5. every displayed history wave's family income strictly inside its survey year's p01/p99.
Targets: the partner's annual_hours and earn_tot_nd in waves t and t + 1 (calendar years t - 1
and t). release_date: the later of those two waves' release dates. History elapsed years =
event year - the wave's labor reference year. "You" is the non-displaced partner. No-change
answer: the partner's wave t - 1 hours and earnings, repeated; answer and baseline are float
lists in compact JSON, as the reference writes them.
Typing (reference 01_make_table.py builds rows of Python values, pandas types them): the four
targets (`float(...)`) and the profile and history values of the float64 adult layer are floats
(`2080.0`); history_lag{k}_elapsed_years_to_event is an int (`1`; a float when some row lacks
that wave).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import PromptRules
from hhx.tasks.prompting import (
    CLOSING_NO_DOLLARS,
    format_dollars,
    render_macro_paragraph,
    response_instruction,
)
from hhx.tasks.psid.common import Steps, public_table, years_ago
from hhx.tasks.psid.cons_psid_jobloss import (
    _has,
    _int,
    children,
    person,
    reason_clause,
    split_values,
    tenure,
    work,
)
from hhx.tasks.psid.events import (
    build_layers,
    episodes_by_person,
    inside_cutoffs,
    prior_episodes,
    records,
)

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, labor_psid_addedworker).
OUTPUT_ORDER = ("time:text", "_row_id:text")

TASK = "labor_psid_addedworker"
PROMPT_RULES = PromptRules(closing=CLOSING_NO_DOLLARS)
# Public numbers the reference builds as ints on every row; every other one is a float there
# (hhx.tasks.psid.common.public_table).
INTEGER_COLUMNS = [f"history_lag{k}_elapsed_years_to_event" for k in range(1, 4)]
JSON_SEPARATORS = (",", ":")  # the reference writes this task's records compactly
SYSTEM_PROMPT = ("You are an American adult making decisions about work, income, and household "
                 "finances.")
MIXED_YEAR_NOTE = (
    "The first two outcomes below cover the entire current calendar year. They can therefore "
    "include work before as well as after your spouse or partner lost their job. The last two "
    "outcomes cover one year from now.")
QUESTION = ("Given this information, what are your annual work hours and labor earnings in the "
            "current calendar year, and what will they be in one year?")
LEAD = ("Return only a valid JSON array with exactly four numbers, in this order: your annual "
        "work hours in the current calendar year; your annual labor earnings in the current "
        "calendar year; your annual work hours in one year; your annual labor earnings in one "
        "year. Earnings must be in current U.S. dollars.")
PROFILE = ["demo_age_gen", "demo_sex_label", "fam_size", "fam_size_chi"]
ADULT_FIELDS = ["person_id", "survey_year", "stable_household_subject_id", *PROFILE, "edu_year",
                "home_stat_label", "geo_region_label", "annual_work_status", "annual_hours",
                "annual_hours_valid", "earn_tot_nd", "annual_earnings_valid", "finc_tot_nd",
                "labor_reference_year", "displacement_ascertained", "release_date"]


def labor_observed(row: Mapping[str, Any]) -> bool:
    return (not pd.isna(row["annual_work_status"]) and not pd.isna(row["annual_hours"])
            and not pd.isna(row["earn_tot_nd"]) and int(row["annual_hours_valid"]) == 1
            and int(row["annual_earnings_valid"]) == 1)


def _adult(age: Any) -> bool:
    return not pd.isna(age) and 25 <= float(age) <= 65


def build_table(ctx: BuildContext) -> pd.DataFrame:
    task = ctx.task
    layers = build_layers(ctx)
    house, adults = layers.households, layers.adults
    steps = Steps("household-waves (SRC reference person, waves 1968-1992)", len(house))
    households = {(str(r["stable_household_subject_id"]), int(r["survey_year"])): r
                  for r in records(house, ["stable_household_subject_id", "survey_year",
                                           "reference_person_id", "partner_person_id",
                                           *CORE_MACRO_COLUMNS])}
    adult = {(int(r["person_id"]), int(r["survey_year"])): r
             for r in records(adults, ADULT_FIELDS)}
    cutoffs = {int(y): (p01, p99) for y, p01, p99 in layers.cutoffs.itertuples(index=False)}
    by_person = episodes_by_person(layers.episodes)
    episodes = {e["episode_id"]: e for e in records(layers.episodes)}
    shock_years: dict[str, list[int]] = {}
    for subject, year in zip(layers.shocks["stable_household_subject_id"],
                             layers.shocks["survey_year"], strict=True):
        shock_years.setdefault(str(subject), []).append(int(year))
    steps.note("job-loss shocks", len(layers.shocks))

    counts = dict.fromkeys(("window", "target", "predictors", "logic", "income"), 0)
    rows = []
    for shock in records(layers.shocks):
        ids = str(shock["episode_ids"]).split("|")
        if int(shock["number_displaced_adults"]) != 1 or len(ids) != 1:
            continue
        episode = episodes[ids[0]]
        if pd.isna(episode["partner_person_id"]):
            continue
        t, subject = int(shock["survey_year"]), str(shock["stable_household_subject_id"])
        lost, other = int(episode["person_id"]), int(episode["partner_person_id"])
        if any(y != t and abs(y - t) <= 1 for y in shock_years.get(subject, [])):
            continue
        home = households.get((subject, t))
        if home is None:
            continue
        members = {int(home["reference_person_id"])} | (
            {int(home["partner_person_id"])} if not pd.isna(home["partner_person_id"]) else set())
        waves = (t - 1, t, t + 1)
        if members != {lost, other} or any((p, y) not in adult for p in members for y in waves):
            continue
        counts["window"] += 1
        if not (labor_observed(adult[(other, t)]) and labor_observed(adult[(other, t + 1)])):
            continue
        counts["target"] += 1
        now_lost, now_other = adult[(lost, t)], adult[(other, t)]
        lag_lost, lag_other = adult[(lost, t - 1)], adult[(other, t - 1)]
        if (any(pd.isna(now_lost[c]) or pd.isna(now_other[c]) for c in PROFILE)
                or not (labor_observed(lag_lost) and labor_observed(lag_other))
                or pd.isna(lag_lost["finc_tot_nd"])):
            continue
        history = _earlier_waves(adult, lost, other, t, subject)
        counts["predictors"] += 1
        window = [adult[(p, y)] for p in (lost, other) for y in waves]
        if (any(str(r["stable_household_subject_id"]) != subject for r in window)
                or not all(_adult(r["demo_age_gen"]) for r in window)
                or int(now_lost["displacement_ascertained"]) != 1
                or int(now_other["displacement_ascertained"]) != 1):
            continue
        counts["logic"] += 1
        if not all(inside_cutoffs(a["finc_tot_nd"], a["survey_year"], cutoffs)
                   for a, _ in history):
            continue
        counts["income"] += 1
        rows.append(_row(shock, episode, history, now_lost, now_other, adult[(other, t + 1)],
                         home, by_person))
    _note_counts(steps, counts)
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise DataError(f"task {TASK}: no job-loss shock passes the filters; the panel has too "
                        "few couples with one partner's job loss")
    table = public_table(frame, task, __name__, integer_columns=INTEGER_COLUMNS)
    table.attrs["construction_steps"] = steps.rows
    return table


def _note_counts(steps: Steps, counts: dict[str, int]) -> None:
    """The construction steps: shocks left after each filter, in the filters' order."""
    for name, label in (
            ("window", "one displaced partnered adult, no shock within a year, pair observed "
                       "in t - 1, t, t + 1"),
            ("target", "targets: partner labor-observed in t and t + 1"),
            ("predictors", "predictors: profiles, t - 1 labor and family income present"),
            ("logic", "same pair, ages 25-65, job-end questions asked in t"),
            ("income", "trim: displayed family income strictly inside p01/p99")):
        steps.note(label, counts[name])


def _earlier_waves(adult: dict[tuple[int, int], Any], lost: int, other: int, t: int,
                   subject: str) -> list[tuple[Any, Any]]:
    """The pair's waves t - 1, then t - 2 and t - 3 while each is the same household's, both
    labor-observed and with the family income shown (the first gap ends the history)."""
    history: list[tuple[Any, Any]] = [(adult[(lost, t - 1)], adult[(other, t - 1)])]
    for older in (t - 2, t - 3):
        pair: tuple[Any, Any] = (adult.get((lost, older)), adult.get((other, older)))
        if (pair[0] is None or pair[1] is None
                or any(str(r["stable_household_subject_id"]) != subject for r in pair)
                or not (labor_observed(pair[0]) and labor_observed(pair[1]))
                or pd.isna(pair[0]["finc_tot_nd"])):
            break
        history.append(pair)
    return history


def _row(shock: Mapping[str, Any], episode: Mapping[str, Any], history: list, now_lost: Mapping,
         now_other: Mapping, next_other: Mapping, home: Mapping, by_person: dict) -> dict:
    event_year = int(shock["assigned_event_year"])
    years, reasons = prior_episodes(dict(episode), by_person, event_year)
    row: dict[str, Any] = {
        "id": shock["household_shock_id"], "_row_id": shock["household_shock_id"],
        "time": f"{event_year}-12-31",
        "release_date": max(str(now_other["release_date"])[:10],
                            str(next_other["release_date"])[:10]),
        "partner_annual_hours_event_year": float(now_other["annual_hours"]),
        "partner_annual_earnings_event_year": float(now_other["earn_tot_nd"]),
        "partner_annual_hours_following_year": float(next_other["annual_hours"]),
        "partner_annual_earnings_following_year": float(next_other["earn_tot_nd"]),
        "current_you_demo_age_gen": now_other["demo_age_gen"],
        "current_you_demo_sex_label": now_other["demo_sex_label"],
        "current_you_edu_year": now_other["edu_year"],
        "current_partner_demo_age_gen": now_lost["demo_age_gen"],
        "current_partner_demo_sex_label": now_lost["demo_sex_label"],
        "current_partner_edu_year": now_lost["edu_year"],
        "current_fam_size": now_other["fam_size"],
        "current_fam_size_chi": now_other["fam_size_chi"],
        "current_home_stat_label": now_other["home_stat_label"],
        "current_geo_region_label": now_other["geo_region_label"],
        "displacement_reason": episode["displacement_reason"],
        "prior_displacement_years_ago": years, "prior_displacement_reasons": reasons,
        **{c: home[c] for c in CORE_MACRO_COLUMNS},
    }
    for k in range(1, 4):
        lost, other = history[k - 1] if k <= len(history) else (None, None)
        p = f"history_lag{k}_"
        row[f"{p}elapsed_years_to_event"] = (
            event_year - int(lost["labor_reference_year"]) if lost is not None else None)
        for who, r in (("nondisplaced_partner", other), ("displaced", lost)):
            row[f"{p}{who}_annual_hours"] = r["annual_hours"] if r is not None else None
            row[f"{p}{who}_earn_tot_nd"] = r["earn_tot_nd"] if r is not None else None
        row[f"{p}finc_tot_nd"] = lost["finc_tot_nd"] if lost is not None else None
    return row


# --------------------------------------------------------------------------------------------
# Prompt (the reference renderer's sentences)


def _background(row: Mapping[str, Any]) -> str:
    parts = [
        f"You are {person(row['current_you_demo_age_gen'], row['current_you_demo_sex_label'])}.",
        "Your spouse or partner is "
        f"{person(row['current_partner_demo_age_gen'], row['current_partner_demo_sex_label'])}.",
    ]
    size = _int(row["current_fam_size"])
    parts.append(f"Your household has {size} {'person' if size == 1 else 'people'}, "
                 f"{children(row['current_fam_size_chi'])}.")
    for subject, column in (("You", "current_you_edu_year"),
                            ("Your spouse or partner", "current_partner_edu_year")):
        if _has(row.get(column)):
            parts.append(f"{subject} completed {_int(row[column])} years of schooling.")
    home = tenure(row.get("current_home_stat_label"))
    if home:
        parts.append(home)
    if _has(row.get("current_geo_region_label")):
        parts.append(f"You live in the {str(row['current_geo_region_label']).strip()}.")
    return "Here is some background information about yourself and your household. " + " ".join(
        parts)


def _history(row: Mapping[str, Any]) -> str:
    depth = sum(1 for k in range(1, 4) if _has(row.get(f"history_lag{k}_elapsed_years_to_event")))
    sentences = []
    for k in range(depth, 0, -1):
        p = f"history_lag{k}_"
        body = " ".join([
            work("You", row[f"{p}nondisplaced_partner_annual_hours"],
                 row[f"{p}nondisplaced_partner_earn_tot_nd"]),
            work("Your spouse or partner", row[f"{p}displaced_annual_hours"],
                 row[f"{p}displaced_earn_tot_nd"]),
            f"Your total family income was {format_dollars(float(row[f'{p}finc_tot_nd']))}.",
        ])
        sentences.append(f"{years_ago(row[f'{p}elapsed_years_to_event'], TASK)}, "
                         f"{body[0].lower()}{body[1:]}")
    return ("Here is your household's work and income history. Note that $ denotes amounts in "
            "U.S. dollars. " + " ".join(sentences))


def _event(row: Mapping[str, Any]) -> str:
    sentences = ["During the current calendar year, your spouse or partner lost their job "
                 f"{reason_clause(str(row['displacement_reason']), partner=True)}."]
    years = split_values(row.get("prior_displacement_years_ago"))
    reasons = split_values(row.get("prior_displacement_reasons"))
    if len(years) != len(reasons):
        raise DataError(f"task {TASK} id {row.get('id')!r}: prior job-loss years and reasons "
                        "differ in number")
    sentences += [f"Your spouse or partner also lost a job {years_ago(y, TASK, lower=True)} "
                  f"{reason_clause(r, partner=True)}." for y, r in zip(years, reasons, strict=True)]
    return " ".join(sentences)


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    user = "\n\n".join([_background(row), _history(row), render_macro_paragraph(row),
                        _event(row), MIXED_YEAR_NOTE, QUESTION,
                        response_instruction(task, lead=LEAD)])
    return SYSTEM_PROMPT, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [float(row[c]) for c in task.targets]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: the partner's wave t - 1 hours and earnings, for both years."""
    hours = float(row["history_lag1_nondisplaced_partner_annual_hours"])
    earnings = float(row["history_lag1_nondisplaced_partner_earn_tot_nd"])
    return [hours, earnings, hours, earnings]
