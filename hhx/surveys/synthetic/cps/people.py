"""Population and labor-force simulation behind the synthetic CPS extract (`cps.py`).

Households (state, metro, tenure, type, origin), persons (age, sex, marital status, education,
nativity, veteran status, family links, job and wage traits) and a monthly Markov chain of
labor-force states over the 16 months a household is in sample. Demo data only: the flows
are published-CPS-like and carry the relationships the CPS tasks measure (see `_simulate`);
they are not estimates about households.
"""

from __future__ import annotations

import numpy as np

from hhx.errors import ConfigError

SLOTS = (0, 1, 2, 3, 12, 13, 14, 15)  # months after entry in which MISH 1..8 are interviewed
HORIZON = 16  # months simulated per person (entry .. MISH 8)

# Labor-force states of the simulation
NIU, EMP, UNE, NILF = 0, 1, 2, 3

# --------------------------------------------------------------------------------------------
# Geography: state FIPS, census division (IPUMS REGION code), population weight (millions)
_STATES = np.array(
    [
        (1, 32, 5.0),
        (2, 42, 0.7),
        (4, 41, 7.3),
        (5, 33, 3.0),
        (6, 42, 39.0),
        (8, 41, 5.8),
        (9, 11, 3.6),
        (10, 31, 1.0),
        (11, 31, 0.7),
        (12, 31, 22.0),
        (13, 31, 10.8),
        (15, 42, 1.4),
        (16, 41, 1.9),
        (17, 21, 12.6),
        (18, 21, 6.8),
        (19, 22, 3.2),
        (20, 22, 2.9),
        (21, 32, 4.5),
        (22, 33, 4.6),
        (23, 11, 1.4),
        (24, 31, 6.2),
        (25, 11, 7.0),
        (26, 21, 10.0),
        (27, 22, 5.7),
        (28, 32, 2.9),
        (29, 22, 6.2),
        (30, 41, 1.1),
        (31, 22, 2.0),
        (32, 41, 3.1),
        (33, 11, 1.4),
        (34, 12, 9.3),
        (35, 41, 2.1),
        (36, 12, 20.0),
        (37, 31, 10.5),
        (38, 22, 0.8),
        (39, 21, 11.8),
        (40, 33, 4.0),
        (41, 42, 4.2),
        (42, 12, 13.0),
        (44, 11, 1.1),
        (45, 31, 5.2),
        (46, 22, 0.9),
        (47, 32, 7.0),
        (48, 33, 29.0),
        (49, 41, 3.3),
        (50, 11, 0.6),
        (51, 31, 8.6),
        (53, 42, 7.7),
        (54, 31, 1.8),
        (55, 21, 5.9),
        (56, 41, 0.6),
    ]
)

# Jobs: (OCC/OCC2010, OCC1990, OCC1950, IND, IND1990, IND1950) representative codes
_JOBS = np.array(
    [
        (430, 22, 290, 7870, 732, 888),
        (800, 23, 0, 6870, 700, 716),
        (1020, 229, 93, 7380, 732, 888),
        (2310, 156, 93, 7860, 842, 868),
        (3255, 95, 58, 8190, 831, 869),
        (3600, 447, 730, 8270, 831, 869),
        (4020, 436, 754, 8680, 641, 679),
        (4720, 276, 390, 4970, 591, 679),
        (5240, 376, 390, 6690, 700, 716),
        (6230, 567, 510, 770, 60, 246),
        (9130, 804, 683, 6170, 410, 506),
        (9620, 889, 970, 3080, 351, 399),
    ]
)
# CLASSWKR of a person's job, and probabilities
_CLASS = np.array([22, 23, 25, 27, 28, 13, 14, 29])
_CLASS_P = np.array([0.68, 0.08, 0.025, 0.04, 0.07, 0.06, 0.04, 0.005])
_WAGE_CLASS = {21, 22, 23, 24, 25, 27, 28}
# FAMINC codes (IPUMS brackets), low to high
_FAMINC = np.array([100, 210, 300, 430, 470, 500, 600, 710, 720, 730, 740, 820, 830, 841, 842, 843])

# EDUC codes by level 0..4 (HS or less, HS diploma, some college, bachelor's, graduate)
_EDUC_CODES = [
    np.array([2, 10, 20, 30, 40, 50, 60, 71]),
    np.array([73]),
    np.array([81, 91, 92]),
    np.array([111]),
    np.array([123, 124, 125]),
]


# --------------------------------------------------------------------------------------------
# Calendar


def _month_index(text: str) -> int:
    try:
        year, month = (int(x) for x in text.split("-")[:2])
        if not 1 <= month <= 12:
            raise ValueError
    except ValueError:
        raise ConfigError(f"synthetic CPS: month {text!r} is not YYYY-MM") from None
    return year * 12 + month - 1


# --------------------------------------------------------------------------------------------
# Population


