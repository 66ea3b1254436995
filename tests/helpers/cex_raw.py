"""Hand-built CE raw files for the CEX task tests: a few consumer units written into Interview
FMLI members (the generator's header for the quarter, every other field a plain default) and
Diary FMLD/MEMD/EXPD members, plus a constant macro context. The values that matter are the
ones each test writes; the tests compute their expectations from those, by hand."""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile
from pathlib import Path

import pandas as pd

from hhx.surveys.macro.fred_qd import CATEGORY_CPI_MACRO_COLUMNS, CORE_MACRO_COLUMNS
from hhx.surveys.synthetic.cex import diary as dsynth
from hhx.surveys.synthetic.cex import interview as isynth

CATEGORY_SOURCES = {  # cons_X <- FMLI summary base
    "cons_food": "FOOD", "cons_alcohol": "ALCBEV", "cons_housing": "HOUS",
    "cons_apparel": "APPAR", "cons_transport": "TRANS", "cons_health": "HEALTH",
    "cons_entertainment": "ENTERT", "cons_personal_care": "PERSCA", "cons_read": "READ",
    "cons_education": "EDUCA", "cons_tobacco": "TOBACC", "cons_misc": "MISC",
}  # fmt: skip
# Non-durables = food + alcohol + utilities + household operations + public transport + gasoline
# + personal care + tobacco + misc + apparel + health + reading (spec 1); the rest of the twelve
# categories (housing beyond utilities and operations, vehicles, entertainment, education) are
# durables.
CHARACTERISTICS = {
    "AGE_REF": "45", "AGE2": "NA", "BLS_URBN": "1", "CUTENURE": "1", "EDUC_REF": "15",
    "EDUCA2": "NA", "FAM_SIZE": "3", "FAM_TYPE": "3", "MARITAL1": "1", "PERSLT18": "1",
    "RACE2": "NA", "REF_RACE": "1", "REGION": "3", "SEX_REF": "1", "SEX2": "NA", "STATE": "06",
}  # fmt: skip


def spending(categories: dict[str, float], *, util: float = 0.0, housop: float = 0.0,
             pubtra: float = 0.0, gasmo: float = 0.0, cash: float = 0.0, lifins: float = 0.0,
             retpen: float = 0.0, pq: dict[str, float] | None = None) -> dict[str, str]:
    """FMLI summary fields of one interview: `categories` (cons_* -> current-quarter amount) and
    the parts the Parker total and non-durables need; TOTEXP adds them up as CE does; `pq`
    (FMLI base -> amount) fills previous-quarter fields."""
    cq = {base: 0.0 for base in isynth.SUMMARY_BASES}
    for column, amount in categories.items():
        cq[CATEGORY_SOURCES[column]] = amount
    cq.update(UTIL=util, HOUSOP=housop, PUBTRA=pubtra, GASMO=gasmo, CASHCO=cash, LIFINS=lifins,
              RETPEN=retpen, PERINS=lifins + retpen)
    cq["FDHOME"] = cq["FOOD"]
    cq["TOTEXP"] = sum(cq[CATEGORY_SOURCES[c]] for c in CATEGORY_SOURCES) + cash + lifins + retpen
    out = {f"{base}CQ": f"{value:g}" for base, value in cq.items()}
    out.update({f"{base}PQ": "0" for base in isynth.SUMMARY_BASES})
    for base, value in (pq or {}).items():
        out[f"{base}PQ"] = f"{value:g}"
    out["GROCERCQ"], out["GROCERPQ"] = out["FDHOMECQ"], out["FDHOMEPQ"]
    out["TFOODTOC"] = out["TFOODTOP"] = "0"
    return out


def fmli_row(newid: str, year: int, month: int, income: float, fields: dict[str, str],
             **characteristics: str) -> dict[str, str]:
    row = {"NEWID": newid, "FINLWT21": "20000.5", "QINTRVMO": f"{month:02d}",
           "QINTRVYR": str(year), "INTERI": newid[-1], "CUID": newid[:-1],
           "FINCBTXM": f"{income:g}", "FINCBTAX": f"{income:g}", "FSALARYM": "0",
           "FSALARYX": "0", **CHARACTERISTICS, **characteristics, **fields}
    return row


