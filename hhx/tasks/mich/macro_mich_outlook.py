"""macro_mich_outlook: 1-year and 5-10-year inflation expectations of reinterviewed households.

Facts: shared/spec/20_tasks_labor_macro.md 11 and the reference's
`scripts/2_tasks/macro_mich_outlook/` (Jn-Huang/householdbench_eval @148abfb).
Unit: a reinterview (panel wave 2 or 3) linked to its previous interview (prev_caseid, from
(DATEPR, IDPREV) -> (YYYYMM, ID) in the mich intermediate). Targets PX1, PX5 (percent); the
previous interview's values are predictors prior_PX1, prior_PX5 and the no-change answer
(rounded to 3 decimals, as floats, like the gold answer `[round(PX1, 3), round(PX5, 3)]`).
`id` = panel_id (root CASEID of the chain), `time` = survey month.

Steps (each evaluated on the rows entering it): monthly p01/p99 cutoffs of PX1, PX5 and INCOME
over all interviews; the predecessor's survey date, release date, YYYYMM, PX1, PX5 and its
month's PX1/PX5 cutoffs; macro context of the survey quarter (required for all rows); universe
(link expected, link found, no chain loop, prev_caseid and panel_id present, wave 2 or 3, 6-8
months since the previous interview, predecessor earlier, its month = DATEPR, its release date
<= this survey date); targets present; predictors present (context, macro, PAGO, BAGO, GOVT,
DUR, prior_PX1, prior_PX5, months_since_prev; HOM, SHOM, CAR may be missing); validity (PAGO,
BAGO, GOVT, DUR 1/3/5, SEX, REGION, MARRY, EDUC in domain, CASEID != prev_caseid, (panel_id,
panel_wave) unique among the entering rows, calendar months between the two survey dates =
months_since_prev); trims: PX1, PX5, INCOME strictly inside the current month's (p01, p99),
then prior_PX1, prior_PX5 inside the predecessor month's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
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
    missing,
    monthly_cutoffs,
    phrase,
    views_opening,
    whole,
    with_cutoffs,
)
from hhx.tasks.prompting import join_list, render_macro_paragraph, response_instruction

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, macro_mich_outlook).
OUTPUT_ORDER = ("time:text", "id:number", "_sample_id:number")

TASK = "macro_mich_outlook"
REQUIRED_VIEWS = ["PAGO", "BAGO", "GOVT", "DUR"]
OPTIONAL_VIEWS = ["HOM", "CAR", "SHOM"]
LABELLED = ["SEX", "REGION", "MARRY", "EDUC", *REQUIRED_VIEWS, *OPTIONAL_VIEWS]
COLUMNS = list(dict.fromkeys(
    CONTEXT_COLUMNS + ["WT", "SAMPLE", "methodology_regime", "panel_id", "panel_wave",
                       "panel_link_expected", "panel_link_ok", "prev_caseid",
                       "months_since_prev", "panel_chain_cycle_flag", "DATEPR",
                       *REQUIRED_VIEWS, *OPTIONAL_VIEWS, "PX1", "PX5", "PX1_outlier_abs_gt25",
                       "PX5_outlier_abs_gt25"] + [f"{c}_label" for c in LABELLED]))

SYSTEM_PROMPT = ("You are the head of an American household forming expectations about economic "
                 "conditions, both for the country in general and for your household in "
                 "particular.")
# Only the codebook's own MARRY labels (the reference's table for this task has no others).
MARITAL_PHRASES = {
    "Married/partner (includes spouse absent)": "are married or partnered",
    "Divorced (includes separated)": "are divorced or separated",
    "Widowed": "are widowed",
    "Never married": "have never been married",
}
GOVT_PHRASES = {"Good job": "good", "Only fair": "only fair", "Poor job": "poor"}
BUYING_PHRASES = {"Good": "good", "GOOD": "good", "Pro-con": "mixed", "PRO-CON": "mixed",
                  "Bad": "bad", "BAD": "bad"}
BUYING_ITEMS = [("HOM", "buy a home"), ("SHOM", "sell a house"), ("CAR", "buy a vehicle")]
QUESTION = (
    "Over the next 12 months, by what percent do you expect prices in general to change? Over the "
    "next 5 to 10 years, by what percent per year on average do you expect prices in general to "
    "change? Use a negative number if you expect prices to fall."
)
RESPONSE_LEAD = (
    "Return only a valid JSON array with exactly 2 elements, in this order: "
    "expected_inflation_1y, expected_inflation_5_to_10y_annual. Both elements must be numbers in "
    "percent."
)


def attach_predecessor(mich: pd.DataFrame, cuts: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """prior_* fields of the interview named by prev_caseid, and its month's PX cutoffs."""
    prior = mich[["CASEID", "survey_date", "release_date", "YYYYMM", "PX1", "PX5"]].rename(
        columns={"CASEID": "prev_caseid_lookup", "survey_date": "prior_survey_date",
                 "release_date": "prior_release_date", "YYYYMM": "prior_YYYYMM",
                 "PX1": "prior_PX1", "PX5": "prior_PX5"})
    out = mich.merge(prior, left_on="prev_caseid", right_on="prev_caseid_lookup", how="left",
                     validate="many_to_one", sort=False)
    out.index = mich.index
    for column in ("PX1", "PX5"):
        out = with_cutoffs(out, cuts[column], "prior_YYYYMM", f"prior_{column}")
    return out


