"""income_cps_displace: current weekly earnings of reemployed displaced workers (spec 10_tasks 21).

Facts (reference `scripts/2_tasks/income_cps_displace/`):
- Universe: the DWS records of `dws.py` that are employed now (EMPSTAT 10/12) with a current
  weekly wage `dwweekc` in 0-9999.97 (the target). Then, in order, present: the common
  predictors, the macro context, dwresp, dwstat, dwweekl (0-9999.95), dwyears (0-99.95),
  dwjobsince (0-94), dwwksun (0-995).
- Trim, per survey month: p01/p99 (linear interpolation) of dwweekc and of dwweekl, each over
  all displaced workers of that month (any employment status) with a valid value; the row's
  dwweekc, then its dwweekl, must lie strictly inside. A month whose p01 is not below its p99
  stops the build.
- No-change answer: `[dwweekl]` (the lost job's weekly earnings), as a float.
- Prompt (persona about income, work and labor-force situation): background with this task's
  household sentence ("You live alone and have no own children in your household." ...);
  macro paragraph; job-loss paragraph with the month and dollar note, ending "You worked at
  the lost job for about <years, up to 2 decimals> year(s) and earned approximately $x.xx per
  week."; the after-loss paragraph (jobs held since, weeks without work, currently employed);
  the question; the reference's instruction (no dollar sign or commas).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import attach_macro_context
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import PromptRules
from hhx.tasks.cps.common import (
    COMMON_PREDICTORS,
    EMPLOYED_CODES,
    apply_filters,
    bounded,
    common_predictors,
    covered_quarters,
    finish_table,
    mask,
    month_text,
    origin_q_index,
)
from hhx.tasks.cps.dws import DW_PREDICTORS, displaced_workers, job_loss_sentences
from hhx.tasks.cps.prompt_text import Background, macro_paragraph, number, whole
from hhx.tasks.prompting import CLOSING_NO_DOLLAR, format_dollars, response_instruction

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, income_cps_displace).
OUTPUT_ORDER = ("time:text", "id:text", "_mish:number")

TASK = "income_cps_displace"
PROMPT_RULES = PromptRules(closing=CLOSING_NO_DOLLAR)
SYSTEM_PROMPT = (
    "You are an American person answering questions about your income, work, "
    "and labor-force situation."
)
QUESTION = "Approximately how much do you earn per week at your current job?"
INSTRUCTION_LEAD = (
    "Return exactly one valid JSON array containing one number in current U.S. dollars per week."
)
DWS_NUMERIC = ["dwweekc", "dwweekl", "dwyears", "dwjobsince", "dwwksun"]
BOUNDS = {"dwweekc": (0, 9999.97), "dwweekl": (0, 9999.95), "dwyears": (0, 99.95),
          "dwjobsince": (0, 94), "dwwksun": (0, 995)}  # fmt: skip
INTEGER = ("dwjobsince", "dwwksun")


def household_sentence(famsize: int, nchild: int) -> str:
    if famsize == 1 and nchild == 0:
        return "You live alone and have no own children in your household."
    head = f"You live in a household of {famsize} {'person' if famsize == 1 else 'people'}"
    if nchild == 0:
        return head + " and have no own children in your household."
    return head + f", including {nchild} of your own children."


BACKGROUND = Background(TASK, checked=frozenset(), household=household_sentence)


def wave_cutoffs(values: pd.Series, period: pd.Series, name: str) -> pd.DataFrame:
    """p01/p99 of the valid values per survey month; equal cutoffs stop the build."""
    valid = values.notna()
    cut = values[valid].groupby(period[valid]).quantile([0.01, 0.99]).unstack()
    if cut.empty:
        raise DataError(f"{TASK}: no valid {name} among displaced workers; no trim cutoffs")
    cut.columns = ["p01", "p99"]
    bad = cut["p01"] >= cut["p99"]
    if bad.any():
        raise DataError(
            f"{TASK}: degenerate {name} cutoffs in survey month(s) {list(cut.index[bad])} "
            "(p01 not below p99); the trim needs varying values"
        )
    return cut


def build_table(ctx: BuildContext) -> pd.DataFrame:
    """All eligible rows: id, time, release_date, target, then the task's predictors in order."""
    base, steps = displaced_workers(ctx, TASK, DWS_NUMERIC)
    if base.empty:
        raise DataError(f"{TASK}: no displaced-worker records (DWRESP 2, DWSTAT 1) in the CPS "
                        "intermediate; the extract needs Displaced Worker Supplement months")  # fmt: skip
    num = {c: bounded(base[c], *BOUNDS[c]) for c in DWS_NUMERIC}
    for c in INTEGER:
        num[c] = num[c].round()
    period = month_text(base["YEAR"], base["MONTH"]).str[:7]
    cuts = {c: wave_cutoffs(num[c], period, c) for c in ("dwweekc", "dwweekl")}
    predictors = common_predictors(base)
    origin = origin_q_index(base["YEAR"], base["MONTH"])
    keep = np.ones(len(base), dtype=bool)
    apply_filters(steps, keep, [
        ("employed now (EMPSTAT 10, 12)", mask(base["EMPSTAT"].isin(EMPLOYED_CODES))),
        ("current weekly earnings dwweekc (0-9999.97) present", num["dwweekc"].notna().to_numpy()),
    ])  # fmt: skip
    # The reference frame holds these as floats when any pooled row lacks them (ints + None).
    floats = ["target", "dwyears", "dwweekl"]
    pool = np.flatnonzero(keep)
    for col, values in (
        ("age", predictors["age"]),
        ("famsize", predictors["famsize"]),
        ("nchild", predictors["nchild"]),
        *((c, num[c]) for c in INTEGER),
    ):
        if values.iloc[pool].isna().any():
            floats.append(col)
    apply_filters(steps, keep, [
        ("common predictors present", predictors.notna().all(axis=1).to_numpy()),
        ("macro context for the survey quarter", mask(origin.isin(covered_quarters(ctx.macro_context)))),
        ("dwresp and dwstat labels present", base["dwresp"].notna().to_numpy()
         & base["dwstat"].notna().to_numpy()),
        *((f"{c} present", num[c].notna().to_numpy()) for c in ("dwweekl", "dwyears",
                                                                "dwjobsince", "dwwksun")),
    ])  # fmt: skip
    for c, role in (("dwweekc", "target"), ("dwweekl", "lost-job earnings")):
        lo = cuts[c]["p01"].reindex(period).to_numpy()
        hi = cuts[c]["p99"].reindex(period).to_numpy()
        x = num[c].to_numpy()
        apply_filters(steps, keep, [
            (f"{c} ({role}) strictly inside the survey month's p01-p99", (x > lo) & (x < hi)),
        ])  # fmt: skip
    rows = np.flatnonzero(keep)
    kept = base.iloc[rows]
    table = pd.DataFrame(
        {
            "id": kept["CPSIDP"].astype("int64").astype(str),
            "time": month_text(kept["YEAR"], kept["MONTH"]),
            "release_date": kept["release_date"].astype(str),
            "target": num["dwweekc"].iloc[rows],
            **{c: predictors[c].iloc[rows] for c in COMMON_PREDICTORS},
            "baseline_status": "employed",
            **{c: num[c].iloc[rows] for c in ("dwyears", "dwweekl", "dwjobsince", "dwwksun")},
            "dw_lookback_regime": kept["dw_lookback_regime"],
            **{c: kept[c] for c in DW_PREDICTORS},
        }
    )
    table = attach_macro_context(table, origin.iloc[rows], ctx.macro_context)
    table = table.rename(columns={"macro_reference_q_index": "_macro_reference_q_index"})
    table["_mish"] = kept["MISH"].astype("int64")
    return finish_table(table, ctx.task, steps, __name__, float_columns=floats)


