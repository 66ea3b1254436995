"""Shared CPS mechanics for the five CPS task builders (spec 20_tasks_labor_macro.md 0.5).

Labor-force status maps, month-to-month linking on CPSIDP, the common predictors, the CPS
persona and the background paragraph. Label vocabularies are the intermediate's
(`hhx.surveys.cps_labels`); the sentences follow the reference renderers so that rebuilt
prompts read as the official ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.tasks.prompting import LABOR_SYSTEM_PROMPT, article

LF_LABELS = ("employed", "unemployed", "not_in_labor_force")
CPS_SYSTEM_PROMPT = LABOR_SYSTEM_PROMPT

# --------------------------------------------------------------------------------------------
# Status maps


EMPLOYED_CODES = (10, 12)
UNEMPLOYED_CODES = (20, 21, 22)
NILF_CODES = (30, 31, 32, 33, 34, 35, 36)
LF_CODES = EMPLOYED_CODES + UNEMPLOYED_CODES + NILF_CODES  # codes with a supported status


def lf_status(empstat: pd.Series) -> pd.Series:
    """EMPSTAT -> employed (10, 12) / unemployed (20-22) / not_in_labor_force (30-36); other
    codes (armed forces 1, NIU) -> None."""
    code = pd.to_numeric(empstat, errors="coerce")
    out = pd.Series(np.full(len(empstat), None, dtype=object), index=empstat.index)
    out[code.isin(EMPLOYED_CODES).fillna(False)] = "employed"
    out[code.isin(UNEMPLOYED_CODES).fillna(False)] = "unemployed"
    out[code.isin(NILF_CODES).fillna(False)] = "not_in_labor_force"
    return out


def older_status(empstat: pd.Series, nilfact: pd.Series) -> pd.Series:
    """Retirement-task status: employed, unemployed, nilf_retired (36), nilf_disabled (32 or
    NILFACT 1), nilf_other (30, 31, 33, 34, 35); NA otherwise. Precedence as the reference."""
    code = pd.to_numeric(empstat, errors="coerce")
    nilf = pd.to_numeric(nilfact, errors="coerce")
    out = pd.Series(np.full(len(empstat), None, dtype=object), index=empstat.index)
    out[code.isin([30, 31, 33, 34, 35]).fillna(False)] = "nilf_other"
    out[(code.eq(32) | nilf.eq(1)).fillna(False)] = "nilf_disabled"
    out[code.eq(36).fillna(False)] = "nilf_retired"
    out[code.isin([20, 21, 22]).fillna(False)] = "unemployed"
    out[code.isin([10, 12]).fillna(False)] = "employed"
    return out


# --------------------------------------------------------------------------------------------
# Linking t -> t+k on CPSIDP


@dataclass(frozen=True)
class MishRule:
    """Which baseline rotation months may link, and the month-in-sample step to the target."""

    baseline: frozenset[int]
    step: int


ADJACENT_MONTH = MishRule(frozenset({1, 2, 3, 5, 6, 7}), 1)  # t -> t+1 (jobfind, separation, ui)
TWELVE_MONTHS = MishRule(frozenset({1, 2, 3, 4}), 4)  # t -> t+12 (retire)

_MONTH_BITS = 15  # month index year*12+month < 2**15 up to year 2730


def _whole_numbers(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """int64 values (0 where unusable) and a mask of present, whole-number entries."""
    x = pd.to_numeric(values, errors="coerce")
    if pd.api.types.is_integer_dtype(x):
        return x.to_numpy(dtype=np.int64, na_value=0), x.notna().to_numpy()
    f = x.to_numpy(dtype="float64", na_value=np.nan)
    ok = ~np.isnan(f) & (f == np.round(f)) & (np.abs(f) < 2**62)
    return np.where(ok, f, 0).astype(np.int64), ok


def link_months(
    df: pd.DataFrame,
    months_ahead: int,
    mish_rule: MishRule,
    *,
    target_columns: tuple[str, ...] = ("EMPSTAT", "MISH"),
    positive_id: bool = False,
) -> pd.DataFrame:
    """Attach each record's same-CPSIDP record `months_ahead` months later (row-preserving).

    A record's key is valid when CPSIDP is a whole number (and > 0 with `positive_id`) and
    YEAR, MONTH, MISH and EMPSTAT are present; it is usable when, in addition, no other valid
    record of the same month has that CPSIDP (duplicates are excluded on both sides).
    Returns a copy of `df` with `<col>_t` for each target column (NA when unlinked) and
    booleans `_key_ok` (usable baseline key), `_linked` (a usable target record exists) and
    `_mish_ok` (baseline MISH allowed by the rule, and target MISH = baseline MISH + step when
    linked). A row is a valid link when `_linked & _mish_ok`.
    """
    if months_ahead < 1:
        raise DataError(f"link_months: months_ahead must be >= 1, got {months_ahead}")
    need = ["CPSIDP", "YEAR", "MONTH", "MISH", "EMPSTAT", *target_columns]
    absent = [c for c in dict.fromkeys(need) if c not in df.columns]
    if absent:
        raise DataError(f"link_months: columns {absent} are missing")
    ident, id_ok = _whole_numbers(df["CPSIDP"])
    year, year_ok = _whole_numbers(df["YEAR"])
    month, month_ok = _whole_numbers(df["MONTH"])
    mish, mish_ok_ = _whole_numbers(df["MISH"])
    # A CPSIDP has at most 14 digits (< 2**47): (CPSIDP, month) packs into one int64 key.
    keyable = id_ok & (ident >= 0) & (ident < 2**47) & year_ok & month_ok
    key = np.where(keyable, (ident << _MONTH_BITS) | (year * 12 + month), -1)
    del year, month
    # Sorted keys instead of a hash table: less memory on tens of millions of records.
    rows = np.flatnonzero(keyable)
    order = np.argsort(key[rows], kind="stable")
    rows = rows[order]
    sorted_keys = key[rows]
    del order
    # duplicates within a month are excluded, whatever the rest of their record holds
    same_prev = np.r_[False, sorted_keys[1:] == sorted_keys[:-1]]
    same_next = np.r_[sorted_keys[1:] == sorted_keys[:-1], False]
    usable_sorted = ~(same_prev | same_next)
    del same_prev, same_next
    usable_sorted &= (ident[rows] >= (1 if positive_id else 0)) & mish_ok_[rows]
    usable_sorted &= df["EMPSTAT"].notna().to_numpy()[rows]
    rows, sorted_keys = rows[usable_sorted], sorted_keys[usable_sorted]
    del usable_sorted
    usable = np.zeros(len(df), dtype=bool)
    usable[rows] = True

    wanted = sorted_keys + months_ahead  # same CPSIDP, `months_ahead` months later
    at = np.minimum(np.searchsorted(sorted_keys, wanted), max(len(sorted_keys) - 1, 0))
    hit = sorted_keys[at] == wanted if len(sorted_keys) else np.zeros(0, dtype=bool)
    target_pos = np.full(len(df), -1, dtype=np.int64)
    target_pos[rows[hit]] = rows[at[hit]]
    del wanted, at, hit, sorted_keys, rows, key, ident
    linked = target_pos >= 0

    out = df.copy(deep=False)  # copy-on-write: the caller's frame is not modified
    for col in target_columns:
        values = df[col].iloc[np.where(linked, target_pos, 0)]
        values.index = df.index
        out[f"{col}_t"] = values.where(pd.Series(linked, index=df.index))
    t_mish = np.where(linked, mish[np.maximum(target_pos, 0)], -1)
    in_rule = mish_ok_ & np.isin(mish, list(mish_rule.baseline))
    mish_ok = in_rule & (~linked | (t_mish == mish + mish_rule.step))
    out["_key_ok"] = usable
    out["_linked"] = linked
    out["_mish_ok"] = mish_ok
    return out


# --------------------------------------------------------------------------------------------
# Common predictors (spec 0.5 numeric bounds and label columns)

COMMON_LABELS = (
    "sex",
    "race",
    "educ",
    "marst",
    "state",
    "region",
    "metro",
    "relate",
    "hispan",
    "nativity",
    "citizen",
    "vetstat",
)
COMMON_NUMERIC = ("age", "famsize", "nchild")
COMMON_PREDICTORS = (
    "age",
    "sex",
    "race",
    "educ",
    "marst",
    "state",
    "region",
    "metro",
    "relate",
    "famsize",
    "nchild",
    "hispan",
    "nativity",
    "citizen",
    "vetstat",
)


def bounded(values: pd.Series, lo: float, hi: float) -> pd.Series:
    """Numeric value inside [lo, hi] as float64, NA (NaN) otherwise."""
    x = pd.to_numeric(values, errors="coerce").astype("float64")
    return x.where((x >= lo) & (x <= hi))


def labels_as_text(values: pd.Series) -> pd.Series:
    """Label column (categorical) -> object strings with None for missing."""
    return values.astype(object).where(values.notna(), None)


def common_predictors(df: pd.DataFrame) -> pd.DataFrame:
    """The 15 common CPS predictors from intermediate columns: numeric as float, labels as text."""
    out = pd.DataFrame(index=df.index)
    out["age"] = bounded(df["AGE"], 0, 99)
    out["famsize"] = bounded(df["FAMSIZE"], 1, 99)
    out["nchild"] = bounded(df["NCHILD"], 0, 99)
    for col in COMMON_LABELS:
        out[col] = labels_as_text(df[col])
    return out[list(COMMON_PREDICTORS)]


def origin_q_index(year: pd.Series, month: pd.Series) -> pd.Series:
    """CPS macro key: the baseline month's calendar quarter, year*4 + quarter."""
    y = pd.to_numeric(year).astype("int64")
    m = pd.to_numeric(month).astype("int64")
    return y * 4 + (m - 1) // 3 + 1


