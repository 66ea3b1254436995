"""State-year macro panel (state unemployment, per-capita income, house prices and their U.S.
counterparts) used by the housing tasks (e.g. house_census_move origin-state conditions).

Facts: shared/spec/00_common.md 1.3 (state macro panel row). Reads the five intermediates the
fhfa_hpi, bls_laus and bea_sainc builders wrote to out_dir, and the FRED-QD file (`raw.fred_qd`,
read with hhx.surveys.macro.fred_qd.read_fred_qd). Inner join LAUS x BEA x FHFA on (statefip,
state_name, year); left join the U.S. series on year; U.S. unemployment = annual mean of the
quarterly FRED-QD UNRATE values the year has (as the reference's state_macro_panel.py). No missing
value is allowed and the state set must be exactly the 51 below.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.io import write_parquet_atomic
from hhx.surveys.base import BuildReport, finish_report, require_file
from hhx.surveys.macro.fred_qd import read_fred_qd

OUTPUT_NAME = "state_macro_panel"
FRED_QD_URL = "https://www.stlouisfed.org/research/economists/mccracken/fred-databases"
# The 51 geographies (50 states + DC): FIPS code, postal abbreviation, name as the outputs spell it.
STATES: list[tuple[int, str, str]] = [
    (1, "AL", "Alabama"), (2, "AK", "Alaska"), (4, "AZ", "Arizona"), (5, "AR", "Arkansas"),
    (6, "CA", "California"), (8, "CO", "Colorado"), (9, "CT", "Connecticut"),
    (10, "DE", "Delaware"), (11, "DC", "District of Columbia"), (12, "FL", "Florida"),
    (13, "GA", "Georgia"), (15, "HI", "Hawaii"), (16, "ID", "Idaho"), (17, "IL", "Illinois"),
    (18, "IN", "Indiana"), (19, "IA", "Iowa"), (20, "KS", "Kansas"), (21, "KY", "Kentucky"),
    (22, "LA", "Louisiana"), (23, "ME", "Maine"), (24, "MD", "Maryland"),
    (25, "MA", "Massachusetts"), (26, "MI", "Michigan"), (27, "MN", "Minnesota"),
    (28, "MS", "Mississippi"), (29, "MO", "Missouri"), (30, "MT", "Montana"),
    (31, "NE", "Nebraska"), (32, "NV", "Nevada"), (33, "NH", "New Hampshire"),
    (34, "NJ", "New Jersey"), (35, "NM", "New Mexico"), (36, "NY", "New York"),
    (37, "NC", "North Carolina"), (38, "ND", "North Dakota"), (39, "OH", "Ohio"),
    (40, "OK", "Oklahoma"), (41, "OR", "Oregon"), (42, "PA", "Pennsylvania"),
    (44, "RI", "Rhode Island"), (45, "SC", "South Carolina"), (46, "SD", "South Dakota"),
    (47, "TN", "Tennessee"), (48, "TX", "Texas"), (49, "UT", "Utah"), (50, "VT", "Vermont"),
    (51, "VA", "Virginia"), (53, "WA", "Washington"), (54, "WV", "West Virginia"),
    (55, "WI", "Wisconsin"), (56, "WY", "Wyoming"),
]  # fmt: skip
OUTPUT_COLUMNS = [
    "statefip", "state_abbrev", "state_name", "year", "unemployment_rate", "pcpi_nominal",
    "pcpi_growth_1y", "hpi_all_transactions_annual", "hpi_growth_1y", "us_unemployment_rate",
    "us_pcpi_nominal", "us_pcpi_growth_1y", "us_hpi_all_transactions_annual", "us_hpi_growth_1y",
]  # fmt: skip
# Intermediate -> the survey whose build writes it (named in missing-file errors).
INTERMEDIATES = {
    "bls_laus_state_annual": "bls_laus",
    "bea_sainc_state_annual": "bea_sainc",
    "bea_sainc_us_annual": "bea_sainc",
    "fhfa_hpi_state_annual": "fhfa_hpi",
    "fhfa_hpi_us_annual": "fhfa_hpi",
}
_KEYS = ["statefip", "state_name", "year"]


def us_unemployment(fred: pd.DataFrame) -> pd.DataFrame:
    """year, us_unemployment_rate: mean of the year's quarterly UNRATE values present (the
    reference averages whatever quarters the vintage has, so a partial last year counts)."""
    q = fred.dropna(subset=["UNRATE"])
    out = q.groupby("year")["UNRATE"].mean().rename("us_unemployment_rate").reset_index()
    return out.astype({"year": "int64"})


def read_intermediate(out_dir: Path, name: str) -> pd.DataFrame:
    path = Path(out_dir) / f"{name}.parquet"
    if not path.is_file():
        raise DataError(
            f"{path}: intermediate not found; build survey={INTERMEDIATES[name]} first "
            "(python -m hhx stage=build survey=" + INTERMEDIATES[name] + " ...)"
        )
    return pd.read_parquet(path)


def assemble_panel(parts: dict[str, pd.DataFrame], us_unrate: pd.DataFrame) -> pd.DataFrame:
    """Join the intermediates and U.S. unemployment into the panel; check completeness."""
    laus = parts["bls_laus_state_annual"]
    bea = parts["bea_sainc_state_annual"][[*_KEYS, "pcpi_nominal", "pcpi_growth_1y"]]
    fhfa = parts["fhfa_hpi_state_annual"]
    panel = laus.merge(bea, on=_KEYS, how="inner").merge(fhfa, on=_KEYS, how="inner")
    for us in (us_unrate, parts["bea_sainc_us_annual"], parts["fhfa_hpi_us_annual"]):
        panel = panel.merge(us, on="year", how="left")
    panel = panel[OUTPUT_COLUMNS].sort_values(["statefip", "year"], kind="mergesort")
    expected = {f for f, _, _ in STATES}
    if set(panel["statefip"]) != expected:
        missing = sorted(expected - set(panel["statefip"]))
        raise DataError(
            f"state macro panel: states {missing} have no year present in all of LAUS, BEA and "
            "FHFA (the panel must hold exactly the 50 states + DC); check those intermediates"
        )
    for column in OUTPUT_COLUMNS:
        hole = panel[column].isna()
        if hole.any():
            first = panel[hole].iloc[0]
            raise DataError(
                f"state macro panel: column {column} is missing for {first.state_name} "
                f"{first.year} ({int(hole.sum())} rows); no missing values are allowed — e.g. "
                "U.S. unemployment needs a FRED-QD vintage covering that year"
            )
    return panel.reset_index(drop=True)


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read the five intermediates in out_dir and `survey.raw.fred_qd`; write the panel."""
    started = time.perf_counter()
    if "fred_qd" not in survey.raw:
        raise ConfigError(f"survey {survey.name}: raw.fred_qd is not set; point it at FRED-QD")
    fred_path = Path(survey.raw["fred_qd"]).expanduser()  # type: ignore[arg-type]  # checked above
    fred_path = fred_path if fred_path.is_absolute() else Path(raw_dir) / fred_path
    require_file(fred_path, "FRED-QD file", FRED_QD_URL)
    parts = {name: read_intermediate(Path(out_dir), name) for name in INTERMEDIATES}
    panel = assemble_panel(parts, us_unemployment(read_fred_qd(fred_path)))
    target = write_parquet_atomic(Path(out_dir) / f"{OUTPUT_NAME}.parquet", panel)
    # The intermediates count as inputs: their fingerprints pin what the panel was built from,
    # and a synthetic one (sidecar) makes the panel synthetic.
    inputs = [fred_path] + [Path(out_dir) / f"{name}.parquet" for name in INTERMEDIATES]
    return finish_report(survey, {OUTPUT_NAME: target}, {OUTPUT_NAME: len(panel)}, inputs, started)