# --------------------------------------------------------------------------------------------
# Prompt


def job_loss_paragraph(row: Mapping[str, Any]) -> str:
    sentences = job_loss_sentences(row, TASK, currency=True)
    tenure = number(row, "dwyears", TASK)
    tenure_text = f"{tenure:.2f}".rstrip("0").rstrip(".")
    unit = "year" if abs(tenure - 1.0) < 1e-9 else "years"
    earned = format_dollars(number(row, "dwweekl", TASK), 2)
    sentences.append(
        f"You worked at the lost job for about {tenure_text} {unit} "
        f"and earned approximately {earned} per week."
    )
    return " ".join(sentences)


def after_loss_paragraph(row: Mapping[str, Any]) -> str:
    jobs, weeks = whole(row, "dwjobsince", TASK), whole(row, "dwwksun", TASK)
    return (
        f"Since losing or leaving that job, you have held {jobs} {'job' if jobs == 1 else 'jobs'}. "
        f"You went {weeks} {'week' if weeks == 1 else 'weeks'} without work between the end of "
        "the lost job and the start of your next job. You are currently employed."
    )


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    """(system, user): background, macro, job loss, after the loss, question, instruction."""
    if str(row.get("baseline_status")) != "employed":
        raise DataError(f"{TASK}: id {row.get('id')!r} is not currently employed")
    user = "\n\n".join(
        [
            BACKGROUND.paragraph(row),
            macro_paragraph(row),
            job_loss_paragraph(row),
            after_loss_paragraph(row),
            QUESTION,
            response_instruction(task, lead=INSTRUCTION_LEAD),
        ]
    )
    return SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: the lost job's weekly earnings."""
    return [number(row, "dwweekl", TASK)]
