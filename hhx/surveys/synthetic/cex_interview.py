"""Seeded synthetic BLS CE Interview packages (`intrvwYY.zip`) in the public-use FMLI layout.

Demo data only: consumer units (CUs), their characteristics and spending are drawn from simple
models (spending rises with income, family size and, for health, age; cars and furniture are
lumpy; levels near the CE's 2019 means; 3% of CUs report almost no income and 2% of interviews
almost no spending, so the builder's screens have cases); nothing computed from them is a
finding about households.

Panel. Each quarter `n_cu_per_quarter` new CUs enter; a CU is interviewed once a quarter, 3
months apart, in four public interviews (a wave is missed with probability 0.08, 4% leave early).
Interview numbers are 2-5 in the bounded designs before 2015 and 1-4 from the 2015 design (NEWID
= 7-digit CU id + interview number). At the sample redesigns (1986Q2, and the first quarters of
1996, 2005 and 2015) every CU is replaced by a new-frame CU with a new id.

Packages. `intrvwYY.zip` holds `intrvwYY/fmliYY1x.csv`, `fmliYY2.csv`, `fmliYY3.csv`,
`fmliYY4.csv` and the next year's first quarter `fmli<YY+1>1.csv`, plus `mtbiYYQ[x].csv` rent
lines (UCC 210110) of renters in the MTBI header of BLS's layout stub. A first quarter is
therefore published twice, by consecutive packages; the later copy has recalibrated weights
(FINLWT21), everything else equal.

Layout. The first columns are those of BLS's 2021 layout stub (NEWID, FINLWT21, QINTRVMO,
QINTRVYR, WTREP01-44, unquoted, LF line ends, missing values written NA, NEWID with 8 digits,
QINTRVMO with 2). The other columns are the FMLI variables the builder reads, their flag
companions (names from the CE data dictionary: AGE_REF_, CUTE_URE, EDUC0REF, FINCB_XM...,
D = valid, A = valid blank, B = invalid blank) and the other summary variables that make up the
totals (FDHOME, SHELT, PERINS...); their order, the 2-digit QINTRVYR of files before 1996 and
the GROCER*/redesign columns (newer than the dictionary) are not taken from real files. Each
package keeps the layout of its last own quarter (its next-year file too). By the dictionary:
summary variables *CQ/*PQ in 1980-81 and from 1990, Z* summaries (one 3-month amount) in
1984-89; FINCBTAX/FSALARYX except 2004Q2-2005Q4, FINCBTXM/FSALARYM from 2004; INTERI from 2002Q2;
no STATE in 1992 and the legacy 1980-81 state codes; race codes 1-4 (5 = other from 1996) until
2003Q1 and 1-6 after; education codes 1-7 until 1995 (EDUCA2 0 = don't know in 1980-81), 0 and
10-16 from 1996 (17, listed to 2013Q1, is not drawn); CUTENURE 3 from 1996; GROCERCQ/PQ from
2023Q2.

Spending identity as in the CE summaries: TOTEXP = FOOD + ALCBEV + HOUS + APPAR + TRANS + HEALTH +
ENTERT + PERSCA + READ + EDUCA + TOBACC + MISC + CASHCO + PERINS (PERINS = LIFINS + RETPEN; FOOD =
FDHOME + FDAWAY; HOUS = SHELT + UTIL + HOUSOP + furnishings; TRANS = GASMO + PUBTRA + other
vehicle costs). The current-quarter part (CQ) is the reference months that fall in the
interview's calendar quarter: none for an interview in a quarter's first month, two in its third.

Rebates and stimulus payments. Each CU's payments are drawn from its own stream (seed, CU id),
so the other draws do not depend on them, and are spent in part: in the month a payment
arrives 8% of it goes to food away from home, 8% to entertainment, 5% to apparel, 4% to
miscellaneous and 20% to furnishings (a durable), in the next month 40% of that again; whether
or not the CU reports it. Rebate addenda (own report stream). Package 2001 also holds
`intrvw01/intrvw01/Addendum - Tax Rebate/TAX013.csv` and `TAX014.csv` (the reference's path):
about 2/3 of CUs got a 2001 rebate ($600 married, $500 single parent, $300 other; a second $300
check for half the CUs with another adult), paid July-September mostly, a few October-December;
96% of 2001Q3/Q4 interviews have an addendum record; TAXQ1 1/2 by whether a check falls in the
reference months, the checks in TAXMO1-5 / TAXAMT1-5; flags D (valid), A (valid blank), and
some B/C (2% lead-in refused or don't know, 2% month not reported, 4% amount don't know).
Package 2008 also holds `expn08/rbt08.csv`: 85% of CUs got a stimulus payment ($300 or $600 per
adult filer by income, + $300 per child), EFT (40%) in May-June, checks May-July, a few later;
90% report it in the interview whose reference months hold the payment month (USDINTMO/YR =
that interview); 3% of rows lack the month, 3% the amount (flag C), which the keep rule drops.
The layout (column order, NA for missing) of these files is not taken from real files.
"""

from __future__ import annotations

import csv
import functools
import io
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import ConfigError
from hhx.io import atomic_path
from hhx.surveys.synthetic import write_sidecar

GENERATOR = "hhx.surveys.synthetic.cex_interview"


def _qi(year: int, quarter: int) -> int:
    return year * 4 + quarter


def _year_of(q: int) -> int:
    return (q - 1) // 4


def _quarter_of(q: int) -> int:
    return (q - 1) % 4 + 1


# Columns of BLS's real 2021 layout stub (intrvw21/fmli212.csv), in order.
STUB_HEAD = ["NEWID", "FINLWT21", "QINTRVMO", "QINTRVYR"] + [f"WTREP{i:02d}" for i in range(1, 45)]
MTBI_COLUMNS = ["NEWID", "COST", "PUBFLAG", "UCC", "REF_MO", "REF_YR"]

