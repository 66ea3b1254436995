"""The synthetic PSID's people and families, simulated year by year between the waves.

Demo data only (hhx.surveys.synthetic.psid.shelf runs the waves and writes the archives): the rules
are meant to look plausible, not estimated from the PSID.

World. Between waves, each year: deaths by age, family attrition (about 0.6% a year; the Latino
sample leaves after 1995), divorce, marriage of single reference persons to non-sample spouses
(person numbers from 170; they take the lineage, ER30001, of the family they join, as in
PSID-SHELF), births (from 30), children of 18+ splitting off into their own family,
moves, in 1997 a sample reduction (60% of the families are no longer followed, more than the
PSID's own cut, to keep the demo small), tenure changes (renters buy more often with higher
income, savings and marriage), and wealth: liquid assets earn a return and receive savings out
of income, owners' homes gain value while mortgages amortize. A person enters with schooling,
an occupation group, a work propensity, a pay effect and usual hours, which psid_wave reads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from hhx.errors import ConfigError

T = TypeVar("T")

# (subsample, first ER30001, last ER30001, share of the initial families, entry waves)
SUBSAMPLES: tuple[tuple[str, int, int, float, tuple[int, ...]], ...] = (
    ("src", 1, 2930, 0.75, (1968,)),
    ("seo", 5001, 6872, 0.10, (1968,)),
    ("latino", 7001, 9308, 0.07, (1990,)),
    ("immigrant_1997_1999", 3001, 3511, 0.04, (1997, 1999)),
    ("immigrant_2017_2019", 4001, 4851, 0.04, (2017, 2019)),
)
SAMPLE_CUT = (1997, 0.6)  # the 1997 sample reduction: share of families no longer followed
OCC_GROUPS = ("professional_managerial", "sales_office_service", "farming_construction_repair",
              "production_transport_labor", "military_other")
_OCC_P = {16: [0.7, 0.2, 0.03, 0.05, 0.02], 12: [0.2, 0.4, 0.17, 0.21, 0.02],
          0: [0.05, 0.3, 0.28, 0.35, 0.02]}


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

    def pick(self, options: Sequence[T], p: list[float] | None = None) -> T:
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
                # PSID-SHELF gives a married-in (non-sample) spouse the lineage of the family
                # joined: every partner of an SRC adult is an SRC adult too, which the
                # reference's split groups (connected components over SRC adults) rely on.
                d.u()  # the draw of an earlier version: keeps every later draw as it was
                lineage = float(er30001[rp])
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
