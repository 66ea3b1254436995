"""macro_sce_revision: revised inflation expectations after an inflation surprise
(spec 20_tasks 12).

Facts (reference `scripts/2_tasks/macro_sce_revision/`):
- Pairs: every Core row is a candidate month-12 interview; the same respondent's (unique)
  panel-month-1 row is attached. Kept when the later row has panel_month 12, a month-1 row
  exists and the survey months are exactly 11 calendar months apart (later after earlier).
- CPI (`cpi_major_groups`, `cpi_all_items`): start = the month before the month-1 survey,
  end = the month before the month-12 survey; `realized_inflation_11m` =
  100 * (end / start - 1); `implied_expected_inflation_11m_m1` =
  100 * ((1 + Q9_mean_m1 / 100) ** (11 / 12) - 1) where Q9_mean_m1 > -100;
  `inflation_surprise_11m` = realized - implied.
- Targets: Q9_mean and Q9c_mean at month 12; no-change answer: the month-1 values; gold and
  no-change answers rounded to 3 decimals.
- Cutoffs: month-12 survey-month p01 / p99 of each target over the exact-gap pairs.
- Filters: targets finite; month-12 context and labels, month-1 expectations, month-12 macro,
  CPI start / end, implied, realized, surprise observed; Q9_mean_m1 > -100; Q9 and Q9c densities
  valid at both interviews; age at month 12 in 18-100; targets strictly inside their cutoffs.
- Keys: id = respondent id, time = month-12 survey date, release_date = the month-12 row's.
  Macro context: the month-12 interview's quarter, columns suffixed `_m12`.
- Prompt: household-economy persona; background (m12); finances and work paragraph without the
  month note; macro (m12); the inflation-surprise paragraph with the month note (displayed
  values rounded to 1 decimal, the gap computed from the displayed values); question;
  instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import month_note, render_macro_paragraph, response_instruction
from hhx.tasks.sce import common as c

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, macro_sce_revision).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "macro_sce_revision"
CPI = "cpi_major_groups"
TARGETS = ["expected_inflation_next_12m_m12", "expected_inflation_2y3y_m12"]
PRIOR = ["expected_inflation_next_12m_m1", "expected_inflation_2y3y_m1"]
LABELS = {k: v for k, v in c.CORE_LABELS.items()
          if k in ("_NUM_CAT", "_REGION_CAT", "_EDU_CAT", "_HH_INC_DETAILED", "Q1", "Q2",
                   "Q10_1", "Q10_2", "Q10_3", "Q10_4", "Q10_5", "Q12new", "Q15")}  # fmt: skip
READ = ["age_years", "_NUM_CAT", "_REGION_CAT", "_EDU_CAT", "_HH_INC_DETAILED", "Q1", "Q2",
        "Q10_1", "Q10_2", "Q10_3", "Q10_4", "Q10_5", "Q11", "Q12new", "Q15", "Q16", "Q19",
        "Q9_mean", "Q9__task_valid", "Q9c_mean", "Q9c__task_valid", *LABELS.values()]  # fmt: skip
MACRO_M12 = [f"{col}_m12" for col in CORE_MACRO_COLUMNS]
OBSERVED = [
    "age_years_m12", "_NUM_CAT_m12", "_REGION_CAT_m12", "_EDU_CAT_m12", "_HH_INC_DETAILED_m12",
    "_NUM_CAT__label_m12", "_REGION_CAT__label_m12", "_EDU_CAT__label_m12",
    "_HH_INC_DETAILED__label_m12", *PRIOR, *MACRO_M12, "cpi_index_start", "cpi_index_end",
    "implied_expected_inflation_11m_m1", "realized_inflation_11m", "inflation_surprise_11m",
]  # fmt: skip
QUESTION = (
    "Given this information, by what percentage do you now expect consumer prices to change "
    "over the next 12 months? By what percentage do you now expect them to change over the "
    "12-month period starting two years from now?"
)
LEAD = (
    "Return only a valid JSON array with exactly two numbers, in this order: expected "
    "consumer-price change over the next 12 months; expected consumer-price change over the "
    "12-month period starting two years from now. Use a negative number if you expect "
    "consumer prices to fall."
)


def _cpi(ctx: BuildContext) -> pd.DataFrame:
    cpi = ctx.intermediate(CPI, columns=["date", "cpi_all_items"])
    cpi["date"] = pd.to_datetime(cpi["date"], errors="coerce")
    cpi["cpi_all_items"] = pd.to_numeric(cpi["cpi_all_items"], errors="coerce")
    cpi = cpi.dropna(subset=["date", "cpi_all_items"])
    cpi["month"] = c.month_index(cpi["date"])
    if cpi["month"].duplicated().any():
        raise DataError(f"{CPI}: a month appears twice; rebuild it (survey=cpi)")
    return cpi.set_index("month")["cpi_all_items"]


def _pairs(core: pd.DataFrame, steps: c.Steps) -> pd.DataFrame:
    first = core[core["panel_month"].eq(1).fillna(False)]
    if first["respondent_id"].duplicated().any():
        rid = first.loc[first["respondent_id"].duplicated(), "respondent_id"].iloc[0]
        raise DataError(f"{c.CORE}: respondent {rid} has two panel-month-1 rows")
    pairs = core.add_suffix("_m12").merge(first.add_suffix("_m1"), left_on="respondent_id_m12",
                                          right_on="respondent_id_m1", how="left",
                                          validate="many_to_one")
    if len(pairs) != len(core):
        raise DataError("attaching panel-month-1 rows changed the row count")
    pairs["elapsed_calendar_months"] = (c.month_index(pairs["survey_date_m12"])
                                        - c.month_index(pairs["survey_date_m1"]))
    steps.step("Construct leads and lags", len(core), len(pairs))
    later = pairs["panel_month_m12"].eq(12).fillna(False)
    linked = pairs["respondent_id_m1"].notna()
    gap = (pairs["elapsed_calendar_months"].eq(11)
           & pairs["survey_date_m12"].gt(pairs["survey_date_m1"]))
    return steps.filter(pairs, "Restrict universe", [
        ("current_observation_panel_month_12", later),
        ("linked_panel_month_1_observation_available", ~later | linked),
        ("panel_month_1_to_12_exact_11_calendar_months", ~(later & linked) | gap),
    ]).copy()


def build_table(ctx: BuildContext) -> pd.DataFrame:
    core = c.read_core(ctx, READ)
    steps = c.Steps(len(core))
    core = c.attach_macro(core, ctx)
    steps.step("Attach additional sources", len(core), len(core))
    pairs = _pairs(core, steps)
    for out, source in zip(PRIOR + TARGETS, ["Q9_mean_m1", "Q9c_mean_m1", "Q9_mean_m12",
                                             "Q9c_mean_m12"], strict=True):
        pairs[out] = c.numeric(pairs, source)
    cpi = _cpi(ctx)
    start = c.month_index(pairs["survey_date_m1"]) - 1
    end = c.month_index(pairs["survey_date_m12"]) - 1
    pairs["cpi_index_start"] = start.map(cpi).astype("float64")
    pairs["cpi_index_end"] = end.map(cpi).astype("float64")
    pairs["realized_inflation_11m"] = 100.0 * (pairs["cpi_index_end"] / pairs["cpi_index_start"]
                                               - 1.0)
    prior = pairs["expected_inflation_next_12m_m1"]
    implied = pd.Series(np.nan, index=pairs.index)
    ok = prior.gt(-100.0)
    implied[ok] = 100.0 * ((1.0 + prior[ok] / 100.0) ** (11.0 / 12.0) - 1.0)
    pairs["implied_expected_inflation_11m_m1"] = implied
    pairs["inflation_surprise_11m"] = pairs["realized_inflation_11m"] - implied
    by = ("survey_year_m12", "survey_month_m12")
    for target in TARGETS:  # month-12 cutoffs over the exact-gap pairs
        cuts = c.monthly_cutoffs(pairs, target, by=by, where=f"{TASK} pairs")
        pairs = c.attach_cutoffs(pairs, cuts, target, by=by)
    pairs = steps.filter(pairs, "Require observed targets", [
        (f"target_{t}_finite", np.isfinite(pairs[t].astype("float64"))) for t in TARGETS])

    def seen(column: str) -> pd.Series:
        values = pairs[column]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            return values.notna() & np.isfinite(pd.to_numeric(values, errors="coerce"))
        return values.notna() & values.astype(str).str.strip().ne("")

    pairs = steps.filter(pairs, "Require observed predictors", [
        *[(f"predictor_{col}_observed", seen(col)) for col in OBSERVED],
        ("earlier_expectation_above_negative_100", pairs[PRIOR[0]].gt(-100.0)),
    ])
    validity = ["Q9__task_valid_m1", "Q9c__task_valid_m1", "Q9__task_valid_m12",
                "Q9c__task_valid_m12"]
    pairs = steps.filter(pairs, "Apply logical and validity filters", [
        *[(f"{col}_true", pairs[col].eq(True)) for col in validity],
        ("age_years_m12_between_18_and_100", pairs["age_years_m12"].between(18, 100)),
    ])
    pairs = steps.filter(pairs, "Apply outlier trimming", [
        (f"trim_{t}_strict_inside_later_month_p01_p99", c.inside(pairs, t)) for t in TARGETS])
    table = c.keys(pairs, respondent="respondent_id_m1", date="survey_date_m12",
                   release="release_date_m12")
    table = c.use_labels(table, LABELS, suffix="_m12")
    steps.step("Export sample", len(table), len(table))
    internal = ["_macro_reference_q_index_m12", "survey_date_m1", "cpi_index_start",
                "cpi_index_end"]
    return c.finish(table, ctx.task, steps, internal=internal)


def _change(value: float, verb: bool = False) -> str:
    if verb:
        return "increased" if value >= 0 else "fell"
    return "increase" if value >= 0 else "fall"


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    m12 = "_m12"
    sentences = c.finance_sentences(row, TASK, "contrast", m12)
    c.work_sentences(sentences, row, TASK, m12)
    finances = "Here are your household finances, work situation, and expectations. " + " ".join(
        sentences)
    earlier_12m = float(row[PRIOR[0]])
    earlier_2y3y = float(row[PRIOR[1]])
    implied = round(float(row["implied_expected_inflation_11m_m1"]), 1)
    realized = round(float(row["realized_inflation_11m"]), 1)
    surprise = round(realized - implied, 1)
    surprise_paragraph = (
        "Now consider how actual consumer prices have evolved compared with your expectations "
        f"over recent months. {month_note(int(str(row['time'])[5:7]), True)} Eleven months ago, "
        f"you expected consumer prices to {_change(earlier_12m)} by {abs(earlier_12m):.1f}% over "
        f"the following 12 months, and to {_change(earlier_2y3y)} by {abs(earlier_2y3y):.1f}% "
        "over the 12-month period two to three years ahead. Assuming a constant monthly "
        "expected inflation rate over the following 12 months, your first expectation "
        f"corresponds to an expected {_change(implied)} of {abs(implied):.1f}% over the first 11 "
        f"months of that period. Actual consumer prices {_change(realized, verb=True)} by "
        f"{abs(realized):.1f}% over those 11 months. This was {abs(surprise):.1f} percentage "
        f"points {'above' if surprise >= 0 else 'below'} the implied 11-month expectation."
    )
    user = "\n\n".join([c.background(row, TASK, m12), finances,
                        render_macro_paragraph(row, suffix=m12), surprise_paragraph, QUESTION,
                        response_instruction(task, lead=LEAD)])
    return c.HOUSEHOLD_ECONOMY_PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [round(float(row[t]), 3) for t in TARGETS]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: the month-1 expectations."""
    return [round(float(row[p]), 3) for p in PRIOR]
