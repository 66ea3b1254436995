"""labor_sce_offer: was the first job offer of the last four months accepted or rejected (spec
20_tasks 0.6, 7).

Facts (reference `scripts/2_tasks/labor_sce_offer/`):
- Unit: a respondent-month of the Labor Market module (`sce_labor_market`), Core context and
  macro attached.
- Source-wide cutoffs over the whole labor-market table, per survey month: nl2a_1 (first offer's
  annual salary, as stored) and reservation_wage_annual_full_time; a month with p01 == p99 is
  an error.
- Codes: nl3_1 in 1-4, nl2b_1 in {1, 2} (otherwise an error). Target first_offer_decision =
  the nl3_1 label (1, 2 accepted; 3 rejected; 4 still deciding).
- Universe: nl1 >= 1 (at least one offer). Target: nl3_1 in {1, 2, 3} with label accepted /
  rejected (undecided respondents are omitted). Predictors: release_date, income label, common
  context, macro. Validity: age 18-100; salary and reservation wage missing or >= 500. Trim:
  salary and reservation wage missing or strictly inside their month's cutoffs.
- No-change answer ["rejected"].
- Prompt: labor persona; background; finances (income; Q1 / Q2 "and you expect it to be";
  inflation; work items); macro; "For this question, consider the following job offer. You
  received at least one job offer in the last four months. The first offer was full-time and
  had an annual salary of $52,000. Your reservation wage for a full-time job was approximately
  $48,000 per year." (the salary only inside the offer-type sentence, as the reference);
  question; instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import render_macro_paragraph, response_instruction
from hhx.tasks.sce import common as c
from hhx.tasks.sce import modules as m

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, labor_sce_offer).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "labor_sce_offer"
SOURCE = "sce_labor_market"
TARGET = "first_offer_decision"
SALARY, RESERVATION = "_trim_first_offer_annual_salary", "_trim_reservation_wage_annual_full_time"
READ = ["nl1", "nl2a_1", "nl2b_1", "nl3_1", "reservation_wage_annual_full_time",
        "nl2b_1__label", "nl3_1__label"]  # fmt: skip
LABELS = {"nl2b_1": "nl2b_1__label", "nl3_1": "nl3_1__label"}
MIN_ANNUAL = 500.0
QUESTION = (
    "Thinking about the first job offer you received in the last four months, did you accept or "
    'reject that offer? Use "accepted" if you accepted the offer, whether or not you still work '
    'at that job. Use "rejected" if you did not accept it.'
)
LEAD = ('Return exactly one valid JSON array containing one string, using one of: "accepted", '
        '"rejected".')


def build_table(ctx: BuildContext) -> pd.DataFrame:
    labor = m.read_module(ctx, SOURCE, READ)
    labor[SALARY] = c.numeric(labor, "nl2a_1").astype("float64")
    labor[RESERVATION] = c.numeric(labor, "reservation_wage_annual_full_time").astype("float64")
    for source, value in (("nl2a_1", SALARY),
                          ("reservation_wage_annual_full_time", RESERVATION)):
        if (labor[source].notna() & labor[value].isna()).any():
            raise DataError(f"{SOURCE}: column {source} holds non-numeric values")
        labor = m.source_cutoffs(labor, labor[value], value, SOURCE)
    steps = c.Steps(len(labor))
    pool = m.attach_context(labor, ctx, steps)
    m.check_codes(pool, {"nl3_1": (1, 2, 3, 4), "nl2b_1": (1, 2)}, TASK)
    pool[TARGET] = pool["nl3_1__label"].astype("string")
    steps.step("Construct leads and lags", len(pool), len(pool))
    pool = steps.filter(pool, "Restrict universe",
                        [("at_least_one_job_offer", c.numeric(pool, "nl1").ge(1))])
    decided = (c.numeric(pool, "nl3_1").isin([1, 2, 3])
               & pool[TARGET].isin(["accepted", "rejected"]).fillna(False))
    pool = steps.filter(pool, "Require observed targets",
                        [("first_offer_decision_accepted_or_rejected", decided)])
    pool = steps.filter(pool, "Require observed predictors",
                        c.observed(pool, m.REQUIRED_BASE, "predictor"))
    pool = steps.filter(pool, "Apply logical and validity filters", [
        ("age_years_between_18_and_100", pool["age_years"].between(18, 100)),
        ("valid_first_offer_annual_salary_at_least_500",
         pool[SALARY].isna() | pool[SALARY].ge(MIN_ANNUAL)),
        ("valid_reservation_wage_annual_full_time_at_least_500",
         pool[RESERVATION].isna() | pool[RESERVATION].ge(MIN_ANNUAL)),
    ])
    pool = steps.filter(pool, "Apply outlier trimming", [
        ("trim_first_offer_annual_salary_predictor_strict_inside_month_p01_p99",
         m.inside_or_missing(pool, SALARY)),
        ("trim_reservation_wage_annual_full_time_predictor_strict_inside_month_p01_p99",
         m.inside_or_missing(pool, RESERVATION)),
    ])
    table = m.publish(pool, LABELS)
    steps.step("Export sample", len(table), len(table))
    return c.finish(table, ctx.task, steps, internal=["_macro_reference_q_index"])


def _offer(row: Mapping[str, Any]) -> str:
    sentences = ["For this question, consider the following job offer."]
    if c.present(row.get("nl1")) and int(round(float(row["nl1"]))) >= 1:
        sentences.append("You received at least one job offer in the last four months.")
    salary = (f"had an annual salary of ${int(round(float(row['nl2a_1']))):,}"
              if c.present(row.get("nl2a_1")) else "")
    if c.present(row.get("nl2b_1")):
        kind = c.checked_label(row["nl2b_1"], frozenset({"full-time", "part-time"}), "nl2b_1",
                               TASK)
        sentences.append(f"The first offer was {kind} and {salary}." if salary
                         else f"The first offer was {kind}.")
    if c.present(row.get("reservation_wage_annual_full_time")):
        wage = int(round(float(row["reservation_wage_annual_full_time"])))
        sentences.append(f"Your reservation wage for a full-time job was approximately "
                         f"${wage:,} per year.")
    return " ".join(sentences)


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    sentences = m.finances_with_work(row, TASK, "it")
    user = "\n\n".join([c.background(row, TASK), m.finances_paragraph(row, sentences),
                        render_macro_paragraph(row), _offer(row), QUESTION,
                        response_instruction(task, lead=LEAD)])
    return c.LABOR_PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    decision = str(row[TARGET])
    if decision not in {"accepted", "rejected"}:
        raise DataError(f"{TASK}: first offer decision {decision!r} (id {row.get('id')!r})")
    return [decision]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: the offer is rejected (the current situation continues)."""
    return ["rejected"]
