"""cons_psid_wealth: household total net worth at the next PSID wave (spec 10_tasks 7-8;
the reference's scripts/2_tasks/cons_psid_wealth/).

Rows: family panel (hhx.tasks.psid.common) x wave with a contiguous next wave. Macro: core
(required at attach) and the PSID asset block (house prices, S&P 500, 30-year mortgage rate;
optional at attach, required by the predictor filter). Filters in the reference's order:
1. target: a contiguous next wave; its wlth_tot_net_nd not missing (the target is that value
   rounded half-to-even to an integer);
2. predictors: demo_age_gen, finc_tot_nd, wlth_tot_net_nd, every core and asset macro column,
   and the labels of demo_sex, race_eth_maj_col, geo_region, home_stat, fam_partnered,
   fam_married (geo_metro may be missing);
3. trims strictly inside the year's p01/p99 over the family panel: current finc_tot_nd and
   wlth_tot_net_nd, the (rounded) next-wave net worth against the next wave's cutoffs, and each
   displayed history wave's finc_tot_nd and wlth_tot_net_nd against that wave's (missing passes).
Public values: coded predictors as their labels; history_lag{k}_years_ago = wave year - lag
year; time = <wave>-01-01; release_date = the next wave's. No-change answer: current net worth.
Prompt: the reference renderer's sentences; the question always says "in two years" (also for
one-year gaps) and the instruction paragraph is the closing sentence then the structure.
Typing (reference 01_make_table.py builds rows of Python values, pandas types them): the
target (int(round(x)), or None for a row without a next wave) and every household value read
from psid_main's float64 columns are floats (`125000.0`, `3.0`); history_lag{k}_years_ago is
cast to Int64 (`2`). Answer and no-change are ints (`[125000]`), as the renderer rounds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS, PSID_ASSET_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import PromptRules
from hhx.tasks.prompting import (
    CLOSING_ONE_INTEGER,
    article,
    format_dollars,
    render_asset_paragraph,
    render_macro_paragraph,
    response_instruction,
)
from hhx.tasks.psid.common import (
    MAX_HISTORY,
    METRO_PHRASES,
    RACE_PHRASES,
    REGION_PHRASES,
    SEX_PHRASES,
    cutoffs_at,
    half_even_int,
    has_value,
    next_positions,
    optional_phrase,
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
# hhx/tasks/output_order.csv, cons_psid_wealth).
OUTPUT_ORDER = ("time:text", "id:number")

TASK = "cons_psid_wealth"
PROMPT_RULES = PromptRules(closing=CLOSING_ONE_INTEGER, closing_first=True, month_note=False)
INTEGER_OUTPUT = True  # the reference rounds the XGBoost prediction to an integer
# Public numbers the reference builds as ints on every row; every other one is a float there
# (hhx.tasks.psid.common.public_table).
INTEGER_COLUMNS = [f"history_lag{k}_years_ago" for k in range(1, MAX_HISTORY + 1)]
SYSTEM_PROMPT = ("You are the head of an American household making decisions about income, "
                 "saving, housing, and household wealth.")
QUESTION = ("Given this information, in two years, what will your household's total net "
            "worth be, in current U.S. dollars?")
LABELLED = ["demo_sex", "race_eth_maj_col", "geo_region", "geo_metro", "home_stat",
            "fam_partnered", "fam_married"]
REQUIRED_LABELS = [c for c in LABELLED if c != "geo_metro"]
MONEY = ["finc_tot_nd", "wlth_tot_net_nd", "wlth_savi_net_nd", "wlth_inve_net_nd",
         "wlth_home_net_nd", "wlth_odeb_net_nd"]
COLUMNS = ["demo_age_gen", *LABELLED, *MONEY, "fam_size", "fam_size_chi",
           *(f"{c}_label" for c in LABELLED)]
HISTORY_MONEY = MONEY  # history values shown: income, net worth and its components


def build_table(ctx: BuildContext) -> pd.DataFrame:
    task = ctx.task
    start = start_panel_table(ctx, TASK, "family", COLUMNS, ("finc_tot_nd", "wlth_tot_net_nd"),
                              optional_macro=PSID_ASSET_MACRO_COLUMNS)
    panel, steps, cuts, lags, out = start.panel, start.steps, start.cuts, start.lags, start.out
    nxt = next_positions(start.ids, start.years)
    out["_next_year"] = take(panel["year"], nxt)
    out["release_date"] = take(panel["release_date"], nxt).astype("string")
    out["wlth_tot_net_nd_next_wave"] = half_even_int(take(panel["wlth_tot_net_nd"], nxt))
    for column in ("fam_size", "fam_size_chi", "demo_age_gen", *MONEY):
        out[column] = panel[column].to_numpy()
    for column in LABELLED:
        out[column] = text(panel[f"{column}_label"]).to_numpy()
    out["_history_depth"] = sum((lag >= 0).astype(int) for lag in lags)
    for k, lag in enumerate(lags, start=1):
        lag_year = take(panel["year"], lag)
        out[f"history_lag{k}_years_ago"] = (out["_year"] - lag_year).astype("Int64")
        for column in HISTORY_MONEY:
            out[f"history_lag{k}_{column}"] = take(panel[column], lag).to_numpy()
        out[f"history_lag{k}_home_stat"] = text(take(panel["home_stat_label"], lag)).to_numpy()
        out[f"_history_lag{k}_year"] = lag_year
    macro = [*CORE_MACRO_COLUMNS, *PSID_ASSET_MACRO_COLUMNS]
    out = pd.concat([out, panel[macro].reset_index(drop=True)], axis=1)

    keep = np.ones(len(out), dtype=bool)
    keep = steps.apply(keep, [
        ("target: a contiguous next wave", nxt >= 0),
        ("target: next-wave net worth present", out["wlth_tot_net_nd_next_wave"].notna()),
        ("predictors: age, income and net worth present",
         out[["demo_age_gen", "finc_tot_nd", "wlth_tot_net_nd"]].notna().all(axis=1)),
        ("predictors: core and asset macro context present", out[macro].notna().all(axis=1)),
        ("predictors: sex, race, region, tenure, partner and marriage labels present",
         out[REQUIRED_LABELS].notna().all(axis=1)),
    ])  # fmt: skip
    trims = []
    for column, label in (("finc_tot_nd", "income"), ("wlth_tot_net_nd", "net worth")):
        p01, p99 = cutoffs_at(cuts[column], out["_year"])
        trims.append((f"trim: current {label} strictly inside the year's p01/p99",
                      strictly_inside(out[column], p01, p99)))
    p01, p99 = cutoffs_at(cuts["wlth_tot_net_nd"], out["_next_year"])
    trims.append(("trim: next-wave net worth strictly inside that wave's p01/p99",
                  strictly_inside(out["wlth_tot_net_nd_next_wave"], p01, p99)))
    for k in range(1, MAX_HISTORY + 1):
        for column, label in (("finc_tot_nd", "income"), ("wlth_tot_net_nd", "net worth")):
            values = out[f"history_lag{k}_{column}"]
            p01, p99 = cutoffs_at(cuts[column], out[f"_history_lag{k}_year"])
            shown = out["_history_depth"].to_numpy() >= k
            trims.append((f"trim: lag-{k} {label} missing or strictly inside its year's p01/p99",
                          ~shown | values.isna().to_numpy() | strictly_inside(values, p01, p99)))
    keep = steps.apply(keep, trims)
    table = public_table(out[keep], task, __name__, integer_columns=INTEGER_COLUMNS)
    table.attrs["construction_steps"] = steps.rows
    return table


# --------------------------------------------------------------------------------------------
# Prompt


def _background(row: Mapping[str, Any]) -> str:
    age = whole(row, "demo_age_gen", TASK)
    sex = phrase(row, "demo_sex", SEX_PHRASES, TASK)
    race = optional_phrase(row, "race_eth_maj_col", RACE_PHRASES, TASK)
    parts = [f"You are {article(age)} {age}-year-old{f' {race}' if race else ''} {sex}."]
    region = optional_phrase(row, "geo_region", REGION_PHRASES, TASK)
    if region:
        metro = optional_phrase(row, "geo_metro", METRO_PHRASES, TASK)
        parts.append(f"You live in {region}, in a {metro}." if metro else f"You live in {region}.")
    family = []
    partnered = optional_phrase(row, "fam_partnered", {
        "No, reference person has no spouse or partner in the family unit":
            "do not have a spouse or partner in your household",
        "Yes, reference person has a spouse or partner in the family unit":
            "have a spouse or partner in your household"}, TASK)
    married = optional_phrase(row, "fam_married", {
        "No, reference person is not legally married to a spouse in the family unit":
            "are not legally married",
        "Yes, reference person is legally married to a spouse in the family unit":
            "are legally married"}, TASK)
    family = [p for p in (partnered, married) if p]
    if family:
        parts.append("You " + " and ".join(family) + ".")
    if has_value(row.get("fam_size")):
        size = whole(row, "fam_size", TASK)
        sentence = f"Your household has {size} {'person' if size == 1 else 'people'}"
        if has_value(row.get("fam_size_chi")):
            kids = whole(row, "fam_size_chi", TASK)
            sentence += (", no children." if kids == 0 else
                         f", including {kids} {'child' if kids == 1 else 'children'}.")
        parts.append(sentence)  # as the reference: no full stop without a child count
    return "Here is some background information about yourself and your household. " + " ".join(
        parts)


HOME_NOW = {"Owns home": "own your home", "Pays rent": "rent your home",
            "Neither owns home nor pays rent": "neither own nor rent your home"}
HOME_THEN = {"Owns home": "owned its home", "Pays rent": "rented its home",
             "Neither owns home nor pays rent": "neither owned nor rented its home"}
COMPONENTS = [("wlth_savi_net_nd", "savings"), ("wlth_inve_net_nd", "financial investments"),
              ("wlth_home_net_nd", "home equity"), ("wlth_odeb_net_nd", "other debt")]
HISTORY_PHRASES = [("wlth_tot_net_nd", "your total net worth was"),
                   ("wlth_savi_net_nd", "your savings were"),
                   ("wlth_inve_net_nd", "your financial investments were"),
                   ("wlth_home_net_nd", "your home equity was"),
                   ("wlth_odeb_net_nd", "your other debt was")]


def _finances(row: Mapping[str, Any]) -> str:
    parts = []
    if has_value(row.get("finc_tot_nd")) and has_value(row.get("wlth_tot_net_nd")):
        parts.append(f"Your current household income is {format_dollars(row['finc_tot_nd'])}, "
                     f"and your total net worth is {format_dollars(row['wlth_tot_net_nd'])}.")
    values = [f"{format_dollars(row[c])} in {label}" for c, label in COMPONENTS
              if has_value(row.get(c))]
    if len(values) == 1:
        parts.append(f"You have {values[0]}.")
    elif values:  # the reference's list: "A, and B" even for two items
        parts.append("You have " + ", ".join(values[:-1]) + f", and {values[-1]}.")
    home = optional_phrase(row, "home_stat", HOME_NOW, TASK)
    if home:
        parts.append(f"You currently {home}.")
    for k in range(MAX_HISTORY, 0, -1):
        if not has_value(row.get(f"history_lag{k}_years_ago")):
            continue
        said = []
        if has_value(row.get(f"history_lag{k}_finc_tot_nd")):
            said.append("your household income was "
                        f"{format_dollars(row[f'history_lag{k}_finc_tot_nd'])}")
        for column, words in HISTORY_PHRASES:
            if has_value(row.get(f"history_lag{k}_{column}")):
                said.append(f"{words} {format_dollars(row[f'history_lag{k}_{column}'])}")
        if has_value(row.get(f"history_lag{k}_home_stat")):
            said.append("your household "
                        f"{phrase(row, f'history_lag{k}_home_stat', HOME_THEN, TASK)}")
        if said:
            body = said[0] if len(said) == 1 else ", ".join(said[:-1]) + f", and {said[-1]}"
            parts.append(f"{years_ago(row[f'history_lag{k}_years_ago'], TASK)}, {body}.")
    return ("Here is your household's financial situation now and in past years. Note that $ "
            "denotes amounts in U.S. dollars. " + " ".join(parts))


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    macro = render_macro_paragraph(row) + " " + render_asset_paragraph(row)
    user = "\n\n".join([_background(row), _finances(row), macro, QUESTION,
                        response_instruction(task, lead="")])
    return SYSTEM_PROMPT, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    """The gold answer as the reference renderer writes it: the next-wave net worth as an integer
    (int(round(x)), `[125000]`)."""
    return [whole(row, "wlth_tot_net_nd_next_wave", TASK)]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: today's net worth, as an integer."""
    return [whole(row, "wlth_tot_net_nd", TASK)]
