"""Seeded synthetic PSID-SHELF archives (openICPSR 194322 V2 layout) with their truth.

Demo data only: families and their incomes, wealth, hours, job losses and food spending are drawn
from simple rules meant to look plausible, not estimated from the PSID; nothing computed from them
is a finding about households.

Files, as the release ships them (spec 00_common.md 1.2):
- `PSIDSHELF_1968_2021_LONG_7.9_GB.zip` holding `PSIDSHELF_1968_2021_LONG.dta`: one row per person x
  wave from the wave the person enters (1968 for the SRC and SEO samples, 1990 Latino, 1997/1999
  and 2017/2019 immigrant refreshers, later by birth, marriage or moving in), also after leaving
  (panel_current 0, response 1, family variables missing). Lower-case SHELF names, value labels on
  the coded variables (the spec's label text), Stata missing for not applicable;
- `PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL_10.8_GB.zip` holding
  `PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL.dta`: one row per person, ID (= ER30001 * 1000 +
  ER30002), ER30001, ER30002, ER32000, and every V-variable of the variable map (default: the
  shipped psid_main_study_vars.csv), family values repeated on each current member's record and
  missing for persons outside a responding family that wave.
Both are Stata 118 files as pandas writes them, with a fixed time stamp: the same seed and
arguments give byte-identical archives.

World. Waves 1968-1997 yearly, then every two years to 2021; between waves each year: deaths by
age, family attrition (about 1.2% a year; the Latino sample leaves after 1995), divorce (a sample
spouse forms a new family, a non-sample spouse leaves), marriage of single reference persons to
non-sample spouses (person numbers from 170), births (from 30), children of 18+ splitting off
into their own family, tenure changes and moves. A few family-waves up to 1992 get a second
member coded rel 1 (an ambiguous family, which the builder must drop from the role lookup). Job-end
reasons are answered on the employed route by people working at the interview, else on the
unemployed route (1968: one combined variable); qualifying codes 1 and 3 are more common in the
recession years. Accuracy codes are mostly 0 with some 1/2 and a rare 3 (outside the valid set);
hours of 9,999 and values at the food top codes occur rarely. Food stamps are an annual amount to
1976 and last month's amount from 1977. Money is nominal; `_rd` columns are in 2021 dollars (CPI-U
anchors below). Occupation: 1970 census codes to 2001, 2000 codes 2003-2015, 2010 codes from
2017 (a tenth of those coded 9999 with a 2000 code beside it).
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import ConfigError
from hhx.io import atomic_path
from hhx.surveys.psid import (
    DEFAULT_VARIABLE_MAP,
    EXPECTED_WAVES,
    LABELS,
    LONG_MEMBER,
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
    ("src", 1, 2930, 0.45, (1968,)),
    ("seo", 5001, 6872, 0.25, (1968,)),
    ("latino", 7001, 9308, 0.10, (1990,)),
    ("immigrant_1997_1999", 3001, 3511, 0.10, (1997, 1999)),
    ("immigrant_2017_2019", 4001, 4851, 0.10, (2017, 2019)),
)
# Annual CPI-U anchors (1982-84 = 100), interpolated between years.
_CPI = {1967: 33.4, 1975: 53.8, 1980: 82.4, 1985: 107.6, 1990: 130.7, 1995: 152.4,
        2000: 172.2, 2005: 195.3, 2010: 218.1, 2015: 237.0, 2020: 258.8, 2021: 271.0}
WEALTH_WAVES = frozenset({1984, 1989, 1994, *range(1999, 2022, 2)})
RECESSION_YEARS = frozenset({1974, 1975, 1980, 1981, 1982, 1990, 1991})

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


def cpi(year: float | np.ndarray) -> np.ndarray:
    years = sorted(_CPI)
    return np.interp(year, years, [_CPI[y] for y in years])


@dataclass(eq=False)
class _Person:
    pid: int
    er30001: int
    pn: int
    sex: int
    birth: int
    race: int
    sampstat: int
    lineage: float
    educ: int
    occ: str
    work_p: float
    pay: float  # person effect on log earnings
    family: _Family | None = None


@dataclass(eq=False)
class _Family:
    rp: _Person
    sp: _Person | None
    others: list[_Person]
    married: bool
    subsample: str
    region: int
    metro: int
    home: int
    stamps_p: float
    weight: float
    active: bool = True

    def members(self) -> list[_Person]:
        return [self.rp, *([self.sp] if self.sp else []), *self.others]


@dataclass
class PsidWorld:
    """What the generator wrote: `shelf` (long file), `main_study` (Complete Main Study file) and
    `families`: one row per current family-wave with its drawn roles and raw V-values (hours_rp,
    hours_acc_rp, ..., reason_employed_rp, ..., food_home, food_home_acc, ...; NaN where the wave
    has no such variable) and `ambiguous` (a second rel 1 member was coded)."""

    shelf: pd.DataFrame
    main_study: pd.DataFrame
    families: pd.DataFrame
    variable_map: dict[tuple[str, str, int], MainStudyVar] = field(repr=False)


class _World:
    def __init__(self, rng: np.random.Generator, n_families: int) -> None:
        self.rng = rng
        self.families: list[_Family] = []
        self.persons: list[_Person] = []
        self.next_pn: dict[tuple[int, str], int] = {}
        self.ids_left = {name: list(rng.permutation(np.arange(lo, hi + 1)))
                         for name, lo, hi, _, _ in SUBSAMPLES}
        self.plan = _initial_plan(n_families)

    # -- people ------------------------------------------------------------------------------
    def _pn(self, er30001: int, kind: str) -> int:
        start = {"original": 1, "born": 30, "moved": 170}[kind]
        pn = self.next_pn.get((er30001, kind), start)
        self.next_pn[(er30001, kind)] = pn + 1
        return pn

    def person(self, er30001: int, kind: str, sex: int, birth: int, race: int,
               subsample: str, lineage: float) -> _Person:
        rng = self.rng
        pn = self._pn(er30001, kind)
        mean = {"src": 12.6, "seo": 11.2, "latino": 10.0}.get(subsample, 12.0)
        educ = int(np.clip(round(rng.normal(mean, 2.6)), 0, 20))
        if educ >= 16:
            occ = rng.choice(OCC_GROUPS, p=[0.7, 0.2, 0.03, 0.05, 0.02])
        elif educ >= 12:
            occ = rng.choice(OCC_GROUPS, p=[0.2, 0.4, 0.17, 0.21, 0.02])
        else:
            occ = rng.choice(OCC_GROUPS, p=[0.05, 0.3, 0.28, 0.35, 0.02])
        person = _Person(
            pid=er30001 * 1000 + pn, er30001=er30001, pn=pn, sex=sex, birth=birth, race=race,
            sampstat={"original": 1, "born": 2, "moved": 0}[kind], lineage=lineage, educ=educ,
            occ=str(occ), work_p=float(rng.beta(8, 2) if sex == 1 else rng.beta(5, 4)),
            pay=float(rng.normal(0, 0.45)),
        )
        self.persons.append(person)
        return person

    def _race(self, subsample: str) -> int:
        p = {"src": [0.88, 0.08, 0.02, 0.02], "seo": [0.25, 0.70, 0.02, 0.03],
             "latino": [0.03, 0.01, 0.01, 0.95]}.get(subsample, [0.1, 0.1, 0.4, 0.4])
        return int(self.rng.choice([1, 2, 3, 4], p=p))

    # -- families ----------------------------------------------------------------------------
    def new_family(self, subsample: str, wave: int) -> None:
        rng = self.rng
        er30001 = int(self.ids_left[subsample].pop())
        race = self._race(subsample)
        age = int(rng.integers(21, 71))
        partnered = rng.random() < (0.7 if age < 60 else 0.55)
        rp_sex = 1 if partnered and wave < 2017 else int(rng.choice([1, 2], p=[0.55, 0.45]))
        rp = self.person(er30001, "original", rp_sex, wave - age, race, subsample, er30001)
        sp = None
        if partnered:
            sp_age = int(np.clip(age + rng.integers(-6, 4), 18, 90))
            sp = self.person(er30001, "original", 3 - rp_sex, wave - sp_age, race, subsample,
                             er30001)
        kids = []
        if age < 56:
            for _ in range(min(int(rng.poisson(1.4)), 6)):
                kid_age = int(rng.integers(0, min(18, age - 17)))
                kids.append(self.person(er30001, "original", int(rng.integers(1, 3)),
                                        wave - kid_age, race, subsample, er30001))
        region_p = {"seo": [0.1, 0.2, 0.6, 0.1], "latino": [0.1, 0.1, 0.35, 0.45]}.get(
            subsample, [0.2, 0.27, 0.33, 0.2])
        region = int(rng.choice([1, 2, 3, 4], p=region_p))
        if rng.random() < 0.01:
            region = 5
        owner_p = 0.15 + 0.011 * (age - 21)
        family = _Family(
            rp=rp, sp=sp, others=kids, married=bool(partnered and rng.random() < 0.9),
            subsample=subsample, region=region,
            metro=int(rng.random() < (0.55 if subsample == "src" else 0.75)),
            home=1 if rng.random() < owner_p else int(rng.choice([2, 3], p=[0.85, 0.15])),
            stamps_p={"seo": 0.3, "latino": 0.2}.get(subsample, 0.07),
            weight=float(rng.lognormal(7.5, 0.5)),
        )
        for member in family.members():
            member.family = family
        self.families.append(family)

    def split_off(self, person: _Person, parent: _Family) -> None:
        parent.others.remove(person)
        family = _Family(
            rp=person, sp=None, others=[], married=False, subsample=parent.subsample,
            region=parent.region if self.rng.random() < 0.85 else int(self.rng.integers(1, 5)),
            metro=parent.metro, home=int(self.rng.choice([2, 3], p=[0.8, 0.2])),
            stamps_p=parent.stamps_p, weight=parent.weight * float(self.rng.lognormal(0, 0.2)),
        )
        person.family = family
        self.families.append(family)

    def leave(self, person: _Person) -> None:
        person.family = None

    def year_passes(self, year: int) -> None:
        rng = self.rng
        for family in list(self.families):
            if not family.active:
                continue
            if rng.random() < 0.012 or (family.subsample == "latino" and year > 1995):
                family.active = False
                for member in family.members():
                    self.leave(member)
                continue
            for member in family.members():
                if not family.active:
                    break
                age = year - member.birth
                if age >= 30 and rng.random() < min(0.3, 0.0005 * np.exp(0.085 * (age - 30))):
                    self._death(family, member, year)
            if not family.active:
                continue
            rp, sp = family.rp, family.sp
            if sp is not None and rng.random() < 0.015:  # divorce / separation
                family.sp = None
                family.married = False
                if sp.sampstat != 0 and year - sp.birth >= 18:
                    self._alone(sp, family)
                else:
                    self.leave(sp)
            elif sp is None and 20 <= year - rp.birth <= 55 and rng.random() < 0.07:
                lineage = float(rp.er30001) if rng.random() < 0.95 else float("nan")
                race = rp.race if rng.random() < 0.85 else self._race(family.subsample)
                partner = self.person(rp.er30001, "moved", 3 - rp.sex,
                                      rp.birth + int(rng.integers(-4, 6)), race,
                                      family.subsample, lineage)
                partner.family = family
                family.sp = partner
                family.married = bool(rng.random() < (0.9 if year < 1990 else 0.75))
            mother = next((p for p in (family.rp, family.sp) if p is not None and p.sex == 2),
                          None)
            if mother is not None and 18 <= year - mother.birth <= 42 and rng.random() < 0.09:
                sample_parent = family.rp if family.rp.sampstat != 0 else (family.sp or family.rp)
                child = self.person(sample_parent.er30001, "born", int(rng.integers(1, 3)), year,
                                    family.rp.race, family.subsample, sample_parent.lineage)
                child.family = family
                family.others.append(child)
            for child in list(family.others):
                if year - child.birth >= 18 and rng.random() < 0.22:
                    self.split_off(child, family)
            if family.home == 2 and rng.random() < 0.05 + 0.03 * (28 <= year - rp.birth <= 50):
                family.home = 1
            elif family.home == 1 and rng.random() < 0.015:
                family.home = 2
            elif family.home == 3 and rng.random() < 0.3:
                family.home = 2
            if rng.random() < 0.02:
                family.region = int(rng.integers(1, 5))
            if rng.random() < 0.02:
                family.metro = 1 - family.metro

    def _alone(self, person: _Person, old: _Family) -> None:
        family = _Family(
            rp=person, sp=None, others=[], married=False, subsample=old.subsample,
            region=old.region, metro=old.metro, home=2, stamps_p=old.stamps_p,
            weight=old.weight,
        )
        person.family = family
        self.families.append(family)

    def _death(self, family: _Family, member: _Person, year: int) -> None:
        self.leave(member)
        if member is family.sp:
            family.sp = None
            family.married = False
        elif member is not family.rp:
            family.others.remove(member)
        elif family.sp is not None:  # the spouse becomes the reference person
            family.rp, family.sp = family.sp, None
            family.married = False
        else:  # the oldest adult member takes over, else the family ends
            adults = [p for p in family.others if year - p.birth >= 18]
            heir = min(adults, key=lambda p: p.birth, default=None)
            if heir is not None:
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


def synthetic_psid(
    *, seed: int, n_families: int = 60, variable_map: Path | None = None
) -> PsidWorld:
    """Simulate the panel and return the frames as they are written (see the module notes)."""
    varmap = read_variable_map(Path(variable_map) if variable_map else DEFAULT_VARIABLE_MAP)
    rng = np.random.default_rng(int(seed))
    world = _World(rng, int(n_families))
    rows: list[dict] = []
    family_rows: list[dict] = []
    main_values: dict[str, dict[int, float]] = {}
    entered: list[_Person] = []
    seen: set[int] = set()
    previous: int | None = None
    for wave in EXPECTED_WAVES:
        if previous is not None:
            for year in range(previous + 1, wave + 1):
                world.year_passes(year)
        for name, _, _, _, entries in SUBSAMPLES:
            if wave in entries:
                share = world.plan[name] // len(entries)
                extra = world.plan[name] - share * len(entries) if wave == entries[0] else 0
                for _ in range(share + extra):
                    world.new_family(name, wave)
        active = [f for f in world.families if f.active]
        # Family interview numbers: unique within a wave, redrawn every wave (as in the PSID).
        pool = np.arange(1, max(10_000, 3 * len(active)))
        fuids = rng.choice(pool, size=len(active), replace=False)
        for person in world.persons:
            if person.pid not in seen:
                seen.add(person.pid)
                entered.append(person)
        current = {}
        for family, fuid in zip(active, fuids.tolist(), strict=True):
            state = _family_wave(rng, family, int(fuid), wave)
            for person in family.members():
                current[person.pid] = (family, state)
            truth = _family_values(rng, family, state, wave, varmap, main_values)
            family_rows.append(truth)
        for person in entered:
            if person.pid in current:
                family, state = current[person.pid]
                rows.append(_current_row(rng, person, family, state, wave))
            else:
                rows.append(_absent_row(person, wave))
        previous = wave
    shelf = pd.DataFrame(rows)
    families = pd.DataFrame(family_rows)
    shelf, families = _mark_ambiguous(rng, shelf, families)
    main = _main_study_frame(entered, main_values, varmap)
    return PsidWorld(shelf=_shelf_types(shelf), main_study=main, families=families,
                     variable_map=varmap)


def _family_wave(rng: np.random.Generator, family: _Family, fuid: int, wave: int) -> dict:
    """What the family and its members do this wave (labour, incomes), drawn once."""
    labor = {}
    for person in family.members():
        age = wave - person.birth
        if age < 16:
            labor[person.pid] = (np.nan, np.nan, np.nan)
            continue
        p = person.work_p * (0.45 if age < 20 else 1.0) * (0.35 if age >= 62 else 1.0)
        p *= 0.7 if (person.sex == 2 and wave < 1985 and person is family.sp) else 1.0
        now = float(rng.random() < p)
        last = now if rng.random() < 0.85 else 1.0 - now
        if last:
            exp_years = max(0, age - 1 - max(person.educ, 12) - 5)
            real = np.exp(10.45 + 0.085 * (person.educ - 12) + 0.045 * exp_years
                          - 0.0008 * exp_years**2 + person.pay + rng.normal(0, 0.35))
            real *= 0.7 if person.sex == 2 else 1.0
            earnings = float(np.round(real * cpi(wave - 1) / cpi(2021)))
            if rng.random() < 0.002:
                earnings = 9_999_999.0  # published top code
        else:
            earnings = 0.0
        labor[person.pid] = (now, last, earnings)
    adults = [p for p in family.members() if wave - p.birth >= 16]
    family_earnings = sum(labor[p.pid][2] for p in adults if labor[p.pid][2] < 9_999_999)
    other = float(np.round(rng.lognormal(8.0, 1.0) * cpi(wave - 1) / cpi(2021)))
    return {"fuid": fuid, "labor": labor, "finc": family_earnings + other,
            "weight": family.weight * float(rng.lognormal(0, 0.05)),
            "metro": 9 if rng.random() < 0.005 else family.metro,
            "wealth": _wealth(rng, family, wave)}


def _occupation(rng: np.random.Generator, person: _Person, wave: int) -> dict[str, float]:
    codes = {"occ_1970c": np.nan, "occ_2000c_1m": np.nan, "occ_2010c_1m": np.nan}
    if wave <= 2001:
        codes["occ_1970c"] = float(rng.choice(OCC_CODES["occ_1970c"][person.occ]))
    elif wave <= 2015:
        codes["occ_2000c_1m"] = float(rng.choice(OCC_CODES["occ_2000c_1m"][person.occ]))
    elif rng.random() < 0.1:  # no 2010 code: the 2000 code beside it is used
        codes["occ_2010c_1m"] = 9999.0
        codes["occ_2000c_1m"] = float(rng.choice(OCC_CODES["occ_2000c_1m"][person.occ]))
    else:
        codes["occ_2010c_1m"] = float(rng.choice(OCC_CODES["occ_2010c_1m"][person.occ]))
    return codes


def _edu_level(years: float) -> float:
    if np.isnan(years):
        return np.nan
    return float(0 if years < 12 else 1 if years == 12 else 2 if years < 16 else
                 3 if years == 16 else 4)


def _current_row(rng: np.random.Generator, person: _Person, family: _Family, state: dict,
                 wave: int) -> dict:
    age = wave - person.birth
    now, _, earnings = state["labor"][person.pid]
    edu = float(min(person.educ, max(0, age - 5))) if age >= 16 else np.nan
    members = family.members()
    rel = 1 if person is family.rp else 2 if person is family.sp else 3
    deflate = cpi(2021) / cpi(wave - 1)
    row = {
        "id": person.pid, "year": wave, "fuid": state["fuid"], "rel": rel,
        "sampstat": person.sampstat, "lineage": person.lineage, "response": 0,
        "panel_current": 1, "fw": round(state["weight"], 2),
        "demo_sex": person.sex, "demo_age_gen": age, "demo_birth_year": person.birth,
        "race_eth_maj_col": person.race, "geo_region": family.region,
        "geo_metro": state["metro"],
        "edu_year": edu, "edu_year_max": edu, "edu_level_max": _edu_level(edu),
        "emp_work": now, "home_stat": family.home,
        "fam_partnered": int(family.sp is not None),
        "fam_married": int(family.sp is not None and family.married),
        "fam_size": len(members),
        "fam_size_chi": sum(1 for p in members if wave - p.birth < 18),
        "earn_tot_nd": earnings,
        "earn_tot_ndf": float(rng.random() < 0.03) if not np.isnan(earnings) else np.nan,
        "earn_tot_rd": np.nan if np.isnan(earnings) or earnings >= 9_999_999
        else round(earnings * deflate, 2),
        "finc_tot_nd": state["finc"], "finc_tot_rd": round(state["finc"] * deflate, 2),
    }
    codes = (_occupation(rng, person, wave) if now == 1.0
             else {"occ_1970c": np.nan, "occ_2000c_1m": np.nan, "occ_2010c_1m": np.nan})
    if now == 0.0 and wave <= 2001:
        codes["occ_1970c"] = 0.0  # inapplicable code of the 1970 scheme
    row.update(codes)
    row.update(state["wealth"])
    row["hlth_srh"] = float(rng.integers(1, 6)) if age >= 16 else np.nan
    return row


def _wealth(rng: np.random.Generator, family: _Family, wave: int) -> dict[str, float]:
    names = ("tot_net", "savi_net", "inve_net", "home_net", "odeb_net")
    if wave not in WEALTH_WAVES:
        return {**{f"wlth_{n}_nd": np.nan for n in names},
                **{f"wlth_{n}_rd": np.nan for n in names}}
    price = cpi(wave) / cpi(2021)
    age = wave - family.rp.birth
    savi = float(np.round(rng.lognormal(8.0 + 0.02 * age, 1.4) * price * (rng.random() < 0.9)))
    inve = float(np.round(rng.lognormal(9.5, 1.6) * price * (rng.random() < 0.35)))
    home = 0.0
    if family.home == 1:
        value = rng.lognormal(12.3, 0.5) * price
        home = float(np.round(value * min(1.0, max(-0.1, 0.15 + 0.02 * (age - 25)))))
    odeb = float(np.round(rng.lognormal(8.7, 1.2) * price * (rng.random() < 0.45)))
    other = float(np.round(rng.lognormal(9.0, 1.0) * price))
    total = savi + inve + home + other - odeb
    nd = {"tot_net": total, "savi_net": savi, "inve_net": inve, "home_net": home,
          "odeb_net": odeb}
    out = {f"wlth_{k}_nd": v for k, v in nd.items()}
    out.update({f"wlth_{k}_rd": round(v / price, 2) for k, v in nd.items()})
    return out


def _absent_row(person: _Person, wave: int) -> dict:
    return {"id": person.pid, "year": wave, "rel": 0, "sampstat": person.sampstat,
            "lineage": person.lineage, "response": 1, "panel_current": 0,
            "demo_sex": person.sex, "demo_birth_year": person.birth,
            "race_eth_maj_col": person.race}


def _accuracy(rng: np.random.Generator) -> float:
    return float(rng.choice([0, 1, 2, 3], p=[0.86, 0.08, 0.05, 0.01]))


def _reason(rng: np.random.Generator, working: float, wave: int) -> float:
    displaced = 0.08 if wave - 1 in RECESSION_YEARS else 0.045
    if rng.random() < displaced:
        return float(rng.choice([1, 3], p=[0.35, 0.65]))
    if not working and rng.random() < 0.5:
        return 0.0
    return float(rng.choice([0, 2, 4, 5, 6, 7, 8, 9],
                            p=[0.72, 0.01, 0.12, 0.04, 0.03, 0.03, 0.04, 0.01]))


def _family_values(
    rng: np.random.Generator,
    family: _Family,
    state: dict,
    wave: int,
    varmap: dict[tuple[str, str, int], MainStudyVar],
    main_values: dict[str, dict[int, float]],
) -> dict:
    """Draw this family-wave's Complete Main Study values; record them for every member."""
    truth: dict = {"year": wave, "fuid": state["fuid"], "rp_id": family.rp.pid,
                   "sp_id": family.sp.pid if family.sp else np.nan}
    written: dict[str, float] = {}
    for role, person in (("rp", family.rp), ("sp", family.sp)):
        hours = varmap.get(("annual_hours", role, wave))
        if hours is not None:
            h, acc = 0.0, 0.0
            if person is not None and state["labor"][person.pid][1] == 1.0:
                mean, sd = (2000, 450) if role == "rp" else (1350, 600)
                h = float(np.clip(round(rng.normal(mean, sd)), 40, 5200))
                acc = _accuracy(rng)
            if rng.random() < 0.01:
                h = 9999.0  # not ascertained
            truth[f"hours_{role}"], truth[f"hours_acc_{role}"] = h, acc
            written[hours.variable], written[str(hours.accuracy)] = h, acc
        employed = varmap.get(("job_end_reason_employed", role, wave))
        unemployed = varmap.get(("job_end_reason_unemployed", role, wave))
        if employed is not None and unemployed is not None:
            working = 0.0
            code = 0.0
            if person is not None:
                working = state["labor"][person.pid][0]
                code = _reason(rng, working, wave)
            route_e, route_u = (code, 0.0) if working == 1.0 else (0.0, code)
            if employed.variable == unemployed.variable:  # one combined question (1968)
                route_e = route_u = code
            truth[f"reason_employed_{role}"], truth[f"reason_unemployed_{role}"] = route_e, route_u
            written[employed.variable], written[unemployed.variable] = route_e, route_u
    home = varmap.get(("food_at_home", "family", wave))
    if home is not None:
        size = len(family.members())
        adults = sum(1 for p in family.members() if wave - p.birth >= 16)
        price = cpi(wave - 1) / cpi(1990)
        stamps = varmap[("food_stamps", "family", wave)]
        away = varmap[("food_away", "family", wave)]
        amounts = {
            "home": (1700 + 1000 * size) * price * rng.lognormal(0, 0.3),
            "away": 450 * adults * price * rng.lognormal(0, 0.6) * (rng.random() < 0.85),
            "stamps": 0.0,
        }
        if rng.random() < family.stamps_p:
            annual = (600 + 350 * size) * price * rng.lognormal(0, 0.3)
            amounts["stamps"] = annual / 12 if stamps.factor == 12 else annual
        for key, spec in (("home", home), ("away", away), ("stamps", stamps)):
            value = min(float(np.round(amounts[key])), float(spec.topcode or 0))
            if rng.random() < 0.004:
                value = float(spec.topcode or 0)  # at the top code
            acc = _accuracy(rng) if value > 0 else 0.0
            truth[f"food_{key}"], truth[f"food_{key}_acc"] = value, acc
            written[spec.variable], written[str(spec.accuracy)] = value, acc
    for person in family.members():
        for variable, value in written.items():
            main_values.setdefault(variable, {})[person.pid] = value
    return truth


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