def _choice(rng: np.random.Generator, values, p, size: int) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return np.asarray(values)[rng.choice(len(p), size=size, p=p / p.sum())]


def _households(rng: np.random.Generator, entry: np.ndarray) -> dict[str, np.ndarray]:
    n = len(entry)
    state_idx = rng.choice(len(_STATES), size=n, p=_STATES[:, 2] / _STATES[:, 2].sum())
    hh_type = rng.choice(
        5, size=n, p=[0.28, 0.27, 0.24, 0.09, 0.12]
    )  # single, couple, family, lone parent, other
    kids = np.zeros(n, dtype=np.int64)
    fam = hh_type == 2
    kids[fam] = rng.choice([1, 2, 3], size=fam.sum(), p=[0.4, 0.4, 0.2])
    lone = hh_type == 3
    kids[lone] = rng.choice([1, 2], size=lone.sum(), p=[0.6, 0.4])
    other = hh_type == 4
    kids[other] = rng.choice([0, 1], size=other.sum(), p=[0.75, 0.25])
    hispan = _choice(
        rng,
        [0, 100, 200, 300, 400, 600, 611, 612],
        [0.82, 0.11, 0.02, 0.01, 0.01, 0.01, 0.01, 0.01],
        n,
    )
    race = _choice(
        rng,
        [100, 200, 651, 300, 652, 801, 802, 803],
        [0.77, 0.13, 0.06, 0.01, 0.003, 0.012, 0.008, 0.007],
        n,
    )
    return {
        "entry": entry,
        "statefip": _STATES[state_idx, 0].astype(np.int64),
        "region": _STATES[state_idx, 1].astype(np.int64),
        "metro": _choice(rng, [1, 2, 3, 4], [0.14, 0.30, 0.45, 0.11], n),
        "tenure": _choice(rng, [1, 2, 3], [0.65, 0.33, 0.02], n),
        "type": hh_type,
        "kids": kids,
        "race": race,
        "hispan": hispan,
        "weight": np.round(rng.lognormal(np.log(1800), 0.35, n), 4),
        "key": rng.random(n),  # fixes SERIAL order within a month
        "hrhhid": rng.integers(10**13, 10**15 - 1, n),
        "hrhhid2": rng.integers(10000, 99999, n),
        "responds": rng.random((n, len(SLOTS))) < 0.95,
        "faminc_shift": rng.normal(0, 2.0, n),
    }


