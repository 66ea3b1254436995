"""Fuster-Zafar SCE housing-financing experiment (Feb 2014) -> `house_sce_financing.parquet`.

Facts: shared/spec/00_common.md 1.3 (SCE financing row) and 1.9; task house_sce_financing
(10_tasks 18) reads the output. Input `survey.raw.sce_financing`: `FZdata_raw.dta` from the
replication package (Stata, one row per respondent, `userid`; codes, Stata missing = NaN).

Output: every raw column, plus the task mapping (targets from hypo_q2..q4 / hypo_d2..d4, initial
and alternative rate, initial WTP and 20% down payment, comparable-home value, owner values),
labelled bands (income, credit score, liquid savings, non-housing debt), `<var>_label` columns
from the file's own Stata value labels, and per scenario q1..q4 the calculator payment
(`calculator_reproduced_q<k>`) with its validity flag. On rows with valid calculator inputs the
reproduced payment must equal the stored `hypo_mpayment_q<k>` exactly, else the build fails; the
per-scenario audit is written to `house_sce_financing_calculator_audit.parquet`.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.base import BuildReport, raw_path, require_file, write_outputs

SOURCE_URL = (
    "the Fuster-Zafar (2021, AEJ: Economic Policy) replication package on openICPSR "
    "(https://www.openicpsr.org), file ReplicationMaterial/data/raw/FZdata_raw.dta"
)
OUTPUT_NAME = "house_sce_financing"
AUDIT_NAME = "house_sce_financing_calculator_audit"
EXPECTED_RESPONDENTS = 1211
CASH_INHERITANCE = 100_000.0
RATE_BY_VERSION = {1: 4.5, 2: 6.5}

# Calculator of the questionnaire: 30-year annuity, 95% of interest deducted at a 34% tax rate,
# plus 3.35% a year of the comparable home's value (maintenance, property tax, insurance).
TERM_MONTHS = 360
DEDUCTIBLE_SHARE = 0.95
TAX_RATE = 0.34
UPKEEP_RATE = 0.0335

TARGETS = {
    "wtp_flexible_original_rate": "hypo_q2",
    "down_payment_flexible_original_rate": "hypo_d2",
    "wtp_flexible_alternative_rate": "hypo_q3",
    "down_payment_flexible_alternative_rate": "hypo_d3",
    "wtp_after_cash_inheritance": "hypo_q4",
    "down_payment_after_cash_inheritance": "hypo_d4",
}
REQUIRED_COLUMNS = [
    "userid", "hypoversion",
    "hypo_q1", "hypo_q2", "hypo_q3", "hypo_q4", "hypo_d1", "hypo_d2", "hypo_d3", "hypo_d4",
    "hypo_mpayment_q1", "hypo_mpayment_q2", "hypo_mpayment_q3", "hypo_mpayment_q4",
    "homevalue", "age", "male", "college", "q38", "region",
    "residence_children_under18", "residence_children_over18",
    "hh_income", "q4", "house_value", "house_debt", "liquid_savings", "q16_6",
    "non_house_debt", "q14", "total_numeracy", "q13", "prob_move_3yr", "zip_good_inv",
    "sce_acs_weights",
]  # fmt: skip

INCOME_BANDS = {
    1: "less than $10,000", 2: "$10,000 to $20,000", 3: "$20,000 to $30,000",
    4: "$30,000 to $40,000", 5: "$40,000 to $50,000", 6: "$50,000 to $60,000",
    7: "$60,000 to $75,000", 8: "$75,000 to $100,000", 9: "$100,000 to $150,000",
    10: "$150,000 to $200,000", 11: "$200,000 or more",
}  # fmt: skip
CREDIT_SCORE_BANDS = {
    1: "below 620", 2: "620 to 679", 3: "680 to 719", 4: "720 to 760", 5: "above 760",
    6: "does not know",
}  # fmt: skip
# Allowed codes of the coded columns (NaN = not answered / not assigned).
CODES: dict[str, set[int]] = {
    "hypoversion": set(RATE_BY_VERSION),
    "hh_income": set(INCOME_BANDS),
    "q14": set(CREDIT_SCORE_BANDS),
    "q4": {0, 1},
    "male": {0, 1},
    "college": {0, 1},
    "q16_6": {0, 1},
    "zip_good_inv": {0, 1},
}
# (upper bound exclusive, label); the first band is exactly zero.
LIQUID_BANDS = [
    (5_000, "less than $5,000"),
    (30_000, "$5,000 to $30,000"),
    (100_000, "$30,000 to $100,000"),
    (500_000, "$100,000 to $500,000"),
    (np.inf, "$500,000 or more"),
]
DEBT_BANDS = [
    (1_000, "less than $1,000"),
    (5_000, "$1,000 to $5,000"),
    (30_000, "$5,000 to $30,000"),
    (np.inf, "$30,000 or more"),
]


def round_half_up(values: pd.Series | np.ndarray) -> np.ndarray:
    return np.floor(np.asarray(values, dtype="float64") + 0.5)


def calculator_payment(price, down, comparable_value, rate_percent) -> np.ndarray:
    """Monthly payment the questionnaire's calculator shows (whole dollars, half up)."""
    r = np.asarray(rate_percent, dtype="float64") / 1200.0
    growth = (1.0 + r) ** TERM_MONTHS
    annuity = r * growth / (growth - 1.0)
    loan = np.asarray(price, dtype="float64") - np.asarray(down, dtype="float64")
    upkeep = np.asarray(comparable_value, dtype="float64") * UPKEEP_RATE / 12.0
    return round_half_up(loan * (annuity - DEDUCTIBLE_SHARE * TAX_RATE * r) + upkeep)


