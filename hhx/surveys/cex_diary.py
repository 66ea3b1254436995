"""CEX Diary (BLS CE public-use microdata, 1990 on) -> `cex_diary_daily.parquet`, one row a day.

Facts: shared/spec/00_common.md 1.3 (CEX Diary row) and 10_tasks_cons_house_income.md 6.

Input: BLS Diary packages, `diaryYY.zip` archives with CSV members `fmldYYQ.csv` (one record per
diary week of a consumer unit, CU), `memdYYQ.csv` (members), `expdYYQ.csv` (purchases) and, when
present, `dtbdYYQ.csv`/`dtidYYQ.csv` (detailed income), Q = quarter 1-4; or the same files unzipped
in a folder. `survey.raw.<role>` names a zip, a package folder, or a folder holding packages.

Output (7 rows per FMLD record):
- keys: `source_week_id` = "<year>:<NEWID>", `source_day_id` = week id + ":D<k>" (k = 1..7),
  `cu_id` = "<year>:<first 7 digits of NEWID>", `newid`, `cex_data_year` (<year>, the package's
  release year, which keys the release-date crosswalk of spec section 2), `source_quarter`,
  `diary_day` (k), `diary_date`, `diary_weekday` (CE code 1 = Sunday ... 7 = Saturday),
  `date_status` (exact / ambiguous / undated);
- the FMLD characteristics of spec 1.3 in lower case (`age_ref`, ..., `weekn`, plus `fincbefm`,
  `fss_rrxm`, `pickcode` of the 2004+ files); a variable absent from a year's files is NA;
- from MEMD: `n_members`, `ssinc_ref_or_spouse` / `rail_ref_or_spouse` (1 if the reference person
  or spouse received Social Security / Railroad Retirement checks, ANYSSINC / ANYRAIL = 1; 0 if
  they answered and none did; NA when the variable is absent, as from 2013);
- daily sums of EXPD COST (nominal dollars): `daily_total_expenditure` (every UCC),
  `daily_food_at_home`, `daily_food_away_from_home`, `daily_records`; and per week (repeated on its
  7 days) the purchases that could not be put on a day: `week_unallocated_records`,
  `week_unallocated_cost`. Nothing is dropped silently.

Dating. Files to 2011 publish the start day (FMLD STRTDAY) and each purchase's full date (EXPD
QREDATE = sequence day, weekday, month, day, 2- or 4-digit year): diary_date = start + k - 1.
From 2012 the public files give only the start month and year and, per purchase, its sequence
day, weekday, month and year (EXPNSQDY, EXPNWKDY, EXPNMO, EXPNYR), not the day of the month: the
start date is then "exact" only if exactly one date of the start month fits every purchase's
weekday and month, "ambiguous" if several do (diary_date NaT, weekday known) and "undated"
without usable purchases.

Allocation ("strict", spec 6): a QREDATE purchase goes on day k only if QREDATE parses, its
year is the package year, its weekday is its date's, and the date equals start + k - 1; an
EXPNSQDY purchase goes on day EXPNSQDY. Others are counted as unallocated.

UCC sets (6-digit codes compared as integers):
- food at home: 010110-180710, 200112 (non-alcoholic malt beverages) and alcohol for home use
  200110, 200111, 200210-200410;
- food away from home, package years to 1997 (spec 6, "legacy strict v1", kept for comparable
  1986-1996 task values): 190110-190320, 190901, 190902 and alcohol away 200510-200530 (to 1993)
  / 200510-200536 (1994-1997). From 1998 BLS split meals by outlet (190111-190326, board and
  catered codes 1909xx; 190400-190700 from 2022), which the legacy ranges partly miss, so
  1998 on uses every 19xxxx code and alcohol away 200510-200599. On the real 2020 files these
  sets reproduce BLS's own weekly FMLD summaries FOODHOME + FOODAWAY + ALCBEV to the cent.
Codes are checked against the CE data dictionary (ce-data-dict.xlsx, Diary section; union
over its years because its year ranges have gaps): a code outside it is an error.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.io import write_parquet_atomic
from hhx.surveys.base import BuildReport, finish_report, input_sha256

log = logging.getLogger(__name__)

SOURCE_URL = "https://www.bls.gov/cex/pumd.htm"
OUTPUT_NAME = "cex_diary_daily"
FAMILIES = ("fmld", "memd", "expd", "dtbd", "dtid")
REQUIRED_FAMILIES = ("fmld", "memd", "expd")

_MEMBER_RE = re.compile(r"(?:^|/)(fmld|memd|expd|dtbd|dtid)(\d{2})([1-4])\.csv$", re.IGNORECASE)
_PACKAGE_RE = re.compile(r"^diary(\d{2})(?:\.zip)?$", re.IGNORECASE)

# Variable -> year ranges in which the data dictionary lists it for the BLS Diary files
# (last year None = still published). A variable is required in a year strictly inside a range;
# in a range's last year it is optional (ranges can end mid-year, e.g. INCLASS in 2018Q1).
Ranges = tuple[tuple[int, int | None], ...]
_ALWAYS: Ranges = ((1990, None),)
FMLD_VARIABLES: dict[str, Ranges] = {
    "AGE_REF": _ALWAYS,
    "BLS_URBN": _ALWAYS,
    "CUTENURE": _ALWAYS,
    "EDUC_REF": _ALWAYS,
    "EMPLTYP1": _ALWAYS,
    "FAM_SIZE": _ALWAYS,
    "FINCBEFX": _ALWAYS,
    "FINCBEFM": ((2004, None),),
    "FINLWT21": _ALWAYS,
    "FSS_RRX": ((1990, 2003), (2006, None)),
    "FSS_RRXM": ((2004, None),),
    "FSUPPX": ((1990, 2003), (2006, None)),
    "INCLASS": ((1990, 2018),),
    "MARITAL1": _ALWAYS,
    "PERSLT18": _ALWAYS,
    "PICK_UP": ((1990, 2003),),
    "PICKCODE": ((2004, None),),
    "REF_RACE": _ALWAYS,
    "REGION": _ALWAYS,
    "RESPSTAT": ((1990, 2013),),
    "SEX_REF": _ALWAYS,
    "SMSASTAT": _ALWAYS,
    "STRTDAY": ((1990, 2011),),
    "STRTMNTH": _ALWAYS,
    "STRTYEAR": _ALWAYS,
    "WEEKI": _ALWAYS,
    "WEEKN": _ALWAYS,
}
MEMD_VARIABLES: dict[str, Ranges] = {
    "CU_CODE1": _ALWAYS,
    "ANYSSINC": ((1990, 2012),),
    "ANYRAIL": ((1990, 2012),),
}
_LEGACY_DATE = ("QREDATE",)
_MODERN_DATE = ("EXPNSQDY", "EXPNWKDY", "EXPNMO", "EXPNYR")

# Code sets of the CE data dictionary (Diary; union over the years it lists).
CODEBOOK: dict[str, frozenset[int]] = {
    "WEEKI": frozenset({1, 2}),
    "WEEKN": frozenset({1, 2}),
    "REGION": frozenset(range(1, 7)),
    "BLS_URBN": frozenset({1, 2}),
    "SMSASTAT": frozenset({1, 2}),
    "SEX_REF": frozenset({1, 2}),
    "MARITAL1": frozenset(range(1, 6)),
    "CUTENURE": frozenset(range(1, 7)),
    "REF_RACE": frozenset(range(1, 7)),
    "EDUC_REF": frozenset(range(0, 19)),
    "EMPLTYP1": frozenset(range(1, 7)),
    "PICK_UP": frozenset({1, 3}),
    "PICKCODE": frozenset({201, 217}),
    "RESPSTAT": frozenset({1, 2}),
    "INCLASS": frozenset(range(1, 11)),
    "CU_CODE1": frozenset(range(0, 10)),
    "ANYSSINC": frozenset({1, 2}),
    "ANYRAIL": frozenset({1, 2}),
    "EXPNSQDY": frozenset(range(1, 8)),
    "EXPNWKDY": frozenset(range(1, 8)),
    "EXPNMO": frozenset(range(1, 13)),
}
# FMLD variables kept as amounts (float); the others are integer codes or counts.
_AMOUNTS = {"FINCBEFX", "FINCBEFM", "FINLWT21", "FSS_RRX", "FSS_RRXM", "FSUPPX"}

KEY_COLUMNS = [
    "source_week_id",
    "source_day_id",
    "cu_id",
    "newid",
    "cex_data_year",
    "source_quarter",
    "diary_day",
    "diary_date",
    "diary_weekday",
    "date_status",
]
CHARACTERISTIC_COLUMNS = [v.lower() for v in FMLD_VARIABLES]
MEMBER_COLUMNS = ["n_members", "ssinc_ref_or_spouse", "rail_ref_or_spouse"]
TOTAL_COLUMNS = [
    "daily_total_expenditure",
    "daily_food_at_home",
    "daily_food_away_from_home",
    "daily_records",
    "week_unallocated_records",
    "week_unallocated_cost",
]
OUTPUT_COLUMNS = KEY_COLUMNS + CHARACTERISTIC_COLUMNS + MEMBER_COLUMNS + TOTAL_COLUMNS


# --------------------------------------------------------------------------------------------
# UCC sets


def food_at_home(ucc: pd.Series) -> pd.Series:
    """Food and alcohol bought for home use (integer UCCs)."""
    u = ucc.astype("int64")
    return (
        u.between(10110, 180710)
        | (u == 200112)
        | u.isin([200110, 200111])
        | u.between(200210, 200410)
    )


def food_away_from_home(ucc: pd.Series, year: int) -> pd.Series:
    """Meals, snacks and alcohol away from home for a package year (see the module notes)."""
    u = ucc.astype("int64")
    if year <= 1997:
        alcohol_end = 200530 if year <= 1993 else 200536
        return u.between(190110, 190320) | u.isin([190901, 190902]) | u.between(200510, alcohol_end)
    return u.between(190000, 199999) | u.between(200510, 200599)


# --------------------------------------------------------------------------------------------
# Packages (zip or folder) and their members


def full_year(yy: int) -> int:
    """Two-digit year of a file name or field -> four digits (CE data start in 1980)."""
    return 1900 + yy if yy >= 80 else 2000 + yy


@dataclass(frozen=True)
class DiaryPackage:
    """One annual Diary release: a `diaryYY.zip` or a folder of its CSV files."""

    year: int
    path: Path
    members: dict[tuple[str, int], str] = field(default_factory=dict)  # (family, quarter) -> name

    @property
    def is_zip(self) -> bool:
        return self.path.is_file()

    def label(self, family: str, quarter: int) -> str:
        member = self.members[(family, quarter)]
        return f"{self.path}:{member}" if self.is_zip else str(self.path / member)

    def quarters(self) -> list[int]:
        return sorted(q for fam, q in self.members if fam == "fmld")


def _package(path: Path, names: Iterable[str], source: str) -> DiaryPackage:
    members: dict[tuple[str, int], str] = {}
    years: set[int] = set()
    for name in names:
        m = _MEMBER_RE.search(name)
        if m:
            members[(m.group(1).lower(), int(m.group(3)))] = name
            years.add(int(m.group(2)))
    named = _PACKAGE_RE.match(path.name)
    if named:
        year = full_year(int(named.group(1)))
    elif len(years) == 1:
        year = full_year(years.pop())
    else:
        raise DataError(
            f"{path}: cannot tell the Diary year (name it diaryYY or keep one year's "
            f"fmldYYQ.csv files together); packages come from {source}"
        )
    fmld = {q for fam, q in members if fam == "fmld"}
    if not fmld:
        raise DataError(
            f"{path}: no fmld{year % 100:02d}Q.csv member; download the Diary package "
            f"diary{year % 100:02d}.zip from {source}"
        )
    quarters = fmld | {q for fam, q in members if fam in REQUIRED_FAMILIES}
    for q in sorted(quarters):
        for fam in REQUIRED_FAMILIES:
            if (fam, q) not in members:
                raise DataError(
                    f"{path}: {fam}{year % 100:02d}{q}.csv not found (each quarter needs fmld, "
                    f"memd and expd files); download diary{year % 100:02d}.zip again from {source}"
                )
    return DiaryPackage(year=year, path=path, members=members)


def find_packages(path: Path, source: str = SOURCE_URL) -> list[DiaryPackage]:
    """All Diary packages at `path`: a `diaryYY.zip`, a package folder, or a folder of those."""
    if not path.exists():
        raise DataError(
            f"{path}: CEX Diary files not found; download the Diary CSV packages (diaryYY.zip) "
            f"from {source} and place them there"
        )
    if path.is_file():
        try:
            with zipfile.ZipFile(path) as zf:
                names = [i.filename for i in zf.infolist() if not i.is_dir()]
        except zipfile.BadZipFile:
            raise DataError(f"{path}: not a readable zip archive; download it again from {source}")
        return [_package(path, names, source)]
    files = sorted(p.name for p in path.iterdir() if p.is_file())
    if any(_MEMBER_RE.search(n) for n in files):
        return [_package(path, files, source)]
    packages = [p for p in sorted(path.iterdir()) if _PACKAGE_RE.match(p.name)]
    found = [pkg for p in packages for pkg in find_packages(p, source)]
    if not found:
        raise DataError(
            f"{path}: no CEX Diary package (diaryYY.zip, or a folder of fmldYYQ.csv, "
            f"memdYYQ.csv and expdYYQ.csv files) found; download them from {source}"
        )
    return found


@contextlib.contextmanager
def _open(pkg: DiaryPackage, family: str, quarter: int) -> Iterator[IO[bytes]]:
    member = pkg.members[(family, quarter)]
    if pkg.is_zip:
        with zipfile.ZipFile(pkg.path) as zf, zf.open(member) as fh:
            yield fh
    else:
        with (pkg.path / member).open("rb") as fh:
            yield fh


def read_member(
    pkg: DiaryPackage, family: str, quarter: int, wanted: Iterable[str], required: Iterable[str]
) -> pd.DataFrame:
    """Read the wanted columns (as text, blanks kept as "") of one member; check required ones."""
    wanted_set = {c.upper() for c in wanted}
    label = pkg.label(family, quarter)
    try:
        with _open(pkg, family, quarter) as fh:
            df = pd.read_csv(
                fh,
                dtype=str,
                keep_default_na=False,
                encoding="latin-1",
                usecols=lambda c: c.strip().upper() in wanted_set,
            )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{label}: unreadable CSV ({str(exc).splitlines()[0]})") from None
    df.columns = [c.strip().upper() for c in df.columns]
    for column in required:
        if column not in df.columns:
            raise DataError(
                f"{label}: column {column} not found; use the unmodified BLS Diary file "
                f"({SOURCE_URL})"
            )
    return df


def _expected(variables: dict[str, Ranges], year: int) -> list[str]:
    """Variables the dictionary lists for the whole of `year` (required in that year's files)."""
    return [
        name
        for name, ranges in variables.items()
        if any(first <= year and (last is None or year < last) for first, last in ranges)
    ]


# --------------------------------------------------------------------------------------------
# Field parsing (text -> typed, with one-line errors naming the file of the first bad value)


def read_family(
    pkg: DiaryPackage, family: str, wanted: Iterable[str], required: Iterable[str]
) -> pd.DataFrame:
    """All quarters of one family, as text, with the source file of each row in `_file`."""
    frames = []
    for q in pkg.quarters():
        raw = read_member(pkg, family, q, wanted, required)
        raw["_file"] = pkg.label(family, q)
        raw["_quarter"] = q
        frames.append(raw)
    out = pd.concat(frames, ignore_index=True)
    out["_file"] = out["_file"].astype("category")
    return out


def _first_bad(raw: pd.DataFrame, bad: pd.Series) -> str:
    return str(raw["_file"][bad].iloc[0])


def _numbers(raw: pd.DataFrame, column: str) -> pd.Series:
    text = raw[column].astype("string").str.strip()
    text = text.mask(text == "")
    values = pd.to_numeric(text, errors="coerce")
    bad = values.isna() & text.notna()
    if bad.any():
        raise DataError(
            f"{_first_bad(raw, bad)}: column {column} has non-numeric value {text[bad].iloc[0]!r}"
        )
    return values.astype("float64")


def _codes(raw: pd.DataFrame, column: str) -> pd.Series:
    values = _numbers(raw, column)
    fraction = values.notna() & (values != values.round())
    if fraction.any():
        raise DataError(
            f"{_first_bad(raw, fraction)}: column {column} has non-integer code "
            f"{values[fraction].iloc[0]!r}"
        )
    codes = values.astype("Int64")
    allowed = CODEBOOK.get(column)
    if allowed is not None:
        outside = (codes.notna() & ~codes.isin(list(allowed))).astype(bool)
        if outside.any():
            raise DataError(
                f"{_first_bad(raw, outside)}: column {column} has code "
                f"{int(codes[outside].iloc[0])}, which the CE data dictionary does not define "
                f"(valid: {sorted(allowed)}); use the unmodified BLS file"
            )
    return codes


def _ids(raw: pd.DataFrame, column: str, width: int) -> pd.Series:
    text = raw[column].astype("string").str.strip()
    bad = ~text.str.fullmatch(rf"\d{{1,{width}}}").fillna(False).astype(bool)
    if bad.any():
        raise DataError(
            f"{_first_bad(raw, bad)}: column {column} has value {text[bad].iloc[0]!r}, not a "
            f"code of at most {width} digits"
        )
    return text.str.zfill(width).astype("str")


def ce_weekday(dates: pd.Series) -> pd.Series:
    """CE weekday code of dates: 1 = Sunday ... 7 = Saturday."""
    return ((dates.dt.dayofweek + 1) % 7 + 1).astype("Int64")


def _dates(year: pd.Series, month: pd.Series, day: pd.Series) -> pd.Series:
    """Calendar dates from integer parts; impossible or missing parts -> NaT."""
    parts = pd.DataFrame({"year": year, "month": month, "day": day}).astype("float64")
    ok = parts.notna().all(axis=1)
    ok &= parts["year"].between(1900, 2100) & parts["month"].between(1, 12)
    ok &= parts["day"].between(1, 31)
    safe = parts.where(ok, 1.0).astype("int64")
    safe.loc[~ok, "year"] = 2000
    out = pd.to_datetime(safe, errors="coerce").astype("datetime64[ns]")
    return out.where(ok)


# --------------------------------------------------------------------------------------------
# One package -> daily rows


def _read_weeks(pkg: DiaryPackage) -> pd.DataFrame:
    required = ["NEWID", *_expected(FMLD_VARIABLES, pkg.year)]
    raw = read_family(pkg, "fmld", ["NEWID", *FMLD_VARIABLES], required)
    weeks = pd.DataFrame({"newid": _ids(raw, "NEWID", 8), "source_quarter": raw["_quarter"]})
    for var in FMLD_VARIABLES:
        if var not in raw.columns:
            weeks[var.lower()] = pd.Series(
                np.nan if var in _AMOUNTS else pd.NA,
                index=raw.index,
                dtype="float64" if var in _AMOUNTS else "Int64",
            )
        else:
            weeks[var.lower()] = _numbers(raw, var) if var in _AMOUNTS else _codes(raw, var)
    dup = weeks["newid"].duplicated()
    if dup.any():
        raise DataError(
            f"{_first_bad(raw, dup)}: NEWID {weeks['newid'][dup].iloc[0]} appears in more than "
            "one FMLD record of the package; each diary week must appear once"
        )
    return weeks


def _read_members(pkg: DiaryPackage) -> pd.DataFrame:
    """Per NEWID: member count and reference-person-or-spouse SS / Railroad receipt flags."""
    required = ["NEWID", *_expected(MEMD_VARIABLES, pkg.year)]
    raw = read_family(pkg, "memd", ["NEWID", *MEMD_VARIABLES], required)
    members = pd.DataFrame({"newid": _ids(raw, "NEWID", 8)})
    for var in MEMD_VARIABLES:
        members[var] = (
            _codes(raw, var)
            if var in raw.columns
            else pd.Series(pd.NA, index=raw.index, dtype="Int64")
        )
    head = members[members["CU_CODE1"].isin([1, 2]).fillna(False).astype(bool)]
    result = pd.DataFrame({"n_members": members.groupby("newid").size()})
    for var, col in (("ANYSSINC", "ssinc_ref_or_spouse"), ("ANYRAIL", "rail_ref_or_spouse")):
        answered = head.dropna(subset=[var])
        flag = (answered[var] == 1).groupby(answered["newid"]).any().astype("Int64")
        result[col] = flag.reindex(result.index).astype("Int64")
    return result


def _read_purchases(pkg: DiaryPackage) -> pd.DataFrame:
    """EXPD rows: newid, cost, ucc, seq (1-7 or NA), weekday, month, year, date (QREDATE only)."""
    raw = read_family(
        pkg,
        "expd",
        ["NEWID", "COST", "UCC", *_LEGACY_DATE, *_MODERN_DATE],
        ["NEWID", "COST", "UCC"],
    )
    legacy = "QREDATE" in raw.columns
    fields = _LEGACY_DATE if legacy else _MODERN_DATE
    missing = raw[list(fields)].isna().any(axis=1) if set(fields) <= set(raw.columns) else None
    if missing is None or missing.any():
        where = (
            pkg.label("expd", pkg.quarters()[0]) if missing is None else _first_bad(raw, missing)
        )
        wanted = _LEGACY_DATE if pkg.year <= 2011 else _MODERN_DATE
        raise DataError(
            f"{where}: column {' / '.join(wanted)} not found (the purchase date fields); use the "
            f"unmodified BLS Diary file ({SOURCE_URL})"
        )
    out = pd.DataFrame({"newid": _ids(raw, "NEWID", 8)})
    cost = _numbers(raw, "COST")
    if cost.isna().any():
        raise DataError(
            f"{_first_bad(raw, cost.isna())}: column COST is blank in "
            f"{int(cost.isna().sum())} records"
        )
    out["cost"] = cost
    out["ucc"] = _ids(raw, "UCC", 6).astype("int64")
    if legacy:
        out = out.join(_parse_qredate(raw["QREDATE"]))
    else:
        out["seq"] = _codes(raw, "EXPNSQDY")
        out["weekday"] = _codes(raw, "EXPNWKDY")
        out["month"] = _codes(raw, "EXPNMO")
        out["year"] = _codes(raw, "EXPNYR")
        out["date"] = pd.Series(pd.NaT, index=raw.index, dtype="datetime64[ns]")
    out["legacy"] = legacy
    return out


def _parse_qredate(text: pd.Series) -> pd.DataFrame:
    """QREDATE = seq day (1), weekday (1), month (2), day (2), year (2 or 4); bad -> NA fields."""
    s = text.astype("string").str.strip()
    ok = s.str.fullmatch(r"\d{8}|\d{10}").fillna(False).astype(bool)
    s = s.where(ok, "1100000000")
    seq = s.str[0].astype("int64")
    weekday = s.str[1].astype("int64")
    month = s.str[2:4].astype("int64")
    day = s.str[4:6].astype("int64")
    year = s.str[6:].astype("int64")
    year = year.where(s.str.len() == 10, year.map(full_year))
    date = _dates(year.where(ok), month, day)
    good = ok & seq.between(1, 7) & weekday.between(1, 7) & date.notna()
    return pd.DataFrame(
        {
            "seq": seq.astype("Int64").where(good),
            "weekday": weekday.astype("Int64").where(good),
            "month": month.astype("Int64").where(good),
            "year": year.astype("Int64").where(good),
            "date": date.where(good),
        }
    )


def _four_digit_years(years: pd.Series) -> pd.Series:
    """STRTYEAR may be written with two digits in early files."""
    y = years.astype("float64")
    short = y.notna() & (y < 100)
    return y.where(~short, y[short].map(lambda v: float(full_year(int(v)))))


def _date_weeks(weeks: pd.DataFrame, purchases: pd.DataFrame) -> pd.DataFrame:
    """Start date, start weekday and date status of each week (see the module notes)."""
    out = pd.DataFrame({"newid": weeks["newid"]})
    year = _four_digit_years(weeks["strtyear"])
    if weeks["strtday"].notna().any():
        start = _dates(year, weeks["strtmnth"], weeks["strtday"])
        out["start"] = start
        out["start_weekday"] = ce_weekday(start)
        out["date_status"] = np.where(start.notna(), "exact", "undated")
        return out
    # No start day published: find the dates of the start month that fit every purchase.
    known = purchases.dropna(subset=["seq", "weekday"])
    offset = ((known["weekday"] - known["seq"]) % 7 + 1).astype("int64")
    per_week = offset.groupby(known["newid"]).agg(["nunique", "first"])
    consistent = per_week["first"].where(per_week["nunique"] == 1)
    start_weekday = consistent.reindex(out["newid"]).to_numpy(dtype="float64")
    cands = pd.DataFrame(
        {
            "newid": np.repeat(out["newid"].to_numpy(), 31),
            "year": np.repeat(year.to_numpy(), 31),
            "month": np.repeat(weeks["strtmnth"].to_numpy(dtype="float64", na_value=np.nan), 31),
            "day": np.tile(np.arange(1, 32, dtype="float64"), len(out)),
            "want": np.repeat(start_weekday, 31),
        }
    )
    cands["start"] = _dates(cands["year"], cands["month"], cands["day"])
    weekday = ce_weekday(cands["start"]).to_numpy(dtype="float64", na_value=np.nan)
    cands = cands[weekday == cands["want"].to_numpy()][["newid", "start"]]
    months = known.dropna(subset=["month", "year"])[["newid", "seq", "month", "year"]]
    checks = cands.merge(months.drop_duplicates(), on="newid")
    day = checks["start"] + pd.to_timedelta(checks["seq"].astype("int64") - 1, unit="D")
    checks["bad"] = (day.dt.month != checks["month"]) | (day.dt.year != checks["year"])
    bad = checks.groupby(["newid", "start"])["bad"].any()
    keys = pd.MultiIndex.from_frame(cands)
    fits = cands[~bad.reindex(keys, fill_value=False).to_numpy(dtype=bool)]
    n_fits = fits.groupby("newid").size().reindex(out["newid"], fill_value=0).to_numpy()
    only = fits.groupby("newid")["start"].first().reindex(out["newid"]).to_numpy()
    out["start"] = pd.Series(only, index=out.index, dtype="datetime64[ns]").where(n_fits == 1)
    out["start_weekday"] = pd.array(start_weekday, dtype="Float64").astype("Int64")
    out["date_status"] = np.select(
        [n_fits == 1, ~np.isnan(start_weekday) & (n_fits > 1)], ["exact", "ambiguous"], "undated"
    )
    return out


def _allocated(purchases: pd.DataFrame, dating: pd.DataFrame, year: int) -> pd.Series:
    """Which purchases can be put on a diary day: the strict rule of the module notes."""
    ok = purchases["seq"].notna().to_numpy(dtype=bool, copy=True)
    legacy = purchases["legacy"].to_numpy(dtype=bool)
    if legacy.any():
        start = purchases["newid"].map(dating.set_index("newid")["start"])
        date = purchases["date"]
        seq = purchases["seq"].to_numpy(dtype="float64", na_value=np.nan)
        expected = start + pd.to_timedelta(seq - 1, unit="D")
        same_weekday = (ce_weekday(date) == purchases["weekday"]).fillna(False)
        legacy_ok = (
            date.notna()
            & (date.dt.year == year)
            & same_weekday.astype(bool)
            & (start.isna() | (date == expected))
        )
        ok = ok & (~legacy | legacy_ok.to_numpy(dtype=bool))
    return pd.Series(ok, index=purchases.index)


def build_package(pkg: DiaryPackage) -> tuple[pd.DataFrame, dict[str, int]]:
    """One Diary package -> its daily rows (7 per FMLD record) and record counts."""
    weeks = _read_weeks(pkg)
    members = _read_members(pkg)
    purchases = _read_purchases(pkg)
    for fam in ("dtbd", "dtid"):  # detailed income: only checked, not used by the daily table
        for q in pkg.quarters():
            if (fam, q) in pkg.members:
                read_member(pkg, fam, q, ["NEWID", "UCC", "AMOUNT"], ["NEWID", "UCC", "AMOUNT"])

    known = purchases["newid"].isin(weeks["newid"])
    orphans = int((~known).sum())
    if orphans:
        log.warning("%s: %d EXPD records have a NEWID without an FMLD record", pkg.path, orphans)
    purchases = purchases[known].reset_index(drop=True)
    dating = _date_weeks(weeks, purchases)
    allocated = _allocated(purchases, dating, pkg.year)

    on_day = purchases[allocated].copy()
    on_day["home"] = on_day["cost"].where(food_at_home(on_day["ucc"]), 0.0)
    on_day["away"] = on_day["cost"].where(food_away_from_home(on_day["ucc"], pkg.year), 0.0)
    on_day["diary_day"] = on_day["seq"].astype("int64")
    daily = on_day.groupby(["newid", "diary_day"]).agg(
        daily_total_expenditure=("cost", "sum"),
        daily_food_at_home=("home", "sum"),
        daily_food_away_from_home=("away", "sum"),
        daily_records=("cost", "size"),
    )
    off = purchases[~allocated]
    unallocated = off.groupby("newid").agg(
        week_unallocated_records=("cost", "size"), week_unallocated_cost=("cost", "sum")
    )

    n = len(weeks)
    days = pd.DataFrame(
        {
            "newid": pd.Series(np.repeat(weeks["newid"].to_numpy(), 7), dtype="str"),
            "diary_day": np.tile(np.arange(1, 8), n),
        }
    )
    days["source_week_id"] = f"{pkg.year}:" + days["newid"]
    days["source_day_id"] = days["source_week_id"] + ":D" + days["diary_day"].astype(str)
    days["cu_id"] = f"{pkg.year}:" + days["newid"].str[:7]
    days["cex_data_year"] = pkg.year
    days["source_quarter"] = np.repeat(weeks["source_quarter"].to_numpy(), 7)
    start = np.repeat(dating["start"].to_numpy(), 7)
    days["diary_date"] = pd.Series(start).astype("datetime64[ns]") + pd.to_timedelta(
        days["diary_day"] - 1, unit="D"
    )
    first_weekday = pd.Series(np.repeat(dating["start_weekday"].to_numpy(), 7), dtype="Int64")
    days["diary_weekday"] = (first_weekday - 1 + days["diary_day"] - 1) % 7 + 1
    days["date_status"] = np.repeat(dating["date_status"].to_numpy(), 7)
    chars = weeks.set_index("newid")[CHARACTERISTIC_COLUMNS]
    days = days.join(chars, on="newid")
    days = days.join(members, on="newid")
    days["n_members"] = days["n_members"].fillna(0).astype("int64")
    days = days.join(daily, on=["newid", "diary_day"])
    days = days.join(unallocated, on="newid")
    for col in (
        "daily_total_expenditure",
        "daily_food_at_home",
        "daily_food_away_from_home",
        "week_unallocated_cost",
    ):
        days[col] = days[col].fillna(0.0).astype("float64")
    for col in ("daily_records", "week_unallocated_records"):
        days[col] = days[col].fillna(0).astype("int64")
    counts = {
        "expd_records": int(len(purchases) + orphans),
        "expd_unallocated_records": int((~allocated).sum()),
        "expd_orphan_records": orphans,
    }
    return days[OUTPUT_COLUMNS], counts


def _raw_path(raw_dir: Path, value: str) -> Path:
    p = Path(value).expanduser()
    return p if p.is_absolute() else raw_dir / p


def _fingerprints(pkg: DiaryPackage) -> dict[str, str]:
    if pkg.is_zip:
        return {str(pkg.path): input_sha256(pkg.path)}
    return {str(pkg.path / m): input_sha256(pkg.path / m) for m in sorted(pkg.members.values())}


def read_cex_diary(
    paths: Iterable[Path], source: str = SOURCE_URL
) -> tuple[pd.DataFrame, dict[str, str], dict[str, int]]:
    """All packages found under `paths` -> (daily rows, input fingerprints, record counts)."""
    packages = [pkg for p in paths for pkg in find_packages(Path(p), source)]
    years = [pkg.year for pkg in packages]
    repeated = sorted({y for y in years if years.count(y) > 1})
    if repeated:
        where = ", ".join(str(pkg.path) for pkg in packages if pkg.year in repeated)
        raise DataError(f"Diary year {repeated[0]} is given twice ({where}); keep one copy")
    frames, inputs = [], {}
    counts = {"expd_records": 0, "expd_unallocated_records": 0, "expd_orphan_records": 0}
    for pkg in sorted(packages, key=lambda p: p.year):
        daily, c = build_package(pkg)
        frames.append(daily)
        inputs.update(_fingerprints(pkg))
        for k, v in c.items():
            counts[k] += v
    return pd.concat(frames, ignore_index=True), inputs, counts


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read every Diary package named by `survey.raw` and write `cex_diary_daily.parquet`."""
    started = time.perf_counter()
    if not survey.raw:
        raise ConfigError(
            f"survey {survey.name}: raw is empty; set survey.raw.diary to the folder of "
            "diaryYY.zip packages"
        )
    source = survey.source_url or SOURCE_URL
    paths = [_raw_path(Path(raw_dir), rel) for rel in survey.raw.values() if rel]
    daily, inputs, counts = read_cex_diary(paths, source)
    target = write_parquet_atomic(Path(out_dir) / f"{OUTPUT_NAME}.parquet", daily)
    rows = {OUTPUT_NAME: len(daily), "cex_diary_weeks": int(daily["source_week_id"].nunique()),
            **counts}
    return finish_report(survey, {OUTPUT_NAME: target}, rows, inputs, started)
