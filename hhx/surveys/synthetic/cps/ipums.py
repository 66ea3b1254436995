"""Seeded synthetic IPUMS CPS Basic Monthly extract (`cps_basic.csv.gz`) in the official format.

All 149 columns of spec 1.4 in order, real IPUMS codes, the 4-8-4 rotation (MISH 1-4, eight
months out, MISH 5-8), IPUMS-style 14-digit CPSID/CPSIDP that link a person across months,
household non-response, and October 2025 missing as in the real extract. Labor-force status
follows a monthly Markov chain with published-CPS-like flows (`cps_people.py`): exits from
unemployment depend on age, education, duration, the spell's reason and, for job losers, the
state's maximum UI weeks of the synthetic UI-policy file of the same seed; absences from work
lead to temporary layoffs; older workers retire at rising rates.

The Displaced Worker Supplement follows the real schedule (January of even years to 1992 and
from 2002 to 2024, February 1994-2000), with a five-year look-back to 1992 and three years
after. Demo rates are inflated (a third of employed adults, half of the unemployed report a
displacement) so that every supplement month of a small extract gives 100+ task rows; the
answers depend on the person: current status on the reason and timing of the loss, current
weekly earnings on the lost job's earnings, tenure, weeks without work and education.

`extra_months` adds single months outside start..end (with the households in sample then),
e.g. supplement months of the early 1990s without simulating the years between.

Not data about households: a sidecar `<file>.synthetic.json` marks the file as synthetic.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from hhx.errors import ConfigError
from hhx.io import atomic_path, gzip_writer
from hhx.surveys.cps.ipums import EXTRACT_COLUMNS, FLOAT_COLUMNS, STRING_COLUMNS
from hhx.surveys.synthetic import generator_label, write_sidecar
from hhx.surveys.synthetic.cps.labor import _macro_paths, _simulate
from hhx.surveys.synthetic.cps.people import (
    _FAMINC,
    _JOBS,
    _STATES,
    _WAGE_CLASS,
    EMP,
    NILF,
    SLOTS,
    UNE,
    _choice,
    _households,
    _month_index,
    _persons,
)

GENERATOR_VERSION = 2


def dws_month(year: int, month: int) -> bool:
    """Whether a month carries the Displaced Worker Supplement (the real schedule to 2024)."""
    if year % 2 or year < 1984 or year > 2024:
        return False
    return month == (2 if 1994 <= year <= 2000 else 1)


# --------------------------------------------------------------------------------------------
# The Displaced Worker Supplement

DWS_COLUMNS = (
    "DWLOSTJOB", "DWSTAT", "DWREAS", "DWRECALL", "DWNOTICE", "DWLASTWRK", "DWYEARS",
    "DWFULLTIME", "DWWEEKL", "DWWAGEL", "DWUNION", "DWBEN", "DWEXBEN", "DWHI", "DWCLASS",
    "DWIND", "DWIND1990", "DWOCC", "DWOCC1990", "DWMOVE", "DWHINOW", "DWJOBSINCE", "DWWEEKC",
    "DWWAGEC", "DWHRSWKC", "DWRESP", "DWWKSUN",
)  # fmt: skip
_DWS_NIU = {"DWYEARS": 99.99, "DWWEEKL": 9999.99, "DWWAGEL": 999.99, "DWWEEKC": 9999.99,
            "DWWAGEC": 999.99, "DWHRSWKC": 999, "DWWKSUN": 999, "DWIND": 0, "DWIND1990": 0,
            "DWOCC": 0, "DWOCC1990": 999, "DWRESP": 0}  # fmt: skip


def _dws_columns(
    rng: np.random.Generator,
    year: int,
    month: int,
    age: np.ndarray,
    states: tuple[np.ndarray, np.ndarray, np.ndarray],
    level: np.ndarray,
    wage: np.ndarray,
    usual: np.ndarray,
    job: np.ndarray,
) -> dict[str, np.ndarray]:
    """The DW* columns of one month: NIU outside supplement months; in them, displaced
    workers' answers depend on their current state (the reemployed lost their jobs longer
    ago, with more notice; the unemployed recently, more often for lack of work) and current
    earnings on the lost job's earnings, tenure, weeks without work and education."""
    n = len(age)
    out = {c: np.full(n, _DWS_NIU.get(c, 99)) for c in DWS_COLUMNS}
    if not dws_month(year, month):
        return out
    e, u, nl = states
    elig = age >= 20
    displaced = elig & (rng.random(n) < np.select([e, u], [0.35, 0.5], 0.12))
    d, k = displaced, int(displaced.sum())
    ed, ud = e[d], u[d]

    def pick(values, p_emp, p_une, p_nilf) -> np.ndarray:
        return np.select([ed, ud], [_choice(rng, values, p_emp, k), _choice(rng, values, p_une, k)],
                         _choice(rng, values, p_nilf, k))  # fmt: skip

    def put(name: str, values) -> None:
        out[name][d] = values

    put(
        "DWREAS",
        pick(
            [1, 2, 3, 4, 5, 6],
            [0.3, 0.3, 0.2, 0.06, 0.04, 0.1],
            [0.35, 0.4, 0.1, 0.08, 0.02, 0.05],
            [0.2, 0.2, 0.3, 0.05, 0.05, 0.2],
        ),
    )
    years = [0, 1, 2, 3, 4, 5] if year <= 1992 else [0, 1, 2, 3]  # the look-back regime
    late = np.linspace(1, 2, len(years))
    put("DWLASTWRK", pick(years, late / late.sum(), late[::-1] ** 3 / (late[::-1] ** 3).sum(),
                          np.full(len(years), 1 / len(years))))  # fmt: skip
    put("DWNOTICE", pick([1, 2, 3, 4, 5], [0.25, 0.2, 0.2, 0.3, 0.05], [0.55, 0.2, 0.1, 0.1, 0.05],
                         [0.4, 0.2, 0.15, 0.2, 0.05]))  # fmt: skip
    fulltime = pick([1, 2, 3], [0.1, 0.83, 0.07], [0.15, 0.75, 0.1], [0.3, 0.6, 0.1])
    put("DWFULLTIME", fulltime)
    put("DWRECALL", _choice(rng, [1, 2], [0.85, 0.15], k))
    put("DWUNION", _choice(rng, [1, 2], [0.88, 0.12], k))
    put("DWBEN", pick([1, 2], [0.6, 0.4], [0.4, 0.6], [0.5, 0.5]))
    put("DWEXBEN", _choice(rng, [1, 2], [0.9, 0.1], k))
    put("DWHI", _choice(rng, [1, 2], [0.4, 0.6], k))
    put("DWCLASS", _choice(rng, [1, 2, 3, 4, 5], [0.12, 0.7, 0.1, 0.07, 0.01], k))
    put("DWMOVE", _choice(rng, [1, 2, 3], [0.85, 0.1, 0.05], k))
    put("DWHINOW", pick([1, 2], [0.3, 0.7], [0.8, 0.2], [0.6, 0.4]))
    for name, col in (("DWIND", 3), ("DWIND1990", 4), ("DWOCC", 0), ("DWOCC1990", 1)):
        put(name, job[d, col])
    tenure = np.clip(rng.gamma(2.0, 1.0 + 0.12 * (age[d] - 20)), 0.1, 40)
    put("DWYEARS", np.round(tenure, 2))
    weekly_l = np.clip(wage[d] * np.where(fulltime == 1, 25, 40) * rng.lognormal(0, 0.12, k),
                       60, 5000)  # fmt: skip
    put("DWWEEKL", np.round(weekly_l, 2))
    put("DWWAGEL", np.round(np.minimum(weekly_l / 40, 99), 2))
    weeks_out = np.where(ed, rng.exponential(10, k), rng.exponential(30, k))
    weeks_out = np.minimum(np.round(weeks_out), 150).astype(int)
    put("DWWKSUN", weeks_out)
    put("DWJOBSINCE", np.where(ed, 1 + rng.poisson(0.4, k), rng.integers(0, 2, k)))
    shift = (-0.10 - 0.008 * tenure - 0.004 * weeks_out + 0.05 * (level[d] - 2)
             + rng.normal(0, 0.10, k))  # fmt: skip
    weekly_c = np.clip(weekly_l * np.exp(shift), 40, 6000)
    out["DWWEEKC"][d] = np.where(ed, np.round(weekly_c, 2), 9999.99)
    out["DWWAGEC"][d] = np.where(ed, np.round(np.minimum(weekly_c / 40, 99), 2), 999.99)
    out["DWHRSWKC"][d] = np.where(ed, usual[d], 999)
    out["DWLOSTJOB"] = np.where(elig, np.where(displaced, 2, 1), 99)
    out["DWSTAT"] = np.where(displaced, 1, 0)
    out["DWRESP"] = np.where(elig, np.where(rng.random(n) < 0.9, 2, 1), 0)
    return out


