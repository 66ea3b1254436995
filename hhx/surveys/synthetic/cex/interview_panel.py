"""Household panel of the seeded synthetic CE Interview packages (see `cex_interview`).

Consumer units (CUs), their characteristics and spending are drawn from simple models (spending
rises with income, family size and, for health, age; cars and furniture are lumpy; levels near
the CE's 2019 means; 3% of CUs report almost no income and 2% of interviews almost no spending,
so the builder's screens have cases).

Panel. Each quarter `n_cu_per_quarter` new CUs enter; a CU is interviewed once a quarter, 3
months apart, in four public interviews (a wave is missed with probability 0.08, 4% leave early).
Interview numbers are 2-5 in the bounded designs before 2015 and 1-4 from the 2015 design (NEWID
= 7-digit CU id + interview number). At the sample redesigns (1986Q2, and the first quarters of
1996, 2005 and 2015) every CU is replaced by a new-frame CU with a new id.

Spending identity as in the CE summaries: TOTEXP = FOOD + ALCBEV + HOUS + APPAR + TRANS + HEALTH +
ENTERT + PERSCA + READ + EDUCA + TOBACC + MISC + CASHCO + PERINS (PERINS = LIFINS + RETPEN; FOOD =
FDHOME + FDAWAY; HOUS = SHELT + UTIL + HOUSOP + furnishings; TRANS = GASMO + PUBTRA + other
vehicle costs). The current-quarter part (CQ) is the reference months that fall in the
interview's calendar quarter: none for an interview in a quarter's first month, two in its third.

Rebates and stimulus payments. Each CU's payments are drawn from its own stream (seed, CU id),
so the other draws do not depend on them, and are spent in part: in the month a payment
arrives 8% of it goes to food away from home, 8% to entertainment, 5% to apparel, 4% to
miscellaneous and 20% to furnishings (a durable), in the next month 40% of that again; whether
or not the CU reports it. 2001 rebate: about 2/3 of CUs ($600 married, $500 single parent, $300
other; a second $300 check for half the CUs with another adult), paid July-September mostly, a
few October-December. 2008 stimulus: 85% of CUs ($300 or $600 per adult filer by income, + $300
per child), EFT (40%) in May-June, checks May-July, a few later. What the CUs report of them is
written by `cex_interview_addenda`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _qi(year: int, quarter: int) -> int:
    return year * 4 + quarter


def _year_of(q: int) -> int:
    return (q - 1) // 4


def _quarter_of(q: int) -> int:
    return (q - 1) % 4 + 1


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
# Rebate and stimulus payments (every payment a CU receives, whether or not it is reported)

# 2001 checks went out from late July to the end of September by the last digits of the SSN; a
# few filers were paid later in the year.
TAX_MONTHS = ([7, 8, 9, 10, 11, 12], [0.30, 0.35, 0.25, 0.05, 0.03, 0.02])
# 2008: electronic transfers in May and June, checks from May to July, a few later.
EFT_MONTHS = ([5, 6], [0.7, 0.3])
CHECK_MONTHS = ([5, 6, 7, 8, 9, 10, 11, 12], [0.33, 0.34, 0.26, 0.03, 0.01, 0.01, 0.01, 0.01])


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
