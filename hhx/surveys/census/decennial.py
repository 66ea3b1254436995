"""Decennial Census, IPUMS USA 1990 and 2000 1% samples -> `census_decennial.parquet`.

Facts: shared/spec/00_common.md 1.2 (Census row), 1.3 (Census row) and 1.7, and the reference's
`scripts/1_preprocessing/census.py` (Jn-Huang/householdbench_eval @148abfb), whose output this
builder reproduces column by column.

Inputs
- `survey.raw.census`: `micro/census/census.gz`, a gzip-compressed Stata .dta as IPUMS delivers
  it (rectangular persons, lower-case variable names, value-label sets named by the upper-case
  variable name, as the reference reads them). Decompressed once beside the extract, read in
  chunks of `survey.chunk_rows`, written row group by row group (memory: one chunk). A .dta that
  ends before its own map says it does is an error naming where it stops. The other IPUMS
  delivery, a fixed-width `.dat(.gz)` with its DDI codebook (`raw.census_ddi`, else `<name>.xml`
  beside it), is read too; its DDI categories are the value labels (an hhx extension).
- `survey.raw.release_dates`: the reference's `release_census.csv` (year, sample, release_date,
  source, source_url, comments; exactly the two samples, every field filled).
- `raw.availability` / `raw.missing_codes`: default the reference's tables, shipped here as
  `census_availability.csv` (its rows for the kept variables) and `census_missing_codes.csv`.

Per chunk, as the reference does: rows of other samples are skipped (counted in the log);
CNTYGP97 and CNTYGP98 are not read (neither sample has them; always missing); variables a sample
lacks per the availability table are blanked (STRUCTURAL_MISSING_COUNT = number of kept
variables the row's sample lacks); NIU/missing codes set to NA: the missing-codes table, every
code whose value label reads NOT IN UNIVERSE, NOT APPLICABLE, N/A, MISSING, UNKNOWN, ILLEGIBLE,
NOT ASCERTAINED, BLANK or UNCLASSIFIABLE anywhere in it (so HISPAN 9 "Not Reported" stays and
MIGMETRO5 4 "... status unknown" goes), and the manual codes of MANUAL_NIU_CODES; METAREA,
METAREAD, WKSWORK1, PUMA become floats; `<VAR>_label` (categorical, categories in code order;
MIGMETRO5 5 "Same house" added) for LABEL_COLUMNS, a code without a label being an error; then
FORM_1970, IS_1970_FORM1/2 (0), PERWT_/HHWT_ANALYSIS, WEIGHT_REGIME and EDUC_DEGREE_ERA (year
>= 1990), HISPAN_IMPUTED_ERA (0), MULTIRACE_ERA (year >= 2000), RACE_MULTIPLE_MARKED (RACE 8/9),
STATEFIP_UNIDENTIFIED (99), PERWT_ZERO_FLAG, `<INC>_TOPCODE_KNOWN` (Int8: 0 where the year has a
rule and the value is present, 1 above the top code, "greater than" except INCTOT 2000 ">=",
INCOME_TOPCODES), CORE_MISSING_BURDEN (share of AGE SEX RACE EDUC EMPSTAT OCC INCTOT OWNERSHP
missing, float32), `<INC>_REAL99` = nominal x CPI99, release_date, release_date_source.
(YEAR, SAMPLE, SERIAL, PERNUM) must be unique over the file (an hhx check).
"""

from __future__ import annotations

import gzip
import logging
import re
import shutil
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.io import atomic_path, temp_dir, write_parquet_chunks
from hhx.surveys.base import BuildReport, finish_report, raw_path, require_file

