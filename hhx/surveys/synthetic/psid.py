"""Seeded synthetic PSID-SHELF archives (openICPSR 194322 V2 layout) with their truth.

Demo data only: families and their incomes, wealth, hours, job losses and food spending follow
simple rules meant to look plausible and to carry the relationships the PSID tasks measure, not
estimated from the PSID; nothing computed from them is a finding about households.

Files, as the release ships them (spec 00_common.md 1.2):
- `PSIDSHELF_1968_2021_LONG_7.9_GB.zip` holding `PSIDSHELF_1968_2021_LONG.dta`: one row per person x
  wave from the wave the person enters (1968 for the SRC and SEO samples, 1990 Latino, 1997/1999
  and 2017/2019 immigrant refreshers, later by birth, marriage or moving in), also after leaving
  while alive (panel_current 0, response 1, family variables missing). Lower-case SHELF names,
  value labels on the coded variables (the spec's label text), Stata missing for not applicable;
- `PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL_10.8_GB.zip` holding
  `PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL.dta`: one row per person, ID (= ER30001 * 1000 +
  ER30002), ER30001, ER30002, ER32000, and every V-variable of the variable map (default: the
  shipped psid_main_study_vars.csv), family values repeated on each current member's record and
  missing for persons outside a responding family that wave.
Both are Stata 118 files as pandas writes them, with a fixed time stamp: the same seed and
arguments give byte-identical archives.

World. Waves 1968-1997 yearly, then every two years to 2021; between waves each year: deaths by
age, family attrition (about 0.6% a year; the Latino sample leaves after 1995), divorce, marriage
of single reference persons to non-sample spouses (person numbers from 170), births (from 30),
children of 18+ splitting off into their own family, moves, in 1997 a sample reduction (60% of
the families are no longer followed, more than the PSID's own cut, to keep the demo small), tenure changes (renters buy more
often with higher income, savings and marriage), and wealth: liquid assets earn a return and
receive savings out of income, owners' homes gain value while mortgages amortize. Labor: earnings
are an hourly wage (schooling, experience, a person effect, a persistent AR(1) shock and noise)
times annual hours. A reference person or spouse working in the year before a wave loses that
job with 11% chance (16% in recession years; a third of that right after a loss), reported at the wave as job-end code 1 or 3: the
loser's hours and earnings of that year fall; the partner works about 300 more hours that year
and 220 more the next (the added-worker response); the family's food spending falls about 12%.
Food spending otherwise follows family size, income and a persistent family effect. A few
family-waves up to 1992 get a second member coded rel 1 (an ambiguous family, which the builder
must drop from the role lookup). Accuracy codes are mostly 0 with some 1/2 and a rare 3 (outside
the valid set); hours of 9,999 and values at the food top codes occur rarely. Food stamps are an
annual amount to 1976 and last month's amount from 1977. fam_married is missing before 1978 (so
the renter task starts where the release's does, inside the house-price series). Money is
nominal; `_rd` columns are in 2021 dollars (CPI-U anchors below). Occupation: 1970 census codes
to 2001, 2000 codes 2003-2015, 2010 codes from 2017 (a tenth of those coded 9999 with a 2000
code beside it).
"""

from __future__ import annotations

import datetime as dt
import io
import math
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import ConfigError
from hhx.io import atomic_path
from hhx.surveys.psid import LABELS, LONG_MEMBER
from hhx.surveys.psid_main_study import (
    DEFAULT_VARIABLE_MAP,
    EXPECTED_WAVES,
    MAIN_STUDY_MEMBER,
    MainStudyVar,
    read_variable_map,
)
from hhx.surveys.synthetic import write_sidecar

LONG_ZIP = "PSIDSHELF_1968_2021_LONG_7.9_GB.zip"
MAIN_STUDY_ZIP = "PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL_10.8_GB.zip"
GENERATOR = "hhx.surveys.synthetic.psid"
_STAMP = dt.datetime(2025, 2, 24, 12, 0)

# (subsample, first ER30001, last ER30001, share of the initial families, entry waves)
SUBSAMPLES: tuple[tuple[str, int, int, float, tuple[int, ...]], ...] = (
    ("src", 1, 2930, 0.75, (1968,)),
    ("seo", 5001, 6872, 0.10, (1968,)),
    ("latino", 7001, 9308, 0.07, (1990,)),
    ("immigrant_1997_1999", 3001, 3511, 0.04, (1997, 1999)),
    ("immigrant_2017_2019", 4001, 4851, 0.04, (2017, 2019)),
)
# Annual CPI-U anchors (1982-84 = 100), interpolated between years.
_CPI = {1967: 33.4, 1975: 53.8, 1980: 82.4, 1985: 107.6, 1990: 130.7, 1995: 152.4,
        2000: 172.2, 2005: 195.3, 2010: 218.1, 2015: 237.0, 2020: 258.8, 2021: 271.0}
WEALTH_WAVES = frozenset({1984, 1989, 1994, *range(1999, 2022, 2)})
RECESSION_YEARS = frozenset({1974, 1975, 1980, 1981, 1982, 1990, 1991})
DISPLACEMENT = (0.11, 0.16)  # yearly chance a working adult loses the job: normal, recession
MARRIED_FROM = 1978  # fam_married is published from this wave on
SAMPLE_CUT = (1997, 0.6)  # the 1997 sample reduction: share of families no longer followed
OCC_GROUPS = ("professional_managerial", "sales_office_service", "farming_construction_repair",
              "production_transport_labor", "military_other")
