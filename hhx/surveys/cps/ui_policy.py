"""State UI potential duration by month (Farber-Rothstein-Valletta 2015) -> `cps_ui_policy.parquet`.

Facts: shared/spec/00_common.md 1.3 (UI policy row), 20_tasks_labor_macro.md section 5 and the
reference `scripts/1_preprocessing/cps_ui_policy.py`. `survey.raw.ui_policy` is
`eui_state_08-14.dta` of the replication archive `P2015_1088_data`: a Stata file whose variable
labels must read exactly fips 'FIPS state code', year 'year of obs.', month 'month of obs.',
ext_wks 'total weeks of extended UI (13-73)', reg_UI 'regular UI weeks (<26 for some)',
ui_weeks 'Total UI weeks (no suspensions)' (the reference refuses any other file).

Output, one row per state x month, in the reference's column order and sorted by year, month,
fips: `fips`, `year`, `month` (int64), `policy_effective_date` = "YYYY-MM-05" (the status as
of day 5), `regular_ui_weeks` = reg_UI, `extension_ui_weeks` = ui_weeks - reg_UI (keeps the
source total in months when extended benefits were suspended), `maximum_ui_weeks` = ui_weeks,
`source_active_extension_weeks` = ext_wks (audit only).
Checks, as the reference: the six columns are numeric without missing values; fips, year and
month whole numbers; (fips, year, month) unique; month 1-12; regular, extension and maximum
weeks >= 0 and regular + extension = maximum; exactly 8,976 rows and 51 distinct fips. hhx adds
that the fips are the 51 state codes (incl. DC), every state has every month and the months
cover the labor_cps_ui window (Jan 2008 - Aug 2014, which the reference checks in that task).
A file that is empty, cut short or not Stata is a one-line error naming it.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.base import BuildReport, raw_path, require_file, write_outputs

SOURCE = (
    "the Farber-Rothstein-Valletta (2015) replication archive P2015_1088_data "
    "(https://www.aeaweb.org/articles?id=10.1257/aer.p20151088)"
)
OUTPUT_NAME = "cps_ui_policy"
# The variable labels the reference checks (exact text).
VARIABLE_LABELS = {
    "fips": "FIPS state code",
    "year": "year of obs.",
    "month": "month of obs.",
    "ext_wks": "total weeks of extended UI (13-73)",
    "reg_UI": "regular UI weeks (<26 for some)",
    "ui_weeks": "Total UI weeks (no suspensions)",
}
REQUIRED_COLUMNS = ["fips", "year", "month", "reg_UI", "ext_wks", "ui_weeks"]
STATE_FIPS = frozenset(
    {1, 2, 4, 5, 6, 8, 9, 10, 11, 12, 13, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28}
    | {29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 44, 45, 46, 47, 48, 49, 50, 51}
    | {53, 54, 55, 56}
)
EXPECTED_ROWS = 8_976
EXPECTED_MONTHS = EXPECTED_ROWS // len(STATE_FIPS)  # 176
TASK_WINDOW = (pd.Period("2008-01", "M"), pd.Period("2014-08", "M"))
OUTPUT_COLUMNS = [
    "fips", "year", "month", "policy_effective_date", "regular_ui_weeks", "extension_ui_weeks",
    "maximum_ui_weeks", "source_active_extension_weeks",
]  # fmt: skip


def _check_labels(labels: dict[str, str], path: Path) -> None:
    for column in REQUIRED_COLUMNS:
        if column not in labels:
            raise DataError(
                f"{path}: column {column!r} not found; expected eui_state_08-14.dta from {SOURCE}"
            )
    for column, expected in VARIABLE_LABELS.items():
        if labels[column] != expected:
            raise DataError(
                f"{path}: variable label of {column} is {labels[column]!r}, expected "
                f"{expected!r}; this is not eui_state_08-14.dta from {SOURCE}"
            )


def _integers(values: pd.Series, column: str, path: Path) -> pd.Series:
    number = pd.to_numeric(values, errors="coerce").astype("float64")
    odd = number.notna() & (number != np.round(number))
    if odd.any():
        raise DataError(f"{path}: column {column} has non-integer value {number[odd].iloc[0]}")
    return number.astype("int64")


def _read_stata(p: Path) -> tuple[dict[str, str], pd.DataFrame]:
    """Labels and data of a Stata file; an empty, truncated or foreign file is one DataError."""
    if p.stat().st_size == 0:
        raise DataError(f"{p}: the file is empty (0 bytes); expected eui_state_08-14.dta from {SOURCE}")
    try:
        with pd.read_stata(p, iterator=True, convert_categoricals=False) as reader:
            labels = reader.variable_labels()
            _check_labels(labels, p)
            raw = reader.read()
    except DataError:
        raise
    except (ValueError, OSError, EOFError, struct.error, UnicodeDecodeError) as exc:
        raise DataError(f"{p}: not a readable Stata file, or cut short ({exc})") from None
    return labels, raw


def read_ui_policy(path: str | Path) -> pd.DataFrame:
    """`eui_state_08-14.dta` -> the checked `cps_ui_policy` frame."""
    p = require_file(Path(path), "UI policy file eui_state_08-14.dta", SOURCE)
    _, raw = _read_stata(p)
    if raw.empty:
        raise DataError(f"{p}: the file holds no rows; expected 8,976 state-month rows")
    raw = raw[REQUIRED_COLUMNS].apply(pd.to_numeric, errors="coerce")
    holes = raw.isna().any()
    if holes.any():
        column = holes[holes].index[0]
        row = int(raw[column].isna().to_numpy().argmax())
        raise DataError(
            f"{p}: column {column} is missing or not numeric in row {row + 1}; no gaps are allowed"
        )
    out = pd.DataFrame(
        {
            "fips": _integers(raw["fips"], "fips", p),
            "year": _integers(raw["year"], "year", p),
            "month": _integers(raw["month"], "month", p),
        }
    )
    bad_state = ~out["fips"].isin(STATE_FIPS)
    if bad_state.any():
        raise DataError(
            f"{p}: column fips has code {out['fips'][bad_state].iloc[0]}, not one of the 51 "
            "state FIPS codes (incl. DC 11)"
        )
    bad_month = ~out["month"].between(1, 12)
    if bad_month.any():
        raise DataError(f"{p}: column month has value {out['month'][bad_month].iloc[0]}")
    regular = raw["reg_UI"].astype("float64").to_numpy()
    maximum = raw["ui_weeks"].astype("float64").to_numpy()
    out["regular_ui_weeks"] = regular
    out["extension_ui_weeks"] = maximum - regular
    out["maximum_ui_weeks"] = maximum
    out["source_active_extension_weeks"] = raw["ext_wks"].astype("float64").to_numpy()
    for column in ("regular_ui_weeks", "extension_ui_weeks", "maximum_ui_weeks"):
        negative = out[column] < 0
        if negative.any():
            r = out[negative].iloc[0]
            raise DataError(
                f"{p}: {column} is {r[column]} < 0 for fips {int(r['fips'])} in "
                f"{int(r['year'])}-{int(r['month']):02d}"
            )
    gap = out["regular_ui_weeks"] + out["extension_ui_weeks"] - out["maximum_ui_weeks"]
    if (gap.abs() >= 1e-6).any():
        raise DataError(f"{p}: regular + extension weeks differ from ui_weeks")
    keys = ["fips", "year", "month"]
    dup = out.duplicated(keys)
    if dup.any():
        r = out[dup].iloc[0]
        raise DataError(
            f"{p}: fips {int(r['fips'])} {int(r['year'])}-{int(r['month']):02d} repeats"
        )
    _check_grid(out, p)
    out["policy_effective_date"] = (
        out["year"].astype(str) + "-" + out["month"].map("{:02d}".format) + "-05"
    )
    order = ["year", "month", "fips"]  # the reference's row order
    return out.sort_values(order, kind="mergesort", ignore_index=True)[OUTPUT_COLUMNS]


def _check_grid(out: pd.DataFrame, path: Path) -> None:
    states = set(out["fips"])
    if states != STATE_FIPS:
        lacking = sorted(STATE_FIPS - states)
        raise DataError(f"{path}: {len(states)} states, expected 51 (missing fips {lacking[:5]})")
    period = pd.PeriodIndex.from_fields(year=out["year"], month=out["month"], freq="M")
    months = pd.Series(period).drop_duplicates().sort_values()
    per_state = out.groupby("fips").size()
    short = per_state[per_state != len(months)]
    if not short.empty:
        raise DataError(
            f"{path}: fips {short.index[0]} has {short.iloc[0]} months, others {len(months)}"
        )
    if len(out) != EXPECTED_ROWS:
        raise DataError(
            f"{path}: {len(out)} state-month rows, expected exactly {EXPECTED_ROWS} "
            f"(51 states x {EXPECTED_MONTHS} months)"
        )
    first, last = months.iloc[0], months.iloc[-1]
    if first > TASK_WINDOW[0] or last < TASK_WINDOW[1]:
        raise DataError(
            f"{path}: months {first}..{last} do not cover the labor_cps_ui window "
            f"{TASK_WINDOW[0]}..{TASK_WINDOW[1]}"
        )


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read `survey.raw.ui_policy` and write `cps_ui_policy.parquet` atomically."""
    started = time.perf_counter()
    path = raw_path(survey, "ui_policy", raw_dir, hint="eui_state_08-14.dta")
    return write_outputs(survey, out_dir, {OUTPUT_NAME: read_ui_policy(path)}, [path], started)