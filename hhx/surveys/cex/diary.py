"""CEX Diary (BLS CSV packages 1990 on, ICPSR fixed-width archives 1982-1989) ->
`cex_diary_daily.parquet`, one row per consumer unit (CU) diary day, by the reference's rules.

Facts: shared/spec/00_common.md 1.2-1.3 and 10_tasks_cons_house_income.md 6; the reference's
scripts/1_preprocessing/cex_diary.py. Columns and rules: hhx.surveys.cex.diary_panel (weeks,
members, purchases, quality flags, daily sums); the ICPSR archives: hhx.surveys.cex.diary_icpsr.

Inputs (`survey.raw`): `diary`, a folder of BLS `diaryYY.zip` packages (or unzipped `diaryYY/`
folders, or one package); `icpsr`, a folder of the ICPSR archives (optional: empty reads BLS
only); `release_crosswalk`, the reference's release_cex.csv (release_date by source year; empty
leaves it NA). A year comes from ICPSR up to 1989 and from BLS from 1990 (the reference's
canonical sources); a year given twice is an error.

BLS packages: per quarter Q the members `fmldYYQ.csv`, `memdYYQ.csv`, `expdYYQ.csv` (any depth);
all four quarters must be there (`require_all_quarters`; the real 2020 test slice has two). The
fields read are the reference's: FMLD NEWID AGE_REF BLS_URBN CUTENURE EDUC_REF EMPLTYP1 FAM_SIZE
FINCBEFX FINLWT21 FSS_RRX FSUPPX INCLASS MARITAL1 PERSLT18 PICK_UP REF_RACE REGION RESPSTAT
SEX_REF SMSASTAT STRTDAY STRTMNTH STRTYEAR WEEKI WEEKN (+ FINCBEFM FSS_RRXM FSUPPXM from 2004),
with the released aliases FINCBEFM / FSS_RRXM / FSUPPXM for FINCBEFX / FSS_RRX / FSUPPX in
2004-05 and PICKCODE for PICK_UP from 2004; MEMD NEWID MEMBNO ANYRAIL ANYSSINC US_SUPP SS_RRX
(SS_RRXM 2004-05) SUPPX (SUPPXM 2004-05) CU_CODE1 WHYNOWRK; EXPD NEWID COST QREDATE UCC. A
missing field is an error naming the member. From 2012 (after the reference's span) BLS
publishes no STRTDAY and no QREDATE: hhx finds the start day as the one date of the start month
whose weekday and month fit every purchase's EXPNSQDY / EXPNWKDY / EXPNMO / EXPNYR (none or
several: no start date) and writes each purchase's QREDATE from those fields, so the same rules
apply; variables the dictionary no longer lists for a year (RESPSTAT after 2013, INCLASS after
2018, ANYSSINC / ANYRAIL after 2012) are missing.

Damaged inputs are errors naming the file: a member the archive cannot inflate, a CSV that ends
early (hhx.surveys.cex.members), an ICPSR member whose line count differs from its manifest.
Not reproduced: the reference's checks of its real files' totals (e.g. 2,720,802 day rows, 45
outside-grid 1985 Q4 purchases, 200,008 lines in 1986's Q4 EXPD member), which refuse any
other input.
"""

from __future__ import annotations

import io
import logging
import re
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.io import atomic_path, write_parquet_chunks
from hhx.surveys.base import BuildReport, finish_report, input_sha256, raw_path
from hhx.surveys.cex import diary_icpsr as icpsr
from hhx.surveys.cex import diary_panel as panel
from hhx.surveys.cex.members import check_csv_complete, read_bytes
from hhx.surveys.macro.release_dates import read_release_crosswalk

log = logging.getLogger(__name__)

