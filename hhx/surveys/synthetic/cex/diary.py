"""Seeded synthetic CE Diary releases in the official layouts: BLS `diaryYY.zip` packages
(1990 on) and the ICPSR fixed-width archives of 1982-1989 (`ICPSR_09114-V1.zip` ...).

Demo data only: consumer units, members and purchases are drawn from simple distributions tuned to
look like the real 2020 files (purchases per day, the most common UCCs and their typical prices);
nothing computed from them is a finding about households. Purchases per day rise with income
and household size and at weekends; households where the reference person or spouse gets Social
Security spend more on the scheduled payment day (the 3rd, or the business day before) and the
three days after, and a little less in the five days before. 90% of consumer units keep their two
diary weeks back to back. In 1986 the first consumer unit is the reference renderer's example
(NEWID 0000281x, a 70-year-old Social Security recipient whose diary starts 20 January 1986).

ICPSR archives: `ICPSR_<id>/DS<nnnn>/<id>-<nnnn>-Data.txt` members (FMLY, MEMB, EXPD, and DTBD
from 1986, per quarter), each field right-justified in the columns of
hhx/surveys/cex/cex_diary_icpsr_layout.csv (blanks elsewhere, records padded to the study's record
length; 1986's Q4 EXPD member as 80-byte lines), plus the manifest (file, record length, record
count), the description-citation page naming the study and a documentation file listing the
written fields. Other layout details are not taken from the real archives.

Layout. Members `diaryYY/{fmld,memd,expd,dtbd,dtid}YYQ.csv` (Q = 1-4), comma-separated, CRLF line
ends, no quoting, every column of the real 2020 files in their order (the headers in diary_tables
are copied from the real `fmld202.csv`, `memd202.csv`, `expd202.csv`, `dtbd202.csv`,
`dtid202.csv`), value formats as there (NEWID 8 digits, STRTMNTH `04`, COST `4.89000`, flag
columns `D` / `A` / `B`). Columns the demo does not model are left blank. For years before 2012 the variables that the
reader uses and that the CE data dictionary dates differently are switched to their year
(EXPD QREDATE instead of EXPNSQDY/EXPNWKDY/EXPNMO/EXPNYR, FMLD STRTDAY, INCLASS, RESPSTAT,
PICK_UP/PICKCODE, FINCBEFM/FSS_RRXM from 2004, MEMD ANYSSINC/ANYRAIL to 2012); their position in
those years' headers is not taken from real files. Codes are those of the data dictionary for
the year; food-away UCCs follow the dictionary's code changes (1998, 2022).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from hhx.errors import ConfigError
from hhx.io import atomic_path
from hhx.surveys.synthetic import generator_label, write_sidecar
from hhx.surveys.synthetic.cex.diary_tables import (
    DTBD_2020_COLUMNS,
    DTID_2020_COLUMNS,
    EMPTY_WEEK_SHARE,
    EXPD_2020_COLUMNS,
    FMLD_2020_COLUMNS,
    MEMD_2020_COLUMNS,
    PURCHASES_PER_DAY,
    UCCS,
    UNDATED_SHARE_IN_WEEK,
    UNDATED_WEEK_SHARE,
)

FIRST_BLS_YEAR = 1990  # BLS publishes Diary CSV packages from 1990 (earlier years: ICPSR)

def ucc_table(year: int) -> list[tuple[str, str, int, float]]:
    """The UCCs the generator uses in `year`: (ucc, category, weight, median 2020 price)."""
    return [(u, c, w, m) for u, c, w, m, first, last in UCCS if first <= year <= last]


def fmld_columns(year: int) -> list[str]:
    """FMLD header for `year`: the real 2020 one with the year's date and status variables."""
    cols = list(FMLD_2020_COLUMNS)
    if year < 2004:
        cols[cols.index("PICKCODE")] = "PICK_UP"
        for name in ("FINCBEFM", "FINC_EFM", "FSS_RRXM", "FSS__RXM"):
            cols.remove(name)
    if year <= 2011:
        cols.insert(cols.index("STRTMNTH"), "STRTDAY")
    if year <= 2013:
        at = cols.index("REGION") + 1
        cols[at:at] = ["RESPSTAT", "RESP_TAT"]
    if year <= 2018:
        cols.insert(cols.index("HRSP_WK2") + 1, "INCLASS")
    return cols