def build_table(ctx: BuildContext) -> pd.DataFrame:
    task = ctx.task
    mich = load_mich(ctx, COLUMNS)
    if mich["CASEID"].duplicated().any():
        raise DataError(f"task {TASK}: the mich intermediate repeats a CASEID")
    steps = Steps(len(mich))
    cuts = {c: monthly_cutoffs(mich, c, TASK) for c in ("PX1", "PX5", "INCOME")}
    for column, table in cuts.items():
        mich = with_cutoffs(mich, table, "YYYYMM", column)
    mich = attach_predecessor(mich, cuts)
    pool = attach_survey_macro(mich, ctx)
    linked = pool["panel_link_ok"] == 1
    lost = pool.loc[linked, ["prev_caseid_lookup", "prior_survey_date", "prior_release_date",
                             "prior_YYYYMM", "months_since_prev", "panel_id", "panel_wave"]]
    if lost.isna().any().any():
        raise DataError(f"task {TASK}: linked interviews lack predecessor fields; rebuild "
                        "survey=mich")
    now, before = pool["survey_date"], pool["prior_survey_date"]
    gap = (now.dt.year - before.dt.year) * 12 + now.dt.month - before.dt.month
    pool["_gap"] = gap

    pool = steps.keep(pool, [
        ("previous interview expected", pool["panel_link_expected"] == 1),
        ("previous interview found", pool["panel_link_ok"] == 1),
        ("interview chain without a loop", pool["panel_chain_cycle_flag"] == 0),
        ("prev_caseid present", pool["prev_caseid"].notna()),
        ("panel_id present", pool["panel_id"].notna()),
        ("reinterview wave 2 or 3", pool["panel_wave"].isin([2, 3])),
        ("6, 7 or 8 months since the previous interview",
         pool["months_since_prev"].isin([6, 7, 8])),
        ("previous interview earlier", pool["prior_survey_date"] < pool["survey_date"]),
        ("previous interview's month = DATEPR",
         pool["prior_YYYYMM"].astype("Float64") == pool["DATEPR"].astype("Float64")),
        ("previous interview public by this survey month",
         pool["prior_release_date"] <= pool["survey_date"]),
    ])
    pool = steps.keep(pool, [(f"target {c} present", pool[c].notna()) for c in ("PX1", "PX5")])
    required = (CONTEXT_COLUMNS + MACRO_REQUIRED + REQUIRED_VIEWS
                + ["prior_PX1", "prior_PX5", "months_since_prev"])
    pool = steps.keep(pool, [(f"predictor {c} present", pool[c].notna()) for c in required])
    pool = steps.keep(pool, [
        *[(f"{c} in its codebook domain", in_domain(pool, c))
          for c in (*REQUIRED_VIEWS, "SEX", "REGION", "MARRY", "EDUC")],
        ("CASEID differs from prev_caseid", pool["CASEID"] != pool["prev_caseid"]),
        ("(panel_id, panel_wave) unique", ~pool.duplicated(["panel_id", "panel_wave"],
                                                           keep=False)),
        ("calendar months between interviews = months_since_prev",
         pool["_gap"] == pool["months_since_prev"]),
    ])
    if pool.empty:
        raise DataError(f"task {TASK}: no reinterviews remain after the validity filters")
    pool = steps.keep(pool, [(f"trim {c} strictly inside its month's p01-p99",
                              inside(pool, c, c, TASK)) for c in ("PX1", "PX5", "INCOME")])
    pool = steps.keep(pool, [(f"trim prior_{c} strictly inside the previous month's p01-p99",
                              inside(pool, f"prior_{c}", f"prior_{c}", TASK))
                             for c in ("PX1", "PX5")])
    if pool.empty:
        raise DataError(f"task {TASK}: no reinterviews remain after outlier trimming")

    required_labels = {"SEX", "REGION", "MARRY", "EDUC", *REQUIRED_VIEWS}
    table = pd.DataFrame({
        "id": pool["panel_id"].astype("int64").astype(str),
        "time": iso(pool["survey_date"]),
        "release_date": iso(pool["release_date"]),
        **{c: pool[c] for c in ("PX1", "PX5", "NUMADT", "NUMKID", "AGE", "INCOME", "prior_PX1",
                                "prior_PX5", "months_since_prev", *CORE_MACRO_COLUMNS)},
        **{c: label_text(pool, c, TASK, required=c in required_labels) for c in LABELLED},
        "_sample_id": pool["CASEID"].astype("int64").astype(str),
        "_prev_caseid": pool["prev_caseid"].astype("int64"),
        "_panel_wave": pool["panel_wave"].astype("int64"),
        "_prior_survey_date": iso(pool["prior_survey_date"]),
        "_prior_release_date": iso(pool["prior_release_date"]),
        "_release_date_source": pool["release_date_source"].astype(str),
    }, index=pool.index)
    internal = [c for c in table.columns if c.startswith("_")]
    return finish(table, task, steps, internal)


