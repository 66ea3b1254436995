"""Shared mechanics of the Michigan task builders (income_mich_finance, macro_mich_outlook).

Facts: the reference's `scripts/utils/michigan.py` and the two tasks' `01_make_table.py` /
`02_render_prompts.py` (Jn-Huang/householdbench_eval @148abfb):
- the intermediate is read sorted by (survey_date, CASEID); release_date and
  release_date_source must be present on every row;
- outlier cutoffs are per survey month (YYYYMM): p01 / p99 (pandas linear quantiles) over all
  rows with the value present; a month whose p01 >= p99 is an error; a trim keeps values
  strictly inside (p01, p99);
- the macro context joins on the survey quarter (year*4 + quarter) for every row, the 20 core
  columns required;
- each filter step evaluates all its conditions on the rows entering the step, then keeps rows
  passing all of them;
- labelled predictors are published as their label text; numeric columns keep the
  intermediate's type (Int64 written `2`, Float64 written `2.0`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS, attach_macro_context
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import article, format_dollars, month_note

INTERMEDIATE = "mich"
CONTEXT_COLUMNS = ["CASEID", "survey_date", "release_date", "release_date_source", "YYYYMM",
                   "AGE", "SEX", "REGION", "MARRY", "NUMADT", "NUMKID", "EDUC", "INCOME"]
MACRO_REQUIRED = ["macro_reference_q_index", *CORE_MACRO_COLUMNS]
CODE_DOMAINS: dict[str, tuple[int, ...]] = {
    "SEX": (1, 2), "REGION": (1, 2, 3, 4), "MARRY": (1, 3, 4, 5), "EDUC": (1, 2, 3, 4, 5, 6),
    "PAGO": (1, 3, 5), "BAGO": (1, 3, 5), "GOVT": (1, 3, 5), "DUR": (1, 3, 5),
    "INEXQ1": (1, 2, 3, 5),
}  # fmt: skip

SEX_PHRASES = {"Male": "man", "Female": "woman"}
REGION_PHRASES = {"West": "the West", "North Central": "the North Central United States",
                  "Northeast": "the Northeast", "South": "the South"}
EDUCATION_PHRASES = {
    "Grade 0-8 no hs diploma": "0 to 8 years of schooling and no high school diploma",
    "Grade 9-12 no hs diploma": "9 to 12 years of schooling and no high school diploma",
    "Grade 0-12 w/ hs diploma": "a high school diploma",
    "Grade 13-17 no col degree": "some college without a college degree",
    "Grade 13-16 w/ col degree": "a college degree after 13 to 16 years of schooling",
    "Grade 17 W/ col degree": "a graduate or professional degree",
}
ASSESSMENT_PHRASES = {"Better now": "better", "Same": "the same",
                      "About the same": "about the same", "Worse now": "worse"}


# --------------------------------------------------------------------------------------------
# Table helpers


class Steps:
    """The build report: each filter with the rows it kept and dropped."""

    def __init__(self, start: int, label: str = "source interviews") -> None:
        self.rows: list[dict[str, Any]] = [{"step": label, "rows": start, "dropped": 0}]

    def keep(self, frame: pd.DataFrame, filters: Sequence[tuple[str, pd.Series]]) -> pd.DataFrame:
        """Conditions evaluated on the entering rows; each logged, then all applied at once."""
        keep = np.ones(len(frame), dtype=bool)
        for name, mask in filters:
            passed = np.asarray(pd.Series(mask, index=frame.index).fillna(False), dtype=bool)
            before = int(keep.sum())
            keep &= passed
            self.rows.append({"step": name, "rows": int(keep.sum()),
                              "dropped": before - int(keep.sum())})
        return frame.loc[keep]


def load_mich(ctx: BuildContext, columns: list[str]) -> pd.DataFrame:
    """The intermediate's columns, sorted by (survey_date, CASEID); release fields checked."""
    path = ctx.intermediate_dir / f"{INTERMEDIATE}.parquet"
    frame = ctx.intermediate(INTERMEDIATE, columns=list(dict.fromkeys(columns)))
    frame["survey_date"] = pd.to_datetime(frame["survey_date"], errors="coerce")
    release = pd.to_datetime(frame["release_date"], errors="coerce")
    if release.isna().any():
        raise DataError(f"{path}: release_date is missing or invalid in "
                        f"{int(release.isna().sum())} rows; rebuild survey=mich")
    frame["release_date"] = release
    source = frame["release_date_source"].astype("string").str.strip()
    if (source.isna() | (source == "")).any():
        raise DataError(f"{path}: release_date_source is empty in some rows; rebuild survey=mich")
    if frame["CASEID"].isna().any():
        raise DataError(f"{path}: CASEID is missing in some rows; rebuild survey=mich")
    return frame.sort_values(["survey_date", "CASEID"], kind="mergesort").reset_index(drop=True)


def monthly_cutoffs(frame: pd.DataFrame, column: str, task: str) -> pd.DataFrame:
    """YYYYMM, p01, p99 of `column` over the rows where it is present."""
    values = frame.loc[frame["YYYYMM"].notna() & frame[column].notna(), ["YYYYMM", column]]
    values = values.astype({column: "float64"})
    grouped = values.groupby("YYYYMM")[column]
    cuts = pd.DataFrame({"p01": grouped.quantile(0.01), "p99": grouped.quantile(0.99)})
    bad = cuts["p01"] >= cuts["p99"]
    if bad.any():
        month = int(cuts.index[bad.to_numpy()][0])
        raise DataError(f"task {task}: {column} has degenerate monthly cutoffs in {month} "
                        f"(p01 {cuts['p01'][bad].iloc[0]:g} >= p99 {cuts['p99'][bad].iloc[0]:g});"
                        " the official build stops there too")
    return cuts.reset_index()


