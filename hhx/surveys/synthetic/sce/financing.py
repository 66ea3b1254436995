"""Seeded synthetic Fuster-Zafar experiment file (`FZdata_raw.dta`) in the replication format.

Demo data only, not survey answers. Stata 118 file, one row per respondent keyed by `userid`,
numeric codes with Stata value labels on the coded variables and variable labels on all, Stata
missing (.) where a question was not asked. At the default size it has the 1,211 respondents
of the release, 1,200 of them assigned to a rate version (`hypoversion` 1 = 4.5% first,
2 = 6.5% first), the rest with the experiment blank.

The stored calculator payments `hypo_mpayment_q1..q4` are computed here from the exact rational
annuity factor (fractions.Fraction) in 60-digit decimal arithmetic, independently of the
builder's floating-point calculator, so a build that reproduces them exactly has the formula
right. A few answers break the calculator's
input rules (down payment under 5% or above the price) so that validity flags are exercised.
"""

from __future__ import annotations

import argparse
import decimal
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hhx.errors import ConfigError
from hhx.io import atomic_path
from hhx.surveys.synthetic import STATA_TIME_STAMP, generator_label, write_sidecar

DEFAULT_RESPONDENTS = 1211
DEFAULT_UNASSIGNED = 11
CASH = 100_000
# Price relative to the budget at each rate (a 2-point higher rate lowers it by about 15%).
RATE_PRICE = {4.5: 1.08, 6.5: 0.92}
# Region as text (a str variable): the reference keeps the file's region as it reads it and
# writes it into the prompt ("You live in the South").
REGIONS = ["Northeast", "Midwest", "South", "West"]

VALUE_LABELS: dict[str, dict[int, str]] = {
    "hypoversion": {1: "4.5% first", 2: "6.5% first"},
    "male": {0: "Female", 1: "Male"},
    "college": {0: "No college degree", 1: "College degree"},
    "q38": {1: "Married or living with partner", 2: "Not married"},
    "q4": {0: "Rent", 1: "Own"},
    "q16_6": {0: "Has savings", 1: "No savings"},
    "zip_good_inv": {0: "No", 1: "Yes"},
    "hh_income": {
        1: "Less than $10,000", 2: "$10,000 to $19,999", 3: "$20,000 to $29,999",
        4: "$30,000 to $39,999", 5: "$40,000 to $49,999", 6: "$50,000 to $59,999",
        7: "$60,000 to $74,999", 8: "$75,000 to $99,999", 9: "$100,000 to $149,999",
        10: "$150,000 to $199,999", 11: "$200,000 or more",
    },
    "q14": {
        1: "Below 620", 2: "620-679", 3: "680-719", 4: "720-760", 5: "Above 760",
        6: "Don't know",
    },
}  # fmt: skip
VARIABLE_LABELS = {
    "userid": "SCE respondent id",
    "hypoversion": "Randomized initial mortgage rate version",
    "homevalue": "Value of comparable home in new city ($)",
    "hypo_q1": "Max price, 20% down at initial rate ($)",
    "hypo_d1": "Down payment, scenario 1 ($)",
    "hypo_q2": "Max price, flexible down payment, initial rate ($)",
    "hypo_d2": "Down payment, flexible, initial rate ($)",
    "hypo_q3": "Max price, flexible down payment, alternative rate ($)",
    "hypo_d3": "Down payment, flexible, alternative rate ($)",
    "hypo_q4": "Max price after $100,000 inheritance ($)",
    "hypo_d4": "Down payment after inheritance ($)",
    "hypo_mpayment_q1": "Calculator monthly payment, q1 ($)",
    "hypo_mpayment_q2": "Calculator monthly payment, q2 ($)",
    "hypo_mpayment_q3": "Calculator monthly payment, q3 ($)",
    "hypo_mpayment_q4": "Calculator monthly payment, q4 ($)",
    "liquid_savings": "Liquid savings ($000)",
    "region": "Census region",
    **{f"qtime_hypo_q{k}": f"Seconds on question hypo_q{k}" for k in range(1, 5)},
    "non_house_debt": "Non-housing debt ($)",
}


def _annuity(rate_percent: float) -> Fraction:
    r = Fraction(rate_percent).limit_denominator(100) / 1200
    growth = (1 + r) ** 360
    return r * growth / (growth - 1)


# Per rate, the exact factor on the loan: annuity - 0.95 * 0.34 * monthly rate (computed once:
# the fractions have thousands of digits).
_FACTOR = {
    rate: _annuity(rate) - Fraction(95, 100) * Fraction(34, 100)
    * (Fraction(rate).limit_denominator(100) / 1200)
    for rate in (4.5, 6.5)
}
# ... carried as 60-digit decimals: the payments then agree with exact arithmetic far beyond
# the 1e-6 margin kept from a half dollar (and cost microseconds, not milliseconds).
_CONTEXT = decimal.Context(prec=60)
_EXACT = {rate: _CONTEXT.divide(decimal.Decimal(f.numerator), decimal.Decimal(f.denominator))
          for rate, f in _FACTOR.items()}