log = logging.getLogger(__name__)
SOURCE_URL = "https://usa.ipums.org"
OUTPUT_NAME = "census_decennial"
_HERE = Path(__file__).resolve().parent
AVAILABILITY_PATH = _HERE / "census_availability.csv"
MISSING_CODES_PATH = _HERE / "census_missing_codes.csv"
SAMPLES: dict[int, int] = {199002: 1990, 200007: 2000}
KEY_COLUMNS = ["YEAR", "SAMPLE", "SERIAL", "PERNUM"]
KEEP_COLUMNS = [
    "YEAR", "SAMPLE", "SERIAL", "PERNUM", "NUMPREC", "FAMSIZE", "HHWT", "PERWT", "CPI99",
    "STATEFIP", "REGION", "METRO", "METAREA", "METAREAD", "PUMA", "CNTYGP97", "CNTYGP98",
    "PUMASUPR", "GQ", "OWNERSHP", "VALUEH", "RENTGRS", "ROOMS", "MOMLOC", "POPLOC", "SPLOC",
    "RELATE", "AGE", "SEX", "RACE", "RACED", "HISPAN", "HISPAND", "EDUC", "EDUCD", "SCHOOL",
    "GRADEATT", "GRADEATTD", "EMPSTAT", "LABFORCE", "CLASSWKR", "OCC", "OCC1950", "OCC1990", "IND",
    "IND1950", "IND1990", "WORKEDYR", "WKSWORK1", "WKSWORK2", "UHRSWORK", "INCTOT", "INCWAGE",
    "INCBUS", "INCFARM", "INCSS", "INCINVST", "INCRETIR", "POVERTY", "MIGRATE5", "MIGPLAC5",
    "MIGMETRO5", "MIGCITY5",
]  # fmt: skip
NOT_READ = {"CNTYGP97", "CNTYGP98"}  # legacy geographies neither sample has
SOURCE_COLUMNS = [c for c in KEEP_COLUMNS if c not in NOT_READ]
LABEL_COLUMNS = [
    "SEX", "RACE", "RACED", "HISPAN", "HISPAND", "EDUC", "EDUCD", "STATEFIP", "REGION", "METRO",
    "OWNERSHP", "MIGRATE5", "MIGPLAC5", "MIGMETRO5", "MIGCITY5", "RELATE", "GQ",
]  # fmt: skip
INCOME_COLUMNS = ["INCTOT", "INCWAGE", "INCBUS", "INCFARM", "INCSS", "INCINVST", "INCRETIR"]
CORE_COLUMNS = ["AGE", "SEX", "RACE", "EDUC", "EMPSTAT", "OCC", "INCTOT", "OWNERSHP"]
FLOAT_COLUMNS = ["METAREA", "METAREAD", "WKSWORK1", "PUMA"]  # floats in the reference's output
_REAL_VALUED = {"HHWT", "PERWT", "CPI99", *NOT_READ}
MANUAL_NIU_CODES: dict[str, set[int]] = {
    "INCTOT": {9999999}, "INCBUS": {999999}, "INCFARM": {999999}, "INCSS": {99999},
    "INCINVST": {999999}, "INCRETIR": {999999}, "POVERTY": {0}, "OCC": {0}, "IND": {0},
}  # fmt: skip
MANUAL_LABELS: dict[str, dict[int, str]] = {"MIGMETRO5": {5: "Same house"}}
# (variable, census year, top code, inclusive): the IPUMS USA income top codes of the samples.
INCOME_TOPCODES: list[tuple[str, int, float, bool]] = [
    ("INCTOT", 1990, 400000, False), ("INCTOT", 2000, 999998, True),
    ("INCWAGE", 1990, 140000, False), ("INCWAGE", 2000, 175000, False),
    ("INCBUS", 1990, 90000, False), ("INCFARM", 1990, 54000, False),
    ("INCSS", 1990, 17000, False), ("INCSS", 2000, 18000, False),
    ("INCINVST", 1990, 40000, False), ("INCINVST", 2000, 50000, False),
    ("INCRETIR", 1990, 30000, False), ("INCRETIR", 2000, 52000, False),
]  # fmt: skip
FLAG_COLUMNS = ["FORM_1970", "IS_1970_FORM1", "IS_1970_FORM2", "PERWT_ANALYSIS",
                "HHWT_ANALYSIS", "WEIGHT_REGIME", "EDUC_DEGREE_ERA", "HISPAN_IMPUTED_ERA",
                "MULTIRACE_ERA", "RACE_MULTIPLE_MARKED", "STATEFIP_UNIDENTIFIED",
                "PERWT_ZERO_FLAG"]  # fmt: skip