# Summary bases written as <base>CQ / <base>PQ, and the 1984-89 Z* name of each.
SUMMARY_BASES: dict[str, str] = {
    "TOTEXP": "ZTOTAL", "FOOD": "ZFOODTOT", "FDHOME": "ZFOODHOM", "FDAWAY": "ZFOODAWY",
    "ALCBEV": "ZALCBEVS", "HOUS": "ZHOUSING", "SHELT": "ZSHELTER", "UTIL": "ZUTILSPS",
    "HOUSOP": "ZHOUSEOP", "APPAR": "ZAPPAREL", "TRANS": "ZTRANPRT", "GASMO": "ZGASMOTO",
    "PUBTRA": "ZPUBTRAN", "HEALTH": "ZHEALTH", "ENTERT": "ZENTRMNT", "PERSCA": "ZPERCARE",
    "READ": "ZREADING", "EDUCA": "ZEDUCATN", "TOBACC": "ZTOBACCO", "MISC": "ZMISCELS",
    "CASHCO": "ZCASHCTB", "LIFINS": "ZLIFOTHR", "RETPEN": "ZRETIRES", "PERINS": "ZPERLINS",
}  # fmt: skip
# Summary base -> truth column (the 3-month total the builder should recover).
TRUTH_COLUMNS: dict[str, str] = {
    "TOTEXP": "cons_total", "FOOD": "cons_food", "HOUS": "cons_housing",
    "TRANS": "cons_transport", "HEALTH": "cons_health", "EDUCA": "cons_education",
    "APPAR": "cons_apparel", "ENTERT": "cons_entertainment", "PERSCA": "cons_personal_care",
    "CASHCO": "cons_cash_contrib", "LIFINS": "cons_life_insurance",
    "RETPEN": "cons_retirement_pension_social_security", "UTIL": "cons_utilities",
    "ALCBEV": "cons_alcohol", "TOBACC": "cons_tobacco", "HOUSOP": "cons_housop",
    "PUBTRA": "cons_pubtra", "GASMO": "cons_gasmo", "MISC": "cons_misc", "READ": "cons_read",
    "FDHOME": "cons_grocery", "FDAWAY": "cons_food_away",
}  # fmt: skip

# Monthly spending components: (share of the CU's monthly budget, log-sd, P(month is zero)).
COMPONENTS: dict[str, tuple[float, float, float]] = {
    "FDHOME": (0.095, 0.20, 0.0), "FDAWAY": (0.050, 0.50, 0.05), "ALCBEV": (0.012, 0.60, 0.3),
    "SHELT": (0.220, 0.05, 0.0), "UTIL": (0.075, 0.15, 0.0), "HOUSOP": (0.025, 0.50, 0.2),
    "FURN": (0.030, 1.00, 0.5), "APPAR": (0.030, 0.70, 0.2), "GASMO": (0.035, 0.25, 0.05),
    "PUBTRA": (0.008, 1.00, 0.6), "VEHOTH": (0.090, 0.40, 0.1), "HEALTH": (0.080, 0.30, 0.05),
    "ENTERT": (0.050, 0.60, 0.1), "PERSCA": (0.013, 0.40, 0.1), "READ": (0.003, 0.80, 0.4),
    "EDUCA": (0.020, 1.20, 0.7), "TOBACC": (0.008, 0.20, 0.0), "MISC": (0.016, 0.80, 0.2),
    "CASHCO": (0.030, 1.00, 0.4), "LIFINS": (0.006, 0.20, 0.0),
}  # fmt: skip

# FIPS -> (rough population weight, Census region code of the CE: 1 NE, 2 MW, 3 S, 4 W); the 48
# codes the CE data dictionary lists from 1984 (43 aside).
STATES: dict[str, tuple[float, int]] = {
    "01": (5.0, 3), "02": (0.7, 4), "04": (7.0, 4), "05": (3.0, 3), "06": (39.0, 4),
    "08": (5.8, 4), "09": (3.6, 1), "10": (1.0, 3), "11": (0.7, 3), "12": (21.0, 3),
    "13": (10.7, 3), "15": (1.4, 4), "16": (1.8, 4), "17": (12.7, 2), "18": (6.8, 2),
    "19": (3.2, 2), "20": (2.9, 2), "21": (4.5, 3), "22": (4.6, 3), "23": (1.3, 1),
    "24": (6.0, 3), "25": (6.9, 1), "26": (10.0, 2), "27": (5.6, 2), "28": (3.0, 3),
    "29": (6.1, 2), "30": (1.1, 4), "31": (1.9, 2), "32": (3.1, 4), "33": (1.4, 1),
    "34": (8.9, 1), "35": (2.1, 4), "36": (19.5, 1), "37": (10.5, 3), "39": (11.7, 2),
    "40": (4.0, 3), "41": (4.2, 4), "42": (12.8, 1), "44": (1.1, 1), "45": (5.1, 3),
    "46": (0.9, 2), "47": (6.8, 3), "48": (29.0, 3), "49": (3.2, 4), "51": (8.5, 3),
    "53": (7.6, 4), "54": (1.8, 3), "55": (5.8, 2),
}  # fmt: skip
# The 1980-81 files' state codes (CE data dictionary): FIPS -> legacy codes.
LEGACY_STATE_CODES: dict[str, tuple[str, ...]] = {
    "25": ("14",), "16": ("16",), "21": ("21", "61"), "22": ("22", "72"), "23": ("23",),
    "31": ("31",), "32": ("32",), "33": ("33",), "34": ("34",), "55": ("35", "55"),
    "41": ("41", "92"), "42": ("42",), "29": ("43",), "47": ("47", "62"), "24": ("52",),
    "53": ("53", "91"), "51": ("54",), "37": ("56",), "13": ("58",), "12": ("59",),
    "01": ("63",), "48": ("74",), "08": ("84",), "04": ("86",), "06": ("93",), "15": ("95",),
}  # fmt: skip

# Sample redesign quarters -> the new frame (spec 00_common 1.5).
CUTS = [
    (_qi(1986, 2), "frame_1986"),
    (_qi(1996, 1), "frame_1996"),
    (_qi(2005, 1), "frame_2005"),
    (_qi(2015, 1), "frame_2015"),
]
FRAME_IDS = {"pre_1986": 1, "frame_1986": 2, "frame_1996": 3, "frame_2005": 4, "frame_2015": 5}


def _frame_at(q: int) -> str:
    frame = "pre_1986"
    for cut, name in CUTS:
        if q >= cut:
            frame = name
    return frame


# --------------------------------------------------------------------------------------------
# Layout by quarter (the package's last own quarter for its next-year file)


def _z_era(layout_q: int) -> bool:
    return _qi(1984, 1) <= layout_q <= _qi(1989, 4)


def _has_fincbtax(layout_q: int) -> bool:
    return not (_qi(2004, 2) <= layout_q <= _qi(2005, 4))