def memd_columns(year: int) -> list[str]:
    cols = list(MEMD_2020_COLUMNS)
    if year <= 2012:
        at = cols.index("ANRRX_") + 1
        cols[at:at] = ["ANYRAIL", "ANYRAIL_", "ANYSSINC", "ANYS_INC"]
    return cols


def expd_columns(year: int) -> list[str]:
    if year <= 2011:
        return ["NEWID", "ALLOC", "COST", "GIFT", "PUB_FLAG", "UCC", "QREDATE", "QREDATE_"]
    return list(EXPD_2020_COLUMNS)


def _flag_name(var: str) -> str:
    """CE flag column: AGE_REF -> AGE_REF_, CUTENURE -> CUTE_URE, EDUC_REF -> EDUC0REF."""
    if len(var) < 8:
        return var + "_"
    name = var[:4] + "_" + var[5:]
    return name if name != var else var[:4] + "0" + var[5:]


def _row(columns: list[str], values: dict[str, str]) -> list[str]:
    """One CSV record: given values, a `D`/`A` flag for each flagged variable, blanks elsewhere."""
    full = dict(values)
    for var, value in values.items():
        flag = _flag_name(var)
        if flag in columns and flag not in values:
            full[flag] = "D" if value != "" else "A"
    return [full.get(c, "") for c in columns]


