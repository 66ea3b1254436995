"""labor_cps_separation: next-month labor-force status of the employed (spec 20_tasks 4).

Facts (reference `scripts/2_tasks/labor_cps_separation/`): the jobfind link and universe with
the baseline status employed (EMPSTAT 10, 12): age 16+, MISH 1-3 or 5-7, a unique same-CPSIDP
record at t+1 with MISH + 1 and a supported status. Rows need the common predictors, the
macro context of the baseline quarter, AHRSWORKT and UHRSWORKT (each 0-99); CLASSWKR and
MULTJOB are optional. No trimming. Target: the t+1 status; release date: the t+1 file's;
no-change answer `["employed"]`; `baseline_status` is "employed".

Prompt: background; "Here is your current job." with the month note (no dollar clause),
"You are currently employed <employer phrase>." (plain when CLASSWKR is missing), hours last
week and usual hours (whole numbers as integers, else one decimal) and, when MULTJOB is
present, whether you hold multiple jobs; the macro paragraph; "One month from now, what will
be your work status?" with the three status definitions; the response instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.tasks.context import BuildContext
from hhx.tasks.cps.common import (
    CPS_SYSTEM_PROMPT,
    EMPLOYED_CODES,
    adjacent_month_base,
    apply_filters,
    bounded,
    finish_table,
    labels_as_text,
    status_rows,
)
from hhx.tasks.cps.prompt_text import (
    CURRENT_EMPLOYER_PHRASE,
    LF_QUESTION_DEFINITIONS,
    background_paragraph,
    hours_text,
    macro_paragraph,
    number,
    optional_text,
    pick,
)
from hhx.tasks.prompting import month_note, response_instruction

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, labor_cps_separation).
OUTPUT_ORDER = ("_outcome_month:text", "id:text", "_mish:number")

TASK = "labor_cps_separation"
PREDICTOR_COLUMNS = ["AHRSWORKT", "UHRSWORKT", "classwkr", "multjob"]
QUESTION = "One month from now, what will be your work status? " + LF_QUESTION_DEFINITIONS
MULTJOB_LABELS = ("yes", "no")


def build_table(ctx: BuildContext) -> pd.DataFrame:
    """All eligible rows: id, time, release_date, target, then the task's predictors in order."""
    base, origin, steps = adjacent_month_base(
        ctx, baseline_codes=EMPLOYED_CODES, status="employed", columns=PREDICTOR_COLUMNS
    )
    hours = bounded(base["AHRSWORKT"], 0, 99)
    usual = bounded(base["UHRSWORKT"], 0, 99)
    keep = np.ones(len(base), dtype=bool)
    apply_filters(steps, keep, [
        ("ahrsworkt (0-99) present", hours.notna().to_numpy()),
        ("uhrsworkt (0-99) present", usual.notna().to_numpy()),
    ])  # fmt: skip
    rows = np.flatnonzero(keep)
    table = status_rows(base.iloc[rows], origin.iloc[rows], ctx.macro_context)
    table["baseline_status"] = "employed"
    table["ahrsworkt_baseline"] = hours.iloc[rows]
    table["uhrsworkt_baseline"] = usual.iloc[rows]
    table["classwkr"] = labels_as_text(base["classwkr"].iloc[rows])
    table["multjob_baseline"] = labels_as_text(base["multjob"].iloc[rows])
    # hours are floats in the reference frame (written 40.0)
    return finish_table(
        table, ctx.task, steps, __name__, float_columns=("ahrsworkt_baseline", "uhrsworkt_baseline")
    )


def job_paragraph(row: Mapping[str, Any], task: TaskConfig) -> str:
    month = int(str(row["time"])[5:7])
    cls = optional_text(row, "classwkr")
    employed = (
        "You are currently employed."
        if cls is None
        else f"You are currently employed {pick(CURRENT_EMPLOYER_PHRASE, cls, 'classwkr', row, TASK)}."
    )
    detail = (
        f"You worked {hours_text(number(row, 'ahrsworkt_baseline', TASK))} hours last week, "
        f"usually work {hours_text(number(row, 'uhrsworkt_baseline', TASK))} hours per week"
    )
    multjob = optional_text(row, "multjob_baseline")
    if multjob is None:
        detail += "."
    else:
        pick(dict.fromkeys(MULTJOB_LABELS, ""), multjob, "multjob_baseline", row, TASK)
        detail += (
            ", and do not hold multiple jobs." if multjob == "no" else ", and hold multiple jobs."
        )
    return f"Here is your current job. {month_note(month, False)} {employed} {detail}"


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    """(system, user): background, current job, macro conditions, question, instruction."""
    user = "\n\n".join(
        [
            background_paragraph(row, TASK),
            job_paragraph(row, task),
            macro_paragraph(row),
            QUESTION,
            response_instruction(task),
        ]
    )
    return CPS_SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: still employed next month."""
    return ["employed"]