# --------------------------------------------------------------------------------------------
# Background paragraph

EDUC_PHRASE = {
    "high school or less": "high school education or less",
    "high school diploma or GED": "a high school diploma or GED",
    "some college or associate degree": "some college or an associate degree",
    "bachelor's degree": "a bachelor's degree",
    "graduate or professional education": "graduate or professional education",
}
MARITAL_CLAUSE = {
    "married, spouse present": "are married, your spouse is present",
    "married, spouse absent": "are married, your spouse is absent",
    "separated": "are separated",
    "divorced": "are divorced",
    "widowed": "are widowed",
    "never married": "have never been married",
    "widowed or divorced": "are widowed or divorced",
}
HISPAN_SENTENCE = {
    "not Hispanic": "You are not Hispanic.",
    "Mexican origin": "You are of Mexican origin.",
    "Puerto Rican": "You are Puerto Rican.",
    "Cuban": "You are Cuban.",
    "Dominican": "You are Dominican.",
    "other Hispanic": "You are Hispanic, with another Hispanic origin.",
}
NATIVITY_CITIZEN_SENTENCE = {
    (
        "native-born",
        "U.S.-born citizen",
    ): "You were born in the United States and are a U.S. citizen.",
    ("native-born", "not a U.S. citizen"): "You are native-born and are not a U.S. citizen.",
    (
        "foreign-born",
        "U.S.-born citizen",
    ): "You were born outside the United States and are a U.S. citizen.",
    (
        "foreign-born",
        "naturalized citizen",
    ): "You were born outside the United States and are a naturalized U.S. citizen.",
    (
        "foreign-born",
        "not a U.S. citizen",
    ): "You were born outside the United States and are not a U.S. citizen.",
}
VETERAN_SENTENCE = {"not a veteran": "You are not a veteran.", "veteran": "You are a veteran."}
RACES = (
    "White",
    "Black",
    "American Indian",
    "Asian or Pacific Islander",
    "other race",
    "multiracial",
)
# `relate` is a predictor that the prompt does not show; it must still be a known label.
RELATES = (
    "reference person",
    "spouse",
    "child",
    "parent",
    "sibling",
    "grandchild",
    "other relative",
    "partner",
    "housemate or roommate",
    "foster child",
    "other nonrelative",
)