def fmli_columns(layout_q: int) -> list[str]:
    """FMLI header for a file in the layout of quarter `layout_q` (see the module notes)."""
    cols = list(STUB_HEAD if layout_q >= _qi(1990, 1) else STUB_HEAD[:4])
    if layout_q >= _qi(2002, 2):
        cols.append("INTERI")
    if layout_q >= _qi(2002, 1):
        cols.append("CUID")
    pairs = [
        ("AGE_REF", "AGE_REF_"), ("AGE2", "AGE2_"), ("BLS_URBN", None),
        ("CUTENURE", "CUTE_URE"), ("EDUC_REF", "EDUC0REF"), ("EDUCA2", "EDUCA2_"),
        ("FAM_SIZE", "FAM__IZE"), ("FAM_TYPE", "FAM__YPE"),
    ]  # fmt: skip
    if _has_fincbtax(layout_q):
        pairs += [("FINCBTAX", "FINCBT_X")]
    if layout_q >= _qi(2004, 1):
        pairs += [("FINCBTXM", "FINCB_XM")]
    if _has_fincbtax(layout_q):
        pairs += [("FSALARYX", "FSAL_RYX")]
    if layout_q >= _qi(2004, 1):
        pairs += [("FSALARYM", "FSAL_RYM")]
    pairs += [
        ("MARITAL1", "MARI_AL1"), ("PERSLT18", "PERS_T18"), ("RACE2", "RACE2_"),
        ("REF_RACE", "REF__ACE"), ("REGION", None), ("SEX_REF", "SEX_REF_"), ("SEX2", "SEX2_"),
    ]  # fmt: skip
    if _year_of(layout_q) != 1992:
        pairs.append(("STATE", "STATE_" if _qi(1996, 1) <= layout_q <= _qi(2005, 1) else None))
    for var, flag in pairs:
        cols.append(var)
        if flag:
            cols.append(flag)
    if _z_era(layout_q):
        cols += list(SUMMARY_BASES.values())
    else:
        cols += [f"{base}{part}" for base in SUMMARY_BASES for part in ("CQ", "PQ")]
        if layout_q >= _qi(1999, 2):
            cols += ["TFOODTOC", "TFOODTOP"]
        if layout_q >= _qi(2023, 2):
            cols += ["GROCERCQ", "GROCERPQ"]
    return cols


def _race_code(race: int, layout_q: int) -> int:
    """Race 1 White, 2 Black, 3 Native American, 4 Asian, 5 Pacific Islander, 6 multiracial ->
    the code of the era."""
    if layout_q >= _qi(2003, 2):
        return race
    if race == 5:
        return 4  # "Asian or Pacific Islander"
    if race == 6:
        return 5 if layout_q >= _qi(1996, 1) else 1  # "Other" from 1996
    return race


def _educ_code(level: int, layout_q: int) -> str:
    """Education level 1-8 (no schooling ... graduate degree) -> the code text of the era."""
    if layout_q < _qi(1996, 1):
        return str({1: 7, 2: 1, 3: 2, 4: 3, 5: 4, 6: 4, 7: 5, 8: 6}[level])
    code = {1: 0, 2: 10, 3: 11, 4: 12, 5: 13, 6: 14, 7: 15, 8: 16}[level]
    return f"{code:02d}"


