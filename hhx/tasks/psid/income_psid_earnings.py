"""income_psid_earnings: a person's labor earnings 2, 4 and 10 years later (spec 10_tasks 7,
10; the reference's scripts/2_tasks/income_psid_earnings/).

Rows: person panel (hhx.tasks.psid.common: sample persons, response 0) x wave. Targets: the
person's earn_tot_nd at the waves exactly wave + 2, + 4 and + 10 (each must be a panel row of the
person; no contiguity needed), rounded half to even. release_date = the wave + 10 row's. Macro:
core. Filters in the reference's order:
1. universe: demo_age_gen present and 20-60;
2. targets: each of the three rows present with earnings;
3. predictors: earn_tot_nd, finc_tot_nd, edu_year_max, edu_level_max, core macro, and the labels
   of demo_sex, race_eth_maj_col, geo_region, edu_level_max, emp_work, fam_partnered (geo_metro
   and the occupation may be missing);
4. trims strictly inside the year's p01/p99 over the person panel: current earn_tot_nd and
   finc_tot_nd; each (rounded) target against its own wave's earnings cutoffs; each of up to
   three contiguous history waves' earnings and family income (missing passes; history is used
   for this trim only).
Coded predictors are published as labels (occupation: "Professional or managerial occupation",
...). No-change answer: current earnings three times.
Typing (reference 01_make_table.py builds rows of Python values, pandas types them): the three
targets (int(round(x)), or None on rows without that wave) and every household value from
psid_main's float64 columns are floats (`41000.0`, `12.0`). The renderer writes the answer and
the no-change answer as ints (`[41000, 43000, 52000]`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import PromptRules
from hhx.tasks.prompting import (
    article,
    format_dollars,
    render_macro_paragraph,
    response_instruction,
)
from hhx.tasks.psid.common import (
    METRO_PHRASES,
    NOT_PARTNERED,
    PARTNERED,
    RACE_PHRASES,
    REGION_PHRASES,
    SEX_PHRASES,
    cutoffs_at,
    half_even_int,
    has_value,
    optional_phrase,
    people,
    phrase,
    public_table,
    start_panel_table,
    strictly_inside,
    take,
    text,
    whole,
)

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, income_psid_earnings).
OUTPUT_ORDER = ("time:text", "id:number")

TASK = "income_psid_earnings"
PROMPT_RULES = PromptRules(month_note=False)
# Public numbers the reference builds as ints on every row; every other one is a float there
# (hhx.tasks.psid.common.public_table).
INTEGER_COLUMNS: list[str] = []
SYSTEM_PROMPT = ("You are an American individual or family making education, work, housing, "
                 "and long-run financial decisions.")
QUESTION = ("What will your labor earnings be in current dollars two years from now, four years "
            "from now, and ten years from now?")
LEAD = ("Return only a valid JSON array with exactly 3 numeric elements, in this order: earn_2y, "
        "earn_4y, earn_10y.")
HORIZONS = (2, 4, 10)
LABELLED = ["demo_sex", "race_eth_maj_col", "geo_region", "geo_metro", "edu_level_max",
            "emp_work", "fam_partnered", "occ_major_harmonized"]
REQUIRED_LABELS = [c for c in LABELLED if c not in ("geo_metro", "occ_major_harmonized")]
COLUMNS = ["demo_age_gen", "demo_sex", "race_eth_maj_col", "geo_region", "geo_metro",
           "edu_year_max", "edu_level_max", "emp_work", "earn_tot_nd", "finc_tot_nd",
           "fam_partnered", "fam_size", "fam_size_chi", "occ_major_harmonized", "occ_source",
           *(f"{c}_label" for c in LABELLED)]


def _future_positions(ids: np.ndarray, years: np.ndarray, horizon: int) -> np.ndarray:
    """Position of the same person's row at wave year + horizon (rows sorted by id, year)."""
    key = ids.astype(np.int64) * 10_000 + years.astype(np.int64)
    want = key + horizon
    at = np.searchsorted(key, want)
    found = (at < len(key)) & (key[np.minimum(at, len(key) - 1)] == want)
    return np.where(found, at, -1)


