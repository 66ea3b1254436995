"""Synthetic NY Fed SCE core panel, and the answer building blocks all its workbooks share.

Demo data only, not survey answers; assembled and written by hhx.surveys.synthetic.sce.microdata, the
topical modules (hhx.surveys.synthetic.sce.topical) drawn for this panel's respondents.

- Core panel: each month `new_per_month` respondents enter; 97% stay the full 12 calendar
  months (answering each later month with probability 0.995), the rest fewer; `tenure` counts
  the surveys answered. Age (Q32), income (Q47) and marital status (D1) are asked at the first
  survey, D6 (income) later. Traits (education, numeracy, region, work status, home tenure) are
  fixed. Beliefs are a small personal component plus this month's outlook (Q1 / Q2, which
  change from month to month), traits (numeracy, income, home tenure, months unemployed) and
  month-to-month noise, so last month's answer alone is a noisy guide: the relationships the
  SCE tasks measure. Each respondent-month is in exactly one core workbook, by year (13-16,
  17-19, 20-24, latest >= 2025): the reference refuses repeated respondent-months.
- `lockin_entrants` extra respondents enter in February 2023 and 2024 (the demo sets it so
  that house_sce_lockin, a row-split task, has 100+ rows per split); the housing module treats
  those waves apart (hhx.surveys.synthetic.sce.topical).
- Answers the builder must flag, drawn with the building blocks here in every workbook:
  probabilities <= -900 (undocumented specials), outside 0-100, a "." text cell; density rows
  of every status class (including sums within the 1-point tolerance and ten bins of 10).
- Density means/IQRs (Q9_mean, Q9_iqr, Q9c_*) are computed from the bins as piecewise-uniform
  histograms (open bins closed at +-20%), an approximation of the NY Fed's fitted
  distributions.

`Sheet`, one worksheet as written, is here so that the topical modules (the housing
codebooks) and the assembly share it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from hhx.surveys.sce.items import CORE_PROBABILITY_ITEMS, density_columns

# A missing value as a np.where branch (numpy's stubs accept no bare None there).
NONE: Any = None

LOCKIN_YEARS = (2023, 2024)  # housing waves asking q6a_lock
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
# Label facts of spec 1.8 / 10_tasks 12, written out here so tests do not borrow the builder's.
FINANCE_CHANGE = {1: "much worse off", 2: "somewhat worse off", 3: "about the same",
                  4: "somewhat better off", 5: "much better off"}  # fmt: skip


@dataclass
class Sheet:
    """One worksheet as written: rows above the header, then the header and data rows."""

    name: str
    preamble: list[list] = field(default_factory=list)
    frame: pd.DataFrame | None = None  # header = columns; None = raw `rows` only (codebook)
    rows: list[list] = field(default_factory=list)


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
    status = np.where(asked, "valid", NONE).astype("object")
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
        columns[f"{family}_{stat}"] = np.where(stats_ok, np.round(stats[stat], 6), NONE)
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
    raw: dict[str, Any] = {
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
    _probability_items(rng, panel, raw, truth, mood, q16, employed, looking)
    stats_columns = _inflation_densities(rng, panel, raw, truth, mood)
    _work_and_household(rng, panel, raw, truth, age, mood, q16, looking)
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


def _probability_items(rng: np.random.Generator, panel: pd.DataFrame, raw: dict,
                       truth: pd.DataFrame, mood: np.ndarray, q16: np.ndarray,
                       employed: np.ndarray, looking: np.ndarray) -> None:
    """The core probability questions (raw answers, their clean values and status; in place)."""
    n = len(panel)
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


def _inflation_densities(rng: np.random.Generator, panel: pd.DataFrame, raw: dict,
                         truth: pd.DataFrame, mood: np.ndarray) -> dict:
    """The inflation density questions: bins into `raw`, their truth; returns the NY Fed's
    density statistics columns (written after the other answers)."""
    n = len(panel)
    infl = panel["infl_base"].to_numpy() - 0.4 * mood
    spread = np.where(panel["numeracy"].to_numpy() == "Low", 2.6, 1.4)
    families = {
        "Q9": (np.ones(n, bool), infl + rng.normal(0, 1.3, n), spread * rng.uniform(0.7, 1.3, n)),
        "Q9c": (np.ones(n, bool), infl * 0.8 + 0.6 + rng.normal(0, 1.3, n),
                spread * rng.uniform(0.8, 1.5, n)),
    }
    stats_columns: dict[str, Any] = {}
    for family, (asked, centre, spread_) in families.items():
        columns, bins_truth, status = _density_family(rng, family, asked, centre, spread_,
                                                      CORE_DENSITY_P)
        for name, values in columns.items():
            (raw if "_bin" in name else stats_columns)[name] = values
        for name, values in bins_truth.items():
            truth[name] = values
        truth[f"{family}__task_status"] = status
    return stats_columns


def _work_and_household(rng: np.random.Generator, panel: pd.DataFrame, raw: dict,
                        truth: pd.DataFrame, age: np.ndarray, mood: np.ndarray, q16: np.ndarray,
                        looking: np.ndarray) -> None:
    """Work status, job search, earnings outlook, demographics and household income (in
    place)."""
    n = len(panel)
    mi = panel["month_index"].to_numpy()
    tenure = panel["tenure"].to_numpy()
    first_month = panel.groupby("person")["month_index"].transform("min").to_numpy()
    work = panel["work"].to_numpy()
    employed = np.isin(work, [1, 2])
    not_working = ~employed
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
