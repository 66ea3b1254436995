"""cons_sce_shock: shares of a +10% income gain spent or donated and of a -10% income loss
absorbed by cutting spending (spec 10_tasks 14).

Facts (reference `scripts/2_tasks/cons_sce_shock/`):
- Unit: a respondent-month of the Household Spending module, Core context and macro attached.
- Codes: qsp1, k2e in {1, 2}; qsp12n, qsp13new in 1-7 (otherwise an error). qsp2__clean present
  with qsp1 missing or outside {1, 2} is an error.
- Shares (0-100): gain (save or invest, spend or donate, pay down debt) from qsp12n: 1 -> [100,
  0, 0], 2 -> [0, 100, 0], 3 -> [0, 0, 100], 4-7 -> qsp12a_1..3__clean; loss (reduce spending,
  reduce savings, increase borrowing) from qsp13new the same way with qsp13a_1..3__clean. The
  sums need all three shares.
- Filters: all six shares present; release_date, income label, common context and macro
  present; every share in [0, 100]; each sum in [99, 101]; then (counted on the rows left)
  age 18-100. No trim.
- Targets: gain_spend_or_donate_share and loss_reduce_spending_share; answer each rounded to
  2 decimals; no-change answer [0, 0].
- Prompt: household-head persona; background; finances (income; Q1 / Q2 only when both;
  inflation; "Your monthly household spending is X.X percent higher than 12 months ago, your
  household currently uses a budget, and you are working full-time."; without qsp2 the
  sentence starts with ", your household ..." as the reference writes it); macro; the fixed
  scenario; question; instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import render_macro_paragraph, response_instruction
from hhx.tasks.sce import common as c
from hhx.tasks.sce import modules as m

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, cons_sce_shock).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "cons_sce_shock"
SOURCE = "sce_household_spending"
GAIN = ["gain_save_or_invest_share", "gain_spend_or_donate_share", "gain_pay_down_debt_share"]
LOSS = ["loss_reduce_spending_share", "loss_reduce_savings_share",
        "loss_increase_borrowing_share"]
READ = ["k2e", "qsp1", "qsp2__clean", "qsp12n", "qsp13new",
        *[f"qsp12a_{k}__clean" for k in (1, 2, 3)], *[f"qsp13a_{k}__clean" for k in (1, 2, 3)],
        "k2e__label", "qsp1__label", "qsp12n__label", "qsp13new__label"]  # fmt: skip
LABELS = {"k2e": "k2e__label", "qsp1": "qsp1__label", "qsp12n": "qsp12n__label",
          "qsp13new": "qsp13new__label"}  # fmt: skip
SCENARIO = (
    "For this question, suppose your household income changes unexpectedly next year. In one "
    "case, your household income rises by 10 percent. In the other case, your household income "
    "falls by 10 percent."
)
QUESTION = (
    "How much of the income gain would you spend or donate, and how much of the income loss "
    "would you cover by reducing spending? Give each answer as a number from 0 to 100, not as a "
    "fraction."
)
LEAD = ("Return only a valid JSON array with exactly two numeric elements, in this order: "
        "percent of the income gain spent or donated; percent of the income loss covered by "
        "reducing spending.")


def _shares(pool: pd.DataFrame, code_column: str, prefix: str, names: list[str]) -> None:
    code = c.numeric(pool, code_column)
    for j, name in enumerate(names):
        single = np.select([code.eq(k + 1) for k in range(3)],
                           [100.0 if k == j else 0.0 for k in range(3)], np.nan)
        mixed = c.numeric(pool, f"{prefix}_{j + 1}__clean").astype("float64")
        pool[name] = np.where(code.isin([4, 5, 6, 7]), mixed, single)


def build_table(ctx: BuildContext) -> pd.DataFrame:
    spending = m.read_module(ctx, SOURCE, READ)
    steps = c.Steps(len(spending))
    pool = m.attach_context(spending, ctx, steps)
    m.check_codes(pool, {"qsp1": (1, 2), "k2e": (1, 2), "qsp12n": range(1, 8),
                         "qsp13new": range(1, 8)}, TASK)
    orphan = pool["qsp2__clean"].notna() & ~c.numeric(pool, "qsp1").isin([1, 2])
    if orphan.any():
        row = pool[orphan].iloc[0]
        raise DataError(f"{SOURCE}: respondent {row['respondent_id']} "
                        f"({row['survey_year']}-{int(row['survey_month']):02d}) has qsp2 but no "
                        "valid qsp1 (higher / lower); check the spending workbook")
    _shares(pool, "qsp12n", "qsp12a", GAIN)
    _shares(pool, "qsp13new", "qsp13a", LOSS)
    pool["gain_share_sum"] = pool[GAIN].sum(axis=1, min_count=3)
    pool["loss_share_sum"] = pool[LOSS].sum(axis=1, min_count=3)
    steps.step("Construct leads and lags", len(pool), len(pool))
    steps.step("Restrict universe", len(pool), len(pool))
    pool = steps.filter(pool, "Require observed targets",
                        c.observed(pool, GAIN + LOSS, "target"))
    pool = steps.filter(pool, "Require observed predictors",
                        c.observed(pool, m.REQUIRED_BASE, "predictor"))
    shares = GAIN + LOSS
    pool = m.staged_filter(steps, pool, "Apply logical and validity filters", [
        [("all_response_shares_nonnegative", lambda f: f[shares].ge(0).all(axis=1)),
         ("all_response_shares_at_most_100", lambda f: f[shares].le(100).all(axis=1)),
         ("gain_share_sum_between_99_and_101", lambda f: f["gain_share_sum"].between(99, 101)),
         ("loss_share_sum_between_99_and_101", lambda f: f["loss_share_sum"].between(99, 101))],
        [("age_years_between_18_and_100", lambda f: f["age_years"].between(18, 100))],
    ])
    steps.step("Apply outlier trimming", len(pool), len(pool))
    table = m.publish(pool, LABELS)
    steps.step("Export sample", len(table), len(table))
    return c.finish(table, ctx.task, steps, internal=["_macro_reference_q_index"])


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    sentences = m.finance_start(row, TASK, "household")
    text = ""
    if c.present(row.get("qsp2__clean")):
        if not c.present(row.get("qsp1")):
            raise DataError(f"{TASK}: qsp2__clean without qsp1 (id {row.get('id')!r})")
        direction = c.checked_label(row["qsp1"], frozenset({"higher", "lower"}), "qsp1", TASK)
        text = (f"Your monthly household spending is {abs(float(row['qsp2__clean'])):.1f} "
                f"percent {direction} than 12 months ago")
    budget = c.optional_label(row, "k2e", c.YES_NO, TASK)
    if budget:
        text += (", your household currently uses a budget" if budget == "yes"
                 else ", your household does not currently use a budget")
    labels = c.work_labels(row, TASK)
    if len(labels) == 1:
        text += f", and you are {labels[0]}"
    elif labels:
        text += f", and your current work situation includes {', '.join(labels)}"
    if text:
        sentences.append(text + ".")
    user = "\n\n".join([c.background(row, TASK), m.finances_paragraph(row, sentences),
                        render_macro_paragraph(row), SCENARIO, QUESTION,
                        response_instruction(task, lead=LEAD)])
    return m.HOUSEHOLD_HEAD_PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [round(float(row["gain_spend_or_donate_share"]), 2),
            round(float(row["loss_reduce_spending_share"]), 2)]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: none of the gain spent, none of the loss met by cutting spending."""
    return [0, 0]
