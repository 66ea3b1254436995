"""income_mich_finance: expected % change in family income over the next 12 months.

Facts: shared/spec/10_tasks_cons_house_income.md 20 and the reference's
`scripts/2_tasks/income_mich_finance/` (Jn-Huang/householdbench_eval @148abfb).
Unit: one interview (CASEID) of the Michigan SCA. Target `expected_percent_change`: INEXQ1 1
(higher) or 2 (higher at the same rate) -> +|INEXQ2|, 3 (about the same) -> 0, 5 (lower) ->
-|INEXQ2|; otherwise missing. The reference builds it as an object column and converts it with
pd.to_numeric, so it is float (written `5.0`) whenever some interview lacks it. No-change
baseline `[0]`; the gold answer is the target rounded to an integer.

Steps (each evaluated on the rows entering it): monthly p01/p99 cutoffs of the target and of
INCOME over all interviews; macro context of the survey quarter (required for all rows);
targets observed (INEXQ1; INEXQ2 when INEXQ1 is 1, 2 or 5); predictors observed (CASEID,
survey_date, release_date(_source), YYYYMM, AGE, SEX, REGION, MARRY, NUMADT, NUMKID, EDUC,
INCOME, the 21 macro columns, PAGO, BAGO); validity (INEXQ1 1/2/3/5, target present, PAGO and
BAGO 1/3/5, SEX, REGION, MARRY 1/3/4/5, EDUC 1-6); trim: target and INCOME strictly inside
their survey month's (p01, p99). `id` = CASEID, `time` = survey month, typed id CASEID.
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
from hhx.tasks.mich.common import (
    ASSESSMENT_PHRASES,
    CONTEXT_COLUMNS,
    MACRO_REQUIRED,
    Steps,
    attach_survey_macro,
    background_paragraph,
    finish,
    in_domain,
    inside,
    iso,
    label_text,
    load_mich,
    monthly_cutoffs,
    phrase,
    views_opening,
    with_cutoffs,
)
from hhx.tasks.prompting import CLOSING_TEXT_ONLY, render_macro_paragraph, response_instruction

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, income_mich_finance).
OUTPUT_ORDER = ("time:text", "_CASEID:number")

TASK = "income_mich_finance"
PROMPT_RULES = PromptRules(closing=CLOSING_TEXT_ONLY)
TARGET = "expected_percent_change"
LABELLED = ["SEX", "REGION", "MARRY", "EDUC", "PAGO", "BAGO"]
COLUMNS = list(dict.fromkeys(
    CONTEXT_COLUMNS + ["WT", "SAMPLE", "methodology_regime", "panel_id", "panel_wave",
                       "panel_link_expected", "panel_link_ok", "PAGO", "BAGO", "INEXQ1",
                       "INEXQ2"] + [f"{c}_label" for c in LABELLED]))

SYSTEM_PROMPT = ("You are an American adult forming expectations about economic conditions and "
                 "your own finances.")
MARITAL_PHRASES = {
    "Married/partner": "are married or partnered",
    "Married/partner (includes spouse absent)": "are married or partnered",
    "Separated": "are separated",
    "Divorced": "are divorced",
    "Divorced (includes separated)": "are divorced or separated",
    "Widowed": "are widowed",
    "Never married": "have never been married",
}
QUESTION = (
    "By what percentage do you expect your income to change over the next 12 months? Use a "
    "negative number if you expect your income to be lower, a positive number if you expect it "
    "to be higher, and 0 if you expect it to be about the same."
)
RESPONSE_LEAD = "Return only a valid JSON array containing exactly one number."


def signed_change(frame: pd.DataFrame) -> pd.Series:
    """INEXQ1 direction x |INEXQ2| (0 for 'about the same'); float unless always present."""
    direction = frame["INEXQ1"]
    size = frame["INEXQ2"].astype("Float64").abs()
    out = pd.Series(pd.NA, index=frame.index, dtype="Float64")
    up = direction.isin([1, 2]).fillna(False)
    out[up] = size[up]
    out[(direction == 3).fillna(False)] = 0.0
    down = (direction == 5).fillna(False)
    out[down] = -size[down]
    integral = bool(out.notna().all()) and bool((out.dropna() % 1 == 0).all())
    return out.astype("Int64") if integral and len(out) else out.astype("float64")


def build_table(ctx: BuildContext) -> pd.DataFrame:
    task = ctx.task
    mich = load_mich(ctx, COLUMNS)
    if mich.duplicated(["CASEID", "YYYYMM"]).any():
        raise DataError(f"task {TASK}: the mich intermediate repeats (CASEID, YYYYMM)")
    steps = Steps(len(mich))
    mich[TARGET] = signed_change(mich)
    for column in (TARGET, "INCOME"):
        mich = with_cutoffs(mich, monthly_cutoffs(mich, column, TASK), "YYYYMM", column)
    pool = attach_survey_macro(mich, ctx)

    pool = steps.keep(pool, [
        ("target INEXQ1 present", pool["INEXQ1"].notna()),
        ("target INEXQ2 present when INEXQ1 is 1, 2 or 5",
         ~pool["INEXQ1"].isin([1, 2, 5]).fillna(False) | pool["INEXQ2"].notna()),
    ])
    pool = steps.keep(pool, [(f"predictor {c} present", pool[c].notna())
                             for c in CONTEXT_COLUMNS + MACRO_REQUIRED + ["PAGO", "BAGO"]])
    pool = steps.keep(pool, [
        ("INEXQ1 in 1, 2, 3, 5", in_domain(pool, "INEXQ1")),
        ("expected_percent_change present", pool[TARGET].notna()),
        *[(f"{c} in its codebook domain", in_domain(pool, c))
          for c in ("PAGO", "BAGO", "SEX", "REGION", "MARRY", "EDUC")],
    ])
    if pool.empty:
        raise DataError(f"task {TASK}: no interviews remain after the validity filters")
    pool = steps.keep(pool, [
        (f"trim {c} strictly inside its month's p01-p99", inside(pool, c, c, TASK))
        for c in (TARGET, "INCOME")
    ])
    if pool.empty:
        raise DataError(f"task {TASK}: no interviews remain after outlier trimming")

    table = pd.DataFrame({
        "id": pool["CASEID"].astype("int64").astype(str),
        "time": iso(pool["survey_date"]),
        "release_date": iso(pool["release_date"]),
        TARGET: pool[TARGET],
        "_CASEID": pool["CASEID"].astype("int64"),
        **{c: pool[c] for c in ("NUMADT", "NUMKID", "AGE", "INCOME", *CORE_MACRO_COLUMNS)},
        **{c: label_text(pool, c, TASK, required=True) for c in LABELLED},
        "_subject_id": pool["panel_id"].astype("int64").astype(str),
        "_release_date_source": pool["release_date_source"].astype(str),
    }, index=pool.index)
    return finish(table, task, steps, ["_CASEID", "_subject_id", "_release_date_source"])


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    views = (
        f"{views_opening(row, TASK)} You report that your personal finances are "
        f"{phrase(row, 'PAGO', ASSESSMENT_PHRASES, TASK)} than they were a year ago, while "
        f"national business conditions are {phrase(row, 'BAGO', ASSESSMENT_PHRASES, TASK)} than "
        "they were a year ago."
    )
    user = "\n\n".join([
        background_paragraph(row, TASK, MARITAL_PHRASES),
        views,
        render_macro_paragraph(row),
        QUESTION,
        response_instruction(task, lead=RESPONSE_LEAD),
    ])
    return SYSTEM_PROMPT, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    """The reference's gold answer: the target rounded to an integer."""
    return [int(round(float(row[TARGET])))]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change in income."""
    return [0]
