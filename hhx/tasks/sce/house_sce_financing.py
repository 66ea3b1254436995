"""house_sce_financing: the maximum home price and down payment in three hypothetical financing
situations of the February 2014 Fuster-Zafar experiment (spec 10_tasks 18, 00_common 1.9).

Facts (reference `scripts/2_tasks/house_sce_financing/01_make_table.py`, `02_render_prompts.py`
of Jn-Huang/householdbench_eval @148abfb; wording below is hhx's):
- Source: the `sce_financing` intermediate (hhx.surveys.sce.financing), one row per userid; it
  must hold exactly 1,211 respondents, 1,200 of them assigned (hypoversion 1 or 2).
- Keys: id = "fz_" + userid (as an integer), time = 2014-02-01; release_date = the SCE housing
  module's date for February 2014: the 18-month lag rule (2015-08-01, the reference's
  "SCE housing 18-month conservative proxy" row of release_sce.csv). Macro origin 2014Q1
  (year * 4 + 1): the 20 core columns of 2013Q1-2013Q4 and the five-year references.
- Steps (the build report): 1 start; 2 attach release date and macro; 3 leads/lags (none);
  4 universe (the file is the universe); 5 all six targets observed; 6 predictors observed:
  initial_wtp > 0, both rates in {4.5, 6.5}, initial payment > 0, comparable home value > 0,
  age / sex / education / married / both child counts / income band / region present, tenure
  owner or renter with owners' current value > 0 and housing debt >= 0 (both present),
  savings / non-housing-debt / credit bands present, numeracy / risk / 3-year move chance /
  ZIP investment view present, release date and macro present; 7 validity: the four WTP > 0,
  each later down payment >= floor(0.05 * its price + 0.5) and <= its price, age 18-100,
  children >= 0, non_house_debt >= 0, liquid savings >= 0, numeracy 0-5, risk 1-10,
  move chance 0-100, ZIP view yes/no; 8 trim: a row goes when any of initial_wtp, the six
  targets or comparable_home_value is <= its p01 or >= its p99 (pandas linear quantiles over the
  rows left after step 7; a degenerate p01 >= p99 is an error); 9 export (all rows, under the
  cap).
- Public values keep the intermediate's types (floats written `250000.0`); married is the text
  "True" / "False"; region is the file's region value as read. The six targets are floats in
  the official table (`79000.0`): they are hypo_q2..hypo_d4 as `pd.read_stata` gives them, and
  the unassigned / unanswered respondents leave them missing, so the column is float64 and
  pandas' `to_csv` writes `79000.0` (likewise initial_wtp, initial_down_payment, the payment,
  and current_home_value / housing_debt, which `np.where(owner, ..., 0.0)` makes float: a
  renter's `0.0`). Only the answer (`assistant`) and the no-change baseline write whole dollars
  as integers (`[79000, ...]`). hhx lists these columns in `attrs["float_columns"]`
  (`common.finish`), which the release writer keeps.
- Prompt: persona "decisions about housing, borrowing, and household finances"; background
  (age with article, sex, married, education, region, children, numeracy out of 5); finances
  with the embedded "$ denotes amounts in U.S. dollars." note (income band as "between X and
  Y", owner's home value and housing debt or "You rent your current home.", savings band as
  is, non-housing debt as "between ...", credit band, comparable home value, risk 1-10, move
  chance with one decimal, ZIP view); the core macro paragraph; the initial scenario (owners
  sell and pay off, renters need not sell; 20% down at the initial rate with one decimal; the
  stated price, implied down payment and calculator payment; the calculator's terms; $507 /
  $632 per $100,000); "Now consider three further situations, in this order." and one
  paragraph per situation; the question; the fixed response instruction.
- Answer: the six targets as numbers (whole dollars as integers, else 2 decimals); no-change:
  [initial_wtp, initial_down_payment] three times.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS, attach_macro_context
from hhx.surveys.macro.release_dates import sce_inferred_release_date
from hhx.surveys.sce.financing import OUTPUT_NAME, TARGETS
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import (
    DOLLAR_NOTE,
    article,
    format_dollars,
    render_macro_paragraph,
    response_instruction,
)
from hhx.tasks.sce import common as c

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, house_sce_financing).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "house_sce_financing"
SURVEY_YEAR, SURVEY_MONTH = 2014, 2
SURVEY_DATE = "2014-02-01"
EXPECTED_RESPONDENTS, EXPECTED_ASSIGNED = 1211, 1200
TARGET_COLUMNS = list(TARGETS)
TRIMMED = ["initial_wtp", *TARGET_COLUMNS, "comparable_home_value"]
SOURCE_COLUMNS = [
    "userid", "hypoversion", "initial_rate", "alternative_rate", "initial_wtp",
    "initial_down_payment", "initial_effective_monthly_payment", *TARGET_COLUMNS,
    "comparable_home_value", "age", "residence_children_under18", "residence_children_over18",
    "sex", "education", "married", "income_band", "region", "tenure", "owner",
    "current_home_value", "housing_debt", "liquid_savings_usd", "liquid_savings_band",
    "non_house_debt", "non_housing_debt_band", "credit_score_band", "numeracy_score",
    "willingness_to_take_risks", "probability_move_three_years", "property_good_investment",
]  # fmt: skip
PERSONA = ("You are an American adult making decisions about housing, borrowing, and household "
           "finances.")
INTRO = "Here is some background information about yourself and your household."
QUESTION = ("For each situation, state the maximum home price you would be willing to pay and "
            "the dollar down payment you would choose.")
LEAD = ("Return only a valid JSON array with exactly 6 numbers in this order: "
        "situation_1_maximum_price, situation_1_down_payment, situation_2_maximum_price, "
        "situation_2_down_payment, situation_3_maximum_price, situation_3_down_payment. All six "
        "numbers must be nominal U.S. dollars.")
CALCULATOR = (
    "for a 30-year fixed-rate loan, including principal and interest, estimated "
    "mortgage-interest tax savings assuming that 95% of interest is deductible at a 34% income "
    "tax rate, and maintenance, property taxes, and homeowners insurance equal in total to "
    "3.35% of the comparable-home value per year. For reference, the principal-and-interest "
    "payment alone on each $100,000 borrowed is about $507 per month at 4.5% and $632 per month "
    "at 6.5%."
)


def _num(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(frame[column], errors="coerce")


def _read(ctx: BuildContext) -> pd.DataFrame:
    return ctx.intermediate(OUTPUT_NAME, columns=SOURCE_COLUMNS)


def _check_universe(raw: pd.DataFrame) -> None:
    ids = raw["userid"]
    if ids.isna().any() or ids.duplicated().any():
        raise DataError(f"{OUTPUT_NAME}: userid must be present and unique in every row; "
                        "rebuild it (survey=sce_financing)")
    assigned = int(_num(raw, "hypoversion").isin([1, 2]).sum())
    if len(raw) != EXPECTED_RESPONDENTS or assigned != EXPECTED_ASSIGNED:
        raise DataError(
            f"{OUTPUT_NAME}: {len(raw)} respondents, {assigned} assigned to a rate version; the "
            f"experiment has {EXPECTED_RESPONDENTS} and {EXPECTED_ASSIGNED}: rebuild it from the "
            "unmodified FZdata_raw.dta (survey=sce_financing)")


def _five_percent(price: pd.Series) -> pd.Series:
    """The questionnaire's minimum down payment (JavaScript Math.round of 5%)."""
    return np.floor(0.05 * price + 0.5)