def build_table(ctx: BuildContext) -> pd.DataFrame:
    task = ctx.task
    start = start_panel_table(ctx, TASK, "person", COLUMNS, ("earn_tot_nd", "finc_tot_nd"))
    panel, steps, cuts, lags, out = start.panel, start.steps, start.cuts, start.lags, start.out
    future = {h: _future_positions(start.ids, start.years, h) for h in HORIZONS}
    out["release_date"] = take(panel["release_date"], future[10]).astype("string")
    for h in HORIZONS:
        out[f"earn_tot_nd_{h}y"] = half_even_int(take(panel["earn_tot_nd"], future[h]))
    for column in ("fam_size", "fam_size_chi", "demo_age_gen", "edu_year_max", "earn_tot_nd",
                   "finc_tot_nd"):
        out[column] = panel[column].to_numpy()
    for column in LABELLED:
        out[column] = text(panel[f"{column}_label"]).to_numpy()
    out = pd.concat([out, panel[list(CORE_MACRO_COLUMNS)].reset_index(drop=True)], axis=1)

    age = pd.to_numeric(out["demo_age_gen"], errors="coerce")
    keep = np.ones(len(out), dtype=bool)
    filters = [("universe: age present", age.notna()), ("universe: age 20-60", age.between(20, 60))]
    for h in HORIZONS:
        filters += [(f"target: a row at wave + {h}", future[h] >= 0),
                    (f"target: earnings at wave + {h} present", out[f"earn_tot_nd_{h}y"].notna())]
    filters += [
        ("predictors: earnings, family income, schooling years and level present",
         out[["earn_tot_nd", "finc_tot_nd", "edu_year_max"]].notna().all(axis=1)
         & panel["edu_level_max"].notna().to_numpy()),
        ("predictors: core macro context present",
         out[list(CORE_MACRO_COLUMNS)].notna().all(axis=1)),
        ("predictors: sex, race, region, education, work and partner labels present",
         out[REQUIRED_LABELS].notna().all(axis=1)),
    ]
    keep = steps.apply(keep, filters)
    trims = []
    for column, label in (("earn_tot_nd", "earnings"), ("finc_tot_nd", "family income")):
        p01, p99 = cutoffs_at(cuts[column], out["_year"])
        trims.append((f"trim: current {label} strictly inside the year's p01/p99",
                      strictly_inside(out[column], p01, p99)))
    for h in HORIZONS:
        p01, p99 = cutoffs_at(cuts["earn_tot_nd"], out["_year"] + h)
        trims.append((f"trim: earnings at wave + {h} strictly inside that wave's p01/p99",
                      strictly_inside(out[f"earn_tot_nd_{h}y"], p01, p99)))
    depth = sum((lag >= 0).astype(int) for lag in lags)
    for k, lag in enumerate(lags, start=1):
        lag_year = take(panel["year"], lag)
        for column, label in (("earn_tot_nd", "earnings"), ("finc_tot_nd", "family income")):
            values = take(panel[column], lag)
            p01, p99 = cutoffs_at(cuts[column], lag_year)
            trims.append((f"trim: lag-{k} {label} missing or strictly inside its year's p01/p99",
                          (depth < k) | values.isna().to_numpy()
                          | strictly_inside(values, p01, p99)))
    keep = steps.apply(keep, trims)
    table = public_table(out[keep], task, __name__, integer_columns=INTEGER_COLUMNS)
    table.attrs["construction_steps"] = steps.rows
    return table


# --------------------------------------------------------------------------------------------
# Prompt

EDU_PHRASES = {
    "Did not complete high school": "did not complete high school",
    "Completed high school, did not attend college":
        "completed high school and did not attend college",
    "Attended college, no bachelor's degree": "attended college without a bachelor's degree",
    "Bachelor's degree, no postgraduate degree":
        "has a bachelor's degree and no postgraduate degree",
    "Postgraduate degree": "has a postgraduate degree",
}
EMP_PHRASES = {"Not currently working": "You are not currently working.",
               "Currently working": "You are currently working."}