# --------------------------------------------------------------------------------------------
# One calendar month of records


@dataclass(frozen=True)
class _Work:
    """One month's labor-force state of the persons in a month table (row order)."""

    st: np.ndarray
    emp: np.ndarray
    dur: np.ndarray
    why: np.ndarray
    wnf: np.ndarray
    cls: np.ndarray
    pt: np.ndarray
    usual: np.ndarray
    actual: np.ndarray
    job: np.ndarray
    org: np.ndarray
    wage: np.ndarray
    earnweek: np.ndarray
    dws_cols: dict[str, np.ndarray]


def _month_table(
    mi: int,
    rows: np.ndarray,
    slot: np.ndarray,
    mish: np.ndarray,
    hh: dict,
    pp: dict,
    lf: dict,
    rng: np.random.Generator,
) -> pa.Table:
    year, month = mi // 12, mi % 12 + 1
    h = pp["hh"][rows]
    # SERIAL: households ranked by a fixed random key; persons by PERNUM
    order = np.lexsort((pp["pernum"][rows], hh["key"][h]))
    rows, slot, mish, h = rows[order], slot[order], mish[order], h[order]
    n = len(rows)
    new_hh = np.r_[True, h[1:] != h[:-1]][:n]  # a month can hold no household (a small demo)
    serial = np.cumsum(new_hh)
    g = lambda key: pp[key][rows]  # noqa: E731
    age = np.minimum((g("age0") + slot / 12.0).astype(int), 85)
    work = _work(year, month, rows, slot, mish, age, lf, g, rng)
    col: dict[str, object] = {
        **_household_columns(year, month, serial, mish, h, hh, g),
        **_person_columns(age, g),
        **_work_columns(mish, age, work, g, rng),
        **_earnings_columns(year, work, g),
    }
    missing = set(EXTRACT_COLUMNS) - set(col)
    if missing:  # a programming error, not bad input
        raise AssertionError(f"synthetic CPS lacks columns {sorted(missing)}")
    arrays = []
    for name in EXTRACT_COLUMNS:
        value = col[name]
        if value is None:
            arrays.append(pa.nulls(n, pa.int64()))
        elif name in STRING_COLUMNS:
            arrays.append(pa.array(np.asarray(value).astype(str)))
        elif name in FLOAT_COLUMNS:
            arrays.append(pa.array(np.asarray(value, dtype=np.float64)))
        else:
            arrays.append(pa.array(np.asarray(value).astype(np.int64)))
    return pa.Table.from_arrays(arrays, names=list(EXTRACT_COLUMNS))




