"""Decennial Census, IPUMS USA 1990 and 2000 1% samples -> `census_decennial.parquet`.

Facts: shared/spec/00_common.md 1.2 (Census row), 1.3 (Census row) and 1.7. `survey.raw.census`
is `micro/census/census.gz`: a gzip-compressed Stata .dta (rectangular persons, IPUMS variable
names, usually lower case) with embedded value labels. It is decompressed once to a temporary
file and read in chunks of `survey.chunk_rows`; output is written row group by row group, so
memory stays bounded by one chunk (the real file has about 5 million persons). IPUMS's other
delivery is read too: a fixed-width `.dat(.gz)` with its DDI codebook (`raw.census_ddi`, else
`<name>.xml` beside it), whose categories then serve as the value labels.

Per chunk: keep the 64 variables of KEEP_COLUMNS (names upper-cased); check SAMPLE (199002 ->
1990, 200007 -> 2000) against YEAR; set NIU/missing codes to NA (a value label that reads as
NIU, MANUAL_MISSING_CODES, and the optional `raw.missing_codes` CSV of the reference,
`variable,code,...`); blank variables a sample does not carry (the optional `raw.availability`
CSV, `variable,199002,200007` True/False); add `<VAR>_label` for LABEL_COLUMNS (a code without a
label there is an error), `<INC>_REAL99` = nominal x CPI99, `<INC>_TOPCODE_KNOWN`, and
`CORE_MISSING_BURDEN` = number of CORE_COLUMNS that are NA. (YEAR, SAMPLE, SERIAL, PERNUM) must
be unique over the file.
"""

from __future__ import annotations

import gzip
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.io import atomic_path, temp_dir, write_parquet_chunks
from hhx.surveys.base import BuildReport, finish_report

SOURCE_URL = "https://usa.ipums.org"
OUTPUT_NAME = "census_decennial"
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
LABEL_COLUMNS = [
    "SEX", "RACE", "RACED", "HISPAN", "HISPAND", "EDUC", "EDUCD", "STATEFIP", "REGION", "METRO",
    "OWNERSHP", "MIGRATE5", "MIGPLAC5", "MIGMETRO5", "MIGCITY5", "RELATE", "GQ",
]  # fmt: skip
INCOME_COLUMNS = ["INCTOT", "INCWAGE", "INCBUS", "INCFARM", "INCSS", "INCINVST", "INCRETIR"]
# Never NIU-coded: keys, weights and the deflator (a missing key is an error instead).
_NOT_RECODED = set(KEY_COLUMNS) | {"HHWT", "PERWT", "CPI99"}
_FLOAT_COLUMNS = {"HHWT", "PERWT", "CPI99"}
# Counted by CORE_MISSING_BURDEN: what the house_census_move prompt and universe need.
# (MIGPLAC5 is not counted: it is N/A by design for people who did not move between states.)
CORE_COLUMNS = ["AGE", "SEX", "RACE", "HISPAN", "EDUC", "STATEFIP", "MIGRATE5"]