# Census occupation codes per broad group in each coding scheme.
OCC_CODES: dict[str, dict[str, tuple[int, ...]]] = {
    "occ_1970c": {
        "professional_managerial": (1, 65, 142, 202, 245),
        "sales_office_service": (260, 301, 395, 901, 965),
        "farming_construction_repair": (401, 415, 444, 801, 822, 846),
        "production_transport_labor": (601, 715, 785),
        "military_other": (980, 983),
    },
    "occ_2000c_1m": {
        "professional_managerial": (10, 120, 230, 354),
        "sales_office_service": (360, 470, 593),
        "farming_construction_repair": (600, 620, 762),
        "production_transport_labor": (770, 900, 975),
        "military_other": (980, 983),
    },
    "occ_2010c_1m": {
        "professional_managerial": (10, 2310, 3540),
        "sales_office_service": (3600, 4760, 5940),
        "farming_construction_repair": (6005, 6230, 7630),
        "production_transport_labor": (7700, 9130, 9750),
        "military_other": (9800, 9830),
    },
}  # fmt: skip
_OCC_P = {16: [0.7, 0.2, 0.03, 0.05, 0.02], 12: [0.2, 0.4, 0.17, 0.21, 0.02],
          0: [0.05, 0.3, 0.28, 0.35, 0.02]}

SHELF_VALUE_LABELS: dict[str, dict[int, str]] = {
    **LABELS,
    "rel": {0: "Not in a family unit this wave", 1: "Reference person", 2: "Spouse or partner",
            3: "Child or other family member"},
    "response": {0: "In a responding family unit", 1: "Not in a responding family unit"},
    "sampstat": {0: "Nonsample person", 1: "Original sample person", 2: "Born-in sample person"},
    "panel_current": {0: "Not in the panel this wave", 1: "In the panel this wave"},
}  # fmt: skip
SHELF_VARIABLE_LABELS = {
    "id": "Person identifier (ER30001*1000+ER30002)", "year": "Survey wave",
    "fuid": "Family unit identifier in the wave", "rel": "Relationship to reference person",
    "lineage": "1968 family identifier of the person's lineage", "fw": "Family weight",
    "earn_tot_nd": "Total labor earnings, nominal dollars (previous year)",
    "finc_tot_nd": "Total family income, nominal dollars (previous year)",
    "wlth_tot_net_nd": "Total net worth, nominal dollars",
}  # fmt: skip
SHELF_COLUMNS = (
    "id", "year", "fuid", "rel", "sampstat", "lineage", "response", "panel_current", "fw",
    "demo_sex", "demo_age_gen", "demo_birth_year", "race_eth_maj_col", "geo_region", "geo_metro",
    "edu_year", "edu_year_max", "edu_level_max", "emp_work", "home_stat", "fam_partnered",
    "fam_married", "fam_size", "fam_size_chi", "occ_2010c_1m", "occ_2000c_1m", "occ_1970c",
    "earn_tot_nd", "earn_tot_ndf", "earn_tot_rd", "finc_tot_nd", "finc_tot_rd",
    "wlth_tot_net_nd", "wlth_tot_net_rd", "wlth_savi_net_nd", "wlth_savi_net_rd",
    "wlth_inve_net_nd", "wlth_inve_net_rd", "wlth_home_net_nd", "wlth_home_net_rd",
    "wlth_odeb_net_nd", "wlth_odeb_net_rd", "hlth_srh",
)  # fmt: skip
WEALTH = ("tot_net", "savi_net", "inve_net", "home_net", "odeb_net")


@lru_cache(maxsize=256)
def _cpi_year(year: float) -> float:
    years = sorted(_CPI)
    return float(np.interp(year, years, [_CPI[y] for y in years]))


def cpi(year: float | np.ndarray) -> np.ndarray | float:
    if np.ndim(year) == 0:
        return _cpi_year(float(year))
    years = sorted(_CPI)
    return np.interp(year, years, [_CPI[y] for y in years])


@dataclass
class PsidWorld:
    """What the generator wrote: `shelf` (long file), `main_study` (Complete Main Study file) and
    `families`: one row per current family-wave with its drawn roles and raw V-values (hours_rp,
    hours_acc_rp, ..., reason_employed_rp, ..., food_home, food_home_acc, ...; NaN where the wave
    has no such variable), `displaced_rp`/`displaced_sp` (a job lost in the year before the wave)
    and `ambiguous` (a second rel 1 member was coded)."""

    shelf: pd.DataFrame
    main_study: pd.DataFrame
    families: pd.DataFrame
    variable_map: dict[tuple[str, str, int], MainStudyVar] = field(repr=False)


@dataclass(eq=False)
class _Family:
    rp: int
    sp: int  # -1: none
    others: list[int]
    married: bool
    subsample: str
    region: int
    metro: int
    home: int
    stamps_p: float
    weight: float
    food_effect: float
    liquid: float = 0.0  # 2021 dollars
    house: float = 0.0
    mortgage: float = 0.0
    debt: float = 0.0
    income: float = 40_000.0  # last family income, 2021 dollars
    active: bool = True
    index: int = -1  # position in _World.families

    def members(self) -> list[int]:
        return [self.rp, *([self.sp] if self.sp >= 0 else []), *self.others]


class _People:
    """Columnar person store (static traits and the states carried between waves)."""

    FIELDS = {"pid": np.int64, "er30001": np.int64, "pn": np.int64, "sex": np.int64,
              "birth": np.int64, "race": np.int64, "sampstat": np.int64, "lineage": np.float64,
              "educ": np.int64, "occ": np.int64, "work_p": np.float64, "pay": np.float64,
              "hours": np.float64, "ar": np.float64, "alive": bool, "family": np.int64,
              "entered": np.int64, "lost_at": np.int64, "gone": bool}

    LISTED = ("birth", "sex", "sampstat", "er30001", "race", "lineage")

    def __init__(self) -> None:
        self.n = 0
        self.cols = {k: np.zeros(1024, dtype=t) for k, t in self.FIELDS.items()}
        # Python copies of static traits: the yearly loop reads them one at a time.
        self.listed: dict[str, list] = {k: [] for k in self.LISTED}

    def add(self, **values: float) -> int:
        if self.n == len(self.cols["pid"]):
            self.cols = {k: np.concatenate([v, np.zeros_like(v)]) for k, v in self.cols.items()}
        for k, v in values.items():
            self.cols[k][self.n] = v
        for k in self.LISTED:
            self.listed[k].append(values[k])
        self.n += 1
        return self.n - 1

    def __getitem__(self, key: str) -> np.ndarray:
        return self.cols[key][: self.n]


