"""house_psid_owner: does a renting family own its home at the next PSID wave (spec 10_tasks
7, 9; the reference's scripts/2_tasks/house_psid_owner/).

Rows: family panel (hhx.tasks.psid.common) x wave, real-dollar (`_rd`) finances. Macro: core
(required) and the PSID asset block (optional at attach; the prompt states it, so a row without
its four asset quarters cannot be rendered, as in the reference). Target: "yes" if the next
contiguous wave's home_stat is 1, "no" if 2 or 3. Filters in the reference's order:
1. universe: demo_age_gen present and 25-75; current home_stat 2 (pays rent);
2. target: a contiguous next wave with home_stat 1, 2 or 3;
3. predictors: finc_tot_rd, fam_size, fam_size_chi, core macro, and the labels of demo_sex,
   race_eth_maj_col, geo_region, home_stat, fam_partnered, fam_married;
4. trims strictly inside the year's p01/p99 over the family panel: current finc_tot_rd;
   current wlth_tot_net_rd when present; each displayed history wave's finc_tot_rd (missing
   passes).
Derived: forecast_horizon_years = next wave - wave; lag1_*_change = current - lag-1 value of
fam_size, fam_size_chi, fam_partnered, fam_married (rounded half to even); coded predictors as
labels. No-change answer: "no".
Typing (reference 01_make_table.py builds rows of Python values, pandas types them): household
values from psid_main's float64 columns (age, family size, children, amounts) and the lag-1
changes (int or None over the whole pool) are floats (`3.0`); forecast_horizon_years and
history_lag{k}_years_ago are ints (`2`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS, PSID_ASSET_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import PromptRules
from hhx.tasks.prompting import (
    HOUSING_SYSTEM_PROMPT,
    article,
    format_dollars,
    join_list,
    render_asset_paragraph,
    render_macro_paragraph,
    response_instruction,
)
from hhx.tasks.psid.common import (
    MARRIED,
    MAX_HISTORY,
    METRO_PHRASES,
    NOT_MARRIED,
    NOT_PARTNERED,
    PARTNERED,
    RACE_PHRASES,
    REGION_PHRASES,
    SEX_PHRASES,
    cutoffs_at,
    half_even_int,
    has_value,
    next_positions,
    optional_phrase,
    people,
    phrase,
    public_table,
    start_panel_table,
    strictly_inside,
    take,
    text,
    whole,
    years_ago,
)

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, house_psid_owner).
OUTPUT_ORDER = ("time:text", "id:number")

TASK = "house_psid_owner"
PROMPT_RULES = PromptRules(month_note=False, housing_persona=True)
# Public numbers the reference builds as ints on every row; every other one is a float there
# (hhx.tasks.psid.common.public_table).
INTEGER_COLUMNS = ["forecast_horizon_years",
                   *(f"history_lag{k}_years_ago" for k in range(1, MAX_HISTORY + 1))]
LABELLED = ["demo_sex", "race_eth_maj_col", "geo_region", "geo_metro", "home_stat",
            "fam_partnered", "fam_married"]
REQUIRED_LABELS = [c for c in LABELLED if c != "geo_metro"]
MONEY = ["finc_tot_rd", "wlth_tot_net_rd", "wlth_savi_net_rd", "wlth_inve_net_rd",
         "wlth_home_net_rd"]
HISTORY_MONEY = ["finc_tot_rd", "wlth_tot_net_rd", "wlth_savi_net_rd", "wlth_inve_net_rd"]
COLUMNS = ["demo_age_gen", *LABELLED, *MONEY, "wlth_odeb_net_rd", "fam_size", "fam_size_chi",
           *(f"{c}_label" for c in LABELLED)]
CHANGES = [("lag1_family_size_change", "fam_size"), ("lag1_children_change", "fam_size_chi"),
           ("lag1_partnered_change", "fam_partnered"), ("lag1_married_change", "fam_married")]


def build_table(ctx: BuildContext) -> pd.DataFrame:
    task = ctx.task
    start = start_panel_table(ctx, TASK, "family", COLUMNS, ("finc_tot_rd", "wlth_tot_net_rd"),
                              optional_macro=PSID_ASSET_MACRO_COLUMNS)
    panel, steps, cuts, lags, out = start.panel, start.steps, start.cuts, start.lags, start.out
    nxt = next_positions(start.ids, start.years)
    out["_next_year"] = take(panel["year"], nxt)
    out["release_date"] = take(panel["release_date"], nxt).astype("string")
    next_home = take(panel["home_stat"], nxt).astype("Int64")
    out["_home_stat_next_wave"] = next_home
    owner = pd.Series(pd.NA, index=out.index, dtype="string")
    owner[next_home.eq(1).fillna(False)] = "yes"
    owner[next_home.isin([2, 3]).fillna(False)] = "no"
    out["becomes_owner_next_wave"] = owner
    out["forecast_horizon_years"] = (out["_next_year"] - out["_year"]).astype("Int64")
    for column in ("fam_size", "fam_size_chi", "demo_age_gen", *MONEY):
        out[column] = panel[column].to_numpy()
    out["_home_stat_code"] = panel["home_stat"].to_numpy()
    for name, column in CHANGES:
        before = pd.to_numeric(take(panel[column], lags[0]), errors="coerce").astype("float64")
        change = pd.to_numeric(panel[column], errors="coerce").astype("float64") - before
        out[name] = half_even_int(change).to_numpy()
    for column in LABELLED:
        out[column] = text(panel[f"{column}_label"]).to_numpy()
    out["_history_depth"] = sum((lag >= 0).astype(int) for lag in lags)
    for k, lag in enumerate(lags, start=1):
        lag_year = take(panel["year"], lag)
        out[f"history_lag{k}_years_ago"] = (out["_year"] - lag_year).astype("Int64")
        out[f"history_lag{k}_home_stat"] = text(take(panel["home_stat_label"], lag)).to_numpy()
        for column in HISTORY_MONEY:
            out[f"history_lag{k}_{column}"] = take(panel[column], lag).to_numpy()
        out[f"_history_lag{k}_year"] = lag_year
    macro = [*CORE_MACRO_COLUMNS, *PSID_ASSET_MACRO_COLUMNS]
    out = pd.concat([out, panel[macro].reset_index(drop=True)], axis=1)

    age = pd.to_numeric(out["demo_age_gen"], errors="coerce")
    keep = np.ones(len(out), dtype=bool)
    keep = steps.apply(keep, [
        ("universe: age present", age.notna()),
        ("universe: age 25-75", age.between(25, 75)),
        ("universe: currently renting (home_stat 2)", out["_home_stat_code"].eq(2).fillna(False)),
        ("target: a contiguous next wave", nxt >= 0),
        ("target: next-wave tenure 1, 2 or 3", next_home.isin([1, 2, 3]).fillna(False)),
        ("predictors: income, household size and children present",
         out[["finc_tot_rd", "fam_size", "fam_size_chi"]].notna().all(axis=1)),
        ("predictors: core macro context present",
         out[list(CORE_MACRO_COLUMNS)].notna().all(axis=1)),
        ("predictors: sex, race, region, tenure, partner and marriage labels present",
         out[REQUIRED_LABELS].notna().all(axis=1)),
    ])  # fmt: skip
    p01, p99 = cutoffs_at(cuts["finc_tot_rd"], out["_year"])
    trims = [("trim: current income strictly inside the year's p01/p99",
              strictly_inside(out["finc_tot_rd"], p01, p99))]
    p01, p99 = cutoffs_at(cuts["wlth_tot_net_rd"], out["_year"])
    trims.append(("trim: current net worth missing or strictly inside the year's p01/p99",
                  out["wlth_tot_net_rd"].isna().to_numpy()
                  | strictly_inside(out["wlth_tot_net_rd"], p01, p99)))
    for k in range(1, MAX_HISTORY + 1):
        values = out[f"history_lag{k}_finc_tot_rd"]
        p01, p99 = cutoffs_at(cuts["finc_tot_rd"], out[f"_history_lag{k}_year"])
        shown = out["_history_depth"].to_numpy() >= k
        trims.append((f"trim: lag-{k} income missing or strictly inside its year's p01/p99",
                      ~shown | values.isna().to_numpy() | strictly_inside(values, p01, p99)))
    keep = steps.apply(keep, trims)
    table = public_table(out[keep], task, __name__, integer_columns=INTEGER_COLUMNS)
    table.attrs["construction_steps"] = steps.rows
    return table


# --------------------------------------------------------------------------------------------
# Prompt

HOME_NOW = {"Owns home": "You currently own your home.", "Pays rent": "You currently rent your "
            "home.", "Neither owns home nor pays rent": "You currently neither own nor rent your "
            "home."}
HOME_THEN = {"Owns home": "owned its home", "Pays rent": "rented its home",
             "Neither owns home nor pays rent": "neither owned nor rented its home"}
FAMILY_STATUS: dict[tuple[str | None, str | None], str] = {
    (PARTNERED, MARRIED): "You have a spouse or partner in your household and are legally "
                          "married.",
    (PARTNERED, NOT_MARRIED): "You have a spouse or partner in your household and are not "
                              "legally married.",
    (PARTNERED, None): "You have a spouse or partner in your household.",
    (NOT_PARTNERED, MARRIED): "You do not have a spouse or partner in your household and are "
                              "legally married.",
    (NOT_PARTNERED, NOT_MARRIED): "You do not have a spouse or partner in your household and are "
                                  "not legally married.",
    (NOT_PARTNERED, None): "You do not have a spouse or partner in your household.",
}
HISTORY_PHRASES = [("finc_tot_rd", "household income was"), ("wlth_tot_net_rd", "total net "
                   "worth was"), ("wlth_savi_net_rd", "savings were"),
                   ("wlth_inve_net_rd", "financial investments were")]


def _children(n: int) -> str:
    return "no children" if n == 0 else "1 child" if n == 1 else f"{n} children"


def _change(value: int, subject: str) -> str:
    if value == 0:
        return f"{subject} is unchanged"
    return (f"{subject} has increased by {value}" if value > 0
            else f"{subject} has fallen by {abs(value)}")


def _label(row: Mapping[str, Any], column: str) -> str | None:
    value = row.get(column)
    return str(value).strip() if has_value(value) else None


def _background(row: Mapping[str, Any]) -> str:
    age = whole(row, "demo_age_gen", TASK)
    sex = phrase(row, "demo_sex", SEX_PHRASES, TASK)
    race = optional_phrase(row, "race_eth_maj_col", RACE_PHRASES, TASK)
    sentence = f"You are {article(age)} {age}-year-old{f' {race}' if race else ''} {sex}"
    region = optional_phrase(row, "geo_region", REGION_PHRASES, TASK)
    if region:
        metro = optional_phrase(row, "geo_metro", METRO_PHRASES, TASK)
        sentence += f" living in {region}, in a {metro}" if metro else f" living in {region}"
    parts = [sentence + "."]
    married = _label(row, "fam_married")
    status = FAMILY_STATUS.get((_label(row, "fam_partnered"),
                                married if married in (MARRIED, NOT_MARRIED) else None))
    if status:
        parts.append(status)
    if has_value(row.get("fam_size")):
        size = people(whole(row, "fam_size", TASK))
        if has_value(row.get("fam_size_chi")):
            size += f" and {_children(whole(row, 'fam_size_chi', TASK))}"
        parts.append(f"Your household has {size}.")
    changes = [_change(whole(row, column, TASK), subject) for column, subject in (
        ("lag1_family_size_change", "household size"),
        ("lag1_children_change", "the number of children"),
        ("lag1_partnered_change", "partner status"),
        ("lag1_married_change", "marital status")) if has_value(row.get(column))]
    if changes:
        if not has_value(row.get("history_lag1_years_ago")):
            raise DataError(f"task {TASK} id {row.get('id')!r}: household changes without a "
                            "lag-1 wave")
        when = years_ago(row["history_lag1_years_ago"], TASK, lower=True)
        parts.append(f"Compared with {when}, {join_list(changes)}.")
    return "Here is some background information about yourself and your household. " + " ".join(
        parts)


def _finances(row: Mapping[str, Any]) -> str:
    parts = []
    if has_value(row.get("home_stat")):
        parts.append(phrase(row, "home_stat", HOME_NOW, TASK))
    income, worth = has_value(row.get("finc_tot_rd")), has_value(row.get("wlth_tot_net_rd"))
    if income and worth:
        parts.append(f"Your current household income is {format_dollars(row['finc_tot_rd'])}, "
                     f"and your total net worth is {format_dollars(row['wlth_tot_net_rd'])}.")
    elif income:
        parts.append(f"Your current household income is {format_dollars(row['finc_tot_rd'])}.")
    elif worth:
        parts.append(f"Your total net worth is {format_dollars(row['wlth_tot_net_rd'])}.")
    held = [f"{format_dollars(row[c])} in {label}" for c, label in (
        ("wlth_savi_net_rd", "savings"), ("wlth_inve_net_rd", "financial investments"),
        ("wlth_home_net_rd", "home equity")) if has_value(row.get(c))]
    if held:
        parts.append(f"You have {join_list(held)}.")
    for k in range(MAX_HISTORY, 0, -1):
        if not has_value(row.get(f"history_lag{k}_years_ago")):
            continue
        said = []
        if has_value(row.get(f"history_lag{k}_home_stat")):
            said.append(f"your household {phrase(row, f'history_lag{k}_home_stat', HOME_THEN, TASK)}")
        for column, words in HISTORY_PHRASES:
            if has_value(row.get(f"history_lag{k}_{column}")):
                said.append(f"{words} {format_dollars(row[f'history_lag{k}_{column}'])}")
        if said:
            parts.append(f"{years_ago(row[f'history_lag{k}_years_ago'], TASK)}, "
                         f"{join_list(said)}.")
    return ("Here are your household's housing, finances, and past household records. Note that "
            "$ denotes amounts in U.S. dollars. " + " ".join(parts))


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    gap = whole(row, "forecast_horizon_years", TASK)
    if gap not in (1, 2):
        raise DataError(f"task {TASK} id {row.get('id')!r}: wave gap {gap} is not 1 or 2")
    horizon = "In one year" if gap == 1 else "In two years"
    macro = render_macro_paragraph(row) + " " + render_asset_paragraph(row)
    user = "\n\n".join([_background(row), _finances(row), macro,
                        f"{horizon}, will your household own its home?",
                        response_instruction(task, lead=(
                            'Return only a valid JSON array containing exactly one string, using '
                            'one of: "yes", "no".'))])
    return HOUSING_SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: still not an owner."""
    return ["no"]
