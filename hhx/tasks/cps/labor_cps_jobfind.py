"""labor_cps_jobfind: next-month labor-force status of the unemployed (spec 20_tasks 2).

Facts (reference `scripts/2_tasks/labor_cps_jobfind/`): a person unemployed in month t (age
16+, MISH 1-3 or 5-7, EMPSTAT 20-22) linked on CPSIDP to their record in month t+1 (MISH + 1,
a supported status). Rows need the common predictors, the macro context of the baseline
quarter, WKSTAT, DURUNEMP (0-998) and WNFTLOOK; CLASSWKR is optional. Target: the t+1 status;
release date: the t+1 file's; no-change answer `["unemployed"]`.

Prompt: background; labor-market paragraph (month note without the dollar clause, search for
full- or part-time work, weeks unemployed, last full-time work ("never" for the three
never-worked labels), the most recent job's worker class when present); the macro paragraph;
the question with the three status definitions; the response instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.tasks.context import BuildContext
from hhx.tasks.cps.common import (
    COMMON_LABELS,
    CPS_SYSTEM_PROMPT,
    UNEMPLOYED_CODES,
    adjacent_month_base,
    apply_filters,
    bounded,
    finish_table,
    labels_as_text,
    status_rows,
)
from hhx.tasks.cps.prompt_text import (
    LF_QUESTION_DEFINITIONS,
    RECENT_JOB_SENTENCE,
    WKSTAT_SENTENCE,
    WNFTLOOK_PHRASE,
    background_paragraph,
    macro_paragraph,
    optional_text,
    pick,
    text,
    week_count,
    whole,
)
from hhx.tasks.prompting import month_note, response_instruction

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, labor_cps_jobfind).
OUTPUT_ORDER = ("_outcome_month:text", "id:text", "_mish:number")

TASK = "labor_cps_jobfind"
PREDICTOR_COLUMNS = ["DURUNEMP", *COMMON_LABELS, "classwkr", "wkstat", "wnftlook"]
QUESTION = "Next month, what will be your work status? " + LF_QUESTION_DEFINITIONS
# kept for callers of the earlier module
CLASSWKR_SENTENCE = RECENT_JOB_SENTENCE


def build_table(ctx: BuildContext) -> pd.DataFrame:
    """All eligible rows: id, time, release_date, target, then the task's predictors in order.

    `attrs["construction_steps"]` lists rows kept after each filter (step, rows, dropped).
    """
    base, origin, steps = adjacent_month_base(
        ctx, baseline_codes=UNEMPLOYED_CODES, status="unemployed", columns=PREDICTOR_COLUMNS
    )
    durunemp = bounded(base["DURUNEMP"], 0, 998).round()
    wkstat, wnftlook = labels_as_text(base["wkstat"]), labels_as_text(base["wnftlook"])
    keep = np.ones(len(base), dtype=bool)
    apply_filters(steps, keep, [
        ("wkstat present", wkstat.notna().to_numpy()),
        ("durunemp (0-998) present", durunemp.notna().to_numpy()),
        ("wnftlook present", wnftlook.notna().to_numpy()),
    ])  # fmt: skip
    rows = np.flatnonzero(keep)
    table = status_rows(base.iloc[rows], origin.iloc[rows], ctx.macro_context)
    table["wkstat_baseline"] = wkstat.iloc[rows]
    table["durunemp_baseline"] = durunemp.iloc[rows]
    table["wnftlook_baseline"] = wnftlook.iloc[rows]
    table["classwkr"] = labels_as_text(base["classwkr"].iloc[rows])
    return finish_table(table, ctx.task, steps, __name__)


# --------------------------------------------------------------------------------------------
# Prompt


def labor_paragraph(row: Mapping[str, Any], task: TaskConfig) -> str:
    """Current-month note (no dollar clause), search, duration, last full-time work, class."""
    month = int(str(row["time"])[5:7])
    currency = task.prompt_month.currency if task.prompt_month is not None else False
    parts = [
        pick(WKSTAT_SENTENCE, text(row, "wkstat_baseline", TASK), "wkstat_baseline", row, TASK),
        f"You have been unemployed for {week_count(whole(row, 'durunemp_baseline', TASK))}.",
        "The last time you worked full-time for at least 2 consecutive weeks was "
        + pick(WNFTLOOK_PHRASE, text(row, "wnftlook_baseline", TASK), "wnftlook_baseline",
               row, TASK) + ".",
    ]  # fmt: skip
    cls = optional_text(row, "classwkr")
    if cls is not None:
        parts.append(pick(RECENT_JOB_SENTENCE, cls, "classwkr", row, TASK))
    return (
        "Here is your current and recent labor-market situation. "
        f"{month_note(month, currency)} " + " ".join(parts)
    )


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    """(system, user): background, labor situation, macro conditions, question, instruction."""
    user = "\n\n".join(
        [
            background_paragraph(row, TASK),
            labor_paragraph(row, task),
            macro_paragraph(row),
            QUESTION,
            response_instruction(task),
        ]
    )
    return CPS_SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: still unemployed next month."""
    return ["unemployed"]