OUTPUT_COLUMNS = (KEEP_COLUMNS + [f"{c}_label" for c in LABEL_COLUMNS]
                  + ["release_date", "release_date_source"] + FLAG_COLUMNS
                  + [f"{c}_TOPCODE_KNOWN" for c in INCOME_COLUMNS]
                  + ["CORE_MISSING_BURDEN", "STRUCTURAL_MISSING_COUNT"]
                  + [f"{c}_REAL99" for c in INCOME_COLUMNS])
CROSSWALK_COLUMNS = ["year", "sample", "release_date", "source", "source_url", "comments"]
_NIU = re.compile(r"\bNOT IN UNIVERSE\b|\bNOT APPLICABLE\b|(?<![A-Z0-9])N/A(?![A-Z0-9])|"
                  r"\bMISSING\b|\bUNKNOWN\b|\bILLEGIBLE\b|\bNOT ASCERTAINED\b|\bBLANK\b|"
                  r"\bUNCLASSIFIABLE\b")


def is_niu_label(label: str) -> bool:
    """The reference's rule: one of its NIU phrases anywhere in the upper-cased label."""
    return bool(_NIU.search(" ".join(str(label).upper().split())))


# --------------------------------------------------------------------------------------------
# Tables


def read_availability(path: Path) -> dict[str, dict[int, bool]]:
    """`variable,199002,200007` with True/False."""
    frame = pd.read_csv(require_file(path, "census availability table", "the reference"),
                        dtype=str, keep_default_na=False)
    wanted = ["variable"] + [str(s) for s in SAMPLES]
    for column in wanted:
        if column not in frame.columns:
            raise DataError(f"{path}: column {column!r} not found; expected {','.join(wanted)}")
    out: dict[str, dict[int, bool]] = {}
    for record in frame.to_dict("records"):
        flags = {}
        for sample in SAMPLES:
            text = str(record[str(sample)]).strip().lower()
            if text not in {"true", "false"}:
                raise DataError(f"{path}: availability {text!r} of {record['variable']} for "
                                f"{sample} is not True/False")
            flags[sample] = text == "true"
        out[str(record["variable"]).strip()] = flags
    return out


def read_missing_codes(path: Path) -> dict[str, set[float]]:
    """`variable,code,code_numeric,label,source` -> variable -> NA codes."""
    frame = pd.read_csv(require_file(path, "census missing-codes table", "the reference"),
                        dtype=str, keep_default_na=False)
    for column in ("variable", "code_numeric"):
        if column not in frame.columns:
            raise DataError(f"{path}: column {column!r} not found")
    codes = pd.to_numeric(frame["code_numeric"], errors="coerce")
    if codes.isna().any():
        raise DataError(f"{path}: code_numeric {frame['code_numeric'][codes.isna()].iloc[0]!r} "
                        "is not a number")
    out: dict[str, set[float]] = {}
    for variable, code in zip(frame["variable"].str.strip(), codes, strict=True):
        out.setdefault(variable, set()).add(float(code))
    return out


