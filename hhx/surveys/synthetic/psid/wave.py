"""One wave of the synthetic PSID, vectorised over the current families and persons: the
long-file rows, the Complete Main Study V-values and the family-waves' truth (psid_family carries
the people and families between waves; hhx.surveys.synthetic.psid.shelf writes the files).

Labor: earnings are an hourly wage (schooling, experience, a person effect, a persistent AR(1)
shock and noise) times annual hours. A reference person or spouse working in the year before a
wave loses that job with 11% chance (16% in recession years; a third of that right after a loss),
reported at the wave as job-end code 1 or 3: the loser's hours and earnings of that year fall;
the partner works about 300 more hours that year and 220 more the next (the added-worker
response); the family's food spending falls about 12%. Food spending otherwise follows family
size, income and a persistent family effect. Accuracy codes are mostly 0 with some 1/2 and a rare
3 (outside the valid set); hours of 9,999 and values at the food top codes occur rarely. Food
stamps are an annual amount to 1976 and last month's amount from 1977. fam_married is missing
before 1978 (so the renter task starts where the release's does, inside the house-price series).
Money is nominal; `_rd` columns are in 2021 dollars (CPI-U anchors below). Occupation: 1970
census codes to 2001, 2000 codes 2003-2015, 2010 codes from 2017 (a tenth of those coded 9999
with a 2000 code beside it).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from hhx.surveys.psid.main_study import MainStudyVar
from hhx.surveys.synthetic.psid.family import OCC_GROUPS, _Family, _People, _World

# Annual CPI-U anchors (1982-84 = 100), interpolated between years.
_CPI = {1967: 33.4, 1975: 53.8, 1980: 82.4, 1985: 107.6, 1990: 130.7, 1995: 152.4,
        2000: 172.2, 2005: 195.3, 2010: 218.1, 2015: 237.0, 2020: 258.8, 2021: 271.0}
WEALTH_WAVES = frozenset({1984, 1989, 1994, *range(1999, 2022, 2)})
RECESSION_YEARS = frozenset({1974, 1975, 1980, 1981, 1982, 1990, 1991})
DISPLACEMENT = (0.11, 0.16)  # yearly chance a working adult loses the job: normal, recession
MARRIED_FROM = 1978  # fam_married is published from this wave on
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
    educ = people["educ"][person]
    last, lost, hours, earnings, now, (rp_at, sp_at) = _labor(
        rng, people, person, fam, rel, nf, wave, previous)
    has_sp = sp_at >= 0
    size, kids, finc, food = _income_and_food(rng, active, fam, age, earnings, lost, wave)
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




def _labor(rng: np.random.Generator, people: _People, person: np.ndarray, fam: np.ndarray,
           rel: np.ndarray, nf: int, wave: int, previous: int | None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                      tuple[np.ndarray, np.ndarray]]:
    """Labor in the year before the wave (the reference year of hours and earnings): worked,
    displaced, hours, earnings, working now; and each family's reference person's and spouse's
    row (-1: no spouse). Updates the persons' wage shock and last displacement."""
    n = len(person)
    age = wave - people["birth"][person]
    female = people["sex"][person] == 2
    educ = people["educ"][person]
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
    return last, lost, hours, earnings, now, (rp_at, sp_at)


def _income_and_food(rng: np.random.Generator, active: list[_Family], fam: np.ndarray,
                     age: np.ndarray, earnings: np.ndarray, lost: np.ndarray, wave: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Each family's size, children, income (sets `income` on the family) and food spending."""
    nf = len(active)
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
    return size, kids, finc, food


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
