"""labor_my_reentry: an own task's builder (the TaskBuilder protocol, hhx/tasks/contract.py).

Prime-age persons (25-54) out of the labor force in month t (MISH 1-3 or 5-7), linked on CPSIDP
to their record in month t+1: their t+1 labor-force status (do they re-enter it?). It reads the CPS intermediate the demo (or a
raw build) writes, with hhx's CPS toolkit for the link, the common predictors, the macro context
and the shared prompt paragraphs, so its prompts follow the official format and checks.
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
    NILF_CODES,
    adjacent_month_base,
    apply_filters,
    finish_table,
    status_rows,
)
from hhx.tasks.cps.prompt_text import LF_QUESTION_DEFINITIONS, background_paragraph, macro_paragraph
from hhx.tasks.prompting import month_note, response_instruction

TASK = "labor_my_reentry"
QUESTION = "Next month, what will be your work status? " + LF_QUESTION_DEFINITIONS


def build_table(ctx: BuildContext) -> pd.DataFrame:
    """id, time, release_date, target, then the predictors in the YAML's order."""
    base, origin, steps = adjacent_month_base(
        ctx, baseline_codes=NILF_CODES, status="not in the labor force", columns=[])
    keep = np.ones(len(base), dtype=bool)
    age = pd.to_numeric(base["age"], errors="coerce")
    apply_filters(steps, keep, [("prime age (25-54)", ((age >= 25) & (age <= 54)).to_numpy())])
    rows = np.flatnonzero(keep)
    table = status_rows(base.iloc[rows], origin.iloc[rows], ctx.macro_context)
    return finish_table(table, ctx.task, steps, __name__)


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    """(system, user): background, the current situation, macro conditions, question, answer."""
    month = int(str(row["time"])[5:7])
    situation = (f"Here is your current situation. {month_note(month, False)} You are "
                 "currently not in the labor force: you neither work nor look for work.")
    user = "\n\n".join([background_paragraph(row, TASK), situation, macro_paragraph(row),
                        QUESTION, response_instruction(task)])
    return CPS_SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list[str]:
    """No change: still out of the labor force next month."""
    return ["not_in_labor_force"]