# Codes the IPUMS USA codebook documents as N/A or missing but whose Stata label does not say
# so (or that carry no label at all in the extract).
MANUAL_MISSING_CODES: dict[str, set[int]] = {
    "INCTOT": {9999999},
    "INCWAGE": {999999, 999998},
    "INCBUS": {999999},
    "INCFARM": {999999},
    "INCSS": {99999},
    "INCINVST": {999999},
    "INCRETIR": {999999},
    "VALUEH": {9999999, 9999998},
    "OCC": {0},
    "IND": {0},
    "POVERTY": {0},
}
# A label is NIU-like when it starts with one of these phrases and is not an "X or Y" label
# such as EDUC 0 "N/A or no schooling", which carries a real answer.
_NIU_LABEL = re.compile(
    r"^\s*(n/?a\b|niu\b|not in universe|not applicable|missing|unknown|not reported|blank|"
    r"illegible|suppressed)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TopCodeRule:
    column: str
    sample: int
    threshold: float
    inclusive: bool  # value >= threshold (else >)


# Published IPUMS USA top codes known for these samples; other INC variables get no flag column.
TOPCODE_RULES: list[TopCodeRule] = [
    TopCodeRule("INCTOT", 199002, 400000, False),
    TopCodeRule("INCTOT", 200007, 999998, True),
    TopCodeRule("INCWAGE", 199002, 140000, True),
    TopCodeRule("INCWAGE", 200007, 175000, True),
]


def is_niu_label(label: str) -> bool:
    return bool(_NIU_LABEL.match(label)) and " or " not in label.lower()


def _decompress(path: Path, folder: Path) -> Path:
    target = folder / (path.stem if path.suffix == ".gz" else path.name)
    try:
        with gzip.open(path, "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
    except (OSError, EOFError) as exc:
        raise DataError(f"{path}: not a readable gzip file ({exc}); download it again") from None
    return target


def read_availability(path: Path) -> dict[str, dict[int, bool]]:
    """The reference `census_availability.csv` (variable,199002,200007 with True/False)."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    wanted = ["variable"] + [str(s) for s in SAMPLES]
    for column in wanted:
        if column not in frame.columns:
            raise DataError(f"{path}: column {column!r} not found; expected {','.join(wanted)}")
    out: dict[str, dict[int, bool]] = {}
    for record in frame.to_dict("records"):
        variable = str(record["variable"]).strip().upper()
        flags = {}
        for sample in SAMPLES:
            text = str(record[str(sample)]).strip().lower()
            if text not in {"true", "false"}:
                raise DataError(
                    f"{path}: availability {text!r} of {variable} for {sample} is not True/False"
                )
            flags[sample] = text == "true"
        out[variable] = flags
    return out


def read_missing_codes(path: Path) -> dict[str, set[int]]:
    """The reference `census_missing_codes.csv` (variable,code,code_numeric,label,source)."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    for column in ("variable", "code_numeric"):
        if column not in frame.columns:
            raise DataError(f"{path}: column {column!r} not found")
    codes = pd.to_numeric(frame["code_numeric"], errors="coerce")
    if codes.isna().any():
        bad = frame["code_numeric"][codes.isna()].iloc[0]
        raise DataError(f"{path}: code_numeric {bad!r} is not a number")
    out: dict[str, set[int]] = {}
    for variable, code in zip(frame["variable"].str.strip().str.upper(), codes, strict=True):
        out.setdefault(variable, set()).add(int(code))
    return out


@dataclass
class _Codebook:
    labels: dict[str, dict[int, str]]  # upper-case variable -> code -> label
    missing: dict[str, set[int]]  # upper-case variable -> NA codes
    source_names: dict[str, str]  # upper-case -> name in the file


def _stata_labels(reader) -> tuple[list[str], dict[str, dict[int, str]]]:
    """Variable names and, per variable, the value labels attached to it in a .dta."""
    names = list(reader.variable_labels())
    by_label_name = reader.value_labels()
    # The label set attached to each variable (IPUMS names it <var>_lbl, pandas <var>).
    attached = getattr(reader, "_lbllist", None) or []
    labels: dict[str, dict[int, str]] = {}
    for i, name in enumerate(names):
        candidates = [attached[i]] if i < len(attached) and attached[i] else []
        candidates += [name, f"{name}_lbl"]
        for label_name in candidates:
            if label_name in by_label_name:
                labels[name] = {int(k): str(v) for k, v in by_label_name[label_name].items()}
                break
    return names, labels


def _ddi_labels(ddi) -> tuple[list[str], dict[str, dict[int, str]]]:
    """Variable names and value labels (DDI categories) of an IPUMS DDI codebook."""
    names = [d.name for d in ddi.data_description]
    labels = {d.name: {int(code): str(label) for label, code in d.codes.items()}
              for d in ddi.data_description if d.codes}
    return names, labels


def _codebook(
    names: list[str], labels_by_name: dict[str, dict[int, str]], path: Path,
    extra_missing: dict[str, set[int]],
) -> _Codebook:
    upper = {n.upper(): n for n in names}
    absent = [c for c in KEEP_COLUMNS if c not in upper]
    if absent:
        raise DataError(
            f"{path}: column {absent[0]} not found ({len(absent)} of the 64 kept variables "
            f"missing); request it in the IPUMS USA extract from {SOURCE_URL}"
        )
    labels = {name.upper(): codes for name, codes in labels_by_name.items()}
    missing: dict[str, set[int]] = {}
    for column in KEEP_COLUMNS:
        if column in _NOT_RECODED:
            continue
        codes = {k for k, v in labels.get(column, {}).items() if is_niu_label(v)}
        codes |= MANUAL_MISSING_CODES.get(column, set()) | extra_missing.get(column, set())
        missing[column] = codes
    return _Codebook(labels, missing, {c: upper[c] for c in KEEP_COLUMNS})


def clean_chunk(
    raw: pd.DataFrame, book: _Codebook, availability: dict[str, dict[int, bool]], path: Path
) -> pd.DataFrame:
    """One chunk of the raw extract -> the output columns (see the module docstring)."""
    frame = pd.DataFrame({c: raw[book.source_names[c]] for c in KEEP_COLUMNS})
    for column in KEY_COLUMNS:
        if frame[column].isna().any():
            raise DataError(f"{path}: column {column} has a missing value; keys must be complete")
    sample = frame["SAMPLE"].astype("int64")
    bad = ~sample.isin(list(SAMPLES))
    if bad.any():
        raise DataError(
            f"{path}: column SAMPLE has code {sample[bad].iloc[0]} outside the codebook; "
            f"expected {sorted(SAMPLES)} (IPUMS USA 1990 and 2000 1% samples)"
        )
    year = frame["YEAR"].astype("int64")
    wrong = year != sample.map(SAMPLES)
    if wrong.any():
        raise DataError(
            f"{path}: column YEAR is {year[wrong].iloc[0]} for SAMPLE {sample[wrong].iloc[0]}"
        )
    out = pd.DataFrame(index=frame.index)
    for column in KEEP_COLUMNS:
        values = frame[column]
        if column in _FLOAT_COLUMNS:
            out[column] = values.astype("float64")
            continue
        numeric = values.astype("Float64")
        if column not in _NOT_RECODED:
            numeric = numeric.mask(numeric.isin(sorted(book.missing.get(column, set()))))
            for code, flags in availability.get(column, {}).items():
                if not flags:
                    numeric = numeric.mask(sample == code)
        whole = numeric.dropna()
        if (whole != whole.round()).any():
            odd = whole[whole != whole.round()].iloc[0]
            raise DataError(f"{path}: column {column} has non-integer code {odd}")
        out[column] = numeric.round().astype("Int64")
    for column in LABEL_COLUMNS:
        codebook = book.labels.get(column)
        if not codebook:
            raise DataError(
                f"{path}: column {column} has no value labels; request Stata output with value "
                f"labels (or the fixed-width file with its DDI codebook) from {SOURCE_URL}"
            )
        codes = out[column]
        text = codes.map(codebook, na_action="ignore")
        unknown = codes.notna() & text.isna()
        if unknown.any():
            raise DataError(
                f"{path}: column {column} has code {codes[unknown].iloc[0]} outside the codebook "
                f"(no value label); check the extract against {SOURCE_URL}"
            )
        out[f"{column}_label"] = text.astype("string")
    for column in INCOME_COLUMNS:
        out[f"{column}_REAL99"] = out[column].astype("Float64") * out["CPI99"]
    for column in sorted({r.column for r in TOPCODE_RULES}):
        flag = pd.Series(False, index=out.index, dtype="boolean")
        values = out[column]
        for rule in (r for r in TOPCODE_RULES if r.column == column):
            hit = values >= rule.threshold if rule.inclusive else values > rule.threshold
            flag = flag | (hit & (sample == rule.sample)).fillna(False)
        out[f"{column}_TOPCODE_KNOWN"] = flag.mask(values.isna())
    out["CORE_MISSING_BURDEN"] = out[CORE_COLUMNS].isna().sum(axis=1).astype("int64")
    return out.reset_index(drop=True)


# Packed person key: sample (a 6-digit IPUMS code, < 2**20) | SERIAL (< 2**32) | PERNUM
# (< 2**11); YEAR follows from the sample.
_SERIAL_BITS, _PERNUM_BITS = 32, 11


def person_key(chunk: pd.DataFrame, path: Path) -> np.ndarray:
    """(SAMPLE, SERIAL, PERNUM) packed into one int64 per row (YEAR is implied by SAMPLE)."""
    sample = chunk["SAMPLE"].to_numpy(dtype=np.int64)
    serial = chunk["SERIAL"].to_numpy(dtype=np.int64)
    pernum = chunk["PERNUM"].to_numpy(dtype=np.int64)
    for name, values, bits in (("SAMPLE", sample, 20), ("SERIAL", serial, _SERIAL_BITS),
                               ("PERNUM", pernum, _PERNUM_BITS)):
        bad = (values < 0) | (values >= 1 << bits)
        if bad.any():
            raise DataError(f"{path}: {name} {int(values[bad][0])} is outside the IPUMS range "
                            f"0..{(1 << bits) - 1}; is this an IPUMS USA extract?")
    return (sample << (_SERIAL_BITS + _PERNUM_BITS)) | (serial << _PERNUM_BITS) | pernum


def unpack_person_key(key: int) -> tuple[int, int, int, int]:
    sample = key >> (_SERIAL_BITS + _PERNUM_BITS)
    serial = (key >> _PERNUM_BITS) & ((1 << _SERIAL_BITS) - 1)
    return SAMPLES.get(sample, -1), sample, serial, key & ((1 << _PERNUM_BITS) - 1)


def iter_census(
    path: str | Path,
    *,
    chunk_rows: int = 250_000,
    availability: dict[str, dict[int, bool]] | None = None,
    extra_missing: dict[str, set[int]] | None = None,
    ddi_path: Path | None = None,
) -> Iterator[pd.DataFrame]:
    """Cleaned chunks of the extract: `census.gz` (gzip Stata; the temporary .dta is removed
    when iteration ends) or a fixed-width `.dat(.gz)` read through its DDI codebook."""
    p = Path(path)
    if not p.is_file():
        raise DataError(
            f"{p}: IPUMS USA census extract not found; request samples 1990 1% (199002) and 2000 "
            f"1% (200007) as Stata output with value labels from {SOURCE_URL} and save it there"
        )
    if ".dat" in p.suffixes:
        yield from _iter_fixed_width(p, ddi_path, chunk_rows, availability or {},
                                     extra_missing or {})
        return
    with temp_dir(p.parent, "census_") as tmp:  # beside the extract; swept if killed
        dta = _decompress(p, tmp)
        try:
            reader_cm = pd.read_stata(
                dta, iterator=True, chunksize=chunk_rows, convert_categoricals=False
            )
        except (ValueError, OSError) as exc:
            raise DataError(f"{p}: not a Stata .dta inside the gzip ({exc})") from None
        with reader_cm as reader:
            book = _codebook(*_stata_labels(reader), p, extra_missing or {})
            for chunk in reader:
                yield clean_chunk(chunk, book, availability or {}, p)


def _iter_fixed_width(
    path: Path, ddi_path: Path | None, chunk_rows: int,
    availability: dict[str, dict[int, bool]], extra_missing: dict[str, set[int]],
) -> Iterator[pd.DataFrame]:
    """IPUMS's fixed-width delivery: the DDI (`raw.census_ddi`, else `<name>.xml` beside the
    data) gives positions, implied decimals and value labels."""
    from hhx.surveys.ipums_cps import read_ddi_codebook

    ddi_path = ddi_path or path.with_name(path.name.split(".dat")[0] + ".xml")
    if not ddi_path.is_file():
        raise DataError(f"{ddi_path}: the DDI codebook of {path.name} is not there; download the "
                        f".xml that {SOURCE_URL} gives with the extract (or set raw.census_ddi)")
    ddi = read_ddi_codebook(ddi_path)
    if ddi.file_description.structure != "rectangular":
        raise DataError(f"{ddi_path}: the extract is {ddi.file_description.structure}; request a "
                        "rectangular (person) extract")
    book = _codebook(*_ddi_labels(ddi), path, extra_missing)
    from ipumspy import readers

    try:
        for chunk in readers.read_microdata_chunked(ddi, path, chunksize=chunk_rows):
            yield clean_chunk(chunk.reset_index(drop=True), book, availability, path)
    except (ValueError, TypeError) as exc:
        raise DataError(f"{path}: cannot be read with {ddi_path.name} ({exc})") from None


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read `survey.raw.census` and write `census_decennial.parquet` atomically."""
    started = time.perf_counter()
    if "census" not in survey.raw:
        raise ConfigError(
            f"survey {survey.name}: raw.census is not set; point it at micro/census/census.gz"
        )

    def resolve(text: str) -> Path:
        p = Path(text).expanduser()
        return p if p.is_absolute() else Path(raw_dir) / p

    path = resolve(survey.raw["census"])
    availability = (
        read_availability(resolve(survey.raw["availability"]))
        if survey.raw.get("availability")
        else {}
    )
    extra = (
        read_missing_codes(resolve(survey.raw["missing_codes"]))
        if survey.raw.get("missing_codes")
        else {}
    )
    ddi = resolve(survey.raw["census_ddi"]) if survey.raw.get("census_ddi") else None
    target = Path(out_dir) / f"{OUTPUT_NAME}.parquet"
    keys: list[np.ndarray] = []

    def chunks() -> Iterator[pd.DataFrame]:
        for chunk in iter_census(path, chunk_rows=survey.chunk_rows, availability=availability,
                                 extra_missing=extra, ddi_path=ddi):
            keys.append(person_key(chunk, path))
            yield chunk

    with atomic_path(target) as tmp:
        rows = write_parquet_chunks(tmp, chunks(), str(path), compression="snappy")
        if not rows:
            raise DataError(f"{path}: the extract holds no person records")
        # One packed int64 per person, sorted: 8 bytes a record instead of a 4-column frame
        # and its hash table (the real extract has 13 million persons).
        packed = np.sort(np.concatenate(keys))
        same = np.flatnonzero(packed[1:] == packed[:-1])
        if len(same):
            year, sample, serial, pernum = unpack_person_key(int(packed[same[0]]))
            raise DataError(
                f"{path}: person (YEAR, SAMPLE, SERIAL, PERNUM) = {(year, sample, serial, pernum)} "
                "repeats; download the extract again"
            )
    inputs = [path] + [resolve(survey.raw[k]) for k in ("availability", "missing_codes")
                       if survey.raw.get(k)]
    if ".dat" in path.suffixes:  # the DDI codebook decides positions and labels: provenance
        inputs.append(ddi or path.with_name(path.name.split(".dat")[0] + ".xml"))
    return finish_report(survey, {OUTPUT_NAME: target}, {OUTPUT_NAME: rows}, inputs, started)
