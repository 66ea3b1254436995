"""CEX Interview packages: find the `intrvwYY.zip` packages (or folders), check that each holds
its quarters, and read an FMLI member's wanted columns as text.

Input `survey.raw.interview`: a folder of annual packages `intrvwYY.zip` (YY = 80, 81, 84..99,
00..24; any subset is read, the reference needs all 43), a single package, or unzipped package
folders `intrvwYY/`. Only the consumer-unit
members `fmli<YYQ>[x].csv` are read, at any folder depth (e.g. `intrvw21/fmli212.csv`); YYQ is
the collection quarter ("token"); the package year is the zip's YY. A package holds its year's
four quarters and the next year's first (`fmli221.csv` in `intrvw21.zip`), so each first quarter
is published twice (the later copy as `fmliYY1x.csv`). MTBI/MEMI/ITBI/EXPN members are not read,
except the two rebate addenda (hhx.surveys.cex.interview_addenda). Members are read one at a
time, only the needed columns, as text (blank, "." and "NA" are missing).

Damaged packages never build: package YY must hold the FMLI members of its quarters 2-4 and of
the next year's first quarter (when that has data: not for 1981), and its own first quarter
(`fmliYY1x`, which the year before's package also publishes) where no earlier package exists
(1980, 1984); a missing one is an error naming the quarter and the members present. A member
the zip cannot inflate, or one that ends early (no line break after the last record, or a last
record with fewer fields than the header), is an error naming the member and its last line
(hhx.surveys.cex.members). The reference checks neither.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hhx.errors import DataError
from hhx.surveys.cex.interview_variables import SOURCE_URL, full_year, qi
from hhx.surveys.cex.members import check_csv_complete, read_bytes

_MEMBER_RE = re.compile(r"(?:^|/)fmli(\d{2})([1-4])(x?)\.csv$", re.IGNORECASE)
_PACKAGE_RE = re.compile(r"^intrvw(\d{2})(?:\.zip)?$", re.IGNORECASE)


# --------------------------------------------------------------------------------------------
# Packages and members


@dataclass(frozen=True)
class Member:
    """One `fmliYYQ[x].csv` of a package."""

    package_year: int
    package_path: Path
    name: str  # path inside the zip, or relative to the package folder
    token: str  # YYQ of the collection quarter

    @property
    def is_zip(self) -> bool:
        return self.package_path.is_file()

    @property
    def label(self) -> str:
        if self.is_zip:
            return f"{self.package_path}:{self.name}"
        return str(self.package_path / self.name)

    @property
    def q_index(self) -> int:
        return qi(full_year(int(self.token[:2])), int(self.token[2]))


def _members(year: int, path: Path, names: Iterable[str]) -> list[Member]:
    found = []
    for name in sorted(names):
        m = _MEMBER_RE.search(name.replace("\\", "/"))
        if m:
            found.append(Member(year, path, name, m.group(1) + m.group(2)))
    return found


def _package(path: Path, year: int, source: str) -> list[Member]:
    if path.is_file():
        try:
            with zipfile.ZipFile(path) as zf:
                names = [i.filename for i in zf.infolist() if not i.is_dir()]
        except zipfile.BadZipFile:
            raise DataError(
                f"{path}: not a readable zip archive; download it again from {source}"
            ) from None
    else:
        names = [str(p.relative_to(path)) for p in sorted(path.rglob("*")) if p.is_file()]
    members = _members(year, path, names)
    if not members:
        raise DataError(
            f"{path}: no fmliYYQ.csv member (CE Interview consumer-unit file); download "
            f"intrvw{year % 100:02d}.zip again from {source}"
        )
    _check_quarters(path, year, members, source)
    return members


def _covered(q: int) -> bool:
    """Quarters with CE Interview data (the dictionary's 1980-81 and 1984 on)."""
    return qi(1980, 1) <= q <= qi(1981, 4) or q >= qi(1984, 1)


def _check_quarters(path: Path, year: int, members: list[Member], source: str) -> None:
    """A package holds its year's quarters 2-4 and the next year's first (when that has data);
    its own first quarter (`fmliYY1x`, also in the year before's package) is needed only when
    no earlier package can hold it (1980, 1984)."""
    have = {m.q_index for m in members}
    wanted = [qi(year, q) for q in (2, 3, 4)]
    if _covered(qi(year + 1, 1)):
        wanted.append(qi(year + 1, 1))
    if not _covered(qi(year - 1, 4)):
        wanted.insert(0, qi(year, 1))
    missing = [q for q in wanted if q not in have]
    if missing:
        q = missing[0]
        y, n = (q - 1) // 4, (q - 1) % 4 + 1
        stem = f"fmli{y % 100:02d}{n}{'x' if n == 1 and y == year and year > 1984 else ''}"
        held = ", ".join(sorted(m.name.rsplit("/", 1)[-1] for m in members))
        raise DataError(
            f"{path}: the FMLI member of {y}Q{n} ({stem}.csv) is missing (the package holds "
            f"{held}); download intrvw{year % 100:02d}.zip again from {source}"
        )


def find_packages(path: Path, source: str = SOURCE_URL) -> dict[int, list[Member]]:
    """Package year -> its FMLI members, for an `intrvwYY.zip`, an `intrvwYY/` folder, or a
    folder holding those."""
    if not path.exists():
        raise DataError(
            f"{path}: CEX Interview packages not found; download the Interview CSV packages "
            f"(intrvwYY.zip) from {source} and place them there"
        )
    named = _PACKAGE_RE.match(path.name)
    if named:
        return {full_year(int(named.group(1))): _package(path, full_year(int(named.group(1))),
                                                         source)}
    if path.is_file():
        raise DataError(
            f"{path}: cannot tell the package year; keep the BLS name intrvwYY.zip ({source})"
        )
    packages: dict[int, list[Member]] = {}
    seen: dict[int, Path] = {}
    for child in sorted(path.iterdir()):
        m = _PACKAGE_RE.match(child.name)
        if not m:
            continue
        year = full_year(int(m.group(1)))
        if year in seen:
            raise DataError(
                f"Interview package {year} is given twice ({seen[year]}, {child}); keep one copy"
            )
        seen[year] = child
        packages[year] = _package(child, year, source)
    if not packages:
        raise DataError(
            f"{path}: no CEX Interview package (intrvwYY.zip or an unzipped intrvwYY folder "
            f"with fmliYYQ.csv files) found; download them from {source}"
        )
    return packages


def _clean_name(name: str) -> str:
    return str(name).strip().strip('"').removeprefix("\ufeff").removeprefix("ï»¿").upper()


def read_member(member: Member, wanted: Iterable[str]) -> pd.DataFrame:
    """The wanted columns of one member as text (blanks kept as ""), upper-case names."""
    wanted_set = set(wanted)
    data = read_bytes(member.package_path, member.name, member.label, SOURCE_URL)
    check_csv_complete(data, member.label, SOURCE_URL)
    try:
        with io.BytesIO(data) as fh:
            raw = pd.read_csv(
                fh,
                dtype=str,
                keep_default_na=False,
                encoding="latin-1",
                usecols=lambda c: _clean_name(c) in wanted_set,
            )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{member.label}: unreadable CSV ({str(exc).splitlines()[0]})") from None
    raw.columns = [_clean_name(c) for c in raw.columns]
    if raw.columns.duplicated().any():
        raise DataError(f"{member.label}: column {raw.columns[raw.columns.duplicated()][0]} "
                        "repeats; use the unmodified BLS file")
    return raw
