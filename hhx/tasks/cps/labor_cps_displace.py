"""labor_cps_displace: current labor-force status of displaced workers (spec 20_tasks 1).

Facts (reference `scripts/2_tasks/labor_cps_displace/`): the DWS universe of `dws.py`
(DWRESP 2, DWSTAT 1), a supported current status (EMPSTAT 10/12/20-22/30-36), the common
predictors and the macro context of the survey quarter; no age filter, no trimming. Target:
the current status; no-change answer `["employed"]`. Public DWS predictors: dwstat, the
look-back regime, dwreas, dwnotice, dwlastwrk, dwfulltime, dwunion, dwclass, dwhi (labels,
optional except dwstat; dwresp must be present too).

Prompt: background (sex, race, relate checked); macro paragraph; job-loss paragraph (month
note without the dollar clause); "What is your current employment status?"; the instruction.
No definitions of the three statuses are given in this task.
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
from hhx.tasks.cps.common import (
    COMMON_PREDICTORS,
    CPS_SYSTEM_PROMPT,
    LF_CODES,
    apply_filters,
    common_predictors,
    covered_quarters,
    finish_table,
    lf_status,
    mask,
    month_text,
    origin_q_index,
)
from hhx.tasks.cps.dws import DW_PREDICTORS, check_labels, displaced_workers, job_loss_sentences
from hhx.tasks.cps.prompt_text import background_paragraph, macro_paragraph, text
from hhx.tasks.prompting import response_instruction

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, labor_cps_displace).
OUTPUT_ORDER = ("time:text", "id:text", "_mish:number")

TASK = "labor_cps_displace"
QUESTION = "What is your current employment status?"


def build_table(ctx: BuildContext) -> pd.DataFrame:
    """All eligible rows: id, time, release_date, target, then the task's predictors in order."""
    base, steps = displaced_workers(ctx, TASK)
    if base.empty:
        raise DataError(f"{TASK}: no displaced-worker records (DWRESP 2, DWSTAT 1) in the CPS "
                        "intermediate; the extract needs Displaced Worker Supplement months")  # fmt: skip
    predictors = common_predictors(base)
    origin = origin_q_index(base["YEAR"], base["MONTH"])
    keep = np.ones(len(base), dtype=bool)
    apply_filters(steps, keep, [
        ("current labor-force status supported", mask(base["EMPSTAT"].isin(LF_CODES))),
        ("common predictors present", predictors.notna().all(axis=1).to_numpy()),
        ("macro context for the survey quarter", mask(origin.isin(covered_quarters(ctx.macro_context)))),
        ("dwresp and dwstat labels present", base["dwresp"].notna().to_numpy()
         & base["dwstat"].notna().to_numpy()),
    ])  # fmt: skip
    rows = np.flatnonzero(keep)
    kept = base.iloc[rows]
    table = pd.DataFrame(
        {
            "id": kept["CPSIDP"].astype("int64").astype(str),
            "time": month_text(kept["YEAR"], kept["MONTH"]),
            "release_date": kept["release_date"].astype(str),
            "target": lf_status(kept["EMPSTAT"]).astype(str),
            **{c: predictors[c].iloc[rows] for c in COMMON_PREDICTORS},
            "dw_lookback_regime": kept["dw_lookback_regime"],
            **{c: kept[c] for c in DW_PREDICTORS},
        }
    )
    table = attach_macro_context(table, origin.iloc[rows], ctx.macro_context)
    table = table.rename(columns={"macro_reference_q_index": "_macro_reference_q_index"})
    table["_mish"] = kept["MISH"].astype("int64")
    return finish_table(table, ctx.task, steps, __name__)


def job_loss_paragraph(row: Mapping[str, Any]) -> str:
    check_labels(row, TASK)
    return " ".join(job_loss_sentences(row, TASK, currency=False))


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    """(system, user): background, macro conditions, job loss, question, instruction."""
    text(row, "dwstat", TASK)  # required by the reference renderer
    user = "\n\n".join(
        [
            background_paragraph(row, TASK),
            macro_paragraph(row),
            job_loss_paragraph(row),
            QUESTION,
            response_instruction(task),
        ]
    )
    return CPS_SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: employed, as before the job loss."""
    return ["employed"]
