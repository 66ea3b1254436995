"""PSID Complete Main Study: the V-variable map, the one pass over the member, and the
enrichment columns that hhx.surveys.psid.shelf appends to the SHELF rows of current family members.

Facts: shared/spec/00_common.md 1.1 (input fingerprint), 1.10 (PSID details), 2 (PSID wave
schedule); 10_tasks_cons_house_income.md 7 (PSID common facts) with the tasks cons_psid_jobloss
and 20_tasks_labor_macro.md 6 (labor_psid_addedworker), which use these columns.

Inputs: the `main_study` ZIP's member `PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL.dta`, the
cross-year PSID file (one row per person, PSID V-variable names; family variables repeated on
each member of the family), read compressed through hhx.surveys.psid.dta; and the V-variable map
(default: `psid_main_study_vars.csv` shipped next to this module, columns concept, role,
survey_year, variable, accuracy_variable, topcode, reference_period, annualisation_factor,
questionnaire_item).

ENRICHMENT_COLUMNS on rows of current family members (panel_current == 1, fuid present), null
elsewhere. The reference person and spouse of a family-wave are its rel 1 / rel 2 members;
family-waves with two rel 1 or two rel 2 members are ambiguous and get no roles. Complete Main
Study values are read from each member's own record (waves to 1992):
job-end reason codes (employed and unemployed routes, kept as published like the reference
does; codes outside the documented 0-9 are counted in the metadata, fractions are errors;
reference person 1968-1992, spouse 1976 and 1979-1992; the tasks use codes 1 and 3; 1968 has
one combined question for both routes), annual hours of the
reference person and spouse (reference year = wave - 1; valid if 0 <= hours < 9,999 and accuracy
code 0, 1 or 2), food at home / away / net food stamps (waves 1969-1992 except 1973, 1988,
1989, status `not_collected` there and in 1968; valid if 0 <= value < top code and accuracy code
0-2; stamps x 12 where the wave asked for last month, from 1977). Family variables must agree
across the current members of a family-wave.

The V-variable map comes from the reference implementation (householdbench_eval, commit 148abfb).
Hours of reference person and spouse were checked against an independent public PSID variable list
for every wave, and all 1984 entries (hours, accuracy codes, both job-end routes of both roles,
food, stamps) against the 1984 family-file labels; the other waves' reason, accuracy and food
numbers are not independently verified. A different map can be given with `raw.main_study_vars`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hhx.errors import ConfigError, DataError
from hhx.surveys.psid.dta import (
    SOURCE_URL,
    DtaStream,
    _column_map,
    _fingerprint,
    open_member,
)

MAIN_STUDY_MEMBER = "PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL.dta"
DEFAULT_VARIABLE_MAP = Path(__file__).with_name("psid_main_study_vars.csv")

# The PSID wave schedule (spec 2); hhx.surveys.psid.shelf checks the SHELF waves against it.
EXPECTED_WAVES: tuple[int, ...] = tuple(range(1968, 1998)) + tuple(range(1999, 2022, 2))
LAST_ENRICHMENT_WAVE = 1992
FOOD_UNAVAILABLE_WAVES = frozenset({1968, 1973, 1988, 1989})
VALID_ACCURACY_CODES = (0, 1, 2)
ACCURACY_STATUS = {0: "direct_or_valid_zero", 1: "minor_assignment", 2: "major_assignment"}
INVALID_STATUS = "missing_or_topcoded"
REASON_CODES = range(10)  # documented job-end reason codes 0-9

# Complete Main Study columns appended to current members' rows, with their dtypes.
ENRICHMENT_DTYPES: dict[str, str] = {
    "reference_person_id": "Int64",
    "spouse_person_id": "Int64",
    "demo_age_gen_rp": "float64",
    "demo_age_gen_sp": "float64",
    "demo_sex_rp": "Int8",
    "demo_sex_sp": "Int8",
    "demo_sex_label_rp": "string",
    "demo_sex_label_sp": "string",
    "labor_reference_year": "Int64",
    "annual_hours_rp": "float64",
    "annual_hours_sp": "float64",
    "annual_hours_valid_rp": "Int8",
    "annual_hours_valid_sp": "Int8",
    "annual_hours_accuracy_code_rp": "Int8",
    "annual_hours_accuracy_code_sp": "Int8",
    "annual_hours_assignment_status_rp": "string",
    "annual_hours_assignment_status_sp": "string",
    "annual_work_status_rp": "float64",
    "annual_work_status_sp": "float64",
    "job_end_reason_ascertained_rp": "Int8",
    "job_end_reason_ascertained_sp": "Int8",
    "job_end_reason_employed_code_rp": "Int8",
    "job_end_reason_employed_code_sp": "Int8",
    "job_end_reason_unemployed_code_rp": "Int8",
    "job_end_reason_unemployed_code_sp": "Int8",
    "food_at_home_nominal_annual": "float64",
    "food_away_nominal_annual": "float64",
    "food_stamps_net_nominal_annual": "float64",
    "food_at_home_assignment_status": "string",
    "food_away_assignment_status": "string",
    "food_stamps_assignment_status": "string",
    "food_stamps_reference_period": "string",
    "food_stamps_annualisation_factor": "float64",
    "food_cash_nominal_annual": "float64",
    "food_cash_valid": "Int8",
    "food_cash_positive": "Int8",
    "food_total_including_assistance_nominal_annual": "float64",
}
ENRICHMENT_COLUMNS = tuple(ENRICHMENT_DTYPES)


# ---------------------------------------------------------------------------------------------
# Complete Main Study variable map

CONCEPT_ROLES: dict[str, tuple[str, ...]] = {
    "job_end_reason_employed": ("rp", "sp"),
    "job_end_reason_unemployed": ("rp", "sp"),
    "annual_hours": ("rp", "sp"),
    "food_at_home": ("family",),
    "food_away": ("family",),
    "food_stamps": ("family",),
}
_MEASURED = ("annual_hours", "food_at_home", "food_away", "food_stamps")
_FOOD = ("food_at_home", "food_away", "food_stamps")
MAP_COLUMNS = (
    "concept", "role", "survey_year", "variable", "accuracy_variable", "topcode",
    "reference_period", "annualisation_factor",
)  # fmt: skip
STAMP_PERIODS = {"previous_calendar_year": 1.0, "last_month": 12.0}


@dataclass(frozen=True)
class MainStudyVar:
    concept: str
    role: str
    wave: int
    variable: str
    accuracy: str | None
    topcode: int | None
    reference_period: str | None
    factor: float


def read_variable_map(path: Path) -> dict[tuple[str, str, int], MainStudyVar]:
    """(concept, role, wave) -> V-variables, validated against spec 1.10."""
    if not path.is_file():
        raise ConfigError(
            f"{path}: Complete Main Study variable map not found; point raw.main_study_vars at a "
            f"CSV like {DEFAULT_VARIABLE_MAP.name} (columns {', '.join(MAP_COLUMNS)})"
        )
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    table.columns = [c.strip() for c in table.columns]
    for column in MAP_COLUMNS:
        if column not in table.columns:
            raise ConfigError(f"{path}: column {column!r} not found; need {', '.join(MAP_COLUMNS)}")
    out: dict[tuple[str, str, int], MainStudyVar] = {}
    for line, row in enumerate(table.to_dict("records"), start=2):
        text = {k: str(row[k]).strip() for k in MAP_COLUMNS}
        at = f"{path}:{line}"
        concept, role = text["concept"], text["role"]
        if concept not in CONCEPT_ROLES:
            raise ConfigError(f"{at}: unknown concept {concept!r}; use {sorted(CONCEPT_ROLES)}")
        if role not in CONCEPT_ROLES[concept]:
            raise ConfigError(f"{at}: role {role!r} is not one of {CONCEPT_ROLES[concept]}")
        try:
            wave = int(text["survey_year"])
        except ValueError:
            raise ConfigError(f"{at}: survey_year {text['survey_year']!r} is not a year") from None
        if wave not in EXPECTED_WAVES or wave > LAST_ENRICHMENT_WAVE:
            raise ConfigError(
                f"{at}: survey_year {wave} is outside the enrichment waves 1968-1992 (spec 1.10)"
            )
        if concept in _FOOD and wave in FOOD_UNAVAILABLE_WAVES:
            raise ConfigError(
                f"{at}: {concept} in wave {wave}: spec 1.10 has no food measure in 1968, 1973, "
                "1988 and 1989"
            )
        if not text["variable"]:
            raise ConfigError(f"{at}: variable is empty")
        accuracy = text["accuracy_variable"] or None
        topcode: int | None = None
        if concept in _MEASURED:
            if accuracy is None:
                raise ConfigError(f"{at}: {concept} needs an accuracy_variable")
            try:
                topcode = int(text["topcode"])
            except ValueError:
                raise ConfigError(f"{at}: topcode {text['topcode']!r} is not a number") from None
        period = text["reference_period"] or None
        factor = 1.0
        if concept == "food_stamps":
            if period not in STAMP_PERIODS:
                raise ConfigError(
                    f"{at}: reference_period {period!r} must be one of {sorted(STAMP_PERIODS)}"
                )
            factor = STAMP_PERIODS[period]
            given = text["annualisation_factor"]
            if given and float(given) != factor:
                raise ConfigError(
                    f"{at}: annualisation_factor {given} does not match reference_period {period} "
                    f"(x{factor:g})"
                )
        key = (concept, role, wave)
        if key in out:
            raise ConfigError(f"{at}: {concept} {role} {wave} is listed twice")
        out[key] = MainStudyVar(concept, role, wave, text["variable"], accuracy, topcode, period,
                                factor)
    for concept, role, wave in list(out):
        pair = {"job_end_reason_employed": "job_end_reason_unemployed",
                "job_end_reason_unemployed": "job_end_reason_employed"}.get(concept)
        if pair and (pair, role, wave) not in out:
            raise ConfigError(f"{path}: {concept} {role} {wave} has no {pair} partner")
        if concept in _FOOD and any((c, "family", wave) not in out for c in _FOOD):
            raise ConfigError(f"{path}: wave {wave} lacks one of {', '.join(_FOOD)}")
    return out


# ---------------------------------------------------------------------------------------------
# Complete Main Study file and the enrichment


@dataclass
class _MainStudyPass:
    values: pd.DataFrame  # index person id; one column per V-variable of the map
    where: str
    id_source: str
    id_convention_mismatches: int | None
    variable_labels: dict[str, str]
    rows: int
    nvar: int
    release: int
    sha256: str
    member: str


def _main_study_names(
    stream: DtaStream, varmap: dict[tuple[str, str, int], MainStudyVar]
) -> tuple[dict[str, str], list[str], str]:
    """(upper-case -> file name, the map's variables upper-cased, person-id source); a variable
    of the map or the person id missing is an error."""
    where = stream.where
    names = {k.upper(): v for k, v in _column_map(stream, where).items()}
    needed: list[str] = []
    for spec in varmap.values():
        for variable in (spec.variable, spec.accuracy):
            if variable is None or variable.upper() in needed:
                continue
            if variable.upper() not in names:
                raise DataError(
                    f"{where}: column {variable} ({spec.concept} {spec.role} {spec.wave}) not "
                    "found; check the variable map (raw.main_study_vars) against this file"
                )
            needed.append(variable.upper())
    if "ID" in names:
        id_source = "ID"
    elif "ER30001" in names and "ER30002" in names:
        id_source = "ER30001*1000+ER30002"
    else:
        raise DataError(
            f"{where}: no person id: columns ID or ER30001 and ER30002 not found; download "
            f"the Complete Main Study file from {SOURCE_URL}"
        )
    return names, needed, id_source


def read_main_study(
    zip_path: Path, varmap: dict[tuple[str, str, int], MainStudyVar]
) -> _MainStudyPass:
    with open_member(zip_path, MAIN_STUDY_MEMBER, "PSID Complete Main Study archive") as member:
        stream = member.stream
        where = stream.where
        names, needed, id_source = _main_study_names(stream, varmap)
        id_columns = [c for c in ("ID", "ER30001", "ER30002") if c in names]
        columns = [names[c] for c in [*id_columns, *needed]]
        blocks: dict[str, list[np.ndarray]] = {c: [] for c in columns}
        for raw in stream.rows(columns):
            for c in columns:
                blocks[c].append(raw[c])
        labels = dict(zip(stream.names, stream.variable_labels, strict=True))
        stream.finish(labels=False)
        sha = _fingerprint(member)
        rows, nvar, release = stream.nobs, stream.nvar, stream.release
    data = {c.upper(): np.concatenate(blocks[c]) if blocks[c] else np.array([]) for c in columns}
    convention: Any = None  # an array when both ID parts are present
    mismatches = None
    if "ER30001" in data and "ER30002" in data:
        convention = data["ER30001"] * 1000 + data["ER30002"]
    if id_source == "ID":
        person = data["ID"]
        if convention is not None:
            both = ~np.isnan(person) & ~np.isnan(convention)
            mismatches = int((person[both] != convention[both]).sum())
    else:
        person = convention
    if np.isnan(person).any() or (person != np.round(person)).any():
        raise DataError(f"{where}: person id ({id_source}) is missing or fractional in some row")
    ids = person.astype(np.int64)
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise DataError(f"{where}: person id {int(unique[counts > 1][0])} appears twice")
    values = pd.DataFrame({c: data[c] for c in needed}, index=pd.Index(ids, name="id"))
    return _MainStudyPass(
        values=values,
        where=where,
        id_source=id_source,
        id_convention_mismatches=mismatches,
        variable_labels={c: labels[names[c]] for c in needed},
        rows=rows,
        nvar=nvar,
        release=release,
        sha256=sha,
        member=member.member,
    )


def family_roles(current: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(year, fuid) -> reference person and spouse; and the ambiguous family-waves (two rel 1 or
    two rel 2 members), which get no roles."""
    roles = current.loc[current["rel"].isin([1, 2])]
    dup = roles.duplicated(["year", "fuid", "rel"], keep=False)
    ambiguous = roles.loc[dup, ["year", "fuid"]].drop_duplicates().reset_index(drop=True)
    if len(ambiguous):
        marked = roles.merge(ambiguous.assign(_amb=True), on=["year", "fuid"], how="left")
        roles = marked.loc[marked["_amb"].isna()].drop(columns="_amb")
    fields = {"id": "person_id", "demo_age_gen": "demo_age_gen", "demo_sex": "demo_sex",
              "demo_sex_label": "demo_sex_label"}

    def pick(rel: int, suffix: str) -> pd.DataFrame:
        part = roles.loc[roles["rel"] == rel, ["year", "fuid", *fields]]
        names = {k: f"{v}_{suffix}" for k, v in fields.items()}
        return part.rename(columns=names)

    reference = pick(1, "rp").rename(columns={"person_id_rp": "reference_person_id"})
    spouse = pick(2, "sp").rename(columns={"person_id_sp": "spouse_person_id"})
    families = reference.merge(spouse, on=["year", "fuid"], how="left", validate="one_to_one")
    return families, ambiguous


def _accuracy_checked(
    values: np.ndarray, accuracy: np.ndarray, topcode: int
) -> tuple[np.ndarray, np.ndarray]:
    """Valid value (else NaN) and the assignment status of each row."""
    valid = (values >= 0) & (values < topcode) & np.isin(accuracy, VALID_ACCURACY_CODES)
    status = np.full(len(values), INVALID_STATUS, dtype=object)
    for code, name in ACCURACY_STATUS.items():
        status[valid & (accuracy == code)] = name
    return np.where(valid, values, np.nan), status


def _check_family_values(
    fuid: np.ndarray, source: pd.DataFrame, wave: int, where: str
) -> None:
    """Family variables must be equal across the current members of a family-wave."""
    if source.empty or not len(source.columns):
        return
    grouped = source.groupby(fuid)
    spread = (grouped.max() != grouped.min()) & grouped.max().notna()
    if spread.to_numpy().any():
        family = spread.any(axis=1).idxmax()
        variable = spread.columns[spread.loc[family].to_numpy()][0]
        raise DataError(
            f"{where}: {variable} differs across the current members of family {family} in "
            f"wave {wave}; family variables must repeat on every member's record"
        )


def _wave_values(
    wave: int, specs: dict[tuple[str, str], MainStudyVar], source: pd.DataFrame, where: str,
    odd_codes: dict[str, int],
) -> dict[str, Any]:
    """Enrichment columns of one wave's current members from their Complete Main Study values;
    `odd_codes` collects counts of job-end codes outside the documented 0-9."""
    out: dict[str, Any] = {}
    if ("annual_hours", "rp") in specs or ("annual_hours", "sp") in specs:
        out["labor_reference_year"] = wave - 1
    for role in ("rp", "sp"):
        spec = specs.get(("annual_hours", role))
        if spec is not None:
            acc = source[spec.accuracy].to_numpy()
            hours, status = _accuracy_checked(
                source[spec.variable].to_numpy(), acc, int(spec.topcode or 0)
            )
            out[f"annual_hours_{role}"] = hours
            out[f"annual_hours_valid_{role}"] = (~np.isnan(hours)).astype(np.int8)
            out[f"annual_hours_accuracy_code_{role}"] = acc
            out[f"annual_hours_assignment_status_{role}"] = status
            out[f"annual_work_status_{role}"] = np.where(
                np.isnan(hours), np.nan, (hours > 0).astype(float)
            )
        employed = specs.get(("job_end_reason_employed", role))
        unemployed = specs.get(("job_end_reason_unemployed", role))
        out[f"job_end_reason_ascertained_{role}"] = np.int8(employed is not None)
        for route, spec in (("employed", employed), ("unemployed", unemployed)):
            if spec is None:
                continue
            codes = source[spec.variable].to_numpy()
            bad = ~np.isnan(codes) & (codes != np.round(codes))
            if bad.any():
                raise DataError(
                    f"{where}: column {spec.variable} ({spec.concept} {role} {wave}) has "
                    f"non-integer code {codes[bad][0]:g}"
                )
            # Kept as published, as the reference keeps them; codes outside 0-9 are counted.
            odd_codes[f"{spec.variable} ({spec.concept} {role} {wave})"] = int(
                (~np.isnan(codes) & ~np.isin(codes, list(REASON_CODES))).sum())
            out[f"job_end_reason_{route}_code_{role}"] = codes
    if ("food_at_home", "family") in specs:
        food: dict[str, np.ndarray] = {}
        for concept in _FOOD:
            spec = specs[(concept, "family")]
            value, status = _accuracy_checked(
                source[spec.variable].to_numpy(),
                source[spec.accuracy].to_numpy(),
                int(spec.topcode or 0),
            )
            food[concept] = value * spec.factor
            out[f"{concept}_assignment_status"] = status
        stamps = specs[("food_stamps", "family")]
        cash = food["food_at_home"] + food["food_away"]
        out["food_at_home_nominal_annual"] = food["food_at_home"]
        out["food_away_nominal_annual"] = food["food_away"]
        out["food_stamps_net_nominal_annual"] = food["food_stamps"]
        out["food_stamps_reference_period"] = stamps.reference_period
        out["food_stamps_annualisation_factor"] = stamps.factor
        out["food_cash_nominal_annual"] = cash
        out["food_cash_valid"] = (~np.isnan(cash)).astype(np.int8)
        out["food_cash_positive"] = (cash > 0).astype(np.int8)
        out["food_total_including_assistance_nominal_annual"] = cash + food["food_stamps"]
    elif wave in FOOD_UNAVAILABLE_WAVES:
        for column in ("food_at_home_assignment_status", "food_away_assignment_status",
                       "food_stamps_assignment_status", "food_stamps_reference_period"):
            out[column] = "not_collected"
        out["food_cash_valid"] = np.int8(0)
        out["food_cash_positive"] = np.int8(0)
    return out


def enrichment_lookup(
    current: pd.DataFrame,
    main: _MainStudyPass,
    varmap: dict[tuple[str, str, int], MainStudyVar],
    where: str,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """ENRICHMENT_COLUMNS for every current member's (id, year), and counts for the metadata.
    `where` names the SHELF member (roles) and `main.where` the Complete Main Study member."""
    dup = current.duplicated(["id", "year"])
    if dup.any():
        row = current.loc[dup].iloc[0]
        raise DataError(f"{where}: person {row['id']} is current twice in wave {row['year']}")
    families, ambiguous = family_roles(current)
    lookup = current[["id", "year", "fuid"]].merge(
        families, on=["year", "fuid"], how="left", validate="many_to_one"
    )
    by_wave: dict[int, dict[tuple[str, str], MainStudyVar]] = {}
    for spec in varmap.values():
        by_wave.setdefault(spec.wave, {})[(spec.concept, spec.role)] = spec
    pieces: dict[str, list[np.ndarray]] = {c: [] for c in ENRICHMENT_COLUMNS}
    order: list[np.ndarray] = []
    odd_codes: dict[str, int] = {}
    without_record = 0
    known = main.values.index
    role_columns = [c for c in lookup.columns if c in ENRICHMENT_DTYPES]
    for wave, rows in lookup.groupby("year", sort=True).indices.items():
        wave = int(wave)
        members = lookup.iloc[rows]
        specs = by_wave.get(wave, {})
        source = pd.DataFrame()
        if specs:
            columns = sorted({v for s in specs.values() for v in (s.variable, s.accuracy) if v})
            ids = members["id"].to_numpy()
            without_record += int((~np.isin(ids, known)).sum())
            picked = main.values.reindex(ids)[[c.upper() for c in columns]]
            source = pd.DataFrame(picked.to_numpy(), columns=columns)
            _check_family_values(members["fuid"].to_numpy(), source, wave, main.where)
        values = _wave_values(wave, specs, source, main.where, odd_codes)
        for column in role_columns:
            values[column] = members[column].to_numpy()
        for column, dtype in ENRICHMENT_DTYPES.items():
            # Text stays object; everything else float64 (NaN = missing) until the final dtype.
            kind = object if dtype == "string" else np.float64
            value = values.get(column)
            if value is None:
                value = np.full(len(rows), None if kind is object else np.nan, dtype=kind)
            elif np.ndim(value) == 0:
                value = np.full(len(rows), value, dtype=kind)
            elif kind is object:
                value = np.asarray(value, dtype=object)
            else:
                value = pd.to_numeric(pd.Series(value), errors="coerce").to_numpy(np.float64)
            pieces[column].append(value)
        order.append(rows)
    index = np.concatenate(order) if order else np.array([], dtype=np.int64)
    table = pd.DataFrame({"id": lookup["id"].to_numpy()[index],
                          "year": lookup["year"].to_numpy()[index]})
    for column, dtype in ENRICHMENT_DTYPES.items():
        joined = np.concatenate(pieces[column]) if pieces[column] else np.array([])
        if dtype == "string":
            series = pd.Series(joined, dtype=object)
            table[column] = series.where(series.notna(), None).astype("string")
        elif dtype.startswith("Int"):
            table[column] = pd.Series(joined, dtype=np.float64).round().astype(dtype)
        else:
            table[column] = pd.Series(joined, dtype=np.float64)
    table = table.set_index(["id", "year"])[list(ENRICHMENT_COLUMNS)]
    stats = {
        "current_person_waves": int(len(table)),
        "family_waves": int(current[["year", "fuid"]].drop_duplicates().shape[0]),
        "family_waves_with_reference_person": int(len(families)),
        "family_waves_with_spouse": int(families["spouse_person_id"].notna().sum()),
        "ambiguous_family_waves": int(len(ambiguous)),
        "ambiguous_family_waves_by_wave": {
            str(k): int(v) for k, v in ambiguous["year"].value_counts().sort_index().items()
        },
        "current_person_waves_without_main_study_record": without_record,
        "job_end_codes_outside_0_9": {k: v for k, v in odd_codes.items() if v},
    }
    return table, stats