class _Draws:
    """Uniform and normal scalars from pre-drawn blocks (cheap, seeded, reproducible)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self._u: list[float] = []
        self._z: list[float] = []

    def u(self) -> float:
        if not self._u:
            self._u = rng_block = self.rng.random(1 << 16).tolist()
            rng_block.reverse()
        return self._u.pop()

    def z(self) -> float:
        if not self._z:
            self._z = block = self.rng.standard_normal(1 << 16).tolist()
            block.reverse()
        return self._z.pop()

    def pick(self, options: tuple | list, p: list[float] | None = None) -> object:
        weights = p if p is not None else [1.0] * len(options)
        x = self.u() * sum(weights)
        for option, w in zip(options, weights, strict=True):
            x -= w
            if x < 0:
                return option
        return options[-1]


class _World:
    def __init__(self, rng: np.random.Generator, n_families: int) -> None:
        self.rng = rng
        self.d = _Draws(rng)
        self.people = _People()
        self.families: list[_Family] = []
        self.next_pn: dict[tuple[int, str], int] = {}
        self.ids_left = {name: list(rng.permutation(np.arange(lo, hi + 1)))
                         for name, lo, hi, _, _ in SUBSAMPLES}
        self.plan = _initial_plan(n_families)

    # -- people ------------------------------------------------------------------------------
    def person(self, er30001: int, kind: str, sex: int, birth: int, race: int,
               subsample: str, lineage: float) -> int:
        d = self.d
        start = {"original": 1, "born": 30, "moved": 170}[kind]
        pn = self.next_pn.get((er30001, kind), start)
        self.next_pn[(er30001, kind)] = pn + 1
        mean = {"src": 12.6, "seo": 11.2, "latino": 10.0}.get(subsample, 12.0)
        educ = int(np.clip(round(mean + 2.6 * d.z()), 0, 20))
        occ = OCC_GROUPS.index(d.pick(OCC_GROUPS, _OCC_P[16 if educ >= 16 else
                                                         12 if educ >= 12 else 0]))
        female = sex == 2
        return self.people.add(
            pid=er30001 * 1000 + pn, er30001=er30001, pn=pn, sex=sex, birth=birth, race=race,
            sampstat={"original": 1, "born": 2, "moved": 0}[kind], lineage=lineage, educ=educ,
            occ=occ, work_p=float(self.rng.beta(5, 4) if female else self.rng.beta(8, 2)),
            pay=0.4 * d.z(), hours=(1500 if female else 2050) + 280 * d.z(),
            ar=0.3 * d.z(), alive=True, family=-1, entered=-1, lost_at=-99)

    def _race(self, subsample: str) -> int:
        p = {"src": [0.88, 0.08, 0.02, 0.02], "seo": [0.25, 0.70, 0.02, 0.03],
             "latino": [0.03, 0.01, 0.01, 0.95]}.get(subsample, [0.1, 0.1, 0.4, 0.4])
        return int(self.d.pick((1, 2, 3, 4), p))

    def _join(self, family: _Family) -> None:
        family.index = len(self.families)
        self.families.append(family)
        for member in family.members():
            self.people.cols["family"][member] = family.index

    # -- families ----------------------------------------------------------------------------
    def new_family(self, subsample: str, wave: int) -> None:
        d = self.d
        er30001 = int(self.ids_left[subsample].pop())
        race = self._race(subsample)
        age = 21 + int(d.u() * 40) if d.u() < 0.85 else 61 + int(d.u() * 20)
        partnered = d.u() < (0.8 if age < 60 else 0.55)
        rp_sex = 1 if partnered and wave < 2017 else (1 if d.u() < 0.55 else 2)
        rp = self.person(er30001, "original", rp_sex, wave - age, race, subsample, er30001)
        sp = -1
        if partnered:
            sp_age = int(np.clip(age + int(d.u() * 10) - 6, 18, 90))
            sp = self.person(er30001, "original", 3 - rp_sex, wave - sp_age, race, subsample,
                             er30001)
        kids = []
        if age < 56:
            for _ in range(min(int(self.rng.poisson(1.4)), 6)):
                kid_age = int(d.u() * min(18, age - 17))
                kids.append(self.person(er30001, "original", 1 + int(d.u() < 0.5),
                                        wave - kid_age, race, subsample, er30001))
        region_p = {"seo": [0.1, 0.2, 0.6, 0.1], "latino": [0.1, 0.1, 0.35, 0.45]}.get(
            subsample, [0.2, 0.27, 0.33, 0.2])
        region = 5 if d.u() < 0.01 else int(d.pick((1, 2, 3, 4), region_p))
        income = 40_000 * float(np.exp(0.5 * d.z()))
        owner = d.u() < 0.15 + 0.011 * (age - 21)
        family = _Family(
            rp=rp, sp=sp, others=kids, married=bool(partnered and d.u() < 0.9),
            subsample=subsample, region=region,
            metro=int(d.u() < (0.55 if subsample == "src" else 0.75)),
            home=1 if owner else (2 if d.u() < 0.85 else 3),
            stamps_p={"seo": 0.3, "latino": 0.2}.get(subsample, 0.07),
            weight=float(np.exp(7.5 + 0.5 * d.z())), food_effect=0.2 * d.z(),
            liquid=max(0.0, income * (0.1 + 0.02 * (age - 21)) * float(np.exp(0.8 * d.z()))),
            debt=income * 0.15 * d.u(), income=income)
        if owner:
            self._buy(family, income)
        self._join(family)

    def _buy(self, family: _Family, income: float) -> None:
        family.home = 1
        family.house = 3.0 * income * float(np.exp(0.25 * self.d.z()))
        family.mortgage = 0.8 * family.house * self.d.u()
        family.liquid = max(0.0, family.liquid - 0.1 * family.house)

    def _spawn(self, person: int, parent: _Family, home: int) -> None:
        d = self.d
        self._join(_Family(
            rp=person, sp=-1, others=[], married=False, subsample=parent.subsample,
            region=parent.region if d.u() < 0.85 else 1 + int(d.u() * 4), metro=parent.metro,
            home=home, stamps_p=parent.stamps_p, weight=parent.weight * float(np.exp(0.2 * d.z())),
            food_effect=0.2 * d.z(), liquid=2_000 * d.u(), income=25_000))

    def cut_sample(self, share: float) -> None:
        """Stop following a share of the families (no rows for their members afterwards)."""
        for family in self.families:
            if family.active and self.d.u() < share:
                family.active = False
                for member in family.members():
                    self.leave(member)
                    self.people.cols["gone"][member] = True

    def leave(self, person: int) -> None:
        self.people.cols["family"][person] = -1

    def year_passes(self, year: int) -> None:
        d, people = self.d, self.people
        birth, sex, samp = (people.listed[k] for k in ("birth", "sex", "sampstat"))
        er30001, race, lineages = (people.listed[k] for k in ("er30001", "race", "lineage"))
        for family in list(self.families):
            if not family.active:
                continue
            if d.u() < 0.006 or (family.subsample == "latino" and year > 1995):
                family.active = False
                for member in family.members():
                    self.leave(member)
                continue
            for member in family.members():
                age = year - birth[member]
                if age >= 30 and d.u() < min(0.3, 0.0005 * math.exp(0.085 * (age - 30))):
                    self._death(family, member, year)
                    if not family.active:
                        break
            if not family.active:
                continue
            rp, sp = family.rp, family.sp
            if sp >= 0 and d.u() < 0.015:  # divorce / separation
                family.sp, family.married = -1, False
                if samp[sp] != 0 and year - birth[sp] >= 18:
                    self._spawn(sp, family, 2)
                else:
                    self.leave(sp)
            elif sp < 0 and 20 <= year - birth[rp] <= 55 and d.u() < 0.09:
                lineage = float(er30001[rp]) if d.u() < 0.95 else float("nan")
                kin = race[rp] if d.u() < 0.85 else self._race(family.subsample)
                partner = self.person(er30001[rp], "moved", 3 - sex[rp],
                                      birth[rp] + int(d.u() * 10) - 4, kin, family.subsample,
                                      lineage)
                people.cols["family"][partner] = family.index
                family.sp = partner
                family.married = bool(d.u() < (0.9 if year < 1990 else 0.75))
            mother = next((p for p in (family.rp, family.sp) if p >= 0 and sex[p] == 2), None)
            if mother is not None and 18 <= year - birth[mother] <= 42 and d.u() < 0.09:
                parent = family.rp if samp[family.rp] != 0 else (
                    family.sp if family.sp >= 0 else family.rp)
                child = self.person(er30001[parent], "born", 1 + int(d.u() < 0.5), year,
                                    race[family.rp], family.subsample, lineages[parent])
                people.cols["family"][child] = family.index
                family.others.append(child)
            for child in list(family.others):
                if year - birth[child] >= 18 and d.u() < 0.22:
                    family.others.remove(child)
                    self._spawn(child, family, 2 if d.u() < 0.8 else 3)
            self._money(family, year)
            if d.u() < 0.02:
                family.region = 1 + int(d.u() * 4)
            if d.u() < 0.02:
                family.metro = 1 - family.metro

    def _money(self, family: _Family, year: int) -> None:
        """A year of wealth and tenure: returns and savings, house prices, buying a home."""
        d = self.d
        income = max(family.income, 1_000.0)
        family.liquid = max(0.0, family.liquid * (1.03 + 0.08 * d.z())
                            + income * (0.03 + 0.05 * (income > 60_000)))
        family.debt = max(0.0, 0.9 * family.debt + 0.05 * income * d.u())
        if family.home == 1:
            family.house *= 1.01 + 0.05 * d.z()
            family.mortgage = max(0.0, family.mortgage - 0.035 * family.house)
            if d.u() < 0.015:
                family.home, family.house, family.mortgage = 2, 0.0, 0.0
            return
        if family.home == 3:
            if d.u() < 0.3:
                family.home = 2
            return
        age = year - self.people.listed["birth"][family.rp]
        score = (-2.8 + 1.3 * math.log(income / 40_000) + 0.9 * (family.liquid > 15_000)
                 + 0.6 * (family.sp >= 0) - 0.04 * abs(age - 33))
        if d.u() < 1 / (1 + math.exp(-score)):
            self._buy(family, income)

    def _death(self, family: _Family, member: int, year: int) -> None:
        self.people.cols["alive"][member] = False
        self.leave(member)
        if member == family.sp:
            family.sp, family.married = -1, False
        elif member != family.rp:
            family.others.remove(member)
        elif family.sp >= 0:  # the spouse becomes the reference person
            family.rp, family.sp, family.married = family.sp, -1, False
        else:  # the oldest adult member takes over, else the family ends
            birth = self.people.listed["birth"]
            adults = [p for p in family.others if year - birth[p] >= 18]
            if adults:
                heir = min(adults, key=lambda p: birth[p])
                family.others.remove(heir)
                family.rp = heir
            else:
                family.active = False
                for other in family.others:
                    self.leave(other)


def _initial_plan(n_families: int) -> dict[str, int]:
    if n_families < 5:
        raise ConfigError(f"write_synthetic_psid: n_families must be >= 5, got {n_families}")
    counts = {name: max(1, int(share * n_families)) for name, _, _, share, _ in SUBSAMPLES}
    counts["src"] += n_families - sum(counts.values())
    for name, lo, hi, _, _ in SUBSAMPLES:
        if counts[name] > hi - lo + 1:
            raise ConfigError(
                f"write_synthetic_psid: n_families={n_families} needs {counts[name]} {name} "
                f"families but PSID 1968 ids {lo}-{hi} allow {hi - lo + 1}"
            )
    return counts


# ---------------------------------------------------------------------------------------------
# One wave, vectorised over the current families and persons


def _edu_level(years: np.ndarray) -> np.ndarray:
    return np.select([np.isnan(years), years < 12, years == 12, years < 16, years == 16],
                     [np.nan, 0, 1, 2, 3], 4).astype(float)


def _accuracy(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.searchsorted(np.cumsum([0.86, 0.08, 0.05, 0.01]), rng.random(n) * 0.99999,
                           side="right").astype(float)


def _other_codes(rng: np.random.Generator, working: np.ndarray) -> np.ndarray:
    """Job-end codes of people who did not lose a job: mostly 0 (inapplicable)."""
    codes = np.array([0, 2, 4, 5, 6, 7, 8, 9], dtype=float)
    cum = np.cumsum([0.72, 0.01, 0.12, 0.04, 0.03, 0.03, 0.04, 0.01])
    drawn = codes[np.minimum(np.searchsorted(cum, rng.random(len(working)), side="right"), 7)]
    return np.where(~working & (rng.random(len(working)) < 0.5), 0.0, drawn)


def _occupation_codes(rng: np.random.Generator, occ: np.ndarray, working: np.ndarray,
                      wave: int) -> dict[str, np.ndarray]:
    n = len(occ)
    out = {k: np.full(n, np.nan) for k in ("occ_1970c", "occ_2000c_1m", "occ_2010c_1m")}

    def draw(scheme: str, mask: np.ndarray) -> None:
        for g, group in enumerate(OCC_GROUPS):
            pick = mask & (occ == g)
            options = np.array(OCC_CODES[scheme][group], dtype=float)
            out[scheme][pick] = options[rng.integers(0, len(options), int(pick.sum()))]

    if wave <= 2001:
        draw("occ_1970c", working)
        out["occ_1970c"][~working] = 0.0  # inapplicable code of the 1970 scheme
    elif wave <= 2015:
        draw("occ_2000c_1m", working)
    else:
        fallback = working & (rng.random(n) < 0.1)  # no 2010 code: the 2000 code is used
        draw("occ_2010c_1m", working & ~fallback)
        out["occ_2010c_1m"][fallback] = 9999.0
        draw("occ_2000c_1m", fallback)
    return out


def _wave(world: _World, wave: int, previous: int | None,
          varmap: dict[tuple[str, str, int], MainStudyVar]) -> tuple[dict, dict, list]:
    """Rows of the current persons, the family-waves' truth, and Complete Main Study values."""
    rng, people = world.rng, world.people
    active = [f for f in world.families if f.active]
    members = [f.members() for f in active]
    person = np.array([p for m in members for p in m], dtype=np.int64)
    fam = np.repeat(np.arange(len(active)), [len(m) for m in members])
    rel = np.array([1 if i == 0 else 2 if (i == 1 and f.sp >= 0) else 3
                    for f, m in zip(active, members, strict=True) for i in range(len(m))])
    n, nf = len(person), len(active)
    age = wave - people["birth"][person]
    female = people["sex"][person] == 2
    educ = people["educ"][person]
    # Labor in the year before the wave (the reference year of hours and earnings).
    p_work = (people["work_p"][person] * np.where(age < 20, 0.45, 1.0)
              * np.where(age >= 62, 0.35, 1.0)
              * np.where(female & (rel == 2) & (wave < 1985), 0.7, 1.0) * (age >= 16))
    last = rng.random(n) < p_work
    rate = DISPLACEMENT[int(wave - 1 in RECESSION_YEARS)]
    again = people["lost_at"][person] == (previous if previous is not None else -1)
    lost = (rel <= 2) & (age >= 18) & (age <= 66) & last & (
        rng.random(n) < np.where(again, rate / 3, rate))
    rp_at = np.flatnonzero(rel == 1)
    sp_at = np.full(nf, -1)
    sp_at[fam[rel == 2]] = np.flatnonzero(rel == 2)
    partner = np.full(n, -1)
    has_sp = sp_at >= 0
    partner[rp_at[has_sp]] = sp_at[has_sp]
    partner[sp_at[has_sp]] = rp_at[has_sp]
    with_partner = partner >= 0
    partner_lost = with_partner & lost[np.maximum(partner, 0)]
    partner_lost_before = with_partner & (previous is not None) & (
        people["lost_at"][person[np.maximum(partner, 0)]] == (previous or -1))
    last |= partner_lost & (age >= 16) & (age <= 66) & (rng.random(n) < 0.55)
    cut = np.where(lost, 0.35 + 0.45 * rng.random(n), 1.0)
    hours = np.where(last, np.clip(people["hours"][person] + 160 * rng.standard_normal(n), 200,
                                   4000) * cut + 300 * partner_lost + 220 * partner_lost_before,
                     0.0).round()
    gap = wave - (previous if previous is not None else wave - 1)
    ar = people["ar"][person] * 0.9**gap + 0.3 * np.sqrt(1 - 0.81**gap) * rng.standard_normal(n)
    people.cols["ar"][person] = ar
    people.cols["lost_at"][person[lost]] = wave
    exp_years = np.maximum(0, age - 1 - np.maximum(educ, 12) - 5)
    wage = np.exp(2.85 + 0.085 * (educ - 12) + 0.045 * exp_years - 0.0008 * exp_years**2
                  + people["pay"][person] + ar + 0.15 * rng.standard_normal(n)) * np.where(
        female, 0.82, 1.0)
    earnings = np.where(age >= 16, np.round(wage * hours * cpi(wave - 1) / cpi(2021)), np.nan)
    earnings[(rng.random(n) < 0.002) & (age >= 16) & last] = 9_999_999.0  # published top code
    now = np.where(lost, rng.random(n) < 0.45, np.where(last, rng.random(n) < 0.94,
                                                        rng.random(n) < 0.12)).astype(float)
    now[age < 16] = np.nan
    # Families: income, food, wealth.
    adult = age >= 16
    size = np.bincount(fam, minlength=nf)
    kids = np.bincount(fam, weights=age < 18, minlength=nf)
    adults = np.bincount(fam, weights=adult, minlength=nf)
    earn_sum = np.bincount(fam, weights=np.where(adult & (earnings < 9_999_999), earnings, 0),
                           minlength=nf)
    finc = earn_sum + np.round(np.exp(8.3 + 0.9 * rng.standard_normal(nf)) * cpi(wave - 1)
                               / cpi(2021))
    real = np.maximum(finc * cpi(2021) / cpi(wave - 1), 1_000.0)
    any_lost = np.bincount(fam, weights=lost, minlength=nf) > 0
    effect = np.array([f.food_effect for f in active])
    for f, income in zip(active, real.tolist(), strict=True):
        f.income = income
    price = cpi(wave - 1) / cpi(1990)
    food = {
        "home": (1600 + 900 * size) * (real / 40_000) ** 0.25 * np.exp(effect)
        * np.where(any_lost, 0.88, 1.0) * np.exp(0.12 * rng.standard_normal(nf)) * price,
        "away": 380 * adults * (real / 40_000) ** 0.5 * np.exp(effect)
        * np.where(any_lost, 0.8, 1.0) * np.exp(0.4 * rng.standard_normal(nf))
        * (rng.random(nf) < 0.88) * price,
    }
    stamps_p = np.array([f.stamps_p for f in active])
    annual = (600 + 350 * size) * price * np.exp(0.3 * rng.standard_normal(nf))
    food["stamps"] = np.where(rng.random(nf) < stamps_p * np.where(real < 30_000, 2, 0.5),
                              annual, 0.0)
    wealth = _wealth(rng, active, wave)
    fuid = rng.choice(np.arange(1, max(10_000, 3 * nf)), size=nf, replace=False)
    truth, main = _main_values(rng, world, active, wave, person, fam, rel, rp_at, sp_at, hours,
                               last, lost, now, food, fuid, varmap)
    weight = np.array([f.weight for f in active]) * np.exp(0.05 * rng.standard_normal(nf))
    metro = np.array([f.metro for f in active])
    metro = np.where(rng.random(nf) < 0.005, 9, metro)
    married = np.array([f.married and f.sp >= 0 for f in active], dtype=float)
    edu = np.where(age >= 16, np.minimum(educ, np.maximum(0, age - 5)), np.nan).astype(float)
    deflate = cpi(2021) / cpi(wave - 1)
    rows = {
        "id": people["pid"][person], "year": np.full(n, wave), "fuid": fuid[fam], "rel": rel,
        "sampstat": people["sampstat"][person], "lineage": people["lineage"][person],
        "response": np.zeros(n), "panel_current": np.ones(n), "fw": weight[fam].round(2),
        "demo_sex": people["sex"][person], "demo_age_gen": age.astype(float),
        "demo_birth_year": people["birth"][person], "race_eth_maj_col": people["race"][person],
        "geo_region": np.array([f.region for f in active])[fam], "geo_metro": metro[fam],
        "edu_year": edu, "edu_year_max": edu, "edu_level_max": _edu_level(edu), "emp_work": now,
        "home_stat": np.array([f.home for f in active])[fam], "fam_partnered": has_sp[fam] * 1.0,
        "fam_married": (married[fam] if wave >= MARRIED_FROM else np.full(n, np.nan)),
        "fam_size": size[fam], "fam_size_chi": kids[fam], "earn_tot_nd": earnings,
        "earn_tot_ndf": np.where(np.isnan(earnings), np.nan, (rng.random(n) < 0.03) * 1.0),
        "earn_tot_rd": np.where(np.isnan(earnings) | (earnings >= 9_999_999), np.nan,
                                np.round(earnings * deflate, 2)),
        "finc_tot_nd": finc[fam], "finc_tot_rd": np.round(finc * deflate, 2)[fam],
        **_occupation_codes(rng, people["occ"][person], now == 1.0, wave),
        **{k: v[fam] for k, v in wealth.items()},
        "hlth_srh": np.where(age >= 16, rng.integers(1, 6, n), np.nan),
    }
    truth["displaced_rp"] = lost[rp_at]
    truth["displaced_sp"] = np.where(has_sp, lost[np.maximum(sp_at, 0)], False)
    return rows, truth, main


