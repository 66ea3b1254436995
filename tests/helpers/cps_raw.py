"""Hand-made IPUMS CPS extracts for the CPS task tests: a few persons as raw rows of the official
149-column csv.gz, built into `cps_basic.parquet` by the real survey builder.

`person(...)` is a default employed adult with IPUMS codes (NIU codes where a question does not
apply); tests override the variables that matter to them.
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path
from typing import Any

import pandas as pd

from hhx.config import SurveyConfig
from hhx.surveys.cps.ipums import EXTRACT_COLUMNS, build
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.surveys.synthetic.cps.ipums import DWS_COLUMNS

_NIU_99 = [
    "UCAPLAST", "UCNOMAIN", "UCNORECLAST", "UCNORECWK", "UCRECLAST", "UCRECWK", "UCUNION",
    "UCWHYNOELG", "UCSUPFLG", "ASIAN", "DURUNEM2", "EMPSAME", "PAIDEMP1", "PAIDEMP1N", "PAIDEMP2",
    "PAIDEMP2N", "PROFCERT", "STATECERT", "JOBCERT", "WRKOFFER", "NILFACT", "ACTSAME", "EDCYC",
    "EDDIPGED", "EDHGCGED", "WKSWORKORG", "OTPAY",
]  # fmt: skip
_ZERO = [
    "COUNTY", "CBSASZ", "MARBASECIDH", "SUBMINWAGE", "SPLOC", "SPRULE", "NCHILD", "NCHLT5",
    "YRIMMIG", "HISPAN", "ABSENT", "WHYUNEMP", "WHYABSNT", "WHYPTLWK", "WNFTLOOK", "EDUC99",
    "SCHLCOLL", "MARBASECIDP", "PAIDHOUR", "UNION", "ELIGORG",
]  # fmt: skip
DWS_NIU = {"DWYEARS": 99.99, "DWWEEKL": 9999.99, "DWWAGEL": 999.99, "DWWEEKC": 9999.99,
           "DWWAGEC": 999.99, "DWHRSWKC": 999, "DWWKSUN": 999, "DWIND": 0, "DWIND1990": 0,
           "DWOCC": 0, "DWOCC1990": 999, "DWRESP": 0}  # fmt: skip
BASE: dict[str, Any] = {
    **dict.fromkeys(_NIU_99, 99),
    **dict.fromkeys(_ZERO, 0),
    **{c: DWS_NIU.get(c, 99) for c in DWS_COLUMNS},
    "SERIAL": 1, "HWTFINL": 1500.0, "ASECFLAG": "", "MISH": 1, "NUMPREC": 1, "HHTENURE": 1,
    "GQTYPE": 1, "HHINTYPE": 1, "REGION": 21, "STATEFIP": 39, "METFIPS": 99998, "METRO": 2,
    "FAMINC": 600, "HRHHID": 1, "HRHHID2": 1, "HUHHNUM": 1, "HRSAMPLE": "0101", "HHRESPLN": 1,
    "INTTYPE": 1, "PERNUM": 1, "WTFINL": 1500.0, "EARNWEEK2": 999999.99, "HOURWAGE2": 999.99,
    "RELATE": 101, "AGE": 40, "SEX": 2, "RACE": 100, "MARST": 6, "POPSTAT": 1, "VETSTAT": 1,
    "FAMSIZE": 1, "FAMUNIT": 1, "FTYPE": 1, "FAMREL": 1, "BPL": 9900, "CITIZEN": 1,
    "NATIVITY": 1, "EMPSTAT": 10, "LABFORCE": 2, "OCC": 430, "OCC2010": 430, "OCC1990": 22,
    "IND1990": 732, "OCC1950": 290, "IND": 7870, "IND1950": 888, "CLASSWKR": 22,
    "UHRSWORKT": 40, "UHRSWORK1": 40, "UHRSWORK2": 999, "AHRSWORKT": 40, "AHRSWORK1": 40,
    "AHRSWORK2": 999, "DURUNEMP": 999, "WNLOOK": 999, "WKSTAT": 11, "MULTJOB": 1, "NUMJOB": 1,
    "EDUC": 111, "DIFFHEAR": 1, "DIFFEYE": 1, "DIFFREM": 1, "DIFFPHYS": 1, "DIFFMOB": 1,
    "DIFFCARE": 1, "DIFFANY": 1, "HOURWAGE": 999.99, "EARNWEEK": 9999.99, "UHRSWORKORG": 999,
}  # fmt: skip
UNEMPLOYED = {"EMPSTAT": 21, "LABFORCE": 2, "WKSTAT": 50, "DURUNEMP": 6, "WHYUNEMP": 2,
              "WNFTLOOK": 11, "UHRSWORKT": 999, "UHRSWORK1": 999, "AHRSWORKT": 999,
              "AHRSWORK1": 999, "MULTJOB": 0, "NUMJOB": 0}  # fmt: skip
RETIRED = {"EMPSTAT": 36, "LABFORCE": 1, "WKSTAT": 99, "CLASSWKR": 0, "OCC": 0, "OCC2010": 9999,
           "IND1990": 0, "IND": 0, "UHRSWORKT": 999, "UHRSWORK1": 999, "AHRSWORKT": 999,
           "AHRSWORK1": 999, "MULTJOB": 0, "NUMJOB": 0}  # fmt: skip


def person(cpsidp: int, year: int, month: int, mish: int, **over: Any) -> dict[str, Any]:
    """One person-month record; CPSIDV follows CPSIDP unless given."""
    row = {**BASE, "YEAR": year, "MONTH": month, "MISH": mish, "CPSIDP": cpsidp,
           "CPSID": cpsidp // 100 * 100, "CPSIDV": cpsidp * 10 + 1}  # fmt: skip
    row.update(over)
    missing = set(EXTRACT_COLUMNS) - set(row)
    if missing:
        raise AssertionError(f"test record lacks {sorted(missing)}")
    return row


def write_extract(path: Path, rows: list[dict[str, Any]]) -> Path:
    """The rows as an IPUMS csv.gz (quoted header and string codes, as the extract has them)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        w.writerow(EXTRACT_COLUMNS)
        for row in rows:
            w.writerow(["" if row[c] == "" else row[c] for c in EXTRACT_COLUMNS])
    return path


