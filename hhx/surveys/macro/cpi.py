"""CPI-U all items and its 8 major groups (monthly, seasonally adjusted, U.S. city average)
-> `cpi_major_groups.parquet`.

Facts: shared/spec/00_common.md 1.3 (CPI-U row) and 1.12 (`cpi_series.csv`). For each of the 9
series `survey.raw.cpi` (a folder) holds either
- the BLS flat file `cu.data.<n>.<Name>` (`.txt` optional; download.bls.gov/pub/time.series/cu/):
  tab-separated `series_id year period value footnote_codes`, fields padded with spaces, many
  series per file; only the series below and periods M01-M12 are read (M13 annual averages and
  S01-S03 half-year values are not months); or
- a FRED CSV `<FRED id>.csv` (`"DATE","<ID>"`, `DATE,<ID>` or `observation_date,<ID>`; `.` marks
  a missing month), the same BLS series republished by FRED.
A BLS file wins over a FRED CSV of the same series. Output: one row per month on a complete grid
from the earliest to the latest month of any series (`date` = first of the month, `year`, `month`,
`quarter`, `year_quarter` = "YYYYQn"), one column per series; months a series lacks are NA (e.g.
recreation and education and communication start in 1993).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.io import write_parquet_atomic
from hhx.surveys.base import BuildReport, finish_report, input_sha256

SOURCE_URL = "https://download.bls.gov/pub/time.series/cu/"
FRED_URL = "https://fred.stlouisfed.org/series/"
OUTPUT_NAME = "cpi_major_groups"
_MISSING_MARKS = {"", ".", "-"}


@dataclass(frozen=True)
class CpiSeries:
    column: str
    # BLS id: CU (CPI-U) + S (seasonally adjusted) + R (monthly) + 0000 (U.S. city average) + item
    series_id: str
    bls_file: str
    fred_id: str


CPI_SERIES: list[CpiSeries] = [
    CpiSeries("cpi_all_items", "CUSR0000SA0", "cu.data.1.AllItems", "CPIAUCSL"),
    CpiSeries("cpi_food_beverages", "CUSR0000SAF", "cu.data.11.USFoodBeverage", "CPIFABSL"),
    CpiSeries("cpi_housing", "CUSR0000SAH", "cu.data.12.USHousing", "CPIHOSSL"),
    CpiSeries("cpi_apparel", "CUSR0000SAA", "cu.data.13.USApparel", "CPIAPPSL"),
    CpiSeries("cpi_transportation", "CUSR0000SAT", "cu.data.14.USTransportation", "CPITRNSL"),
    CpiSeries("cpi_medical_care", "CUSR0000SAM", "cu.data.15.USMedical", "CPIMEDSL"),
    CpiSeries("cpi_recreation", "CUSR0000SAR", "cu.data.16.USRecreation", "CPIRECSL"),
    CpiSeries(
        "cpi_education_communication",
        "CUSR0000SAE",
        "cu.data.17.USEducationAndCommunication",
        "CPIEDUSL",
    ),
    CpiSeries(
        "cpi_other_goods_services", "CUSR0000SAG", "cu.data.18.USOtherGoodsAndServices", "CPIOGSSL"
    ),
]
DATE_COLUMNS = ["date", "year", "month", "quarter", "year_quarter"]
OUTPUT_COLUMNS = DATE_COLUMNS + [s.column for s in CPI_SERIES]


def _values(text: pd.Series, path: Path, what: str) -> pd.Series:
    """Numbers with BLS/FRED missing marks as NaN; anything else non-numeric is an error."""
    text = text.astype("string").str.strip()
    blank = text.isin(list(_MISSING_MARKS)).fillna(True).astype(bool)
    values = pd.to_numeric(text.mask(blank), errors="coerce")
    junk = values.isna() & ~blank
    if junk.any():
        raise DataError(f"{path}: non-numeric value {text[junk].iloc[0]!r} in {what}")
    return values.astype("float64")


def _monthly(dates: pd.Series, values: pd.Series, path: Path, what: str) -> pd.Series:
    if dates.duplicated().any():
        raise DataError(
            f"{path}: month {dates[dates.duplicated()].iloc[0]:%Y-%m} of {what} repeats"
        )
    return pd.Series(values.to_numpy(), index=pd.DatetimeIndex(dates), name=what).sort_index()


def read_bls_flat_file(path: str | Path, series_id: str) -> pd.Series:
    """One monthly series (index = first of month) from a BLS `cu.data.*` flat file."""
    p = Path(path)
    try:
        raw = pd.read_csv(p, sep="\t", dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{p}: unreadable BLS flat file ({str(exc).splitlines()[0]})") from None
    raw.columns = [c.strip().lower() for c in raw.columns]
    for column in ("series_id", "year", "period", "value"):
        if column not in raw.columns:
            raise DataError(
                f"{p}: column {column!r} not found; expected the BLS flat-file header "
                "series_id, year, period, value, footnote_codes"
            )
    rows = raw[raw["series_id"].str.strip() == series_id]
    if rows.empty:
        raise DataError(
            f"{p}: series {series_id} not found; download {p.name} again from {SOURCE_URL}"
        )
    period = rows["period"].str.strip()
    rows = rows[period.str.fullmatch(r"M(0[1-9]|1[0-2])")]
    year = pd.to_numeric(rows["year"].str.strip(), errors="coerce")
    if year.isna().any():
        raise DataError(
            f"{p}: year {rows['year'][year.isna()].iloc[0]!r} of {series_id} is not a year"
        )
    month = rows["period"].str.strip().str[1:].astype("int64")
    dates = pd.to_datetime(
        pd.DataFrame({"year": year.astype("int64"), "month": month, "day": 1})
    ).astype("datetime64[ns]")
    values = _values(rows["value"], p, series_id)
    return _monthly(dates.reset_index(drop=True), values.reset_index(drop=True), p, series_id)


def read_fred_csv(path: str | Path, fred_id: str) -> pd.Series:
    """One monthly series (index = first of month) from a FRED CSV download."""
    p = Path(path)
    try:
        raw = pd.read_csv(p, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{p}: unreadable FRED CSV ({str(exc).splitlines()[0]})") from None
    names = [c.strip() for c in raw.columns]
    if (
        len(names) != 2
        or names[0].lower() not in {"date", "observation_date"}
        or names[1] != fred_id
    ):
        raise DataError(
            f"{p}: expected the FRED columns (DATE or observation_date, {fred_id}), got {names}"
        )
    text = raw.iloc[:, 0].str.strip()
    dates = pd.to_datetime(text, format="%Y-%m-%d", errors="coerce")
    bad = dates.isna() | (dates.dt.day != 1)
    if bad.any():
        raise DataError(f"{p}: date {text[bad].iloc[0]!r} is not the first of a month (YYYY-MM-01)")
    values = _values(raw.iloc[:, 1], p, fred_id)
    return _monthly(dates.astype("datetime64[ns]"), values, p, fred_id)


def locate_series(directory: Path, series: CpiSeries) -> Path:
    """The BLS flat file of a series in `directory`, else its FRED CSV."""
    for name in (series.bls_file, f"{series.bls_file}.txt", f"{series.fred_id}.csv"):
        if (directory / name).is_file():
            return directory / name
    raise DataError(
        f"{directory}: no file for {series.column}; save {series.bls_file}.txt from {SOURCE_URL} "
        f"(series {series.series_id}) or {series.fred_id}.csv from {FRED_URL}{series.fred_id}"
    )


def monthly_grid(columns: dict[str, pd.Series]) -> pd.DataFrame:
    """Series by output column -> complete monthly frame with the date columns of the output."""
    wide = pd.concat(columns, axis=1)
    grid = pd.date_range(wide.index.min(), wide.index.max(), freq="MS").astype("datetime64[ns]")
    wide = wide.reindex(grid)
    out = pd.DataFrame({"date": grid})
    out["year"] = out["date"].dt.year.astype("int64")
    out["month"] = out["date"].dt.month.astype("int64")
    out["quarter"] = out["date"].dt.quarter.astype("int64")
    out["year_quarter"] = out["year"].astype(str) + "Q" + out["quarter"].astype(str)
    for column in columns:
        out[column] = wide[column].to_numpy(dtype=np.float64)
    return out


def read_cpi_groups(directory: str | Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """All 9 series from a folder -> (the `cpi_major_groups` frame, input fingerprints)."""
    d = Path(directory)
    if not d.is_dir():
        raise DataError(
            f"{d}: CPI folder not found; save the BLS files cu.data.1.AllItems.txt ... "
            f"cu.data.18.USOtherGoodsAndServices.txt from {SOURCE_URL} there"
        )
    columns: dict[str, pd.Series] = {}
    inputs: dict[str, str] = {}
    for series in CPI_SERIES:
        path = locate_series(d, series)
        if path.name.endswith(".csv"):
            columns[series.column] = read_fred_csv(path, series.fred_id)
        else:
            columns[series.column] = read_bls_flat_file(path, series.series_id)
        inputs[str(path)] = input_sha256(path)
    return monthly_grid(columns)[OUTPUT_COLUMNS], inputs


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read the folder `survey.raw.cpi` and write `cpi_major_groups.parquet` atomically."""
    started = time.perf_counter()
    if "cpi" not in survey.raw:
        raise ConfigError(
            f"survey {survey.name}: raw.cpi is not set; point it at the folder of CPI files"
        )
    folder = Path(survey.raw["cpi"]).expanduser()  # type: ignore[arg-type]  # checked above
    folder = folder if folder.is_absolute() else Path(raw_dir) / folder
    frame, inputs = read_cpi_groups(folder)
    target = write_parquet_atomic(Path(out_dir) / f"{OUTPUT_NAME}.parquet", frame)
    return finish_report(survey, {OUTPUT_NAME: target}, {OUTPUT_NAME: len(frame)}, inputs, started)
