"""FHFA house price index master file -> state and U.S. annual all-transactions HPI.

Facts: shared/spec/00_common.md 1.3 (FHFA HPI row). `hpi_master.csv` (https://www.fhfa.gov/data/hpi)
is one long CSV with columns hpi_type, hpi_flavor, frequency, level, place_name, place_id, yr,
period, index_nsa, index_sa, stacking every index FHFA publishes. Read: hpi_type `traditional`,
hpi_flavor `all-transactions`, frequency `quarterly`, and level `State` (place_id = postal
abbreviation) or level `USA or Census Division` with place_id `USA`. Annual value = mean of the 4
quarters of `index_nsa`, only for years with all 4; growth = 100 x percent change from the previous
calendar year (NA when that year has no annual value). All 51 geographies (50 states + DC) required.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.base import BuildReport, raw_path, require_file, write_outputs
from hhx.surveys.macro.state_panel import STATES

SOURCE_URL = "https://www.fhfa.gov/data/hpi"
STATE_OUTPUT = "fhfa_hpi_state_annual"
US_OUTPUT = "fhfa_hpi_us_annual"
COLUMNS = ["hpi_type", "hpi_flavor", "frequency", "level", "place_name", "place_id", "yr",
           "period", "index_nsa"]  # fmt: skip
STATE_COLUMNS = ["statefip", "state_abbrev", "state_name", "year", "hpi_all_transactions_annual",
                 "hpi_growth_1y"]  # fmt: skip
US_COLUMNS = ["year", "us_hpi_all_transactions_annual", "us_hpi_growth_1y"]


def read_text_csv(path: Path, what: str) -> pd.DataFrame:
    """All cells as strings; UTF-8 (BOM allowed) or, failing that, Latin-1 as agency files vary."""
    try:
        try:
            return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        except UnicodeDecodeError:
            return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="latin-1")
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"{path}: unreadable {what} ({str(exc).splitlines()[0]})") from None


def read_hpi_master(path: str | Path) -> pd.DataFrame:
    """Quarterly traditional all-transactions rows: place_id, level, year, quarter, index_nsa."""
    p = Path(path)
    raw = read_text_csv(p, "FHFA CSV")
    raw.columns = [str(c).strip().lower() for c in raw.columns]
    raw = raw.fillna("")
    for column in COLUMNS:
        if column not in raw.columns:
            raise DataError(
                f"{p}: column {column!r} not found; expected the FHFA hpi_master.csv layout "
                f"from {SOURCE_URL}"
            )
    raw = raw[COLUMNS].apply(lambda s: s.str.strip())
    rows = raw[
        raw["hpi_type"].eq("traditional")
        & raw["hpi_flavor"].eq("all-transactions")
        & raw["frequency"].eq("quarterly")
        & (raw["level"].eq("State") | (raw["level"].eq("USA or Census Division")
                                       & raw["place_id"].eq("USA")))
    ]  # fmt: skip
    known = {abbrev for _, abbrev, _ in STATES}
    states = rows[rows["level"].eq("State")]
    unknown = ~states["place_id"].isin(known)
    if unknown.any():
        raise DataError(
            f"{p}: column place_id has state code {states.loc[unknown, 'place_id'].iloc[0]!r}, "
            "not one of the 50 states + DC; is this the FHFA master file?"
        )
    bad_period = ~rows["period"].isin(["1", "2", "3", "4"])
    if bad_period.any():
        raise DataError(
            f"{p}: column period has code {rows.loc[bad_period, 'period'].iloc[0]!r} in quarterly "
            "rows (quarters are 1-4)"
        )
    year = pd.to_numeric(rows["yr"], errors="coerce")
    if year.isna().any():
        raise DataError(f"{p}: column yr has {rows.loc[year.isna(), 'yr'].iloc[0]!r}, not a year")
    value = pd.to_numeric(rows["index_nsa"].mask(rows["index_nsa"].isin(["", "."])),
                          errors="coerce")  # fmt: skip
    junk = value.isna() & ~rows["index_nsa"].isin(["", "."])
    if junk.any():
        raise DataError(
            f"{p}: column index_nsa has non-numeric {rows.loc[junk, 'index_nsa'].iloc[0]!r}"
        )
    out = pd.DataFrame({
        "place_id": rows["place_id"].to_numpy(),
        "year": year.astype("int64").to_numpy(),
        "quarter": rows["period"].astype("int64").to_numpy(),
        "index_nsa": value.astype("float64").to_numpy(),
    })  # fmt: skip
    dup = out.duplicated(["place_id", "year", "quarter"])
    if dup.any():
        first = out[dup].iloc[0]
        raise DataError(
            f"{p}: {first.place_id} {first.year}Q{first.quarter} appears more than once in the "
            "traditional all-transactions quarterly rows"
        )
    return out


def annual_with_growth(quarterly: pd.DataFrame) -> pd.DataFrame:
    """place_id, year, quarter, index_nsa -> place_id, year, annual, growth (complete years only)."""
    q = quarterly.dropna(subset=["index_nsa"])
    g = q.groupby(["place_id", "year"], sort=True)["index_nsa"]
    annual = pd.DataFrame({"annual": g.mean(), "n": g.size()}).reset_index()
    annual = annual[annual["n"] == 4].drop(columns="n")
    prev = annual.assign(year=annual["year"] + 1).rename(columns={"annual": "prev"})
    annual = annual.merge(prev, on=["place_id", "year"], how="left")
    annual["growth"] = (annual["annual"] / annual["prev"] - 1.0) * 100.0
    return annual.drop(columns="prev")


def hpi_tables(path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(state-year table, U.S. year table) from `hpi_master.csv`."""
    p = Path(path)
    annual = annual_with_growth(read_hpi_master(p))
    table = pd.DataFrame(STATES, columns=["statefip", "state_abbrev", "state_name"])
    missing = sorted(set(table["state_abbrev"]) - set(annual["place_id"]))
    if missing:
        raise DataError(
            f"{p}: no complete year of quarterly all-transactions HPI for {', '.join(missing)}; "
            f"all 51 geographies are required (download the full master file from {SOURCE_URL})"
        )
    state = table.merge(annual, left_on="state_abbrev", right_on="place_id", how="inner")
    state = state.rename(
        columns={"annual": "hpi_all_transactions_annual", "growth": "hpi_growth_1y"}
    )
    state = state.sort_values(["statefip", "year"], kind="mergesort")[STATE_COLUMNS]
    us = annual[annual["place_id"] == "USA"]
    if us.empty:
        raise DataError(
            f"{p}: no U.S. rows (level 'USA or Census Division', place_id USA, traditional "
            "all-transactions quarterly); download the full master file"
        )
    us = us.rename(columns={"annual": "us_hpi_all_transactions_annual",
                            "growth": "us_hpi_growth_1y"})  # fmt: skip
    return state.reset_index(drop=True), us[US_COLUMNS].reset_index(drop=True)


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read `survey.raw.fhfa_hpi` and write the state and U.S. annual parquet files."""
    started = time.perf_counter()
    path = require_file(raw_path(survey, "fhfa_hpi", raw_dir), "FHFA hpi_master.csv", SOURCE_URL)
    state, us = hpi_tables(path)
    return write_outputs(survey, out_dir, {STATE_OUTPUT: state, US_OUTPUT: us}, [path], started)