def read_release_crosswalk(path: Path) -> pd.DataFrame:
    """release_census.csv -> year, sample, release_date (ISO), source; the two samples exactly."""
    require_file(path, "Census release-date crosswalk release_census.csv",
                 "the reference repository's data/raw/release_dates/")
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    absent = [c for c in CROSSWALK_COLUMNS if c not in table.columns]
    if absent:
        raise DataError(f"{path}: column {absent[0]} missing; release_census.csv needs "
                        f"{', '.join(CROSSWALK_COLUMNS)}")
    table = table[CROSSWALK_COLUMNS].apply(lambda s: s.str.strip())
    keys = table[["year", "sample"]].apply(pd.to_numeric, errors="coerce")
    if keys.isna().any().any():
        raise DataError(f"{path}: year or sample is missing or not a number in some row")
    if keys.duplicated().any():
        raise DataError(f"{path}: (year, sample) {keys[keys.duplicated()].iloc[0].tolist()} "
                        "appears twice")
    mine = keys["sample"].isin(list(SAMPLES)).to_numpy()
    table, keys = table[mine], keys[mine].astype("int64")
    pairs = set(zip(keys["year"], keys["sample"], strict=True))
    expected = {(y, s) for s, y in SAMPLES.items()}
    if pairs != expected:
        raise DataError(f"{path}: must list exactly (1990, 199002) and (2000, 200007); missing "
                        f"{sorted(expected - pairs)}, unexpected {sorted(pairs - expected)}")
    dates = pd.to_datetime(table["release_date"].mask(table["release_date"] == ""),
                           errors="coerce", format="mixed")
    if dates.isna().any():
        raise DataError(f"{path}: release_date {table['release_date'][dates.isna()].iloc[0]!r} "
                        "is not a date")
    for column in ("source", "source_url", "comments"):
        if (table[column] == "").any():
            raise DataError(f"{path}: column {column} is empty in some row; every sample needs it")
    return pd.DataFrame({"year": keys["year"].to_numpy(), "sample": keys["sample"].to_numpy(),
                         "release_date": dates.dt.strftime("%Y-%m-%d").to_numpy(),
                         "source": table["source"].to_numpy()})


# --------------------------------------------------------------------------------------------
# The codebook of one extract


@dataclass
class Codebook:
    labels: dict[str, dict[int, str]]  # variable -> code -> label (LABEL_COLUMNS)
    missing: dict[str, set[float]]  # variable -> NA codes
    availability: dict[str, dict[int, bool]]
    release: pd.DataFrame
    skipped: list[int] = field(default_factory=lambda: [0])  # rows of other samples


def _normalised(raw: dict) -> dict[int, str]:
    """Integer codes with non-empty labels (the reference drops the others)."""
    out = {}
    for code, label in raw.items():
        try:
            x = float(code)
        except (TypeError, ValueError):
            continue
        text = str(label).strip()
        if abs(x - round(x)) <= 1e-9 and text:
            out[int(round(x))] = text
    return out


def make_codebook(value_labels: dict[str, dict], path: Path, missing_codes: dict[str, set[float]],
                  availability: dict[str, dict[int, bool]], release: pd.DataFrame) -> Codebook:
    """Label sets are looked up by the upper-case variable name, as the reference does."""
    missing: dict[str, set[float]] = {v: set(c) for v, c in missing_codes.items()}
    for variable in KEEP_COLUMNS:
        for code, label in (value_labels.get(variable) or {}).items():
            text = str(label).strip()
            try:
                number = float(code)
            except (TypeError, ValueError):
                continue
            if text and is_niu_label(text):
                missing.setdefault(variable, set()).add(number)
    for variable, niu in MANUAL_NIU_CODES.items():
        missing.setdefault(variable, set()).update(float(c) for c in niu)
    labels = {}
    for variable in LABEL_COLUMNS:
        codes = _normalised(value_labels.get(variable) or {})
        codes.update(MANUAL_LABELS.get(variable, {}))
        if not codes:
            raise DataError(
                f"{path}: column {variable} has no value labels (the label set must be named "
                f"{variable}); request Stata output with value labels from {SOURCE_URL}")
        labels[variable] = codes
    return Codebook(labels, missing, availability, release)


# --------------------------------------------------------------------------------------------
# One chunk


