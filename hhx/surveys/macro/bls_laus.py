"""BLS Local Area Unemployment Statistics (all states, not seasonally adjusted) -> annual state
unemployment rates.

Facts: shared/spec/00_common.md 1.3 (BLS LAUS row) and 1.12 (`bls_laus_series.csv`).
`la.data.2.AllStatesU.txt` (https://download.bls.gov/pub/time.series/la/, see
https://www.bls.gov/lau/) is tab-separated `series_id year period value footnote_codes` with a
header line and space padding. Series id = LA + U (not seasonally adjusted) + area code (ST + 2-digit
state FIPS + 11 zeros) + measure (03 = unemployment rate). Read: the 51 series LAUST{SS}0000000000003
and period M13 (annual average); M01-M12 are months and are not read. The output must be the
complete 51 x year grid from 1976 through the last annual-average year (at least 2025).
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.base import BuildReport, raw_path, require_file, write_outputs
from hhx.surveys.macro.state_panel import STATES

SOURCE_URL = "https://www.bls.gov/lau/ (file: https://download.bls.gov/pub/time.series/la/)"
OUTPUT_NAME = "bls_laus_state_annual"
OUTPUT_COLUMNS = ["statefip", "state_name", "year", "unemployment_rate"]
FIRST_YEAR = 1976
LAST_REQUIRED_YEAR = 2025
# Statewide areas BLS publishes in AllStatesU besides the 51 (Puerto Rico); read past, not an error.
_OTHER_STATEWIDE = {72}
_MISSING_MARKS = {"", "-"}


def series_id(statefip: int) -> str:
    """The LAUS id of a state's not seasonally adjusted unemployment rate."""
    return f"LAUST{statefip:02d}0000000000003"


def read_laus_annual(path: str | Path) -> pd.DataFrame:
    """statefip, year, unemployment_rate from the M13 rows of the 51 state series."""
    p = Path(path)
    try:
        raw = pd.read_csv(p, sep="\t", dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{p}: unreadable BLS LAUS file ({str(exc).splitlines()[0]})") from None
    raw.columns = [str(c).strip().lower() for c in raw.columns]
    raw = raw.fillna("")
    for column in ("series_id", "year", "period", "value"):
        if column not in raw.columns:
            raise DataError(
                f"{p}: column {column!r} not found; expected the BLS flat-file header "
                f"series_id, year, period, value, footnote_codes ({SOURCE_URL})"
            )
    raw = raw[["series_id", "year", "period", "value"]].apply(lambda s: s.str.strip())
    rate = raw[raw["series_id"].str.fullmatch(r"LAUST\d{2}0{11}03")]
    fips = rate["series_id"].str[5:7].astype("int64")
    known = {f for f, _, _ in STATES}
    unknown = ~fips.isin(known | _OTHER_STATEWIDE)
    if unknown.any():
        raise DataError(
            f"{p}: column series_id has {rate.loc[unknown, 'series_id'].iloc[0]!r}, whose state "
            "code is not a state FIPS code; is this la.data.2.AllStatesU?"
        )
    rate, fips = rate[fips.isin(known)], fips[fips.isin(known)]
    bad = ~rate["period"].str.fullmatch(r"M(0[1-9]|1[0-3])")
    if bad.any():
        raise DataError(
            f"{p}: column period has code {rate.loc[bad, 'period'].iloc[0]!r} for "
            f"{rate.loc[bad, 'series_id'].iloc[0]} (LAUS periods are M01-M13)"
        )
    annual = rate["period"].eq("M13")
    rate, fips = rate[annual], fips[annual]
    year = pd.to_numeric(rate["year"], errors="coerce")
    if year.isna().any():
        raise DataError(f"{p}: column year has {rate.loc[year.isna(), 'year'].iloc[0]!r}")
    blank = rate["value"].isin(_MISSING_MARKS)
    value = pd.to_numeric(rate["value"].mask(blank), errors="coerce")
    junk = value.isna() & ~blank
    if junk.any():
        raise DataError(f"{p}: column value has non-numeric {rate.loc[junk, 'value'].iloc[0]!r}")
    out = pd.DataFrame({
        "statefip": fips.to_numpy(),
        "year": year.astype("int64").to_numpy(),
        "unemployment_rate": value.astype("float64").to_numpy(),
    })  # fmt: skip
    dup = out.duplicated(["statefip", "year"])
    if dup.any():
        first = out[dup].iloc[0]
        raise DataError(f"{p}: {series_id(int(first.statefip))} M13 {first.year} appears twice")
    return out[out["year"] >= FIRST_YEAR]


def complete_grid(annual: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Check the 51 x FIRST_YEAR..last grid has every value; add state names."""
    last = max(int(annual["year"].max()) if len(annual) else 0, LAST_REQUIRED_YEAR)
    grid = pd.MultiIndex.from_product(
        [[f for f, _, _ in STATES], range(FIRST_YEAR, last + 1)], names=["statefip", "year"]
    ).to_frame(index=False)
    full = grid.merge(annual, on=["statefip", "year"], how="left")
    hole = full["unemployment_rate"].isna()
    if hole.any():
        first = full[hole].iloc[0]
        raise DataError(
            f"{path}: no M13 annual unemployment rate for {series_id(int(first.statefip))} in "
            f"{first.year} ({int(hole.sum())} state-years missing); the {FIRST_YEAR}-{last} grid "
            f"of 51 states must be complete (download the current file from {SOURCE_URL})"
        )
    names = pd.DataFrame([(f, n) for f, _, n in STATES], columns=["statefip", "state_name"])
    full = full.merge(names, on="statefip", how="left")
    return full.sort_values(["statefip", "year"], kind="mergesort")[OUTPUT_COLUMNS].reset_index(
        drop=True
    )


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read `survey.raw.bls_laus` and write `bls_laus_state_annual.parquet` atomically."""
    started = time.perf_counter()
    path = require_file(raw_path(survey, "bls_laus", raw_dir), "la.data.2.AllStatesU.txt",
                        SOURCE_URL)  # fmt: skip
    frame = complete_grid(read_laus_annual(path), path)
    return write_outputs(survey, out_dir, {OUTPUT_NAME: frame}, [path], started)