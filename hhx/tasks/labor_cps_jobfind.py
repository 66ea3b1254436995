"""labor_cps_jobfind: next-month labor-force status of the unemployed (spec 20_tasks 2).

Unit: a person unemployed in month t (age 16+, MISH 1-3 or 5-7) linked on CPSIDP to their
record in month t+1 (MISH + 1). Target: t+1 status. Row release date: the t+1 file's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from hhx.config import TaskConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.fred_qd import CORE_MACRO_COLUMNS, attach_macro_context
from hhx.tasks.context import BuildContext
from hhx.tasks.cps_common import (
    ADJACENT_MONTH,
    COMMON_LABELS,
    CPS_SYSTEM_PROMPT,
    LF_CODES,
    UNEMPLOYED_CODES,
    background_paragraph,
    bounded,
    common_predictors,
    labels_as_text,
    lf_status,
    link_months,
    origin_q_index,
)
from hhx.tasks.prompting import month_note, render_macro_paragraph, response_instruction

INTERMEDIATE = "cps_basic"
# Two reads keep memory bounded on the 79-million-row file: the link needs a few key columns
# of every record; predictors are taken only for the baseline candidates.
KEY_COLUMNS = ["YEAR", "MONTH", "CPSIDP", "MISH", "AGE", "EMPSTAT", "release_date"]
PREDICTOR_COLUMNS = [
    "FAMSIZE", "NCHILD", "DURUNEMP", *COMMON_LABELS, "classwkr", "wkstat", "wnftlook",
]  # fmt: skip
SEEKING = ("unemployed, seeking full-time work", "unemployed, seeking part-time work")

QUESTION = (
    "Next month, what will be your work status? "
    'For this question, "employed" means working for pay or profit or being temporarily absent '
    'from a job, "unemployed" means not employed but available for work and actively searching '
    'or on temporary layoff, and "not_in_labor_force" means neither employed nor unemployed.'
)
_SEEKING = "You are currently unemployed and are seeking"
WKSTAT_SENTENCE = {
    "unemployed, seeking full-time work": f"{_SEEKING} full-time work.",
    "unemployed, seeking part-time work": f"{_SEEKING} part-time work.",
}
WNFTLOOK_PHRASE = {
    "less than 5 years ago": "less than 5 years ago",
    "within the last 12 months": "within the last 12 months",
    "one to five years ago": "one to five years ago",
    "more than 12 months ago": "more than 12 months ago",
    "more than 5 years ago": "more than 5 years ago",
    "never worked": "never",
    "never worked full-time for 2 or more weeks": "never",
    "never worked at all": "never",
}
_RECENT = "In your most recent job, you"
CLASSWKR_SENTENCE = {
    "private for-profit wage and salary worker": f"{_RECENT} worked in the private sector.",
    "private wage and salary worker": f"{_RECENT} worked in the private sector.",
    "private nonprofit wage and salary worker": (
        f"{_RECENT} worked for a private nonprofit employer."
    ),
    "state government employee": f"{_RECENT} worked for state government.",
    "federal government employee": f"{_RECENT} worked for the federal government.",
    "local government employee": f"{_RECENT} worked for local government.",
    "government wage and salary worker": f"{_RECENT} worked for the government.",
    "self-employed": f"{_RECENT} were self-employed.",
    "self-employed, incorporated": f"{_RECENT} were self-employed in an incorporated business.",
    "self-employed, not incorporated": (
        f"{_RECENT} were self-employed in an unincorporated business."
    ),
    "wage or salary worker": f"{_RECENT} worked as a wage and salary worker.",
    "unpaid family worker": f"{_RECENT} worked without pay in a family business or farm.",
    "armed forces": f"{_RECENT} served in the armed forces.",
}


# --------------------------------------------------------------------------------------------
# Table


def _check_columns(ctx: BuildContext) -> None:
    path = ctx.intermediate_dir / f"{INTERMEDIATE}.parquet"
    if path.is_file():
        names = set(pq.read_schema(path).names)
        absent = [c for c in KEY_COLUMNS + PREDICTOR_COLUMNS if c not in names]
        if absent:
            raise DataError(
                f"{path}: column(s) {absent} missing; rebuild it with "
                "`python -m hhx stage=build survey=cps` from an extract holding them"
            )


def _apply(steps: list[dict], keep: np.ndarray, filters: list[tuple[str, np.ndarray]]) -> None:
    """AND each filter into `keep` (in place), recording rows kept and dropped per step."""
    for name, mask in filters:
        before = int(keep.sum())
        keep &= mask
        steps.append({"step": name, "rows": int(keep.sum()), "dropped": before - int(keep.sum())})


def build_table(ctx: BuildContext) -> pd.DataFrame:
    """All eligible rows: id, time, release_date, target, then the task's predictors in order.

    `attrs["construction_steps"]` lists rows kept after each filter (step, rows, dropped).
    """
    task = ctx.task
    _check_columns(ctx)
    macro = ctx.macro_context
    if "eligible_origin_q_index" not in macro.columns:
        raise DataError("macro context lacks eligible_origin_q_index; rebuild it (survey=fred_qd)")
    covered = macro.loc[macro[CORE_MACRO_COLUMNS].notna().all(axis=1), "eligible_origin_q_index"]

    keys = ctx.intermediate(INTERMEDIATE, columns=KEY_COLUMNS)
    linked = link_months(
        keys, 1, ADJACENT_MONTH, target_columns=("EMPSTAT", "MISH", "release_date")
    )
    del keys
    steps = [{"step": "person-month records", "rows": len(linked), "dropped": 0}]
    keep = np.ones(len(linked), dtype=bool)
    _apply(steps, keep, [
        ("baseline MISH in 1-3 or 5-7",
         linked["MISH"].isin(ADJACENT_MONTH.baseline).to_numpy(dtype=bool)),
        ("age 16 or older", (linked["AGE"] >= 16).fillna(False).to_numpy(dtype=bool)),
        ("unemployed in the baseline month",
         linked["EMPSTAT"].isin(UNEMPLOYED_CODES).to_numpy(dtype=bool)),
        ("month t+1 record, if any, has MISH + 1", linked["_mish_ok"].to_numpy(dtype=bool)),
        ("baseline CPSIDP valid and unique in its month", linked["_key_ok"].to_numpy(dtype=bool)),
        ("unique same-CPSIDP record in month t+1", linked["_linked"].to_numpy(dtype=bool)),
        ("t+1 labor-force status supported",
         linked["EMPSTAT_t"].isin(LF_CODES).to_numpy(dtype=bool)),
    ])  # fmt: skip
    positions = np.flatnonzero(keep)
    base = linked.iloc[positions]
    del linked
    # same file, same order: rows line up by position; only the kept records are read
    extra = ctx.intermediate(INTERMEDIATE, columns=PREDICTOR_COLUMNS, rows=positions)
    base = pd.concat([base, extra.set_axis(base.index)], axis=1)
    del extra

    predictors = common_predictors(base)
    origin = origin_q_index(base["YEAR"], base["MONTH"])
    durunemp = bounded(base["DURUNEMP"], 0, 998)
    keep = np.ones(len(base), dtype=bool)
    _apply(steps, keep, [
        ("common predictors present", predictors.notna().all(axis=1).to_numpy(dtype=bool)),
        ("macro context for the baseline quarter", origin.isin(covered).to_numpy(dtype=bool)),
        ("wkstat, durunemp (0-998) and wnftlook present",
         (base["wkstat"].isin(SEEKING).to_numpy(dtype=bool) & durunemp.notna().to_numpy()
          & base["wnftlook"].notna().to_numpy())),
    ])  # fmt: skip
    target = lf_status(base["EMPSTAT_t"])
    rows = base.iloc[np.flatnonzero(keep)]
    order = np.lexsort(
        (
            rows["CPSIDP"].to_numpy(dtype=np.int64),
            rows["MONTH"].to_numpy(dtype=np.int64),
            rows["YEAR"].to_numpy(dtype=np.int64),
        )
    )
    rows = rows.iloc[order]
    year, month = rows["YEAR"].astype("int64"), rows["MONTH"].astype("int64")
    values: dict[str, pd.Series] = {
        "id": rows["CPSIDP"].astype("int64").astype(str),
        "time": year.astype(str) + "-" + month.astype(str).str.zfill(2) + "-01",
        "release_date": rows["release_date_t"].astype(str),
        "target": target.loc[rows.index].astype(str),
        **{c: predictors.loc[rows.index, c] for c in predictors.columns},
        "wkstat_baseline": labels_as_text(rows["wkstat"]),
        "durunemp_baseline": durunemp.loc[rows.index],
        "wnftlook_baseline": labels_as_text(rows["wnftlook"]),
        "classwkr": labels_as_text(rows["classwkr"]),
    }
    table = pd.DataFrame(values, index=rows.index)
    table = attach_macro_context(table, origin.loc[rows.index], macro)
    table = table.rename(columns={"macro_reference_q_index": "_macro_reference_q_index"})
    table["_outcome_month"] = (year * 12 + month).map(
        lambda i: f"{i // 12:04d}-{i % 12 + 1:02d}"
    )  # t+1 as YYYY-MM
    table["_mish"] = rows["MISH"].astype("int64")

    public = ["id", "time", "release_date", *task.targets, *task.prompt_predictors]
    unknown = [c for c in public if c not in table.columns]
    if unknown:
        raise ConfigError(
            f"task {task.name}: predictors {unknown} are not built by {__name__}; "
            "check conf/task/labor_cps_jobfind.yaml"
        )
    internal = [c for c in table.columns if c.startswith("_") and c not in public]
    out = table[public + internal].reset_index(drop=True)
    out.attrs["construction_steps"] = steps
    return out


# --------------------------------------------------------------------------------------------
# Prompt


def _weeks(row: Mapping[str, Any]) -> str:
    try:
        value = float(row["durunemp_baseline"])
    except (KeyError, TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise DataError(f"labor_cps_jobfind: durunemp_baseline missing for id {row.get('id')!r}")
    weeks = int(round(value))
    return "1 week" if weeks == 1 else f"{weeks} weeks"


def _label(row: Mapping[str, Any], col: str, table: Mapping[str, str]) -> str:
    value = row.get(col)
    key = None if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    if key not in table:
        raise DataError(
            f"labor_cps_jobfind: {col} {value!r} has no prompt wording (id {row.get('id')!r})"
        )
    return table[key]


def labor_paragraph(row: Mapping[str, Any], task: TaskConfig) -> str:
    """Current-month note (no dollar clause), search, duration, last full-time work, class."""
    month = int(str(row["time"])[5:7])
    currency = task.prompt_month.currency if task.prompt_month is not None else False
    parts = [
        _label(row, "wkstat_baseline", WKSTAT_SENTENCE),
        f"You have been unemployed for {_weeks(row)}.",
        "The last time you worked full-time for at least 2 consecutive weeks was "
        f"{_label(row, 'wnftlook_baseline', WNFTLOOK_PHRASE)}.",
    ]
    cls = row.get("classwkr")
    if cls is not None and not (isinstance(cls, float) and math.isnan(cls)) and str(cls).strip():
        parts.append(_label(row, "classwkr", CLASSWKR_SENTENCE))
    return (
        "Here is your current and recent labor-market situation. "
        f"{month_note(month, currency)} " + " ".join(parts)
    )


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    """(system, user): background, labor situation, macro conditions, question, instruction."""
    user = "\n\n".join(
        [
            background_paragraph(row),
            labor_paragraph(row, task),
            render_macro_paragraph(row),
            QUESTION,
            response_instruction(task),
        ]
    )
    return CPS_SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: still unemployed next month."""
    return ["unemployed"]