def _csv(columns: list[str], rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(columns)
    writer.writerows(rows)
    return buf.getvalue().encode("ascii")


def _ce_weekday(day: dt.date) -> int:
    return day.isoweekday() % 7 + 1  # 1 = Sunday ... 7 = Saturday


def _price_level(year: int) -> float:
    """Rough nominal price level relative to 2020 (about 2.5% a year)."""
    return float(1.025 ** (year - 2020))


def _income_class(income: float) -> int:
    bounds = [5000, 10000, 15000, 20000, 30000, 40000, 50000, 70000]
    return 1 + sum(income >= b for b in bounds)


def _quarter_starts(year: int, quarter: int) -> list[dt.date]:
    """Possible first-week start days in a quarter (both weeks end inside the year)."""
    first = dt.date(year, 3 * quarter - 2, 1)
    last = dt.date(year, 12, 31) - dt.timedelta(days=13)
    end = dt.date(year + 1, 1, 1) if quarter == 4 else dt.date(year, 3 * quarter + 1, 1)
    end = min(end - dt.timedelta(days=1), last)
    return [first + dt.timedelta(days=k) for k in range((end - first).days + 1)]


# ---------------------------------------------------------------------------------------------
# Simulation: consumer units, their two diary weeks and purchases (one model for both layouts)


def _payment_dates(year: int) -> set[dt.date]:
    """Scheduled OASDI payment days: the 3rd, moved to the preceding business day for weekends
    and the delivery holidays (observed New Year's Day and Independence Day, Labor Day)."""
    def observed(d: dt.date) -> dt.date:
        return d - dt.timedelta(days=1) if d.weekday() == 5 else (
            d + dt.timedelta(days=1) if d.weekday() == 6 else d)
    out = set()
    for y in (year - 1, year, year + 1):
        labor = dt.date(y, 9, 1) + dt.timedelta(days=(0 - dt.date(y, 9, 1).weekday()) % 7)
        holidays = {observed(dt.date(y, 1, 1)), observed(dt.date(y, 7, 4)), labor,
                    observed(dt.date(y + 1, 1, 1))}
        for month in range(1, 13):
            day = dt.date(y, month, 3)
            while day.weekday() >= 5 or day in holidays:
                day -= dt.timedelta(days=1)
            out.add(day)
    return out


def _payment_lift(day: dt.date, payments: set[dt.date]) -> float:
    """Spending of a Social Security household relative to its mean, by days since payment:
    a jump on the payment day that fades over three days, a dip before the next one."""
    for since in range(0, 4):
        if day - dt.timedelta(days=since) in payments:
            return (1.7, 1.4, 1.2, 1.1)[since]
    ahead = next((k for k in range(1, 6) if day + dt.timedelta(days=k) in payments), None)
    return 0.85 if ahead is not None else 1.0


def _simulate(year: int, rng: np.random.Generator, n_cu: int) -> list[dict]:
    """Consumer units of one year: characteristics, members, two diary weeks of purchases."""
    uccs = ucc_table(max(year, FIRST_BLS_YEAR))
    weights = np.array([w for _, _, w, _ in uccs], dtype=float)
    weights /= weights.sum()
    level = _price_level(year)
    payments = _payment_dates(year)
    numbers = rng.choice(np.arange(1_000, 10_000_000), size=4 * n_cu, replace=False)
    if year == 1986:  # the reference renderer's example CU (its id 1986:0000281)
        numbers[0] = 281
    cus = []
    for q in range(1, 5):
        for i, cu in enumerate(numbers[(q - 1) * n_cu : q * n_cu]):
            example = year == 1986 and q == 1 and i == 0
            cus.append(_new_cu(year, q, int(cu), rng, uccs, weights, level, payments, example))
    return cus


def _new_cu(year: int, q: int, cu: int, rng: np.random.Generator, uccs: list, weights: np.ndarray,
            level: float, payments: set[dt.date], example: bool) -> dict:
    age = 70 if example else int(rng.integers(18, 91))
    married = not example and rng.random() < (0.55 if age >= 25 else 0.2)
    kids = int(rng.choice([0, 0, 0, 1, 2, 3])) if 22 <= age <= 60 else 0
    others = int(rng.random() < 0.08)
    ages = [age] + ([max(18, age + int(rng.integers(-6, 7)))] if married else [])
    ages += [int(rng.integers(0, 18)) for _ in range(kids)]
    ages += [int(rng.integers(18, 80)) for _ in range(others)]
    codes = [1] + ([2] if married else []) + [3] * kids + [9] * others
    gets_ss = [a >= 18 and (example or rng.random() < (0.9 if a >= 62 else 0.05)) for a in ages]
    ss = [round(float(rng.uniform(7000, 20000)) * level) if g else 0 for g in gets_ss]
    rail = [g and rng.random() < 0.03 for g in gets_ss]
    working = age < 65 and rng.random() < 0.8 and not example
    earnings = float(np.exp(rng.normal(10.4, 0.7))) * level if working else 0.0
    income = int(round(earnings + sum(ss) + float(rng.exponential(3000)) * level))
    if year >= 1996:
        educ = int(rng.choice([0, 10, 11, 12, 13, 14, 15, 16] + ([17] if year <= 2012 else [])))
    else:
        educ = int(rng.choice([1, 2, 3, 4, 5, 6, 7]))
    starts = [dt.date(1986, 1, 20)] if example else _quarter_starts(year, q)
    first_start = starts[int(rng.integers(len(starts)))]
    consecutive = example or rng.random() < 0.9
    second = first_start + dt.timedelta(days=7 if consecutive else int(rng.integers(14, 60)))
    if second > dt.date(year, 12, 31) - dt.timedelta(days=6):
        second = first_start + dt.timedelta(days=7)
    n_weeks = 2 if (example or rng.random() < 0.98) else 1
    # Spending: scales with income and household size; Social Security households spend more
    # right after their payment day (module notes), everyone a little more at weekends.
    intensity = (0.5 if example else float(rng.gamma(3.0, 0.33))) * (
        max(income, 8000) / 30000 / level) ** 0.3 * (1 + 0.15 * (len(ages) - 1))
    recipient = any(gets_ss[:2])
    weeks = []
    for week, start in enumerate([first_start, second][:n_weeks], start=1):
        empty = not example and rng.random() < EMPTY_WEEK_SHARE
        undated = UNDATED_SHARE_IN_WEEK if (not example and rng.random() < UNDATED_WEEK_SHARE) \
            else 0.0
        buys = []
        for seq in range(1, 8):
            day = start + dt.timedelta(days=seq - 1)
            rate = PURCHASES_PER_DAY * intensity * (1.15 if day.weekday() >= 5 else 1.0)
            if recipient:
                rate *= _payment_lift(day, payments)
            n_buy = 0 if empty else int(rng.poisson(rate))
            for k in rng.choice(len(uccs), size=n_buy, p=weights):
                ucc, category, _, median = uccs[int(k)]
                cost = max(round(median * level * float(rng.lognormal(0.0, 0.7)), 2), 0.01)
                buys.append({"seq": seq, "day": day, "ucc": ucc, "category": category,
                             "cost": cost, "dated": rng.random() >= undated,
                             "alloc": "0" if rng.random() < 0.63 else "1",
                             "gift": "2" if rng.random() < 0.99 else "1",
                             "pub": "2" if rng.random() < 0.88 else "1"})
        weeks.append({"week": week, "start": start, "buys": buys})
    empl = int(rng.integers(1, 7 if year >= 1996 else 5)) if working else None
    return {
        "cu7": f"{cu:07d}", "q": q, "age": age, "married": married, "kids": kids,
        "size": len(ages), "sex": 2 if example else int(rng.integers(1, 3)), "ages": ages,
        "codes": codes, "gets_ss": gets_ss, "ss": ss, "rail": rail, "working": working,
        "income": income, "educ": educ, "empl": empl, "weeks": weeks,
        "marital": 2 if example else (1 if married else int(rng.choice([2, 3, 4, 5]))),
        "race": int(rng.choice([1, 2, 3, 4, 5, 6] if year >= 2003 else [1, 2, 3, 4, 5],
                               p=[0.81, 0.09, 0.006, 0.07, 0.004, 0.02] if year >= 2003
                               else [0.83, 0.1, 0.01, 0.04, 0.02])),
        "region": "" if (not example and rng.random() < 0.02) else str(int(rng.integers(1, 5))),
        "urban": "1" if (example or rng.random() < 0.95) else "2",
        "smsa": "1" if rng.random() < 0.93 else "2",
        "tenure": 2 if example else int(rng.choice([1, 2, 3, 4, 5, 6],
                                                  p=[0.43, 0.26, 0.01, 0.28, 0.01, 0.01])),
        "complete": example or rng.random() < 0.93,
        "weight": float(rng.uniform(5000, 80000)),
        "pickcode": "201" if rng.random() < 0.99 else "217",
        "imputed": float(rng.uniform(0.95, 1.08)),
        "dtid": [round(float(rng.uniform(0.9, 1.1)), 4) for _ in range(5)],
        "sex2": [int(rng.integers(1, 3)) for _ in ages],
    }


def _household_values(cu: dict, year: int, fcols: list[str]) -> dict[str, str]:
    income, ss = cu["income"], cu["ss"]
    values = {
        "AGE_REF": str(cu["age"]), "SEX_REF": str(cu["sex"]), "MARITAL1": str(cu["marital"]),
        "REF_RACE": str(cu["race"]),
        "EDUC_REF": f"{cu['educ']:02d}" if year >= 1996 else str(cu["educ"]),
        "REGION": cu["region"], "BLS_URBN": cu["urban"], "SMSASTAT": cu["smsa"],
        "CUTENURE": str(cu["tenure"]), "EMPLTYP1": "" if cu["empl"] is None else str(cu["empl"]),
        "FAM_SIZE": str(cu["size"]), "PERSLT18": str(cu["kids"]), "FINCBEFX": str(income),
        "FSUPPX": "0", "FINLWT21": f"{cu['weight']:.3f}", "CUID": str(int(cu["cu7"])),
    }
    if "FSS_RRX" in fcols or year < FIRST_BLS_YEAR:
        values["FSS_RRX"] = str(sum(ss))
    if year >= 2004:
        values["FINCBEFM"] = f"{income * cu['imputed']:.1f}"
        values["FSS_RRXM"] = f"{float(sum(ss)):.1f}"
        values["FSUPPXM"] = "0.0"
        values["PICKCODE"] = cu["pickcode"]
    else:
        values["PICK_UP"] = "01"
    if year <= 2013:
        values["RESPSTAT"] = "1" if cu["complete"] else "2"
    if year <= 2018:
        incomplete = not cu["complete"] and year <= 2003
        values["INCLASS"] = "10" if incomplete else f"{_income_class(income):02d}"
    return values


def _qredate(buy: dict, year: int) -> str:
    day = buy["day"]
    year_text = f"{day.year}" if year >= 1996 else f"{day.year % 100:02d}"
    return f"{buy['seq']}{_ce_weekday(day)}{day.month:02d}{day.day:02d}{year_text}"


def _member_values(cu: dict, m: int, year: int) -> dict[str, str]:
    a = cu["ages"][m - 1]
    member = {"MEMBNO": str(m), "CU_CODE1": str(cu["codes"][m - 1]), "AGE": str(a),
              "SEX": str(cu["sex"] if m == 1 else cu["sex2"][m - 1]),
              "SS_RRX": str(cu["ss"][m - 1]) if a >= 18 else "", "SUPPX": "0" if a >= 18 else ""}
    if year <= 2012 and a >= 18:
        member["ANYSSINC"] = "1" if cu["gets_ss"][m - 1] else "2"
        member["ANYRAIL"] = "1" if cu["rail"][m - 1] else "2"
        member["US_SUPP"] = "2"
    if a >= 65 and not (m == 1 and cu["working"]):
        member["WHYNOWRK"] = "1" if year >= 1997 else "5"  # retired
    return member


def _bls_files(year: int, cus: list[dict]) -> dict[str, bytes]:
    yy = year % 100
    fcols, mcols, ecols = fmld_columns(year), memd_columns(year), expd_columns(year)
    files: dict[str, bytes] = {}
    for q in range(1, 5):
        fmld, memd, expd, dtbd, dtid = [], [], [], [], []
        for cu in (c for c in cus if c["q"] == q):
            household = _household_values(cu, year, fcols)
            for wk in cu["weeks"]:
                newid = cu["cu7"] + str(wk["week"])
                sums = {"home": 0.0, "away": 0.0, "alcohol": 0.0}
                for buy in wk["buys"]:
                    if buy["category"] in sums:
                        sums[buy["category"]] += buy["cost"]
                    record = {"NEWID": newid, "ALLOC": buy["alloc"], "COST": f"{buy['cost']:.5f}",
                              "GIFT": buy["gift"], "PUB_FLAG": buy["pub"], "UCC": buy["ucc"]}
                    if year <= 2011:
                        record["QREDATE"] = _qredate(buy, year) if buy["dated"] else ""
                        record["QREDATE_"] = "D" if buy["dated"] else "B"
                    else:
                        day = buy["day"]
                        for var, value in (("EXPNSQDY", str(buy["seq"])),
                                           ("EXPNWKDY", str(_ce_weekday(day))),
                                           ("EXPNMO", f"{day.month:02d}"),
                                           ("EXPNYR", str(day.year))):
                            record[var] = value if buy["dated"] else ""
                            record[_flag_name(var)] = "D" if buy["dated"] else "B"
                    expd.append(_row(ecols, record))
                start = wk["start"]
                week_values = {**household, "NEWID": newid, "WEEKI": str(wk["week"]),
                               "WEEKN": str(len(cu["weeks"])), "STRTMNTH": f"{start.month:02d}",
                               "STRTYEAR": str(start.year),
                               "FOODHOME": f"{sums['home']:.5f}",
                               "FOODAWAY": f"{sums['away']:.5f}",
                               "FOODTOT": f"{sums['home'] + sums['away']:.5f}",
                               "ALCBEV": f"{sums['alcohol']:.5f}"}
                if year <= 2011:
                    week_values["STRTDAY"] = f"{start.day:02d}"
                fmld.append(_row(fcols, week_values))
                for m in range(1, len(cu["ages"]) + 1):
                    memd.append(_row(mcols, {"NEWID": newid, **_member_values(cu, m, year)}))
                wages = cu["income"] - sum(cu["ss"])
                dtbd.append([newid, "900000", str(wages), "", "1"])
                dtbd.append([newid, "980000", str(cu["income"]), "", "1"])
                if year >= 2005:
                    for imp, factor in enumerate(cu["dtid"], start=1):
                        dtid.append([newid, "900000", str(round(cu["income"] * factor)),
                                     str(imp), "1", ""])
        files[f"diary{yy:02d}/fmld{yy:02d}{q}.csv"] = _csv(fcols, fmld)
        files[f"diary{yy:02d}/memd{yy:02d}{q}.csv"] = _csv(mcols, memd)
        files[f"diary{yy:02d}/expd{yy:02d}{q}.csv"] = _csv(ecols, expd)
        files[f"diary{yy:02d}/dtbd{yy:02d}{q}.csv"] = _csv(DTBD_2020_COLUMNS, dtbd)
        if year >= 2005:
            files[f"diary{yy:02d}/dtid{yy:02d}{q}.csv"] = _csv(DTID_2020_COLUMNS, dtid)
    return files


# ---------------------------------------------------------------------------------------------
# ICPSR fixed-width archives (1982-1989)


def _fixed(width: int, fields: Sequence[tuple[str, int | None, int | None]],
           values: dict[str, str]) -> bytes:
    """One record: each value right-justified in its documented columns, blanks elsewhere."""
    line = bytearray(b" " * width)
    for name, start, end in fields:
        value = values.get(name, "")
        if start is None or end is None or value == "":  # (a field absent that year: both None)
            continue
        if len(value) > end - start:
            raise ConfigError(f"synthetic ICPSR Diary: {name} {value!r} exceeds columns "
                              f"{start + 1}-{end}")
        line[end - len(value):end] = value.encode("ascii")
    return bytes(line)


def _icpsr_records(year: int, cus: list[dict], q: int) -> dict[str, list[bytes]]:
    from hhx.surveys.cex.diary_icpsr import ARCHIVE_OF_YEAR, layout

    archive = ARCHIVE_OF_YEAR[year]
    out: dict[str, list[bytes]] = {fam: [] for fam in archive.widths}
    for cu in (c for c in cus if c["q"] == q):
        household = _household_values(cu, year, [])
        household["INCLASS"] = str(min(_income_class(cu["income"]), 9))
        household["FINLWT21"] = f"{cu['weight']:.4f}"
        if year <= 1983:
            household["BLS_URBN"] = ""
        for wk in cu["weeks"]:
            newid = cu["cu7"] + str(wk["week"])
            start = wk["start"]
            week = {**household, "NEWID": newid, "WEEKI": str(wk["week"]),
                    "WEEKN": str(len(cu["weeks"])), "STRTDAY": f"{start.day:02d}",
                    "STRTMNTH": f"{start.month:02d}", "STRTYEAR": f"{start.year % 100:02d}"}
            out["FMLY"].append(_fixed(archive.widths["FMLY"], layout()[(year, "FMLY")], week))
            for m in range(1, len(cu["ages"]) + 1):
                member = {"NEWID": newid, **_member_values(cu, m, year)}
                out["MEMB"].append(_fixed(archive.widths["MEMB"], layout()[(year, "MEMB")],
                                          member))
            for buy in wk["buys"]:
                purchase = {"NEWID": newid, "COST": f"{buy['cost']:.4f}", "UCC": buy["ucc"],
                            "QREDATE": _qredate(buy, year) if buy["dated"] else ""}
                out["EXPD"].append(_fixed(archive.widths["EXPD"], layout()[(year, "EXPD")],
                                          purchase))
            if "DTBD" in out:
                amount = f"{cu['income']:>14d}".encode()
                out["DTBD"].append(newid.encode() + b"980000" + amount)
    return out


def _icpsr_archive(years: list[int], sims: dict[int, list[dict]]) -> dict[str, bytes]:
    """The members of one ICPSR archive: data files, manifest, citation and documentation."""
    from hhx.surveys.cex.diary_icpsr import ARCHIVE_OF_YEAR, layout

    archive = ARCHIVE_OF_YEAR[years[0]]
    files: dict[str, bytes] = {}
    manifest = [f"Manifest of ICPSR study {archive.study} (synthetic: seeded demo data)", "",
                "  File name                  Record Length   Record Count   Section", ""]
    records = {(y, q): _icpsr_records(y, sims[y], q) for y in archive.years for q in range(1, 5)}
    for member, year, family, quarter in archive.members():
        lines = records[(year, quarter)][family]
        width = archive.physical_width(member, family)
        body = b"".join(line.ljust(width) + b"\n" for line in lines)
        files[member] = body
        manifest.append(f"  {member.rsplit('/', 1)[-1]}    {width}    {len(lines):,}    "
                        f"{family} {year} Q{quarter}")
    docs = archive.documentation()
    files[docs["manifest"]] = ("\n".join(manifest) + "\n").encode("latin-1")
    files[docs["description"]] = (
        f"<html><head><title>{archive.year_text()}</title></head><body><h1>"
        f"{archive.year_text()}</h1><p>Synthetic demo archive written by hhx; not ICPSR data."
        "</p></body></html>\n").encode("latin-1")
    doc = [f"{archive.year_text()} -- synthetic documentation of the fields written", ""]
    for year in archive.years:
        for family in ("FMLY", "MEMB", "EXPD"):
            for name, start, end in layout()[(year, family)]:
                where = "not on file" if start is None else f"columns {start + 1}-{end}"
                doc.append(f"{year} {family} {name:10s} {where}")
    files[docs["documentation"]] = ("\n".join(doc) + "\n").encode("latin-1")
    return files


def _zip(target: Path, files: dict[str, bytes], year: int) -> None:
    with atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(max(year, 1980), 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)


def write_synthetic_cex_diary(
    out_dir: str | Path, *, seed: int, years: Iterable[int], n_cu_per_quarter: int,
    icpsr_dir: str | Path | None = None,
) -> list[Path]:
    """Write a `diaryYY.zip` per BLS year (1990 on) into `out_dir` and the ICPSR archives of
    the years before 1990 into `icpsr_dir` (default `out_dir`); returns the paths.

    Each quarter holds `n_cu_per_quarter` consumer units with two diary weeks (one for about
    2%), consecutive for 90%. The same seed and arguments give byte-identical archives.
    """
    from hhx.surveys.cex.diary_icpsr import ARCHIVE_OF_YEAR

    years = sorted({int(y) for y in years})
    if not years:
        raise ConfigError("write_synthetic_cex_diary: years is empty")
    unknown = [y for y in years if y < FIRST_BLS_YEAR and y not in ARCHIVE_OF_YEAR]
    if unknown:
        raise ConfigError(f"write_synthetic_cex_diary: no Diary release for {unknown[0]} "
                          "(ICPSR 1982-1989, BLS from 1990)")
    if n_cu_per_quarter < 1:
        raise ConfigError("write_synthetic_cex_diary: n_cu_per_quarter must be at least 1")
    out, icpsr_out = Path(out_dir), Path(icpsr_dir) if icpsr_dir is not None else Path(out_dir)
    paths = []
    sims = {y: _simulate(y, np.random.default_rng([int(seed), y]), n_cu_per_quarter)
            for y in years}
    for year in years:
        if year >= FIRST_BLS_YEAR:
            target = out / f"diary{year % 100:02d}.zip"
            _zip(target, _bls_files(year, sims[year]), year)
        else:
            archive = ARCHIVE_OF_YEAR[year]
            if year != archive.years[0]:
                continue
            for y in archive.years:  # 08599 holds 1982 and 1983 together
                if y not in sims:
                    sims[y] = _simulate(y, np.random.default_rng([int(seed), y]),
                                        n_cu_per_quarter)
            target = icpsr_out / archive.name
            _zip(target, _icpsr_archive(list(archive.years), sims), year)
        write_sidecar(target, generator_label("cex_diary"), "synthetic CE Diary archive",
                      seed=int(seed), year=year, n_cu_per_quarter=n_cu_per_quarter)
        paths.append(target)
    return paths