SOURCE_URL = "https://www.bls.gov/cex/pumd.htm"
OUTPUT_NAME = "cex_diary_daily"
FIRST_BLS_YEAR = 1990
_MEMBER_RE = re.compile(r"(?:^|/)(fmld|memd|expd)(\d{2})([1-4])\.csv$", re.IGNORECASE)
_PACKAGE_RE = re.compile(r"^diary(\d{2})(?:\.zip)?$", re.IGNORECASE)
FAMILY = {"fmld": "FMLY", "memd": "MEMB", "expd": "EXPD"}
FMLY_FIELDS = icpsr.FIELDS["FMLY"]
MEMB_FIELDS = icpsr.FIELDS["MEMB"]
EXPD_FIELDS = icpsr.FIELDS["EXPD"]
MODERN_EXPD = ["EXPNSQDY", "EXPNWKDY", "EXPNMO", "EXPNYR"]
IMPUTED = ["FINCBEFM", "FSS_RRXM", "FSUPPXM"]
# Last year the dictionary lists a variable (BLS files from 2012, hhx's extension).
LAST_YEAR = {"STRTDAY": 2011, "RESPSTAT": 2013, "INCLASS": 2018, "ANYSSINC": 2012,
             "ANYRAIL": 2012, "QREDATE": 2011}


def full_year(yy: int) -> int:
    return 1900 + yy if yy >= 80 else 2000 + yy


def fmly_source(year: int, name: str) -> str:
    """The released CSV column of a standard FMLY field (the reference's alias table)."""
    if name in ("FINCBEFX", "FSS_RRX", "FSUPPX") and year in (2004, 2005):
        return {"FINCBEFX": "FINCBEFM", "FSS_RRX": "FSS_RRXM", "FSUPPX": "FSUPPXM"}[name]
    if name == "PICK_UP" and year >= 2004:
        return "PICKCODE"
    return name


def memb_source(year: int, name: str) -> str:
    if name in ("SS_RRX", "SUPPX") and year in (2004, 2005):
        return f"{name}M"
    return name


@dataclass(frozen=True)
class DiaryPackage:
    year: int
    path: Path
    members: dict[tuple[str, int], str] = field(default_factory=dict)

    @property
    def is_zip(self) -> bool:
        return self.path.is_file()

    def label(self, family: str, quarter: int) -> str:
        member = self.members[(family, quarter)]
        return f"{self.path}:{member}" if self.is_zip else str(self.path / member)


def _package(path: Path, names: list[str], source: str) -> DiaryPackage:
    members: dict[tuple[str, int], str] = {}
    years: set[int] = set()
    for name in names:
        m = _MEMBER_RE.search(name.replace("\\", "/"))
        if m:
            key = (m.group(1).lower(), int(m.group(3)))
            if key in members:
                raise DataError(f"{path}: {m.group(1)}{m.group(2)}{m.group(3)}.csv appears twice "
                                f"({members[key]}, {name}); keep one copy")
            members[key] = name
            years.add(int(m.group(2)))
    named = _PACKAGE_RE.match(path.name)
    if named:
        year = full_year(int(named.group(1)))
    elif len(years) == 1:
        year = full_year(years.pop())
    else:
        raise DataError(f"{path}: cannot tell the Diary year (name it diaryYY or keep one year's "
                        f"fmldYYQ.csv files together); packages come from {source}")
    if not any(fam == "fmld" for fam, _ in members):
        raise DataError(f"{path}: no fmld{year % 100:02d}Q.csv member; download "
                        f"diary{year % 100:02d}.zip again from {source}")
    return DiaryPackage(year=year, path=path, members=members)


def find_packages(path: Path, source: str = SOURCE_URL) -> list[DiaryPackage]:
    """The BLS Diary packages at `path`: a `diaryYY.zip`, a package folder, or a folder of them."""
    if not path.exists():
        raise DataError(f"{path}: CEX Diary files not found; download the Diary CSV packages "
                        f"(diaryYY.zip) from {source} and place them there")
    if path.is_file():
        try:
            with zipfile.ZipFile(path) as zf:
                names = [i.filename for i in zf.infolist() if not i.is_dir()]
        except zipfile.BadZipFile:
            raise DataError(f"{path}: not a readable zip archive; download it again from "
                            f"{source}") from None
        return [_package(path, names, source)]
    files = sorted(str(p.relative_to(path)) for p in path.rglob("*.csv"))
    if any(_MEMBER_RE.search(n) for n in files) and not any(
            _PACKAGE_RE.match(p.name) for p in path.iterdir()):
        return [_package(path, files, source)]
    found = [pkg for p in sorted(path.iterdir()) if _PACKAGE_RE.match(p.name)
             for pkg in find_packages(p, source)]
    if not found:
        raise DataError(f"{path}: no CEX Diary package (diaryYY.zip, or a folder of fmldYYQ.csv, "
                        f"memdYYQ.csv and expdYYQ.csv files) found; download them from {source}")
    return found


