"""IPUMS CPS Basic Monthly reader: extract (csv.gz, or fixed-width .dat + DDI) -> cps_basic.parquet.

The extract (79 million person-month rows in the official request) is streamed in chunks and
written chunk by chunk. Its forms, column kinds and the streaming of typed raw chunks (csv.gz
through Arrow; .dat[.gz] + DDI codebook through `ipumspy`) are in `ipums_read.py`.

Each chunk: typed columns (uppercase IPUMS names; nullable Int32, Int64 for identifiers,
Float64 for weights and money, string for the quoted codes), NIU/missing codes -> NA
(`codes.MISSING_CODES`, the reference table), DWS numeric recodes written into the raw DWS
columns and into their lowercase companions (as the reference does), lowercase label columns
(`labels.LABEL_SPECS`), era flags, and the row's month release date.

Deliberate deviations, off by default, enabled by name in the survey config's `improvements`
(`python -m hhx stage=build survey=cps survey.improvements=[cps_extra_missing_codes]`):
- `cps_extra_missing_codes`: also DURUNEMP 999, AHRSWORKT 999, EARNWEEK 9999.99 and
  HOURWAGE 999.99 (IPUMS NIU codes the reference table lacks) become NA;
- `cps_raw_dws_columns`: DWWEEKC, DWWEEKL, DWYEARS, DWJOBSINCE and DWWKSUN keep their raw codes;
  the harmonised values are only in the lowercase companions.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.io import atomic_path, write_parquet_chunks
from hhx.surveys.base import (
    BuildReport,
    enabled_improvements,
    finish_report,
    input_sha256,
    require_file,
)
from hhx.surveys.cps.codes import DWS_NUMERIC, EXTRA_MISSING_CODES, MISSING_CODES, recode_numeric
from hhx.surveys.cps.ipums_read import EXTRACT_COLUMNS as EXTRACT_COLUMNS  # re-exported
from hhx.surveys.cps.ipums_read import FLOAT_COLUMNS as FLOAT_COLUMNS  # re-exported
from hhx.surveys.cps.ipums_read import (
    IPUMS_CPS_URL,
    csv_header,
    ddi_columns,
    iter_extract,
)
from hhx.surveys.cps.ipums_read import STRING_COLUMNS as STRING_COLUMNS  # re-exported
from hhx.surveys.cps.ipums_read import iter_csv_chunks as iter_csv_chunks  # re-exported
from hhx.surveys.cps.ipums_read import read_ddi_codebook as read_ddi_codebook  # re-exported
from hhx.surveys.cps.labels import LABEL_SPECS, label_codes
from hhx.surveys.macro.release_dates import (
    PROXY_RULE_ID,
    CpsCrosswalk,
    cps_month_releases,
    optional_crosswalk,
)

OUTPUT_NAME = "cps_basic"

# What the CPS task builders read (jobfind, separation, retire, ui, displace, income_cps_displace).
REQUIRED_COLUMNS: tuple[str, ...] = (
    "YEAR",
    "MONTH",
    "SERIAL",
    "PERNUM",
    "CPSID",
    "CPSIDP",
    "CPSIDV",
    "MISH",
    "WTFINL",
    "AGE",
    "SEX",
    "RACE",
    "EDUC",
    "MARST",
    "STATEFIP",
    "REGION",
    "METRO",
    "RELATE",
    "FAMSIZE",
    "NCHILD",
    "HISPAN",
    "NATIVITY",
    "CITIZEN",
    "VETSTAT",
    "SPLOC",
    "FAMINC",
    "EMPSTAT",
    "NILFACT",
    "CLASSWKR",
    "WKSTAT",
    "DURUNEMP",
    "WNFTLOOK",
    "WHYUNEMP",
    "AHRSWORKT",
    "UHRSWORKT",
    "MULTJOB",
    "UNION",
    "EARNWEEK",
    "OCC",
    "IND",
    "OCC2010",
    "IND1990",
    "DIFFANY",
    "DWRESP",
    "DWSTAT",
    "DWREAS",
    "DWNOTICE",
    "DWLASTWRK",
    "DWFULLTIME",
    "DWUNION",
    "DWCLASS",
    "DWHI",
    "DWWEEKL",
    "DWWEEKC",
    "DWYEARS",
    "DWJOBSINCE",
    "DWWKSUN",
)


# --------------------------------------------------------------------------------------------
# Normalisation of one typed chunk


def add_flags(df: pd.DataFrame) -> None:
    """Era flags of spec 1.6 (Int8: 0/1), in place."""
    year, month = df["YEAR"], df["MONTH"]

    def flag(mask: pd.Series) -> pd.Series:
        return mask.fillna(False).astype("Int8")

    df["post_1994_redesign"] = flag(year >= 1994)
    df["multi_race_era"] = flag(year >= 2003)
    df["covid_period"] = flag(year == 2020)
    df["post_2023_disclosure_era"] = flag(year >= 2023)
    df["cps_2025_2026_sample_redesign"] = flag(((year == 2025) & (month >= 4)) | (year == 2026))
    df["cps_nov_2025_shutdown_caveat"] = flag((year == 2025) & (month == 11))
    df["cps_jan_2026_population_control_revision"] = flag((year == 2026) & (month == 1))
    df["asec_2014_traditional"] = pd.Series(0, index=df.index, dtype="Int8")
    df["asec_2014_redesigned"] = pd.Series(0, index=df.index, dtype="Int8")


IMPROVEMENTS = ("cps_extra_missing_codes", "cps_raw_dws_columns")


def improvements(survey: SurveyConfig) -> frozenset[str]:
    """The deviations from the reference a survey config enables (see the module docstring)."""
    return enabled_improvements(survey, IMPROVEMENTS, "CPS")


def normalize_chunk(
    df: pd.DataFrame,
    *,
    where: str,
    crosswalk: Path | CpsCrosswalk | None = None,
    options: frozenset[str] = frozenset(),
) -> pd.DataFrame:
    """Typed raw chunk -> intermediate rows: NIU -> NA, labels, DWS recodes, flags, release."""
    out = df.copy()
    missing = dict(MISSING_CODES)
    if "cps_extra_missing_codes" in options:
        missing.update(EXTRA_MISSING_CODES)
    for col, niu in missing.items():
        if col in out.columns:
            out[col] = out[col].mask(out[col].isin(niu))
    for recode in DWS_NUMERIC:
        if recode.source in out.columns:
            out[recode.out] = recode_numeric(out[recode.source], recode, where)
            if "cps_raw_dws_columns" not in options:  # the reference overwrites the raw column
                out[recode.source] = out[recode.out].copy()
    for spec in LABEL_SPECS:
        if spec.source in out.columns:
            out[spec.out] = label_codes(out[spec.source], spec, where)
    for col in ("YEAR", "MONTH"):
        if col not in out.columns:
            raise DataError(f"{where}: required column {col} is missing")
        if out[col].isna().any():
            raise DataError(f"{where}: column {col} has missing values")
    add_flags(out)
    month_index = out["YEAR"].to_numpy(dtype=np.int64) * 12 + out["MONTH"].to_numpy(dtype=np.int64)
    months, inverse = np.unique(month_index, return_inverse=True)
    release = cps_month_releases(
        pd.Series((months - 1) // 12), pd.Series((months - 1) % 12 + 1), crosswalk
    )
    for column in ("release_date", "release_date_source"):
        categories, codes = np.unique(release[column].to_numpy(dtype=str), return_inverse=True)
        out[column] = pd.Categorical.from_codes(codes[inverse], categories=categories)
    return out


def read_normalized(
    data_path: Path,
    *,
    ddi_path: Path | None = None,
    chunk_rows: int = 250_000,
    crosswalk: Path | None = None,
    options: frozenset[str] = frozenset(),
) -> pd.DataFrame:
    """A whole (small) extract, normalised as in the intermediate: for tests and inspection."""
    table = CpsCrosswalk.read(crosswalk) if crosswalk is not None else None
    frames = [
        normalize_chunk(chunk, where=str(data_path), crosswalk=table, options=options)
        for chunk in iter_extract(data_path, chunk_rows, ddi_path=ddi_path)
    ]
    if not frames:
        raise DataError(f"{data_path}: no data rows")
    # release_date categories differ between chunks; unify them as reading the parquet does
    for col in ("release_date", "release_date_source"):
        union = pd.api.types.union_categoricals([f[col] for f in frames])
        for f in frames:
            f[col] = pd.Categorical(f[col].astype(str), categories=union.categories)
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------------------------
# Build


def _check_required(columns: Sequence[str], required: Sequence[str], source: Path) -> None:
    present = set(columns)
    missing = [c for c in required if c not in present]
    if missing:
        raise DataError(
            f"{source}: required column {missing[0]} is missing"
            + (
                f" (and {len(missing) - 1} more: {', '.join(missing[1:6])})"
                if len(missing) > 1
                else ""
            )
            + f"; add it to the IPUMS CPS extract ({IPUMS_CPS_URL})"
        )


def build(
    survey: SurveyConfig,
    raw_dir: Path,
    out_dir: Path,
    *,
    required: Sequence[str] = REQUIRED_COLUMNS,
) -> BuildReport:
    """Stream the extract into `out_dir/cps_basic.parquet` (written atomically)."""
    start = time.perf_counter()
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    options = improvements(survey)
    if "cps_basic" not in survey.raw:
        raise ConfigError(
            "survey.raw.cps_basic is not set (the extract file, e.g. cps_basic.csv.gz)"
        )
    data_path = raw_dir / survey.raw["cps_basic"]  # type: ignore[operator]  # set: checked above
    source = survey.source_url or IPUMS_CPS_URL
    require_file(data_path, "IPUMS CPS Basic Monthly extract", source)
    ddi_path = raw_dir / survey.raw["cps_ddi"] if survey.raw.get("cps_ddi") else None  # type: ignore[operator]
    # Read and checked before any data row, as the reference does; without the file: the proxy.
    crosswalk_path = optional_crosswalk(survey, "release_crosswalk", raw_dir, "CPS",
                                        f"the proxy rule {PROXY_RULE_ID}")
    crosswalk = CpsCrosswalk.read(crosswalk_path) if crosswalk_path is not None else None
    fixed_width = ".dat" in data_path.suffixes
    hasher: list[str] = []
    chunks = iter_extract(data_path, survey.chunk_rows, ddi_path=ddi_path, hasher=hasher)
    if fixed_width:
        codebook = ddi_path or data_path.with_name(data_path.name.split(".dat")[0] + ".xml")
        _check_required(ddi_columns(codebook), required, codebook)
    else:
        _check_required(csv_header(data_path), required, data_path)

    out_path = out_dir / f"{OUTPUT_NAME}.parquet"

    def normalized() -> Iterator[pd.DataFrame]:
        for chunk in chunks:
            where = f"{data_path} (data rows {chunk.index[0] + 1}-{chunk.index[-1] + 1})"
            yield normalize_chunk(chunk, where=where, crosswalk=crosswalk, options=options)

    with atomic_path(out_path) as tmp:
        rows = write_parquet_chunks(tmp, normalized(), str(data_path))
        if not rows:
            raise DataError(f"{data_path}: no data rows")

    if fixed_width:
        inputs = {str(data_path): input_sha256(data_path)}
        if ddi_path is not None:
            inputs[str(ddi_path)] = input_sha256(ddi_path)
    else:
        inputs = {str(data_path): hasher[0]}
    if crosswalk_path is not None:
        inputs[str(crosswalk_path)] = input_sha256(crosswalk_path)
    return finish_report(survey, {OUTPUT_NAME: out_path}, {OUTPUT_NAME: rows}, inputs, start)
