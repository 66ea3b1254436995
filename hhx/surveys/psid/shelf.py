"""PSID-SHELF 1968-2021 + Complete Main Study -> `psid_main.parquet` + `psid_main_metadata.json`.

Facts: shared/spec/00_common.md 1.1 (input fingerprint), 1.2 and 1.3 (PSID rows), 1.10 (PSID
details), 2 (PSID wave schedule); 10_tasks_cons_house_income.md 7 (PSID common facts and labels)
with the tasks cons_psid_wealth, house_psid_owner, income_psid_earnings, cons_psid_jobloss, and
20_tasks_labor_macro.md 6 (labor_psid_addedworker), which fix the columns kept below.

Inputs (`survey.raw.<key>`, relative to data.raw_dir), both ZIPs read compressed, never unpacked:
- `shelf_long`: `PSIDSHELF_1968_2021_LONG_7.9_GB.zip`, member `PSIDSHELF_1968_2021_LONG.dta`, the
  PSID-SHELF long file (one row per person x wave, SHELF names such as `wlth_tot_net_nd`);
- `main_study`: `Construction_Files/Data/PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL_10.8_GB.zip`,
  member `PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL.dta`, the cross-year PSID file (one row per
  person, PSID V-variable names; family variables repeated on each member of the family);
- optional `main_study_vars`: the V-variable map (default: `psid_main_study_vars.csv` shipped
  next to this module, columns concept, role, survey_year, variable, accuracy_variable, topcode,
  reference_period, annualisation_factor, questionnaire_item);
- `release_dates`: the reference's `release_psid.csv` crosswalk (year, release_date, source,
  source_url, comments; read by hhx.surveys.macro.release_dates as the reference's reader reads it:
  exactly the wave schedule, no empty source). The reference's builder requires it, and so does
  hhx by default (conf/survey/psid.yaml names `release_dates/release_psid.csv`); setting it to
  null (an hhx option, off by default) leaves release_date and release_date_source null.

The members are read strictly forward by hhx.surveys.psid.dta (which also computes the spec-1.1
fingerprint); the Complete Main Study variable map, its pass and the enrichment columns are in
hhx.surveys.psid.main_study. This module holds the SHELF pass and `build`.

Output `psid_main.parquet`, one row per person x wave in file order:
- every SHELF column, in file order, names lower-cased (as the reference keeps them all; the
  REQUIRED_COLUMNS must be there): `id`, `year` int64, the CODE_COLUMNS Int64 (a fraction is an
  error), VALUE_COLUMNS float64, other numbers Int64 (Stata integer types) or float64, text as
  string (strL texts resolved). Waves outside the schedule (1968-1997 annual, 1999-2021
  biennial) or a missing wave are errors;
- derived (spec 1.10), in the reference's order: `subsample` from `lineage` ranges,
  `sample_person` (sampstat != 0; as in the reference, a missing sampstat also differs from 0),
  `is_reference_person` (rel == 1), `income_year` (year - 1), `<var>_label` for LABELS as
  categoricals with the codebook's categories (the spec's text, which the task prompts quote;
  the file's own Stata value labels are compared with it and differences listed in the metadata;
  a code without a label is an error), `occ_major_harmonized` (categorical), `occ_source`,
  `occ_major_harmonized_label` (categorical) from occ_2010c_1m, else occ_2000c_1m, else
  occ_1970c;
- `release_date`, `release_date_source` (the crosswalk's date and `source` text);
- ENRICHMENT_COLUMNS on rows of current family members (panel_current == 1, fuid present), null
  elsewhere (hhx.surveys.psid.main_study documents the family roles, the Complete Main Study
  values and their validity rules). Earnings stay as published; the tasks treat
  earn_tot_nd == 9,999,999 (top code) as missing; the metadata counts such rows.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.io import atomic_path, temp_dir, write_parquet_chunks
from hhx.surveys.base import (
    BuildReport,
    finish_report,
    has_synthetic_sidecar,
    input_sha256,
    raw_path,
)
from hhx.surveys.macro.release_dates import read_release_crosswalk
from hhx.surveys.psid.codes import (
    LABELS,
    OCC_LABELS,
    derive_subsample,
    harmonize_occupation,
)
from hhx.surveys.psid.dta import (
    _NUMERIC,
    SOURCE_URL,
    DtaStream,
    _column_map,
    _fingerprint,
    open_member,
)
from hhx.surveys.psid.main_study import (
    DEFAULT_VARIABLE_MAP,
    ENRICHMENT_COLUMNS,
    EXPECTED_WAVES,
    FOOD_UNAVAILABLE_WAVES,
    MAIN_STUDY_MEMBER,
    MainStudyVar,
    _main_study_names,
    _MainStudyPass,
    enrichment_lookup,
    read_main_study,
    read_variable_map,
)

OUTPUT_NAME = "psid_main"
METADATA_FILE = "psid_main_metadata.json"
LONG_MEMBER = "PSIDSHELF_1968_2021_LONG.dta"

EARNINGS_TOPCODE = 9_999_999
QUALIFYING_REASONS = {1: "plant_closure_or_employer_move", 3: "layoff_or_firing"}

KEY_COLUMNS = ("id", "year")
# Integer codes (Int64; a fraction is an error).
CODE_COLUMNS = (
    "fuid", "rel", "sampstat", "lineage", "response", "panel_current", "demo_sex",
    "race_eth_maj_col", "geo_region", "geo_metro", "edu_level_max", "emp_work", "home_stat",
    "fam_partnered", "fam_married", "occ_2010c_1m", "occ_2000c_1m", "occ_1970c",
)  # fmt: skip
# Amounts, ages, counts and weights (float64; a string variable is kept as text).
VALUE_COLUMNS = (
    "fw", "demo_age_gen", "edu_year", "edu_year_max", "fam_size", "fam_size_chi",
    "earn_tot_nd", "earn_tot_ndf", "finc_tot_nd", "finc_tot_rd",
    "wlth_tot_net_nd", "wlth_tot_net_rd", "wlth_savi_net_nd", "wlth_savi_net_rd",
    "wlth_inve_net_nd", "wlth_inve_net_rd", "wlth_home_net_nd", "wlth_home_net_rd",
    "wlth_odeb_net_nd",
)  # fmt: skip
REQUIRED_COLUMNS = KEY_COLUMNS + CODE_COLUMNS + VALUE_COLUMNS
# Release identifiers of the SHELF file: first row's values go to the metadata.
METADATA_SCALARS = ("psid_retrieve", "psidshelf_compile", "psidshelf_release")

DERIVED_COLUMNS = (
    "subsample", "sample_person", "is_reference_person", "income_year",
    *(f"{v}_label" for v in LABELS), "occ_major_harmonized", "occ_source",
    "occ_major_harmonized_label",
)  # fmt: skip
RELEASE_COLUMNS = ("release_date", "release_date_source")


# ---------------------------------------------------------------------------------------------
# PSID-SHELF long file


def _as_codes(values: np.ndarray, column: str, where: str) -> pd.Series:
    series = pd.Series(values)
    if series.dtype == object:
        raise DataError(f"{where}: column {column} is text; expected numeric codes")
    whole = series.dropna()
    odd = whole != np.round(whole)
    if odd.any():
        raise DataError(f"{where}: column {column} has non-integer code {whole[odd].iloc[0]}")
    return series.round().astype("Int64")


def _label_categorical(codes: pd.Series, labels: dict[int, str]) -> pd.Categorical:
    """Codes -> label text as a categorical with the codebook's labels as categories in code
    order (the reference's dtype)."""
    return pd.Categorical(codes.map(labels), categories=[labels[k] for k in sorted(labels)])


def _shelf_chunk(raw: dict[str, np.ndarray], names: dict[str, str], kinds: dict[str, str],
                 where: str) -> pd.DataFrame:
    """One block of the SHELF file -> every column (file order, lower-case names, typed) and
    the derived columns (module docstring). `kinds`: lower name -> int/float/string/strl."""
    out: dict[str, Any] = {}
    for column, kind in kinds.items():
        values = raw[names[column]]
        if column in KEY_COLUMNS:
            series = pd.Series(values)
            bad = series.isna() | (series != np.round(series))
            if bad.any():
                raise DataError(f"{where}: column {column} is missing or not an integer in some "
                                "row")
            out[column] = series.astype("int64")
        elif column in CODE_COLUMNS:
            out[column] = _as_codes(values, column, where)
        elif kind == "strl":  # references; the text is resolved once the file is read
            out[column] = pd.Series(values, dtype="int64")
        elif kind == "string":
            out[column] = pd.Series(values, dtype="string")
        elif kind == "int" and column not in VALUE_COLUMNS:
            out[column] = pd.Series(values).astype("Int64")
        else:
            out[column] = pd.Series(values, dtype="float64")
    year = out["year"]
    odd = ~year.isin(EXPECTED_WAVES)
    if odd.any():
        raise DataError(
            f"{where}: wave {int(year[odd].iloc[0])} is not in the PSID wave schedule "
            "(1968-1997 annual, 1999-2021 biennial); check the file against the release"
        )
    frame = pd.DataFrame(out)
    frame["subsample"] = derive_subsample(frame["lineage"])
    # As the reference: sampstat != 0, where a missing sampstat also differs from 0.
    frame["sample_person"] = frame["sampstat"].astype("float64").ne(0).astype(bool)
    frame["is_reference_person"] = frame["rel"].eq(1).fillna(False).astype(bool)
    frame["income_year"] = (frame["year"] - 1).astype("Int64")
    for column, labels in LABELS.items():
        codes = frame[column]
        unknown = codes.notna() & ~codes.isin(list(labels))
        if unknown.any():
            raise DataError(
                f"{where}: column {column} has code {codes[unknown].iloc[0]} outside the codebook "
                f"(valid: {sorted(labels)})"
            )
        frame[f"{column}_label"] = _label_categorical(codes, labels)
    group, source = harmonize_occupation(frame)
    frame["occ_major_harmonized"] = pd.Categorical(group.astype(object).where(group.notna()),
                                                   categories=list(OCC_LABELS))
    frame["occ_source"] = source
    frame["occ_major_harmonized_label"] = pd.Categorical(
        group.map(OCC_LABELS).astype(object).where(group.notna()),
        categories=list(OCC_LABELS.values()))
    return frame


@dataclass
class _ShelfPass:
    rows: int
    persons: int
    rows_by_wave: dict[int, int]
    subsamples: dict[str, int]
    current: pd.DataFrame  # id, year, fuid, rel, demo_age_gen, demo_sex, demo_sex_label
    earnings_at_topcode: int
    columns: list[str]  # every SHELF column, lower-case, in file order
    strl_columns: list[str]
    strl_text: dict[int, str]
    scalars: dict[str, Any]
    file_labels: dict[str, dict[int, str]]
    data_label: str
    release: int
    nvar: int
    sha256: str
    member: str


def _scalar(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    number = float(value)
    return int(number) if number.is_integer() else number


def _shelf_names(stream: DtaStream) -> dict[str, str]:
    """lower-case -> file name of the SHELF variables; a required one missing is an error."""
    names = _column_map(stream, stream.where)
    absent = [c for c in REQUIRED_COLUMNS if c not in names]
    if absent:
        raise DataError(
            f"{stream.where}: column {absent[0]} not found ({len(absent)} required SHELF "
            f"variables missing); download the PSID-SHELF V2 long file from {SOURCE_URL}"
        )
    return names


def _kinds(stream: DtaStream, names: dict[str, str]) -> dict[str, str]:
    """lower name -> int / float / string / strl, in file order."""
    out = {}
    for low, name in names.items():
        kind = stream.kind(name)
        if kind == "number":
            t = stream.types[stream.names.index(name)]
            kind = "float" if _NUMERIC[t][0] == "f" else "int"
        out[low] = {"strL": "strl"}.get(kind, kind)
    return out


def read_shelf(zip_path: Path, target: Path, chunk_rows: int) -> _ShelfPass:
    """Stream the SHELF long member, every column, into `target` (parquet, one row group per
    block); strL columns hold references there until `_resolve_strls`."""
    with open_member(zip_path, LONG_MEMBER, "PSID-SHELF long archive") as member:
        stream = member.stream
        where = stream.where
        names = _shelf_names(stream)
        kinds = _kinds(stream, names)
        strl_columns = [c for c, k in kinds.items() if k == "strl"]
        scalars = [c for c in METADATA_SCALARS if c in names]
        wanted = list(stream.names)
        keys: list[np.ndarray] = []
        current: list[pd.DataFrame] = []
        waves: Counter[int] = Counter()
        subsamples: Counter[str] = Counter()
        first: dict[str, Any] = {}
        topcoded = 0

        def chunks() -> Iterator[pd.DataFrame]:
            nonlocal first, topcoded
            for raw in stream.rows(wanted, chunk_rows):
                if not first and len(raw[wanted[0]]):
                    first = {c: _scalar(raw[names[c]][0]) for c in scalars}
                frame = _shelf_chunk(raw, names, kinds, where)
                keys.append((frame["id"] * 10_000 + frame["year"]).to_numpy())
                waves.update(frame["year"].value_counts().to_dict())
                subsamples.update(frame["subsample"].value_counts().to_dict())
                topcoded += int(frame["earn_tot_nd"].eq(EARNINGS_TOPCODE).sum())
                now = frame["panel_current"].eq(1).fillna(False) & frame["fuid"].notna()
                current.append(
                    frame.loc[now, ["id", "year", "fuid", "rel", "demo_age_gen", "demo_sex",
                                    "demo_sex_label"]]
                )
                yield frame

        written = write_parquet_chunks(target, chunks(), where)
        file_labels = stream.finish(labels=True, strls=bool(strl_columns))
        strl_text = stream.strl_text
        sha = _fingerprint(member)
    if not written:
        raise DataError(f"{where}: the SHELF file holds no rows")
    for column in strl_columns:
        if column in first and first[column] is not None:
            first[column] = strl_text.get(int(first[column]))
    all_keys = np.concatenate(keys)
    unique_keys, counts = np.unique(all_keys, return_counts=True)
    if (counts > 1).any():
        key = int(unique_keys[counts > 1][0])
        raise DataError(f"{where}: person id {key // 10_000} appears twice in wave {key % 10_000}")
    missing = [w for w in EXPECTED_WAVES if w not in waves]
    if missing:
        raise DataError(
            f"{where}: wave(s) {', '.join(map(str, missing))} of the PSID schedule are missing "
            "(expected 1968-1997 annual and 1999-2021 biennial); the file is incomplete"
        )
    lower_labels = {k.lower(): v for k, v in file_labels.items()}
    return _ShelfPass(
        rows=len(all_keys),
        persons=int(np.unique(unique_keys // 10_000).size),
        rows_by_wave={int(w): int(waves[w]) for w in sorted(waves)},
        subsamples={str(k): int(v) for k, v in sorted(subsamples.items())},
        current=pd.concat(current, ignore_index=True),
        earnings_at_topcode=topcoded,
        columns=list(kinds),
        strl_columns=strl_columns,
        strl_text=strl_text,
        scalars=first,
        file_labels=lower_labels,
        data_label=stream.data_label,
        release=stream.release,
        nvar=stream.nvar,
        sha256=sha,
        member=member.member,
    )


def _fixed_categories(frame: pd.DataFrame) -> pd.DataFrame:
    """Label columns read back from a row group: the codebook's full category list again."""
    for column, labels in LABELS.items():
        frame[f"{column}_label"] = pd.Categorical(
            frame[f"{column}_label"].astype(object), categories=[labels[k] for k in sorted(labels)])
    frame["occ_major_harmonized"] = pd.Categorical(frame["occ_major_harmonized"].astype(object),
                                                   categories=list(OCC_LABELS))
    frame["occ_major_harmonized_label"] = pd.Categorical(
        frame["occ_major_harmonized_label"].astype(object), categories=list(OCC_LABELS.values()))
    return frame


def _resolve_strls(frame: pd.DataFrame, shelf: _ShelfPass, where: str) -> None:
    """strL references -> their text (in place); a reference without text is an error."""
    for column in shelf.strl_columns:
        refs = frame[column]
        text = refs.map(shelf.strl_text)
        lost = text.isna() & refs.notna()
        if lost.any():
            raise DataError(f"{where}: strL {column} refers to text missing from the file's strL "
                            "table; the file is damaged, download it again")
        frame[column] = text.astype("string")


def compare_labels(file_labels: dict[str, dict[int, str]]) -> dict[str, Any]:
    """Per label variable: 'same', 'absent' (no value labels in the file) or the codes whose
    text differs from the spec ([spec text, file text])."""
    out: dict[str, Any] = {}
    for column, spec in LABELS.items():
        found = file_labels.get(column)
        if not found:
            out[column] = "absent"
            continue
        differ = {str(code): [text, found.get(code)] for code, text in spec.items()
                  if found.get(code) != text}
        out[column] = differ or "same"
    return out


# ---------------------------------------------------------------------------------------------
# Release dates


def read_release_dates(path: Path) -> tuple[dict[int, str], dict[int, str]]:
    """year -> ISO release date and year -> source label, from the reference crosswalk
    (validated by hhx.surveys.macro.release_dates: exactly the wave schedule, ISO dates)."""
    table = read_release_crosswalk("psid", path)
    years = table["year"].astype(int).tolist()
    return (dict(zip(years, table["release_date"], strict=True)),
            dict(zip(years, table["release_date_source"], strict=True)))


# ---------------------------------------------------------------------------------------------
# Build


def preflight(
    long_zip: Path, main_zip: Path, varmap: dict[tuple[str, str, int], MainStudyVar]
) -> None:
    """Check both members' headers (names, required variables) before the long read."""
    with open_member(long_zip, LONG_MEMBER, "PSID-SHELF long archive") as member:
        _shelf_names(member.stream)
    with open_member(main_zip, MAIN_STUDY_MEMBER, "PSID Complete Main Study archive") as member:
        _main_study_names(member.stream, varmap)


def _resolve(survey: SurveyConfig, key: str, raw_dir: Path) -> Path | None:
    return raw_path(survey, key, raw_dir) if survey.raw.get(key) else None


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read both PSID-SHELF archives; write `psid_main.parquet` and its metadata atomically."""
    started = time.perf_counter()
    long_zip = raw_path(survey, "shelf_long", raw_dir,
                        "micro/psid-shelf/PSIDSHELF_1968_2021_LONG_7.9_GB.zip")
    main_zip = raw_path(
        survey, "main_study", raw_dir,
        "micro/psid-shelf/Construction_Files/Data/"
        "PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL_10.8_GB.zip",
    )
    map_path = _resolve(survey, "main_study_vars", raw_dir) or DEFAULT_VARIABLE_MAP
    varmap = read_variable_map(map_path)
    release_path = _resolve(survey, "release_dates", raw_dir)
    dates, date_sources = read_release_dates(release_path) if release_path else ({}, {})
    preflight(long_zip, main_zip, varmap)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{OUTPUT_NAME}.parquet"
    # The SHELF pass is staged next to the output (same disk), then joined with the enrichment.
    with temp_dir(out_dir, "psid_build_") as tmp:  # swept by the next run if killed
        staged = Path(tmp) / "shelf.parquet"
        shelf = read_shelf(long_zip, staged, survey.chunk_rows)
        main = read_main_study(main_zip, varmap)
        lookup, stats = enrichment_lookup(shelf.current, main, varmap,
                                          f"{long_zip}!{shelf.member}")
        synthetic = has_synthetic_sidecar(long_zip) or has_synthetic_sidecar(main_zip)
        metadata = _metadata(shelf, main, stats, varmap, long_zip, main_zip, map_path,
                             release_path, synthetic)
        def enriched() -> Iterator[pd.DataFrame]:
            for batch in pq.ParquetFile(staged).iter_batches(batch_size=survey.chunk_rows):
                frame = _fixed_categories(batch.to_pandas())
                _resolve_strls(frame, shelf, f"{long_zip}!{shelf.member}")
                keys = pd.MultiIndex.from_arrays([frame["id"], frame["year"]])
                added = lookup.reindex(keys).reset_index(drop=True)
                frame["release_date"] = frame["year"].map(dates).astype("string")
                frame["release_date_source"] = frame["year"].map(date_sources).astype("string")
                yield pd.concat([frame, added], axis=1)

        # Both files appear together (renamed at the end of the block) or neither does.
        with atomic_path(out_dir / METADATA_FILE) as meta_tmp, atomic_path(target) as out:
            rows = write_parquet_chunks(out, enriched(), f"{long_zip}!{shelf.member}")
            metadata["build_seconds"] = round(time.perf_counter() - started, 3)
            meta_tmp.write_text(json.dumps(metadata, indent=2, allow_nan=False) + "\n",
                                encoding="utf-8")
    inputs = {str(long_zip): shelf.sha256, str(main_zip): main.sha256}  # computed while read
    for extra in (p for p in (map_path, release_path) if p is not None):
        inputs[str(extra)] = input_sha256(extra)
    return finish_report(survey, {OUTPUT_NAME: target}, {OUTPUT_NAME: rows}, inputs, started)


def _metadata(
    shelf: _ShelfPass,
    main: _MainStudyPass,
    stats: dict[str, Any],
    varmap: dict[tuple[str, str, int], MainStudyVar],
    long_zip: Path,
    main_zip: Path,
    map_path: Path,
    release_path: Path | None,
    synthetic: bool,
) -> dict[str, Any]:
    fields = [
        {
            "concept": s.concept, "role": s.role, "survey_year": s.wave,
            "variable": s.variable, "variable_label": main.variable_labels.get(s.variable.upper()),
            "accuracy_variable": s.accuracy,
            "accuracy_label": main.variable_labels.get(s.accuracy.upper()) if s.accuracy else None,
            "topcode": s.topcode, "reference_period": s.reference_period,
            "annualisation_factor": s.factor,
        }
        for s in sorted(varmap.values(), key=lambda s: (s.concept, s.role, s.wave))
    ]  # fmt: skip
    return {
        "dataset": OUTPUT_NAME,
        "synthetic": synthetic,
        "sources": {
            "shelf_long": {
                "path": str(long_zip), "member": shelf.member, "sha256": shelf.sha256,
                "stata_format": shelf.release, "variables": shelf.nvar,
                "data_label": shelf.data_label, "release_identifiers": shelf.scalars,
            },
            "main_study": {
                "path": str(main_zip), "member": main.member, "sha256": main.sha256,
                "stata_format": main.release, "variables": main.nvar, "persons": main.rows,
                "person_id": main.id_source,
                "id_differs_from_er30001_x1000_plus_er30002": main.id_convention_mismatches,
            },
            "variable_map": str(map_path),
            "release_dates": str(release_path) if release_path else None,
        },
        "expected_waves": list(EXPECTED_WAVES),
        "rows": shelf.rows,
        "persons": shelf.persons,
        "rows_by_wave": {str(k): v for k, v in shelf.rows_by_wave.items()},
        "subsamples": shelf.subsamples,
        "columns": {
            "shelf": shelf.columns,
            "shelf_strl": shelf.strl_columns,
            "derived": list(DERIVED_COLUMNS),
            "release": list(RELEASE_COLUMNS),
            "enrichment": list(ENRICHMENT_COLUMNS),
        },
        "labels": {"source": "spec 10_tasks 7", "file_value_labels": compare_labels(
            shelf.file_labels)},
        "earnings_topcode": EARNINGS_TOPCODE,
        "rows_earn_tot_nd_at_topcode": shelf.earnings_at_topcode,
        "enrichment": {
            "hours_waves": sorted({s.wave for s in varmap.values() if s.concept == "annual_hours"}),
            "food_unavailable_waves": sorted(FOOD_UNAVAILABLE_WAVES),
            "qualifying_reason_codes": {str(k): v for k, v in QUALIFYING_REASONS.items()},
            "fields_found": fields,
            **stats,
        },
    }