def _money(cents: int) -> str:
    return str(cents // 100) if cents % 100 == 0 else f"{cents / 100:.2f}"


# --------------------------------------------------------------------------------------------
# Simulation


@dataclass
class _CU:
    cu_id: int
    frame: str
    position: int
    month_offset: int
    age: int
    sex: int
    married: bool
    spouse_age: int
    race: int
    race2: int
    educ: int
    educ2: int
    kids: int
    fam_size: int
    fam_type: int
    state: str | None
    legacy_state: str | None
    region: int
    urban: int
    tenure: int
    income20: float
    salary_share: float
    propensity: float
    drinks: bool
    smokes: bool
    missouri_43: bool


def _new_cu(rng: np.random.Generator, cu_id: int, frame: str, position: int, offset: int) -> _CU:
    age = int(np.clip(rng.normal(50, 16), 21, 87))
    sex = 1 if rng.random() < 0.48 else 2
    married = rng.random() < (0.25 if age < 28 else 0.55 if age < 70 else 0.4)
    kids = int(min(rng.poisson(1.1 if married else 0.4), 5)) if age < 56 else 0
    extra = int(rng.random() < 0.08)
    fam_size = 1 + int(married) + kids + extra
    if fam_size == 1:
        fam_type = 8
    elif married:
        fam_type = 1 if kids + extra == 0 else (3 if kids and not extra else 5)
    else:
        fam_type = (6 if sex == 1 else 7) if kids else 9
    race = int(rng.choice([1, 2, 3, 4, 5, 6], p=[0.79, 0.125, 0.01, 0.055, 0.005, 0.015]))
    educ = int(rng.choice(range(1, 9), p=[0.01, 0.03, 0.07, 0.26, 0.18, 0.1, 0.22, 0.13]))
    codes = list(STATES)
    weights = np.array([STATES[c][0] for c in codes])
    state = codes[int(rng.choice(len(codes), p=weights / weights.sum()))]
    legacy = LEGACY_STATE_CODES.get(state)
    tenure_p = [0.2, 0.05, 0.01, 0.7, 0.03, 0.01] if age < 35 else [0.45, 0.25, 0.01, 0.26,
                                                                       0.02, 0.01]
    log_income = (
        10.75 + 0.13 * (educ - 4) + 0.3 * married + 0.1 * extra
        - 0.0006 * (age - 50) ** 2 + rng.normal(0, 0.55)
    )  # fmt: skip
    working = age < 62 or rng.random() < 0.25
    income20 = float(np.exp(log_income))
    if rng.random() < 0.03:  # a few CUs report (almost) no income, as in the real files
        income20, working = float(rng.uniform(0.0, 1500.0)), False
    return _CU(
        cu_id=cu_id,
        frame=frame,
        position=position,
        month_offset=offset,
        age=age,
        sex=sex,
        married=married,
        spouse_age=int(np.clip(age + rng.normal(-1, 4), 18, 90)),
        race=race,
        race2=race if rng.random() < 0.9 else int(rng.choice([1, 2, 4])),
        educ=educ,
        educ2=int(np.clip(educ + rng.integers(-1, 2), 1, 8)),
        kids=kids,
        fam_size=fam_size,
        fam_type=fam_type,
        state=None if rng.random() < 0.08 else state,
        legacy_state=str(rng.choice(legacy)) if legacy else None,
        region=STATES[state][1],
        urban=1 if rng.random() < 0.93 else 2,
        tenure=int(rng.choice(range(1, 7), p=tenure_p)),
        income20=income20,
        salary_share=float(rng.uniform(0.7, 0.97)) if working else 0.0,
        propensity=float(rng.lognormal(0.0, 0.2)),
        drinks=rng.random() < 0.6,
        smokes=rng.random() < 0.18,
        missouri_43=rng.random() < 0.5,
    )


def _price_level(year: int, month: int) -> float:
    """Rough nominal price level relative to 2020 (about 3% a year)."""
    return float(1.03 ** (year + (month - 1) / 12 - 2020))


_NAMES = list(COMPONENTS)
_SHARE = np.array([v[0] for v in COMPONENTS.values()])
_SD = np.array([v[1] for v in COMPONENTS.values()])
_PZERO = np.array([v[2] for v in COMPONENTS.values()])
_AT = {name: i for i, name in enumerate(_NAMES)}


def _monthly(rng: np.random.Generator, cu: _CU, year: int, month: int, salary: float,
             scale: float, payments: dict[tuple[int, int], int]) -> dict[str, int]:
    """One month's spending (cents) by component for a CU (one vector draw per month)."""
    level = _price_level(year, month)
    budget = (
        level * 3400.0 * (max(cu.income20, 15000.0) / 60000.0) ** 0.5 * cu.fam_size**0.35
        * cu.propensity * scale * float(rng.lognormal(0.0, 0.1))
    )  # fmt: skip
    share, p_zero = _SHARE.copy(), _PZERO.copy()
    share[_AT["HEALTH"]] *= float(np.clip(0.6 + (cu.age - 30) / 40, 0.5, 2.2))
    if cu.kids == 0 and cu.age > 30:
        p_zero[_AT["EDUCA"]] = 0.95
    if cu.tenure in (5, 6):  # no cash rent / student housing
        share[_AT["SHELT"]] = 0.05
    noise, zero = rng.lognormal(0.0, _SD), rng.random(len(_NAMES)) < p_zero
    amount = np.where(zero, 0.0, budget * share * noise)
    # A smoker's habit does not scale with the budget; abstainers buy none.
    amount[_AT["TOBACC"]] = 120.0 * level * scale * noise[_AT["TOBACC"]] if cu.smokes else 0.0
    if not cu.drinks:
        amount[_AT["ALCBEV"]] = 0.0
    cents = np.rint(amount * 100).astype(np.int64)
    out = dict(zip(_NAMES, cents.tolist(), strict=True))
    if rng.random() < 0.012 * scale:  # a vehicle bought this month (half of them used)
        price = 24000.0 * level * float(rng.lognormal(0.0, 0.5))
        out["VEHOTH"] += int(round(price * (0.5 if rng.random() < 0.5 else 1.0) * 100))
    out["RETPEN"] = int(round(0.075 * salary / 12 * 100))
    # Rebates and stimulus payments are partly spent in the month they arrive and the next.
    for part_of, (y, m) in ((1.0, (year, month)),
                            (0.4, (year - (month == 1), (month - 2) % 12 + 1))):
        paid = payments.get((y, m), 0) * part_of * scale
        if paid:
            for name, part in RESPONSE.items():
                out[name] += int(round(paid * part * 100))
    return out


def _summaries(months: list[dict[str, int]]) -> dict[str, int]:
    """Component months -> CE summary amounts (cents), the identity of the module notes."""
    c = {k: sum(m[k] for m in months) for k in months[0]}
    s = {
        "FDHOME": c["FDHOME"], "FDAWAY": c["FDAWAY"], "ALCBEV": c["ALCBEV"],
        "SHELT": c["SHELT"], "UTIL": c["UTIL"], "HOUSOP": c["HOUSOP"], "APPAR": c["APPAR"],
        "GASMO": c["GASMO"], "PUBTRA": c["PUBTRA"], "HEALTH": c["HEALTH"],
        "ENTERT": c["ENTERT"], "PERSCA": c["PERSCA"], "READ": c["READ"], "EDUCA": c["EDUCA"],
        "TOBACC": c["TOBACC"], "MISC": c["MISC"], "CASHCO": c["CASHCO"],
        "LIFINS": c["LIFINS"], "RETPEN": c["RETPEN"],
    }  # fmt: skip
    s["FOOD"] = s["FDHOME"] + s["FDAWAY"]
    s["HOUS"] = s["SHELT"] + s["UTIL"] + s["HOUSOP"] + c["FURN"]
    s["TRANS"] = s["GASMO"] + s["PUBTRA"] + c["VEHOTH"]
    s["PERINS"] = s["LIFINS"] + s["RETPEN"]
    s["TOTEXP"] = sum(
        s[k] for k in ("FOOD", "ALCBEV", "HOUS", "APPAR", "TRANS", "HEALTH", "ENTERT", "PERSCA",
                       "READ", "EDUCA", "TOBACC", "MISC", "CASHCO", "PERINS")
    )  # fmt: skip
    return s


@dataclass
class _Record:
    cu: _CU
    q: int
    year: int
    month: int
    number: int
    position: int
    weights: tuple[float, float]  # (first copy, recalibrated later copy)
    wtrep: list[float | None]
    income: float
    income_reported: bool
    salary: float
    cq: dict[str, int]
    pq: dict[str, int]
    trip_food: tuple[int, int]
    rent: list[tuple[int, int, int]]  # (cents, ref month, ref year)
    educ2_unknown: bool

    @property
    def newid(self) -> str:
        return f"{self.cu.cu_id:07d}{self.number}"


def _interview(rng: np.random.Generator, cu: _CU, q: int,
               payments: dict[tuple[int, int], int]) -> _Record:
    year, quarter = _year_of(q), _quarter_of(q)
    month = 3 * (quarter - 1) + 1 + cu.month_offset
    level = _price_level(year, month)
    income = round(cu.income20 * level * float(rng.lognormal(0.0, 0.1)))
    salary = round(income * cu.salary_share)
    # About 2% of interviews report almost no spending (as some real ones do).
    scale = 0.01 if rng.random() < 0.02 else 1.0
    months = []  # the three reference months before the interview month
    for back in (3, 2, 1):
        m, y = month - back, year
        if m < 1:
            m, y = m + 12, y - 1
        months.append((y, m, _monthly(rng, cu, y, m, salary, scale, payments)))
    current = [d for y, m, d in months if y == year and (m - 1) // 3 + 1 == quarter]
    previous = [d for y, m, d in months if not (y == year and (m - 1) // 3 + 1 == quarter)]
    zero = dict.fromkeys(months[0][2], 0)
    cq = _summaries(current or [zero])
    pq = _summaries(previous or [zero])
    number = cu.position if cu.frame == "frame_2015" else cu.position + 1
    base = float(rng.lognormal(np.log(20000), 0.45))
    wtrep = [None if rng.random() < 0.45 else base * float(rng.lognormal(0, 0.25))
             for _ in range(44)]
    rent = []
    if cu.tenure == 4:
        for y, m, d in months:
            rent.append((d["SHELT"], m, y))
    return _Record(
        cu=cu, q=q, year=year, month=month, number=number, position=cu.position,
        weights=(base, base * float(rng.uniform(0.97, 1.03))),
        wtrep=wtrep, income=float(income), income_reported=rng.random() > 0.12,
        salary=float(salary), cq=cq, pq=pq,
        trip_food=(int(cq["FDAWAY"] * 0.1), int(pq["FDAWAY"] * 0.1)), rent=rent,
        educ2_unknown=rng.random() < 0.05,
    )  # fmt: skip


def _simulate(seed: int, quarters: set[int], n: int) -> list[_Record]:
    """The panel over min..max of `quarters`; interviews are drawn only in `quarters` (the
    packages' own), the panel just ages through the others."""
    first_q, last_q = min(quarters), max(quarters)
    rng = np.random.default_rng([int(seed), 31])
    next_id = dict.fromkeys(FRAME_IDS, 0)

    def fresh(frame: str, position: int, offset: int) -> _CU:
        next_id[frame] += 1
        cu_id = FRAME_IDS[frame] * 1_000_000 + next_id[frame]
        return _new_cu(rng, cu_id, frame, position, offset)

    plans: dict[int, dict[tuple[int, int], int]] = {}

    def paid(cu: _CU, q: int) -> dict[tuple[int, int], int]:
        if _year_of(q) not in (2001, 2002, 2008, 2009):
            return {}
        if cu.cu_id not in plans:
            plans[cu.cu_id] = {(y, m): a for y, m, a in _payment_plan(seed, cu)}
        return plans[cu.cu_id]

    frame = _frame_at(first_q)
    active = [fresh(frame, pos, int(rng.integers(3))) for pos in (2, 3, 4) for _ in range(n)]
    records: list[_Record] = []
    for q in range(first_q, last_q + 1):
        frame = _frame_at(q)
        if any(q == cut for cut, _ in CUTS):
            active = [fresh(frame, cu.position, cu.month_offset) for cu in active]
        active += [fresh(frame, 1, int(rng.integers(3))) for _ in range(n)]
        for cu in active if q in quarters else ():
            if rng.random() < 0.92:
                records.append(_interview(rng, cu, q, paid(cu, q)))
        for cu in active:
            cu.position += 1
        active = [cu for cu in active if cu.position <= 4 and rng.random() >= 0.04]
    return records


# --------------------------------------------------------------------------------------------
# Writing


def _flagged(values: dict[str, str], var: str, flag: str | None, value: str | None,
             blank_flag: str = "A") -> None:
    values[var] = "NA" if value is None else value
    if flag:
        values[flag] = "D" if value is not None else blank_flag


def _fmli_row(rec: _Record, layout_q: int, copy: int) -> dict[str, str]:
    cu = rec.cu
    v: dict[str, str] = {
        "NEWID": rec.newid,
        "FINLWT21": f"{rec.weights[copy]:.3f}",
        "QINTRVMO": f"{rec.month:02d}",
        "QINTRVYR": str(rec.year) if layout_q >= _qi(1996, 1) else f"{rec.year % 100:02d}",
        "INTERI": str(rec.number),
        "CUID": f"{cu.cu_id:07d}",
    }
    for i, w in enumerate(rec.wtrep, start=1):
        v[f"WTREP{i:02d}"] = "NA" if w is None else f"{w:.3f}"
    spouse = cu.married
    _flagged(v, "AGE_REF", "AGE_REF_", str(cu.age))
    _flagged(v, "AGE2", "AGE2_", str(cu.spouse_age) if spouse else None)
    v["BLS_URBN"] = str(cu.urban)
    tenure = cu.tenure if cu.tenure != 3 or layout_q >= _qi(1996, 1) else 1
    _flagged(v, "CUTENURE", "CUTE_URE", str(tenure))
    _flagged(v, "EDUC_REF", "EDUC0REF", _educ_code(cu.educ, layout_q))
    educ2 = _educ_code(cu.educ2, layout_q) if spouse else None
    if spouse and rec.year <= 1981 and rec.educ2_unknown:
        educ2 = "0"  # the 1980-81 files' "don't know"
    _flagged(v, "EDUCA2", "EDUCA2_", educ2)
    _flagged(v, "FAM_SIZE", "FAM__IZE", str(cu.fam_size))
    _flagged(v, "FAM_TYPE", "FAM__YPE", str(cu.fam_type))
    income = f"{rec.income:.0f}"
    _flagged(v, "FINCBTAX", "FINCBT_X", income if rec.income_reported else None, "B")
    _flagged(v, "FINCBTXM", "FINCB_XM", income)
    salary = f"{rec.salary:.0f}"
    _flagged(v, "FSALARYX", "FSAL_RYX", salary if rec.income_reported else None, "B")
    _flagged(v, "FSALARYM", "FSAL_RYM", salary)
    _flagged(v, "MARITAL1", "MARI_AL1", "1" if cu.married else _single_status(cu))
    _flagged(v, "PERSLT18", "PERS_T18", str(cu.kids))
    _flagged(v, "RACE2", "RACE2_", str(_race_code(cu.race2, layout_q)) if spouse else None)
    _flagged(v, "REF_RACE", "REF__ACE", str(_race_code(cu.race, layout_q)))
    v["REGION"] = str(cu.region)
    _flagged(v, "SEX_REF", "SEX_REF_", str(cu.sex))
    _flagged(v, "SEX2", "SEX2_", str(3 - cu.sex) if spouse else None)
    _flagged(v, "STATE", "STATE_", _state_text(cu, layout_q))
    if _z_era(layout_q):
        for base, z in SUMMARY_BASES.items():
            v[z] = _money(rec.cq[base] + rec.pq[base])
    else:
        for base in SUMMARY_BASES:
            v[f"{base}CQ"] = _money(rec.cq[base])
            v[f"{base}PQ"] = _money(rec.pq[base])
        v["TFOODTOC"], v["TFOODTOP"] = _money(rec.trip_food[0]), _money(rec.trip_food[1])
        v["GROCERCQ"], v["GROCERPQ"] = _money(rec.cq["FDHOME"]), _money(rec.pq["FDHOME"])
    return v


def _single_status(cu: _CU) -> str:
    if cu.age >= 70:
        return "2"
    return "5" if cu.age < 35 else ("3" if cu.cu_id % 3 else "4")


def _state_text(cu: _CU, layout_q: int) -> str | None:
    if layout_q <= _qi(1981, 4):
        return cu.legacy_state if cu.state else None
    if cu.state == "29" and cu.missouri_43 and layout_q <= _qi(1989, 4):
        return "43"  # the dictionary's second Missouri code of the 1984+ files
    return cu.state


def _truth_state(cu: _CU, layout_q: int) -> str | None:
    """The state a builder should report: the written code through the reference's legacy map,
    which it applies to every year (a 1984+ 35 New Mexico reads as 55), canonical codes only."""
    written = _state_text(cu, layout_q)
    if written is None:
        return None
    inverse = {old: fips for fips, olds in LEGACY_STATE_CODES.items() for old in olds}
    code = inverse.get(written, written)
    return code if code in STATES else None


def _csv(columns: list[str], rows: list[dict[str, str]]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row.get(c, "NA") for c in columns])
    return buf.getvalue().encode("ascii")


def _check(years: Iterable[int], n_cu_per_quarter: int) -> list[int]:
    out = sorted({int(y) for y in years})
    if not out:
        raise ConfigError("synthetic CEX Interview: years is empty")
    bad = [y for y in out if y < 1980 or y in (1982, 1983)]
    if bad:
        raise ConfigError(
            f"synthetic CEX Interview: no Interview package exists for {bad[0]} (BLS packages: "
            "1980, 1981, 1984 on)"
        )
    if n_cu_per_quarter < 1:
        raise ConfigError("synthetic CEX Interview: n_cu_per_quarter must be at least 1")
    return out


def _members(year: int) -> list[tuple[int, str]]:
    """(quarter index, member name) of package `year`."""
    yy, ny = year % 100, (year + 1) % 100
    names = [(_qi(year, 1), f"fmli{yy:02d}1x")]
    names += [(_qi(year, q), f"fmli{yy:02d}{q}") for q in (2, 3, 4)]
    names.append((_qi(year + 1, 1), f"fmli{ny:02d}1"))
    return names



# --------------------------------------------------------------------------------------------
# Rebate addenda: 2001 tax rebate (TAX013/TAX014 in intrvw01.zip), 2008 stimulus (rbt08.csv)

TAX_MEMBER = "intrvw01/intrvw01/Addendum - Tax Rebate/TAX01{q}.csv"  # the reference's path
RBT_MEMBER = "expn08/rbt08.csv"
TAX_COLUMNS = ["NEWID", "TAXQ1", "TAXQ1_", "TAXQ3", "TAXQ3_"] + [
    c for i in range(1, 6) for c in (f"TAXMO{i}", f"TAXMO{i}_", f"TAXAMT{i}", f"TAXAMT{i}_")
]
RBT_COLUMNS = ["NEWID", "CUID", "RBTMO", "RBTMO_", "RBTAMT", "RBTAMT_", "CHCKEFT", "CHCKEFT_",
               "HOWUSED", "HOWUSED_", "USDINTMO", "USDINTYR"]
# 2001 checks went out from late July to the end of September by the last digits of the SSN; a
# few filers were paid later in the year.
TAX_MONTHS = ([7, 8, 9, 10, 11, 12], [0.30, 0.35, 0.25, 0.05, 0.03, 0.02])
# 2008: electronic transfers in May and June, checks from May to July, a few later.
EFT_MONTHS = ([5, 6], [0.7, 0.3])
CHECK_MONTHS = ([5, 6, 7, 8, 9, 10, 11, 12], [0.33, 0.34, 0.26, 0.03, 0.01, 0.01, 0.01, 0.01])


def _window(rec: _Record) -> list[tuple[int, int]]:
    """(year, month) of the three reference months before the interview month."""
    out = []
    for back in (3, 2, 1):
        m, y = rec.month - back, rec.year
        if m < 1:
            m, y = m + 12, y - 1
        out.append((y, m))
    return out


def _field(row: dict[str, str], truth: dict[str, object], var: str, value: str | None,
           flag: str) -> None:
    """Write a value and its flag; truth keeps the value and what the flag means."""
    row[var], row[f"{var}_"] = ("NA" if value is None else value), flag
    truth[var.lower()] = None if value is None else float(value)
    truth[f"{var.lower()}_flag"] = flag
    truth[f"{var.lower()}_intent"] = ("valid" if flag == "D" else
                                      "valid_blank" if flag == "A" else "invalid")


def _tax_addendum(seed: int, by_q: dict[int, list[_Record]]) -> tuple[dict[str, bytes],
                                                                      pd.DataFrame]:
    """TAX013/TAX014 of package 2001 and its truth (one row per record written)."""
    rng = np.random.default_rng([int(seed), 77, 2001])
    files, truth_rows = {}, []
    for quarter in (3, 4):
        rows = []
        for rec in by_q.get(_qi(2001, quarter), []):
            cu = rec.cu
            checks = [(m, a) for y, m, a in _payment_plan(seed, cu) if y == 2001]
            if rng.random() >= 0.96:  # the addendum was not completed
                continue
            window = [m for y, m in _window(rec) if y == 2001]
            mine = [c for c in checks if c[0] in window]
            row: dict[str, str] = {"NEWID": rec.newid}
            t: dict[str, object] = {"newid": rec.newid, "cex_quarter_token": f"01{quarter}",
                                    "interview_year": rec.year, "interview_month": rec.month,
                                    "cex_panel_id": f"{cu.frame}:{cu.cu_id:07d}",
                                    "true_amount": float(sum(a for _, a in mine))}
            lead = rng.random()
            if lead < 0.02:  # refused / don't know: invalid blank lead-in
                _field(row, t, "TAXQ1", None, "B" if lead < 0.012 else "C")
            else:
                _field(row, t, "TAXQ1", "1" if mine else "2", "D")
            if row["TAXQ1"] == "1":
                _field(row, t, "TAXQ3", "1" if rng.random() < 0.1 else "2", "D")
            else:
                _field(row, t, "TAXQ3", None, "A")
            for i in range(1, 6):
                if i <= len(mine) and row["TAXQ1"] != "NA":
                    month, amount = mine[i - 1]
                    if rng.random() < 0.02:
                        _field(row, t, f"TAXMO{i}", None, "B")  # month not reported
                    else:
                        _field(row, t, f"TAXMO{i}", str(month), "D")
                    if rng.random() < 0.04:
                        _field(row, t, f"TAXAMT{i}", None, "C")  # amount: don't know
                    else:
                        _field(row, t, f"TAXAMT{i}", str(amount), "D")
                else:
                    _field(row, t, f"TAXMO{i}", None, "A")
                    _field(row, t, f"TAXAMT{i}", None, "A")
            rows.append(row)
            truth_rows.append(t)
        files[TAX_MEMBER.format(q=quarter)] = _csv(TAX_COLUMNS, rows)
    return files, pd.DataFrame(truth_rows)


# Share of a payment spent on each component in its month (and 40% of that the month after):
# most on non-durables, a fifth on durables (furnishings).
RESPONSE = {"FDAWAY": 0.08, "ENTERT": 0.08, "APPAR": 0.05, "MISC": 0.04, "FURN": 0.20}


def _rebate_plan(seed: int, cu: _CU) -> list[tuple[int, int]]:
    """2001 tax rebate checks of a CU, (month, dollars): about 2/3 of CUs ($600 married, $500
    single parent, $300 other; a second $300 for half the CUs with another adult filer)."""
    rng = np.random.default_rng([int(seed), 77, 2001, cu.cu_id])
    if rng.random() >= 2 / 3:
        return []
    months = rng.choice(TAX_MONTHS[0], size=2, p=TAX_MONTHS[1])
    checks = [(int(months[0]), 600 if cu.married else (500 if cu.kids else 300))]
    if cu.fam_size - int(cu.married) - cu.kids > 1 and rng.random() < 0.5:
        checks.append((int(months[1]), 300))
    return checks


def _stimulus_plan(seed: int, cu: _CU) -> tuple[int, int, int] | None:
    """2008 stimulus payment of a CU, (month, dollars, 1 check / 2 EFT): 85% of CUs."""
    rng = np.random.default_rng([int(seed), 77, 2008, cu.cu_id])
    if rng.random() >= 0.85:
        return None
    eft = rng.random() < 0.4
    months, p = EFT_MONTHS if eft else CHECK_MONTHS
    income = cu.income20 * _price_level(2008, 1)
    return int(rng.choice(months, p=p)), _stimulus_amount(cu, income), 2 if eft else 1


def _payment_plan(seed: int, cu: _CU) -> list[tuple[int, int, int]]:
    """Every payment a CU receives, (year, month, dollars), whether or not it is reported."""
    out = [(2001, m, a) for m, a in _rebate_plan(seed, cu)]
    stimulus = _stimulus_plan(seed, cu)
    if stimulus is not None:
        out.append((2008, stimulus[0], stimulus[1]))
    return out


def _stimulus_amount(cu: _CU, income: float) -> int:
    """$300-600 per adult filer (the $300 minimum for low incomes) plus $300 a child."""
    adults = 2 if cu.married else 1
    per_adult = 300 if income < 20000 else 600
    return adults * per_adult + 300 * cu.kids


def _stimulus_file(seed: int, by_q: dict[int, list[_Record]]) -> tuple[dict[str, bytes],
                                                                       pd.DataFrame]:
    """expn08/rbt08.csv of package 2008 (interviews 2008Q2-2009Q1) and its truth (every row
    written, with the keep rule's outcome the generator intended)."""
    rng = np.random.default_rng([int(seed), 77, 2008])
    rows, truth_rows = [], []
    for q in range(_qi(2008, 2), _qi(2009, 1) + 1):
        for rec in by_q.get(q, []):
            cu = rec.cu
            pay = _stimulus_plan(seed, cu)
            if pay is None or (2008, pay[0]) not in _window(rec) or rng.random() >= 0.9:
                continue
            month, amount, mode = pay
            defect = rng.random()
            row = {"NEWID": rec.newid, "CUID": f"{cu.cu_id:07d}", "RBTMO": str(month),
                   "RBTMO_": "D", "RBTAMT": str(amount), "RBTAMT_": "D", "CHCKEFT": str(mode),
                   "CHCKEFT_": "D", "USDINTMO": str(rec.month), "USDINTYR": str(rec.year)}
            drop = None
            if defect < 0.03:  # month not reported
                row["RBTMO"], row["RBTMO_"], drop = "NA", "C", "bad_month"
            elif defect < 0.06:  # amount not reported
                row["RBTAMT"], row["RBTAMT_"], drop = "NA", "C", "nonpositive_amount"
            if rng.random() < 0.92:
                row["HOWUSED"] = str(int(rng.choice([1, 2, 3], p=[0.3, 0.3, 0.4])))
                row["HOWUSED_"] = "D"
            else:
                row["HOWUSED"], row["HOWUSED_"] = "NA", "B"
            rows.append(row)
            truth_rows.append({
                "newid": rec.newid, "cuid": f"{cu.cu_id:07d}", "rbtmo": month,
                "rbtamt": float(amount), "chckeft": mode,
                "howused": None if row["HOWUSED"] == "NA" else int(row["HOWUSED"]),
                "interview_year": rec.year, "interview_month": rec.month,
                "cex_panel_id": f"{cu.frame}:{cu.cu_id:07d}", "drop_reason": drop,
            })  # fmt: skip
    return {RBT_MEMBER: _csv(RBT_COLUMNS, rows)}, pd.DataFrame(truth_rows)


@functools.lru_cache(maxsize=1)  # writing and truth of the same arguments share one draw
def _generate(seed: int, years: tuple[int, ...], n: int) -> tuple[
    dict[int, dict[str, bytes]], pd.DataFrame, dict[str, pd.DataFrame]
]:
    quarters = {q for y in years for q in range(_qi(y, 1), _qi(y + 1, 1) + 1)}
    records = _simulate(seed, quarters, n)
    by_q: dict[int, list[_Record]] = {}
    for rec in records:
        by_q.setdefault(rec.q, []).append(rec)
    files: dict[int, dict[str, bytes]] = {}
    packages: dict[tuple[str, int, int], list[int]] = {}
    truth_rows: dict[tuple[str, int, int], dict[str, object]] = {}
    for year in years:
        yy = year % 100
        files[year] = {}
        for q, stem in _members(year):
            layout_q = min(q, _qi(year, 4))
            columns = fmli_columns(layout_q)
            later_copy = 1 if q == _qi(year, 1) else 0  # fmliYY1x = second publication
            recs = by_q.get(q, [])
            rows = [_fmli_row(rec, layout_q, later_copy) for rec in recs]
            files[year][f"intrvw{yy:02d}/{stem}.csv"] = _csv(columns, rows)
            mtbi = [
                {"NEWID": rec.newid, "COST": _money(c), "PUBFLAG": "2", "UCC": "210110",
                 "REF_MO": f"{m:02d}", "REF_YR": str(y)}
                for rec in recs for c, m, y in rec.rent
            ]  # fmt: skip
            files[year][f"intrvw{yy:02d}/{stem.replace('fmli', 'mtbi')}.csv"] = _csv(
                MTBI_COLUMNS, mtbi
            )
            for rec, row in zip(recs, rows, strict=True):
                key = (rec.newid, rec.year, rec.month)
                packages.setdefault(key, []).append(year)
                if key in truth_rows and truth_rows[key]["cex_retained_package_year"] > year:
                    continue
                truth_rows[key] = _truth_row(rec, row, layout_q, year, stem)
    truth = pd.DataFrame(list(truth_rows.values()))
    keys = list(zip(truth["newid"], truth["interview_year"], truth["interview_month"],
                    strict=True))
    truth["cex_first_release_year"] = [min(packages[k]) for k in keys]
    truth["cex_overlap_versions"] = [len(packages[k]) for k in keys]
    truth = truth.sort_values(["newid", "interview_year", "interview_month"]).reset_index(
        drop=True
    )
    addenda: dict[str, pd.DataFrame] = {}
    if 2001 in years:
        tax_files, addenda["rebate_2001"] = _tax_addendum(seed, by_q)
        files[2001].update(tax_files)
    if 2008 in years:
        rbt_files, addenda["stimulus_2008"] = _stimulus_file(seed, by_q)
        files[2008].update(rbt_files)
    return files, truth, addenda


def _truth_row(rec: _Record, row: dict[str, str], layout_q: int, year: int,
               stem: str) -> dict[str, object]:
    """What the generator put in a record's retained copy (the builder must recover it)."""
    cu = rec.cu

    def num(name: str) -> float:
        return float("nan") if row.get(name, "NA") == "NA" else float(row[name])

    out: dict[str, object] = {
        "newid": rec.newid,
        "interview_year": rec.year,
        "interview_month": rec.month,
        "cu_id_raw": f"{cu.cu_id:07d}",
        "frame": cu.frame,
        "cex_panel_id": f"{cu.frame}:{cu.cu_id:07d}",
        "interview_number": rec.number,
        "interview_position": rec.position,
        "cex_quarter_token": stem[4:7],
        "cex_source_member": stem,
        "cex_retained_package_year": year,
        "weight": float(row["FINLWT21"]),
        "income_before_tax": num("FINCBTXM") if layout_q >= _qi(2004, 1) else num("FINCBTAX"),
        "salary": num("FSALARYM") if layout_q >= _qi(2004, 1) else num("FSALARYX"),
        "state": _truth_state(cu, layout_q),
        "region": cu.region,
        "bls_urbn": cu.urban,
        "fam_size": cu.fam_size,
        "n_kids": cu.kids,
        "age_ref": cu.age,
        "sex_ref": cu.sex,
        "married": cu.married,
        "race_ref_code": int(row["REF_RACE"]),
        "educ_ref_code": int(row["EDUC_REF"]),
        "educ_level": cu.educ,
        "educ2_code": None if row["EDUCA2"] == "NA" else int(row["EDUCA2"]),
        "tenure": int(row["CUTENURE"]),
        "layout_z": _z_era(layout_q),
    }
    for base, column in TRUTH_COLUMNS.items():
        out[column] = (rec.cq[base] + rec.pq[base]) / 100.0
    return out


def synthetic_cex_interview_truth(
    *, seed: int, years: Iterable[int], n_cu_per_quarter: int
) -> pd.DataFrame:
    """One row per record written (newid, interview_year, interview_month): the values of the
    copy a builder should keep (latest package), the packages holding it, and the generator's
    3-month spending totals `cons_*` (dollars), frame and CU attributes."""
    ys = _check(years, n_cu_per_quarter)
    return _generate(int(seed), tuple(ys), int(n_cu_per_quarter))[1].copy()


def synthetic_cex_addenda_truth(
    *, seed: int, years: Iterable[int], n_cu_per_quarter: int
) -> dict[str, pd.DataFrame]:
    """What the generator wrote into the rebate addenda of packages 2001 / 2008 (keys
    "rebate_2001", "stimulus_2008", present when that year is generated).

    rebate_2001: one row per TAX013/TAX014 record: newid, cex_quarter_token, the reporting
    interview (interview_year, interview_month, cex_panel_id), each field's value (`taxq1`,
    `taxmo1`, `taxamt1`, ...: float, None = blank), flag (`taxq1_flag`) and what the flag means
    (`taxq1_intent`: valid / valid_blank / invalid), and `true_amount`, the rebates the CU
    received in the interview's reference months (what a perfect report would hold).
    stimulus_2008: one row per rbt08.csv row: newid, cuid, the drawn payment (rbtmo, rbtamt,
    chckeft 1 check / 2 EFT), howused, the reporting interview and `drop_reason` (None, or the
    keep rule the row was written to fail: bad_month, nonpositive_amount)."""
    ys = _check(years, n_cu_per_quarter)
    addenda = _generate(int(seed), tuple(ys), int(n_cu_per_quarter))[2]
    return {name: frame.copy() for name, frame in addenda.items()}


def write_synthetic_cex_interview(
    out_dir: str | Path, *, seed: int, years: Iterable[int], n_cu_per_quarter: int
) -> list[Path]:
    """Write one `intrvwYY.zip` per package year into `out_dir` (with a synthetic sidecar each);
    the same arguments give byte-identical archives. Returns the paths."""
    ys = _check(years, n_cu_per_quarter)
    files, _, _ = _generate(int(seed), tuple(ys), int(n_cu_per_quarter))
    out = Path(out_dir)
    paths = []
    for year in ys:
        target = out / f"intrvw{year % 100:02d}.zip"
        with atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in files[year].items():
                info = zipfile.ZipInfo(name, date_time=(max(year, 1980), 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
        write_sidecar(
            target,
            generator=GENERATOR,
            note="seeded synthetic CE Interview package; not BLS data",
            seed=int(seed),
            years=ys,
            n_cu_per_quarter=int(n_cu_per_quarter),
        )
        paths.append(target)
    return paths