def _text(row: Mapping[str, Any], col: str) -> str:
    value = row.get(col)
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        raise DataError(f"cannot render CPS background: {col} is missing for id {row.get('id')!r}")
    return str(value).strip()


def _pick(table: Mapping[Any, str], key: Any, col: str, row: Mapping[str, Any]) -> str:
    if key not in table:
        raise DataError(
            f"cannot render CPS background: {col} {key!r} has no prompt wording "
            f"(id {row.get('id')!r}); known: {sorted(map(str, table))}"
        )
    return table[key]


def _int(row: Mapping[str, Any], col: str) -> int:
    try:
        value = float(row[col])
    except (KeyError, TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise DataError(f"cannot render CPS prompt: {col} is missing for id {row.get('id')!r}")
    return int(round(value))


def household_sentence(famsize: int, nchild: int) -> str:
    people = f"{famsize} {'person' if famsize == 1 else 'people'}"
    head = f"There {'is' if famsize == 1 else 'are'} {people} in your household"
    if nchild == 0:
        return head + ", and you do not live with any of your own children."
    return head + f", including {nchild} of your own children."


def background_paragraph(row: Mapping[str, Any]) -> str:
    """Demographics, location, household and origin (spec 0.5)."""
    age, famsize, nchild = _int(row, "age"), _int(row, "famsize"), _int(row, "nchild")
    race = _text(row, "race")
    if race not in RACES:
        raise DataError(f"cannot render CPS background: race {race!r} has no prompt wording")
    sex = _text(row, "sex")
    if sex not in ("man", "woman"):
        raise DataError(f"cannot render CPS background: sex {sex!r} is not man/woman")
    relate = _text(row, "relate")
    if relate not in RELATES:
        raise DataError(f"cannot render CPS background: relate {relate!r} is not a known label")
    educ = _pick(EDUC_PHRASE, _text(row, "educ"), "educ", row)
    marital = _pick(MARITAL_CLAUSE, _text(row, "marst"), "marst", row)
    comma = "," if "," in marital else ""
    location = (
        f"You {marital}{comma} and live in {_text(row, 'state')}, in a {_text(row, 'metro')} "
        f"in the {_text(row, 'region')}."
    )
    hispan, nativity = _text(row, "hispan"), _text(row, "nativity")
    citizen, vetstat = _text(row, "citizen"), _text(row, "vetstat")
    if (hispan, nativity, citizen, vetstat) == (
        "not Hispanic",
        "native-born",
        "U.S.-born citizen",
        "not a veteran",
    ):
        origin = (
            "You are not Hispanic, were born in the United States, are a U.S. citizen, "
            "and are not a veteran."
        )
    else:
        origin = " ".join(
            [
                _pick(HISPAN_SENTENCE, hispan, "hispan", row),
                _pick(NATIVITY_CITIZEN_SENTENCE, (nativity, citizen), "nativity/citizen", row),
                _pick(VETERAN_SENTENCE, vetstat, "vetstat", row),
            ]
        )
    return (
        "Here is some background information about yourself and your household. "
        f"You are {article(age)} {age}-year-old {race} {sex} with {educ}. "
        f"{location} {household_sentence(famsize, nchild)} {origin}"
    )