PARTNER_SENTENCES = {PARTNERED: "You have a spouse or partner in your household.",
                     NOT_PARTNERED: "You do not have a spouse or partner in your household."}


def _children(n: int) -> str:
    return "no children" if n == 0 else "1 child" if n == 1 else f"{n} children"


def _occupation(label: str) -> str:
    """"Professional or managerial occupation" -> "professional or managerial"."""
    text_ = label.strip()
    if text_.lower().endswith(" occupation"):
        text_ = text_[:-11]
    return text_[:1].lower() + text_[1:]


def _background(row: Mapping[str, Any]) -> str:
    age = whole(row, "demo_age_gen", TASK)
    sex = phrase(row, "demo_sex", SEX_PHRASES, TASK)
    race = optional_phrase(row, "race_eth_maj_col", RACE_PHRASES, TASK)
    parts = [f"You are {article(age)} {age}-year-old{f' {race}' if race else ''} {sex}."]
    region = optional_phrase(row, "geo_region", REGION_PHRASES, TASK)
    if region:
        metro = optional_phrase(row, "geo_metro", METRO_PHRASES, TASK)
        parts.append(f"You live in {region}, in a {metro}." if metro else f"You live in {region}.")
    years = whole(row, "edu_year_max", TASK) if has_value(row.get("edu_year_max")) else None
    level = (phrase(row, "edu_level_max", EDU_PHRASES, TASK)
             if has_value(row.get("edu_level_max")) else None)
    if years is not None and level:
        parts.append(f"You completed {years} years of schooling and {level}.")
    elif years is not None:
        parts.append(f"You completed {years} years of schooling.")
    elif level:
        parts.append(f"You {level}.")
    partner = optional_phrase(row, "fam_partnered", PARTNER_SENTENCES, TASK)
    if partner:
        parts.append(partner)
    if has_value(row.get("fam_size")):
        size = people(whole(row, "fam_size", TASK))
        if has_value(row.get("fam_size_chi")):
            size += f", including {_children(whole(row, 'fam_size_chi', TASK))}"
        parts.append(f"Your household has {size}.")
    return "Here is some background information about yourself and your household. " + " ".join(
        parts)


def _work(row: Mapping[str, Any]) -> str:
    parts = []
    if has_value(row.get("emp_work")):
        parts.append(phrase(row, "emp_work", EMP_PHRASES, TASK))
    said = []
    if has_value(row.get("earn_tot_nd")):
        said.append(f"Your labor earnings are {format_dollars(row['earn_tot_nd'])}")
    if has_value(row.get("finc_tot_nd")):
        said.append(f"your household income is {format_dollars(row['finc_tot_nd'])}")
    occupation = row.get("occ_major_harmonized")
    if has_value(occupation) and str(occupation).strip() and \
            str(occupation).strip().lower() != "unknown":
        said.append(f"your broad occupation is {_occupation(str(occupation))}")
    if len(said) == 1:
        parts.append(said[0] + ".")
    elif len(said) == 2:
        parts.append(" and ".join(said) + ".")
    elif said:
        parts.append(", ".join(said[:-1]) + f", and {said[-1]}.")
    return ("Here is your current work situation. Note that $ denotes amounts in U.S. dollars. "
            + " ".join(parts))


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    user = "\n\n".join([_background(row), _work(row), render_macro_paragraph(row), QUESTION,
                        response_instruction(task, lead=LEAD)])
    return SYSTEM_PROMPT, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    """The gold answer as the reference renderer writes it: the three earnings as integers
    (int(round(x)), `[41000, 43000, 52000]`)."""
    return [whole(row, c, TASK) for c in task.targets]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: current earnings at every horizon."""
    return [whole(row, "earn_tot_nd", TASK)] * 3
