"""BEA SAINC1 (state personal income summary) -> state and U.S. annual per-capita income.

Facts: shared/spec/00_common.md 1.3 (BEA SAINC row). `SAINC1__ALL_AREAS_1929_2025.csv`
(https://apps.bea.gov/regional/, "Download" -> SAINC) is a wide CSV: GeoFIPS, GeoName, Region,
TableName, LineCode, IndustryClassification, Description, Unit, then one column per year.
GeoFIPS is quoted, sometimes with a leading space: `SS000` for a state, `00000` for the U.S.,
`91000`-`98000` for BEA regions (not read). LineCode 1 = personal income (millions of dollars),
2 = population (persons), 3 = per-capita personal income (dollars); `(NA)`, `(D)`, `(L)` etc. are
BEA's suppression marks and read as missing. Footnote lines after the table have no LineCode.
Growth = 100 x percent change of per-capita income from the previous year.

As the reference's `scripts/1_preprocessing/bea_sainc.py` (Jn-Huang/householdbench_eval
@148abfb): a state-year (or U.S. year) whose three lines are all missing ("(NA)") is dropped;
growth is the change from the previous row of the same area after carrying a missing per-capita
value forward (pandas 2.2's default `pct_change`), so a missing value has growth 0 and the next
one is measured from the last value present; state_name is BEA's GeoName without its footnote
asterisk. Rows of other areas (regions, anything not a state or the U.S.) are not read.
Types as the reference writes them: statefip nullable `Int64`, year int64, the rest float64 and
text (hhx.arrow_schema makes the Arrow schema the official one).
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.base import BuildReport, raw_path, require_file, write_outputs
from hhx.surveys.macro.fhfa_hpi import read_text_csv
from hhx.surveys.macro.state_panel import STATES

SOURCE_URL = "https://apps.bea.gov/regional/ (SAINC, all areas)"
STATE_OUTPUT = "bea_sainc_state_annual"
US_OUTPUT = "bea_sainc_us_annual"
LINES = {1: "personal_income_millions", 2: "population", 3: "pcpi_nominal"}
STATE_COLUMNS = ["statefip", "state_name", "year", *LINES.values(), "pcpi_growth_1y"]
US_COLUMNS = ["year", "us_pcpi_nominal", "us_pcpi_growth_1y"]


def _numbers(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Year columns as floats; BEA's parenthesised marks ((NA), (D), ...) become NaN."""
    text = frame.apply(lambda s: s.str.strip())
    marks = text.apply(lambda s: s.str.fullmatch(r"\(\w+\)|"))
    values = text.mask(marks).apply(lambda s: pd.to_numeric(s, errors="coerce"))
    junk = values.isna() & ~marks
    if junk.to_numpy().any():
        column = junk.any()[junk.any()].index[0]
        raise DataError(
            f"{path}: column {column!r} has non-numeric {text.loc[junk[column], column].iloc[0]!r}"
        )
    return values.astype("float64")


def read_sainc1(path: str | Path) -> pd.DataFrame:
    """Long table geofips, line, year, value for the U.S. and the 51 states (lines 1-3)."""
    p = Path(path)
    raw = read_text_csv(p, "BEA CSV")
    raw.columns = [str(c).strip() for c in raw.columns]
    raw = raw.fillna("")  # short footnote lines
    for column in ("GeoFIPS", "GeoName", "LineCode"):
        if column not in raw.columns:
            raise DataError(
                f"{p}: column {column!r} not found; expected the BEA SAINC1 CSV layout from "
                f"{SOURCE_URL}"
            )
    years = [c for c in raw.columns if c.isdigit() and len(c) == 4]
    if not years:
        raise DataError(f"{p}: no year columns (1929, 1930, ...); is this the SAINC1 CSV?")
    raw = raw[raw["LineCode"].str.strip().ne("")]  # footnote lines
    geo = raw["GeoFIPS"].str.strip().str.strip('"').str.strip()
    known = {f"{f:02d}000" for f, _, _ in STATES} | {"00000"}
    line = raw["LineCode"].str.strip()
    bad_line = geo.isin(known) & ~line.isin([str(k) for k in LINES])
    if bad_line.any():
        raise DataError(
            f"{p}: column LineCode has code {line[bad_line].iloc[0]!r}; SAINC1 has lines 1, 2, 3"
        )
    keep = geo.isin(known)
    values = _numbers(raw.loc[keep, years], p)
    values["geofips"] = geo[keep].to_numpy()
    values["geoname"] = raw.loc[keep, "GeoName"].str.replace("*", "", regex=False).str.strip(
        ).to_numpy()
    values["line"] = line[keep].astype("int64").to_numpy()
    if values.duplicated(["geofips", "line"]).any():
        first = values[values.duplicated(["geofips", "line"])].iloc[0]
        raise DataError(f"{p}: GeoFIPS {first.geofips} LineCode {first.line} appears twice")
    long = values.melt(id_vars=["geofips", "geoname", "line"], var_name="year",
                       value_name="value")
    long["year"] = long["year"].astype("int64")
    return long


def _wide(long: pd.DataFrame, geofips: str, path: Path) -> pd.DataFrame:
    """year x (personal_income_millions, population, pcpi_nominal) of one area, with growth."""
    one = long[long["geofips"] == geofips]
    lines = set(one["line"])
    if lines != set(LINES):
        missing = sorted(set(LINES) - lines)
        raise DataError(
            f"{path}: GeoFIPS {geofips} lacks LineCode {missing}; all 51 states and the U.S. need "
            f"lines 1, 2, 3 (download the full SAINC1 file from {SOURCE_URL})"
        )
    wide = one.pivot(index="year", columns="line", values="value").rename(columns=LINES)
    wide = wide.sort_index()
    wide = wide[wide[list(LINES.values())].notna().any(axis=1)]  # all-"(NA)" years dropped
    carried = wide["pcpi_nominal"].ffill()
    wide["pcpi_growth_1y"] = (carried / carried.shift(1) - 1.0) * 100.0
    out = wide.reset_index()
    out.insert(0, "state_name", one["geoname"].iloc[0] if len(one) else "")
    return out


def sainc_tables(path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(state-year table, U.S. year table) from the SAINC1 CSV."""
    p = Path(path)
    long = read_sainc1(p)
    frames = []
    for fips, _, _ in STATES:
        wide = _wide(long, f"{fips:02d}000", p)
        wide.insert(0, "statefip", fips)
        frames.append(wide)
    state = pd.concat(frames, ignore_index=True)[STATE_COLUMNS]
    # The reference holds statefip as pandas' nullable Int64 (GeoFIPS // 1000 cast to "Int64"),
    # so its parquet file carries that dtype in the pandas metadata; year is plain int64.
    state = state.astype({"statefip": "Int64", "year": "int64"})
    us = _wide(long, "00000", p).rename(
        columns={"pcpi_nominal": "us_pcpi_nominal", "pcpi_growth_1y": "us_pcpi_growth_1y"}
    )
    return state, us[US_COLUMNS].astype({"year": "int64"})


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read `survey.raw.bea_sainc` and write the state and U.S. annual parquet files."""
    started = time.perf_counter()
    path = require_file(raw_path(survey, "bea_sainc", raw_dir),
                        "SAINC1__ALL_AREAS_1929_2025.csv", SOURCE_URL)  # fmt: skip
    state, us = sainc_tables(path)
    return write_outputs(survey, out_dir, {STATE_OUTPUT: state, US_OUTPUT: us}, [path], started)