def _trim(pool: pd.DataFrame) -> pd.Series:
    """True where a row lies strictly inside every trimmed column's p01 / p99."""
    keep = pd.Series(True, index=pool.index)
    for column in TRIMMED:
        values = _num(pool, column)
        if values.isna().any() or values.le(0).any():
            raise DataError(f"{TASK}: {column} must be complete and positive before the trim")
        p01 = float(values.quantile(0.01, interpolation="linear"))
        p99 = float(values.quantile(0.99, interpolation="linear"))
        if not p01 < p99:
            raise DataError(f"{TASK}: degenerate trim cutoffs for {column} ({p01:g} >= {p99:g}); "
                            "too few distinct respondents left")
        keep &= values.gt(p01) & values.lt(p99)
    return keep


def build_table(ctx: BuildContext) -> pd.DataFrame:
    raw = _read(ctx)
    _check_universe(raw)
    raw["respondent_id"] = "fz_" + _num(raw, "userid").astype("Int64").astype(str)
    steps = c.Steps(len(raw))
    pool = raw.reset_index(drop=True)
    pool["survey_date"] = pd.Timestamp(SURVEY_DATE)
    pool["release_date"] = pd.Timestamp(
        sce_inferred_release_date("housing", SURVEY_YEAR, SURVEY_MONTH))
    origin = pd.Series(SURVEY_YEAR * 4 + 1, index=pool.index)
    pool = attach_macro_context(pool, origin, ctx.macro_context)
    pool = pool.rename(columns={"macro_reference_q_index": "_macro_reference_q_index"})
    steps.step("Attach additional sources", len(raw), len(pool))
    steps.step("Construct leads and lags", len(pool), len(pool))
    steps.step("Restrict universe", len(pool), len(pool))
    pool = steps.filter(pool, "Require observed targets", [
        ("all_six_scored_answers_observed", pool[TARGET_COLUMNS].notna().all(axis=1)),
    ])
    owner = pool["owner"].astype(bool)
    owner_context = ~owner | (pool[["current_home_value", "housing_debt"]].notna().all(axis=1)
                              & _num(pool, "current_home_value").gt(0)
                              & _num(pool, "housing_debt").ge(0))
    present = lambda cols: pool[cols].notna().all(axis=1)  # noqa: E731
    pool = steps.filter(pool, "Require observed predictors", [
        ("initial_wtp_observed", _num(pool, "initial_wtp").gt(0)),
        ("valid_randomized_rate_assignment", pool["initial_rate"].isin([4.5, 6.5])
         & pool["alternative_rate"].isin([4.5, 6.5])),
        ("initial_calculator_output", _num(pool, "initial_effective_monthly_payment").gt(0)),
        ("comparable_home_value", _num(pool, "comparable_home_value").gt(0)),
        ("demographic_context", present(["age", "sex", "education", "married",
                                         "residence_children_under18",
                                         "residence_children_over18", "income_band",
                                         "region"])),
        ("tenure_and_owner_housing_context", pool["tenure"].isin(["owner", "renter"])
         & owner_context),
        ("financial_context", present(["liquid_savings_band", "non_housing_debt_band",
                                       "credit_score_band"])),
        ("numeracy_and_preferences", present(["numeracy_score", "willingness_to_take_risks",
                                              "probability_move_three_years",
                                              "property_good_investment"])),
        ("release_and_macro_context", pool["release_date"].notna()
         & present(CORE_MACRO_COLUMNS)),
    ])
    wtp = [_num(pool, col) for col in ("initial_wtp", "wtp_flexible_original_rate",
                                       "wtp_flexible_alternative_rate",
                                       "wtp_after_cash_inheritance")]
    pairs = [(_num(pool, f"down_payment_{s}"), _num(pool, f"wtp_{s}"))
             for s in ("flexible_original_rate", "flexible_alternative_rate")]
    pairs.append((_num(pool, "down_payment_after_cash_inheritance"),
                  _num(pool, "wtp_after_cash_inheritance")))
    ranges = (_num(pool, "age").between(18, 100)
              & _num(pool, "residence_children_under18").ge(0)
              & _num(pool, "residence_children_over18").ge(0)
              & _num(pool, "non_house_debt").ge(0) & _num(pool, "liquid_savings_usd").ge(0)
              & _num(pool, "numeracy_score").between(0, 5)
              & _num(pool, "willingness_to_take_risks").between(1, 10)
              & _num(pool, "probability_move_three_years").between(0, 100)
              & pool["property_good_investment"].isin(["yes", "no"]))
    pool = steps.filter(pool, "Apply logical and validity filters", [
        ("positive_direct_wtp", np.logical_and.reduce([w.gt(0).to_numpy() for w in wtp])),
        ("five_percent_minimum_down_payment", np.logical_and.reduce(
            [d.ge(_five_percent(p)).to_numpy() for d, p in pairs])),
        ("down_payment_not_above_purchase_price", np.logical_and.reduce(
            [d.le(p).to_numpy() for d, p in pairs])),
        ("context_ranges", ranges),
    ])
    if pool.empty:
        raise DataError(f"{TASK}: no respondent passes the validity filters")
    pool = steps.filter(pool, "Apply outlier trimming", [
        ("strict_interior_1st_99th_percentile", _trim(pool)),
    ])
    steps.step("Export sample", len(pool), len(pool))
    pool["married"] = pool["married"].map(
        lambda v: str(bool(v)) if c.present(v) else pd.NA).astype("string")
    table = c.keys(pool)
    return c.finish(table, ctx.task, steps, internal=["_macro_reference_q_index"])