_UPKEEP = _CONTEXT.divide(decimal.Decimal(335), decimal.Decimal(120_000))
_HALF = decimal.Decimal("0.5")


def exact_payment(price: int, down: int, comparable: int,
                  rate: float) -> tuple[int, decimal.Decimal]:
    """Calculator payment in 60-digit arithmetic: (whole dollars half up, unrounded value)."""
    c = _CONTEXT
    value = c.add(c.multiply(decimal.Decimal(int(price) - int(down)), _EXACT[rate]),
                  c.multiply(decimal.Decimal(int(comparable)), _UPKEEP))
    return math.floor(value + _HALF), value


def _near_half(value: decimal.Decimal) -> bool:
    """Unrounded payments within 1e-6 of .5 would make float and exact rounding disagree."""
    return abs((value - math.floor(value)) - _HALF) < decimal.Decimal("1e-6")


def _down_share(rng: np.random.Generator, liquid_usd: np.ndarray, income: np.ndarray) -> np.ndarray:
    """Share of the price put down: more savings and income, larger down payments."""
    logs = np.log1p(np.nan_to_num(liquid_usd, nan=0.0)) / np.log(1e6)  # ~0 (none) .. 1 ($1m)
    share = 0.04 + 0.28 * logs + 0.012 * (income - 6) + rng.normal(0, 0.025, len(income))
    return np.clip(share, 0.05, 0.6)


def _respondents(rng: np.random.Generator, n: int, unassigned: int) -> pd.DataFrame:
    """The respondents' ids, experiment version (NaN: not assigned) and survey answers."""
    f = pd.DataFrame({"userid": rng.choice(np.arange(70_001, 99_999), size=n, replace=False)})
    f["hypoversion"] = rng.choice([1.0, 2.0], size=n)
    f.loc[rng.choice(n, size=min(unassigned, n), replace=False), "hypoversion"] = np.nan
    f["age"] = rng.integers(22, 86, n)
    f["male"] = rng.integers(0, 2, n)
    f["college"] = rng.integers(0, 2, n)
    f["q38"] = rng.choice([1, 2], size=n, p=[0.6, 0.4])
    f["region"] = rng.choice(REGIONS, size=n).astype(object)
    f["residence_children_under18"] = rng.choice([0, 1, 2, 3], size=n, p=[0.6, 0.2, 0.15, 0.05])
    f["residence_children_over18"] = rng.choice([0, 1, 2], size=n, p=[0.8, 0.15, 0.05])
    f["hh_income"] = rng.integers(1, 12, n)
    f["q4"] = rng.choice([0, 1], size=n, p=[0.3, 0.7])
    owner = f["q4"] == 1
    f["house_value"] = np.where(owner, np.round(rng.lognormal(12.3, 0.5, n), -3), np.nan)
    f["house_debt"] = np.where(
        owner, np.round(f["house_value"] * rng.uniform(0, 0.8, n), -3), np.nan
    )
    f["q16_6"] = (rng.random(n) < 0.1).astype(int)
    savings = np.round(rng.lognormal(2.5 + 0.15 * (f["hh_income"] - 6), 1.3, n))  # $000
    f["liquid_savings"] = np.where(f["q16_6"] == 1, np.nan, savings)
    f["non_house_debt"] = np.where(rng.random(n) < 0.3, 0.0, np.round(rng.lognormal(8.5, 1.3, n)))
    f["q14"] = rng.integers(1, 7, n)
    f["total_numeracy"] = rng.integers(0, 6, n)
    f["q13"] = rng.integers(1, 11, n)
    f["prob_move_3yr"] = rng.integers(0, 101, n)
    f["zip_good_inv"] = rng.integers(0, 2, n)
    f["sce_acs_weights"] = np.round(rng.lognormal(0, 0.4, n), 6)
    f["homevalue"] = np.round(rng.lognormal(12.4, 0.45, n), -3)
    return f