def _band(values: pd.Series, bands: list[tuple[float, str]], zero: str) -> pd.Series:
    """Dollar amount -> band label; 0 is its own band; negative or missing -> NA."""
    out = pd.Series(pd.NA, index=values.index, dtype="string")
    out[values == 0] = zero
    lower = 0.0
    for upper, label in bands:
        above = values > lower if lower == 0 else values >= lower
        out[above & (values < upper)] = label
        lower = upper
    return out


def liquid_savings_band(dollars: pd.Series) -> pd.Series:
    return _band(dollars.astype("float64"), LIQUID_BANDS, "no liquid savings")


def non_housing_debt_band(dollars: pd.Series) -> pd.Series:
    return _band(dollars.astype("float64"), DEBT_BANDS, "no non-housing debt")


def principal_interest(loan, rate_percent) -> np.ndarray:
    """Monthly principal and interest of a 360-month annuity (unrounded)."""
    r = np.asarray(rate_percent, dtype="float64") / 1200.0
    growth = (1.0 + r) ** TERM_MONTHS
    return np.asarray(loan, dtype="float64") * r * growth / (growth - 1.0)


def read_fz_dta(path: str | Path) -> tuple[pd.DataFrame, dict[str, dict[float, str]]]:
    """Codes as numbers (Stata missing -> NaN) and the value labels attached to each column."""
    p = require_file(Path(path), "Fuster-Zafar experiment file FZdata_raw.dta", SOURCE_URL)
    try:
        with pd.io.stata.StataReader(p) as reader:
            frame = reader.read(convert_categoricals=False, convert_missing=False)
            label_sets = reader.value_labels()
            # column -> value-label set name ("" = none); pandas has no public accessor
            lbl_of = getattr(reader, "_lbllist", None) or [""] * len(frame.columns)
            names = list(frame.columns)
    except (ValueError, OSError) as exc:
        raise DataError(f"{p}: unreadable Stata file ({str(exc).splitlines()[0]})") from None
    labels = {
        col: label_sets[name] for col, name in zip(names, lbl_of, strict=True) if name in label_sets
    }
    for column in REQUIRED_COLUMNS:
        if column not in frame.columns:
            raise DataError(
                f"{p}: column {column} not found; expected the raw replication file from "
                f"{SOURCE_URL}"
            )
    return frame, labels


def check_respondents(frame: pd.DataFrame, path: Path, expected: int | None) -> None:
    ids = frame["userid"]
    if ids.isna().any():
        raise DataError(f"{path}: column userid is missing in {int(ids.isna().sum())} rows")
    if ids.duplicated().any():
        raise DataError(f"{path}: userid {ids[ids.duplicated()].iloc[0]} repeats")
    if expected is not None and len(frame) != expected:
        raise DataError(
            f"{path}: {len(frame)} respondents, expected exactly {expected} unique userids; "
            f"use the unmodified FZdata_raw.dta from {SOURCE_URL}"
        )


def check_codes(frame: pd.DataFrame, path: Path) -> None:
    for column, codes in CODES.items():
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.notna() & ~values.isin(sorted(codes))
        if bad.any():
            raise DataError(
                f"{path}: column {column} holds code {values[bad].iloc[0]:g}, not one of "
                f"{sorted(codes)} in the Fuster-Zafar codebook"
            )