# Roles: 0 reference person, 1 spouse, 2 extra adult, 3 child
def _persons(rng: np.random.Generator, hh: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    hh_of, role, pernum, hsize = _roster(hh)
    n, htype = len(hh_of), hh["type"][hh_of]
    relate, age, sex, spouse = _age_sex(rng, hh_of, role, htype, len(hh["type"]))
    marst = _marital_status(rng, role, htype, age)
    race, hispan, foreign, nativity, citizen, bpl_foreign, yrimmig = _origin(
        rng, hh, hh_of, role, age)
    level, educ = _education(rng, age)
    vet_p = np.where(sex == 1, np.select([age < 40, age < 65], [0.04, 0.10], 0.35), 0.015)
    vetstat = np.where(rng.random(n) < vet_p, 2, 1)  # NIU (0) under 17 is set month by month
    related, famsize, nchild, nchlt5, sploc = _family(hh, hh_of, role, htype, relate, age,
                                                      spouse, pernum)
    return {
        "hh": hh_of,
        "pernum": pernum,
        "role": role,
        "relate": relate,
        "nprec": hsize[hh_of],
        "age0": age,
        "sex": sex,
        "marst": marst,
        "race": race,
        "hispan": hispan,
        "nativity": nativity,
        "citizen": citizen,
        "bpl": np.where(foreign, bpl_foreign, 9900),
        "yrimmig": yrimmig,
        "educ": educ,
        "level": level,
        "vetstat": vetstat,
        "famsize": famsize,
        "nchild": nchild,
        "nchlt5": nchlt5,
        "sploc": sploc,
        "famrel": np.select(
            [relate == 101, relate == 201, relate == 301, related], [1, 2, 3, 4], 0
        ),
        "famunit": np.where(related, 1, 2),
        **_work_traits(rng, age, sex, level),
    }


def _roster(hh: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each person's household and role (households in order, roles in order within one), their
    PERNUM, and each household's size."""
    n_hh = len(hh["type"])
    ids = np.arange(n_hh)
    has_spouse = np.isin(hh["type"], [1, 2])
    has_extra = hh["type"] == 4
    hh_of = np.concatenate([ids, ids[has_spouse], ids[has_extra], np.repeat(ids, hh["kids"])])
    role = np.concatenate(
        [
            np.zeros(n_hh, int),
            np.ones(has_spouse.sum(), int),
            np.full(has_extra.sum(), 2),
            np.full(hh["kids"].sum(), 3),
        ]
    )
    order = np.lexsort((role, hh_of))
    hh_of, role = hh_of[order], role[order]
    n = len(hh_of)
    first = np.r_[0, np.flatnonzero(np.diff(hh_of)) + 1]
    pernum = np.arange(n) - np.repeat(first, np.diff(np.r_[first, n])) + 1
    hsize = np.bincount(hh_of, minlength=n_hh)
    return hh_of, role, pernum, hsize


def _age_sex(rng: np.random.Generator, hh_of: np.ndarray, role: np.ndarray, htype: np.ndarray,
             n_hh: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """RELATE, age at entry and sex of each person; whether the person is a spouse."""
    n = len(hh_of)
    ref_age = np.select(
        [htype == 0, htype == 1, htype == 2, htype == 3],
        [
            rng.uniform(18, 86, n),
            rng.uniform(22, 86, n),
            rng.uniform(26, 58, n),
            rng.uniform(20, 55, n),
        ],
        rng.uniform(18, 76, n),
    )
    ref_age_hh = np.zeros(n_hh)
    ref_age_hh[hh_of[role == 0]] = ref_age[role == 0]
    ref_age = ref_age_hh[hh_of]
    extra_rel = _choice(
        rng, [1114, 1115, 501, 701, 1001, 1260, 901], [0.35, 0.2, 0.15, 0.15, 0.08, 0.04, 0.03], n
    )
    relate = np.select([role == 0, role == 1, role == 2], [101, 201, extra_rel], 301)
    age = np.select(
        [
            role == 0,
            role == 1,
            (role == 2) & np.isin(relate, [1114, 701]),
            (role == 2) & (relate == 1115),
            (role == 2) & (relate == 501),
            (role == 2) & (relate == 901),
            role == 2,
        ],
        [
            ref_age,
            ref_age + rng.normal(0, 4, n),
            ref_age + rng.normal(0, 5, n),
            rng.uniform(18, 40, n),
            ref_age + rng.uniform(22, 35, n),
            rng.uniform(5, 21, n),
            rng.uniform(15, 80, n),
        ],
        rng.uniform(0, 1, n) * np.clip(np.minimum(25, ref_age - 17), 1, None),
    )
    age = np.clip(age, 0, 85.9)
    age[(role == 1) | (relate == 1114)] = np.maximum(age[(role == 1) | (relate == 1114)], 18)
    sex = rng.integers(1, 3, n)
    ref_sex = np.zeros(n_hh, int)
    ref_sex[hh_of[role == 0]] = sex[role == 0]
    spouse = role == 1
    sex[spouse] = np.where(
        rng.random(spouse.sum()) < 0.97, 3 - ref_sex[hh_of[spouse]], ref_sex[hh_of[spouse]]
    )

    return relate, age, sex, spouse


def _marital_status(rng: np.random.Generator, role: np.ndarray, htype: np.ndarray,
                    age: np.ndarray) -> np.ndarray:
    n = len(age)
    r = rng.random(n)
    single_adult = (role != 1) & ~((role == 0) & np.isin(htype, [1, 2])) & (age >= 15)
    young, mid = age < 30, (age >= 30) & (age < 60)
    marst = np.full(n, 6)
    marst[(role == 1) | ((role == 0) & np.isin(htype, [1, 2]))] = 1
    old_pick = np.select([r < 0.45, r < 0.75, r < 0.95], [5, 4, 6], 2)
    mid_pick = np.select([r < 0.40, r < 0.75, r < 0.85, r < 0.90], [6, 4, 3, 5], 2)
    young_pick = np.select([r < 0.85, r < 0.93, r < 0.97], [6, 4, 3], 2)
    pick = np.where(young, young_pick, np.where(mid, mid_pick, old_pick))
    marst[single_adult & (role != 3)] = pick[single_adult & (role != 3)]

    return marst


def _origin(rng: np.random.Generator, hh: dict[str, np.ndarray], hh_of: np.ndarray,
            role: np.ndarray, age: np.ndarray) -> tuple[np.ndarray, ...]:
    """Race, Hispanic origin, foreign birth, nativity, citizenship, foreign birthplace and
    immigration year of each person."""
    n = len(age)
    race = np.where(rng.random(n) < 0.95, hh["race"][hh_of], 100)
    hispan = hh["hispan"][hh_of]
    p_foreign = np.where(hispan > 0, 0.35, np.where(race == 651, 0.6, 0.08))
    p_foreign = np.where(role == 3, p_foreign * 0.25, p_foreign)
    foreign = rng.random(n) < p_foreign
    nativity = np.where(foreign, 5, _choice(rng, [1, 2, 3, 4], [0.78, 0.05, 0.05, 0.12], n))
    citizen = np.where(
        foreign, np.where(rng.random(n) < 0.5, 4, 5), _choice(rng, [1, 2, 3], [0.98, 0.01, 0.01], n)
    )
    bpl_foreign = np.where(
        hispan > 0,
        _choice(rng, [20000, 21000, 26000, 30000], [0.6, 0.2, 0.1, 0.1], n),
        np.where(
            race == 651,
            _choice(rng, [50000, 51500, 52100], [0.4, 0.3, 0.3], n),
            _choice(rng, [41000, 45000, 60000], [0.4, 0.3, 0.3], n),
        ),
    )
    entry_year = hh["entry"][hh_of] // 12
    arrival = np.maximum(entry_year - np.floor(age).astype(int), 1950)
    yrimmig = np.where(foreign, rng.integers(arrival, entry_year + 1), 0)

    return race, hispan, foreign, nativity, citizen, bpl_foreign, yrimmig


def _education(rng: np.random.Generator, age: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Education level 0..4 by age, and the EDUC code."""
    n = len(age)
    level = _choice(rng, [0, 1, 2, 3, 4], [0.10, 0.27, 0.27, 0.22, 0.14], n)
    level = np.where(
        age < 18,
        0,
        np.where(
            age < 20,
            np.minimum(level, 1),
            np.where(
                age < 22, np.minimum(level, 2), np.where(age < 25, np.minimum(level, 3), level)
            ),
        ),
    )
    educ = np.zeros(n, dtype=np.int64)
    for lv, codes in enumerate(_EDUC_CODES):
        m = level == lv
        educ[m] = rng.choice(codes, size=m.sum())
    teen = age < 18
    educ[teen] = np.clip((np.floor(age[teen]) - 11) * 10, 2, 60).astype(int)  # grades 9-11
    educ[age < 15] = 1  # NIU for children
    level[age < 18] = 0

    return level, educ


def _family(hh: dict[str, np.ndarray], hh_of: np.ndarray, role: np.ndarray, htype: np.ndarray,
            relate: np.ndarray, age: np.ndarray, spouse: np.ndarray, pernum: np.ndarray
            ) -> tuple[np.ndarray, ...]:
    """Family links: related to the reference person, family size, children (under 5), the
    spouse's PERNUM (nonrelatives form their own family)."""
    n_hh = len(hh["type"])
    related = np.isin(relate, [101, 201, 301, 501, 701, 1001, 901])
    famsize_hh = np.bincount(hh_of, weights=related, minlength=n_hh).astype(int)
    famsize = np.where(related, famsize_hh[hh_of], 1)
    kid_age = np.where(relate == 301, age, np.inf)
    nchild_hh = hh["kids"]
    under5 = np.bincount(hh_of, weights=kid_age < 5, minlength=n_hh).astype(int)
    parent = np.isin(relate, [101, 201])
    nchild = np.where(parent, nchild_hh[hh_of], np.where(relate == 501, 1, 0))
    nchlt5 = np.where(parent, under5[hh_of], 0)
    spouse_pernum = np.zeros(n_hh, int)
    spouse_pernum[hh_of[spouse]] = pernum[spouse]
    sploc = np.where(
        (role == 0) & np.isin(htype, [1, 2]), spouse_pernum[hh_of], np.where(spouse, 1, 0)
    )

    return related, famsize, nchild, nchlt5, sploc


def _work_traits(rng: np.random.Generator, age: np.ndarray, sex: np.ndarray, level: np.ndarray
                 ) -> dict[str, np.ndarray]:
    """Job, class of worker, hours, wage and other work traits of each person."""
    n = len(age)
    job = rng.integers(0, len(_JOBS), n)
    disabled = rng.random(n) < np.where(age >= 30, 0.05 + 0.002 * (age - 30), 0.01)
    return {
        "job": job,
        "cls": _choice(rng, _CLASS, _CLASS_P, n),
        "pt": rng.random(n)
        < np.clip(0.15 + 0.30 * (age < 25) + 0.35 * (age >= 65) + 0.1 * (sex == 2), 0, 0.9),
        "z": rng.normal(0, 0.45, n),  # personal job-finding propensity
        "never_worked": rng.random(n) < np.select([age < 20, age < 25], [0.5, 0.2], 0.02),
        "disabled": disabled,
        "multjob": rng.random(n) < 0.05,
        "hours": np.where(rng.random(n) < 0.6, 40, rng.integers(35, 61, n)),
        "pt_hours": rng.integers(8, 35, n),
        "logwage": 2.55 + 0.16 * level + 0.012 * np.clip(age - 18, 0, 30) + rng.normal(0, 0.35, n),
        "paidhour": rng.random(n) < 0.55,
        "union": _choice(rng, [1, 2, 3], [0.88, 0.10, 0.02], n),
        "profcert": rng.random(n) < 0.25,
        "weight_f": rng.uniform(0.85, 1.15, n),
    }