# --------------------------------------------------------------------------------------------
# Prompt


def _text(value: Any) -> str:
    return str(value).strip()


def _int(value: Any) -> int:
    return int(float(value))


def _range(label: str) -> str:
    lower, sep, upper = label.partition(" to ")
    return f"between {lower} and {upper}" if sep else label


def _children(under: int, over: int) -> str:
    if under + over == 0:
        return "no children"
    parts = []
    if under:
        parts.append(f"{under} {'child' if under == 1 else 'children'} under 18")
    if over:
        parts.append(f"{over} adult {'child' if over == 1 else 'children'}")
    return " and ".join(parts)


def _tenure(row: Mapping[str, Any]) -> str:
    tenure = _text(row["tenure"])
    if tenure not in ("owner", "renter"):
        raise DataError(f"{TASK} id {row.get('id')!r}: tenure {row['tenure']!r} is not owner or "
                        "renter")
    return tenure


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    tenure = _tenure(row)
    age = _int(row["age"])
    married = "are married" if _text(row["married"]).lower() == "true" else "are not married"
    children = _children(_int(row["residence_children_under18"]),
                         _int(row["residence_children_over18"]))
    personal = (
        f"You are {article(age)} {age}-year-old {_text(row['sex'])}, {married}, and your highest "
        f"completed education is {_text(row['education'])}. You live in the "
        f"{_text(row['region'])} and have {children} living with you. You answered "
        f"{_int(row['numeracy_score'])} of 5 numeracy questions correctly.")
    if tenure == "owner":
        housing = (f"You own your current home, which is worth about "
                   f"{format_dollars(float(row['current_home_value']))}, and you have about "
                   f"{format_dollars(float(row['housing_debt']))} in outstanding housing-related "
                   "debt.")
        sell = ("You would sell your current home and use the proceeds to pay off any remaining "
                "mortgage.")
    else:
        housing = "You rent your current home."
        sell = "You do not need to sell a current home."
    invest = "do" if _text(row["property_good_investment"]) == "yes" else "do not"
    finances = (
        f"Your household income is {_range(_text(row['income_band']))}. {housing} Your liquid "
        f"savings are {_text(row['liquid_savings_band'])}, your non-housing debt is "
        f"{_range(_text(row['non_housing_debt_band']))}, and your credit-score band is "
        f"{_text(row['credit_score_band'])}. A typical comparable home costs about "
        f"{format_dollars(float(row['comparable_home_value']))}. On a scale from 1 to 10, your "
        f"willingness to take risks is {_int(row['willingness_to_take_risks'])}. You give a "
        f"{float(row['probability_move_three_years']):.1f}% chance of moving within the next "
        f"three years. You {invest} regard property in your ZIP code as a good investment.")
    rate = float(row["initial_rate"])
    other = 6.5 if rate == 4.5 else 4.5
    initial = (
        "Imagine that you move to a comparable city and are considering a comparable home where "
        f"you plan to remain for a long time. {sell} With a 20% down payment and a 30-year "
        f"mortgage rate of {rate:.1f}%, the most you would pay for the home is "
        f"{format_dollars(float(row['initial_wtp']))}, implying a down payment of "
        f"{format_dollars(float(row['initial_down_payment']))}. This is equivalent to an "
        "effective total monthly payment of about "
        f"{format_dollars(float(row['initial_effective_monthly_payment']))} {CALCULATOR}")
    no_cash = "You receive no extra cash before purchase."
    situations = [
        "Now consider three further situations, in this order.",
        f"Situation 1: The mortgage rate remains {rate:.1f}%, but you may choose any down "
        f"payment of at least 5% of the home price. {no_cash}",
        f"Situation 2: The mortgage rate is {other:.1f}%, and you may again choose any down "
        f"payment of at least 5% of the home price. {no_cash}",
        f"Situation 3: The mortgage rate remains {other:.1f}%, you may choose any down payment "
        "of at least 5%, and you unexpectedly receive $100,000 in cash before buying the home. "
        "You may use all, some, or none of this cash for the down payment.",
    ]
    user = "\n\n".join([
        f"{INTRO} {personal}",
        "Here are your household finances, housing situation, preferences, and expectations. "
        f"{DOLLAR_NOTE} {finances}",
        render_macro_paragraph(row),
        initial,
        *situations,
        QUESTION,
        response_instruction(task, lead=LEAD),
    ])
    return PERSONA, user


def _dollars(value: Any, where: str) -> int | float:
    number = float(value)
    if not math.isfinite(number):
        raise DataError(f"{where}: expected a finite dollar value, got {value!r}")
    return int(number) if number.is_integer() else round(number, 2)


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [_dollars(row[col], f"{TASK} {col}") for col in TARGET_COLUMNS]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: the initial answer (price and its 20% down payment) for each situation."""
    pair = [_dollars(row["initial_wtp"], f"{TASK} initial_wtp"),
            _dollars(row["initial_down_payment"], f"{TASK} initial_down_payment")]
    return pair * 3
