"""The ICPSR CE Diary archives of 1982-1989 (original fixed-width ASCII): which member holds which
file family and quarter, the documentation each archive must carry, and the fixed-width reader.

Facts (spec 00_common.md 1.2-1.3; the reference's scripts/1_preprocessing/cex_diary.py):
- archives `ICPSR_08599-V1.zip` (1982 and 1983), `ICPSR_08628-V1.zip` (1984), `_08905` (1985),
  `_09114` (1986), `_09333` (1987), `_09570` (1988), `_09714` (1989); members
  `ICPSR_<id>/DS<nnnn>/<id>-<nnnn>-Data.txt` numbered quarter by quarter, within a quarter FMLY,
  MEMB, EXPD (and DTBD from 1986); 08599 numbers 1982's twelve members first, then 1983's;
- logical record widths per archive and family (below); one exception: 1986's Q4 EXPD member
  (DS0015) is stored as 80-byte lines whose bytes 39-80 must be blank (then its first 38 bytes
  are read);
- each archive holds `ICPSR_<id>/<id>-descriptioncitation.html` naming its survey year
  ("Consumer Expenditure Survey, 1986"), `ICPSR_<id>/<id>-Documentation.txt` (the field
  documentation) and `ICPSR_<id>/<id>-manifest.txt`, whose line per member gives the file name,
  record length and record count; the member's lines must equal that count;
- field positions: the data table `cex_diary_icpsr_layout.csv` (the reference's frozen maps,
  which cite each archive's Documentation.txt); BLS_URBN is not in the 1982-83 files (all urban).
Values are read as text, stripped; blank fields are missing.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.surveys.cex.members import read_bytes

SOURCE_URL = "https://www.icpsr.umich.edu (CE Diary studies 8599, 8628, 8905, 9114, 9333, 9570, 9714)"
LAYOUT_FILE = Path(__file__).with_name("cex_diary_icpsr_layout.csv")
FIELDS = {
    "FMLY": ["NEWID", "AGE_REF", "BLS_URBN", "CUTENURE", "EDUC_REF", "EMPLTYP1", "FAM_SIZE",
             "FINCBEFX", "FINLWT21", "FSS_RRX", "FSUPPX", "INCLASS", "MARITAL1", "PERSLT18",
             "PICK_UP", "REF_RACE", "REGION", "RESPSTAT", "SEX_REF", "SMSASTAT", "STRTDAY",
             "STRTMNTH", "STRTYEAR", "WEEKI", "WEEKN"],
    "MEMB": ["NEWID", "MEMBNO", "ANYRAIL", "ANYSSINC", "US_SUPP", "SS_RRX", "SUPPX", "CU_CODE1",
             "WHYNOWRK"],
    "EXPD": ["NEWID", "COST", "QREDATE", "UCC"],
}
WIDE_1986_Q4_EXPD = 80  # physical line width of ICPSR_09114's DS0015


@dataclass(frozen=True)
class Archive:
    name: str
    study: str
    years: tuple[int, ...]
    widths: dict[str, int]  # family -> logical record width, in member order within a quarter

    @property
    def root(self) -> str:
        return f"ICPSR_{self.study}"

    def year_text(self) -> str:
        years = "-".join(str(y) for y in self.years) if len(self.years) > 1 else str(self.years[0])
        suffix = ":  Diary Survey" if self.years[0] <= 1985 else ""
        return f"Consumer Expenditure Survey, {years}{suffix}"

    def members(self) -> list[tuple[str, int, str, int]]:
        """(member path, survey year, family, quarter) in DS order."""
        out, n = [], 0
        for year in self.years:
            for quarter in (1, 2, 3, 4):
                for family in self.widths:
                    n += 1
                    out.append((f"{self.root}/DS{n:04d}/{self.study}-{n:04d}-Data.txt", year,
                                family, quarter))
        return out

    def physical_width(self, member: str, family: str) -> int:
        if self.study == "09114" and member.endswith("/DS0015/09114-0015-Data.txt"):
            return WIDE_1986_Q4_EXPD
        return self.widths[family]

    def documentation(self) -> dict[str, str]:
        return {"description": f"{self.root}/{self.study}-descriptioncitation.html",
                "documentation": f"{self.root}/{self.study}-Documentation.txt",
                "manifest": f"{self.root}/{self.study}-manifest.txt"}


_OLD = {"FMLY": 0, "MEMB": 245, "EXPD": 40}
ARCHIVES: dict[str, Archive] = {
    a.name: a
    for a in (
        Archive("ICPSR_08599-V1.zip", "08599", (1982, 1983), {**_OLD, "FMLY": 1240}),
        Archive("ICPSR_08628-V1.zip", "08628", (1984,), {**_OLD, "FMLY": 1485}),
        Archive("ICPSR_08905-V1.zip", "08905", (1985,), {**_OLD, "FMLY": 1252}),
        Archive("ICPSR_09114-V1.zip", "09114", (1986,),
                {"FMLY": 1526, "MEMB": 243, "EXPD": 38, "DTBD": 28}),
        Archive("ICPSR_09333-V1.zip", "09333", (1987,),
                {"FMLY": 1526, "MEMB": 243, "EXPD": 38, "DTBD": 28}),
        Archive("ICPSR_09570-V1.zip", "09570", (1988,),
                {"FMLY": 1526, "MEMB": 263, "EXPD": 38, "DTBD": 28}),
        Archive("ICPSR_09714-V1.zip", "09714", (1989,),
                {"FMLY": 1533, "MEMB": 263, "EXPD": 38, "DTBD": 28}),
    )
}
ARCHIVE_OF_YEAR = {year: a for a in ARCHIVES.values() for year in a.years}
ICPSR_YEARS = tuple(sorted(ARCHIVE_OF_YEAR))


@cache
def layout() -> dict[tuple[int, str], list[tuple[str, int, int] | tuple[str, None, None]]]:
    """(year, family) -> [(field, 0-based start, end exclusive)] from the data table."""
    out: dict[tuple[int, str], list] = {}
    with LAYOUT_FILE.open(newline="") as fh:
        rows = csv.DictReader(line for line in fh if not line.startswith("#"))
        for row in rows:
            key = (int(row["source_year"]), row["file_family"])
            start = int(row["start"]) - 1 if row["start"] else None
            end = int(row["end"]) if row["end"] else None
            out.setdefault(key, []).append((row["field"], start, end))
    for (year, family), fields in out.items():
        if [f for f, _, _ in fields] != FIELDS[family]:
            raise DataError(f"{LAYOUT_FILE}: fields of {year} {family} are not {FIELDS[family]}")
    return out


def find_archives(path: Path) -> dict[int, Path]:
    """Survey year -> archive path for the ICPSR zips at `path` (a zip or a folder of them)."""
    candidates = [path] if path.is_file() else sorted(path.glob("ICPSR_*-V1.zip"))
    out: dict[int, Path] = {}
    for candidate in candidates:
        archive = ARCHIVES.get(candidate.name)
        if archive is None:
            raise DataError(f"{candidate}: not one of the ICPSR CE Diary archives "
                            f"({', '.join(ARCHIVES)}); keep the ICPSR file names")
        for year in archive.years:
            out[year] = candidate
    return out


def validate_archive(path: Path, source: str = SOURCE_URL) -> dict[str, int]:
    """The archive's documentation and manifest (module notes); member -> manifest count."""
    import zipfile

    archive = ARCHIVES[path.name]
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
    except zipfile.BadZipFile:
        raise DataError(f"{path}: not a readable zip archive; download it again from "
                        f"{source}") from None
    docs = archive.documentation()
    for member in docs.values():
        if member not in names:
            raise DataError(f"{path}: member {member} is missing; keep the whole ICPSR archive "
                            f"as downloaded ({source})")
    text = read_bytes(path, docs["description"], f"{path}:{docs['description']}",
                      source).decode("latin-1")
    if archive.year_text().casefold() not in text.casefold():
        raise DataError(f"{path}:{docs['description']}: does not name "
                        f"{archive.year_text()!r}; is this the right study?")
    manifest = read_bytes(path, docs["manifest"], f"{path}:{docs['manifest']}",
                          source).decode("latin-1")
    counts = {}
    for member, _, family, _ in archive.members():
        if member not in names:
            raise DataError(f"{path}: member {member} ({family}) is missing; download the "
                            f"archive again from {source}")
        filename = member.rsplit("/", 1)[-1]
        found = re.search(rf"^\s*{re.escape(filename)}\s+(\d+)\s+([\d,]+)\s+", manifest,
                          flags=re.MULTILINE)
        if found is None:
            raise DataError(f"{path}:{docs['manifest']}: no line for {filename}")
        width = int(found.group(1))
        if width != archive.physical_width(member, family):
            raise DataError(f"{path}:{docs['manifest']}: {filename} has record length {width}, "
                            f"expected {archive.physical_width(member, family)} ({family})")
        counts[member] = int(found.group(2).replace(",", ""))
    return counts


