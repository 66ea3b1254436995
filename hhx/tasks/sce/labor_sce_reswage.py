"""labor_sce_reswage: lowest acceptable hourly wage and preferred weekly hours on a new job
(spec 20_tasks 0.6, 8).

Facts (reference `scripts/2_tasks/labor_sce_reswage/`):
- Unit: a respondent of an October job-search wave (`sce_job_search`, survey month 10), Core
  context and macro attached.
- Hourly-equivalent pay of the current (l11_* with hours l10) and last job (l24_* with hours
  l22): with hours in (0, 168], the hourly amount when > 0, else weekly / hours when > 0, else
  annual / (52 * hours) when > 0. A branch is valid when its pay exists and its hours are in
  (0, 168].
- Source-wide cutoffs per survey month over the whole job-search table: rw2h_reserv_wage and the
  two hourly-equivalent pays (a month with p01 == p99 is an error).
- Targets: reservation_wage_hourly = rw2h_reserv_wage, preferred_weekly_hours =
  rw1a_desired_hours, each through pd.to_numeric only, so the table keeps the intermediate's
  types (sce_job_search: rw2h float64, `12.5`; rw1a int64, `58`, not `58.0`). months_since_paid_work = l8_months_no_work__clean; never_had_paid_job =
  1 where l8's status is never_had_paid_job, 0 where it has another status, blank otherwise.
- Filters: both targets present; release_date, income label, common context, macro and a valid
  current or last branch; reservation wage > 0 and hours in (0, 168], then (counted on the rows
  left) age 18-100; trim: reservation wage strictly inside its month's cutoffs and a branch
  valid and strictly inside its cutoffs. The branch kept is current when valid after the
  trim, else last; the pay and hours of a branch not valid after the trim are blanked.
- Answer [reservation wage, hours] rounded to 2 decimals; no-change answer the selected
  branch's [pay, hours] rounded to 2 decimals.
- Prompt: labor persona; background plus "Your household has N people, including K children
  under 18."; finances (income; Q1 / Q2 "and you expect it to be", "about as well off" when Q1 is
  about the same; inflation; work items with the job count; days searching; months since paid
  work; the branch's pay ($, 2 decimals) and hours (`:g`)); macro; "For this question, consider
  the following job preferences."; question; instruction. The reference compares
  never_had_paid_job, read back from the CSV as a float, with the text "1", so "You have never
  had a paid job." is never written; hhx keeps that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import format_dollars, render_macro_paragraph, response_instruction
from hhx.tasks.sce import common as c
from hhx.tasks.sce import modules as m

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, labor_sce_reswage).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "labor_sce_reswage"
SOURCE = "sce_job_search"
BRANCHES = {  # branch -> (hourly, weekly, annual, hours, public pay column)
    "current": ("l11_cps_job_earn_hrly", "l11_cps_job_earn_wkly", "l11_cps_job_earn_ann",
                "l10_cps_job_usual_hrs", "current_job_hourly_equivalent_pay"),
    "last": ("l24_last_job_earn_hrly", "l24_last_job_earn_wkly", "l24_last_job_earn_ann",
             "l22_last_job_usual_hrs", "last_job_hourly_equivalent_pay"),
}
READ = ["hhsize", "numchildren_under18", "l2_num_jobs", "l7_days_spent_searching",
        "l8_months_no_work__clean", "l8_months_no_work__status",
        *[col for spec in BRANCHES.values() for col in spec[:4]], "rw2h_reserv_wage",
        "rw1a_desired_hours"]  # fmt: skip
TARGETS = ["reservation_wage_hourly", "preferred_weekly_hours"]
RES_TRIM = "_trim_reservation_wage_hourly"
QUESTION = (
    "What is the lowest hourly wage, before taxes and other deductions, that you would accept "
    "for a job in a line of work you would consider? Assuming you could find suitable work, how "
    "many hours per week would you prefer to work on a new job?"
)
LEAD = ("Return only a valid JSON array with exactly two numeric elements, in this order: "
        "hourly reservation wage; preferred weekly work hours.")


def hourly_equivalent(frame: pd.DataFrame, branch: str) -> pd.Series:
    hourly_col, weekly_col, annual_col, hours_col, _ = BRANCHES[branch]
    hours = c.numeric(frame, hours_col)
    ok = hours.gt(0) & hours.le(168)
    hourly, weekly = c.numeric(frame, hourly_col), c.numeric(frame, weekly_col)
    annual = c.numeric(frame, annual_col)
    out = pd.Series(float("nan"), index=frame.index, dtype="float64")
    out = out.mask(ok & hourly.gt(0), hourly)
    out = out.mask(ok & out.isna() & weekly.gt(0), weekly / hours)
    return out.mask(ok & out.isna() & annual.gt(0), annual / (52 * hours))


def _branch_valid(frame: pd.DataFrame, branch: str) -> pd.Series:
    hours = c.numeric(frame, BRANCHES[branch][3])
    return frame[BRANCHES[branch][4]].notna() & hours.gt(0) & hours.le(168)


def build_table(ctx: BuildContext) -> pd.DataFrame:
    jobs = m.read_module(ctx, SOURCE, READ)
    jobs[RES_TRIM] = c.numeric(jobs, "rw2h_reserv_wage").astype("float64")
    for branch, spec in BRANCHES.items():
        jobs[f"_trim_{spec[4]}"] = hourly_equivalent(jobs, branch)
    for column in (RES_TRIM, *[f"_trim_{spec[4]}" for spec in BRANCHES.values()]):
        jobs = m.source_cutoffs(jobs, jobs[column], column, SOURCE)
    steps = c.Steps(len(jobs))
    pool = m.attach_context(jobs, ctx, steps)
    pool["reservation_wage_hourly"] = c.numeric(pool, "rw2h_reserv_wage").astype("float64")
    # no cast: the intermediate's type (int64: `58`), as the reference keeps it
    pool["preferred_weekly_hours"] = c.numeric(pool, "rw1a_desired_hours")
    for branch, spec in BRANCHES.items():
        pool[spec[4]] = hourly_equivalent(pool, branch)
        pool[f"_{branch}_valid"] = _branch_valid(pool, branch)
    pool["months_since_paid_work"] = c.numeric(pool, "l8_months_no_work__clean")
    status = pool["l8_months_no_work__status"].astype("string")
    never = pd.Series(pd.NA, index=pool.index, dtype="Int64").mask(status.notna(), 0)
    pool["never_had_paid_job"] = never.mask(status.eq("never_had_paid_job").fillna(False), 1)
    if (pool["never_had_paid_job"].eq(1) & pool["months_since_paid_work"].notna()).any():
        raise DataError(f"{SOURCE}: a never-worked respondent has months since paid work")
    if (status.eq("valid").fillna(False) & pool["months_since_paid_work"].isna()).any():
        raise DataError(f"{SOURCE}: l8_months_no_work valid without its cleaned value")
    steps.step("Construct leads and lags", len(pool), len(pool))
    steps.step("Restrict universe", len(pool), len(pool))
    pool = steps.filter(pool, "Require observed targets", c.observed(pool, TARGETS, "target"))
    pool = steps.filter(pool, "Require observed predictors", [
        *c.observed(pool, m.REQUIRED_BASE, "predictor"),
        ("predictor_complete_current_or_last_job_pay_hours_branch",
         pool["_current_valid"] | pool["_last_valid"]),
    ])
    hours_ok = lambda f: f["preferred_weekly_hours"].gt(0) & f["preferred_weekly_hours"].le(168)  # noqa: E731
    pool = m.staged_filter(steps, pool, "Apply logical and validity filters", [
        [("reservation_wage_hourly_positive", lambda f: f["reservation_wage_hourly"].gt(0)),
         ("preferred_weekly_hours_between_0_and_168", hours_ok)],
        [("age_years_between_18_and_100", lambda f: f["age_years"].between(18, 100))],
    ])
    for branch, spec in BRANCHES.items():
        m.inside_or_missing(pool, f"_trim_{spec[4]}")  # observed values need cutoffs
        pool[f"_{branch}_valid"] = pool[f"_{branch}_valid"] & _strictly_inside(
            pool, f"_trim_{spec[4]}")
    pool = steps.filter(pool, "Apply outlier trimming", [
        ("trim_reservation_wage_hourly_strict_inside_month_p01_p99",
         _strictly_inside(pool, RES_TRIM)),
        ("trim_complete_current_or_last_job_pay_hours_branch",
         pool["_current_valid"] | pool["_last_valid"]),
    ]).copy()
    pool["selected_job_branch"] = pool["_current_valid"].map({True: "current", False: "last"})
    for branch, spec in BRANCHES.items():
        for column in (spec[4], spec[3]):
            pool[column] = pool[column].astype("float64").mask(~pool[f"_{branch}_valid"])
    table = m.publish(pool, {})
    steps.step("Export sample", len(table), len(table))
    return c.finish(table, ctx.task, steps,
                    internal=["_macro_reference_q_index", "selected_job_branch"])


def _strictly_inside(frame: pd.DataFrame, column: str) -> pd.Series:
    values = frame[column]
    return values.gt(frame[f"{column}_p01"]) & values.lt(frame[f"{column}_p99"])


def _count(row: Mapping[str, Any], column: str) -> int | None:
    value: Any = row.get(column)
    return int(round(float(value))) if c.present(value) else None


def _background(row: Mapping[str, Any]) -> str:
    text = c.background(row, TASK)
    size = _count(row, "hhsize")
    if size is not None:
        children = _count(row, "numchildren_under18")
        clause = ("" if children is None else
                  f", including {children} {'child' if children == 1 else 'children'} under 18")
        text += f" Your household has {size} {'person' if size == 1 else 'people'}{clause}."
    return text


def _finances(row: Mapping[str, Any]) -> list[str]:
    q1, q2 = c.finance_labels(row, TASK)
    sentences = [c.income_sentence(row)]
    if q1 and q2:
        if q1 == "about the same":
            sentences.append("Your household is about as well off as it was 12 months ago, and "
                             f"you expect it to be {q2} 12 months from now.")
        else:
            sentences.append(m.q1_q2_sentence(q1, q2, "it"))  # type: ignore[arg-type]  # both set
    inflation = m.inflation_sentence(row)
    if inflation:
        sentences.append(inflation)
    labels = c.work_labels(row, TASK)
    work = ""
    if len(labels) == 1:
        work = f"You work {labels[0].replace('working ', '')}"
    elif labels:
        work = f"Your current work situation includes {', '.join(labels)}"
    jobs = _count(row, "l2_num_jobs")
    if jobs is not None:
        have = f"currently have {jobs} paid {'job' if jobs == 1 else 'jobs'}"
        work = f"{work} and {have}" if work else f"You {have}"
    if work:
        sentences.append(work + ".")
    days = _count(row, "l7_days_spent_searching")
    if days is not None:
        sentences.append(f"You recently spent {days} {'day' if days == 1 else 'days'} "
                         "searching for work.")
    if row.get("never_had_paid_job") == "1":  # never true on the float column (see docstring)
        sentences.append("You have never had a paid job.")
    else:
        months = _count(row, "months_since_paid_work")
        if months is not None:
            sentences.append(f"It has been {months} {'month' if months == 1 else 'months'} "
                             "since you last did paid work.")
    return sentences


def _branch(row: Mapping[str, Any]) -> tuple[str, list[float]]:
    pay: Any
    hours: Any
    for branch, spec in BRANCHES.items():
        pay, hours = row.get(spec[4]), row.get(spec[3])
        if c.present(pay) and c.present(hours):
            pay, hours = float(pay), float(hours)
            text = (f"Your current or main job pays approximately {format_dollars(pay, 2)} per "
                    f"hour, and you usually work {hours:g} hours per week." if branch == "current"
                    else f"Your most recent job paid approximately {format_dollars(pay, 2)} per "
                    f"hour, and you usually worked {hours:g} hours per week.")
            return text, [round(pay, 2), round(hours, 2)]
    raise DataError(f"{TASK}: neither the current nor the last job has pay and hours "
                    f"(id {row.get('id')!r})")


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    sentences = _finances(row)
    sentences.append(_branch(row)[0])
    user = "\n\n".join([_background(row), m.finances_paragraph(row, sentences),
                        render_macro_paragraph(row),
                        "For this question, consider the following job preferences.", QUESTION,
                        response_instruction(task, lead=LEAD)])
    return c.LABOR_PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [round(float(row["reservation_wage_hourly"]), 2),
            round(float(row["preferred_weekly_hours"]), 2)]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: the selected job's hourly pay and usual weekly hours."""
    return _branch(row)[1]
