"""cons_cex_total: total (Parker definition), non-durable and durable spending of the past three
months (spec 10_tasks section 2; the reference's scripts/2_tasks/cons_cex_total).

Unit: a CEX Interview consumer unit's interview, with its previous interview 3 months earlier
(lag 1, required) and up to two more (hhx.tasks.cex.common: panel, cutoffs, lags, filters, trims).
Steps as the reference's: source rows -> macro context (every interview quarter must have it) ->
lags (history = the three targets) -> targets present -> current predictors, ids and release
date present, lag-1 history present -> validity filters -> trims -> export. Answer and no-change
baseline: the targets and their lag-1 values as int(numpy.round(x)).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.tasks.cex import common as cx
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import render_macro_paragraph, response_instruction

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, cons_cex_total).
OUTPUT_ORDER = ("id:text", "time:text")
TASK = "cons_cex_total"

LAGGED = ["income_before_tax", *cx.EXPENDITURES, "cons_food", *cx.CUTOFF_COLUMNS,
          "interview_year", "interview_month", "quarter"]
CURRENT = [*cx.DEMOGRAPHICS, *cx.KEYS, "income_before_tax", "release_date",
           "release_date_source"]


def build_table(ctx: BuildContext) -> pd.DataFrame:
    name = ctx.task.name
    steps = cx.Steps()
    cex = cx.load_panel(ctx, [*cx.EXPENDITURES, "cons_food"])
    attrs = dict(cex.attrs)
    steps.step("Start from source observations", len(cex), len(cex))
    cex = cx.attach_cutoffs(cex, name)
    before = len(cex)
    cex = cx.attach_macro(cex, ctx)
    steps.step("Attach additional sources", before, len(cex))
    cex = cx.add_lags(cex, LAGGED, cx.EXPENDITURES)
    steps.step("Construct leads and lags", len(cex), len(cex))
    steps.step("Restrict universe", len(cex), len(cex))
    cex = cx.apply(cex, steps, "Require observed targets",
                   [(f"target_{c}_not_missing", cex[c].notna()) for c in cx.EXPENDITURES])
    pool = cx.apply(cex, steps, "Require observed predictors", [
        *[(f"current_predictor_{c}_not_missing", cex[c].notna()) for c in CURRENT],
        *[(f"lag1_required_{c}_lag1_not_missing", cex[f"{c}_lag1"].notna())
          for c in cx.EXPENDITURES],
    ])
    pool = cx.apply(pool, steps, "Apply logical and validity filters",
                    cx.validity_filters(pool, cx.EXPENDITURES))
    pool = cx.apply(pool, steps, "Apply outlier trimming", cx.trim_filters(pool, name))
    cx.check_lag_structure(pool, cx.EXPENDITURES, name)
    pool.attrs.update(attrs)
    return cx.public_table(pool, ctx, steps, {"_newid": pool["newid"]})


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    lags = cx.available_lags(row, cx.EXPENDITURES)
    history = [cx.expenditure_sentence(row, k) for k in reversed(lags)]
    user = "\n\n".join([
        cx.background_paragraph(row),
        cx.spending_paragraph(row, history),
        render_macro_paragraph(row),
        cx.EXPENDITURE_QUESTION,
        response_instruction(task, lead=cx.EXPENDITURE_LEAD),
    ])
    return cx.SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    return cx.rounded(row, [f"{c}_lag1" for c in task.targets])


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return cx.rounded(row, task.targets)
