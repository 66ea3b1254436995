"""Seeded synthetic NY Fed SCE public microdata: the nine workbooks of spec 00_common.md 1.8.

Demo data only, not survey answers. Written in the NY Fed layouts hhx reads (hhx.surveys.sce):
the exact file names under `core/`, `household_spending/`, `labor_market/`, `public_policy/`,
`housing/`, `job_search/`; sheet `Data` with one title row above the header (core, spending,
labor market), ten title/note rows (public policy) or none (job search); housing sheets
`Data {year}` with `Codebook {year}` sheets for 2014-2024 (code in column B, label in column C);
integer codes, blank cells for questions not asked.

Design
- Core panel: each month `new_per_month` respondents enter; 97% stay the full 12 calendar
  months (answering each later month with probability 0.995), the rest fewer; `tenure` counts
  the surveys answered. Age (Q32), income (Q47) and marital status (D1) are asked at the first
  survey, D6 (income) later. Traits (education, numeracy, region, work status, home tenure) are
  fixed. Beliefs are a small personal component plus this month's outlook (Q1 / Q2, which
  change from month to month), traits (numeracy, income, home tenure, months unemployed) and
  month-to-month noise, so last month's answer alone is a noisy guide: the relationships the
  SCE tasks measure. Each respondent-month is in exactly one core workbook, by year (13-16,
  17-19, 20-24, latest >= 2025): the reference refuses repeated respondent-months.
- Every workbook and sheet holds rows (the reference refuses empty ones); a span or size that
  would leave one empty is an error naming it.
- Modules on their calendars, answered by 80% of that month's core respondents: household
  spending Apr/Aug/Dec from 2014-12, labor market Mar/Jul/Nov from 2014-03, public policy
  Feb/Jun/Oct from 2015-10, housing every February 2014-2024 (names change with the
  questionnaire: HQ*/HQH* from 2014, hq6a_1/hq38 in 2019-2021, lower-case q*/qh* with q6a_lock
  in 2023-2024, see `_housing_names`), job search every October. `lockin_entrants` extra
  respondents enter in February 2023 and 2024 (the demo sets it so that house_sce_lockin, a
  row-split task, has 100+ rows per split); in those waves 95% answer the housing module and
  owners hold mortgages more often; q6a_lock rises above the ordinary 3-year move chance by
  more the further the respondent's mortgage rate lies below the market's.
- Answers the builder must flag: probabilities <= -900 (undocumented specials), outside 0-100,
  a "." text cell; density rows of every status class (including sums within the 1-point
  tolerance and ten bins of 10); reservation wages in each unit with missing units before and
  after March 2017; job-search special codes 99999x and l8_months_no_work values that are
  negative, fractional, beyond 12 x age or with no usable age.
- Density means/IQRs (Q9_mean, Q9_iqr, Q9c_*) are computed from the bins as piecewise-uniform
  histograms (open bins closed at +-20%), an approximation of the NY Fed's fitted
  distributions. Only the columns the builders and the reference's SCE tasks read are written
  (the NY Fed files have many more), which keeps the workbooks small; they are written by
  hhx.surveys.synthetic.xlsx.

`synthetic_sce(...)` returns the sheets as written and, per module, the truth a build must
recover (clean values and statuses the generator drew before writing codes, age and income
rule, the weight copy kept, reservation wage, labels).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import ConfigError
from hhx.io import atomic_path
from hhx.surveys.sce_items import BY_KEY, CORE_PROBABILITY_ITEMS, HOUSING_YEARS, density_columns
from hhx.surveys.synthetic import month_index, write_sidecar
from hhx.surveys.synthetic.xlsx import write_xlsx

GENERATOR = "hhx.surveys.synthetic.sce"
LOCKIN_YEARS = (2023, 2024)  # housing waves asking q6a_lock
NOTE = "seeded synthetic data in the NY Fed SCE public microdata workbook layout; not survey data"
CORE_FILE_YEARS = {"core_13_16": (2013, 2016), "core_17_19": (2017, 2019),
                   "core_20_24": (2020, 2024), "core_latest": (2025, 9999)}  # fmt: skip
SPECIAL_CODES = (-999, -998, -997)
OUT_OF_RANGE = (101, 120, 150, -5, -1)
BIN_UPPER = [np.inf, 12, 8, 4, 2, 0, -2, -4, -8, -12]  # bin1 = 12% or more ... bin10 <= -12%
BIN_LOWER = [12, 8, 4, 2, 0, -2, -4, -8, -12, -np.inf]
DENSITY_CLASSES = ("valid", "range_invalid", "partial_missing", "all_zero", "all_same_nonzero",
                   "sum_off_100")  # fmt: skip
DENSITY_P = (0.84, 0.03, 0.04, 0.03, 0.03, 0.03)
CORE_DENSITY_P = (0.97, 0.006, 0.006, 0.006, 0.006, 0.006)  # inflation densities: mostly valid
REGION_STATES = {
    "Northeast": ["NY", "PA", "NJ", "MA", "CT"], "Midwest": ["IL", "OH", "MI", "WI", "MN"],
    "South": ["TX", "FL", "GA", "NC", "VA"], "West": ["CA", "WA", "AZ", "CO", "OR"],
}  # fmt: skip
EDU_CODES = {"High School": [1, 2], "Some College": [3, 4], "College": [5, 6, 7, 8]}
# Q10 options: 1 full-time, 2 part-time, 3 not working but would like to, 4 temporarily laid
# off, 5 sick or other leave, 6 disabled, 7 retired, 8 student, 9 homemaker, 10 other.
WORK_STATUS_P = {1: 0.50, 2: 0.11, 3: 0.05, 4: 0.02, 5: 0.02, 6: 0.05, 7: 0.17, 8: 0.03,
                 9: 0.04, 10: 0.01}  # fmt: skip
POLICY_ITEMS = (1, 5, 6, 7, 9, 16)  # the tasks' four and the two other key items
# Label facts of spec 1.8 / 10_tasks 12, written out here so tests do not borrow the builder's.
FINANCE_CHANGE = {1: "much worse off", 2: "somewhat worse off", 3: "about the same",
                  4: "somewhat better off", 5: "much better off"}  # fmt: skip
RW_UNITS = {1: "hour", 2: "week", 3: "two weeks", 4: "month", 5: "year"}
TITLE = ("Survey of Consumer Expectations, \u00a9 2013-{year} Federal Reserve Bank of New York "
         "(FRBNY). The SCE data are available without charge at www.newyorkfed.org/"
         "microeconomics/sce and may be used subject to license terms posted there.")


@dataclass
class Sheet:
    """One worksheet as written: rows above the header, then the header and data rows."""

    name: str
    preamble: list[list] = field(default_factory=list)
    frame: pd.DataFrame | None = None  # header = columns; None = raw `rows` only (codebook)
    rows: list[list] = field(default_factory=list)


@dataclass
class SyntheticSCE:
    sheets: dict[str, list[Sheet]]  # raw key -> sheets in workbook order
    truth: dict[str, pd.DataFrame]  # module -> expected values, keyed like the build


def _month_index(text: str, what: str) -> int:
    return month_index(text, what, "SCE")


# ---------------------------------------------------------------------------------------------
# Building blocks


# Probability and share items without bounds in the reference's builder (its task key items):
# -999 there is an undocumented special, 150 a valid value. Spec facts, written out here.
UNBOUNDED = frozenset({"Q13new", "Q14new", "Q17new", "Q18new", "Q22new", "Q30new", "qsp2",
                       "qsp12a_1", "qsp12a_2", "qsp12a_3", "qsp13a_1", "qsp13a_2", "qsp13a_3",
                       "q113", "q115", "q121", "q122"})


def _inject(rng, clean: np.ndarray, asked: np.ndarray, *, special: float = 0.015,
            out_of_range: float = 0.015, text: float = 0.0, bounded: bool = True
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(raw cells, truth __clean, truth __status) for a 0-100 item with writing errors. In a
    bounded item a special code (<= -900) is out of range too (`invalid_range`); an unbounded
    one keeps out-of-range answers as valid."""
    n = len(clean)
    u = rng.random(n)
    raw = np.where(asked, clean, np.nan).astype("object")
    status = np.where(asked, "valid", None).astype("object")
    is_special = asked & (u < special)
    is_range = asked & (u >= special) & (u < special + out_of_range)
    is_text = asked & (u >= special + out_of_range) & (u < special + out_of_range + text)
    raw[is_special] = rng.choice(SPECIAL_CODES, size=int(is_special.sum())).astype(float)
    raw[is_range] = rng.choice(OUT_OF_RANGE, size=int(is_range.sum())).astype(float)
    raw[is_text] = "."
    status[is_text] = "undocumented_special"
    status[is_special] = "invalid_range" if bounded else "undocumented_special"
    if bounded:
        status[is_range] = "invalid_range"
    value = np.array([np.nan if v is None or isinstance(v, str) else float(v) for v in raw])
    truth_clean = np.where(status == "valid", value, np.nan).astype("float64")
    raw = np.array([None if isinstance(v, float) and np.isnan(v) else v for v in raw],
                   dtype="object")
    return raw, truth_clean, status


