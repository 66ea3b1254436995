"""NY Fed SCE reader: the derived columns of a module table (spec 1.8, 20_tasks 0.6), added by
`finish_module` in one concat:
- `<col>__clean` / `<col>__status` (valid, undocumented_special = <= -900 or non-numeric,
  invalid_range = outside the bounds, which wins: -999 in a 0-100 item is invalid_range), in the
  reference's order: density bins of Q9, Q9c, Q24, C1, qsp7dens (0-100); the task key items,
  unbounded (Q9_mean ..., Q13new, Q14new, Q17new, Q18new, Q22new, Q30new, qsp2, qsp12a_1-3,
  qsp13a_1-3, l3, js5, js6, rw2a, rw2b, q113, q115, q121, q122, qp2_1, qp2_7, qp2_16, HQ1_1,
  q1_1, HQ38, hq38, l1a_lfs_rc, l1_lfs_rc, l2_num_jobs, l7_days_spent_searching,
  l11_cps_job_earn_ann); then the probability / share items (0-100) not named before;
- density families (core Q9, Q9c, Q24, C1; spending qsp7dens): `<fam>__sum`, `<fam>__task_valid`
  (NA where no bin is answered), `<fam>__task_status` (valid, range_invalid, partial_missing,
  all_zero, all_same_nonzero, sum_off_100; |sum - 100| <= 1 tolerated);
- `<col>__label` from the manual label maps (housing also from its Codebook sheets); a code
  outside a map, a <= -900 special included, is an error, except `_HH_INC_DETAILED`;
- core: `age_years` (Q32 when reported, else the first reported Q32 advanced by elapsed months
  / 12, floored), `_HH_INC_DETAILED` (Q47 at panel month 1, D6 later);
- labor market: `reservation_wage_annual_full_time` (+ `_status`) = rw2a__clean x unit factor of
  rw2b (hour 40*52, week 52, two weeks 26, month 12, year 1; missing unit from 2017-03 = year);
- job search: semantic statuses for the documented 99999x codes, `l8_months_no_work__clean`
  (integer, 0 <= value <= 12 * age, age 18-100).
Also here: spending, labor market and policy take the core row's weight (`attach_core_weights`),
and the duplicate check: a respondent-month in two rows of a module (also across the four core
workbooks) is an error, as in the reference.

Housing labels come from the year's `Codebook {year}` sheet (a column missing there takes the
nearest year's entry); the manual maps win for hq38, qh0, qh4a. Difference from the reference:
label columns are text, not pandas categoricals (same values).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.surveys.sce.items import (
    _FREE,
    _PROB,
    CORE_REQUIRED_AFTER_CONCAT,
    DENSITY_FAMILIES,
    DENSITY_PREFIXES,
    DENSITY_TOLERANCE,
    HOUSING_CODEBOOK_COLUMNS,
    JOB_SEARCH_SPECIAL_CODES,
    LABELS,
    MODULE_URLS,
    NEVER_WORKED,
    PROBABILITY_ITEMS,
    RW_ANNUAL_FACTORS,
    RW_ANNUAL_FROM,
    SPECIAL_AT_OR_BELOW,
    TASK_KEY_ITEMS,
    UNMAPPED_ALLOWED,
    density_columns,
)
from hhx.surveys.sce.structural import _file_of, _numeric
from hhx.surveys.sce.workbook import Piece, _as_text

# ---------------------------------------------------------------------------------------------
# Core derived columns, duplicates across core workbooks, module weights


def check_unique(table: pd.DataFrame, module: str) -> None:
    """One row per respondent x survey month (the reference refuses repeats, also across the
    four core workbooks)."""
    dup = table.duplicated(["respondent_id", "survey_year", "survey_month"], keep=False)
    if dup.any():
        rows = table[dup]
        first = rows.iloc[0]
        same = rows[(rows["respondent_id"] == first["respondent_id"])
                    & (rows["survey_year"] == first["survey_year"])
                    & (rows["survey_month"] == first["survey_month"])]
        files = ", ".join(f"{f} sheet {sh}" for f, sh in zip(same["raw_file"], same["_sheet"],
                                                             strict=True))
        raise DataError(f"SCE {module}: respondent {first['respondent_id']} appears more than "
                        f"once for {first['survey_year']}-{int(first['survey_month']):02d} "
                        f"({files}); the module must hold one row per respondent and month "
                        "(remove the repeated rows from the later workbook)")


def add_core_derived(core: pd.DataFrame) -> pd.DataFrame:
    """age_years and _HH_INC_DETAILED (20_tasks 0.6)."""
    missing = [c for c in CORE_REQUIRED_AFTER_CONCAT if c not in core.columns]
    if missing:
        raise DataError(f"SCE core workbooks: column(s) {missing} not found in any core "
                        f"workbook; download them again from {MODULE_URLS['core']}")
    month_index = core["survey_year"].to_numpy() * 12 + core["survey_month"].to_numpy()
    reported = _numeric(core, "Q32")  # as reported (the reference does not screen specials)
    first = (pd.DataFrame({"id": core["respondent_id"], "m": month_index, "age": reported})
             .dropna(subset=["age"]).sort_values(["id", "m"], kind="stable")
             .drop_duplicates("id"))
    base = core[["respondent_id"]].merge(first.rename(columns={"id": "respondent_id"}),
                                         on="respondent_id", how="left")
    advanced = np.floor(base["age"].to_numpy() + (month_index - base["m"].to_numpy()) / 12.0)
    core["age_years"] = reported.where(reported.notna(), advanced).to_numpy()
    panel = core["panel_month"].astype("Float64").to_numpy(dtype="float64", na_value=np.nan)
    q47, d6 = _numeric(core, "Q47").to_numpy(), _numeric(core, "D6").to_numpy()
    core["_HH_INC_DETAILED"] = np.where(panel == 1, q47, np.where(panel > 1, d6, np.nan))
    return core


def attach_core_weights(table: pd.DataFrame, core: pd.DataFrame, module: str) -> pd.DataFrame:
    """Spending, labor market, policy: `weight_<module>` from the core row of the same
    respondent-month where the sheet has no weight column, then `missing_core_weight` (both
    appended, as the reference's merge does)."""
    weight = f"weight_{module}"
    if weight not in table.columns:
        keys = ["respondent_id", "survey_year", "survey_month"]
        merged = table[keys].merge(core[keys + ["weight_core"]], on=keys, how="left")
        assert len(merged) == len(table)
        table[weight] = merged["weight_core"].to_numpy()
    table["missing_core_weight"] = table[weight].isna().to_numpy()
    return table


# ---------------------------------------------------------------------------------------------
# Companion columns


def clean_status(values: pd.Series, lower: float | None, upper: float | None
                 ) -> tuple[np.ndarray, pd.Series]:
    """(`__clean`, `__status`): valid / undocumented_special (<= -900 or not a number) /
    invalid_range (outside the bounds; wins over special, so -999 in a 0-100 item is
    invalid_range, as in the reference); blank -> NA."""
    numeric = pd.to_numeric(values, errors="coerce").to_numpy(dtype="float64")
    present = values.notna().to_numpy()
    special = present & (np.isnan(numeric) | (numeric <= SPECIAL_AT_OR_BELOW))
    with np.errstate(invalid="ignore"):
        out_of_range = present & ~np.isnan(numeric) & (
            (numeric < lower if lower is not None else False)
            | (numeric > upper if upper is not None else False))
    valid = present & ~special & ~out_of_range
    status = np.full(len(values), None, dtype="object")
    status[valid], status[special] = "valid", "undocumented_special"
    status[out_of_range] = "invalid_range"
    return np.where(valid, numeric, np.nan), pd.Series(status, dtype="string")


def companion_specs(columns: list[str], module: str) -> list[tuple[str, float | None,
                                                                   float | None]]:
    """(column, lower, upper) of every companion, in the reference's order: density bins of
    any module (0-100), then the module's task key items (unbounded), then its probability and
    share items (0-100); a column keeps the first rule that names it."""
    out: dict[str, tuple[float | None, float | None]] = {}
    for prefix in DENSITY_PREFIXES:
        regex = re.compile(rf"{re.escape(prefix)}_(bin|dens_?)?\d+")
        for column in columns:
            if regex.fullmatch(column):
                out.setdefault(column, _PROB)
    for column in TASK_KEY_ITEMS.get(module, ()):
        if column in columns:
            out.setdefault(column, _FREE)
    items = PROBABILITY_ITEMS.get(module)
    if items is not None:
        for column in columns:
            if re.fullmatch(items, column):
                out.setdefault(column, _PROB)
    return [(c, lo, hi) for c, (lo, hi) in out.items()]


def companion_columns(table: pd.DataFrame, module: str) -> dict[str, object]:
    additions: dict[str, object] = {}
    for column, lower, upper in companion_specs(list(table.columns), module):
        clean, status = clean_status(table[column], lower, upper)
        additions[f"{column}__clean"] = clean
        additions[f"{column}__status"] = status.array
    return additions


def density_status(bins: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
    """(`__sum`, `__task_status`) of a 10-bin family (spec 1.8; |sum - 100| <= 1 tolerated)."""
    numeric = bins.apply(pd.to_numeric, errors="coerce").to_numpy(dtype="float64")
    present = bins.notna().to_numpy()
    any_present, all_present = present.any(axis=1), present.all(axis=1)
    bad = (present & (np.isnan(numeric) | (numeric < 0) | (numeric > 100))).any(axis=1)
    all_numeric = (~np.isnan(numeric)).all(axis=1)
    total = np.where(present.any(axis=1) & (~np.isnan(numeric)).any(axis=1),
                     np.nansum(numeric, axis=1), np.nan)
    off = all_numeric & (np.abs(total - 100.0) > DENSITY_TOLERANCE)
    zero = all_numeric & (numeric == 0).all(axis=1)
    same = all_numeric & (numeric == numeric[:, :1]).all(axis=1) & (numeric[:, 0] != 0) & off
    status = np.full(len(bins), None, dtype="object")
    # Later assignments win: range problems first, then missing bins, then the sum checks.
    status[any_present & all_numeric] = "valid"
    status[any_present & ~bad & off] = "sum_off_100"
    status[any_present & ~bad & same] = "all_same_nonzero"
    status[any_present & ~bad & zero] = "all_zero"
    status[any_present & ~bad & ~all_present] = "partial_missing"
    status[any_present & bad] = "range_invalid"
    return total, pd.Series(status, dtype="string")


def density_columns_for(table: pd.DataFrame, module: str) -> dict[str, object]:
    additions: dict[str, object] = {}
    for family in DENSITY_FAMILIES.get(module, ()):
        columns = density_columns(family)
        if not all(c in table.columns for c in columns):
            continue
        total, status = density_status(table[columns])
        additions[f"{family}__sum"] = total
        # NA where the family is not answered at all (status NA), as the reference
        additions[f"{family}__task_valid"] = pd.array(status == "valid", dtype="boolean")
        additions[f"{family}__task_status"] = status.array
    return additions


def label_series(table: pd.DataFrame, column: str, mapping: dict, module: str,
                 values: pd.Series | None = None) -> pd.Series:
    """Codes -> labels. Blank and <= -900 specials -> NA; any other code outside the map is an
    error naming the workbook, column and code (except `_HH_INC_DETAILED`)."""
    raw = table[column] if values is None else values
    text_keys = all(isinstance(k, str) for k in mapping)
    if text_keys:
        codes = pd.Series([_as_text(v) for v in raw.tolist()], dtype="object", index=raw.index)
        present = codes.notna()
        labels = codes.map(mapping)
    else:
        numeric = pd.to_numeric(raw, errors="coerce")
        present = raw.notna()  # a special code (<= -900) has no label: an error, as upstream
        # int keys match equal floats (hash(1.0) == hash(1))
        labels = numeric.map(mapping).where(present)
    unknown = present & labels.isna()
    if unknown.any() and column not in UNMAPPED_ALLOWED:
        code = raw[unknown].iloc[0]
        code = (f"{float(code):g}" if isinstance(code, (int, float, np.integer, np.floating))
                else repr(code))
        allowed = ", ".join(str(k) for k in mapping)
        raise DataError(f"{_file_of(table, unknown)}: column {column} holds code {code}, which "
                        f"is not in the SCE {module} codebook ({allowed}); download the "
                        f"workbook again from {MODULE_URLS[module]}")
    return labels.astype("string")


def label_columns(table: pd.DataFrame, module: str, pending: dict[str, object]
                  ) -> dict[str, object]:
    additions: dict[str, object] = {}
    for column, mapping in LABELS.get(module, {}).items():
        if column in table.columns:
            additions[f"{column}__label"] = label_series(table, column, mapping, module).array
        elif column in pending:  # a companion, e.g. rw2b__clean
            values = pd.Series(pending[column], index=table.index)
            additions[f"{column}__label"] = label_series(table, column, mapping, module,
                                                         values).array
    return additions


def housing_codebook_labels(piece: Piece, frame: pd.DataFrame, others: list[Piece]
                            ) -> dict[str, object]:
    """`__label` of the codebook-labelled housing columns of one year's sheet; a column missing
    from this year's codebook uses the nearest year's entry that has it."""
    additions: dict[str, object] = {}
    for column in HOUSING_CODEBOOK_COLUMNS:
        if column not in frame.columns or column in LABELS["housing"]:
            continue
        # housing pieces carry their wave year and codebook
        ranked = sorted(others, key=lambda p: abs(p.wave_year - piece.wave_year))  # type: ignore[operator]
        mapping = next((p.codebook[c] for p in [piece, *ranked] for c in p.codebook  # type: ignore[index, union-attr]
                        if c.lower() == column.lower()), None)
        if mapping:
            additions[f"{column}__label"] = label_series(frame, column, mapping, "housing").array
    return additions


def reservation_wage(table: pd.DataFrame, pending: dict[str, object]) -> dict[str, object]:
    """Annual full-time reservation wage from rw2a__clean and the rw2b unit (spec 1.8)."""
    amount = pd.Series(pending["rw2a__clean"], index=table.index, dtype="float64")
    source_ok = pd.Series(pending["rw2a__status"], index=table.index) == "valid"
    unit = pd.Series(pending["rw2b__clean__label"], index=table.index, dtype="string")
    annual_regime = table["survey_date"] >= RW_ANNUAL_FROM
    unit = unit.mask(amount.notna() & annual_regime & unit.isna(), "year")
    contradiction = amount.notna() & annual_regime & unit.notna() & (unit != "year")
    if contradiction.any():
        row = table[contradiction].iloc[0]
        raise DataError(f"{_file_of(table, contradiction)}: column rw2b gives unit "
                        f"{unit[contradiction].iloc[0]!r} in {row['survey_year']}-"
                        f"{row['survey_month']:02d}; from March 2017 the reservation wage is "
                        "asked per year only")
    positive = source_ok & (amount > 0)
    factor = unit.map(RW_ANNUAL_FACTORS).astype("float64")
    annual = (amount * factor).where(positive & factor.notna())
    status = pd.Series(pd.NA, index=table.index, dtype="string")
    status[table["rw2a"].isna()] = "missing_amount"
    status[table["rw2a"].notna() & ~source_ok] = "invalid_source_amount"
    status[source_ok & (amount <= 0)] = "nonpositive_amount"
    status[positive & unit.isna()] = "missing_pre2017_unit"
    for name in RW_ANNUAL_FACTORS:
        status[positive & (unit == name)] = f"valid_{name.replace(' ', '_')}"
    return {"reservation_wage_annual_full_time": annual.to_numpy(),
            "reservation_wage_annual_full_time_status": status.array}


def job_search_specials(table: pd.DataFrame) -> dict[str, object]:
    """Semantic statuses for the documented 99999x codes; an undocumented 99999x code in any
    numeric column is an error (it would otherwise pass as a real value)."""
    for column in table.columns:
        if column.startswith("_") or table[column].dtype.kind not in "if":
            continue
        values = table[column]
        hit = values.between(999990, 999999) & (values == values.round())
        unknown = hit & ~values.isin(list(JOB_SEARCH_SPECIAL_CODES.get(column, {})))
        if unknown.any():
            raise DataError(f"{_file_of(table, unknown)}: column {column} holds special code "
                            f"{values[unknown].iloc[0]:g}, which the SCE Job Search codebook "
                            "does not define for it; download the workbook again from "
                            f"{MODULE_URLS['job_search']}")
    additions: dict[str, object] = {}
    for column, codes in JOB_SEARCH_SPECIAL_CODES.items():
        if column not in table.columns or column == "l8_months_no_work":
            continue
        raw = table[column]
        numeric = pd.to_numeric(raw, errors="coerce")
        present = raw.notna()
        special = numeric.isin(list(codes))
        status = pd.Series(pd.NA, index=table.index, dtype="string")
        for code, name in codes.items():
            status[numeric == code] = name
        status[present & numeric.isna()] = "invalid_numeric"
        status[present & (numeric < 0) & ~special] = "invalid_negative"
        valid = present & numeric.notna() & (numeric >= 0) & ~special
        status[valid] = "valid"
        additions[f"{column}__clean"] = numeric.where(valid).to_numpy(dtype="float64")
        additions[f"{column}__status"] = status.array
    additions.update(months_no_work(table))
    return additions


def months_no_work(table: pd.DataFrame) -> dict[str, object]:
    """l8_months_no_work__clean: a whole number 0 <= months <= 12 * age, age 18-100."""
    raw = table["l8_months_no_work"]
    months = pd.to_numeric(raw, errors="coerce")
    age = pd.to_numeric(table["age"], errors="coerce")
    present = raw.notna()
    never = months == NEVER_WORKED
    ordinary = present & months.notna() & ~never
    negative = ordinary & (months < 0)
    fraction = ordinary & ~negative & (months != months.round())
    ordinary = ordinary & ~negative & ~fraction
    age_ok = age.between(18, 100) & (age == age.round())
    too_many = ordinary & age_ok & (months > 12 * age)
    valid = ordinary & age_ok & ~too_many
    status = pd.Series(pd.NA, index=table.index, dtype="string")
    status[never] = "never_had_paid_job"
    status[present & months.isna()] = "invalid_numeric"
    status[negative] = "invalid_negative"
    status[fraction] = "invalid_noninteger"
    status[ordinary & ~age_ok] = "age_unavailable_for_validation"
    status[too_many] = "exceeds_age_in_months"
    status[valid] = "valid"
    return {"l8_months_no_work__clean": months.where(valid).to_numpy(dtype="float64"),
            "l8_months_no_work__status": status.array}


def finish_module(table: pd.DataFrame, module: str,
                  extra: Callable[[pd.DataFrame], dict[str, object]] | None = None
                  ) -> pd.DataFrame:
    """Add companions, density filters, labels and module-specific columns in one concat."""
    additions = companion_columns(table, module)
    additions.update(density_columns_for(table, module))
    additions.update(label_columns(table, module, additions))
    if module == "labor_market":
        additions.update(reservation_wage(table, additions))
    if module == "job_search":
        additions.update(job_search_specials(table))
    if extra is not None:
        additions.update(extra(table))
    new = pd.DataFrame(additions, index=table.index)
    out = pd.concat([table, new[[c for c in new.columns if c not in table.columns]]], axis=1)
    return out.drop(columns=[c for c in ("_sheet", "_key") if c in out.columns])