def build_intermediate(folder: Path, rows: list[dict[str, Any]]) -> Path:
    """Raw rows -> folder/cps_basic.parquet through the survey builder; returns folder."""
    write_extract(folder / "raw" / "cps_basic.csv.gz", rows)
    build(SurveyConfig(name="cps", raw={"cps_basic": "cps_basic.csv.gz"}, chunk_rows=10_000),
          folder / "raw", folder)  # fmt: skip
    return folder


def macro_for(*quarters: int) -> pd.DataFrame:
    """A macro context with the 20 core columns for the given origin quarters (year*4 + q)."""
    rows = [
        {
            "eligible_origin_q_index": q,
            "macro_reference_q_index": q - 1,
            **{c: 1.0 + i / 10 + (q % 7) / 100 for i, c in enumerate(CORE_MACRO_COLUMNS)},
        }
        for q in quarters
    ]
    return pd.DataFrame(rows)


def quarter(year: int, month: int) -> int:
    return year * 4 + (month - 1) // 3 + 1


GOLDEN = Path(__file__).parents[1] / "golden"


def check_golden(name: str, system: str, user: str) -> None:
    """Compare a rendered prompt with tests/golden/<name>.txt (HHX_UPDATE_GOLDEN=1 rewrites it,
    for a deliberate wording change)."""
    import os

    text = f"SYSTEM:\n{system}\n\nUSER:\n{user}\n"
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("HHX_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} missing; run with HHX_UPDATE_GOLDEN=1 once and review it"
    assert text == path.read_text(encoding="utf-8")