def clean_chunk(raw: pd.DataFrame, book: Codebook, path: Path) -> pd.DataFrame:
    """One chunk of the raw extract (upper-case names) -> the output columns."""
    chunk = raw.copy()
    for column in NOT_READ:
        chunk[column] = np.nan
    sample = pd.to_numeric(chunk["SAMPLE"], errors="coerce")
    mine = sample.isin(list(SAMPLES)).to_numpy()
    book.skipped[0] += int((~mine).sum())
    chunk = chunk.loc[mine, KEEP_COLUMNS].reset_index(drop=True)
    sample = pd.to_numeric(chunk["SAMPLE"]).astype("int64")
    year = pd.to_numeric(chunk["YEAR"], errors="coerce")
    for column in KEY_COLUMNS:
        if chunk[column].isna().any():
            raise DataError(f"{path}: column {column} has a missing value; keys must be complete")
    structural = _mask_and_type(chunk, sample, book, path)
    _add_labels(chunk, book, path)
    _add_derived(chunk, year, structural)
    _add_release_dates(chunk, year, sample, book, path)
    return chunk[OUTPUT_COLUMNS]


def _mask_and_type(chunk: pd.DataFrame, sample: pd.Series, book: Codebook, path: Path
                   ) -> np.ndarray:
    """Values a sample does not carry and missing codes -> NA, one type per column (in place);
    returns each row's count of structurally missing values."""
    structural = np.zeros(len(chunk), dtype=np.int16)
    for column in KEEP_COLUMNS:
        flags = book.availability.get(column)
        if flags is None:
            continue
        lacks = ~sample.isin([s for s, ok in flags.items() if ok]).to_numpy()
        if lacks.any():
            chunk[column] = chunk[column].astype("float64").mask(lacks)
            structural += lacks.astype(np.int16)
    for column, codes in book.missing.items():
        if column in chunk.columns and codes:
            hit = pd.to_numeric(chunk[column], errors="coerce").isin(sorted(codes)).to_numpy()
            if hit.any():
                chunk[column] = chunk[column].astype("float64").mask(hit)
    for column in KEEP_COLUMNS:  # one type per column whatever a chunk holds
        if column in FLOAT_COLUMNS or column in _REAL_VALUED:
            chunk[column] = pd.to_numeric(chunk[column], errors="coerce").astype("float64")
            continue
        values = pd.to_numeric(chunk[column], errors="coerce").astype("float64")
        odd = values.notna() & (values % 1 != 0)
        if odd.any():
            raise DataError(f"{path}: column {column} has non-integer code {values[odd].iloc[0]}")
        chunk[column] = values.astype("Int64")
    return structural


def _add_labels(out: pd.DataFrame, book: Codebook, path: Path) -> None:
    """`<column>_label` categoricals from the extract's codebook (in place)."""
    for column in LABEL_COLUMNS:
        codebook = book.labels[column]
        values = pd.to_numeric(out[column], errors="coerce")
        whole = values.notna() & ((values - values.round()).abs() <= 1e-9)
        unknown = values.notna() & (~whole | ~values.round().isin(list(codebook)))
        if unknown.any():
            raise DataError(
                f"{path}: column {column} has code {values[unknown].iloc[0]:g} without a value "
                f"label in the extract's codebook; check the extract against {SOURCE_URL}")
        text = values.round().astype("Int64").map(codebook)
        categories = list(dict.fromkeys(codebook[k] for k in sorted(codebook)))
        out[f"{column}_label"] = pd.Categorical(text, categories=categories)


