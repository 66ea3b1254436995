"""house_sce_lockin: chance of moving within three years if the current mortgage rate could be
kept on a new home (spec 10_tasks 16).

Facts (reference `scripts/2_tasks/house_sce_lockin/`):
- Unit: a respondent of a February Housing Survey wave (`sce_housing`), Core context and the
  macro block plus mortgage30us_rate_lag1 attached (every row must be covered).
- Loan status and mortgage rate are read from ONE column each: the first of (qh5, HQH5) and of
  (qh5m2_1, HQH5m2_1) that the housing table has at all (not coalesced per row; the reference
  stops when neither exists). The canonical public columns coalesce across the wave names
  (first non-blank): local_home_value (q1_1, HQ1_1), partnered (q38, hq38, HQ38 labels),
  purchase_price (qh2_1, HQH2_1), current_home_value (qh3_1, HQH3_1), loan_balance (qh5a_1,
  HQH5a_1), loan_status (qh5, HQH5 labels), mortgage_rate_type (qh5m, HQH5m labels),
  current_mortgage_rate (qh5m2_1, HQH5m2_1); ordinary_move_probability coalesces Q6a_1, q6a_1,
  hq6a_1, HQ6a_1; lockin_move_probability = q6a_lock; mortgage_rate_gap =
  mortgage30us_rate_lag1 - current_mortgage_rate; both probabilities published / 100. The
  official table holds them as float64 (`pd.to_numeric(...) / 100`), so `0.0` and `1.0` stay
  float text even where every value is whole (`attrs["float_columns"]`).
- Source-wide cutoffs per survey month over the whole housing table (coalesced values): current
  mortgage rate, local home value, purchase price, current home value, loan balance.
- Filters: universe loan status in {1, 3}; target present; mortgage rate, release_date and
  ordinary probability present, then income label, common context, the macro columns and
  mortgage30us_rate_lag1; target and ordinary probability in [0, 100] and rate > 0, then
  (counted on the rows left) age 18-100; trim: rate strictly inside its cutoffs; the three home
  values inside theirs when all three are present; loan balance inside when present.
- After the trim the codes of the last present column of (q38, hq38, HQ38, qh0, HQH0, qh4a,
  HQH4a), of (qh5, HQH5) and of (qh5m, HQH5m) are checked (1-2, 1-4, 1-3), as the reference's
  loop does.
- Answer [[1 - p, p]] of the lock-in probability; no-change answer the same of the ordinary
  probability (3 decimals).
- Prompt: housing persona; background ending "..., have a high numeracy score, and are married
  or living with a partner." (without a partner: "..., live in X, have a high numeracy
  score."); finances, housing and mortgage paragraph; macro; scenario; question; instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import MORTGAGE_MACRO_COLUMNS, attach_macro_context
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import PromptRules
from hhx.tasks.prompting import format_dollars, render_macro_paragraph, response_instruction
from hhx.tasks.sce import common as c
from hhx.tasks.sce import modules as m

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, house_sce_lockin).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "house_sce_lockin"
PROMPT_RULES = PromptRules(housing_persona=True)
SOURCE = "sce_housing"
CANONICAL = {
    "local_home_value": ["q1_1", "HQ1_1"],
    "partnered": ["q38", "hq38", "HQ38"],
    "owns_other_home": ["qh0", "HQH0"],
    "purchase_price": ["qh2_1", "HQH2_1"],
    "current_home_value": ["qh3_1", "HQH3_1"],
    "loan_balance": ["qh5a_1", "HQH5a_1"],
    "loan_status": ["qh5", "HQH5"],
    "mortgage_rate_type": ["qh5m", "HQH5m"],
    "current_mortgage_rate": ["qh5m2_1", "HQH5m2_1"],
}
LABELLED = ["q38", "hq38", "HQ38", "qh0", "HQH0", "qh4a", "HQH4a", "qh5", "HQH5", "qh5m", "HQH5m"]
TRIMMED = ["current_mortgage_rate", "local_home_value", "purchase_price", "current_home_value",
           "loan_balance"]  # fmt: skip
HOME_VALUES = ["local_home_value", "purchase_price", "current_home_value"]
ORDINARY = ["Q6a_1", "q6a_1", "hq6a_1", "HQ6a_1"]
CODE_CHECKS = ((["q38", "hq38", "HQ38", "qh0", "HQH0", "qh4a", "HQH4a"], (1, 2)),
               (["qh5", "HQH5"], (1, 2, 3, 4)), (["qh5m", "HQH5m"], (1, 2, 3)))
CONTEXT = [*m.COMMON_CONTEXT, *MORTGAGE_MACRO_COLUMNS]
LOAN_TEXT = {
    "yes, mortgage(s) only": "mortgage debt only",
    "yes, home equity loans/lines of credit only": "home equity loans/lines of credit only",
    "yes, both mortgage(s) and home equity loans/lines of credit":
        "both mortgage(s) and home equity loans/lines of credit",
    "no": "no loans against home",
}
SCENARIO = (
    "For this question, consider the following mortgage-rate scenario. Suppose that, if you "
    "moved and bought a different home, you could keep the same interest rate as your current "
    "mortgage."
)
QUESTION = ("Under that scenario, what probability do you think there is that you would move to "
            "a different primary residence over the next three years?")
LEAD = ("Return only a valid JSON array containing exactly one two-element probability "
        "distribution. Use this order: probability of not moving under the scenario, probability "
        "of moving under the scenario. Express each probability as a number from 0 to 1. The "
        "distribution must sum to 1.")


def coalesce(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    """First non-blank value across the columns the table has (blank when it has none)."""
    have = [col for col in columns if col in frame.columns]
    if not have:
        return pd.Series(pd.NA, index=frame.index, dtype="object")
    return frame[have].bfill(axis=1).iloc[:, 0]


def build_table(ctx: BuildContext) -> pd.DataFrame:
    path = ctx.intermediate_path(SOURCE)  # the wave's column names decide which ones are read
    have = set(pq.read_schema(path).names)
    status_col = next((col for col in ("qh5", "HQH5") if col in have), None)
    rate_col = next((col for col in ("qh5m2_1", "HQH5m2_1") if col in have), None)
    if status_col is None or rate_col is None:
        raise DataError(f"{path}: needs a loan-status column (qh5 or HQH5) and a mortgage-rate "
                        "column (qh5m2_1 or HQH5m2_1); rebuild it from the NY Fed housing "
                        "workbook (survey=sce)")
    wanted = ["q6a_lock", *ORDINARY, *[col for cols in CANONICAL.values() for col in cols],
              "qh4a", "HQH4a", *[f"{col}__label" for col in LABELLED]]
    housing = m.read_module(ctx, SOURCE, [col for col in dict.fromkeys(wanted) if col in have])
    for name in TRIMMED:
        value = pd.to_numeric(coalesce(housing, CANONICAL[name]), errors="coerce")
        housing[f"_trim_{name}"] = value.astype("float64")
        housing = m.source_cutoffs(housing, housing[f"_trim_{name}"], f"_trim_{name}", SOURCE)
    steps = c.Steps(len(housing))
    core = c.read_core(ctx, m.MODULE_CORE)
    pool = c.join_core(housing, core, m.MODULE_CORE).reset_index(drop=True)
    pool = attach_macro_context(pool, c.origin_quarter(pool["survey_date"]), ctx.macro_context,
                                columns=[*m.CORE_MACRO_COLUMNS, *MORTGAGE_MACRO_COLUMNS])
    pool = pool.rename(columns={"macro_reference_q_index": "_macro_reference_q_index"})
    steps.step("Attach additional sources", len(housing), len(pool))
    pool["lockin_move_probability"] = c.numeric(pool, "q6a_lock").astype("float64")
    pool["ordinary_move_probability"] = pd.to_numeric(coalesce(pool, ORDINARY), errors="coerce")
    steps.step("Construct leads and lags", len(pool), len(pool))
    pool = steps.filter(pool, "Restrict universe", [
        ("active_mortgage_or_mortgage_and_home_equity", c.numeric(pool, status_col).isin([1, 3])),
    ])
    pool = steps.filter(pool, "Require observed targets", [
        ("target_lockin_move_probability_not_missing", pool["lockin_move_probability"].notna()),
    ])
    pool = steps.filter(pool, "Require observed predictors", [
        ("current_mortgage_rate_not_missing", c.numeric(pool, rate_col).notna()),
        ("release_date_not_missing", pool["release_date"].notna()),
        ("ordinary_move_probability_not_missing", pool["ordinary_move_probability"].notna()),
        *c.observed(pool, ["_HH_INC_DETAILED__label", *CONTEXT], "predictor"),
    ])
    pool = m.staged_filter(steps, pool, "Apply logical and validity filters", [
        [("lockin_move_probability_between_0_and_100",
          lambda f: f["lockin_move_probability"].between(0, 100)),
         ("ordinary_move_probability_between_0_and_100",
          lambda f: f["ordinary_move_probability"].between(0, 100)),
         ("current_mortgage_rate_positive", lambda f: c.numeric(f, rate_col).gt(0))],
        [("age_years_between_18_and_100", lambda f: f["age_years"].between(18, 100))],
    ])
    _require_rows(pool, status_col, "the validity filters")
    shown = pool[[f"_trim_{name}" for name in HOME_VALUES]].notna().all(axis=1)
    masks = []
    for name in TRIMMED:
        column = f"_trim_{name}"
        m.inside_or_missing(pool, column)  # observed values need their month's cutoffs
        inside = pool[column].gt(pool[f"{column}_p01"]) & pool[column].lt(pool[f"{column}_p99"])
        if name in HOME_VALUES:
            inside = ~shown | inside
        elif name == "loan_balance":
            inside = pool[column].isna() | inside
        masks.append((f"trim_{name}_predictor_strict_inside_month_p01_p99", inside))
    pool = steps.filter(pool, "Apply outlier trimming", masks).copy()
    _require_rows(pool, status_col, "the outlier trim")
    for columns, codes in CODE_CHECKS:
        present = [col for col in columns if col in pool.columns]
        if present:
            m.check_codes(pool, {present[-1]: codes}, TASK)
    for column in LABELLED:
        if column in pool.columns and f"{column}__label" in pool.columns:
            pool[column] = pool[f"{column}__label"].astype("string")
    for name, columns in CANONICAL.items():
        pool[name] = coalesce(pool, columns)
    pool["current_mortgage_rate"] = pd.to_numeric(pool["current_mortgage_rate"], errors="coerce")
    for name in ("local_home_value", "purchase_price", "current_home_value", "loan_balance"):
        pool[name] = pd.to_numeric(pool[name], errors="coerce")
    pool["mortgage_rate_gap"] = pool["mortgage30us_rate_lag1"] - pool["current_mortgage_rate"]
    table = c.to_unit(m.publish(pool, {}), ["lockin_move_probability",
                                            "ordinary_move_probability"])
    steps.step("Export sample", len(table), len(table))
    return c.finish(table, ctx.task, steps,
                    internal=["_macro_reference_q_index", "mortgage_rate_type"])


def _require_rows(pool: pd.DataFrame, status_col: str, after: str) -> None:
    if pool.empty:
        raise DataError(
            f"{TASK}: no eligible rows after {after}. Loan status is read from {status_col} "
            "alone (the first of qh5, HQH5 in sce_housing, as upstream), so waves that name it "
            "otherwise, and waves without q6a_lock (before 2023), contribute no rows")


def _finance_pair(q1: str | None, q2: str | None) -> str | None:
    if not (q1 and q2):
        return None
    if q1 == "about the same" and q2 == "about the same":
        return ("Your household is about as well off as it was 12 months ago, and you expect "
                "your household finances to remain about the same 12 months from now.")
    return m.q1_q2_sentence(q1, q2, "household")


def _background(row: Mapping[str, Any]) -> str:
    text = c.background(row, TASK)  # "..., live in X, and have a Y numeracy score."
    head, numeracy = text.rsplit(", and have a ", 1)
    text = f"{head}, have a {numeracy[:-1]}"
    partner = c.optional_label(row, "partnered", c.YES_NO, TASK)
    if partner == "yes":
        text += ", and are married or living with a partner"
    return text + "."


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    q1, q2 = c.finance_labels(row, TASK)
    sentences = [c.income_sentence(row)]
    pair = _finance_pair(q1, q2)
    if pair:
        sentences.append(pair)
    for sentence in (m.inflation_sentence(row), m.work_sentence(row, TASK)):
        if sentence:
            sentences.append(sentence)
    if all(c.present(row.get(col)) for col in HOME_VALUES):
        sentences.append(
            f"A typical local home is worth about {format_dollars(row['local_home_value'])}, "
            "while your primary residence was purchased for about "
            f"{format_dollars(row['purchase_price'])} and is now worth about "
            f"{format_dollars(row['current_home_value'])}.")
    if c.present(row.get("loan_status")):
        status = c.checked_label(row["loan_status"], frozenset(LOAN_TEXT), "loan_status", TASK)
        if status == "no":
            sentences.append("You have no loans against your home.")
        else:
            loan = f"Your home loan consists of {LOAN_TEXT[status]}"
            if c.present(row.get("loan_balance")):
                loan += f", with a balance of about {format_dollars(row['loan_balance'])}"
            sentences.append(loan + " and an interest rate of "
                             f"{float(row['current_mortgage_rate']):.1f}%.")
    sentences.append(
        "The national average 30-year mortgage rate is "
        f"{float(row['mortgage30us_rate_lag1']):.1f}%, which is "
        f"{float(row['mortgage_rate_gap']):.1f} percentage points above your current mortgage "
        "rate.")
    ordinary = round(float(row["ordinary_move_probability"]), 3)
    sentences.append("Given your current situation, you think the probability that you would "
                     "move to a different primary residence over the next three years is "
                     f"{ordinary:.3f}.")
    note = m.month_note(int(str(row["time"])[5:7]), True)
    situation = ("Here are your household finances, work situation, expectations, housing, and "
                 f"mortgage situation. {note} " + " ".join(sentences))
    user = "\n\n".join([_background(row), situation, render_macro_paragraph(row), SCENARIO,
                        QUESTION, response_instruction(task, lead=LEAD)])
    return c.HOUSING_PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [c.binary_vector(row["lockin_move_probability"])]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: the ordinary three-year moving probability."""
    return [c.binary_vector(row["ordinary_move_probability"])]