# --------------------------------------------------------------------------------------------
# BLS CSV members -> standard text fields


def _read_csv(pkg: DiaryPackage, family: str, quarter: int, wanted: list[str],
              required: list[str], source: str) -> pd.DataFrame:
    label = pkg.label(family, quarter)
    data = read_bytes(pkg.path, pkg.members[(family, quarter)], label, source)
    check_csv_complete(data, label, source)
    try:
        frame = pd.read_csv(io.BytesIO(data), dtype="string", encoding="latin-1",
                            usecols=lambda c: c.strip().upper() in set(wanted))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{label}: unreadable CSV ({str(exc).splitlines()[0]})") from None
    frame.columns = [c.strip().upper() for c in frame.columns]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DataError(f"{label}: column(s) {missing} not found; use the unmodified BLS Diary "
                        f"file ({source})")
    frame["source_provider"] = "BLS"
    frame["source_archive"] = pkg.path.name
    frame["source_quarter_file"] = f"Q{quarter}"
    frame["source_member"] = pkg.members[(family, quarter)]
    return frame


def _listed(year: int, name: str) -> bool:
    return year <= LAST_YEAR.get(name, 9999)


def read_bls_year(pkg: DiaryPackage, source: str, require_all_quarters: bool = True
                  ) -> dict[str, pd.DataFrame]:
    year = pkg.year
    quarters = sorted({q for fam, q in pkg.members if fam == "fmld"})
    needed = [1, 2, 3, 4] if require_all_quarters else quarters
    for q in needed:
        for fam in FAMILY:
            if (fam, q) not in pkg.members:
                raise DataError(f"{pkg.path}: {fam}{year % 100:02d}{q}.csv (quarter {q}) not "
                                f"found; download diary{year % 100:02d}.zip again from {source}")
    fmly_map = {n: fmly_source(year, n) for n in FMLY_FIELDS}
    memb_map = {n: memb_source(year, n) for n in MEMB_FIELDS}
    fmly_read = list(dict.fromkeys([*fmly_map.values(), *(IMPUTED if year >= 2004 else [])]))
    expd_read = EXPD_FIELDS if year <= 2011 else [*EXPD_FIELDS[:2], "UCC", *MODERN_EXPD]
    frames: dict[str, list[pd.DataFrame]] = {"FMLY": [], "MEMB": [], "EXPD": []}
    for q in needed:
        specs: tuple = (("fmld", fmly_read, fmly_map), ("memd", list(memb_map.values()), memb_map),
                 ("expd", expd_read, {}))
        for fam, read, renames in specs:
            required = [c for c in read if _listed(year, c)]
            frame = _read_csv(pkg, fam, q, read, required, source)
            for standard, released in renames.items():
                if standard != released and released in frame:
                    frame[standard] = frame[released]
            frames[FAMILY[fam]].append(frame)
    out = {fam: pd.concat(parts, ignore_index=True) for fam, parts in frames.items()}
    if year >= 2012:
        _date_modern(out)
    return out