def _wealth(rng: np.random.Generator, active: list[_Family], wave: int) -> dict[str, np.ndarray]:
    nf = len(active)
    if wave not in WEALTH_WAVES:
        return {f"wlth_{k}_{s}": np.full(nf, np.nan) for k in WEALTH for s in ("nd", "rd")}
    price = cpi(wave) / cpi(2021)
    liquid = np.array([f.liquid for f in active])
    share = rng.random(nf)
    savi = np.round(liquid * (0.25 + 0.4 * share) * price)
    inve = np.round(liquid * (0.6 - 0.4 * share) * (rng.random(nf) < 0.4) * price)
    other = np.round(np.exp(9.0 + rng.standard_normal(nf)) * price)
    home = np.round(np.array([f.house - f.mortgage if f.home == 1 else 0.0 for f in active])
                    * price)
    odeb = np.round(np.array([f.debt for f in active]) * price)
    nominal = {"tot_net": savi + inve + home + other - odeb, "savi_net": savi, "inve_net": inve,
               "home_net": home, "odeb_net": odeb}
    out = {f"wlth_{k}_nd": v for k, v in nominal.items()}
    out.update({f"wlth_{k}_rd": np.round(v / price, 2) for k, v in nominal.items()})
    return out


def _main_values(rng: np.random.Generator, world: _World, active: list[_Family], wave: int,
                 person: np.ndarray, fam: np.ndarray, rel: np.ndarray, rp_at: np.ndarray,
                 sp_at: np.ndarray, hours: np.ndarray, last: np.ndarray, lost: np.ndarray,
                 now: np.ndarray, food: dict[str, np.ndarray], fuid: np.ndarray,
                 varmap: dict[tuple[str, str, int], MainStudyVar]) -> tuple[dict, list]:
    """The family-wave's V-values (recorded on every current member) and the truth frame."""
    nf = len(active)
    pid = world.people["pid"]
    truth: dict[str, np.ndarray] = {
        "year": np.full(nf, wave), "fuid": fuid, "rp_id": pid[person[rp_at]].astype(float),
        "sp_id": np.where(sp_at >= 0, pid[person[np.maximum(sp_at, 0)]], np.nan)}
    values: dict[str, np.ndarray] = {}
    for role, at in (("rp", rp_at), ("sp", sp_at)):
        here = at >= 0
        pos = np.maximum(at, 0)
        spec = varmap.get(("annual_hours", role, wave))
        if spec is not None:
            worked = here & last[pos]
            h = np.where(worked, hours[pos], 0.0)
            acc = np.where(worked, _accuracy(rng, nf), 0.0)
            h[rng.random(nf) < 0.005] = 9999.0  # not ascertained
            truth[f"hours_{role}"], truth[f"hours_acc_{role}"] = h, acc
            values[spec.variable], values[str(spec.accuracy)] = h, acc
        employed = varmap.get(("job_end_reason_employed", role, wave))
        unemployed = varmap.get(("job_end_reason_unemployed", role, wave))
        if employed is not None and unemployed is not None:
            working = here & (now[pos] == 1.0)
            code = np.where(lost[pos], np.where(rng.random(nf) < 0.35, 1.0, 3.0),
                            _other_codes(rng, working))
            code = np.where(here, code, 0.0)
            route_e, route_u = np.where(working, code, 0.0), np.where(working, 0.0, code)
            if employed.variable == unemployed.variable:  # one combined question (1968)
                route_e = route_u = code
            truth[f"reason_employed_{role}"], truth[f"reason_unemployed_{role}"] = route_e, route_u
            values[employed.variable], values[unemployed.variable] = route_e, route_u
    home = varmap.get(("food_at_home", "family", wave))
    if home is not None:
        specs = {"home": home, "away": varmap[("food_away", "family", wave)],
                 "stamps": varmap[("food_stamps", "family", wave)]}
        amounts = dict(food)
        if specs["stamps"].factor == 12:
            amounts["stamps"] = amounts["stamps"] / 12  # last month's amount
        for key, spec in specs.items():
            top = float(spec.topcode or 0)
            value = np.minimum(np.round(amounts[key]), top)
            value[rng.random(nf) < 0.004] = top  # at the top code
            acc = np.where(value > 0, _accuracy(rng, nf), 0.0)
            truth[f"food_{key}"], truth[f"food_{key}_acc"] = value, acc
            values[spec.variable], values[str(spec.accuracy)] = value, acc
    main = [(name, person, value[fam]) for name, value in values.items()]
    return truth, main


