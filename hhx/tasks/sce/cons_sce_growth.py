"""cons_sce_growth: signed % change of monthly household spending vs 12 months ago (spec
10_tasks 13).

Facts (reference `scripts/2_tasks/cons_sce_growth/`):
- Unit: a respondent-month of the Household Spending module (`sce_household_spending`), Core
  context and macro attached (hhx.tasks.sce.modules).
- Target `signed_spending_growth_percent` = qsp2__clean, negated when qsp1 = 2 (lower). Cutoffs:
  survey-month p01 / p99 of the signed value over the whole spending table, where a qsp1
  outside {1, 2} makes the value missing; a month with p01 == p99 is an error.
- qsp1 and k2e codes must lie in {1, 2} (otherwise an error).
- Filters: qsp1 in {1, 2} and the signed value present; release_date, income label, the common
  context, Q1, Q2, Q9_mean, Q9c_mean, Q10_1..5, k2e and the macro columns present; age 18-100;
  target strictly inside its month's cutoffs.
- Answer: the target rounded to 2 decimals; no-change answer [0].
- Prompt: household-head persona; background; finances (income; Q1 / Q2 both, or either alone;
  inflation; "You are working full-time, and your household currently uses a budget." / "Your
  current work situation includes ..., and ..."; without a work item the reference writes
  "Your household your household currently uses a budget." (kept)); macro; question;
  instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import PromptRules
from hhx.tasks.prompting import CLOSING_TEXT_ONLY, render_macro_paragraph, response_instruction
from hhx.tasks.sce import common as c
from hhx.tasks.sce import modules as m

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, cons_sce_growth).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "cons_sce_growth"
PROMPT_RULES = PromptRules(closing=CLOSING_TEXT_ONLY)
SOURCE = "sce_household_spending"
TARGET = "signed_spending_growth_percent"
READ = ["k2e", "qsp1", "qsp2__clean", "k2e__label", "qsp1__label"]
LABELS = {"k2e": "k2e__label", "qsp1": "qsp1__label"}
REQUIRED = ["release_date", "_HH_INC_DETAILED__label", "age_years", "_NUM_CAT", "_REGION_CAT",
            "_EDU_CAT", "_HH_INC_DETAILED", "Q1", "Q2", "Q9_mean", "Q9c_mean", "Q10_1", "Q10_2",
            "Q10_3", "Q10_4", "Q10_5", "k2e", *m.CORE_MACRO_COLUMNS]  # fmt: skip
QUESTION = (
    "Compared with 12 months ago, by what percentage has your household's current monthly "
    "spending changed? Use a positive number if spending is higher now and a negative number if "
    "spending is lower now."
)
LEAD = "Return only a valid JSON array containing exactly one number."


def signed_growth(frame: pd.DataFrame) -> pd.Series:
    """qsp2__clean with the sign of qsp1 (2 = lower -> negative)."""
    value = c.numeric(frame, "qsp2__clean").astype("float64")
    return value.where(~c.numeric(frame, "qsp1").eq(2), -value)


def build_table(ctx: BuildContext) -> pd.DataFrame:
    spending = m.read_module(ctx, SOURCE, READ)
    direction_ok = c.numeric(spending, "qsp1").isin([1, 2])
    spending = m.source_cutoffs(spending, signed_growth(spending).where(direction_ok), TARGET,
                                SOURCE)
    steps = c.Steps(len(spending))
    pool = m.attach_context(spending, ctx, steps)
    m.check_codes(pool, {"qsp1": (1, 2), "k2e": (1, 2)}, TASK)
    pool[TARGET] = signed_growth(pool)
    steps.step("Construct leads and lags", len(pool), len(pool))
    steps.step("Restrict universe", len(pool), len(pool))
    pool = steps.filter(pool, "Require observed targets", [
        ("spending_growth_direction_valid", c.numeric(pool, "qsp1").isin([1, 2])),
        ("spending_growth_magnitude_not_missing", pool[TARGET].notna()),
    ])
    pool = steps.filter(pool, "Require observed predictors",
                        c.observed(pool, REQUIRED, "predictor"))
    pool = steps.filter(pool, "Apply logical and validity filters", [
        ("age_years_between_18_and_100", pool["age_years"].between(18, 100)),
    ])
    pool = steps.filter(pool, "Apply outlier trimming", [
        (f"trim_{TARGET}_target_strict_inside_month_p01_p99", c.inside(pool, TARGET)),
    ])
    table = m.publish(pool, LABELS)
    steps.step("Export sample", len(table), len(table))
    return c.finish(table, ctx.task, steps, internal=["_macro_reference_q_index"])


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    sentences = m.finance_start(row, TASK, "household_single")
    labels = c.work_labels(row, TASK)
    work = None
    if len(labels) == 1:
        work = f"You are {labels[0]}"
    elif labels:
        work = f"Your current work situation includes {', '.join(labels)}"
    budget = c.optional_label(row, "k2e", c.YES_NO, TASK)
    if budget:
        uses = ("your household currently uses a budget" if budget == "yes"
                else "your household does not currently use a budget")
        sentences.append(f"{work}, and {uses}." if work else f"Your household {uses}.")
    elif work:
        sentences.append(f"{work}.")
    user = "\n\n".join([c.background(row, TASK), m.finances_paragraph(row, sentences),
                        render_macro_paragraph(row), QUESTION,
                        response_instruction(task, lead=LEAD)])
    return m.HOUSEHOLD_HEAD_PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [round(float(row[TARGET]), 2)]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: spending as 12 months ago."""
    return [0]