def _add_derived(out: pd.DataFrame, year: pd.Series, structural: np.ndarray) -> None:
    """Analysis weights, era flags, top-code flags, missing burden, real incomes (in place)."""
    perwt = pd.to_numeric(out["PERWT"], errors="coerce")
    for column in ("FORM_1970", "IS_1970_FORM1", "IS_1970_FORM2", "HISPAN_IMPUTED_ERA"):
        out[column] = np.int8(0)
    out["PERWT_ANALYSIS"] = perwt * 1.0
    out["HHWT_ANALYSIS"] = pd.to_numeric(out["HHWT"], errors="coerce") * 1.0
    out["WEIGHT_REGIME"] = (year >= 1990).astype("int8")
    out["EDUC_DEGREE_ERA"] = (year >= 1990).astype("int8")
    out["MULTIRACE_ERA"] = (year >= 2000).astype("int8")
    out["RACE_MULTIPLE_MARKED"] = out["RACE"].isin([8, 9]).fillna(False).astype("int8")
    out["STATEFIP_UNIDENTIFIED"] = (out["STATEFIP"] == 99).fillna(False).astype("int8")
    out["PERWT_ZERO_FLAG"] = (perwt == 0).fillna(False).astype("int8")
    cpi99 = pd.to_numeric(out["CPI99"], errors="coerce")
    for column in INCOME_COLUMNS:
        values = pd.to_numeric(out[column], errors="coerce")
        flag = pd.Series(pd.NA, index=out.index, dtype="Int8")
        for variable, rule_year, top, inclusive in INCOME_TOPCODES:
            if variable != column:
                continue
            in_year = (year == rule_year).to_numpy()
            flag[in_year & values.notna().to_numpy()] = 0
            hit = ((values >= top) if inclusive else (values > top)).fillna(False)
            flag[in_year & hit.to_numpy(dtype=bool)] = 1
        out[f"{column}_TOPCODE_KNOWN"] = flag
    out["CORE_MISSING_BURDEN"] = out[CORE_COLUMNS].isna().mean(axis=1).astype("float32")
    out["STRUCTURAL_MISSING_COUNT"] = structural
    for column in INCOME_COLUMNS:
        out[f"{column}_REAL99"] = out[column].astype("float64") * cpi99


def _add_release_dates(out: pd.DataFrame, year: pd.Series, sample: pd.Series, book: Codebook,
                       path: Path) -> None:
    """`release_date` and its source by (YEAR, SAMPLE) from the release crosswalk (in place)."""
    keys = pd.DataFrame({"year": year.astype("int64"), "sample": sample})
    dated = keys.merge(book.release, on=["year", "sample"], how="left", validate="many_to_one")
    if dated["release_date"].isna().any():
        first = keys[dated["release_date"].isna().to_numpy()].iloc[0].tolist()
        raise DataError(f"{path}: YEAR {first[0]} does not match SAMPLE {first[1]} (the release "
                        "crosswalk covers 1990/199002 and 2000/200007 only)")
    out["release_date"] = pd.array(dated["release_date"].to_numpy(), dtype="string")
    out["release_date_source"] = pd.array(dated["source"].to_numpy(), dtype="string")


# --------------------------------------------------------------------------------------------
# Reading the extract