# ---------------------------------------------------------------------------------------------
# The panel, its frames and files


def synthetic_psid(
    *, seed: int, n_families: int = 60, variable_map: Path | None = None
) -> PsidWorld:
    """Simulate the panel and return the frames as they are written (see the module notes)."""
    varmap = read_variable_map(Path(variable_map) if variable_map else DEFAULT_VARIABLE_MAP)
    rng = np.random.default_rng(int(seed))
    world = _World(rng, int(n_families))
    people = world.people
    parts: list[dict] = []
    truths: list[dict] = []
    main: list[tuple[str, np.ndarray, np.ndarray]] = []
    previous: int | None = None
    for wave in EXPECTED_WAVES:
        if previous is not None:
            for year in range(previous + 1, wave + 1):
                world.year_passes(year)
        if wave == SAMPLE_CUT[0]:
            world.cut_sample(SAMPLE_CUT[1])
        for name, _, _, _, entries in SUBSAMPLES:
            if wave in entries:
                share = world.plan[name] // len(entries)
                extra = world.plan[name] - share * len(entries) if wave == entries[0] else 0
                for _ in range(share + extra):
                    world.new_family(name, wave)
        rows, truth, values = _wave(world, wave, previous, varmap)
        seen = people["entered"]
        seen[(seen < 0) & (people["family"] >= 0)] = wave
        absent = np.flatnonzero((seen >= 0) & people["alive"] & (people["family"] < 0)
                                & ~people["gone"])
        parts += [rows, _absent_rows(people, absent, wave)]
        truths.append(truth)
        main += values
        previous = wave
    shelf = pd.concat([pd.DataFrame(p) for p in parts], ignore_index=True)
    families = pd.concat([pd.DataFrame(t) for t in truths], ignore_index=True)
    shelf, families = _mark_ambiguous(rng, shelf, families)
    return PsidWorld(shelf=_shelf_types(shelf), main_study=_main_study_frame(world, main, varmap),
                     families=families, variable_map=varmap)