def _work(year: int, month: int, rows: np.ndarray, slot: np.ndarray, mish: np.ndarray,
          age: np.ndarray, lf: dict, g: Callable[[str], np.ndarray], rng: np.random.Generator
          ) -> _Work:
    n = len(rows)
    st = lf["state"][rows, slot]
    emp = lf["empstat"][rows, slot].astype(np.int64)
    dur = lf["dur"][rows, slot].astype(np.int64)
    why = lf["why"][rows, slot].astype(np.int64)
    wnf = lf["wnf"][rows, slot].astype(np.int64)
    e, u, nl = st == EMP, st == UNE, st == NILF
    cls = g("cls")
    pt = g("pt")
    absent = emp == 12
    usual = np.where(pt, g("pt_hours"), g("hours"))
    actual = np.where(absent, 0, np.clip(usual + rng.integers(-4, 5, n), 1, 99))
    job = _JOBS[g("job")]
    org = np.isin(mish, [4, 8]) & e & np.isin(cls, list(_WAGE_CLASS))
    wage = np.round(np.exp(g("logwage")), 2)
    earnweek = np.round(np.minimum(wage * usual, 2884.61), 2)
    dws_cols = _dws_columns(rng, year, month, age, (e, u, nl), g("level"), wage, usual, job)
    return _Work(st, emp, dur, why, wnf, cls, pt, usual, actual, job, org, wage, earnweek,
                 dws_cols)