def read_member(path: Path, member: str, family: str, year: int, expected_lines: int,
                source: str = SOURCE_URL) -> pd.DataFrame:
    """One fixed-width member -> its fields as stripped text (blank -> missing)."""
    archive = ARCHIVES[path.name]
    label = f"{path}:{member}"
    data = read_bytes(path, member, label, source)
    lines = data.splitlines()
    if len(lines) != expected_lines:
        raise DataError(f"{label}: {len(lines)} records, but the archive's manifest lists "
                        f"{expected_lines}; the file is truncated or altered, download it again")
    width = archive.physical_width(member, family)
    if lines and (not data.endswith(b"\n") or len(lines[-1]) < archive.widths[family]):
        raise DataError(f"{label}: ends early at line {len(lines)} (the last record has "
                        f"{len(lines[-1])} of {width} bytes); download the archive again")
    if width == WIDE_1986_Q4_EXPD:
        tail = next((i for i, line in enumerate(lines) if line[38:].strip(b" ")), None)
        if tail is not None:
            raise DataError(f"{label}: line {tail + 1} has data after byte 38 (bytes 39-80 must "
                            "be blank in this member)")
    # One byte matrix, a column slice per field (fast for the million-line EXPD members).
    fields = layout()[(year, family)]
    span = max(end for _, _, end in fields if end is not None)
    buffer = b"".join(line[:span].ljust(span) for line in lines)
    matrix = np.frombuffer(buffer, dtype=np.uint8).reshape(len(lines), span)
    out = {}
    for field, start, end in fields:
        if start is None or end is None:  # both or neither (layout)
            out[field] = pd.Series(pd.NA, index=range(len(lines)), dtype="string")
            continue
        cells = np.ascontiguousarray(matrix[:, start:end]).view(f"S{end - start}").ravel()
        values = pd.Series(np.char.decode(cells, "latin-1"), dtype="string").str.strip()
        out[field] = values.mask(values == "")
    return pd.DataFrame(out)
