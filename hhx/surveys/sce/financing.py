"""Fuster-Zafar SCE housing-financing experiment (Feb 2014) -> `house_sce_financing.parquet`.

Facts: shared/spec/00_common.md 1.3 (SCE financing row) and 1.9; task house_sce_financing
(10_tasks 18) reads the output. Input `survey.raw.sce_financing`: `FZdata_raw.dta` from the
replication package (Stata, one row per respondent, `userid`; codes as numbers, Stata missing =
NaN, as `pandas.read_stata(convert_categoricals=False)` gives them).

Output columns, in the reference's order (`scripts/1_preprocessing/sce_financing.py` of
Jn-Huang/householdbench_eval @148abfb; the list below is the fact, the code is hhx's):
1. every raw column in file order; the numeric ones of `NUMERIC_COLUMNS` coerced to numbers
   (text that is not a number -> NaN, as `pd.to_numeric(errors="coerce")`);
2. `source_sequence_complete` (hypo_q1..q4, hypo_d2..d4 all answered) and the calculator
   contract as constant columns (`CONTRACT`: formula version, term, deductible share, tax rate,
   non-mortgage rate and basis), `target_unit` "nominal_usd", `source_file_sha256` (sha256 of
   the raw file);
3. the task mapping: initial_rate / alternative_rate (hypoversion 1 -> 4.5 / 6.5, 2 -> 6.5 /
   4.5, else NaN), rate_assignment ("4.5_percent_first" / "6.5_percent_first" / NA),
   initial_wtp (= hypo_q1), initial_down_payment (round half up of 0.20 x initial_wtp),
   initial_effective_monthly_payment (= hypo_mpayment_q1),
   monthly_principal_interest_per_100k_{initial,alternative}_rate (whole dollars, half up:
   507 at 4.5%, 632 at 6.5%), three calculator description columns (`DESCRIPTION`), the six
   targets (hypo_q2, hypo_d2, hypo_q3, hypo_d3, hypo_q4, hypo_d4), owner (q4 == 1), renter
   (q4 == 0), comparable_home_value (= homevalue), current_home_value / housing_debt (owners'
   house_value / house_debt, else 0), liquid_savings_usd (0 when q16_6 == 1, else
   liquid_savings x 1000), income_band, credit_score_band, liquid_savings_band,
   non_housing_debt_band (band text; missing or negative -> NA), tenure, sex, education,
   married (True / False, NaN when q38 is missing), numeracy_score and
   willingness_to_take_risks (nullable integers), probability_move_three_years,
   property_good_investment, cash_inheritance (100000.0), scenario_order, weight;
4. per scenario q1..q4 `calculator_reproduced_q<k>`, `calculator_difference_q<k>` (reproduced -
   stored) and `calculator_valid_inputs_q<k>`. On valid inputs the reproduced payment must equal
   the stored `hypo_mpayment_q<k>` exactly, else the build fails naming the userid; the audit
   per scenario goes to `house_sce_financing_calculator_audit.parquet` (the reference's
   `00_calculator_numerical_audit.csv` columns).

The reference requires the columns of `REQUIRED_COLUMNS` (qtime_hypo_q1..q4 included) and
exactly 1,211 unique userids; so does hhx.

Codes outside the codebook in the coded columns of `CODES` (e.g. hh_income 13, male 2): as the
reference, the raw column keeps the value and the columns derived from it are missing (the
`DERIVED` list: hh_income -> income_band, hypoversion -> initial_rate, alternative_rate,
rate_assignment, q4 -> tenure (owner and renter both False), ...); q16_6 has no missing
outcome (anything but 1 reads as "reports liquid savings", as upstream). Nothing goes silently:
the build logs one warning per such column with the count of values outside the codebook and
of respondents whose derived columns were set missing, and the build report (MLflow metrics
`counts.sce_financing.<column>.outside_codebook` / `.set_missing`) carries the same counts.

Deliberate deviation, off by default, enabled by name in the survey config's `improvements`
(`python -m hhx stage=build survey=sce_financing
survey.improvements=[sce_financing_strict_codes]`):
- `sce_financing_strict_codes`: a code outside the codebook fails the build in one line naming
  the file, the column and the code, instead of becoming missing.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.base import (
    BuildReport,
    enabled_improvements,
    input_sha256,
    raw_path,
    require_file,
    write_outputs,
)

SOURCE_URL = (
    "the Fuster-Zafar (2021, AEJ: Economic Policy) replication package on openICPSR "
    "(https://www.openicpsr.org), file ReplicationMaterial/data/raw/FZdata_raw.dta"
)
log = logging.getLogger(__name__)

OUTPUT_NAME = "house_sce_financing"  # named after the task that reads it (the audit's task_id)
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
FORMULA_VERSION = "fz_questionnaire_released_code_v1"
CONTRACT = {
    "calculator_formula_version": FORMULA_VERSION,
    "calculator_term_months": TERM_MONTHS,
    "calculator_deductible_interest_share": DEDUCTIBLE_SHARE,
    "calculator_tax_rate": TAX_RATE,
    "calculator_nonmortgage_annual_rate": UPKEEP_RATE,
    "calculator_nonmortgage_value_basis": "comparable_home_value",
}
DESCRIPTION = {
    "calculator_rounding_convention": "nearest_whole_dollar_after_combining_all_components",
    "calculator_nonmortgage_component_scope":
        "maintenance_property_taxes_homeowners_insurance_combined",
    "calculator_nonmortgage_component_disaggregation": "not_provided_by_frozen_source",
}
SCENARIO_ORDER = (
    "initial_fixed_20pct; flexible_original_rate; flexible_alternative_rate; inheritance"
)
RATE_ASSIGNMENT = {4.5: "4.5_percent_first", 6.5: "6.5_percent_first"}

TARGETS = {
    "wtp_flexible_original_rate": "hypo_q2",
    "down_payment_flexible_original_rate": "hypo_d2",
    "wtp_flexible_alternative_rate": "hypo_q3",
    "down_payment_flexible_alternative_rate": "hypo_d3",
    "wtp_after_cash_inheritance": "hypo_q4",
    "down_payment_after_cash_inheritance": "hypo_d4",
}
SEQUENCE_COLUMNS = ["hypo_q1", "hypo_q2", "hypo_q3", "hypo_q4", "hypo_d2", "hypo_d3", "hypo_d4"]
REQUIRED_COLUMNS = [
    "userid", "hypoversion",
    "hypo_q1", "hypo_q2", "hypo_q3", "hypo_q4", "hypo_d1", "hypo_d2", "hypo_d3", "hypo_d4",
    "qtime_hypo_q1", "qtime_hypo_q2", "qtime_hypo_q3", "qtime_hypo_q4",
    "hypo_mpayment_q1", "hypo_mpayment_q2", "hypo_mpayment_q3", "hypo_mpayment_q4",
    "homevalue", "age", "male", "college", "q38", "region",
    "residence_children_under18", "residence_children_over18",
    "hh_income", "q4", "house_value", "house_debt", "liquid_savings", "q16_6",
    "non_house_debt", "q14", "total_numeracy", "q13", "prob_move_3yr", "zip_good_inv",
    "sce_acs_weights",
]  # fmt: skip
# Raw columns read as numbers (others, e.g. region, are kept as the file holds them).
NUMERIC_COLUMNS = [
    *SEQUENCE_COLUMNS, "hypo_d1", "hypo_mpayment_q1", "homevalue", "age", "q38", "q4",
    "house_value", "house_debt", "liquid_savings", "q16_6", "non_house_debt", "q14",
    "hh_income", "college", "male", "residence_children_under18", "residence_children_over18",
    "total_numeracy", "q13", "prob_move_3yr", "zip_good_inv", "sce_acs_weights",
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
# The columns the reference leaves missing for a coded column's value outside its codebook.
DERIVED: dict[str, list[str]] = {
    "hypoversion": ["initial_rate", "alternative_rate", "rate_assignment"],
    "hh_income": ["income_band"],
    "q14": ["credit_score_band"],
    "q4": ["tenure"],
    "male": ["sex"],
    "college": ["education"],
    "q16_6": [],
    "zip_good_inv": ["property_good_investment"],
}
IMPROVEMENTS = ("sce_financing_strict_codes",)
CODE_COUNTS = "codes_outside_codebook"
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
    """Dollar amount -> band label; 0 is its own band; negative or missing -> NA (object
    column of text and NA, as the reference's per-value mapping leaves it)."""
    out = pd.Series(pd.NA, index=values.index, dtype="object")
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


def read_fz_dta(path: str | Path) -> pd.DataFrame:
    """Codes as numbers (Stata missing -> NaN), every column the reference requires present."""
    p = require_file(Path(path), "Fuster-Zafar experiment file FZdata_raw.dta", SOURCE_URL)
    try:
        with pd.io.stata.StataReader(p) as reader:
            frame = reader.read(convert_categoricals=False, convert_missing=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"{p}: unreadable Stata file ({str(exc).splitlines()[0]})") from None
    for column in REQUIRED_COLUMNS:
        if column not in frame.columns:
            raise DataError(
                f"{p}: column {column} not found; expected the raw replication file from "
                f"{SOURCE_URL}"
            )
    for column in NUMERIC_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


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


def improvements(survey: SurveyConfig) -> frozenset[str]:
    """The deviations from the reference a survey config enables (see the module docstring)."""
    return enabled_improvements(survey, IMPROVEMENTS, "SCE financing")


def stray_codes(frame: pd.DataFrame) -> dict[str, pd.Series]:
    """Per coded column, the rows holding a value outside its codebook (columns without any left
    out)."""
    out = {}
    for column, codes in CODES.items():
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.notna() & ~values.isin(sorted(codes))
        if bad.any():
            out[column] = bad
    return out


def check_codes(frame: pd.DataFrame, path: Path) -> None:
    """`sce_financing_strict_codes`: the first value outside the codebook fails the build."""
    for column, bad in stray_codes(frame).items():
        value = pd.to_numeric(frame[column], errors="coerce")[bad].iloc[0]
        raise DataError(
            f"{path}: column {column} holds code {value:g}, not one of {sorted(CODES[column])} "
            "in the Fuster-Zafar codebook; use the unmodified FZdata_raw.dta, or build without "
            "survey.improvements=[sce_financing_strict_codes] to read it as missing"
        )


def report_codes(strays: dict[str, pd.Series], built: pd.DataFrame, path: Path
                 ) -> dict[str, dict[str, int]]:
    """One warning per coded column with values outside the codebook: how many, and for how
    many respondents the derived columns were set missing. Returns the counts."""
    counts = {}
    for column, bad in strays.items():
        derived = DERIVED[column]
        missing = int((bad & built[derived].isna().any(axis=1)).sum()) if derived else 0
        counts[column] = {"outside_codebook": int(bad.sum()), "set_missing": missing}
        outcome = (f"{', '.join(derived)} set missing for {missing} respondent(s), as the "
                   "reference does" if derived else
                   "read as not 1 (liquid_savings used), as the reference does")
        log.warning("%s: column %s holds %d value(s) outside the Fuster-Zafar codebook %s; %s",
                    path, column, int(bad.sum()), sorted(CODES[column]), outcome)
    return counts


def _text(values: np.ndarray, index: pd.Index) -> pd.Series:
    return pd.Series(values, index=index, dtype="string")


def _labels(frame: pd.DataFrame, column: str, one: str, zero: str) -> pd.Series:
    value = frame[column]
    return _text(np.where(value == 1, one, np.where(value == 0, zero, pd.NA)), frame.index)


def _code_map(values: pd.Series, mapping: dict[int, str]) -> pd.Series:
    """Whole-number code -> text, anything else NA (object column)."""
    codes = values.round().astype("Int64")
    return pd.Series([mapping.get(int(v), pd.NA) if v is not pd.NA else pd.NA for v in codes],
                     index=values.index, dtype="object")


def add_mapping(frame: pd.DataFrame, sha256: str) -> pd.DataFrame:
    """Columns 2-3 of the module docstring, appended in the reference's order."""
    new: dict[str, object] = {
        "source_sequence_complete": frame[SEQUENCE_COLUMNS].notna().all(axis=1),
        **CONTRACT,
        "target_unit": "nominal_usd",
        "source_file_sha256": sha256,
    }
    version = frame["hypoversion"]
    initial = pd.Series(np.where(version == 1, 4.5, np.where(version == 2, 6.5, np.nan)),
                        index=frame.index)
    alternative = pd.Series(np.where(initial == 4.5, 6.5, np.where(initial == 6.5, 4.5, np.nan)),
                            index=frame.index)
    new["initial_rate"] = initial
    new["alternative_rate"] = alternative
    new["rate_assignment"] = _text(
        np.where(initial == 4.5, RATE_ASSIGNMENT[4.5],
                 np.where(initial == 6.5, RATE_ASSIGNMENT[6.5], pd.NA)), frame.index)
    new["initial_wtp"] = frame["hypo_q1"]
    new["initial_down_payment"] = pd.Series(round_half_up(0.20 * frame["hypo_q1"]),
                                            index=frame.index)
    new["initial_effective_monthly_payment"] = frame["hypo_mpayment_q1"]
    for name, rate in (("initial", initial), ("alternative", alternative)):
        new[f"monthly_principal_interest_per_100k_{name}_rate"] = pd.Series(
            round_half_up(principal_interest(100_000, rate)), index=frame.index)
    new.update(DESCRIPTION)
    for target, raw in TARGETS.items():
        new[target] = frame[raw]
    owner, renter = frame["q4"] == 1, frame["q4"] == 0
    new["owner"], new["renter"] = owner, renter
    new["comparable_home_value"] = frame["homevalue"]
    new["current_home_value"] = pd.Series(np.where(owner, frame["house_value"], 0.0),
                                          index=frame.index)
    new["housing_debt"] = pd.Series(np.where(owner, frame["house_debt"], 0.0), index=frame.index)
    liquid = pd.Series(np.where(frame["q16_6"] == 1, 0.0, frame["liquid_savings"] * 1000.0),
                       index=frame.index)
    new["liquid_savings_usd"] = liquid
    new["income_band"] = _code_map(frame["hh_income"], INCOME_BANDS)
    new["credit_score_band"] = _code_map(frame["q14"], CREDIT_SCORE_BANDS)
    new["liquid_savings_band"] = liquid_savings_band(liquid)
    new["non_housing_debt_band"] = non_housing_debt_band(frame["non_house_debt"])
    new["tenure"] = _text(np.where(owner, "owner", np.where(renter, "renter", pd.NA)),
                          frame.index)
    new["sex"] = _labels(frame, "male", "man", "woman")
    new["education"] = _labels(frame, "college", "college degree or higher",
                               "less than a college degree")
    new["married"] = (frame["q38"] == 1).where(frame["q38"].notna())
    new["numeracy_score"] = frame["total_numeracy"].astype("Int64")
    new["willingness_to_take_risks"] = frame["q13"].astype("Int64")
    new["probability_move_three_years"] = frame["prob_move_3yr"]
    new["property_good_investment"] = _labels(frame, "zip_good_inv", "yes", "no")
    new["cash_inheritance"] = CASH_INHERITANCE
    new["scenario_order"] = SCENARIO_ORDER
    new["weight"] = frame["sce_acs_weights"]
    added = pd.DataFrame(
        {k: (v if isinstance(v, pd.Series) else pd.Series([v] * len(frame), index=frame.index))
         for k, v in new.items()})
    taken = [c for c in added.columns if c in frame.columns]
    return pd.concat([frame.drop(columns=taken), added], axis=1)


def check_calculator(frame: pd.DataFrame, path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Reproduce hypo_mpayment_q1..q4; any difference on valid inputs is an error."""
    audit, added = [], {}
    for k, rate_column in ((1, "initial_rate"), (2, "initial_rate"), (3, "alternative_rate"),
                           (4, "alternative_rate")):
        price = frame[f"hypo_q{k}"].astype("float64")
        down = pd.to_numeric(frame[f"hypo_d{k}"], errors="coerce").astype("float64")
        stored = pd.to_numeric(frame[f"hypo_mpayment_q{k}"], errors="coerce").astype("float64")
        rate = frame[rate_column]
        if k == 1:  # fixed 20% down payment
            down_ok = (down - 0.20 * price).abs() <= 0.01
        else:  # free down payment of at least 5% (JavaScript Math.round of 5%)
            down_ok = down >= round_half_up(0.05 * price)
        valid = ((price > 0) & down_ok & (down <= price) & (frame["homevalue"] > 0)
                 & rate.notna() & stored.notna())
        reproduced = pd.Series(calculator_payment(price, down, frame["homevalue"], rate),
                               index=frame.index)
        difference = reproduced - stored
        added[f"calculator_reproduced_q{k}"] = reproduced
        added[f"calculator_difference_q{k}"] = difference
        added[f"calculator_valid_inputs_q{k}"] = valid
        wrong = valid & (difference != 0)
        if wrong.any():
            row = frame[wrong].iloc[0]
            raise DataError(
                f"{path}: hypo_mpayment_q{k} of userid {row['userid']} is "
                f"{row[f'hypo_mpayment_q{k}']:g} but the calculator gives "
                f"{reproduced[wrong].iloc[0]:g}; use the unmodified FZdata_raw.dta from "
                f"{SOURCE_URL}"
            )
        n_valid = int(valid.sum())
        audit.append({
            "task_id": OUTPUT_NAME, "scenario": f"q{k}", "valid_source_rows": n_valid,
            "exact_matches": n_valid,
            "maximum_absolute_error_usd": float(difference[valid].abs().max()),
            "required_maximum_absolute_error_usd": 0.0, "formula_version": FORMULA_VERSION,
            "status": "pass",
        })
    out = pd.concat([frame, pd.DataFrame(added, index=frame.index)], axis=1)
    return out, pd.DataFrame(audit)


def clean_financing(
    path: str | Path, expected_respondents: int | None = EXPECTED_RESPONDENTS,
    strict_codes: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """FZdata_raw.dta -> (the `house_sce_financing` frame, the calculator audit); codes outside
    the codebook refused (`strict_codes`) or logged by `report_codes`."""
    p = Path(path)
    frame = read_fz_dta(p)
    check_respondents(frame, p, expected_respondents)
    if strict_codes:
        check_codes(frame, p)
    strays = stray_codes(frame)
    frame = add_mapping(frame, input_sha256(p))
    counts = report_codes(strays, frame, p)
    out, audit = check_calculator(frame, p)
    out.attrs[CODE_COUNTS] = counts  # for the build report (build below)
    return out, audit


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read `survey.raw.sce_financing`; write `house_sce_financing.parquet` atomically."""
    started = time.perf_counter()
    strict = "sce_financing_strict_codes" in improvements(survey)
    path = raw_path(survey, "sce_financing", raw_dir, hint="FZdata_raw.dta")
    frame, audit = clean_financing(path, strict_codes=strict)
    codes = frame.attrs.pop(CODE_COUNTS, {})
    report = write_outputs(survey, out_dir, {OUTPUT_NAME: frame, AUDIT_NAME: audit}, [path],
                           started)
    report.counts = {f"{column}.{what}": n for column, found in codes.items()
                     for what, n in found.items()}
    return report
