"""NY Fed SCE reader: the structural columns of one sheet and the release dates (spec 1.8, 2).

- structural columns: source, release_id, release_date, aggregate_release_date_proxy,
  microdata_release_lag_months, release_date_status, release_date_source, module, raw_file,
  respondent_id (userid as text), survey_year, survey_month, survey_date (first day of the month,
  or the workbook's own `survey_date`), panel_month (`tenure`; only where the sheet has it),
  weight_<module> (where the sheet has a weight column; spending, labor market and policy take
  the core row's weight, appended with `missing_core_weight`), source_wave_year (housing, job
  search). Housing sheets without `date` get date = year * 100 + 2 after userid (a `date` column
  must hold that value in every row); job search gets date = year * 100 + 10 after `year`.
- then every workbook column as read (hhx.surveys.sce.workbook); core workbooks are
  concatenated with the union of their columns.

Release dates (spec 2): with `release_crosswalk` (the reference's release_sce.csv, whose
columns source, source_url, comments, aggregate_release_date_proxy and
microdata_release_lag_months are required as upstream) every field comes from it
(release_date_source = its `source` text). Without it (hhx's default; the reference always
needs the file) release_date = first day of the survey month + the module's lag (core 9,
household_spending 18, labor_market 18, public_policy 9, housing 18, job_search 9),
aggregate_release_date_proxy = the first day of the following month, source
`sce_<module>_<lag>m_inferred`; status `inferred_from_collection_month_and_official_lag`.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.surveys.macro.release_dates import read_release_crosswalk, sce_inferred_release_date
from hhx.surveys.sce.items import (
    BY_KEY,
    MODULE_URLS,
    RELEASE_DATE_STATUS,
    RELEASE_LAG_MONTHS,
    REQUIRED_COLUMNS,
)
from hhx.surveys.sce.workbook import Piece, _as_text

# ---------------------------------------------------------------------------------------------
# Structural columns and release dates


CROSSWALK_COLUMNS = ["source", "source_url", "comments", "aggregate_release_date_proxy",
                     "microdata_release_lag_months"]  # besides the keys and release_date


@dataclass
class ReleaseCrosswalk:
    """A validated `release_sce.csv` (hhx.surveys.macro.release_dates) as a lookup."""

    path: Path
    # (module, year, month) -> (release date, source text, aggregate proxy date, lag months)
    dates: dict[tuple[str, int, int], tuple[str, str, str, int]]

    @classmethod
    def read(cls, path: Path) -> ReleaseCrosswalk:
        """The reference's columns are required: keys, release_date, source, source_url,
        comments (non-empty), aggregate_release_date_proxy and microdata_release_lag_months
        (the module's lag)."""
        keys = read_release_crosswalk("sce", path)
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
        raw.columns = [c.strip().lower() for c in raw.columns]
        absent = [c for c in CROSSWALK_COLUMNS if c not in raw.columns]
        if absent:
            raise DataError(f"{path}: column(s) {absent} missing; release_sce.csv needs module, "
                            "survey_year, survey_month, release_date, " + ", ".join(
                                CROSSWALK_COLUMNS))
        dates: dict = {}
        for i, (row, key) in enumerate(zip(raw.to_dict("records"), keys.to_dict("records"),
                                           strict=True), start=2):
            empty = [c for c in ("source", "source_url", "comments") if not row[c].strip()]
            proxy: dt.date | None
            lag: int | None
            try:
                proxy = dt.date.fromisoformat(row["aggregate_release_date_proxy"].strip()[:10])
                lag = int(row["microdata_release_lag_months"])
            except ValueError:
                proxy = lag = None
            module = key["module"].strip()
            if empty or proxy is None or lag != RELEASE_LAG_MONTHS.get(module):
                problem = (f"empty {empty[0]}" if empty else "aggregate_release_date_proxy or "
                           f"microdata_release_lag_months invalid (lag for {module} is "
                           f"{RELEASE_LAG_MONTHS.get(module)})")
                raise DataError(f"{path}:{i}: {problem}")
            dates[(module, int(key["survey_year"]), int(key["survey_month"]))] = (
                key["release_date"], row["source"].strip(), proxy.isoformat(), lag)
        return cls(path, dates)


def release_columns(
    module: str, year: np.ndarray, month: np.ndarray, crosswalk: ReleaseCrosswalk | None = None
) -> dict[str, np.ndarray]:
    """release_date, aggregate_release_date_proxy, microdata_release_lag_months,
    release_date_status, release_date_source for survey months (year, month): the lag rule
    (first day of the survey month + the module's lag), or the crosswalk's dates."""
    lag = RELEASE_LAG_MONTHS[module]
    index = np.asarray(year, dtype="int64") * 12 + np.asarray(month, dtype="int64") - 1
    months, inverse = np.unique(index, return_inverse=True)
    release, proxy, source, lags = [], [], [], []
    for y, m in zip((months // 12).tolist(), (months % 12 + 1).tolist(), strict=True):
        if crosswalk is None:
            release.append(sce_inferred_release_date(module, y, m))
            proxy.append(dt.date(y + m // 12, m % 12 + 1, 1).isoformat())
            source.append(f"sce_{module}_{lag}m_inferred")
            lags.append(lag)
        elif (module, y, m) in crosswalk.dates:
            date, src, agg, months_lag = crosswalk.dates[(module, y, m)]
            release.append(date)
            source.append(src)
            proxy.append(agg)
            lags.append(months_lag)
        else:
            raise DataError(f"{crosswalk.path}: no release date for SCE {module} {y}-{m:02d}; "
                            "add the row")
    n = len(index)
    return {
        "release_date": np.array(release, dtype="object")[inverse],
        "aggregate_release_date_proxy": np.array(proxy, dtype="object")[inverse],
        "microdata_release_lag_months": np.array(lags, dtype="int64")[inverse],
        "release_date_status": np.full(n, RELEASE_DATE_STATUS, dtype="object"),
        "release_date_source": np.array(source, dtype="object")[inverse],
    }


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _where(piece: Piece) -> str:
    return f"{piece.path} sheet {piece.sheet}"


def _numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(frame[column], errors="coerce")


def structural(piece: Piece, crosswalk: ReleaseCrosswalk | None) -> pd.DataFrame:
    """Structural columns + every raw column of one sheet (spec 1.8)."""
    spec = BY_KEY[piece.key]
    df, where = piece.frame, _where(piece)
    url = MODULE_URLS[spec.module]
    for column in [spec.id_column, spec.date_column if piece.module != "housing" else None,
                   *REQUIRED_COLUMNS.get(piece.module, [])]:
        if column is not None and column not in df.columns:
            raise DataError(f"{where}: column {column} not found in header row {spec.header + 1}; "
                            f"download the workbook again from {url}")
    n = len(df)
    df, year, month = _dated(piece, df, where)
    ids = pd.Series([_as_text(v) for v in df[spec.id_column].tolist()], dtype="string")
    if ids.isna().any():
        raise DataError(f"{where}: column {spec.id_column} is blank in data row "
                        f"{int(np.flatnonzero(ids.isna())[0]) + 1}")
    df = df.copy()
    for column in (spec.id_column, spec.date_column, "tenure"):  # whole numbers as Int64
        values = df[column] if column in df.columns else None
        if values is not None and values.dtype == "float64" and (
                values.dropna() == values.dropna().round()).all():
            df[column] = values.astype("Int64")
    if "survey_date" in df.columns:
        survey_date = pd.to_datetime(df["survey_date"], errors="coerce")
        if survey_date.isna().any():
            raise DataError(f"{where}: column survey_date is blank or not a date in some row")
        df = df.drop(columns=["survey_date"])
    else:
        survey_date = pd.to_datetime(pd.DataFrame({"year": year, "month": month, "day": 1}))
    release = release_columns(piece.module, year, month, crosswalk)
    raw_file = f"{piece.path.parent.name}/{piece.path.name}"
    slug = _slug(piece.path.stem)
    out = pd.DataFrame({
        "source": "sce",
        "release_id": [f"sce_{piece.module}_{slug}_{y:04d}_{m:02d}_{r.replace('-', '_')}"
                       for y, m, r in zip(year, month, release["release_date"], strict=True)],
        **{k: release[k] for k in ("release_date", "aggregate_release_date_proxy",
                                   "microdata_release_lag_months", "release_date_status",
                                   "release_date_source")},
        "module": piece.module,
        "raw_file": raw_file,
        "respondent_id": ids.to_numpy(),
        "survey_year": year,
        "survey_month": month,
        "survey_date": survey_date.astype("datetime64[ns]").to_numpy(),
    })  # fmt: skip
    out["respondent_id"] = out["respondent_id"].astype("string")
    if "tenure" in df.columns:  # as the reference: no panel_month where the sheet has no tenure
        out["panel_month"] = _integer(df, "tenure", where)
    if spec.weight_column in df.columns:
        out[f"weight_{piece.module}"] = _numeric(df, spec.weight_column)
    if piece.wave_year is not None or piece.module == "job_search":
        out["source_wave_year"] = (np.full(n, piece.wave_year) if piece.wave_year is not None
                                   else year)
    out["_sheet"] = piece.sheet  # dropped before writing; locates errors and manifest rows
    dup = out.duplicated(["respondent_id", "survey_year", "survey_month"])
    if dup.any():
        first = out[dup].iloc[0]
        raise DataError(f"{where}: {spec.id_column} {first['respondent_id']} appears twice for "
                        f"{first['survey_year']}-{first['survey_month']:02d}; a sheet must hold "
                        "one row per respondent and month")
    return pd.concat([out.reset_index(drop=True), df.reset_index(drop=True)], axis=1)


def _dated(piece: Piece, df: pd.DataFrame, where: str
           ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Each row's survey year and month from the sheet's date column (the housing and job search
    sheets get the `date` column the reference adds), checked as YYYYMM months."""
    spec = BY_KEY[piece.key]
    n = len(df)
    if piece.module == "housing":
        expected = piece.wave_year * 100 + 2  # type: ignore[operator]  # a housing piece has one
        if "date" in df.columns:  # must be the February fielding month in every row
            seen = _numeric(df, "date")
            bad = seen.isna() | (seen != expected)
            if bad.any():
                shown = "blank" if pd.isna(seen[bad].iloc[0]) else f"{seen[bad].iloc[0]:g}"
                raise DataError(f"{where}: column date holds {shown} in data row "
                                f"{int(np.flatnonzero(bad.to_numpy())[0]) + 1}; the "
                                f"{piece.wave_year} housing wave is fielded in February "
                                f"({expected})")
        else:  # the reference adds it after userid
            df = df.copy()
            df.insert(list(df.columns).index(spec.id_column) + 1, "date",
                      np.full(n, expected, dtype="int64"))
        date = np.full(n, float(expected))
    elif piece.module == "job_search":
        year = _numeric(df, "year")
        if (year.isna() | (year != year.round())).any():
            raise DataError(f"{where}: column year is blank or not a year in some row")
        date = (year * 100 + 10).to_numpy()
        df = df.copy()  # the reference adds date = year * 100 + 10 after year
        df.insert(list(df.columns).index("year") + 1, "date", date.astype("int64"))
    else:
        date = _numeric(df, spec.date_column).to_numpy()
        text_date = pd.isna(date) & pd.notna(df[spec.date_column].to_numpy())
        if text_date.any():
            raise DataError(f"{where}: column {spec.date_column} holds "
                            f"{df[spec.date_column][text_date].iloc[0]!r}, not a YYYYMM month")
    if pd.isna(date).any():
        raise DataError(f"{where}: column {spec.date_column} is blank in data row "
                        f"{int(np.flatnonzero(pd.isna(date))[0]) + 1}")
    year, month = (date // 100).astype("int64"), (date % 100).astype("int64")
    bad = (month < 1) | (month > 12) | (year < 1900) | (date != np.round(date))
    if bad.any():
        raise DataError(f"{where}: column {spec.date_column} holds {date[bad][0]:g}, not a "
                        "YYYYMM month")
    return df, year, month


def _integer(df: pd.DataFrame, column: str, where: str) -> pd.array:
    values = _numeric(df, column)
    bad = (values.notna() & (values != values.round())) | (values.isna() & df[column].notna())
    if bad.any():
        raise DataError(f"{where}: column {column} holds {df[column][bad].iloc[0]!r}, not a "
                        "whole number")
    return values.astype("Int64").array


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Union of columns; a column that is text in one sheet and numbers in another becomes text
    (numbers written as the workbook shows them)."""
    if len(frames) == 1:
        return frames[0]
    kinds: dict[str, set[bool]] = {}
    for frame in frames:
        for column, dtype in frame.dtypes.items():
            kinds.setdefault(column, set()).add(pd.api.types.is_numeric_dtype(dtype))
    out = pd.concat(frames, ignore_index=True, sort=False)
    for column, seen in kinds.items():
        if seen == {True, False}:
            out[column] = np.array(
                [None if v is None or (isinstance(v, float) and np.isnan(v)) else _as_text(v)
                 for v in out[column].tolist()], dtype="object")
    return out


def _file_of(frame: pd.DataFrame, mask: pd.Series | np.ndarray) -> str:
    """`<raw_file> sheet <sheet>` of the first row where mask holds (for error messages)."""
    row = frame.loc[np.asarray(mask)].iloc[0]
    return f"{row['raw_file']} sheet {row['_sheet']}"