def _buying_sentence(row: Mapping[str, Any]) -> str:
    items = [("buy major household items", phrase(row, "DUR", BUYING_PHRASES, TASK))]
    for column, item in BUYING_ITEMS:
        if not missing(row.get(column)):
            items.append((item, phrase(row, column, BUYING_PHRASES, TASK)))
    if len({p for _, p in items}) == 1:
        return f"You think now is a {items[0][1]} time to {join_list(i for i, _ in items)}."
    return " ".join(f"You think now is a {p} time to {i}." for i, p in items)


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    pago = phrase(row, "PAGO", ASSESSMENT_PHRASES, TASK)
    bago = phrase(row, "BAGO", ASSESSMENT_PHRASES, TASK)
    if pago == bago:
        finances = ("You report that your personal finances and national business conditions "
                    f"are both {pago} than they were a year ago.")
    else:
        finances = (f"You report that your personal finances are {pago} than they were a year "
                    f"ago, while national business conditions are {bago} than they were a year "
                    "ago.")
    views = (f"{views_opening(row, TASK)} {finances} You rate the government's handling of "
             f"economic policy as {phrase(row, 'GOVT', GOVT_PHRASES, TASK)}. "
             f"{_buying_sentence(row)}")
    months = whole(row, "months_since_prev", TASK)
    prior = (
        f"{months} months ago, your expected price change over the next 12 months was "
        f"{float(row['prior_PX1']):.1f}%. Your expected average annual price change over the "
        f"next 5 to 10 years was {float(row['prior_PX5']):.1f}%."
    )
    user = "\n\n".join([
        background_paragraph(row, TASK, MARITAL_PHRASES),
        views,
        prior,
        render_macro_paragraph(row),
        QUESTION,
        response_instruction(task, lead=RESPONSE_LEAD),
    ])
    return SYSTEM_PROMPT, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    """The reference's gold answer: floats rounded to 3 decimals (`[3.0, 2.0]`)."""
    return [round(float(row["PX1"]), 3), round(float(row["PX5"]), 3)]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: the previous interview's expectations (3 decimals)."""
    return [round(float(row["prior_PX1"]), 3), round(float(row["prior_PX5"]), 3)]