def _kinds(rng, eligible: np.ndarray, kinds: list[str], p: list[float]) -> np.ndarray:
    """Draw a kind per row; among eligible rows every kind appears at least once when there
    are enough of them, so that small files still exercise every rule."""
    out = rng.choice(kinds, size=len(eligible), p=p).astype("object")
    rows = np.flatnonzero(eligible)
    if len(rows) >= 3 * len(kinds):
        missing = [k for k in kinds if k not in set(out[rows])]
        spots = rng.choice(rows[out[rows] == kinds[0]], size=len(missing), replace=False)
        out[spots] = missing
    return out


def _probability(rng, base: np.ndarray, noise: float) -> np.ndarray:
    """0-100 answers around a respondent's base, rounded the way people answer (5s, 50)."""
    value = np.clip(base + rng.normal(0, noise, len(base)), 0, 100)
    coarse = rng.random(len(base)) < 0.6
    value = np.where(coarse, np.round(value / 5) * 5, np.round(value))
    return np.where(rng.random(len(base)) < 0.05, 50.0, value)


_erf = np.vectorize(math.erf)


def _bins(rng, centre: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """Integer percentages over the 10 bins (high to low), summing to 100."""
    upper = np.array(BIN_UPPER)[None, :]
    lower = np.array(BIN_LOWER)[None, :]
    c, s = centre[:, None], spread[:, None]
    cdf_u = 0.5 * (1 + _erf((upper - c) / (s * math.sqrt(2))))
    cdf_l = 0.5 * (1 + _erf((lower - c) / (s * math.sqrt(2))))
    p = np.clip(cdf_u - cdf_l, 0, 1) * 100
    out = np.floor(p)
    short = (100 - out.sum(axis=1)).astype(int)
    order = np.argsort(-(p - out), axis=1)
    for i in range(len(p)):
        out[i, order[i, : short[i]]] += 1
    return out


def _density_stats(bins: np.ndarray) -> dict[str, np.ndarray]:
    """Mean, variance, quartiles, IQR, P(deflation) of a piecewise-uniform histogram."""
    lo = np.array([12, 8, 4, 2, 0, -2, -4, -8, -12, -20], dtype=float)
    hi = np.array([20, 12, 8, 4, 2, 0, -2, -4, -8, -12], dtype=float)
    p = bins / bins.sum(axis=1, keepdims=True)
    mid = (lo + hi) / 2
    mean = (p * mid).sum(axis=1)
    second = (p * (hi**3 - lo**3) / (3 * (hi - lo))).sum(axis=1)
    # ascending order for quantiles
    p_asc, lo_asc, hi_asc = p[:, ::-1], lo[::-1], hi[::-1]
    cum = np.cumsum(p_asc, axis=1)

    def quantile(q: float) -> np.ndarray:
        j = (cum < q - 1e-12).sum(axis=1)
        j = np.minimum(j, 9)
        before = np.where(j > 0, cum[np.arange(len(p)), j - 1], 0.0)
        mass = p_asc[np.arange(len(p)), j]
        frac = np.where(mass > 0, (q - before) / np.where(mass > 0, mass, 1), 0.5)
        return lo_asc[j] + np.clip(frac, 0, 1) * (hi_asc[j] - lo_asc[j])

    q25, q50, q75 = quantile(0.25), quantile(0.5), quantile(0.75)
    return {"cent25": q25, "cent50": q50, "cent75": q75, "var": second - mean**2,
            "iqr": q75 - q25, "probdeflation": p[:, 5:].sum(axis=1) * 100, "mean": mean}


def _density_family(rng, family: str, asked: np.ndarray, centre: np.ndarray,
                    spread: np.ndarray, p: tuple[float, ...] = DENSITY_P
                    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
    """(raw bin + stat columns, truth bin __clean/__status columns, truth family status)."""
    n = len(asked)
    clean = _bins(rng, centre, spread)
    kind = rng.choice(len(DENSITY_CLASSES), size=n, p=p)
    raw = clean.astype("object")
    bin_status = np.full((n, 10), "valid", dtype="object")
    family_status = np.array([DENSITY_CLASSES[k] for k in kind], dtype="object")
    for i in range(n):
        k = DENSITY_CLASSES[kind[i]]
        top = int(np.argmax(clean[i]))
        if k == "valid":
            edge = rng.random()
            if edge < 0.05:  # ten bins of 10 sum to 100: valid, not "all the same"
                raw[i] = [10.0] * 10
            elif edge < 0.15:  # within the 1-point tolerance
                raw[i, top] = clean[i, top] + (-1.0 if clean[i, top] >= 100 else float(
                    rng.choice([-1.0, 1.0])))
        elif k == "range_invalid":
            j = int(rng.integers(0, 10))
            raw[i, j] = float(rng.choice([120.0, -10.0]))
            bin_status[i, j] = "invalid_range"
        elif k == "partial_missing":
            for j in rng.choice(10, size=int(rng.integers(1, 4)), replace=False):
                raw[i, j] = None
                bin_status[i, j] = None
        elif k == "all_zero":
            raw[i] = [0.0] * 10
        elif k == "all_same_nonzero":
            raw[i] = [float(rng.choice([5, 20]))] * 10
        else:  # sum_off_100: a forgotten or doubled answer, well beyond the tolerance
            raw[i, top] = clean[i, top] + (15.0 if clean[i, top] <= 80 else -float(
                rng.integers(5, 20)))
    raw[~asked] = None
    bin_status[~asked] = None
    family_status[~asked] = None
    numeric = np.array([[np.nan if v is None else float(v) for v in row] for row in raw])
    stats_ok = family_status == "valid"
    stats = _density_stats(np.where(np.isnan(numeric), 0, numeric) + 1e-9)
    columns, truth = {}, {}
    for j, name in enumerate(density_columns(family)):
        columns[name] = raw[:, j]
        truth[f"{name}__status"] = bin_status[:, j]
        truth[f"{name}__clean"] = np.where(bin_status[:, j] == "valid", numeric[:, j], np.nan)
    for stat in ("mean", "iqr"):  # the two statistics the tasks read
        columns[f"{family}_{stat}"] = np.where(stats_ok, np.round(stats[stat], 6), None)
    return columns, truth, family_status


# ---------------------------------------------------------------------------------------------
# Core panel


def _panel(rng, first: int, last: int, new_per_month: int,
           lockin_entrants: int = 0) -> pd.DataFrame:
    """Entry cohorts; most stay the full 12 months (which macro_sce_revision needs).
    `lockin_entrants` more enter in each February of the q6a_lock housing waves (drawn after
    the regular cohorts, so 0 leaves the panel as it was)."""
    rows = []
    person = 0
    extra = [y * 12 + 1 for y in LOCKIN_YEARS if first <= y * 12 + 1 <= last]
    cohorts = [(e, new_per_month) for e in range(first, last + 1)]
    cohorts += [(e, lockin_entrants) for e in extra]
    for entry, size in cohorts:
        for _ in range(size):
            window = 12 if rng.random() < 0.97 else int(rng.integers(1, 12))
            months = [entry] + [entry + k for k in range(1, window) if rng.random() < 0.995]
            for tenure, month in enumerate(months, start=1):
                if month <= last:
                    rows.append((person, month, tenure))
            person += 1
    return pd.DataFrame(rows, columns=["person", "month_index", "tenure"])


def _people(rng, n: int) -> pd.DataFrame:
    """Fixed respondent traits; beliefs have a small personal component (month-to-month noise
    dominates, so last month's answer is a noisy guide and the traits matter)."""
    age0 = np.clip(np.round(rng.normal(50, 16, n)), 18, 95).astype(int)
    edu = rng.choice(list(EDU_CODES), size=n, p=[0.3, 0.3, 0.4])
    numeracy = np.where(rng.random(n) < np.where(edu == "College", 0.7, 0.45), "High", "Low")
    region = rng.choice(list(REGION_STATES), size=n, p=[0.18, 0.21, 0.38, 0.23])
    income = np.clip(np.round(rng.normal(np.select(
        [edu == "High School", edu == "Some College"], [5.0, 6.5], 8.0), 2.2)), 1, 11).astype(int)
    work = rng.choice(list(WORK_STATUS_P), size=n, p=list(WORK_STATUS_P.values()))
    work = np.where((age0 > 67) & (rng.random(n) < 0.7), 7, work)
    work = np.where((work == 7) & (age0 < 50), 1, work)
    own = rng.random(n) < np.clip(0.35 + 0.006 * (age0 - 18) + 0.02 * income, 0, 0.95)
    q43 = np.where(own, 1, np.where(rng.random(n) < 0.88, 2, 3))
    low = numeracy == "Low"
    return pd.DataFrame({
        "userid": rng.choice(900_000, size=n, replace=False) + 70_000_000,
        "age0": age0, "edu": edu, "numeracy": numeracy, "region": region,
        "state": [rng.choice(REGION_STATES[r]) for r in region],
        "income": income, "work": work, "q43": q43,
        "q41": np.minimum(rng.integers(0, 40, n), age0 - 17),
        "q38": rng.choice([1, 2], size=n, p=[0.55, 0.45]),
        "infl_base": 2.2 + 1.8 * low + rng.normal(0, 0.6, n),
        "move_base": np.where(own, 6.0, 26.0) - 0.25 * (age0 - 50) + rng.normal(0, 3, n),
        "loss_base": np.where(work == 2, 24.0, 12.0) + np.where(edu == "College", -5, 3)
        + rng.normal(0, 3, n),
        "find_base": 30 + 4 * (income - 6) + np.where(edu == "College", 12, 0)
        + rng.normal(0, 4, n),
        "weight_base": rng.lognormal(0, 0.35, n),
        "q1_base": rng.choice([1, 2, 3, 4, 5], size=n, p=[0.07, 0.2, 0.47, 0.21, 0.05]),
        "q2_base": rng.choice([1, 2, 3, 4, 5], size=n, p=[0.04, 0.14, 0.5, 0.27, 0.05]),
        "unemp_base": 38 + 8 * low + rng.normal(0, 4, n),
        "save_base": 30 + 3 * (income - 6) + rng.normal(0, 4, n),
        "stock_base": 42 + 3 * (income - 6) + rng.normal(0, 4, n),
    })  # fmt: skip


def _core(rng, first: int, last: int, new_per_month: int, lockin_entrants: int = 0
          ) -> tuple[dict[str, pd.DataFrame], pd.DataFrame, pd.DataFrame]:
    """({core key: raw rows}, truth, panel rows with traits for the modules)."""
    panel = _panel(rng, first, last, new_per_month, lockin_entrants)
    people = _people(rng, int(panel["person"].max()) + 1 if len(panel) else 0)
    panel = panel.join(people, on="person").sort_values(["month_index", "userid"],
                                                        kind="stable").reset_index(drop=True)
    n = len(panel)
    mi = panel["month_index"].to_numpy()
    year, month = mi // 12, mi % 12 + 1
    tenure = panel["tenure"].to_numpy()
    first_month = panel.groupby("person")["month_index"].transform("min").to_numpy()
    age = panel["age0"].to_numpy() + (mi - first_month) // 12  # the build's rule (spec 0.6)
    work = panel["work"].to_numpy()
    employed = np.isin(work, [1, 2])
    not_working = ~employed
    looking = np.where(np.isin(work, [3, 4]), rng.random(n) < 0.95, rng.random(n) < np.where(
        employed, 0.2, 0.1))
    raw: dict[str, object] = {
        "userid": panel["userid"].to_numpy(), "date": year * 100 + month,
        "weight": np.round(panel["weight_base"].to_numpy() * rng.uniform(0.95, 1.05, n), 6),
        "tenure": tenure,
    }  # fmt: skip
    truth = pd.DataFrame({"respondent_id": panel["userid"].astype(str), "survey_year": year,
                          "survey_month": month, "panel_month": tenure, "age_years": age})
    for name in ("Q1", "Q2"):  # most months the same answer as the respondent's usual one
        base = panel[f"{name.lower()}_base"].to_numpy()
        step = np.clip(base + rng.choice([-1, 1], size=n), 1, 5)
        raw[name] = np.where(rng.random(n) < 0.6, base, step)
    mood = (raw["Q2"] - 3) * 1.0 + (raw["Q1"] - 3) * 0.5  # this month's outlook, shown to models
    # months unemployed (Q16) grow by one a month within a spell; job finding falls with them
    q16 = np.where(looking & not_working, (tenure + panel["person"].to_numpy() % 7) * 2, np.nan)
    raw["Q3"] = _probability(rng, panel["move_base"].to_numpy() - 3 * mood, 9)
    items = {
        "Q4new": (panel["unemp_base"].to_numpy() - 6 * mood, np.ones(n, bool)),
        "Q5new": (panel["save_base"].to_numpy() + 3 * mood, np.ones(n, bool)),
        "Q6new": (panel["stock_base"].to_numpy() + 6 * mood, np.ones(n, bool)),
        "Q13new": (panel["loss_base"].to_numpy() - 4 * mood, employed),
        "Q14new": (panel["loss_base"].to_numpy() + 10 + 3 * mood, employed),
        "Q17new": (panel["find_base"].to_numpy() + 25 - 0.8 * np.nan_to_num(q16) + 4 * mood,
                   looking),
        "Q18new": (panel["find_base"].to_numpy() * 0.6 - 0.5 * np.nan_to_num(q16) + 3 * mood,
                   looking),
        "Q20new": (np.full(n, 15.0), np.ones(n, bool)),
        "Q21new": (np.full(n, 25.0), np.ones(n, bool)),
        "Q22new": (panel["find_base"].to_numpy() + 6 * mood, employed),
        "Q30new": (np.full(n, 35.0), np.ones(n, bool)),
        "ES3new": (np.full(n, 60.0), panel["work"].to_numpy() == 1),
    }
    assert set(items) == set(CORE_PROBABILITY_ITEMS)
    for name, (base, asked) in items.items():
        value = _probability(rng, base, 12)
        raw[name], truth[f"{name}__clean"], truth[f"{name}__status"] = _inject(
            rng, value, asked, text=0.005 if name == "Q5new" else 0.0,
            bounded=name not in UNBOUNDED)
    infl = panel["infl_base"].to_numpy() - 0.4 * mood
    spread = np.where(panel["numeracy"].to_numpy() == "Low", 2.6, 1.4)
    families = {
        "Q9": (np.ones(n, bool), infl + rng.normal(0, 1.3, n), spread * rng.uniform(0.7, 1.3, n)),
        "Q9c": (np.ones(n, bool), infl * 0.8 + 0.6 + rng.normal(0, 1.3, n),
                spread * rng.uniform(0.8, 1.5, n)),
    }
    stats_columns = {}
    for family, (asked, centre, spread_) in families.items():
        columns, bins_truth, status = _density_family(rng, family, asked, centre, spread_,
                                                      CORE_DENSITY_P)
        for name, values in columns.items():
            (raw if "_bin" in name else stats_columns)[name] = values
        for name, values in bins_truth.items():
            truth[name] = values
        truth[f"{family}__task_status"] = status
    for k in range(1, 6):
        raw[f"Q10_{k}"] = (work == k).astype(int)
    raw["Q10_2"] = np.where((work == 8) & (rng.random(n) < 0.3), 1, raw["Q10_2"])
    raw["Q11"] = np.where(employed, np.where(rng.random(n) < 0.9, 1, 2), np.nan)
    raw["Q12new"] = np.where(employed, np.where(rng.random(n) < 0.88, 1, 2), np.nan)
    raw["Q15"] = np.where(looking, 1, 2)
    raw["Q16"] = q16
    raw["Q19"] = np.where(not_working, rng.integers(1, 120, n), np.nan)
    raw["Q25v2"] = np.where(rng.random(n) < 0.8, 1, 2)
    raw["Q25v2part2"] = np.round(np.clip(
        2.0 + 0.06 * (50 - age) + 0.25 * (panel["income"].to_numpy() - 6) + 1.2 * mood
        + 1.5 * employed + rng.normal(0, 1.2, n), 0, None), 1)
    entry = tenure == 1
    raw["Q32"] = np.where(entry, panel["age0"], np.nan)
    raw["Q41"] = panel["q41"].to_numpy() + (mi - first_month) // 12
    raw["Q42"] = np.minimum(raw["Q41"] + rng.integers(0, 30, n), age)
    raw["Q43"] = panel["q43"].to_numpy()
    raw["Q44"] = np.where(panel["q43"].to_numpy() == 1, np.where(rng.random(n) < 0.12, 1, 2), 2)
    raw["Q45b"] = rng.choice([1, 2, 3, 4, 5], size=n, p=[0.15, 0.35, 0.32, 0.14, 0.04])
    income = panel["income"].to_numpy().copy()
    drift = np.where(rng.random(n) < 0.1, rng.choice([-1, 1], size=n), 0)
    later = np.clip(income + drift, 1, 11)
    d6_missing = rng.random(n) < 0.02
    raw["Q47"] = np.where(entry, income, np.nan)
    raw["D1"] = np.where(entry, panel["q38"].to_numpy(), np.nan)
    raw["D3"] = np.where(rng.random(n) < 0.04, 1, 2)
    raw["D6"] = np.where(~entry & ~d6_missing, later, np.nan)
    truth["_HH_INC_DETAILED"] = np.where(entry, income, np.where(d6_missing, np.nan, later))
    raw.update(stats_columns)
    raw["_STATE"] = panel["state"].to_numpy()
    raw["_NUM_CAT"] = panel["numeracy"].to_numpy()
    raw["_REGION_CAT"] = panel["region"].to_numpy()
    raw["_EDU_CAT"] = panel["edu"].to_numpy()
    frame = pd.DataFrame(raw)
    truth["weight_core"] = frame["weight"].to_numpy().astype("float64")
    truth["Q1__label"] = frame["Q1"].map(FINANCE_CHANGE).to_numpy()

    files: dict[str, pd.DataFrame] = {}
    for key, (lo, hi) in CORE_FILE_YEARS.items():  # each respondent-month in one workbook
        files[key] = frame[(year >= lo) & (year <= hi)].reset_index(drop=True)
    context = panel[["userid", "month_index", "work", "age0", "q43", "income", "q38"]].copy()
    context["employed"], context["age"], context["looking"] = employed, age, looking
    return files, truth.copy(), context


# ---------------------------------------------------------------------------------------------
# Topical modules


def _module_rows(rng, context: pd.DataFrame, months: set[int], start: int) -> pd.DataFrame:
    pick = (context["month_index"] % 12 + 1).isin(months) & (context["month_index"] >= start)
    rows = context[pick & (rng.random(len(context)) < 0.8)].reset_index(drop=True)
    return rows


def _keys(rows: pd.DataFrame, month: int | None = None) -> dict[str, np.ndarray]:
    mi = rows["month_index"].to_numpy()
    return {"respondent_id": rows["userid"].astype(str).to_numpy(),
            "survey_year": mi // 12, "survey_month": mi % 12 + 1 if month is None
            else np.full(len(rows), month)}  # fmt: skip


def _shares(rng, n: int, choice: np.ndarray, combos: dict[int, tuple[int, ...]]
            ) -> np.ndarray:
    """Percent split over the categories a combination answer names; 0 for the others."""
    out = np.zeros((n, 3))
    for i in range(n):
        cats = combos[int(choice[i])]
        if len(cats) > 1:
            cut = np.sort(rng.integers(5, 96, len(cats) - 1))
            parts = np.diff(np.concatenate([[0], np.round(cut / 5) * 5, [100]]))
            out[i, list(cats)] = parts
    return out


def _spending(rng, context: pd.DataFrame, first_month: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = _module_rows(rng, context, {4, 8, 12}, max(first_month, 2014 * 12 + 11))
    n = len(rows)
    mi = rows["month_index"].to_numpy()
    raw: dict[str, object] = {"userid": rows["userid"].to_numpy(), "date": (mi // 12) * 100
                              + mi % 12 + 1}
    truth = pd.DataFrame(_keys(rows))
    # spending rose more often, and by more, for employed and higher-income households
    income = rows["income"].to_numpy().astype(float)
    employed = rows["employed"].to_numpy()
    raw["qsp1"] = np.where(rng.random(n) < 0.35 + 0.05 * (income - 6) + 0.3 * employed, 1, 2)
    qsp2 = np.round(np.abs(rng.normal(2 + 0.8 * (income - 6) + 6 * employed, 2.5, n)))
    qsp2 = np.where(rng.random(n) < 0.01, 300.0, qsp2)  # unbounded: kept as valid
    raw["qsp2"], truth["qsp2__clean"], truth["qsp2__status"] = _inject(
        rng, qsp2, np.ones(n, bool), out_of_range=0.0, bounded=False)
    for k in range(1, 8):
        raw[f"qsp3_{k}"] = (rng.random(n) < 0.12).astype(int)
    for k in range(1, 8):
        value = _probability(rng, np.full(n, 15.0), 10)
        raw[f"qsp5_{k}"], truth[f"qsp5_{k}__clean"], truth[f"qsp5_{k}__status"] = _inject(
            rng, value, np.ones(n, bool))
    columns, bins_truth, status = _density_family(
        rng, "qsp7dens", np.ones(n, bool), rng.normal(3, 2, n), rng.uniform(0.8, 3, n))
    raw.update({k: v for k, v in columns.items() if "_" in k and k.split("_")[-1].isdigit()})
    truth = pd.concat([truth, pd.DataFrame(bins_truth)], axis=1)
    truth["qsp7dens__task_status"] = status
    # qsp12n (income gain: save/invest, spend/donate, pay debt) and qsp13new (income loss:
    # cut spending, cut saving, borrow): 1-3 all to one use, 4-7 the combinations of them
    combos = {1: (0,), 2: (1,), 3: (2,), 4: (0, 1), 5: (0, 2), 6: (1, 2), 7: (0, 1, 2)}
    raw["qsp12n"] = rng.choice(list(combos), size=n, p=[0.3, 0.12, 0.18, 0.12, 0.14, 0.06,
                                                           0.08])
    raw["qsp13new"] = rng.choice(list(combos), size=n, p=[0.35, 0.2, 0.05, 0.2, 0.08, 0.05,
                                                             0.07])
    for prefix, choice in (("qsp12a", raw["qsp12n"]), ("qsp13a", raw["qsp13new"])):
        shares = _shares(rng, n, choice, combos)
        mixed = choice >= 4
        for k in range(3):
            name = f"{prefix}_{k + 1}"
            raw[name], truth[f"{name}__clean"], truth[f"{name}__status"] = _inject(
                rng, shares[:, k], mixed, special=0.01, out_of_range=0.01,
                bounded=name not in UNBOUNDED)
    raw["k2e"] = np.where(rng.random(n) < 0.55, 1, 2)
    truth["qsp12n__label"] = pd.Series(raw["qsp12n"]).map(QSP12N).to_numpy()
    return pd.DataFrame(raw), truth.copy()


QSP12N = {1: "save or invest all", 2: "spend or donate all", 3: "pay down debt all",
          4: "save or invest and spend or donate", 5: "save or invest and pay down debt",
          6: "spend or donate and pay down debt",
          7: "save or invest, spend or donate, and pay down debt"}  # fmt: skip
RW_RANGES = {1: (12, 45), 2: (450, 1800), 3: (900, 3600), 4: (1800, 8000), 5: (22000, 140000)}
RW_FACTOR = {1: 2080.0, 2: 52.0, 3: 26.0, 4: 12.0, 5: 1.0}


def _labor(rng, context: pd.DataFrame, first_month: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = _module_rows(rng, context, {3, 7, 11}, max(first_month, 2014 * 12 + 2))
    n = len(rows)
    mi = rows["month_index"].to_numpy()
    raw: dict[str, object] = {"userid": rows["userid"].to_numpy(),
                              "date": (mi // 12) * 100 + mi % 12 + 1}
    truth = pd.DataFrame(_keys(rows))
    employed = rows["employed"].to_numpy()
    raw["l3"] = np.where(employed, np.round(rng.lognormal(10.8, 0.6, n), -2), np.nan)
    offers = rng.choice([0, 1, 2, 3], size=n, p=[0.74, 0.17, 0.06, 0.03])
    raw["nl1"] = offers
    has = offers >= 1
    raw["nl2a_1"] = np.where(has, np.round(rng.lognormal(10.7, 0.5, n), -2), np.nan)
    raw["nl2b_1"] = np.where(has, np.where(rng.random(n) < 0.75, 1, 2), np.nan)
    # those without a job accept most first offers, the employed reject most
    accept = np.where(employed, 0.25, 0.85)
    decision = np.where(rng.random(n) < accept, np.where(rng.random(n) < 0.8, 1, 2), 3)
    raw["nl3_1"] = np.where(has, np.where(rng.random(n) < 0.1, 4, decision), np.nan)
    for name, base in (("nl4_1", 20.0), ("oo1_1", 18.0), ("oo1_2", 10.0), ("oo2e", 30.0),
                       ("oo2u", 12.0), ("q113", 25.0), ("q115", 40.0), ("q119", 15.0),
                       ("q121", 55.0), ("q122", 35.0)):
        raw[name], truth[f"{name}__clean"], truth[f"{name}__status"] = _inject(
            rng, _probability(rng, np.full(n, base), 12), np.ones(n, bool),
            bounded=name not in UNBOUNDED)
    # Reservation wage: unit asked until February 2017, annual amounts only from March 2017.
    annual_only = mi >= 2017 * 12 + 2
    unit = np.where(annual_only, 5, rng.choice([1, 2, 3, 4, 5], size=n,
                                               p=[0.38, 0.06, 0.04, 0.1, 0.42]))
    lo = np.array([RW_RANGES[u][0] for u in unit], dtype=float)
    hi = np.array([RW_RANGES[u][1] for u in unit], dtype=float)
    amount = lo + (hi - lo) * rng.beta(2, 3, n)
    amount = np.where(unit == 1, np.round(amount, 1), np.round(amount, -1))
    kind = _kinds(rng, ~annual_only, ["ok", "missing_amount", "invalid_source_amount",
                                      "nonpositive_amount", "unit_blank"],
                  [0.86, 0.05, 0.03, 0.02, 0.04])
    rw2a = np.where(kind == "invalid_source_amount", -999.0,
                    np.where(kind == "nonpositive_amount", 0.0, amount))
    rw2a = np.where(kind == "missing_amount", np.nan, rw2a)
    unit_written = np.where(annual_only | (kind == "unit_blank"), np.nan, unit)
    raw["rw2a"], raw["rw2b"] = rw2a, unit_written
    status = np.where(kind == "ok", np.array([f"valid_{RW_UNITS[x].replace(' ', '_')}"
                                              for x in unit]), kind)
    status = np.where((kind == "unit_blank") & ~annual_only, "missing_pre2017_unit", status)
    status = np.where((kind == "unit_blank") & annual_only, "valid_year", status)
    truth["reservation_wage_annual_full_time_status"] = status
    truth["reservation_wage_annual_full_time"] = np.where(
        np.char.startswith(status.astype(str), "valid_"),
        amount * np.array([RW_FACTOR[x] for x in unit]), np.nan)
    truth["nl3_1__label"] = pd.Series(raw["nl3_1"]).map(
        {1: "accepted", 2: "accepted", 3: "rejected", 4: "still deciding"}).to_numpy()
    return pd.DataFrame(raw), truth.copy()


def _policy(rng, context: pd.DataFrame, first_month: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = _module_rows(rng, context, {2, 6, 10}, max(first_month, 2015 * 12 + 9))
    n = len(rows)
    mi = rows["month_index"].to_numpy()
    raw: dict[str, object] = {"userid": rows["userid"].to_numpy(),
                              "date": (mi // 12) * 100 + mi % 12 + 1}
    truth = pd.DataFrame(_keys(rows))
    for item in POLICY_ITEMS:
        no_idea = rng.random(n) < 0.08
        up = rng.uniform(0, 100, n)
        same = rng.uniform(0, 100 - up)
        triad = np.round(np.stack([up, same, 100 - up - same], axis=1))
        triad[:, 2] = 100 - triad[:, 0] - triad[:, 1]
        for j in range(3):
            name = f"qp1x{j + 1}_{item}"
            raw[name], truth[f"{name}__clean"], truth[f"{name}__status"] = _inject(
                rng, triad[:, j], ~no_idea, special=0.005, out_of_range=0.005)
        raw[f"qp1x4_{item}"] = no_idea.astype(int)
        direction = rng.choice([1, 2], size=n)
        raw[f"hidqp2_{item}"] = direction
        # benefits up / taxes down help; the effect is small for most households
        helps = np.where(item in (9, 16, 1, 11, 17), direction == 2, direction == 1)
        shift = np.where(helps, 0.6, -0.6) + rng.normal(0, 0.8, n)
        raw[f"qp2_{item}"] = np.clip(np.round(3 + shift), 1, 5).astype(int)
    for item in (5, 6, 9, 16):
        truth[f"qp2_{item}__label"] = pd.Series(raw[f"qp2_{item}"]).map(
            {1: "very_negative", 2: "somewhat_negative", 3: "no_impact",
             4: "somewhat_positive", 5: "very_positive"}).to_numpy()
    return pd.DataFrame(raw), truth.copy()


LOAN_STATUS = {1: "Yes, mortgage(s) only", 2: "Yes, home equity loans/lines of credit only",
               3: "Yes, both mortgage(s) and home equity loans/lines of credit", 4: "No"}
RATE_TYPE = {1: "Fixed rate", 2: "Adjustable rate", 3: "Don't know"}
YES_NO = {1: "Yes", 2: "No"}


def _housing_names(year: int) -> dict[str, str]:
    """Questionnaire names by wave: upper-case HQ*/HQH* from 2014 (the 2014 codebook's HQ1_1,
    HQH0, HQH2_1, HQH5, HQH5m2_1), hq6a_1 / hq38 in 2019-2021, and lower-case q*/qh* in the
    2023-2024 waves that ask q6a_lock. The lower-case loan status qh5 only in the q6a_lock
    waves is what the reference's house_sce_lockin needs: it reads the loan status and rate
    from the first of (qh5, HQH5) / (qh5m2_1, HQH5m2_1) present in the housing table at all,
    and the official table has 734 rows from 2023-2024 (spec 00_common 5.3)."""
    if year >= 2023:
        return {"local": "q1_1", "move": "q6a_1", "partner": "q38", "own": "qh0",
                "price": "qh2_1", "value": "qh3_1", "second": "qh4a", "loan": "qh5",
                "balance": "qh5a_1", "rate_type": "qh5m", "rate": "qh5m2_1", "lock": "q6a_lock"}
    middle = 2019 <= year <= 2021
    return {"local": "HQ1_1", "move": "hq6a_1" if middle else "HQ6a_1",
            "partner": "hq38" if middle else "HQ38", "own": "HQH0", "price": "HQH2_1",
            "value": "HQH3_1", "second": "HQH4a", "loan": "HQH5", "balance": "HQH5a_1",
            "rate_type": "HQH5m", "rate": "HQH5m2_1"}


def _housing(rng, context: pd.DataFrame, first_month: int
             ) -> tuple[list[Sheet], pd.DataFrame]:
    sheets, truths = [], []
    for year in HOUSING_YEARS:
        rows = context[(context["month_index"] == year * 12 + 1)
                       & (context["month_index"] >= first_month)]
        names = _housing_names(year)
        lock = "lock" in names  # the lock-in waves: nearly everyone asked, more mortgages
        rows = rows[rng.random(len(rows)) < (0.95 if lock else 0.8)].reset_index(drop=True)
        n = len(rows)
        owner = rows["q43"].to_numpy() == 1
        raw: dict[str, object] = {"userid": rows["userid"].to_numpy()}
        if year <= 2016:
            raw["date"] = np.full(n, year * 100 + 2)
        raw["weights"] = np.round(rng.lognormal(0, 0.3, n), 6)
        local = np.round(rng.lognormal(12.4, 0.5, n), -3)
        raw[names["local"]] = local
        ordinary = _probability(rng, np.where(owner, 15.0, 40.0), 10)
        raw[names["move"]] = ordinary
        raw[names["partner"]] = rows["q38"].to_numpy()
        raw[names["own"]] = np.where(owner, 1, 2)
        price = np.where(owner, np.round(local * rng.uniform(0.5, 1.2, n), -3), np.nan)
        raw[names["price"]] = price
        raw[names["value"]] = np.where(owner, np.round(price * rng.uniform(1.0, 1.8, n), -3),
                                       np.nan)
        raw[names["second"]] = np.where(owner, np.where(rng.random(n) < 0.1, 1, 2), np.nan)
        loan_p = [0.7, 0.03, 0.12, 0.15] if lock else [0.55, 0.04, 0.08, 0.33]
        loan = np.where(owner, rng.choice([1, 2, 3, 4], size=n, p=loan_p), np.nan)
        raw[names["loan"]] = loan
        mortgage = np.isin(loan, [1, 3])
        raw[names["balance"]] = np.where(mortgage, np.round(price * rng.uniform(0.2, 0.9, n),
                                                            -3), np.nan)
        raw[names["rate_type"]] = np.where(mortgage, rng.choice([1, 2, 3], size=n,
                                                                p=[0.85, 0.1, 0.05]), np.nan)
        raw[names["rate"]] = np.where(mortgage, np.round(rng.uniform(2.5, 7.0, n), 2), np.nan)
        if lock:
            # keeping a low rate matters more the further it lies below the market's (~6.5%)
            gain = 3.0 * np.clip(6.5 - np.nan_to_num(raw[names["rate"]], nan=6.5), 0, None)
            raw["q6a_lock"] = np.where(mortgage, np.clip(ordinary + gain + rng.normal(2, 4, n),
                                                         0, 100).round(), np.nan)
        frame = pd.DataFrame(raw)
        codebook = _codebook(year, names, list(frame.columns))
        sheets += [Sheet(f"Data {year}", frame=frame), Sheet(f"Codebook {year}", rows=codebook)]
        truth = pd.DataFrame({"respondent_id": rows["userid"].astype(str).to_numpy(),
                              "survey_year": year, "survey_month": 2,
                              "weight_housing": raw["weights"], "loan_column": names["loan"],
                              "loan_label": pd.Series(loan).map(LOAN_STATUS).to_numpy(),
                              "partner_column": names["partner"],
                              "partner_label": pd.Series(raw[names["partner"]]).map(
                                  {1: "Yes", 2: "No"} if names["partner"] != "hq38"
                                  else {1: "yes", 2: "no"}).to_numpy()})
        truths.append(truth)
    return sheets, pd.concat(truths, ignore_index=True)


QUESTION_TEXT = {
    "local": "What is the typical value of a home in your zip code? (US dollars)",
    "move": "What is the percent chance that you will move to a different primary residence "
            "over the next 3 years?",
    "partner": "Are you currently married or living with a partner?",
    "own": "Do you own your primary residence?",
    "price": "What was the purchase price of your primary residence? (US dollars)",
    "value": "What is the current value of your primary residence? (US dollars)",
    "second": "Do you own any other homes?",
    "loan": "Do you currently have a mortgage or home equity loan/line of credit on your "
            "primary residence?",
    "balance": "What is the outstanding balance on your mortgage(s)? (US dollars)",
    "rate_type": "Is the interest rate on your mortgage fixed or adjustable?",
    "rate": "What is the interest rate on your mortgage? (percent)",
    "lock": "Suppose you could keep your current mortgage rate when buying another home. What "
            "is the percent chance that you will move over the next 3 years?",
}  # fmt: skip


def _codebook(year: int, names: dict[str, str], columns: list[str]) -> list[list]:
    """NY Fed codebook layout: variable row, then code (B) / label (C) rows, blank row."""
    labels = {"partner": YES_NO, "own": YES_NO, "second": YES_NO, "loan": LOAN_STATUS,
              "rate_type": RATE_TYPE}
    rows: list[list] = [[f"SCE Housing Survey {year}: codebook"], []]
    rows.append(["[userid]: Respondent ID"])
    rows.append([])
    bracket = year % 2 == 0  # the two header styles of the codebooks
    for concept, name in names.items():
        if name not in columns:
            continue
        text = QUESTION_TEXT[concept]
        rows.append([f"[{name}]: {text}"] if bracket else [name, text])
        if concept in labels:
            rows.append([None, "Code", "Label"])
            rows += [[None, code, label] for code, label in labels[concept].items()]
        else:
            rows.append([None, "Open numeric response"])
        rows.append([])
    return rows


def _job_search(rng, context: pd.DataFrame, first_month: int
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = _module_rows(rng, context, {10}, max(first_month, 2013 * 12 + 9))
    n = len(rows)
    mi = rows["month_index"].to_numpy()
    employed = rows["employed"].to_numpy()
    age = rows["age"].to_numpy().astype(float)
    raw: dict[str, object] = {"year": mi // 12, "userid": rows["userid"].to_numpy(),
                              "responseid": rng.choice(10**7, size=n, replace=False) + 10**7}
    raw["survey_weight"] = np.round(rng.lognormal(0, 0.35, n), 6)
    # months since paid work (asked of those not working) and the ways it can be unusable
    kind = _kinds(rng, ~employed, ["valid", "never", "negative", "fraction", "too_many",
                                   "no_age"], [0.76, 0.08, 0.04, 0.04, 0.04, 0.04])
    no_age = kind == "no_age"
    raw["age"] = np.where(no_age, np.nan, age)
    raw["hhsize"] = rng.choice([1, 2, 3, 4, 5, 6], size=n, p=[0.25, 0.35, 0.15, 0.15, 0.07,
                                                            0.03])
    raw["numchildren_under18"] = np.minimum(rng.choice([0, 1, 2, 3], size=n,
                                                       p=[0.6, 0.18, 0.15, 0.07]),
                                            raw["hhsize"] - 1)
    raw["l1a_lfs_rc"] = np.where(employed, 1, np.where(rows["looking"], 3, 4))
    raw["l1_lfs_rc"] = np.where(employed, np.nan, np.where(rows["looking"], 1, 2))
    raw["l2_num_jobs"] = np.where(employed, np.where(rng.random(n) < 0.9, 1, 2), 0)
    raw["l7_days_spent_searching"] = np.where(rows["looking"], rng.integers(0, 40, n), np.nan)
    raw["l7b_looked_for_work_last8wks"] = np.where(rows["looking"], 1, 2)
    months = np.minimum(rng.integers(0, 200, n), (age - 16) * 12).astype(float)
    l8 = np.select([kind == "never", kind == "negative", kind == "fraction",
                    kind == "too_many"],
                   [999995.0, -3.0, months + 0.5, age * 12 + 24], months)
    l8 = np.where(employed, np.nan, l8)
    raw["l8_months_no_work"] = l8
    status = np.select([kind == "never", kind == "negative", kind == "fraction"],
                       ["never_had_paid_job", "invalid_negative", "invalid_noninteger"],
                       np.where(no_age, "age_unavailable_for_validation",
                                np.where(kind == "too_many", "exceeds_age_in_months", "valid")))
    status = np.where(employed, None, status)
    truth = pd.DataFrame(_keys(rows, 10))
    truth["l8_months_no_work__status"] = status
    truth["l8_months_no_work__clean"] = np.where(status == "valid", l8, np.nan)
    truth["weight_job_search"] = raw["survey_weight"]
    hours = np.clip(np.round(rng.normal(38, 9, n)), 5, 80)
    hourly = np.round(rng.lognormal(3.1, 0.45, n), 2)
    pay_form = rng.choice(["hrly", "wkly", "ann"], size=n, p=[0.4, 0.2, 0.4])
    for prefix, hrs_name, who in (("l11_cps_job_earn", "l10_cps_job_usual_hrs", employed),
                                  ("l24_last_job_earn", "l22_last_job_usual_hrs", ~employed)):
        raw[hrs_name] = np.where(who, hours, np.nan)
        raw[f"{prefix}_hrly"] = np.where(who & (pay_form == "hrly"), hourly, np.nan)
        raw[f"{prefix}_wkly"] = np.where(who & (pay_form == "wkly"), np.round(hourly * hours),
                                         np.nan)
        raw[f"{prefix}_ann"] = np.where(who & (pay_form == "ann"),
                                        np.round(hourly * hours * 52, -2), np.nan)
    # reservation wage and desired hours move with the situation the task shows (work status,
    # months without work, income, children, age), so the last job's pay and hours alone are
    # a biased guide and a model can learn the rest
    out_months = np.where(employed, 0.0, np.clip(months, 0, 120))
    income = rows["income"].to_numpy().astype(float)
    ratio = np.exp(0.04 + 0.12 * employed - 0.002 * out_months + 0.025 * (income - 6)
                   + rng.normal(0, 0.04, n))
    children = raw["numchildren_under18"]
    desired = (hours - 3.0 * children + 5.0 * ~employed - 0.3 * np.clip(age - 55, 0, None)
               + rng.normal(0, 2.5, n))
    raw["rw1a_desired_hours"] = np.clip(np.round(desired), 5, 80)
    raw["rw2h_reserv_wage"] = np.round(hourly * ratio, 2)
    specials = {  # column -> (plausible values, special codes, share asked)
        "ec1a_cps_job_employer_type_rc": ((1, 6), (999999,), employed),
        "ec4b_cps_job_temp_duration": ((1, 24), (999992,), employed),
        "ec5_cps_job_commute_time": ((5, 90), (999996,), employed),
        "el2a_last_job_employer_type_rc": ((1, 6), (999999,), ~employed),
        "el6_last_job_commute_time": ((5, 90), (999996,), ~employed),
        "es9_selfemp_commute_time": ((0, 60), (999996,), employed),
        "hh4_spouse_earn_hrly": ((10, 80), (999999,), None),
        "jh10_prev_job_earn_hrly": ((10, 70), (999999,), None),
        "jh10s_prev_job_earn_hrly": ((10, 70), (999999,), None),
        "jh13_cpsj_wks_spent_search": ((0, 30), (999993, 999999), employed),
        "jh13b_cpsj_wks_btwn_jobs": ((0, 26), (999994, 999999), employed),
        "jh14_cpsj_applications": ((0, 40), (999999,), employed),
        "jh15_cpsj_contacts": ((0, 20), (999999,), employed),
        "jh15b_cpsj_contacts_unsolicited": ((0, 10), (999999,), employed),
        "jh15c_cpsj_contacts_referral": ((0, 10), (999999,), employed),
        "jh16_cpsj_offers": ((0, 5), (999999,), employed),
        "jh1c_cpsj_refer_occup": ((1, 23), (999999,), employed),
        "jh2b_cpsj_wks_btwn_jobs": ((0, 26), (999999,), employed),
        "jh2bs_semp_wks_btwn_jobs": ((0, 26), (999999,), None),
        "jh2d_cpsj_adv_notice_mos": ((0, 12), (999999,), None),
        "jh2ds_semp_adv_notice_mos": ((0, 12), (999999,), None),
        "jh5bs_semp_usual_hrs": ((10, 70), (999999,), None),
        "jh9_cps_job_start_earn_hrly": ((10, 60), (999999,), employed),
        "js25c_referral_occup": ((1, 23), (999999,), rows["looking"].to_numpy()),
        "js28_accept_start_time": ((1, 8), (999997,), rows["looking"].to_numpy()),
        "rw3b_pct_incr_relocation": ((0, 50), (999998,), None),
        "rw4b_pct_incr_commute": ((0, 40), (999998,), None),
        "rw6b_pct_incr_hours": ((0, 40), (999998,), None),
        "rw7b_pct_incr_healthins": ((0, 30), (999998,), None),
    }
    for accept in ("rw3_accept_relocation", "rw4_accept_commute", "rw6_accept_hours",
                   "rw7_accept_healthins"):
        raw[accept] = (rng.random(n) < 0.6).astype(int)
    for column, ((lo, hi), codes, asked) in specials.items():
        asked = rng.random(n) < 0.4 if asked is None else asked
        values = rng.integers(lo, hi + 1, n).astype(float)
        code = np.where(rng.random(n) < 0.06, rng.choice(codes, size=n), 0).astype(float)
        for c in codes:  # each documented code at least once where enough rows are asked
            free = np.flatnonzero(asked & (code == 0))
            if len(free) >= 5 and not (asked & (code == c)).any():
                code[rng.choice(free)] = c
        special = code > 0
        raw[column] = np.where(asked, np.where(special, code, values), np.nan)
        st = np.where(special, pd.Series(code).map(_special_name(column)).to_numpy(), "valid")
        truth[f"{column}__status"] = np.where(asked, st, None)
        truth[f"{column}__clean"] = np.where(asked & ~special, values, np.nan)
    return pd.DataFrame(raw), truth.copy()


def _special_name(column: str) -> dict[float, str]:
    from hhx.surveys.sce_items import JOB_SEARCH_SPECIAL_CODES

    return {float(k): v for k, v in JOB_SEARCH_SPECIAL_CODES[column].items()}


# ---------------------------------------------------------------------------------------------
# Assemble and write


def synthetic_sce(*, seed: int, start: str = "2013-06", end: str = "2026-06",
                  new_per_month: int = 12, lockin_entrants: int = 0) -> SyntheticSCE:
    """The nine workbooks' sheets and the truth, without writing anything."""
    first, last = _month_index(start, "start"), _month_index(end, "end")
    if last < first:
        raise ConfigError(f"synthetic SCE: end {end} is before start {start}")
    if new_per_month < 1:
        raise ConfigError(f"synthetic SCE: new_per_month must be >= 1, got {new_per_month}")
    rng = np.random.default_rng(int(seed))
    if lockin_entrants < 0:
        raise ConfigError(f"synthetic SCE: lockin_entrants must be >= 0, got {lockin_entrants}")
    files, core_truth, context = _core(rng, first, last, new_per_month, lockin_entrants)
    sheets: dict[str, list[Sheet]] = {}
    for key in CORE_FILE_YEARS:
        hi = min(CORE_FILE_YEARS[key][1], last // 12)
        sheets[key] = [Sheet("Data", [[TITLE.format(year=hi)]], files[key])]
    spending, spending_truth = _spending(rng, context, first)
    labor, labor_truth = _labor(rng, context, first)
    policy, policy_truth = _policy(rng, context, first)
    housing, housing_truth = _housing(rng, context, first)
    jobs, jobs_truth = _job_search(rng, context, first)
    title = [[TITLE.format(year=last // 12)]]
    sheets["household_spending"] = [Sheet("Data", title, spending)]
    sheets["labor_market"] = [Sheet("Data", title, labor)]
    policy_notes = [
        ["SCE Public Policy Survey: respondent-level public microdata"],
        [TITLE.format(year=last // 12)],
        [],
        ["Notes:"],
        ["qp1x1_N, qp1x2_N, qp1x3_N: percent chance of an increase, no change, a decrease in "
         "policy N; qp1x4_N = 1 if the respondent has no idea what policy N is."],
        ["hidqp2_N: direction of the hypothetical change shown (1 increase/expansion, "
         "2 decrease/reduction)."],
        ["qp2_N: expected impact on the household (1 very negative ... 5 very positive)."],
        ["Policies: 1 gasoline tax, 5 federal welfare benefits, 6 unemployment benefits, "
         "9 payroll tax rate, 16 average income tax rate, ..."],
        ["Blank cells: question not asked."],
        [],
    ]
    sheets["public_policy"] = [Sheet("Data", policy_notes, policy)]
    sheets["housing"] = [Sheet("Disclaimer", rows=[[TITLE.format(year=2024)]]), *housing]
    sheets["job_search"] = [
        Sheet("Disclaimer", rows=[[TITLE.format(year=last // 12)]]),
        Sheet("Notes", rows=[["SCE Job Search: October Labor Market Survey microdata"],
                             ["Codes 999992-999999 are documented special answers."]]),
        Sheet("Data", frame=jobs),
    ]
    truth = {"core": core_truth, "household_spending": spending_truth, "labor_market": labor_truth,
             "public_policy": policy_truth, "housing": housing_truth, "job_search": jobs_truth}
    empty = [f"{key} sheet {sh.name}" for key, group in sheets.items() for sh in group
             if sh.frame is not None and sh.frame.empty]
    if empty:  # the reference refuses a workbook or sheet without rows
        raise ConfigError(
            f"synthetic SCE {start} to {end} with new_per_month={new_per_month} leaves "
            f"{', '.join(empty)} without rows; use a span covering 2013-12 to 2025-01 (every "
            "core workbook, February housing waves 2014-2024, October job search) and more "
            "respondents")
    return SyntheticSCE(sheets, truth)


def _cell(v):
    """Python value for the workbook: blank for NaN/None, ints for whole-number codes."""
    if v is None:
        return None
    if isinstance(v, (float, np.floating)):
        if np.isnan(v):
            return None
        return int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v)
    if isinstance(v, np.integer):
        return int(v)
    return v


def _frame_rows(frame: pd.DataFrame) -> list[list]:
    columns = [[_cell(v) for v in frame[c].tolist()] for c in frame.columns]
    return [list(r) for r in zip(*columns, strict=True)] if len(frame) else []


def write_workbook(path: Path, sheets: list[Sheet]) -> Path:
    """One workbook (hhx.surveys.synthetic.xlsx, much faster than openpyxl), atomically."""
    def rows(sheet: Sheet) -> list[list]:
        out = [*sheet.preamble]
        if sheet.frame is not None:
            out += [list(sheet.frame.columns), *_frame_rows(sheet.frame)]
        return out + sheet.rows

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        write_xlsx(tmp, [(sheet.name, rows(sheet)) for sheet in sheets])
    return path


def write_synthetic_sce(sce_dir: str | Path, *, seed: int, start: str = "2013-06",
                        end: str = "2026-06", new_per_month: int = 12,
                        lockin_entrants: int = 0) -> dict[str, Path]:
    """Write the nine workbooks under `sce_dir` (the reference's data/raw/micro/sce) with
    their `.synthetic.json` sidecars; returns raw key -> path. Same seed, same content."""
    data = synthetic_sce(seed=seed, start=start, end=end, new_per_month=new_per_month,
                         lockin_entrants=lockin_entrants)
    out: dict[str, Path] = {}
    for key, sheets in data.sheets.items():
        path = Path(sce_dir) / Path(BY_KEY[key].path).relative_to("micro/sce")
        out[key] = write_workbook(path, sheets)
        write_sidecar(path, GENERATOR, NOTE, seed=int(seed), start=start, end=end,
                      new_per_month=int(new_per_month), lockin_entrants=int(lockin_entrants))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sce_dir", type=Path, help="folder that gets core/, housing/, ...")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--start", default="2013-06")
    parser.add_argument("--end", default="2026-06")
    parser.add_argument("--new-per-month", type=int, default=12)
    a = parser.parse_args()
    write_synthetic_sce(a.sce_dir, seed=a.seed, start=a.start, end=a.end,
                        new_per_month=a.new_per_month)


if __name__ == "__main__":
    main()
