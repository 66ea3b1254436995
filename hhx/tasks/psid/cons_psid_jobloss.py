"""cons_psid_jobloss: annual food spending of households after a job loss, and of matched
controls (spec 10_tasks 11; the reference's scripts/2_tasks/cons_psid_jobloss/).

Layers: hhx.tasks.psid.events (adults, households, reports, episodes, shocks). Target wave T
(survey year of the report); event year T - 1; time = <T-1>-12-31; release_date = wave T's.
Candidates: every shock whose household subject has a household in wave T (events), and one
control wave per household subject among household-waves with both relevant adults' job-end
questions asked, no current shock and no qualifying report by either adult in an earlier survey
year: the one with the smallest sha256("42018|<subject>|<T>") (hex). Filters, in order:
1. target: food at home + food away from home of wave T (the reference person's family values,
   food stamps excluded) positive with neither component missing or top-coded;
2. predictors: the household profile in wave T - 1 and history wave T - 2 exist; reference
   person's sex, age, family size and children (T - 1) and work status, earnings and family
   income (T - 2) present, and when partnered the partner's sex and age (T - 1), work status and
   earnings (T - 2); optional history waves T - 3, T - 4 while each has those fields and the same
   household structure; some history wave has positive food spending;
3. household structure the same in T, T - 1, T - 2; reference person (and partner) aged 25-65
   in T - 1;
4. every displayed history wave's family income strictly inside its survey year's p01/p99.
Public: history_lag{k}_elapsed_years = T - wave year (2, 3, 4); food history values
home + away (missing when either is); reasons and prior job losses pipe-joined (prior: the
adult's earlier episodes, years before the event year). No-change answer: the first positive
history food value (lag 1, else 2, else 3). The reference writes answer and baseline as float
lists with compact JSON (`reference_answer`, JSON_SEPARATORS).
Typing (reference 01_make_table.py builds rows of Python values, pandas types them): the target
(food at home + away, a float sum) and the profile and history values of the float64 household
layer (ages, years of schooling, family size, hours, earnings, income) are floats (`2080.0`);
history_lag{k}_elapsed_years is an int (`2`; a float when some row lacks that wave).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import PromptRules
from hhx.tasks.prompting import (
    CLOSING_NO_DOLLAR,
    format_dollars,
    render_macro_paragraph,
    response_instruction,
)
from hhx.tasks.psid.common import Steps, public_table, years_ago
from hhx.tasks.psid.events import (
    build_layers,
    episodes_by_person,
    inside_cutoffs,
    prior_episodes,
    records,
)

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, cons_psid_jobloss).
OUTPUT_ORDER = ("time:text", "_row_id:text")

TASK = "cons_psid_jobloss"
PROMPT_RULES = PromptRules(closing=CLOSING_NO_DOLLAR, replacement="Replace v_1 with one number.")
# Public numbers the reference builds as ints on every row; every other one is a float there
# (hhx.tasks.psid.common.public_table).
INTEGER_COLUMNS = [f"history_lag{k}_elapsed_years" for k in range(1, 4)]
SEED = 42018
JSON_SEPARATORS = (",", ":")  # the reference writes this task's records compactly
SYSTEM_PROMPT = ("You are the head of an American household making decisions about food "
                 "spending, work, income, and household finances.")
QUESTION = ("Given this information, in one year, what will your household's annual food "
            "spending be, including food at home and food away from home?")
LEAD = "Return only a valid JSON array with exactly one number in current U.S. dollars."
PROFILE = ["reference_demo_sex_label", "reference_demo_age_gen", "reference_edu_year",
           "partner_demo_sex_label", "partner_demo_age_gen", "partner_edu_year",
           "reference_fam_size", "reference_fam_size_chi", "reference_home_stat_label",
           "reference_geo_region_label", "reference_race_eth_maj_col_label"]
HISTORY = ["reference_annual_hours", "reference_earn_tot_nd", "partner_annual_hours",
           "partner_earn_tot_nd", "reference_finc_tot_nd"]
LAG_REQUIRED = ["reference_annual_work_status", "reference_earn_tot_nd", "reference_finc_tot_nd"]
PARTNER_LAG = ["partner_annual_work_status", "partner_earn_tot_nd"]


def _missing(row: Mapping[str, Any], columns: list[str]) -> bool:
    return any(pd.isna(row.get(c)) for c in columns)


def food(row: Mapping[str, Any] | None) -> float:
    if row is None:
        return math.nan
    home: Any
    away: Any
    home, away = row.get("food_at_home_nominal_annual"), row.get("food_away_nominal_annual")
    if pd.isna(home) or pd.isna(away):
        return math.nan
    return float(home) + float(away)


def _food_ok(row: Mapping[str, Any]) -> bool:
    value = food(row)
    bad = {None, "missing_or_topcoded"}
    return (math.isfinite(value) and value > 0
            and row.get("food_at_home_assignment_status") not in bad
            and row.get("food_away_assignment_status") not in bad)


def _payload(target: Mapping[str, Any], index: Mapping[tuple[str, int], Mapping[str, Any]]
             ) -> tuple[dict | None, str]:
    year, subject = int(target["survey_year"]), str(target["stable_household_subject_id"])
    profile, lag1 = index.get((subject, year - 1)), index.get((subject, year - 2))
    if profile is None:
        return None, "no household profile in the event year"
    if lag1 is None:
        return None, "no history wave two years before the target wave"
    partnered = target["household_structure"] == "partnered"
    if _missing(profile, ["reference_demo_sex_label", "reference_demo_age_gen",
                          "reference_fam_size", "reference_fam_size_chi"]) or _missing(
            lag1, LAG_REQUIRED):
        return None, "reference person's profile or history missing"
    if partnered and (_missing(profile, ["partner_demo_sex_label", "partner_demo_age_gen"])
                      or _missing(lag1, PARTNER_LAG)):
        return None, "partner's profile or history missing"
    history = [lag1]
    for older_year in (year - 3, year - 4):
        older = index.get((subject, older_year))
        if (older is None or _missing(older, LAG_REQUIRED)
                or (partnered and _missing(older, PARTNER_LAG))
                or older["household_structure"] != target["household_structure"]):
            break
        history.append(older)
    out: dict[str, Any] = {f"current_{c}": profile.get(c, np.nan) for c in PROFILE}
    out["_history_depth"] = len(history)
    for k in range(1, 4):
        wave = history[k - 1] if k <= len(history) else None
        out[f"history_lag{k}_elapsed_years"] = year - int(wave["survey_year"]) if wave else np.nan
        out[f"_history_lag{k}_survey_year"] = int(wave["survey_year"]) if wave else np.nan
        for c in HISTORY:
            out[f"history_lag{k}_{c}"] = wave.get(c, np.nan) if wave else np.nan
        out[f"history_lag{k}_annual_food_spending"] = food(wave) if wave else np.nan
    if not any(_food_ok(wave) for wave in history):
        return None, "no positive food spending in the history waves"
    return out, "eligible"


def _logical(target: Mapping[str, Any], profile: Mapping[str, Any], lag1: Mapping[str, Any]
             ) -> bool:
    structure = target["household_structure"]
    if profile["household_structure"] != structure or lag1["household_structure"] != structure:
        return False

    def adult(age: Any) -> bool:
        return not pd.isna(age) and 25 <= float(age) <= 65

    return adult(profile["reference_demo_age_gen"]) and (
        structure != "partnered" or adult(profile["partner_demo_age_gen"]))


def _controls(house: pd.DataFrame, shocks: pd.DataFrame, reports: pd.DataFrame
              ) -> list[tuple[str, int]]:
    """One control wave per subject: eligible household-waves, smallest seeded hash."""
    shocked = set(zip(shocks["stable_household_subject_id"], shocks["survey_year"], strict=True))
    first_report = reports.groupby("person_id")["survey_year"].min().to_dict()
    best: dict[str, tuple[str, int]] = {}
    for subject, year, asked, ref, par in zip(
            house["stable_household_subject_id"], house["survey_year"],
            house["relevant_adults_ascertained"], house["reference_person_id"],
            house["partner_person_id"], strict=True):
        year = int(year)
        if int(asked) != 1 or (subject, year) in shocked:
            continue
        people = [int(ref)] + ([int(par)] if not pd.isna(par) else [])
        if any(first_report.get(p, 10_000) < year for p in people):
            continue
        digest = hashlib.sha256(f"{SEED}|{subject}|{year}".encode()).hexdigest()
        if subject not in best or digest < best[subject][0]:
            best[subject] = (digest, year)
    return [(s, y) for s, (_, y) in sorted(best.items())]


def build_table(ctx: BuildContext) -> pd.DataFrame:
    task = ctx.task
    layers = build_layers(ctx)
    house = layers.households
    steps = Steps("household-waves (SRC reference person, waves 1968-1992)", len(house))
    index = {(str(r["stable_household_subject_id"]), int(r["survey_year"])): r
             for r in records(house)}
    cutoffs = {int(y): (p01, p99) for y, p01, p99 in layers.cutoffs.itertuples(index=False)}
    by_person = episodes_by_person(layers.episodes)
    episodes = {e["episode_id"]: e for e in records(layers.episodes)}

    candidates: list[tuple[str, Mapping[str, Any], Any]] = []  # shock: a dict or None
    for shock in records(layers.shocks):
        key = (str(shock["stable_household_subject_id"]), int(shock["survey_year"]))
        if key in index:
            candidates.append(("event", index[key], shock))
    for key in _controls(house, layers.shocks, layers.reports):
        candidates.append(("control", index[key], None))
    steps.note("job-loss events and one control wave per household", len(candidates))

    counts = {"target": 0, "predictors": 0, "logic": 0, "income": 0}
    rows = []
    for kind, target, shock in candidates:
        if not _food_ok(target):
            continue
        counts["target"] += 1
        payload, _ = _payload(target, index)
        if payload is None:
            continue
        counts["predictors"] += 1
        year, subject = int(target["survey_year"]), str(target["stable_household_subject_id"])
        if not _logical(target, index[(subject, year - 1)], index[(subject, year - 2)]):
            continue
        counts["logic"] += 1
        if not all(inside_cutoffs(payload[f"history_lag{k}_reference_finc_tot_nd"],
                                  payload[f"_history_lag{k}_survey_year"], cutoffs)
                   for k in range(1, payload["_history_depth"] + 1)):
            continue
        counts["income"] += 1
        row = {**payload, "household_structure": target["household_structure"],
               "annual_food_spending": food(target),
               "release_date": str(target["reference_release_date"])[:10],
               "time": f"{year - 1}-12-31",
               **{c: target[c] for c in CORE_MACRO_COLUMNS}}
        if kind == "event":
            row.update(_event_fields(shock, episodes, by_person, year - 1))
            row["id"] = shock["household_shock_id"]
        else:
            row.update(observation_type="control", reference_current_displacement_reasons="",
                       partner_current_displacement_reasons="",
                       reference_prior_displacement_years_ago="",
                       reference_prior_displacement_reasons="",
                       partner_prior_displacement_years_ago="",
                       partner_prior_displacement_reasons="")
            row["id"] = f"psid_control_{subject}_{year}"
        row["_row_id"] = row["id"]
        rows.append(row)
    for name, label in (("target", "target: positive food at home + away in wave T"),
                        ("predictors", "predictors: profile, history and food history present"),
                        ("logic", "same household structure, adults aged 25-65"),
                        ("income", "trim: displayed family income strictly inside p01/p99")):
        steps.note(label, counts[name])
    frame = pd.DataFrame(rows)
    if frame.empty or set(frame["observation_type"]) != {"event", "control"}:
        raise DataError(f"task {TASK}: the rows lack events or controls "
                        f"({len(frame)} rows); the panel has too few job losses")
    table = public_table(frame, task, __name__, integer_columns=INTEGER_COLUMNS)
    table.attrs["construction_steps"] = steps.rows
    return table


def _event_fields(shock: Mapping[str, Any], episodes: Mapping[str, dict],
                  by_person: dict[int, list[dict]], prompt_year: int) -> dict[str, str]:
    out = {"observation_type": "event"}
    current = [episodes[i] for i in str(shock["episode_ids"]).split("|")]
    for role, name in (("reference_person", "reference"), ("spouse_partner", "partner")):
        out[f"{name}_current_displacement_reasons"] = "|".join(
            str(e["displacement_reason"]) for e in current if e["person_role"] == role)
        out[f"{name}_prior_displacement_years_ago"] = ""
        out[f"{name}_prior_displacement_reasons"] = ""
    for episode in current:  # one episode per adult in a shock
        name = "reference" if episode["person_role"] == "reference_person" else "partner"
        years, reasons = prior_episodes(episode, by_person, prompt_year)
        out[f"{name}_prior_displacement_years_ago"] = years
        out[f"{name}_prior_displacement_reasons"] = reasons
    return out


# --------------------------------------------------------------------------------------------
# Prompt (the reference renderer's sentences; "has a value" also excludes empty text)


def _has(value: Any) -> bool:
    return value is not None and not pd.isna(value) and str(value).strip() not in ("", "nan")


def _int(value: Any) -> int:
    number = float(value)
    if not math.isfinite(number):
        raise DataError(f"task {TASK}: a shown number is missing")
    return int(round(number))


def person(age: Any, sex: Any, race: Any = None) -> str:
    """"a 45-year-old White man": the article rule of this renderer (ages starting 8/11/18)."""
    years = _int(age)
    word = {"male": "man", "female": "woman"}.get(str(sex).strip().lower(),
                                                  str(sex).strip().lower())
    art = "an" if str(years).startswith(("8", "11", "18")) else "a"
    race_part = f" {str(race).strip()}" if _has(race) else ""
    return f"{art} {years}-year-old{race_part} {word}"


def children(value: Any) -> str:
    n = _int(value)
    return "no children" if n == 0 else "including 1 child" if n == 1 else (
        f"including {n} children")


def tenure(value: Any) -> str | None:
    if not _has(value):
        return None
    label = str(value).strip()
    return {"Owns home": "You currently own your home.",
            "Pays rent": "You currently rent your home."}.get(
        label, f"Your current housing arrangement is {label.lower()}.")


def work(subject: str, hours: Any, earnings: Any) -> str:
    """"You worked 2,080 hours in total and had $41,000 in annual labor earnings."."""
    h = _int(hours)
    possessive = "your" if subject.lower() == "you" else f"{subject.lower()}'s"
    if h == 0:
        return (f"{subject[:1].upper()}{subject[1:]} did not work and {possessive} annual labor "
                f"earnings were {format_dollars(float(earnings))}.")
    return (f"{subject[:1].upper()}{subject[1:]} worked {h:,} hours in total and had "
            f"{format_dollars(float(earnings))} in annual labor earnings.")


def split_values(value: Any) -> list[str]:
    return [v for v in str(value).split("|") if v] if _has(value) else []


def _background(row: Mapping[str, Any]) -> str:
    parts = [f"You are {person(row['current_reference_demo_age_gen'], row['current_reference_demo_sex_label'], row.get('current_reference_race_eth_maj_col_label'))}."]  # noqa: E501
    if _has(row.get("current_reference_geo_region_label")):
        parts.append(f"You live in the {str(row['current_reference_geo_region_label']).strip()}.")
    partnered = row["household_structure"] == "partnered"
    if partnered:
        parts.append("You have a spouse or partner in your household.")
        parts.append("Your spouse or partner is "
                     f"{person(row['current_partner_demo_age_gen'], row['current_partner_demo_sex_label'])}.")  # noqa: E501
    else:
        parts.append("You do not have a spouse or partner in your household.")
    size = _int(row["current_reference_fam_size"])
    parts.append(f"Your household has {size} {'person' if size == 1 else 'people'}, "
                 f"{children(row['current_reference_fam_size_chi'])}.")
    if _has(row.get("current_reference_edu_year")):
        parts.append(f"You completed {_int(row['current_reference_edu_year'])} years of "
                     "schooling.")
    if partnered and _has(row.get("current_partner_edu_year")):
        parts.append("Your spouse or partner completed "
                     f"{_int(row['current_partner_edu_year'])} years of schooling.")
    home = tenure(row.get("current_reference_home_stat_label"))
    if home:
        parts.append(home)
    return "Here is some background information about yourself and your household. " + " ".join(
        parts)


def history_depth(row: Mapping[str, Any]) -> int:
    return sum(1 for k in range(1, 4) if _has(row.get(f"history_lag{k}_elapsed_years")))


def _history(row: Mapping[str, Any]) -> str:
    sentences = []
    for k in range(history_depth(row), 0, -1):
        p = f"history_lag{k}_"
        parts = [work("You", row[f"{p}reference_annual_hours"], row[f"{p}reference_earn_tot_nd"])]
        if row["household_structure"] == "partnered":
            parts.append(work("Your spouse or partner", row[f"{p}partner_annual_hours"],
                              row[f"{p}partner_earn_tot_nd"]))
        parts.append("Your total family income was "
                     f"{format_dollars(float(row[f'{p}reference_finc_tot_nd']))}.")
        if _has(row.get(f"{p}annual_food_spending")):
            parts.append("Your household's annual food spending was "
                         f"{format_dollars(float(row[f'{p}annual_food_spending']))}, including "
                         "food at home and food away from home.")
        body = " ".join(parts)
        sentences.append(f"{years_ago(row[f'{p}elapsed_years'], TASK)}, {body[0].lower()}"
                         f"{body[1:]}")
    return ("Here is your household's work, income, and food-spending history. Note that $ "
            "denotes amounts in U.S. dollars. " + " ".join(sentences))


def reason_clause(reason: str, *, partner: bool) -> str:
    if reason == "plant_closure_or_employer_move":
        return (f"because {'their' if partner else 'your'} employer closed, changed hands, "
                "moved, or ceased operating")
    if reason == "layoff_or_firing":
        return "because of a layoff or firing"
    raise DataError(f"task {TASK}: job-loss reason {reason!r} has no prompt wording")


def _event(row: Mapping[str, Any]) -> str:
    partnered = row["household_structure"] == "partnered"
    if row["observation_type"] == "control":
        return ("Neither you nor your spouse or partner lost your job during the current "
                "calendar year." if partnered else
                "You did not lose your job during the current calendar year.")
    sentences = [f"During the current calendar year, you lost your job "
                 f"{reason_clause(r, partner=False)}."
                 for r in split_values(row.get("reference_current_displacement_reasons"))]
    sentences += [f"During the current calendar year, your spouse or partner lost their job "
                  f"{reason_clause(r, partner=True)}."
                  for r in split_values(row.get("partner_current_displacement_reasons"))]
    for name, subject in (("reference", "You"), ("partner", "Your spouse or partner")):
        years = split_values(row.get(f"{name}_prior_displacement_years_ago"))
        reasons = split_values(row.get(f"{name}_prior_displacement_reasons"))
        if len(years) != len(reasons):
            raise DataError(f"task {TASK} id {row.get('id')!r}: prior job-loss years and "
                            "reasons differ in number")
        sentences += [f"{subject} also lost a job {years_ago(y, TASK, lower=True)} "
                      f"{reason_clause(r, partner=name == 'partner')}."
                      for y, r in zip(years, reasons, strict=True)]
    if not sentences:
        raise DataError(f"task {TASK} id {row.get('id')!r}: an event row without a job loss")
    return " ".join(sentences)


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    user = "\n\n".join([_background(row), _history(row), render_macro_paragraph(row),
                        _event(row), QUESTION, response_instruction(task, lead=LEAD)])
    return SYSTEM_PROMPT, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    """The reference answer as this task writes it: a float."""
    return [float(row["annual_food_spending"])]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: the most recent positive history food spending (lag 1, else 2, else 3)."""
    for k in range(1, 4):
        value: Any = row.get(f"history_lag{k}_annual_food_spending")
        if _has(value) and float(value) > 0:
            return [float(value)]
    raise DataError(f"task {TASK} id {row.get('id')!r}: no positive history food spending")
