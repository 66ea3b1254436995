"""cons_cex_categories: spending in the twelve CE categories over the past three months (spec
10_tasks section 3; the reference's scripts/2_tasks/cons_cex_categories).

As cons_cex_total (hhx.tasks.cex.common) with the twelve categories as targets and history: a
lag is usable only with its Parker total and all twelve categories; validity filters require
each category >= 0 (current and lags) beside the income and Parker-total minimums; trims as the
total task. The macro context adds the eight CPI groups (optional: the paragraph is left out
when a lag is missing, the five-year sentence when a five-year value is). The twelve categories
must sum to the Parker total (tolerance 1e-3, current and every present lag; the reference stops
otherwise) and no exported category may be negative.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CATEGORY_CPI_MACRO_COLUMNS
from hhx.tasks.cex import common as cx
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import (
    format_dollars,
    render_category_cpi_paragraph,
    render_macro_paragraph,
    response_instruction,
)

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, cons_cex_categories).
OUTPUT_ORDER = ("id:text", "time:text")
TASK = "cons_cex_categories"

CATEGORIES = [
    ("cons_food", "food"),
    ("cons_alcohol", "alcoholic beverages"),
    ("cons_housing", "housing"),
    ("cons_apparel", "apparel and services"),
    ("cons_transport", "transportation"),
    ("cons_health", "health care"),
    ("cons_entertainment", "entertainment"),
    ("cons_personal_care", "personal care"),
    ("cons_read", "reading"),
    ("cons_education", "education"),
    ("cons_tobacco", "tobacco"),
    ("cons_misc", "miscellaneous"),
]
DETAIL = [c for c, _ in CATEGORIES]
PARKER = "cons_parker_total"
IDENTITY_TOLERANCE = 1e-3
LAGGED = ["income_before_tax", "interview_year", "interview_month", "quarter", "cons_total",
          PARKER, *cx.CUTOFF_COLUMNS, *DETAIL]
HISTORY = [PARKER, *DETAIL]
CURRENT = [*cx.DEMOGRAPHICS, *cx.KEYS, "income_before_tax", "cons_total", "release_date",
           "release_date_source"]
QUESTION = (
    "Given this information, how much did your household spend in each of the "
    "categories during the past three months, in current U.S. dollars?"
)
LEAD = (
    "Return only a valid JSON array with 12 numeric elements, in this order: food, alcoholic "
    "beverages, housing, apparel and services, transportation, health care, entertainment, "
    "personal care, reading, education, tobacco, and miscellaneous."
)


def check_identity(table: pd.DataFrame, task: str) -> None:
    """The categories add up to the Parker total; nothing exported is negative."""
    for suffix, rows in [("", pd.Series(True, index=table.index)),
                         *[(f"_lag{k}", table[f"interview_month_index_lag{k}"].notna())
                           for k in cx.LAGS]]:
        part = table.loc[rows]
        parts = part[[f"{c}{suffix}" for c in DETAIL]]
        gap = parts.sum(axis=1, min_count=len(DETAIL)) - part[f"{PARKER}{suffix}"]
        bad = gap.abs().gt(IDENTITY_TOLERANCE) | gap.isna()
        if bad.any():
            row = part.loc[bad].iloc[0]
            raise DataError(
                f"task {task}: the twelve categories{suffix or ''} of {row['cex_panel_id']} "
                f"({row['interview_year']}-{row['interview_month']:02d}) do not add up to "
                f"{PARKER}{suffix} ({int(bad.sum())} rows, gap {float(gap[bad].iloc[0]):.6f}); "
                "the intermediate's spending columns are inconsistent"
            )
        if parts.lt(0).any().any():
            raise DataError(f"task {task}: negative category spending{suffix} in the table")
    if table[PARKER].le(0).any():
        raise DataError(f"task {task}: a non-positive {PARKER} in the table")


def build_table(ctx: BuildContext) -> pd.DataFrame:
    name = ctx.task.name
    steps = cx.Steps()
    cex = cx.load_panel(ctx, ["cons_total", PARKER, *DETAIL])
    attrs = dict(cex.attrs)
    steps.step("Start from source observations", len(cex), len(cex))
    cex = cx.attach_cutoffs(cex, name)
    before = len(cex)
    cex = cx.attach_macro(cex, ctx, optional=CATEGORY_CPI_MACRO_COLUMNS)
    steps.step("Attach additional sources", before, len(cex))
    cex = cx.add_lags(cex, LAGGED, HISTORY)
    steps.step("Construct leads and lags", len(cex), len(cex))
    steps.step("Restrict universe", len(cex), len(cex))
    cex = cx.apply(cex, steps, "Require observed targets",
                   [(f"target_{c}_not_missing", cex[c].notna()) for c in HISTORY])
    pool = cx.apply(cex, steps, "Require observed predictors", [
        *[(f"current_predictor_{c}_not_missing", cex[c].notna()) for c in CURRENT],
        *[(f"lag1_required_{c}_lag1_not_missing", cex[f"{c}_lag1"].notna()) for c in HISTORY],
    ])
    pool = cx.apply(pool, steps, "Apply logical and validity filters",
                    cx.validity_filters(pool, DETAIL))
    pool = cx.apply(pool, steps, "Apply outlier trimming", cx.trim_filters(pool, name))
    cx.check_lag_structure(pool, HISTORY, name)
    check_identity(pool, name)
    pool.attrs.update(attrs)
    return cx.public_table(pool, ctx, steps, {"_newid": pool["newid"]})


def _history_sentence(row: Mapping[str, Any], k: int) -> str:
    parts = [f"{format_dollars(float(row[f'{c}_lag{k}']))} on {label}" for c, label in CATEGORIES]
    joined = "; ".join(parts[:-1]) + f"; and {parts[-1]}"
    return f"{cx.LAG_LABELS[k].capitalize()}, your household spent {joined}."


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    lags = cx.available_lags(row, DETAIL)
    parts = [
        cx.background_paragraph(row),
        cx.spending_paragraph(row, [_history_sentence(row, k) for k in reversed(lags)]),
        render_macro_paragraph(row),
    ]
    category = render_category_cpi_paragraph(row)
    if category:
        parts.append(category)
    parts += [QUESTION, response_instruction(task, lead=LEAD)]
    return cx.SYSTEM_PROMPT, "\n\n".join(parts)


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    return cx.rounded(row, [f"{c}_lag1" for c in DETAIL])


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return cx.rounded(row, DETAIL)