def _shelf_types(shelf: pd.DataFrame) -> pd.DataFrame:
    """Column order of the file; never-missing integer columns get integer storage types."""
    frame = shelf.reindex(columns=SHELF_COLUMNS).sort_values(["id", "year"], kind="mergesort")
    frame = frame.reset_index(drop=True)
    for column in ("id",):
        frame[column] = frame[column].astype(np.int32)
    for column in ("year", "rel", "sampstat", "response", "panel_current", "demo_sex",
                   "race_eth_maj_col", "demo_birth_year"):
        frame[column] = frame[column].astype(np.int16)
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].astype(np.float64)
    frame["psidshelf_release"] = "2025-01"
    frame["psidshelf_compile"] = np.int32(20250115)
    return frame


def _main_study_frame(
    persons: list[_Person],
    values: dict[str, dict[int, float]],
    varmap: dict[tuple[str, str, int], MainStudyVar],
) -> pd.DataFrame:
    ids = np.array([p.pid for p in persons], dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    people = [persons[i] for i in order]
    frame: dict[str, np.ndarray] = {
        "ER30000": np.full(len(people), 1, dtype=np.int8),
        "ER30001": np.array([p.er30001 for p in people], dtype=np.int16),
        "ER30002": np.array([p.pn for p in people], dtype=np.int16),
        "ID": np.array([p.pid for p in people], dtype=np.int32),
        "ER32000": np.array([p.sex for p in people], dtype=np.int8),
    }
    variables = []
    for spec in sorted(varmap.values(), key=lambda s: (s.wave, s.concept, s.role)):
        for name in (spec.variable, spec.accuracy):
            if name and name not in variables:
                variables.append(name)
    variables.sort(key=lambda v: int(v[1:]) if v[1:].isdigit() else 0)
    for name in variables:
        column = values.get(name, {})
        frame[name] = np.array([column.get(p.pid, np.nan) for p in people], dtype=np.float64)
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
    with atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
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