def _household_columns(year: int, month: int, serial: np.ndarray, mish: np.ndarray,
                       h: np.ndarray, hh: dict, g: Callable[[str], np.ndarray]
                       ) -> dict[str, object]:
    """Household, record and weight columns."""
    n = len(h)
    entry_ym = (hh["entry"][h] // 12) * 100 + hh["entry"][h] % 12 + 1
    hh_seq = hh["seq"][h]
    cpsid = entry_ym * 10**8 + hh_seq * 100
    cpsidp = cpsid + g("pernum")
    weight = hh["weight"][h]
    faminc_i = np.clip(
        np.round(3 + 2.2 * g("level") + hh["faminc_shift"][h]), 0, len(_FAMINC) - 1
    ).astype(int)
    return {
        "YEAR": np.full(n, year),
        "SERIAL": serial,
        "MONTH": np.full(n, month),
        "HWTFINL": weight,
        "CPSID": cpsid,
        "ASECFLAG": np.full(n, 2) if month == 3 else None,
        "MISH": mish,
        "NUMPREC": g("nprec"),
        "HHTENURE": hh["tenure"][h],
        "GQTYPE": np.ones(n, int),
        "HHINTYPE": np.ones(n, int),
        "REGION": hh["region"][h],
        "STATEFIP": hh["statefip"][h],
        "COUNTY": np.zeros(n, int),
        "METFIPS": np.full(n, 99998),
        "METRO": hh["metro"][h],
        "CBSASZ": np.zeros(n, int),
        "FAMINC": _FAMINC[faminc_i],
        "MARBASECIDH": np.zeros(n, int),
        "HRHHID": hh["hrhhid"][h],
        "HRHHID2": hh["hrhhid2"][h],
        "HUHHNUM": np.ones(n, int),
        "HRSAMPLE": np.array([f"{year % 100:02d}{(m % 12) + 1:02d}" for m in hh["entry"][h]]),
        "HHRESPLN": np.ones(n, int),
        "INTTYPE": np.where(np.isin(mish, [1, 5]), 1, 2),
        "PERNUM": g("pernum"),
        "WTFINL": np.round(weight * g("weight_f"), 4),
        "CPSIDP": cpsidp,
        "CPSIDV": cpsidp * 10 + 1,
    }


def _person_columns(age: np.ndarray, g: Callable[[str], np.ndarray]) -> dict[str, object]:
    """Demographic, family, education and disability columns."""
    n = len(age)
    adult = age >= 15
    diff = g("disabled") & adult
    return {
        "RELATE": g("relate"),
        "AGE": age,
        "SEX": g("sex"),
        "RACE": g("race"),
        "MARST": g("marst"),
        "POPSTAT": np.where(adult, 1, 3),
        "ASIAN": np.where(g("race") == 651, 20, 99),
        "VETSTAT": np.where(age < 17, 0, g("vetstat")),
        "SPLOC": g("sploc"),
        "SPRULE": (g("sploc") > 0).astype(int),
        "FAMSIZE": g("famsize"),
        "NCHILD": g("nchild"),
        "NCHLT5": g("nchlt5"),
        "FAMUNIT": g("famunit"),
        "FTYPE": np.where(g("famunit") == 1, 1, 3),
        "FAMREL": g("famrel"),
        "BPL": g("bpl"),
        "YRIMMIG": g("yrimmig"),
        "CITIZEN": g("citizen"),
        "NATIVITY": g("nativity"),
        "HISPAN": g("hispan"),
        "EDUC": g("educ"),
        "EDUC99": np.zeros(n, int),
        "EDCYC": np.full(n, 99),
        "EDDIPGED": np.full(n, 99),
        "EDHGCGED": np.full(n, 99),
        "SCHLCOLL": np.where((age >= 16) & (age <= 24), np.where(age < 18, 1, 5), 0),
        **{
            c: np.where(adult, np.where(diff, 2, 1), 0)
            for c in (
                "DIFFHEAR",
                "DIFFEYE",
                "DIFFREM",
                "DIFFPHYS",
                "DIFFMOB",
                "DIFFCARE",
                "DIFFANY",
            )
        },
        "MARBASECIDP": np.zeros(n, int),
    }


def _work_columns(mish: np.ndarray, age: np.ndarray, work: _Work,
                  g: Callable[[str], np.ndarray], rng: np.random.Generator
                  ) -> dict[str, object]:
    """Labor-force, job and hours columns."""
    n = len(age)
    st, emp, dur, why, wnf = work.st, work.emp, work.dur, work.why, work.wnf
    cls, pt, usual, actual, job = work.cls, work.pt, work.usual, work.actual, work.job
    e, u, nl = st == EMP, st == UNE, st == NILF
    worked = e | (u & (emp == 21))
    absent = emp == 12
    return {
        "EMPSTAT": emp,
        "LABFORCE": np.select([e | u, nl], [2, 1], 0),
        "OCC": np.where(worked, job[:, 0], 0),
        "OCC2010": np.where(worked, job[:, 0], 9999),
        "OCC1990": np.where(worked, job[:, 1], 999),
        "IND1990": np.where(worked, job[:, 4], 0),
        "OCC1950": np.where(worked, job[:, 2], 999),
        "IND": np.where(worked, job[:, 3], 0),
        "IND1950": np.where(worked, job[:, 5], 0),
        "CLASSWKR": np.where(worked, cls, 0),
        "UHRSWORKT": np.where(e, usual, 999),
        "UHRSWORK1": np.where(e, usual, 999),
        "UHRSWORK2": np.where(e & g("multjob"), 8, 999),
        "AHRSWORKT": np.where(e, actual, 999),
        "AHRSWORK1": np.where(e, actual, 999),
        "AHRSWORK2": np.where(e & g("multjob"), 8, 999),
        "ABSENT": np.select([absent, u & (why == 1)], [3, 2], 0),
        "DURUNEM2": np.where(u, np.digitize(dur, [5, 15, 27, 40, 53, 100]) + 1, 99),
        "DURUNEMP": np.where(u, dur, 999),
        "WHYUNEMP": np.where(u, why, 0),
        "WHYABSNT": np.where(absent, 6, 0),
        "WHYPTLWK": np.where(e & pt, 52, 0),
        "WNFTLOOK": np.where(u, wnf, 0),
        "WNLOOK": np.full(n, 999),
        "WKSTAT": np.select(
            [e & ~pt & ~absent, e & ~pt, e & pt & ~absent, e & pt, u & ~pt, u],
            [11, 13, 41, 42, 50, 60],
            99,
        ),
        "EMPSAME": np.where(e & ~np.isin(mish, [1, 5]), 2, 99),
        "MULTJOB": np.where(e, np.where(g("multjob"), 2, 1), 0),
        "NUMJOB": np.where(e, np.where(g("multjob"), 2, 1), 0),
        **{c: np.full(n, 99) for c in ("PAIDEMP1", "PAIDEMP1N", "PAIDEMP2", "PAIDEMP2N")},
        "PROFCERT": np.where(age >= 16, np.where(g("profcert"), 2, 1), 99),
        "STATECERT": np.full(n, 99),
        "JOBCERT": np.full(n, 99),
        "WRKOFFER": np.full(n, 99),
        "NILFACT": np.where(
            nl,
            np.select(
                [emp == 32, emp == 36, age < 25],
                [1, 99, 3],
                _choice(rng, [2, 4, 6], [0.2, 0.5, 0.3], n),
            ),
            99,
        ),
        "ACTSAME": np.full(n, 99),
    }


def _earnings_columns(year: int, work: _Work, g: Callable[[str], np.ndarray]
                      ) -> dict[str, object]:
    """Unemployment-compensation, outgoing-rotation earnings and DWS columns."""
    n = len(work.org)
    usual, org, wage, earnweek = work.usual, work.org, work.wage, work.earnweek
    dws_cols = work.dws_cols
    return {
        **{
            c: np.full(n, 99)
            for c in (
                "UCAPLAST",
                "UCNOMAIN",
                "UCNORECLAST",
                "UCNORECWK",
                "UCRECLAST",
                "UCRECWK",
                "UCUNION",
                "UCWHYNOELG",
                "UCSUPFLG",
            )
        },
        "EARNWEEK2": np.where(org & (year >= 2023), earnweek, 999999.99),
        "HOURWAGE2": np.where(org & (year >= 2023) & g("paidhour"), wage, 999.99),
        "SUBMINWAGE": np.zeros(n, int),
        **dws_cols,
        "HOURWAGE": np.where(org & g("paidhour"), wage, 999.99),
        "PAIDHOUR": np.where(org, np.where(g("paidhour"), 2, 1), 0),
        "UNION": np.where(org, g("union"), 0),
        "EARNWEEK": np.where(org, earnweek, 9999.99),
        "UHRSWORKORG": np.where(org, usual, 999),
        "WKSWORKORG": np.where(org, 52, 99),
        "ELIGORG": org.astype(int),
        "OTPAY": np.full(n, 99),
    }


# --------------------------------------------------------------------------------------------
# Entry point


def _ui_extra(seed: int, lo: int, hi: int) -> np.ndarray:
    """Maximum UI weeks above 26 by state (rows in `_STATES` order) and month lo..hi, from the
    synthetic UI-policy file of `seed`; 0 outside its months."""
    from hhx.surveys.synthetic.cps.ui_policy import synthetic_ui_policy_frame

    frame = synthetic_ui_policy_frame(seed=seed)
    row = {int(f): i for i, f in enumerate(_STATES[:, 0])}
    out = np.zeros((len(_STATES), hi - lo + 1))
    mi = frame["year"].to_numpy(dtype=np.int64) * 12 + frame["month"].to_numpy(dtype=np.int64) - 1
    inside = (mi >= lo) & (mi <= hi)
    rows = np.array([row[int(f)] for f in frame["fips"].to_numpy()[inside]], dtype=np.int64)
    out[rows, mi[inside] - lo] = frame["ui_weeks"].to_numpy(dtype=float)[inside] - 26
    return out


def _months(start: str, end: str, extra_months: Sequence[str], skip_months: Sequence[str]
            ) -> list[int]:
    """The month indexes written: start..end plus `extra_months`, minus `skip_months`."""
    lo, hi = _month_index(start), _month_index(end)
    if hi < lo:
        raise ConfigError(f"synthetic CPS: end {end} is before start {start}")
    skip = {_month_index(m) for m in skip_months}
    months = sorted((set(range(lo, hi + 1)) | {_month_index(m) for m in extra_months}) - skip)
    if not months:
        raise ConfigError("synthetic CPS: every month is skipped")
    return months


def _in_sample(at: int, cohort_start: np.ndarray, cohort_end: np.ndarray, hh: dict, pp: dict
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The responding persons of a month (`at`: its index from the first cohort), their month
    offsets since entry and month-in-sample numbers."""
    parts, slots, mishes = [], [], []
    for k, offset in enumerate(SLOTS):
        c = at - offset
        idx = np.arange(cohort_start[c], cohort_end[c])
        idx = idx[hh["responds"][pp["hh"][idx], k]]
        parts.append(idx)
        slots.append(np.full(len(idx), offset))
        mishes.append(np.full(len(idx), k + 1))
    return np.concatenate(parts), np.concatenate(slots), np.concatenate(mishes)


def write_synthetic_cps(
    path: Path,
    *,
    seed: int,
    n_households: int,
    start: str,
    end: str,
    extra_months: Sequence[str] = (),
    skip_months: Sequence[str] = ("2025-10",),
    compresslevel: int = 6,
    ui_policy_seed: int | None = None,
) -> Path:
    """Write a synthetic `cps_basic.csv.gz` (plus its `.synthetic.json` sidecar); returns `path`.

    Months: start..end plus `extra_months`, minus `skip_months` (October 2025 is missing in the
    real extract). `n_households` addresses enter the sample, spread evenly over the monthly
    entry cohorts that are in sample in one of those months. Job finding of job losers follows
    the synthetic UI-policy file of `ui_policy_seed` (default `seed`, as the demo writes it).
    Deterministic for a seed.
    """
    path = Path(path)
    months = _months(start, end, extra_months, skip_months)
    if n_households < 1:
        raise ConfigError(f"synthetic CPS: n_households must be >= 1, got {n_households}")
    rng = np.random.default_rng(seed)
    needed = sorted({m - offset for m in months for offset in SLOTS})
    cohorts = np.arange(needed[0], needed[-1] + 1)
    per = np.zeros(len(cohorts), dtype=np.int64)
    at = np.asarray(needed) - cohorts[0]
    per[at] = n_households // len(needed)
    per[at[: n_households % len(needed)]] += 1
    entry = np.repeat(cohorts, per)
    hh = _households(rng, entry)
    hh["seq"] = np.arange(len(entry)) - np.repeat(np.r_[0, np.cumsum(per)[:-1]], per) + 1
    pp = _persons(rng, hh)
    person_entry = entry[pp["hh"]]
    first, last = int(cohorts[0]), months[-1] + SLOTS[-1]
    sep_path, find_path = _macro_paths(first, last)
    state_row = {int(f): i for i, f in enumerate(_STATES[:, 0])}
    state_of = np.array([state_row[int(f)] for f in hh["statefip"]], dtype=np.int64)[pp["hh"]]
    ui = _ui_extra(seed if ui_policy_seed is None else ui_policy_seed, first, last)
    lf = _simulate(rng, pp, person_entry, first, sep_path, find_path, ui, state_of)
    # persons are grouped by household, households by entry cohort: one contiguous range each
    cohort_start = np.searchsorted(person_entry, cohorts)
    cohort_end = np.searchsorted(person_entry, cohorts, side="right")

    with atomic_path(path) as tmp:
        with gzip_writer(tmp, compresslevel) as gz:
            writer = None
            for mi in months:
                rows, slot, mish = _in_sample(mi - cohorts[0], cohort_start, cohort_end, hh, pp)
                table = _month_table(mi, rows, slot, mish, hh, pp, lf, rng)
                if writer is None:
                    writer = pacsv.CSVWriter(gz, table.schema)
                writer.write_table(table)
            if writer is not None:
                writer.close()
    write_sidecar(
        path,
        generator_label("cps"),
        "seeded synthetic data in the IPUMS CPS extract format; not data about households",
        generator_version=GENERATOR_VERSION,
        seed=seed,
        n_households=n_households,
        start=start,
        end=end,
        extra_months=list(extra_months),
        skip_months=list(skip_months),
        ui_policy_seed=seed if ui_policy_seed is None else ui_policy_seed,
    )
    return path


def _main() -> None:  # pragma: no cover - convenience for manual inspection
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--households", type=int, default=6000)
    ap.add_argument("--start", default="2015-01")
    ap.add_argument("--end", default="2026-03")
    a = ap.parse_args()
    write_synthetic_cps(a.path, seed=a.seed, n_households=a.households, start=a.start, end=a.end)
    print(json.dumps({"written": str(a.path)}))


if __name__ == "__main__":  # pragma: no cover
    _main()