def fmli_csv(rows: list[dict[str, str]], layout_q: int) -> bytes:
    columns = isynth.fmli_columns(layout_q)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        values = []
        for column in columns:
            if column in row:
                values.append(row[column])
            elif column.endswith("_") or "_" in column[4:]:  # CE flag companions
                values.append("D")
            else:
                values.append("NA" if column.startswith("WTREP") else "0")
        writer.writerow(values)
    return buf.getvalue().encode("ascii")


def write_package(folder: Path, year: int, quarters: dict[int, list[dict[str, str]]],
                  extra: dict[str, bytes] | None = None) -> Path:
    """intrvwYY.zip with the FMLI members of quarters q_index -> rows (header-only members for
    the package's other quarters) and any `extra` members."""
    yy = year % 100
    members = {isynth._qi(year, 1): f"fmli{yy:02d}1x", isynth._qi(year, 2): f"fmli{yy:02d}2",
               isynth._qi(year, 3): f"fmli{yy:02d}3", isynth._qi(year, 4): f"fmli{yy:02d}4",
               isynth._qi(year + 1, 1): f"fmli{(year + 1) % 100:02d}1"}
    path = folder / f"intrvw{yy:02d}.zip"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for q, stem in members.items():
            layout_q = min(q, isynth._qi(year, 4))
            zf.writestr(f"intrvw{yy:02d}/{stem}.csv", fmli_csv(quarters.get(q, []), layout_q))
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return path


def csv_bytes(columns: list[str], rows: list[dict[str, str]]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row.get(c, "NA") for c in columns])
    return buf.getvalue().encode("ascii")


def crosswalk(folder: Path, years: range) -> Path:
    """release_cex.csv with a release each September after the data year."""
    path = folder / "release_cex.csv"
    folder.mkdir(parents=True, exist_ok=True)
    rows = [f"{y},{y + 1}-09-10,Official release date,https://www.bls.gov/cex/,test"
            for y in years]
    path.write_text("cex_data_year,release_date,source,source_url,comments\n"
                    + "\n".join(rows) + "\n")
    return path


def macro_frame(first_year: int, last_year: int) -> pd.DataFrame:
    """A macro context with constant values for every origin quarter of the years: lag k of
    every series is k + 0.25 (e.g. lag4 4.25), five-year values 7.5."""
    rows = []
    for year in range(first_year, last_year + 1):
        for quarter in (1, 2, 3, 4):
            q = year * 4 + quarter
            row = {"eligible_origin_q_index": q, "macro_reference_q_index": q - 1}
            for column in [*CORE_MACRO_COLUMNS, *CATEGORY_CPI_MACRO_COLUMNS]:
                row[column] = 7.5 if "5y" in column else int(column[-1]) + 0.25
            rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Diary


def diary_package(folder: Path, year: int, weeks: list[dict], members: list[dict],
                  purchases: list[dict]) -> Path:
    """diaryYY.zip (BLS layout of the year) from FMLD week, MEMD member and EXPD purchase dicts
    (raw field -> text); every quarter 1-4 gets its members (empty ones header-only)."""
    yy = year % 100
    path = folder / f"diary{yy:02d}.zip"
    folder.mkdir(parents=True, exist_ok=True)
    families = {"fmld": (dsynth.fmld_columns(year), weeks),
                "memd": (dsynth.memd_columns(year), members),
                "expd": (dsynth.expd_columns(year), purchases)}
    with zipfile.ZipFile(path, "w") as zf:
        for q in (1, 2, 3, 4):
            for family, (columns, rows) in families.items():
                chosen = [{k: v for k, v in r.items() if k != "quarter"} for r in rows
                          if r.get("quarter", 1) == q]
                data = dsynth._csv(columns, [[r.get(c, "") for c in columns] for r in chosen])
                zf.writestr(f"diary{yy:02d}/{family}{yy:02d}{q}.csv", data)
    return path


def qredate(day: dt.date, seq: int, four_digit_year: bool) -> str:
    weekday = day.isoweekday() % 7 + 1
    year = f"{day.year}" if four_digit_year else f"{day.year % 100:02d}"
    return f"{seq}{weekday}{day.month:02d}{day.day:02d}{year}"
