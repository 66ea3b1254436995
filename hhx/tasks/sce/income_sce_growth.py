"""income_sce_growth: expected change of household income over 12 months (spec 10_tasks 17).

Facts (reference `scripts/2_tasks/income_sce_growth/`):
- Unit: a Core respondent-month; target `Q25v2part2` as stored (no sign transform); no-change
  answer `[0]`; the gold answer is the target rounded to 3 decimals (`[5.0]` stays a float).
- Cutoffs: survey-month p01 / p99 of Q25v2part2 over every Core row holding a number, before
  any filter; a month with p01 == p99 is an error.
- Filters: target present and numeric; income label, Core context and macro present; age
  18-100; target strictly inside its month's p01 / p99.
- Published Q11 only when 0 <= Q11 < 20, Q16 / Q19 only when 0-240 (blank otherwise); Q45b is
  in the table but not rendered.
- Prompt: economy persona; background; finances and work paragraph with the month note; macro;
  question; instruction ("Do not include explanatory text.").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import PromptRules
from hhx.tasks.prompting import (
    CLOSING_TEXT_ONLY,
    month_note,
    render_macro_paragraph,
    response_instruction,
)
from hhx.tasks.sce import common as c

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, income_sce_growth).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "income_sce_growth"
PROMPT_RULES = PromptRules(closing=CLOSING_TEXT_ONLY)
TARGET = "Q25v2part2"
READ = [*c.CONTEXT, "Q1", "Q2", "Q10_1", "Q10_2", "Q10_3", "Q10_4", "Q10_5", "Q11", "Q12new",
        "Q15", "Q16", "Q19", "Q45b", TARGET, *c.CORE_LABELS.values()]  # fmt: skip
QUESTION = (
    "By what percentage do you expect total household income to change over the next 12 "
    "months? Use a negative number for a decline, a positive number for an increase, and 0 for "
    "no change."
)
LEAD = "Return only a valid JSON array containing one number."
# Optional predictors shown only inside these bounds (low, high, high included).
BOUNDS = {"Q11": (0, 20, False), "Q16": (0, 240, True), "Q19": (0, 240, True)}


def build_table(ctx: BuildContext) -> pd.DataFrame:
    core = c.read_core(ctx, READ)
    cutoffs = c.monthly_cutoffs(core, TARGET)
    core = c.attach_cutoffs(core, cutoffs, TARGET)
    steps = c.Steps(len(core))
    core = c.attach_macro(core, ctx)
    steps.step("Attach additional sources", len(core), len(core))
    steps.step("Construct leads and lags", len(core), len(core))
    steps.step("Restrict universe", len(core), len(core))
    core = steps.filter(core, "Require observed targets", [
        *c.observed(core, [TARGET], "target"),
        (f"target_{TARGET}_numeric", c.numeric(core, TARGET).notna()),
    ])
    need = ["_HH_INC_DETAILED__label", *c.CONTEXT, *CORE_MACRO_COLUMNS]
    core = steps.filter(core, "Require observed predictors", c.observed(core, need, "predictor"))
    core = steps.filter(core, "Apply logical and validity filters", [
        ("age_years_between_18_and_100", core["age_years"].between(18, 100)),
    ])
    core = steps.filter(core, "Apply outlier trimming", [
        (f"trim_{TARGET}_target_strict_inside_month_p01_p99", c.inside(core, TARGET)),
    ])
    table = c.use_labels(c.keys(core))
    for column, (low, high, closed) in BOUNDS.items():
        values = c.numeric(table, column)
        ok = values.between(low, high) if closed else values.ge(low) & values.lt(high)
        table[column] = values.where(ok)
    steps.step("Export sample", len(table), len(table))
    return c.finish(table, ctx.task, steps, internal=["_macro_reference_q_index"])


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    sentences = c.finance_sentences(row, TASK, "connector")
    work = c.work_clause(row, TASK, search=True)
    if work:
        sentences.append(work + ".")
    situation = ("Here are your household finances, work situation, and expectations. "
                 f"{month_note(int(str(row['time'])[5:7]), True)} " + " ".join(sentences))
    user = "\n\n".join([c.background(row, TASK), situation, render_macro_paragraph(row),
                        QUESTION, response_instruction(task, lead=LEAD)])
    return c.ECONOMY_PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [round(float(row[TARGET]), 3)]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: income expected to stay the same."""
    return [0]