def _answers(rng: np.random.Generator, version: float, home: int, budget: float, share: float,
             cash_to_price: float, cash_to_down: float) -> dict[str, float]:
    """One respondent's four hypothetical prices, down payments, payments and answer times."""
    initial, alternative = (4.5, 6.5) if version == 1 else (6.5, 4.5)
    q1 = home * budget * RATE_PRICE[initial]
    q2 = q1 * math.exp(rng.normal(0.02, 0.05))
    q3 = q2 * RATE_PRICE[alternative] / RATE_PRICE[initial] * math.exp(rng.normal(0, 0.05))
    q4 = q3 + CASH * cash_to_price
    prices = {1: q1, 2: q2, 3: q3, 4: q4}
    answers: dict[str, float] = {}
    for k, rate in ((1, initial), (2, initial), (3, alternative), (4, alternative)):
        price = max(int(round(prices[k], -3)), 10_000)
        if k == 1:
            down = price // 5  # prices are whole thousands, so exactly 20%
        elif rng.random() < 0.015:  # breaks the 5% minimum: not a valid calculator input
            down = int(price * 0.02)
        else:
            raw_down = price * share * math.exp(rng.normal(0, 0.05))
            if k == 4:
                raw_down = answers["hypo_d3"] + CASH * cash_to_down
            down = int(round(raw_down, -2))
            down = min(max(down, math.floor(0.05 * price + 0.5)), price)
        payment, unrounded = exact_payment(price, down, home, rate)
        while _near_half(unrounded):  # keep float and exact rounding on the same side
            price += 1000
            down = price // 5 if k == 1 else down
            payment, unrounded = exact_payment(price, down, home, rate)
        answers[f"hypo_q{k}"], answers[f"hypo_d{k}"] = price, down
        answers[f"hypo_mpayment_q{k}"] = payment
        answers[f"qtime_hypo_q{k}"] = round(float(rng.gamma(2.0, 20.0)), 3)  # seconds
    return answers


def synthetic_fz_frame(
    *, seed: int, n: int = DEFAULT_RESPONDENTS, unassigned: int | None = None
) -> pd.DataFrame:
    """The raw respondent table as written (NaN = Stata missing).

    The answers carry the experiment's relationships: a budget set by income and the comparable
    home's value; a higher rate lowers the price (about 15% from 4.5% to 6.5%); the flexible
    down payment follows savings and income; the $100,000 raises price and down payment by a
    respondent-specific share of it.
    """
    if n < 1:
        raise ConfigError(f"synthetic FZ data: n must be >= 1, got {n}")
    if unassigned is None:
        unassigned = DEFAULT_UNASSIGNED if n == DEFAULT_RESPONDENTS else max(0, n // 100)
    rng = np.random.default_rng(int(seed))
    f = _respondents(rng, n, unassigned)
    income = f["hh_income"].to_numpy("float64")
    liquid = np.where(f["q16_6"] == 1, 0.0, f["liquid_savings"] * 1000.0)
    budget = np.exp(0.07 * (income - 6) + rng.normal(0, 0.2, n))
    share = _down_share(rng, liquid, income)
    cash_to_price = rng.uniform(0.3, 1.0, n)  # of the $100,000, how much more they would pay
    cash_to_down = rng.uniform(0.4, 1.0, n)  # ... and how much of it they would put down
    rows: list[dict[str, Any]] = []
    for i in range(n):
        version = f.at[i, "hypoversion"]
        if np.isnan(version):
            rows.append({})
            continue
        rows.append(_answers(rng, version, int(f.at[i, "homevalue"]), budget[i], share[i],
                             cash_to_price[i], cash_to_down[i]))
    experiment = pd.DataFrame(rows, index=f.index)
    for k in range(1, 5):
        for column in (f"hypo_q{k}", f"hypo_d{k}", f"hypo_mpayment_q{k}", f"qtime_hypo_q{k}"):
            f[column] = experiment[column].astype("float64") if column in experiment else np.nan
    return f


def write_fz_dta(frame: pd.DataFrame, path: str | Path) -> Path:
    """A respondent table -> Stata 118 file with the value and variable labels above."""
    frame = frame.copy()
    coded = [c for c in VALUE_LABELS if c in frame and frame[c].notna().all()]
    for column in coded:  # labelled Stata variables must be integers; a column with . stays float
        frame[column] = frame[column].astype("int32")
    p = Path(path)
    with atomic_path(p) as tmp:
        frame.to_stata(
            tmp,
            write_index=False,
            version=118,
            time_stamp=STATA_TIME_STAMP,
            value_labels={c: VALUE_LABELS[c] for c in coded},
            variable_labels={k: v for k, v in VARIABLE_LABELS.items() if k in frame},
        )
    return p


def write_synthetic_fz(
    path: str | Path, *, seed: int, n: int = DEFAULT_RESPONDENTS, unassigned: int | None = None
) -> Path:
    """Write a synthetic `FZdata_raw.dta` (plus its `.synthetic.json` sidecar)."""
    p = write_fz_dta(synthetic_fz_frame(seed=seed, n=n, unassigned=unassigned), path)
    write_sidecar(p, generator_label("sce_financing"),
                  "seeded synthetic data in the Fuster-Zafar FZdata_raw.dta format; "
                  "not survey data", seed=int(seed), respondents=int(n))
    return p


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--n", type=int, default=DEFAULT_RESPONDENTS)
    a = parser.parse_args()
    write_synthetic_fz(a.path, seed=a.seed, n=a.n)


if __name__ == "__main__":
    main()
