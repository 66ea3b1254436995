"""Public release dates of CPS Basic Monthly files (spec 00_common.md section 2).

A task row carries the release date of its outcome month: the row could not be known before
that file was public. Two sources:

* a crosswalk CSV in the reference layout (`data/raw/release_dates/release_cps.csv`). Accepted
  columns: `year`, `month`, `release_date` (ISO date) are required; `partition` is optional (only
  rows with partition `basic` are used when it is present); any other column (`source`,
  `source_url`, `comments`) is ignored. One row per (year, month).
* without a crosswalk, the reference's proxy rule
  `cps_basic_collection_completion_plus_30_lower_bound`
  for every month: collection ends on the Saturday of the interview week, i.e. the Sunday-to-
  Saturday week that contains the 19th of the month (the week after the reference week, which
  contains the 12th); the release date is that Saturday plus 30 days. Example: January 2026 ->
  interview week Sun 18 - Sat 24 January -> release 2026-02-23. The reference uses official
  Census dates from January 2020 on; only a crosswalk supplies those.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd

from hhx.errors import DataError

PROXY_RULE_ID = "cps_basic_collection_completion_plus_30_lower_bound"
CROSSWALK_RULE = "crosswalk"


def proxy_release_date(year: int, month: int) -> str:
    """The documented proxy: Saturday ending the week that contains the 19th, plus 30 days."""
    day19 = dt.date(year, month, 19)
    # weekday(): Monday=0 .. Sunday=6; days until Saturday (5) within a Sunday-start week
    saturday = day19 + dt.timedelta(days=(5 - day19.weekday()) % 7)
    return (saturday + dt.timedelta(days=30)).isoformat()


def read_crosswalk(path: Path) -> dict[tuple[int, int], str]:
    """(year, month) -> ISO release date from a crosswalk CSV (layout in the module doc)."""
    if not path.is_file():
        raise DataError(f"{path}: CPS release-date crosswalk not found")
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in ("year", "month", "release_date") if c not in table.columns]
    if missing:
        raise DataError(
            f"{path}: crosswalk lacks column(s) {missing}; need year, month, release_date"
        )
    if "partition" in table.columns:
        table = table[table["partition"].str.strip() == "basic"]
    out: dict[tuple[int, int], str] = {}
    for i, row in enumerate(table.itertuples(index=False), start=2):
        try:
            key = (int(row.year), int(row.month))
            date = dt.date.fromisoformat(str(row.release_date).strip()[:10]).isoformat()
        except ValueError:
            raise DataError(
                f"{path}:{i}: bad year/month/release_date {row.year!r}/{row.month!r}/"
                f"{row.release_date!r}"
            ) from None
        if key in out:
            raise DataError(f"{path}: duplicate crosswalk row for {key[0]}-{key[1]:02d}")
        out[key] = date
    return out


def cps_release_dates(
    year: pd.Series, month: pd.Series, crosswalk: Path | None = None
) -> pd.Series:
    """ISO release date of each (year, month): from `crosswalk` when given, else the proxy."""
    y = pd.to_numeric(year, errors="coerce")
    m = pd.to_numeric(month, errors="coerce")
    bad = y.isna() | m.isna() | ~m.between(1, 12)
    if bad.any():
        raise DataError(
            f"release dates need YEAR and MONTH 1-12; got {y[bad].iloc[0]!r}/{m[bad].iloc[0]!r}"
        )
    keys = pd.DataFrame({"y": y.astype("int64"), "m": m.astype("int64")}, index=year.index)
    unique = keys.drop_duplicates()
    table = read_crosswalk(crosswalk) if crosswalk is not None else None
    dates: dict[tuple[int, int], str] = {}
    for yy, mm in zip(unique["y"].tolist(), unique["m"].tolist(), strict=True):
        if table is None:
            dates[(yy, mm)] = proxy_release_date(yy, mm)
        elif (yy, mm) in table:
            dates[(yy, mm)] = table[(yy, mm)]
        else:
            raise DataError(f"{crosswalk}: no release date for CPS month {yy}-{mm:02d}; add a row")
    lookup = pd.Series(dates)  # MultiIndex (year, month)
    idx = pd.MultiIndex.from_frame(keys)
    return pd.Series(lookup.reindex(idx).to_numpy(), index=year.index, dtype="str")