def _date_modern(frames: dict[str, pd.DataFrame]) -> None:
    """Files from 2012: the start day from the purchases' fields, QREDATE written from them."""
    weeks, purchases = frames["FMLY"], frames["EXPD"]
    newid = purchases["NEWID"].str.strip()
    num = {c: panel._number(purchases[c]) for c in MODERN_EXPD}
    known = pd.DataFrame({"newid": newid, **num}).dropna(subset=["EXPNSQDY", "EXPNWKDY"])
    offset = ((known["EXPNWKDY"] - known["EXPNSQDY"]) % 7 + 1).astype("int64")
    per_week = offset.groupby(known["newid"]).agg(["nunique", "first"])
    want = per_week["first"].where(per_week["nunique"] == 1)
    wk_id = weeks["NEWID"].str.strip()
    year = panel._number(weeks["STRTYEAR"]).to_numpy(dtype="float64")
    month = panel._number(weeks["STRTMNTH"]).to_numpy(dtype="float64")
    cands = pd.DataFrame({"newid": np.repeat(wk_id.to_numpy(), 31),
                          "year": np.repeat(year, 31), "month": np.repeat(month, 31),
                          "day": np.tile(np.arange(1, 32, dtype="float64"), len(weeks)),
                          "want": np.repeat(want.reindex(wk_id).to_numpy(dtype="float64"), 31)})
    parts = [cands[c].astype("Int64").astype("string").str.zfill(w)
             for c, w in (("year", 4), ("month", 2), ("day", 2))]
    cands["start"] = pd.to_datetime(parts[0] + "-" + parts[1] + "-" + parts[2],
                                    errors="coerce", format="%Y-%m-%d")
    weekday = ((cands["start"].dt.dayofweek + 1) % 7 + 1).to_numpy(dtype="float64",
                                                                   na_value=np.nan)
    cands = cands[weekday == cands["want"].to_numpy()][["newid", "start"]]
    months = known.dropna(subset=["EXPNMO", "EXPNYR"])[["newid", "EXPNSQDY", "EXPNMO", "EXPNYR"]]
    checks = cands.merge(months.drop_duplicates(), on="newid")
    day = checks["start"] + pd.to_timedelta(checks["EXPNSQDY"] - 1, unit="D")
    checks["bad"] = (day.dt.month != checks["EXPNMO"]) | (day.dt.year != checks["EXPNYR"])
    bad = checks.groupby(["newid", "start"])["bad"].any()
    fits = cands[~bad.reindex(pd.MultiIndex.from_frame(cands), fill_value=False).to_numpy()]
    n_fits = fits.groupby("newid").size()
    start = fits.groupby("newid")["start"].first().where(n_fits == 1)
    week_start = pd.Series(start.reindex(wk_id).to_numpy(), index=weeks.index)
    weeks["STRTDAY"] = week_start.dt.day.astype("Int64").astype("string")
    first = pd.Series(start.reindex(newid).to_numpy(), index=purchases.index)
    date = first + pd.to_timedelta(num["EXPNSQDY"] - 1, unit="D")
    parts = [num["EXPNSQDY"], num["EXPNWKDY"], num["EXPNMO"], date.dt.day, num["EXPNYR"]]
    text = [p.astype("Int64").astype("string") for p in parts]
    code = text[0] + text[1] + text[2].str.zfill(2) + text[3].str.zfill(2) + text[4]
    purchases["QREDATE"] = code


# --------------------------------------------------------------------------------------------
# ICPSR archives


def read_icpsr_year(path: Path, year: int, source: str) -> dict[str, pd.DataFrame]:
    counts = icpsr.validate_archive(path, source)
    archive = icpsr.ARCHIVES[path.name]
    frames: dict[str, list[pd.DataFrame]] = {"FMLY": [], "MEMB": [], "EXPD": []}
    for member, member_year, family, quarter in archive.members():
        if member_year != year or family not in frames:
            continue
        frame = icpsr.read_member(path, member, family, year, counts[member], source)
        frame["source_provider"] = "ICPSR"
        frame["source_archive"] = path.name
        frame["source_quarter_file"] = f"Q{quarter}"
        frame["source_member"] = member
        frames[family].append(frame)
    return {fam: pd.concat(parts, ignore_index=True) for fam, parts in frames.items()}


# --------------------------------------------------------------------------------------------
# One year


def build_year(frames: dict[str, pd.DataFrame], year: int, provider: str,
               release: pd.DataFrame | None) -> tuple[pd.DataFrame, dict[str, int]]:
    fml = panel.parse_fmly(frames["FMLY"], year)
    fml["source_family"] = "ICPSR_fixed_width" if provider == "ICPSR" else "BLS_csv"
    if release is not None:
        row = release.loc[release["cex_data_year"] == year]
        if row.empty:
            raise DataError(f"release-date crosswalk: no row for CEX data year {year}; add one")
        fml["release_date"] = pd.Timestamp(row["release_date"].iloc[0])
        fml["release_date_source"] = str(row["release_date_source"].iloc[0])
    else:
        fml["release_date"] = pd.NaT
        fml["release_date_source"] = pd.Series(pd.NA, index=fml.index, dtype="string")
    fml["release_date_source"] = fml["release_date_source"].astype("string")
    memb = panel.parse_memb(frames["MEMB"], year)
    fml = panel.attach_members(fml, memb, year)
    exp = panel.parse_expd(frames["EXPD"], year)
    exp, fml = panel.prepare_expd(exp, fml, year)
    fml = panel.attach_strict_quality(fml, exp, year)
    fml = panel.attach_restriction_inputs(fml)
    daily = panel.make_daily(fml, exp, year)
    counts = {"fmly_records": len(fml), "memb_records": len(memb), "expd_records": len(exp),
              "expd_general_allocated": int(exp["general_transaction_allocated"].sum()),
              "expd_unmatched_week": int((~exp["source_week_exists"]).sum())}
    if counts["expd_unmatched_week"]:
        log.warning("CEX Diary %s: %d purchases without a diary week", year,
                    counts["expd_unmatched_week"])
    return daily, counts