def _absent_rows(people: _People, at: np.ndarray, wave: int) -> dict[str, np.ndarray]:
    n = len(at)
    return {"id": people["pid"][at], "year": np.full(n, wave), "rel": np.zeros(n),
            "sampstat": people["sampstat"][at], "lineage": people["lineage"][at],
            "response": np.ones(n), "panel_current": np.zeros(n), "demo_sex": people["sex"][at],
            "demo_birth_year": people["birth"][at], "race_eth_maj_col": people["race"][at]}


def _mark_ambiguous(
    rng: np.random.Generator, shelf: pd.DataFrame, families: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Code a second member rel 1 in about 1% of family-waves to 1992 (at least one)."""
    early = shelf[(shelf["year"] <= 1992) & (shelf["rel"] == 3) & (shelf["demo_age_gen"] >= 16)]
    candidates = early.drop_duplicates(["year", "fuid"])
    k = max(1, round(0.01 * len(families[families["year"] <= 1992])))
    picked = candidates.sample(n=min(k, len(candidates)), random_state=rng)
    shelf = shelf.copy()
    shelf.loc[picked.index, "rel"] = 1
    families = families.copy()
    marks = set(zip(picked["year"], picked["fuid"], strict=True))
    families["ambiguous"] = [(y, f) in marks for y, f in
                             zip(families["year"], families["fuid"], strict=True)]
    return shelf, families


def _shelf_types(shelf: pd.DataFrame) -> pd.DataFrame:
    """Column order of the file; never-missing integer columns get integer storage types."""
    frame = shelf.reindex(columns=SHELF_COLUMNS).sort_values(["id", "year"], kind="mergesort")
    frame = frame.reset_index(drop=True)
    frame["id"] = frame["id"].astype(np.int32)
    for column in ("year", "rel", "sampstat", "response", "panel_current", "demo_sex",
                   "race_eth_maj_col", "demo_birth_year"):
        frame[column] = frame[column].astype(np.int16)
    for column in frame.columns:
        if not pd.api.types.is_integer_dtype(frame[column]):
            frame[column] = frame[column].astype(np.float64)
    frame["psidshelf_release"] = "2025-01"
    frame["psidshelf_compile"] = np.int32(20250115)
    return frame


def _main_study_frame(world: _World, values: list[tuple[str, np.ndarray, np.ndarray]],
                      varmap: dict[tuple[str, str, int], MainStudyVar]) -> pd.DataFrame:
    people = world.people
    entered = np.flatnonzero(people["entered"] >= 0)
    order = entered[np.argsort(people["pid"][entered], kind="stable")]
    position = np.full(people.n, -1)
    position[order] = np.arange(len(order))
    frame: dict[str, np.ndarray] = {
        "ER30000": np.full(len(order), 1, dtype=np.int8),
        "ER30001": people["er30001"][order].astype(np.int16),
        "ER30002": people["pn"][order].astype(np.int16),
        "ID": people["pid"][order].astype(np.int32),
        "ER32000": people["sex"][order].astype(np.int8),
    }
    names = sorted({n for s in varmap.values() for n in (s.variable, s.accuracy) if n},
                   key=lambda v: int(v[1:]) if v[1:].isdigit() else 0)
    columns = {name: np.full(len(order), np.nan) for name in names}
    for name, persons, value in values:
        columns[name][position[persons]] = value
    frame.update(columns)
    return pd.DataFrame(frame)


def _dta_bytes(frame: pd.DataFrame, value_labels: dict, variable_labels: dict,
               data_label: str) -> bytes:
    buffer = io.BytesIO()
    frame.to_stata(
        buffer, write_index=False, version=118, time_stamp=_STAMP, data_label=data_label,
        value_labels={k: v for k, v in value_labels.items() if k in frame.columns},
        variable_labels={k: v for k, v in variable_labels.items() if k in frame.columns},
    )
    return buffer.getvalue()


def _write_zip(target: Path, member: str, data: bytes) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED,
                                                     compresslevel=1) as zf:
        info = zipfile.ZipInfo(member, date_time=(2025, 2, 24, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w", force_zip64=len(data) > 2**31) as fh:
            fh.write(data)
    return target


def write_psid_archives(
    world: PsidWorld, long_zip: str | Path, main_zip: str | Path, *,
    shelf_labels: dict[str, dict[int, str]] | None = None,
) -> tuple[Path, Path]:
    """Write `world.shelf` and `world.main_study` as the two release archives (no sidecars)."""
    long_bytes = _dta_bytes(
        world.shelf, SHELF_VALUE_LABELS if shelf_labels is None else shelf_labels,
        SHELF_VARIABLE_LABELS, "PSID-SHELF 1968-2021 long file (synthetic)",
    )
    main_labels = {s.variable: f"{s.concept} {s.role} {s.wave}" for s in
                   world.variable_map.values()}
    main_labels.update({str(s.accuracy): f"accuracy of {s.variable}" for s in
                        world.variable_map.values() if s.accuracy})
    main_bytes = _dta_bytes(
        world.main_study, {}, {"ID": "Person identifier", **main_labels},
        "PSID Complete Main Study 1968-2021 (synthetic)",
    )
    return (_write_zip(Path(long_zip), LONG_MEMBER, long_bytes),
            _write_zip(Path(main_zip), MAIN_STUDY_MEMBER, main_bytes))


def write_synthetic_psid(
    long_zip: str | Path, main_zip: str | Path, *, seed: int, n_families: int = 60,
    variable_map: Path | None = None,
) -> PsidWorld:
    """Generate the panel, write both archives with synthetic sidecars, return the truth."""
    world = synthetic_psid(seed=seed, n_families=n_families, variable_map=variable_map)
    paths = write_psid_archives(world, long_zip, main_zip)
    for path in paths:
        write_sidecar(path, GENERATOR, "synthetic PSID-SHELF archive", seed=int(seed),
                      n_families=int(n_families))
    return world
