"""Shared mechanics of the SCE topical-module task builders (issue 16; spec 10_tasks 12-14, 16,
19 and 20_tasks 0.6, 7, 8), on top of hhx.tasks.sce.common.

Facts (reference `scripts/2_tasks/{cons_sce_growth,cons_sce_shock,income_sce_policy,
labor_sce_offer}/01_make_table.py` and `02_render_prompts.py`; the text here is hhx's own):

Table side
- Each module table (`sce_household_spending`, `sce_public_policy`, `sce_labor_market`, ...)
  is the source: step 1 counts its rows. Source-wide cutoffs (p01 / p99 per survey month) are
  computed on the whole module table before anything else.
- Step 2 left-joins the Core context on (respondent_id, survey_year, survey_month): the
  columns `MODULE_CORE` (age_years, _NUM_CAT, _REGION_CAT, _EDU_CAT, _HH_INC_DETAILED, Q1, Q2,
  Q9_mean, Q9c_mean, Q10_1..Q10_5) and their `__label` columns; then the 20 core macro columns of
  the survey-date quarter (every row must be covered). A Core respondent-month in two rows is an
  error. The module rows keep their order.
- Step 3 checks the codes of the module's coded items (e.g. qsp1 and k2e in {1, 2}): a code
  outside the set is an error naming the column, as in the reference.
- The required predictors of step 6 are release_date, `_HH_INC_DETAILED__label` and the
  common context (age_years, _NUM_CAT, _REGION_CAT, _EDU_CAT, _HH_INC_DETAILED, 20 macro
  columns); cons_sce_growth adds Q1, Q2, Q9_mean, Q9c_mean, Q10_1..5 and k2e.
- Public categorical columns show their `__label` text (module items too: k2e "yes"/"no",
  qsp1 "higher"/"lower", nl2b_1 "full-time"/"part-time", hidqp2_* / qp2_* labels).

Prompt side
- Background as the Core tasks (common.background).
- Finance paragraph "Here are your household finances, work situation, and expectations."
  with the month and currency note; the income sentence; the Q1 / Q2 sentence (wording per
  task, see `q1_q2_sentence`); the inflation sentence "You expect inflation to be X% over the
  next 12 months[ and Y% over the next three years]." (1 decimal, only when Q9_mean is shown);
  the work items.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import month_note
from hhx.tasks.sce import common as c

# Module tables have no panel_month (their sheets carry no tenure).
MODULE_STRUCTURAL = [s for s in c.STRUCTURAL if s != "panel_month"]
CORE_ITEMS = ["age_years", "_NUM_CAT", "_REGION_CAT", "_EDU_CAT", "_HH_INC_DETAILED", "Q1", "Q2",
              "Q9_mean", "Q9c_mean", "Q10_1", "Q10_2", "Q10_3", "Q10_4", "Q10_5"]  # fmt: skip
CORE_LABELS = {k: v for k, v in c.CORE_LABELS.items() if k in CORE_ITEMS}
MODULE_CORE = [*CORE_ITEMS, *CORE_LABELS.values()]
COMMON_CONTEXT = ["age_years", "_NUM_CAT", "_REGION_CAT", "_EDU_CAT", "_HH_INC_DETAILED",
                  *CORE_MACRO_COLUMNS]  # fmt: skip
REQUIRED_BASE = ["release_date", "_HH_INC_DETAILED__label", *COMMON_CONTEXT]
FINANCES_INTRO = "Here are your household finances, work situation, and expectations."
HOUSEHOLD_HEAD_PERSONA = (
    "You are the head of an American household making decisions and forming expectations "
    "about income, spending, and saving."
)


def read_module(ctx: BuildContext, name: str, columns: Iterable[str]) -> pd.DataFrame:
    """A module intermediate (no panel_month), dates parsed, file order kept."""
    return c.read_sce(ctx, name, columns, structural=MODULE_STRUCTURAL).reset_index(drop=True)


def attach_context(module: pd.DataFrame, ctx: BuildContext, steps: c.Steps,
                   core_columns: Sequence[str] = MODULE_CORE) -> pd.DataFrame:
    """Step 2: Core context (left join) and the core macro block."""
    core = c.read_core(ctx, core_columns)
    pool = c.join_core(module, core, core_columns)
    pool = c.attach_macro(pool, ctx)
    steps.step("Attach additional sources", len(module), len(pool))
    return pool


def check_codes(frame: pd.DataFrame, codes: Mapping[str, Iterable[int]], task: str) -> None:
    """Every answered code of these items lies in its set (the reference stops otherwise)."""
    for column, allowed in codes.items():
        values = pd.to_numeric(frame[column], errors="coerce").dropna()
        unexpected = sorted(set(values.round().astype(int)) - set(allowed))
        if unexpected:
            raise DataError(f"{task}: column {column} holds unexpected codes {unexpected} "
                            f"(allowed {sorted(allowed)}); check the module workbook")


def staged_filter(steps: c.Steps, frame: pd.DataFrame, label: str,
                  stages: Sequence[Sequence[tuple[str, Callable[[pd.DataFrame], Any]]]]
                  ) -> pd.DataFrame:
    """One construction step whose filters apply in stages: each stage's masks are counted on
    the rows left by the previous stage (the reference's age filter after the share checks)."""
    before = len(frame)
    number = steps.number + 1
    details: list = []
    for stage in stages:
        keep = np.ones(len(frame), dtype=bool)
        for name, mask_of in stage:
            mask = c._as_bool(mask_of(frame))
            keep &= mask
            details.append({"step": f"{number}.{len(details) + 1} {name}",
                            "rows": int(mask.sum()), "dropped": int((~mask).sum())})  # fmt: skip
        frame = frame.loc[keep]
    steps.step(label, before, len(frame))
    steps.rows[-1:-1] = details
    return frame


def source_cutoffs(module: pd.DataFrame, values: pd.Series, name: str,
                   where: str) -> pd.DataFrame:
    """Survey-month p01 / p99 of `values` over the whole module table, attached as
    `<name>_p01` / `<name>_p99` (a month whose p01 equals its p99 is an error)."""
    frame = module[["survey_year", "survey_month"]].assign(**{name: values})
    cutoffs = c.monthly_cutoffs(frame, name, where=where)
    return c.attach_cutoffs(module, cutoffs, name)


def inside_or_missing(frame: pd.DataFrame, column: str) -> pd.Series:
    """Missing, or strictly inside its month's p01 / p99 (an observed value of a month without
    cutoffs is an error)."""
    values = pd.to_numeric(frame[column], errors="coerce")
    low, high = frame[f"{column}_p01"], frame[f"{column}_p99"]
    if (values.notna() & (low.isna() | high.isna())).any():
        raise DataError(f"{column}: observed values of a survey month without cutoffs")
    return values.isna() | (values.gt(low) & values.lt(high))


def publish(frame: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """Public keys, and label text in the Core and module categorical columns."""
    return c.use_labels(c.use_labels(c.keys(frame), CORE_LABELS), labels)


# --------------------------------------------------------------------------------------------
# Rendering


def q1_q2_sentence(q1: str | None, q2: str | None, style: str) -> str | None:
    """The Q1 / Q2 sentence: "household" (both: "... and you expect your household finances to
    be ..."), "household_single" (the same, or either one alone, cons_sce_growth) or "it"
    (both: "... and you expect it to be ...")."""
    if q1 and q2:
        if style == "it":
            return (f"Your household is {q1} than it was 12 months ago, and you expect it to be "
                    f"{q2} 12 months from now.")
        return (f"Your household is {q1} than it was 12 months ago, and you expect your "
                f"household finances to be {q2} 12 months from now.")
    if style != "household_single":
        return None
    if q1:
        return f"Your household is {q1} than it was 12 months ago."
    if q2:
        return f"You expect your household finances to be {q2} 12 months from now."
    return None


def inflation_sentence(row: Mapping[str, Any]) -> str | None:
    if not c.present(row.get("Q9_mean")):
        return None
    text = f"You expect inflation to be {float(row['Q9_mean']):.1f}% over the next 12 months"
    if c.present(row.get("Q9c_mean")):
        return text + f" and {float(row['Q9c_mean']):.1f}% over the next three years."
    return text + "."


def finance_start(row: Mapping[str, Any], task: str, style: str) -> list[str]:
    """Income, Q1 / Q2 and inflation sentences."""
    q1, q2 = c.finance_labels(row, task)
    out = [c.income_sentence(row)]
    pair = q1_q2_sentence(q1, q2, style)
    if pair:
        out.append(pair)
    inflation = inflation_sentence(row)
    if inflation:
        out.append(inflation)
    return out


def work_sentence(row: Mapping[str, Any], task: str) -> str | None:
    """"You work full-time." or "Your current work situation includes a, b." (policy, offer)."""
    labels = c.work_labels(row, task)
    if not labels:
        return None
    if len(labels) == 1:
        return f"You work {labels[0].replace('working ', '')}."
    return f"Your current work situation includes {', '.join(labels)}."


def finances_with_work(row: Mapping[str, Any], task: str, style: str) -> list[str]:
    """Income, Q1 / Q2, inflation and the work sentence (policy, offer)."""
    sentences = finance_start(row, task, style)
    work = work_sentence(row, task)
    return [*sentences, work] if work else sentences


def finances_paragraph(row: Mapping[str, Any], sentences: Sequence[str]) -> str:
    note = month_note(int(str(row["time"])[5:7]), True)
    return f"{FINANCES_INTRO} {note} " + " ".join(sentences)