def _release_table(survey: SurveyConfig, raw_dir: Path) -> tuple[pd.DataFrame | None, list[Path]]:
    if not survey.raw.get("release_crosswalk"):
        return None, []
    path = raw_path(survey, "release_crosswalk", raw_dir)
    table = read_release_crosswalk("cex", path)
    if "release_date_source" not in table.columns:
        table["release_date_source"] = "crosswalk"
    return table, [path]


def sources(survey: SurveyConfig, raw_dir: Path, source: str) -> list[tuple[int, str, object]]:
    """(year, provider, handle) of every year found, in year order."""
    out: dict[int, tuple[str, object]] = {}
    if survey.raw.get("diary"):
        for pkg in find_packages(raw_path(survey, "diary", raw_dir), source):
            if pkg.year < FIRST_BLS_YEAR:
                raise DataError(f"{pkg.path}: BLS Diary {pkg.year} is not read (the reference "
                                "takes 1982-1989 from the ICPSR archives)")
            if pkg.year in out:
                raise DataError(f"Diary year {pkg.year} is given twice ({out[pkg.year][1]}, "
                                f"{pkg.path}); keep one copy")
            out[pkg.year] = ("BLS", pkg)
    if survey.raw.get("icpsr"):
        for year, path in icpsr.find_archives(raw_path(survey, "icpsr", raw_dir)).items():
            if year in out:
                raise DataError(f"Diary year {year} is given twice; keep one copy")
            out[year] = ("ICPSR", path)
    if not out:
        raise ConfigError(f"survey {survey.name}: set raw.diary (BLS packages) and/or raw.icpsr "
                          "(ICPSR archives)")
    return [(year, *out[year]) for year in sorted(out)]


def _inputs(provider: str, handle: object) -> list[Path]:
    if provider == "ICPSR":
        return [handle]  # type: ignore[list-item]
    pkg: DiaryPackage = handle  # type: ignore[assignment]
    return [pkg.path] if pkg.is_zip else [pkg.path / m for m in sorted(pkg.members.values())]


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path, *,
          require_all_quarters: bool = True) -> BuildReport:
    """Read every Diary year of `survey.raw` and write `cex_diary_daily.parquet` year by year
    (`require_all_quarters=False` reads partial BLS years, e.g. the real 2020 test slice)."""
    started = time.perf_counter()
    raw_dir = Path(raw_dir)
    source = survey.source_url or SOURCE_URL
    release, inputs = _release_table(survey, raw_dir)
    plan = sources(survey, raw_dir, source)
    counts: dict[str, int] = {}

    def years():
        for year, provider, handle in plan:
            # handle: a Path (ICPSR) or a DiaryPackage (BLS)
            frames = (read_icpsr_year(handle, year, source) if provider == "ICPSR"  # type: ignore[arg-type]
                      else read_bls_year(handle, source, require_all_quarters))  # type: ignore[arg-type]
            daily, c = build_year(frames, year, provider, release)
            for k, v in c.items():
                counts[k] = counts.get(k, 0) + v
            yield daily

    target = Path(out_dir) / f"{OUTPUT_NAME}.parquet"
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        rows = write_parquet_chunks(tmp, _aligned(years()), str(target))
    for _, provider, handle in plan:
        inputs += _inputs(provider, handle)
    fingerprints = {str(p): input_sha256(p) for p in inputs}
    return finish_report(survey, {OUTPUT_NAME: target},
                         {OUTPUT_NAME: rows, "cex_diary_years": len(plan), **counts},
                         fingerprints, started)


def _aligned(frames):
    """Every year with the first year's columns, in its order (years lacking a column get NA)."""
    columns = None
    for frame in frames:
        if columns is None:
            columns = list(frame.columns)
        extra = [c for c in frame.columns if c not in columns]
        if extra:
            raise DataError(f"CEX Diary: columns {extra} appear only in some years")
        yield frame.reindex(columns=columns)