def with_cutoffs(frame: pd.DataFrame, cuts: pd.DataFrame, key: str, prefix: str) -> pd.DataFrame:
    named = cuts.rename(columns={"YYYYMM": key, "p01": f"{prefix}_p01", "p99": f"{prefix}_p99"})
    out = frame.merge(named, on=key, how="left", validate="many_to_one", sort=False)
    out.index = frame.index
    return out


def inside(frame: pd.DataFrame, value: str, prefix: str, task: str) -> pd.Series:
    """value strictly inside its month's (p01, p99); a missing cutoff is an error."""
    lo, hi = frame[f"{prefix}_p01"], frame[f"{prefix}_p99"]
    if lo.isna().any() or hi.isna().any():
        raise DataError(f"task {task}: rows entering the trim lack monthly cutoffs for {value}")
    x = frame[value].astype("float64")
    return (x > lo) & (x < hi)


def attach_survey_macro(frame: pd.DataFrame, ctx: BuildContext) -> pd.DataFrame:
    """Core macro context of the survey quarter (year*4 + quarter), required for every row."""
    date = frame["survey_date"]
    origin = date.dt.year * 4 + date.dt.quarter
    return attach_macro_context(frame, origin, ctx.macro_context)


def in_domain(frame: pd.DataFrame, column: str) -> pd.Series:
    return frame[column].isin(CODE_DOMAINS[column])


def label_text(frame: pd.DataFrame, column: str, task: str, required: bool) -> pd.Series:
    """The `<column>_label` text that replaces the code in the public table."""
    text = frame[f"{column}_label"].astype("string")
    if required and text.isna().any():
        raise DataError(f"task {task}: labelled predictor {column}_label is missing in "
                        f"{int(text.isna().sum())} rows; rebuild survey=mich")
    return text


def iso(dates: pd.Series) -> pd.Series:
    return pd.to_datetime(dates).dt.strftime("%Y-%m-%d")


def float_columns(table: pd.DataFrame, names: Sequence[str]) -> list[str]:
    """Public numeric columns the reference's frame holds as floats (written `2.0`)."""
    return [c for c in names if c in table.columns and pd.api.types.is_float_dtype(table[c])]


def finish(table: pd.DataFrame, task: TaskConfig, steps: Steps, internal: list[str]
           ) -> pd.DataFrame:
    """Public columns in the task's order, then internal `_` columns; report and float types."""
    public = ["id", "time", "release_date", *task.targets, *task.prompt_predictors]
    absent = [c for c in public if c not in table.columns]
    if absent:
        raise DataError(f"task {task.name}: the builder makes no column(s) {absent}; check "
                        f"conf/task/{task.name}.yaml")
    out = table[public + internal].reset_index(drop=True)
    out.attrs["construction_steps"] = steps.rows
    out.attrs["float_columns"] = float_columns(out, public[3:])
    return out


# --------------------------------------------------------------------------------------------
# Prompt helpers


def missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    try:
        return bool(isinstance(value, float) and math.isnan(value))
    except TypeError:
        return False


def phrase(row: Mapping[str, Any], column: str, phrases: Mapping[str, str], task: str) -> str:
    value = row.get(column)
    text = "" if missing(value) else str(value).strip()
    if not text:
        raise DataError(f"task {task}: {column} is missing for id {row.get('id')!r}")
    if text not in phrases:
        raise DataError(f"task {task}: unexpected {column} label {text!r} for id "
                        f"{row.get('id')!r}")
    return phrases[text]


def whole(row: Mapping[str, Any], column: str, task: str) -> int:
    value: Any = row.get(column)
    if missing(value):
        raise DataError(f"task {task}: {column} is missing for id {row.get('id')!r}")
    return int(round(float(value)))


def children(n: int) -> str:
    return "no children" if n == 0 else "1 child" if n == 1 else f"{n} children"


def background_paragraph(row: Mapping[str, Any], task: str, marital: Mapping[str, str]) -> str:
    """Age, sex, region, marital status, education, adults and children."""
    age = whole(row, "AGE", task)
    adults, kids = whole(row, "NUMADT", task), whole(row, "NUMKID", task)
    return (
        "Here is some background information about yourself and your household. "
        f"You are {article(age)} {age}-year-old {phrase(row, 'SEX', SEX_PHRASES, task)} living "
        f"in {phrase(row, 'REGION', REGION_PHRASES, task)}. "
        f"You {phrase(row, 'MARRY', marital, task)}, and your highest completed education is "
        f"{phrase(row, 'EDUC', EDUCATION_PHRASES, task)}. Your household has {adults} "
        f"{'adult' if adults == 1 else 'adults'} and {children(kids)}."
    )


def views_opening(row: Mapping[str, Any], task: str) -> str:
    """Lead-in, the month note with the dollar clause, and the household income."""
    month = int(str(row["time"])[5:7])
    income: Any = row.get("INCOME")
    if missing(income):
        raise DataError(f"task {task}: INCOME is missing for id {row.get('id')!r}")
    return (
        "Here are your current views on your finances and the economy. "
        f"{month_note(month, True)} Your current household income is "
        f"{format_dollars(float(income))} per year."
    )