def add_mapping(frame: pd.DataFrame) -> None:
    """Task columns of spec 1.9 / task 18, from the raw codes."""
    version = frame["hypoversion"]
    frame["initial_rate"] = version.map(RATE_BY_VERSION).astype("float64")
    frame["alternative_rate"] = version.map({1: 6.5, 2: 4.5}).astype("float64")
    frame["initial_wtp"] = frame["hypo_q1"].astype("float64")
    frame["initial_down_payment"] = round_half_up(0.20 * frame["initial_wtp"])
    frame["initial_effective_monthly_payment"] = frame["hypo_mpayment_q1"].astype("float64")
    for target, raw in TARGETS.items():
        frame[target] = frame[raw].astype("float64")
    frame["cash_inheritance"] = CASH_INHERITANCE
    frame["comparable_home_value"] = frame["homevalue"].astype("float64")
    owner = frame["q4"] == 1
    frame["tenure"] = pd.Series(
        np.where(owner, "owner", np.where(frame["q4"] == 0, "renter", None)), dtype="string"
    ).array
    frame["current_home_value"] = np.where(owner, frame["house_value"], 0.0)
    frame["housing_debt"] = np.where(owner, frame["house_debt"], 0.0)
    frame["sex"] = frame["male"].map({1: "man", 0: "woman"}).astype("string")
    frame["education"] = (
        frame["college"]
        .map({1: "college degree or higher", 0: "less than a college degree"})
        .astype("string")
    )
    frame["married"] = (frame["q38"] == 1).astype("boolean").where(frame["q38"].notna())
    frame["income_band"] = frame["hh_income"].map(INCOME_BANDS).astype("string")
    frame["credit_score_band"] = frame["q14"].map(CREDIT_SCORE_BANDS).astype("string")
    liquid = np.where(frame["q16_6"] == 1, 0.0, frame["liquid_savings"] * 1000.0)
    frame["liquid_savings_usd"] = liquid
    frame["liquid_savings_band"] = liquid_savings_band(frame["liquid_savings_usd"])
    frame["non_housing_debt_band"] = non_housing_debt_band(frame["non_house_debt"])
    frame["numeracy_score"] = frame["total_numeracy"].astype("float64")
    frame["willingness_to_take_risks"] = frame["q13"].astype("float64")
    frame["probability_move_three_years"] = frame["prob_move_3yr"].astype("float64")
    frame["property_good_investment"] = (
        frame["zip_good_inv"].map({1: "yes", 0: "no"}).astype("string")
    )
    frame["weight"] = frame["sce_acs_weights"].astype("float64")


def check_calculator(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Reproduce hypo_mpayment_q1..q4; any difference on valid inputs is an error."""
    audit = []
    scenarios = [
        (1, "initial_rate"),
        (2, "initial_rate"),
        (3, "alternative_rate"),
        (4, "alternative_rate"),
    ]
    for k, rate_column in scenarios:
        price = frame[f"hypo_q{k}"].astype("float64")
        down = frame[f"hypo_d{k}"].astype("float64")
        stored = frame[f"hypo_mpayment_q{k}"].astype("float64")
        rate = frame[rate_column]
        if k == 1:  # fixed 20% down payment
            down_ok = (down - 0.20 * price).abs() <= 0.01
        else:  # free down payment of at least 5%
            down_ok = down >= round_half_up(0.05 * price)
        valid = (
            (price > 0)
            & down_ok
            & (down <= price)
            & (frame["homevalue"] > 0)
            & rate.notna()
            & stored.notna()
        )
        reproduced = calculator_payment(price, down, frame["homevalue"], rate)
        frame[f"calculator_reproduced_q{k}"] = reproduced
        frame[f"calculator_valid_inputs_q{k}"] = valid.to_numpy()
        wrong = valid & (reproduced != stored)
        if wrong.any():
            row = frame[wrong].iloc[0]
            stored_k, got = row[f"hypo_mpayment_q{k}"], row[f"calculator_reproduced_q{k}"]
            raise DataError(
                f"{path}: hypo_mpayment_q{k} of userid {row['userid']} is {stored_k:g} but the "
                f"calculator gives {got:g}; use the unmodified FZdata_raw.dta from {SOURCE_URL}"
            )
        audit.append(
            {"scenario": f"q{k}", "valid_rows": int(valid.sum()), "exact_matches": int(valid.sum())}
        )
    return pd.DataFrame(audit)


def add_value_labels(frame: pd.DataFrame, labels: dict[str, dict[float, str]]) -> None:
    """`<col>_label` for columns that carry Stata value labels (e.g. region)."""
    for column, mapping in labels.items():
        if column in frame.columns and f"{column}_label" not in frame.columns:
            frame[f"{column}_label"] = frame[column].map(mapping).astype("string")


def clean_financing(
    path: str | Path, expected_respondents: int | None = EXPECTED_RESPONDENTS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """FZdata_raw.dta -> (the `house_sce_financing` frame, the calculator audit)."""
    p = Path(path)
    frame, labels = read_fz_dta(p)
    check_respondents(frame, p, expected_respondents)
    check_codes(frame, p)
    add_mapping(frame)
    audit = check_calculator(frame, p)
    add_value_labels(frame, labels)
    return frame, audit


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read `survey.raw.sce_financing`; write `house_sce_financing.parquet` atomically."""
    started = time.perf_counter()
    path = raw_path(survey, "sce_financing", raw_dir, hint="FZdata_raw.dta")
    frame, audit = clean_financing(path)
    return write_outputs(survey, out_dir, {OUTPUT_NAME: frame, AUDIT_NAME: audit}, [path],
                         started)