def _decompress(path: Path, folder: Path) -> Path:
    target = folder / (path.stem if path.suffix == ".gz" else path.name)
    try:
        with gzip.open(path, "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
    except (OSError, EOFError) as exc:
        raise DataError(f"{path}: not a readable gzip file ({exc}); download it again") from None
    return target


def check_dta_complete(dta: Path, source: Path) -> None:
    """A Stata 117-119 file records where each of its sections ends: a shorter file was cut."""
    size = dta.stat().st_size
    with dta.open("rb") as fh:
        head = fh.read(4096)
    if not head.startswith(b"<stata_dta>"):
        if size < 109:
            raise DataError(f"{source}: the Stata file inside is {size} bytes; it is cut off")
        return  # formats before 117 carry no map
    at = head.find(b"<map>")
    if at < 0 or len(head) < at + 5 + 14 * 8:
        raise DataError(f"{source}: the Stata file inside ends in its header ({size} bytes); "
                        "it is cut off, download the extract again")
    end = struct.unpack("<14Q", head[at + 5: at + 5 + 14 * 8])[13]
    if size < end:
        raise DataError(f"{source}: the Stata file inside ends early, at byte {size:,} of "
                        f"{end:,} ({100 * size / end:.0f}%); it is cut off, download it again")


def _stata_chunks(path: Path, chunk_rows: int, tables: dict) -> Iterator[pd.DataFrame]:
    with temp_dir(path.parent, "census_") as tmp:  # beside the extract; swept if killed
        dta = _decompress(path, tmp)
        check_dta_complete(dta, path)
        try:
            with pd.read_stata(dta, iterator=True, convert_categoricals=False) as reader:
                names = list(reader.variable_labels())
                value_labels = reader.value_labels()
        except (ValueError, OSError, struct.error, EOFError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}: not a readable Stata .dta inside the gzip ({exc})") from None
        lower = [c.lower() for c in SOURCE_COLUMNS]
        absent = [c.upper() for c in lower if c not in names]
        if absent:
            upper = [c for c in absent if c in names]
            hint = " (IPUMS writes lower-case names)" if upper else ""
            raise DataError(
                f"{path}: column {absent[0]} not found{hint} ({len(absent)} of the kept "
                f"variables missing); request it in the IPUMS USA extract from {SOURCE_URL}")
        book = make_codebook(value_labels, path, **tables)
        with pd.read_stata(dta, iterator=True, chunksize=chunk_rows, columns=lower,
                           convert_categoricals=False) as reader:
            records = iter(reader)
            while True:
                try:
                    chunk = next(records)
                except StopIteration:
                    break
                except (ValueError, struct.error, EOFError, UnicodeDecodeError) as exc:
                    raise DataError(f"{path}: the Stata data cannot be read ({exc})") from None
                chunk.columns = [c.upper() for c in chunk.columns]
                yield clean_chunk(chunk, book, path)
        if book.skipped[0]:
            log.debug("%s: %d person records of other samples skipped", path, book.skipped[0])


def _fixed_width_chunks(path: Path, ddi_path: Path | None, chunk_rows: int, tables: dict
                        ) -> Iterator[pd.DataFrame]:
    """IPUMS's fixed-width delivery: the DDI gives positions, implied decimals and labels."""
    from hhx.surveys.cps.ipums import read_ddi_codebook

    ddi_path = ddi_path or path.with_name(path.name.split(".dat")[0] + ".xml")
    if not ddi_path.is_file():
        raise DataError(f"{ddi_path}: the DDI codebook of {path.name} is not there; download the "
                        f".xml that {SOURCE_URL} gives with the extract (or set raw.census_ddi)")
    ddi = read_ddi_codebook(ddi_path)
    if ddi.file_description.structure != "rectangular":
        raise DataError(f"{ddi_path}: the extract is {ddi.file_description.structure}; request a "
                        "rectangular (person) extract")
    names = {d.name.upper() for d in ddi.data_description}
    absent = [c for c in SOURCE_COLUMNS if c not in names]
    if absent:
        raise DataError(f"{path}: column {absent[0]} not found ({len(absent)} of the kept "
                        f"variables missing); request it in the IPUMS USA extract")
    labels = {d.name.upper(): {code: label for label, code in d.codes.items()}
              for d in ddi.data_description if d.codes}
    book = make_codebook(labels, path, **tables)
    from ipumspy import readers

    try:
        for chunk in readers.read_microdata_chunked(ddi, path, chunksize=chunk_rows):
            chunk.columns = [c.upper() for c in chunk.columns]
            yield clean_chunk(chunk.reset_index(drop=True), book, path)
    except (ValueError, TypeError, EOFError, OSError) as exc:
        raise DataError(f"{path}: cannot be read with {ddi_path.name} ({exc})") from None


def iter_census(path: str | Path, *, release: pd.DataFrame, chunk_rows: int = 250_000,
                availability: dict[str, dict[int, bool]] | None = None,
                missing_codes: dict[str, set[float]] | None = None,
                ddi_path: Path | None = None) -> Iterator[pd.DataFrame]:
    """Cleaned chunks of the extract (`census.gz`, or a fixed-width `.dat(.gz)` + DDI)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(
            f"{p}: IPUMS USA census extract not found; request samples 1990 1% (199002) and 2000 "
            f"1% (200007) as Stata output with value labels from {SOURCE_URL} and save it there")
    tables = {
        "availability": read_availability(AVAILABILITY_PATH) if availability is None
        else availability,
        "missing_codes": read_missing_codes(MISSING_CODES_PATH) if missing_codes is None
        else missing_codes,
        "release": release,
    }
    if ".dat" in p.suffixes:
        yield from _fixed_width_chunks(p, ddi_path, chunk_rows, tables)
    else:
        yield from _stata_chunks(p, chunk_rows, tables)


# Packed person key: sample (< 2**20) | SERIAL (< 2**32) | PERNUM (< 2**11).
_SERIAL_BITS, _PERNUM_BITS = 32, 11


def person_key(chunk: pd.DataFrame, path: Path) -> np.ndarray:
    """(SAMPLE, SERIAL, PERNUM) packed into one int64 per row (YEAR is implied by SAMPLE)."""
    values = {c: pd.to_numeric(chunk[c]).to_numpy(dtype=np.int64) for c in KEY_COLUMNS[1:]}
    for name, bits in (("SAMPLE", 20), ("SERIAL", _SERIAL_BITS), ("PERNUM", _PERNUM_BITS)):
        bad = (values[name] < 0) | (values[name] >= 1 << bits)
        if bad.any():
            raise DataError(f"{path}: {name} {int(values[name][bad][0])} is outside the IPUMS "
                            f"range 0..{(1 << bits) - 1}; is this an IPUMS USA extract?")
    return ((values["SAMPLE"] << (_SERIAL_BITS + _PERNUM_BITS))
            | (values["SERIAL"] << _PERNUM_BITS) | values["PERNUM"])


def unpack_person_key(key: int) -> tuple[int, int, int, int]:
    sample = key >> (_SERIAL_BITS + _PERNUM_BITS)
    serial = (key >> _PERNUM_BITS) & ((1 << _SERIAL_BITS) - 1)
    return SAMPLES.get(sample, -1), sample, serial, key & ((1 << _PERNUM_BITS) - 1)


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read `survey.raw.census` (+ the crosswalk) and write `census_decennial.parquet`."""
    started = time.perf_counter()
    if not survey.raw.get("census"):
        raise ConfigError(
            f"survey {survey.name}: raw.census is not set; point it at micro/census/census.gz")
    path = raw_path(survey, "census", raw_dir)
    crosswalk = raw_path(survey, "release_dates", raw_dir,
                         hint="release_dates/release_census.csv")
    tables = {key: raw_path(survey, key, raw_dir) if survey.raw.get(key) else None
              for key in ("availability", "missing_codes")}
    availability = read_availability(tables["availability"]) if tables["availability"] else None
    missing = read_missing_codes(tables["missing_codes"]) if tables["missing_codes"] else None
    release = read_release_crosswalk(crosswalk)
    ddi = raw_path(survey, "census_ddi", raw_dir) if survey.raw.get("census_ddi") else None
    target = Path(out_dir) / f"{OUTPUT_NAME}.parquet"
    keys: list[np.ndarray] = []

    def chunks() -> Iterator[pd.DataFrame]:
        for chunk in iter_census(path, release=release, chunk_rows=survey.chunk_rows,
                                 availability=availability, missing_codes=missing,
                                 ddi_path=ddi):
            keys.append(person_key(chunk, path))
            yield chunk

    with atomic_path(target) as tmp:
        rows = write_parquet_chunks(tmp, chunks(), str(path), compression="snappy")
        if not rows:
            raise DataError(f"{path}: the extract holds no person records of the 1990 and 2000 "
                            "1% samples")
        packed = np.sort(np.concatenate(keys))
        same = np.flatnonzero(packed[1:] == packed[:-1])
        if len(same):
            year, sample, serial, pernum = unpack_person_key(int(packed[same[0]]))
            raise DataError(f"{path}: person (YEAR, SAMPLE, SERIAL, PERNUM) = "
                            f"{(year, sample, serial, pernum)} repeats; download it again")
    inputs = [path, crosswalk] + [p for p in tables.values() if p is not None]
    if ".dat" in path.suffixes:  # the DDI codebook decides positions and labels: provenance
        inputs.append(ddi or path.with_name(path.name.split(".dat")[0] + ".xml"))
    return finish_report(survey, {OUTPUT_NAME: target}, {OUTPUT_NAME: rows}, inputs, started)
