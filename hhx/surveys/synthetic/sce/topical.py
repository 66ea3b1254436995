"""Synthetic NY Fed SCE topical modules: spending, labor market, policy, housing, job search.

Demo data only, not survey answers; drawn for the respondents of the core panel
(hhx.surveys.synthetic.sce.core, whose building blocks draw the answers) and assembled and
written by hhx.surveys.synthetic.sce.microdata.

- Modules on their calendars, answered by 80% of that month's core respondents: household
  spending Apr/Aug/Dec from 2014-12, labor market Mar/Jul/Nov from 2014-03, public policy
  Feb/Jun/Oct from 2015-10, housing every February 2014-2024 (names change with the
  questionnaire: HQ*/HQH* from 2014, hq6a_1/hq38 in 2019-2021, lower-case q*/qh* with q6a_lock
  in 2023-2024, see `_housing_names`), job search every October. Housing waves are
  `Data {year}` sheets with `Codebook {year}` sheets (code in column B, label in column C).
- In the February 2023 and 2024 waves, which the core panel's `lockin_entrants` join, 95%
  answer the housing module and owners hold mortgages more often; q6a_lock rises above the
  ordinary 3-year move chance by more the further the respondent's mortgage rate lies below
  the market's.
- Answers the builder must flag, beside the probabilities and densities of the core's building
  blocks: reservation wages in each unit with missing units before and after March 2017;
  job-search special codes 99999x and l8_months_no_work values that are negative, fractional,
  beyond 12 x age or with no usable age.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hhx.surveys.sce.items import HOUSING_YEARS
from hhx.surveys.synthetic.sce.core import (
    NONE,
    UNBOUNDED,
    Sheet,
    _density_family,
    _inject,
    _kinds,
    _probability,
)

POLICY_ITEMS = (1, 5, 6, 7, 9, 16)  # the tasks' four and the two other key items
# Label facts of spec 1.8 / 10_tasks 12, written out here so tests do not borrow the builder's.
RW_UNITS = {1: "hour", 2: "week", 3: "two weeks", 4: "month", 5: "year"}


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
    raw: dict[str, Any] = {"userid": rows["userid"].to_numpy(), "date": (mi // 12) * 100
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
    raw: dict[str, Any] = {"userid": rows["userid"].to_numpy(),
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
    raw: dict[str, Any] = {"userid": rows["userid"].to_numpy(),
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
        raw: dict[str, Any] = {"userid": rows["userid"].to_numpy()}
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
    raw: dict[str, Any] = {"year": mi // 12, "userid": rows["userid"].to_numpy(),
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
    status = np.where(employed, NONE, status)
    truth = pd.DataFrame(_keys(rows, 10))
    truth["l8_months_no_work__status"] = status
    truth["l8_months_no_work__clean"] = np.where(status == "valid", l8, np.nan)
    truth["weight_job_search"] = raw["survey_weight"]
    _earnings_and_reservation(rng, rows, raw, employed, months, age)
    _special_items(rng, raw, truth, employed, rows["looking"].to_numpy())
    return pd.DataFrame(raw), truth.copy()


def _earnings_and_reservation(rng: np.random.Generator, rows: pd.DataFrame, raw: dict,
                              employed: np.ndarray, months: np.ndarray, age: np.ndarray
                              ) -> None:
    """Hours and pay of the current or last job, desired hours and reservation wage (in
    place)."""
    n = len(rows)
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


def _special_items(rng: np.random.Generator, raw: dict, truth: pd.DataFrame,
                   employed: np.ndarray, looking: np.ndarray) -> None:
    """Job search items with documented special codes: raw answers, status and clean values
    (in place)."""
    n = len(employed)
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
        "js25c_referral_occup": ((1, 23), (999999,), looking),
        "js28_accept_start_time": ((1, 8), (999997,), looking),
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
        truth[f"{column}__status"] = np.where(asked, st, NONE)
        truth[f"{column}__clean"] = np.where(asked & ~special, values, np.nan)


def _special_name(column: str) -> dict[float, str]:
    from hhx.surveys.sce.items import JOB_SEARCH_SPECIAL_CODES

    return {float(k): v for k, v in JOB_SEARCH_SPECIAL_CODES[column].items()}
