"""CEX Interview (BLS CE public-use FMLI files) -> `cex_interview.parquet`, one row an interview.

Facts: shared/spec/00_common.md 1.1 (package names), 1.3 (CEX Interview row), 1.5, 2 (release
year); 10_tasks_cons_house_income.md 1-5 (the columns the cons_cex_* task builders read).

Input `survey.raw.interview`: a folder of annual packages `intrvwYY.zip` (YY = 80, 81, 84..99,
00..24; any subset is read, the reference needs all 43), a single package, or unzipped package
folders `intrvwYY/`. Only the consumer-unit
members `fmli<YYQ>[x].csv` are read, at any folder depth (e.g. `intrvw21/fmli212.csv`); YYQ is
the collection quarter ("token"); the package year is the zip's YY. A package holds its year's
four quarters and the next year's first (`fmli221.csv` in `intrvw21.zip`), so each first quarter
is published twice (the later copy as `fmliYY1x.csv`). MTBI/MEMI/ITBI/EXPN members are not read,
except the two rebate addenda below. Members are read one at a time, only the needed columns, as
text (blank, "." and "NA" are missing).

Output: one row per interview record (newid, interview_year, interview_month), also unique on
(cex_panel_id, interview_year, interview_month) (else DataError) and sorted by the record key
(newid, interview_year, interview_month), the reference's order:
- ids and provenance: `newid` (8 digits), `cu_id` = `cu_id_raw` (NEWID without its last digit),
  `cex_sample_design`, `cex_panel_id` = "<design>:<cu_id_raw>", `cex_source_package`,
  `cex_source_member`, `cex_quarter_token`, `cex_overlap_versions` (packages holding the record),
  `cex_first_release_year` (earliest of them: keys the release date, spec 2),
  `cex_retained_package_year` (latest: its copy is the one kept), `release_date` and
  `release_date_source` (from the optional crosswalk `survey.raw.release_crosswalk`, a CSV with
  cex_data_year, release_date [, source] as the reference's release_cex.csv; NA without it);
- time: `interview_year` (2-digit years: >= 80 -> 19YY else 20YY), `interview_month`, `quarter`,
  `year_quarter` ("2021Q2"), `q_index` = year*4 + quarter, `interview_month_index` = year*12 +
  month, `interview_number` (INTERI, else the last digit of NEWID), `interview_position_harmonized`
  (interview years to 2014 number the public interviews 2-5 -> 1-4; from 2015 1-4 are kept);
- characteristics from the first present source of spec 1.5 (weight, fam_size, fam_type, state,
  region, bls_urbn, n_kids, age_ref, age2, sex_ref, sex2, marital1, tenure, race_ref, race2,
  educ_ref, educ2, income_before_tax, salary) and `n_adults` = max(fam_size - n_kids, 0);
- labels (pandas categoricals): `region_label`, `bls_urbn_label`, `sex_ref_label`, `sex2_label`,
  `marital1_label`, `tenure_harmonized`, `race_ref_harmonized`, `race2_harmonized`,
  `educ_ref_harmonized`, `educ2_harmonized` (ordered). Codes come from the CE data dictionary
  (union over its years); a code outside it is a DataError naming package, member, column, code.
  Race keeps the code number (the reference's choice: 1984-2003 code 4 "Asian or Pacific
  Islander" -> Asian, 1996-2003 code 5 "Other" -> Pacific Islander); education maps the 1980-95
  codes 1-7 and the 1996+ codes 0, 10-17 onto 8 levels; EDUCA2 code 0 in 1980-81 means "don't
  know" (NA);
- `state`: 2-digit FIPS text. The reference's frozen legacy -> FIPS map (the dictionary's 1980-81
  codes, e.g. 35 = Wisconsin, 54 = Virginia, 43 = Missouri) is applied to every year, as the
  reference does (so a 1984+ code 35 New Mexico or 54 West Virginia becomes 55 or 51), then
  codes outside its canonical 48-code list (e.g. 38, 50, 56) -> NA. No cons_cex task reads
  `state`;
- spending, each `cons_X` = X current quarter + X previous quarter (sum with at least one
  present): `cons_total` (TOTEXP), `cons_food`, `cons_alcohol`, `cons_housing`, `cons_apparel`,
  `cons_transport`, `cons_health`, `cons_entertainment`, `cons_personal_care`, `cons_read`,
  `cons_education`, `cons_tobacco`, `cons_misc`, `cons_cash_contrib`, `cons_life_insurance`,
  `cons_retirement_pension_social_security`, `cons_utilities`, `cons_housop`, `cons_pubtra`,
  `cons_gasmo`. The 1984-89 files have no *CQ/*PQ summaries: the Z* summary (ZTOTAL, ZFOODTOT...)
  is the current-quarter part, kept in source units. `food_definition_regime` by interview
  quarter: legacy < 2023Q2 <= transition <= 2024Q1 < redesigned; in `redesigned` quarters the
  food parts are GROCER + FDAWAY (both required), else FOOD. Then `cons_parker_total` =
  cons_total - (cash contributions + life insurance + retirement/pensions, NA as 0),
  `cons_food_agg`, `cons_strict_nondurables`, `cons_nondurables`, `cons_durables` (spec 1.5; all
  four NA when cons_food is NA);
- household screens per cex_panel_id (int8, computed, not applied): `flag_hh_income_lt_1000_ever`,
  `flag_hh_cons_total_lt_250_ever` (Parker total), `flag_hh_food_annualized_gt_mean_income`,
  `flag_hh_qoq_{income,cons_total}_change_{bottom,top}_1pct_ever` (adjacent-quarter % changes at
  or beyond the pooled 1st/99th percentiles; all 0 when no adjacent pair exists), and
  `flag_hh_any_screen`.

Overlaps: a record (newid, year, month) found in several packages keeps the latest package's
copy. Sample design (cex_sample_design), by interview quarter: pre_1986 <= 1986Q1; frame_1986
1986Q2-1995Q4; frame_1996 1996Q2-2004Q4; frame_2005 2005Q2-2014Q4; frame_2015 >= 2015Q2. The
first quarters of 1996, 2005 and 2015 (tokens 961, 051, 151) go by the package whose copy is
kept: the old frame if it is the previous year's package (the record is only there), the new
frame if it is the year's own package. A record matching no design, or two, is a DataError.

Damaged packages never build: package YY must hold the FMLI members of its quarters 2-4 and of
the next year's first quarter (when that has data: not for 1981), and its own first quarter
(`fmliYY1x`, which the year before's package also publishes) where no earlier package exists
(1980, 1984); a missing one is an error naming the quarter and the members present. A member
the zip cannot inflate, or one that ends early (no line break after the last record, or a last
record with fewer fields than the header), is an error naming the member and its last line
(hhx.surveys.cex_members). The reference checks neither.

Column checks. NEWID, QINTRVYR, QINTRVMO and the weight (FINLWT21/FINLWT) are required. Of the
other variables, those the CE data dictionary lists for the member's quarter (and for the
quarters either side, so files at a variable's first or last quarter are not held to it) form
two groups, characteristics and spending summaries: a member must carry all of a group or none
of it. None is accepted as a layout extract (BLS's layout stub has only ids and weights): the
group is NA and counted in the report (`fmli_members_without_spending`,
`fmli_members_without_characteristics`); a partial group is a DataError naming the column.

Rebate addenda (10_tasks 4, 5), read only when package 2001 / 2008 is among the inputs; the
package then must hold them (else a DataError naming the zip and member). Task-level work (report
statuses, payment year, assignment to reference windows, late payments) stays with the task
builders; these tables are the survey-level facts:
- `cex_rebate_2001.parquet` from `TAX013.csv` and `TAX014.csv` (any depth, any case; the
  reference's copy has them under "intrvw01/intrvw01/Addendum - Tax Rebate/"): one row per
  addendum record, NEWID unique over both (else DataError). `newid` (8 digits), `cu_id_raw`, per
  field of TAXQ1, TAXQ3, TAXMO1-5 (Int64) and TAXAMT1-5 (float64) the value, `<field>_flag`
  (the `<FIELD>_` letter, text) and `<field>_valid` (flag D, E, F, G, T, U, V or W and a value
  present; A = valid blank and B/C = invalid are not valid; whether a month is 1-12 or an amount
  positive is left to the task). Flags outside A-G, T-W, TAXQ1/TAXQ3 codes outside 1-2 and
  non-integer months are DataErrors. Provenance `cex_source_package`, `cex_source_member`,
  `cex_quarter_token` (013/014), `collection_year`, `collection_quarter`, `source_line`.
- `cex_stimulus_2008.parquet` from `expn08/rbt08.csv` (any depth, or a sibling `expn08/`
  folder of an unzipped `intrvw08/`): the rows with NEWID, RBTMO 1-12 and RBTAMT > 0; each
  dropped row is counted under the first rule it fails in the report rows
  `cex_stimulus_2008_dropped_{no_newid,bad_month,nonpositive_amount}` (`..._rows_read` = all).
  On kept rows CUID must equal NEWID // 10 (else DataError naming member, row and values) and
  CHCKEFT (1 check, 2 EFT) / HOWUSED (1-3) must be dictionary codes. Columns `newid`,
  `cu_id_raw`, `cuid` (7 digits), `rbtmo`, `rbtamt`, `chckeft`, `howused`, `usdintmo`,
  `usdintyr`, the flags `rbtmo_flag`, `rbtamt_flag`, `chckeft_flag`, `howused_flag` (NA when
  the file has no flag column), `cex_source_package`, `cex_source_member`, `source_line`.
Both also carry the reporting interview (`cex_panel_id`, `interview_year`, `interview_month`),
matched by NEWID among the interviews of the quarters the dictionary gives the addendum (2001Q3-Q4;
2008Q2-2009Q1); NA when the interview is not in the inputs, counted as `<name>_unlinked`.
"""

from __future__ import annotations

import io
import logging
import re
import time
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.base import BuildReport, raw_path, write_outputs
from hhx.surveys.cex_members import check_csv_complete, read_bytes
from hhx.surveys.release_dates import read_release_crosswalk

log = logging.getLogger(__name__)

SOURCE_URL = "https://www.bls.gov/cex/pumd.htm"
OUTPUT_NAME = "cex_interview"
RECORD_KEY = ["newid", "interview_year", "interview_month"]
PANEL_KEY = ["cex_panel_id", "interview_year", "interview_month"]

_MEMBER_RE = re.compile(r"(?:^|/)fmli(\d{2})([1-4])(x?)\.csv$", re.IGNORECASE)
_PACKAGE_RE = re.compile(r"^intrvw(\d{2})(?:\.zip)?$", re.IGNORECASE)
_MISSING_TEXT = ("", ".", "NA")


def full_year(yy: int) -> int:
    """Two-digit year of a file name or QINTRVYR -> four digits (CE data start in 1980)."""
    return 1900 + yy if yy >= 80 else 2000 + yy


def qi(year: int, quarter: int) -> int:
    """Quarter index year*4 + quarter (spec q_index)."""
    return year * 4 + quarter


# --------------------------------------------------------------------------------------------
# Variables: canonical name -> raw sources (first present wins), from spec 1.5


@dataclass(frozen=True)
class Variable:
    name: str
    sources: tuple[str, ...]
    kind: str  # "code" / "count" (Int64), "amount" (float64), "text" (state)


REQUIRED = [
    Variable("newid", ("NEWID",), "text"),
    Variable("interview_year", ("QINTRVYR",), "count"),
    Variable("interview_month", ("QINTRVMO",), "count"),
    Variable("weight", ("FINLWT21", "FINLWT"), "amount"),
]
CHARACTERISTICS = [
    Variable("state", ("STATE", "STATE_"), "text"),
    Variable("region", ("REGION",), "code"),
    Variable("bls_urbn", ("BLS_URBN",), "code"),
    Variable("fam_size", ("FAM_SIZE",), "count"),
    Variable("fam_type", ("FAM_TYPE",), "code"),
    Variable("age_ref", ("AGE_REF",), "count"),
    Variable("age2", ("AGE2",), "count"),
    Variable("sex_ref", ("SEX_REF",), "code"),
    Variable("sex2", ("SEX2",), "code"),
    Variable("marital1", ("MARITAL1",), "code"),
    Variable("tenure", ("CUTENURE",), "code"),
    Variable("race_ref", ("REF_RACE",), "code"),
    Variable("race2", ("RACE2",), "code"),
    Variable("educ_ref", ("EDUC_REF", "EDUC0REF"), "code"),
    Variable("educ2", ("EDUCA2",), "code"),
    Variable("n_kids", ("PERSLT18",), "count"),
    Variable("income_before_tax", ("FINCBTXM", "FINCBTAX"), "amount"),
    Variable("salary", ("FSALARYM", "FSALARYX"), "amount"),
]

# cons_X <- (current-quarter sources, previous-quarter sources); Z* = 1984-89 summaries.
CONSUMPTION: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cons_total": (("TOTEXPCQ", "ZTOTAL"), ("TOTEXPPQ",)),
    "cons_food": (("FOODCQ", "ZFOODTOT"), ("FOODPQ",)),
    "cons_housing": (("HOUSCQ", "ZHOUSING"), ("HOUSPQ",)),
    "cons_transport": (("TRANSCQ", "ZTRANPRT"), ("TRANSPQ",)),
    "cons_health": (("HEALTHCQ", "ZHEALTH"), ("HEALTHPQ",)),
    "cons_education": (("EDUCACQ", "ZEDUCATN"), ("EDUCAPQ",)),
    "cons_apparel": (("APPARCQ", "ZAPPAREL"), ("APPARPQ",)),
    "cons_entertainment": (("ENTERTCQ", "ZENTRMNT"), ("ENTERTPQ",)),
    "cons_personal_care": (("PERSCACQ", "ZPERCARE"), ("PERSCAPQ",)),
    "cons_cash_contrib": (("CASHCOCQ", "ZCASHCTB"), ("CASHCOPQ",)),
    "cons_life_insurance": (("LIFINSCQ", "ZLIFOTHR"), ("LIFINSPQ",)),
    "cons_retirement_pension_social_security": (("RETPENCQ", "ZRETIRES"), ("RETPENPQ",)),
    "cons_utilities": (("UTILCQ", "ZUTILSPS"), ("UTILPQ",)),
    "cons_alcohol": (("ALCBEVCQ", "ZALCBEVS"), ("ALCBEVPQ",)),
    "cons_tobacco": (("TOBACCCQ", "ZTOBACCO"), ("TOBACCPQ",)),
    "cons_housop": (("HOUSOPCQ", "ZHOUSEOP"), ("HOUSOPPQ",)),
    "cons_pubtra": (("PUBTRACQ", "ZPUBTRAN"), ("PUBTRAPQ",)),
    "cons_gasmo": (("GASMOCQ", "ZGASMOTO"), ("GASMOPQ",)),
    "cons_misc": (("MISCCQ", "ZMISCELS"), ("MISCPQ",)),
    "cons_read": (("READCQ", "ZREADING"), ("READPQ",)),
}
# Parts of food in the redesigned regime (GROCER is newer than the dictionary at hand; the
# reference falls back to trip food TFOODTO* when FDAWAY* is absent).
REDESIGN_PARTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "grocery": (("GROCERCQ",), ("GROCERPQ",)),
    "food_away": (("FDAWAYCQ", "TFOODTOC"), ("FDAWAYPQ", "TFOODTOP")),
}


def _spending_variables() -> list[Variable]:
    out = []
    for name, (cq, pq) in {**CONSUMPTION, **REDESIGN_PARTS}.items():
        base = name.removeprefix("cons_")
        out += [Variable(f"{base}_cq", cq, "amount"), Variable(f"{base}_pq", pq, "amount")]
    return out


SPENDING = _spending_variables()
EXTRA_SOURCES = ("INTERI",)

# Quarter ranges (q_index, None = still published) in which the CE data dictionary lists each
# FMLI source (adjacent ranges merged). Sources absent here (GROCER*) are never required.
_Q80_81 = (qi(1980, 1), qi(1981, 4))
_ALWAYS = (_Q80_81, (qi(1984, 1), None))
_SUMMARY = (_Q80_81, (qi(1990, 1), None))
_Z_ERA = ((qi(1984, 1), qi(1989, 4)),)
DICTIONARY_RANGES: dict[str, tuple[tuple[int, int | None], ...]] = {
    **{
        v: _ALWAYS
        for v in (
            "NEWID QINTRVYR QINTRVMO FINLWT21 REGION BLS_URBN FAM_SIZE FAM_TYPE AGE_REF AGE2 "
            "SEX_REF SEX2 MARITAL1 CUTENURE REF_RACE RACE2 EDUC_REF EDUCA2 PERSLT18"
        ).split()
    },
    "STATE": (_Q80_81, (qi(1984, 1), qi(1991, 4)), (qi(1993, 1), None)),
    "FINCBTXM": ((qi(2004, 1), None),),
    "FINCBTAX": (_Q80_81, (qi(1984, 1), qi(2004, 1)), (qi(2006, 1), None)),
    "FSALARYM": ((qi(2004, 1), None),),
    "FSALARYX": (_Q80_81, (qi(1984, 1), qi(2004, 1)), (qi(2006, 1), None)),
    "INTERI": ((qi(2002, 2), None),),
    "TFOODTOC": ((qi(1999, 2), None),),
    "TFOODTOP": ((qi(1999, 2), None),),
    **{src: _SUMMARY for cq, pq in CONSUMPTION.values() for src in (cq[0], pq[0])},
    "FDAWAYCQ": _SUMMARY,
    "FDAWAYPQ": _SUMMARY,
    **{cq[1]: _Z_ERA for cq, _ in CONSUMPTION.values()},
}

# Code lists of the CE data dictionary (Interview FMLI; union over the years it lists).
CODEBOOK: dict[str, frozenset[int]] = {
    "sex_ref": frozenset({1, 2}),
    "sex2": frozenset({1, 2}),
    "race_ref": frozenset(range(1, 7)),
    "race2": frozenset(range(1, 7)),
    "educ_ref": frozenset({*range(0, 8), *range(10, 18)}),
    "educ2": frozenset({*range(0, 8), *range(10, 18)}),
    "marital1": frozenset(range(1, 6)),
    "tenure": frozenset(range(1, 7)),
    "region": frozenset(range(1, 5)),
    "bls_urbn": frozenset({1, 2}),
}

SEX_LABELS = {1: "Man", 2: "Woman"}
RACE_LABELS = {
    1: "White",
    2: "Black",
    3: "Native American",
    4: "Asian",
    5: "Pacific Islander",
    6: "Multiracial",
}
EDUCATION_LABELS = {
    1: "No formal schooling",
    2: "Elementary school",
    3: "Some high school",
    4: "High school diploma",
    5: "Some college",
    6: "Associate degree",
    7: "Bachelor's degree",
    8: "Graduate or professional degree",
}
MARITAL_LABELS = {1: "Married", 2: "Widowed", 3: "Divorced", 4: "Separated", 5: "Never married"}
TENURE_LABELS = {
    1: "Owned with mortgage",
    2: "Owned without mortgage",
    3: "Owned mortgage not reported",
    4: "Rented",
    5: "Occupied without payment of cash rent",
    6: "Student housing",
}
REGION_LABELS = {1: "Northeast", 2: "Midwest", 3: "South", 4: "West"}
URBAN_LABELS = {1: "Urban", 2: "Rural"}
# 1980-95 codes 1-7 and 1996+ codes 0, 10-17 -> the 8 education levels.
EDUCATION_MAP = {
    0: 1, 1: 2, 2: 3, 3: 4, 4: 5, 5: 7, 6: 8, 7: 1,
    10: 2, 11: 3, 12: 4, 13: 5, 14: 6, 15: 7, 16: 8, 17: 8,
}  # fmt: skip

# Legacy (1980-81) STATE codes of the dictionary -> FIPS, and FIPS codes it lists from 1984.
LEGACY_STATE = {
    "14": "25", "16": "16", "21": "21", "22": "22", "23": "23", "31": "31", "32": "32",
    "33": "33", "34": "34", "35": "55", "41": "41", "42": "42", "43": "29", "47": "47",
    "52": "24", "53": "53", "54": "51", "55": "55", "56": "37", "58": "13", "59": "12",
    "61": "21", "62": "47", "63": "01", "72": "22", "74": "48", "84": "08", "86": "04",
    "91": "53", "92": "41", "93": "06", "95": "15",
}  # fmt: skip
CANONICAL_STATES = frozenset(
    "01 02 04 05 06 08 09 10 11 12 13 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 "
    "34 35 36 37 39 40 41 42 44 45 46 47 48 49 51 53 54 55".split()
)

# Design of the sample frame: (name, first q_index, last q_index); boundary tokens below.
DESIGNS = [
    ("pre_1986", None, qi(1986, 1)),
    ("frame_1986", qi(1986, 2), qi(1995, 4)),
    ("frame_1996", qi(1996, 2), qi(2004, 4)),
    ("frame_2005", qi(2005, 2), qi(2014, 4)),
    ("frame_2015", qi(2015, 2), None),
]
# Boundary token -> (old design if kept from the package of the year before, new design).
BOUNDARY_TOKENS = {
    "961": ("frame_1986", "frame_1996"),
    "051": ("frame_1996", "frame_2005"),
    "151": ("frame_2005", "frame_2015"),
}
FOOD_TRANSITION = (qi(2023, 2), qi(2024, 1))

FLAG_COLUMNS = [
    "flag_hh_income_lt_1000_ever",
    "flag_hh_cons_total_lt_250_ever",
    "flag_hh_food_annualized_gt_mean_income",
    "flag_hh_qoq_income_change_bottom_1pct_ever",
    "flag_hh_qoq_income_change_top_1pct_ever",
    "flag_hh_qoq_cons_total_change_bottom_1pct_ever",
    "flag_hh_qoq_cons_total_change_top_1pct_ever",
    "flag_hh_any_screen",
]
QOQ_QUANTILE = 0.01

AGGREGATES = [
    "cons_parker_total",
    "cons_food_agg",
    "cons_strict_nondurables",
    "cons_nondurables",
    "cons_durables",
]
OUTPUT_COLUMNS = [
    "newid", "cu_id", "cu_id_raw", "cex_panel_id", "cex_sample_design",
    "interview_year", "interview_month", "quarter", "year_quarter", "q_index",
    "interview_month_index", "release_date", "release_date_source",
    "cex_source_package", "cex_source_member", "cex_quarter_token", "cex_overlap_versions",
    "cex_first_release_year", "cex_retained_package_year",
    "interview_number", "interview_position_harmonized",
    "weight", "fam_size", "fam_type", "n_kids", "n_adults",
    "state", "region", "region_label", "bls_urbn", "bls_urbn_label",
    "age_ref", "age2", "sex_ref", "sex_ref_label", "sex2", "sex2_label",
    "marital1", "marital1_label", "tenure", "tenure_harmonized",
    "race_ref", "race_ref_harmonized", "race2", "race2_harmonized",
    "educ_ref", "educ_ref_harmonized", "educ2", "educ2_harmonized",
    "income_before_tax", "salary",
    *CONSUMPTION, "food_definition_regime", *AGGREGATES, *FLAG_COLUMNS,
]  # fmt: skip


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


# --------------------------------------------------------------------------------------------
# Column checks (see the module notes)


def _listed(source: str, q: int) -> bool:
    """The dictionary lists `source` for quarter q and for the quarters either side."""
    return any(
        first < q and (last is None or q < last)
        for first, last in DICTIONARY_RANGES.get(source, ())
    )


def _current_source(var: Variable, q: int) -> str:
    """The source the dictionary has for quarter q (for naming a missing column)."""
    for src in var.sources:
        if any(first <= q and (last is None or q <= last)
               for first, last in DICTIONARY_RANGES.get(src, ())):
            return src
    return var.sources[0]


def _chosen(variables: list[Variable], columns: set[str]) -> dict[str, str]:
    """Canonical name -> first present source."""
    chosen = {}
    for var in variables:
        for src in var.sources:
            if src in columns:
                chosen[var.name] = src
                break
    return chosen


def _check_group(
    member: Member, group: list[Variable], chosen: dict[str, str], what: str
) -> bool:
    """True if the member carries the group, False if it carries none of it; else DataError."""
    present = [v for v in group if v.name in chosen]
    if not present:
        return False
    q = member.q_index
    for var in group:
        if var.name not in chosen and any(_listed(src, q) for src in var.sources):
            raise DataError(
                f"{member.label}: column {_current_source(var, q)} not found ({what}; the CE "
                f"data dictionary lists it for {member.token[:2]}Q{member.token[2]}); use the "
                f"unmodified BLS file ({SOURCE_URL})"
            )
    return True


# --------------------------------------------------------------------------------------------
# Parsing (text -> typed; one-line errors naming the member, column and value)


def _numbers(raw: pd.DataFrame, columns: list[str], where: str) -> pd.DataFrame:
    """Text columns -> float64 (blank, "." and "NA" missing); the first non-number is an error."""
    if not columns:
        return pd.DataFrame(index=raw.index)
    text = np.char.strip(raw[columns].to_numpy(dtype=str))
    text[np.isin(text, _MISSING_TEXT)] = "nan"
    try:
        values = text.astype("float64")
    except ValueError:
        values = None
    if values is None or not np.isfinite(values[~np.isnan(values)]).all():
        for j, column in enumerate(columns):  # find the culprit for the message
            parsed = pd.to_numeric(pd.Series(text[:, j]), errors="coerce")
            bad = (parsed.isna() & (text[:, j] != "nan")) | np.isinf(parsed)
            if bad.any():
                i = int(np.flatnonzero(bad.to_numpy())[0])
                raise DataError(
                    f"{where}: column {column} has non-numeric value {str(text[i, j])!r} "
                    f"(data row {i + 1})"
                )
    return pd.DataFrame(values, index=raw.index, columns=columns)


def _integers(values: pd.Series, column: str, where: str) -> pd.Series:
    bad = values.notna() & (values != values.round())
    if bad.any():
        raise DataError(f"{where}: column {column} holds {float(values[bad].iloc[0])!r}, "
                        "not an integer")
    return values.astype("Int64")


def _newids(raw: pd.DataFrame, where: str) -> pd.Series:
    text = raw["NEWID"].str.strip().str.strip("'\"")
    ok = text.str.fullmatch(r"\d{1,8}")
    if not ok.all():
        bad = text[~ok].iloc[0]
        raise DataError(f"{where}: column NEWID holds {bad!r}, not a CE id of up to 8 digits")
    return text.str.zfill(8)


def _state_codes(raw: pd.Series) -> pd.Series:
    """Raw STATE text -> 2-digit FIPS text: a whole number (".0" allowed) zero-padded, the legacy
    map applied (every year, as the reference does), then codes outside the canonical list NA."""
    text = raw.str.strip().str.strip("'\"")
    digits = text.str.fullmatch(r"\d+(?:\.0+)?")
    code = text.where(digits).str.split(".").str[0].str.lstrip("0").str.zfill(2)
    code = code.replace(LEGACY_STATE)
    return code.where(code.isin(list(CANONICAL_STATES))).astype("string")


def _check_codes(values: pd.Series, var: str, column: str, where: str) -> None:
    allowed = CODEBOOK[var]
    bad = values.notna() & ~values.isin(list(allowed))
    if bad.any():
        raise DataError(
            f"{where}: column {column} holds code {int(values[bad].iloc[0])}, which is not in "
            f"the CE data dictionary's code list for {column} ({sorted(allowed)}); use the "
            f"unmodified BLS file ({SOURCE_URL})"
        )


def _years(values: pd.Series, where: str) -> pd.Series:
    y = values.copy()
    short = y.notna() & (y < 100)
    y[short] = np.where(y[short] >= 80, 1900 + y[short], 2000 + y[short])
    bad = y.isna() | ~y.between(1980, 2100)
    if bad.any():
        raise DataError(
            f"{where}: column QINTRVYR holds {values[bad].iloc[0]!r}, not an interview year"
        )
    return y.astype("int64")


# --------------------------------------------------------------------------------------------
# One member -> candidate records


@dataclass
class MemberResult:
    frame: pd.DataFrame
    has_spending: bool
    has_characteristics: bool


def read_fmli(member: Member, package_name: str) -> MemberResult:
    """One FMLI member -> typed canonical columns, spending sums and provenance."""
    where = member.label
    wanted = {src for v in REQUIRED + CHARACTERISTICS + SPENDING for src in v.sources}
    raw = read_member(member, wanted | set(EXTRA_SOURCES))
    columns = set(raw.columns)
    for var in REQUIRED:
        if not any(src in columns for src in var.sources):
            raise DataError(
                f"{where}: column {var.sources[0]} not found; use the unmodified BLS Interview "
                f"file ({SOURCE_URL})"
            )
    chosen = _chosen(REQUIRED + CHARACTERISTICS + SPENDING, columns)
    has_chars = _check_group(member, CHARACTERISTICS, chosen, "consumer-unit characteristics")
    spend_group = [v for v in SPENDING if not v.name.startswith("grocery")]
    has_spending = _check_group(member, spend_group, chosen, "spending summaries")

    variables = [v for v in REQUIRED[1:] + CHARACTERISTICS + SPENDING if v.kind != "text"]
    numeric = [chosen[v.name] for v in variables if v.name in chosen]
    numeric += [c for c in EXTRA_SOURCES if c in columns]
    numbers = _numbers(raw, sorted(set(numeric)), where)
    out: dict[str, pd.Series] = {"newid": _newids(raw, where)}
    out["interview_year"] = _years(numbers["QINTRVYR"], where)
    month = _integers(numbers["QINTRVMO"], "QINTRVMO", where)
    bad = month.isna() | ~month.between(1, 12)
    if bad.any():
        raise DataError(
            f"{where}: column QINTRVMO holds {raw['QINTRVMO'][bad].iloc[0]!r}, not a month 1-12"
        )
    out["interview_month"] = month.astype("int64")
    for var in REQUIRED[3:] + CHARACTERISTICS + SPENDING:
        src = chosen.get(var.name)
        if src is None:
            if var.kind == "amount":
                out[var.name] = pd.Series(np.nan, index=raw.index, dtype="float64")
            else:
                dtype = "string" if var.kind == "text" else "Int64"
                out[var.name] = pd.Series(pd.NA, index=raw.index, dtype=dtype)
        elif var.kind == "text":
            out[var.name] = _state_codes(raw[src])
        elif var.kind == "amount":
            out[var.name] = numbers[src]
        else:
            out[var.name] = _integers(numbers[src], src, where)
            if var.name in CODEBOOK:
                _check_codes(out[var.name], var.name, src, where)
    from_newid = out["newid"].str[-1].astype("int64").astype("Int64")
    if "INTERI" in columns:
        interi = _integers(numbers["INTERI"], "INTERI", where)
        out["interview_number"] = interi.fillna(from_newid)
    else:
        out["interview_number"] = from_newid
    frame = pd.DataFrame(out)

    dup = frame.duplicated(RECORD_KEY)
    if dup.any():
        row = frame[dup].iloc[0]
        raise DataError(
            f"{where}: NEWID {row['newid']} appears twice for {row['interview_year']}-"
            f"{row['interview_month']:02d}; each interview must appear once"
        )
    frame = add_spending(frame)
    frame["cex_source_package"] = package_name
    frame["cex_source_member"] = member.name
    frame["cex_quarter_token"] = member.token
    frame["cex_retained_package_year"] = member.package_year
    return MemberResult(frame, has_spending, has_chars)


def food_regime(q_index: pd.Series) -> pd.Series:
    """legacy < 2023Q2 <= transition <= 2024Q1 < redesigned (spec 1.5)."""
    first, last = FOOD_TRANSITION
    return pd.Series(
        np.select([q_index < first, q_index <= last], ["legacy", "transition"], "redesigned"),
        index=q_index.index,
    )


def add_spending(frame: pd.DataFrame) -> pd.DataFrame:
    """cons_X = CQ + PQ (min_count 1), redesigned food, Parker total and aggregates; the
    *_cq / *_pq parts are dropped."""
    quarter = (frame["interview_month"] - 1) // 3 + 1
    regime = food_regime(frame["interview_year"] * 4 + quarter)
    redesigned = (regime == "redesigned").to_numpy()
    parts = {v.name: frame[v.name].to_numpy(dtype="float64") for v in SPENDING}
    for part in ("cq", "pq"):
        grocery, away = parts[f"grocery_{part}"], parts[f"food_away_{part}"]
        parts[f"food_{part}"] = np.where(redesigned, grocery + away, parts[f"food_{part}"])
    cons: dict[str, np.ndarray] = {}
    for name in CONSUMPTION:
        base = name.removeprefix("cons_")
        cq, pq = parts[f"{base}_cq"], parts[f"{base}_pq"]
        both_missing = np.isnan(cq) & np.isnan(pq)
        cons[name] = np.where(both_missing, np.nan, np.nan_to_num(cq) + np.nan_to_num(pq))

    def some(*names: str) -> np.ndarray:
        """Sum with at least one present (pandas min_count=1)."""
        block = np.column_stack([cons[n] for n in names])
        return np.where(np.isnan(block).all(axis=1), np.nan, np.nansum(block, axis=1))

    subtract = sum(
        np.nan_to_num(cons[n])
        for n in ("cons_cash_contrib", "cons_life_insurance",
                  "cons_retirement_pension_social_security")
    )  # fmt: skip
    cons["cons_parker_total"] = cons["cons_total"] - subtract
    cons["cons_food_agg"] = some("cons_food", "cons_alcohol")
    cons["cons_strict_nondurables"] = some(
        "cons_food_agg", "cons_utilities", "cons_housop", "cons_pubtra", "cons_gasmo",
        "cons_personal_care", "cons_tobacco", "cons_misc",
    )  # fmt: skip
    cons["cons_nondurables"] = some(
        "cons_strict_nondurables", "cons_apparel", "cons_health", "cons_read"
    )
    cons["cons_durables"] = cons["cons_parker_total"] - cons["cons_nondurables"]
    no_food = np.isnan(cons["cons_food"])
    for name in ("cons_food_agg", "cons_strict_nondurables", "cons_nondurables",
                 "cons_durables"):  # fmt: skip
        cons[name] = np.where(no_food, np.nan, cons[name])
    spending = pd.DataFrame(cons, index=frame.index)
    spending["food_definition_regime"] = regime
    kept = frame.drop(columns=[v.name for v in SPENDING])
    return pd.concat([kept, spending], axis=1)


# --------------------------------------------------------------------------------------------
# All packages -> one row per interview


def reconcile(candidates: pd.DataFrame) -> pd.DataFrame:
    """Keep the latest package's copy of each record; first release year and version count."""
    per_package = candidates.groupby([*RECORD_KEY, "cex_retained_package_year"], sort=False)
    members = per_package["cex_source_member"].nunique()
    if (members > 1).any():
        key = members[members > 1].index[0]
        raise DataError(
            f"Interview package {key[3]}: NEWID {key[0]} ({key[1]}-{key[2]:02d}) appears in "
            "two FMLI members of the package; keep the unmodified BLS package"
        )
    grouped = candidates.groupby(RECORD_KEY, sort=False)["cex_retained_package_year"]
    candidates = candidates.assign(
        cex_first_release_year=grouped.transform("min").astype("int64"),
        cex_overlap_versions=grouped.transform("nunique").astype("int64"),
    )
    candidates = candidates.sort_values(
        [*RECORD_KEY, "cex_retained_package_year"], kind="mergesort"
    )
    return candidates[~candidates.duplicated(RECORD_KEY, keep="last")].reset_index(drop=True)


def sample_design(frame: pd.DataFrame) -> pd.Series:
    """Frame of each record by interview quarter, boundary tokens by kept package (notes)."""
    q = frame["q_index"]
    token = frame["cex_quarter_token"]
    package = frame["cex_retained_package_year"]
    design = pd.Series(pd.NA, index=frame.index, dtype="object")
    matches = pd.Series(0, index=frame.index)
    for name, first, last in DESIGNS:
        hit = pd.Series(True, index=frame.index)
        if first is not None:
            hit &= q >= first
        if last is not None:
            hit &= q <= last
        for tok, (old, new) in BOUNDARY_TOKENS.items():
            year = full_year(int(tok[:2]))
            if name == old:
                hit |= (token == tok) & (package == year - 1)
            if name == new:
                hit |= (token == tok) & (package == year)
        design = design.where(~hit, name)
        matches += hit.astype(int)
    bad = matches != 1
    if bad.any():
        row = frame[bad].iloc[0]
        raise DataError(
            f"{row['cex_source_package']}:{row['cex_source_member']}: NEWID {row['newid']} "
            f"({row['interview_year']}-{row['interview_month']:02d}, token "
            f"{row['cex_quarter_token']}) matches {int(matches[bad].iloc[0])} sample designs; "
            "an interview quarter must fall in exactly one (spec 1.5)"
        )
    return design.astype("string")


def interview_position(number: pd.Series, year: pd.Series) -> pd.Series:
    """Interview years to 2014 number public interviews 2-5 (-> 1-4); from 2015 1-4 (kept)."""
    out = pd.Series(pd.NA, index=number.index, dtype="Int64")
    pre = (year <= 2014) & number.isin([2, 3, 4, 5])
    post = (year >= 2015) & number.isin([1, 2, 3, 4])
    out[pre] = number[pre] - 1
    out[post] = number[post]
    return out


def _categorical(codes: pd.Series, labels: dict[int, str], ordered: bool = False) -> pd.Series:
    return pd.Series(
        pd.Categorical(codes.map(labels), categories=list(labels.values()), ordered=ordered),
        index=codes.index,
    )


def add_labels(frame: pd.DataFrame) -> None:
    """Label and harmonized categoricals (codes were checked against the codebook on reading)."""
    for column, labels in (("region", REGION_LABELS), ("bls_urbn", URBAN_LABELS),
                           ("sex_ref", SEX_LABELS), ("sex2", SEX_LABELS),
                           ("marital1", MARITAL_LABELS)):  # fmt: skip
        frame[f"{column}_label"] = _categorical(frame[column], labels)
    frame["tenure_harmonized"] = _categorical(frame["tenure"], TENURE_LABELS)
    frame["race_ref_harmonized"] = _categorical(frame["race_ref"], RACE_LABELS)
    frame["race2_harmonized"] = _categorical(frame["race2"], RACE_LABELS)
    frame["educ_ref_harmonized"] = _categorical(
        frame["educ_ref"].map(EDUCATION_MAP), EDUCATION_LABELS, ordered=True
    )
    # EDUCA2 code 0 is "don't know" in the 1980-81 files, "never attended" later.
    educ2 = frame["educ2"].map(EDUCATION_MAP)
    educ2 = educ2.where(~((frame["educ2"] == 0) & (frame["interview_year"] <= 1981)))
    frame["educ2_harmonized"] = _categorical(educ2, EDUCATION_LABELS, ordered=True)


def _qoq_changes(panel: pd.DataFrame, column: str) -> pd.DataFrame:
    """% change between interviews of one panel in adjacent quarters (previous value > 0)."""
    p = panel[["cex_panel_id", "q_index", column]].sort_values(
        ["cex_panel_id", "q_index"], kind="mergesort"
    )
    g = p.groupby("cex_panel_id", sort=False)
    lag_q = g["q_index"].shift(1)
    lag = g[column].shift(1)
    ok = (p["q_index"] - lag_q == 1) & p[column].notna() & lag.notna() & (lag > 0)
    return pd.DataFrame(
        {"cex_panel_id": p.loc[ok, "cex_panel_id"],
         "pct": 100.0 * (p.loc[ok, column] - lag[ok]) / lag[ok]}
    )  # fmt: skip


def add_quality_flags(frame: pd.DataFrame) -> None:
    """Household screens per cex_panel_id (spec 1.5), int8 on every row; not applied."""
    g = frame.groupby("cex_panel_id", sort=False)
    flags = pd.DataFrame(index=pd.Index(frame["cex_panel_id"].unique(), name="cex_panel_id"))
    flags[FLAG_COLUMNS[0]] = g["income_before_tax"].min() < 1000
    flags[FLAG_COLUMNS[1]] = g["cons_parker_total"].min() < 250
    food = frame.dropna(subset=["cons_food"]).groupby("cex_panel_id")["cons_food"]
    annual_food = food.sum() * 4.0 / food.size()  # the reference's arithmetic (ties to the ulp)
    flags[FLAG_COLUMNS[2]] = annual_food > g["income_before_tax"].mean().reindex(
        annual_food.index)
    for column, bottom, top in (
        ("income_before_tax", FLAG_COLUMNS[3], FLAG_COLUMNS[4]),
        ("cons_parker_total", FLAG_COLUMNS[5], FLAG_COLUMNS[6]),
    ):
        changes = _qoq_changes(frame, column)
        if changes.empty:  # the reference stops here; a tiny extract just gets no flags
            flags[bottom] = False
            flags[top] = False
            continue
        low = changes["pct"].quantile(QOQ_QUANTILE)
        high = changes["pct"].quantile(1.0 - QOQ_QUANTILE)
        log.info("cex_interview screen %s: p1 %.4f, p99 %.4f", column, low, high)
        flags[bottom] = (changes["pct"] <= low).groupby(changes["cex_panel_id"]).any()
        flags[top] = (changes["pct"] >= high).groupby(changes["cex_panel_id"]).any()
    flags = flags.fillna(False).astype(bool)
    flags[FLAG_COLUMNS[-1]] = flags[FLAG_COLUMNS[:-1]].any(axis=1)
    joined = flags.astype("int8").reindex(frame["cex_panel_id"])
    for column in FLAG_COLUMNS:
        frame[column] = joined[column].to_numpy()


def add_release_dates(frame: pd.DataFrame, crosswalk: Path | None) -> None:
    """release_date by first release year from the reference's release_cex.csv (validated by
    hhx.surveys.release_dates); NA without a crosswalk."""
    if crosswalk is None:
        frame["release_date"] = pd.Series(pd.NA, index=frame.index, dtype="string")
        frame["release_date_source"] = pd.Series(pd.NA, index=frame.index, dtype="string")
        return
    table = read_release_crosswalk("cex", crosswalk)
    if "release_date_source" not in table.columns:
        table["release_date_source"] = "crosswalk"
    table = table.set_index("cex_data_year")
    years = frame["cex_first_release_year"]
    missing = sorted(set(years.unique()) - set(table.index))
    if missing:
        raise DataError(
            f"{crosswalk}: no release date for CEX data year {missing[0]}; add a row"
        )
    frame["release_date"] = years.map(table["release_date"]).astype("string")
    frame["release_date_source"] = years.map(table["release_date_source"]).astype("string")


def finish(candidates: pd.DataFrame, crosswalk: Path | None = None) -> pd.DataFrame:
    """Candidate records of every package -> the output table (module notes)."""
    frame = reconcile(candidates)
    frame["quarter"] = ((frame["interview_month"] - 1) // 3 + 1).astype("int64")
    frame["q_index"] = frame["interview_year"] * 4 + frame["quarter"]
    frame["interview_month_index"] = frame["interview_year"] * 12 + frame["interview_month"]
    frame["year_quarter"] = (
        frame["interview_year"].astype(str) + "Q" + frame["quarter"].astype(str)
    ).astype("string")
    frame["newid"] = frame["newid"].astype("string")
    frame["cu_id_raw"] = frame["newid"].str[:-1].astype("string")
    frame["cu_id"] = frame["cu_id_raw"]
    frame["cex_sample_design"] = sample_design(frame)
    frame["cex_panel_id"] = (frame["cex_sample_design"] + ":" + frame["cu_id_raw"]).astype(
        "string"
    )
    dup = frame.duplicated(PANEL_KEY, keep=False)
    if dup.any():
        rows = frame[dup].sort_values(PANEL_KEY).head(2)
        a, b = rows.iloc[0], rows.iloc[1]
        raise DataError(
            f"cex_panel_id {a['cex_panel_id']} has two interviews in {a['interview_year']}-"
            f"{a['interview_month']:02d} (NEWID {a['newid']} in {a['cex_source_package']}:"
            f"{a['cex_source_member']}, NEWID {b['newid']} in {b['cex_source_package']}:"
            f"{b['cex_source_member']}); the panel key must be unique"
        )
    frame["interview_position_harmonized"] = interview_position(
        frame["interview_number"], frame["interview_year"]
    )
    frame["n_adults"] = (frame["fam_size"] - frame["n_kids"]).clip(lower=0).astype("Int64")
    add_labels(frame)
    add_quality_flags(frame)
    add_release_dates(frame, crosswalk)
    frame["cex_source_package"] = frame["cex_source_package"].astype("string")
    frame["cex_source_member"] = frame["cex_source_member"].astype("string")
    frame["cex_quarter_token"] = frame["cex_quarter_token"].astype("string")
    frame["food_definition_regime"] = frame["food_definition_regime"].astype("string")
    frame = frame.sort_values(RECORD_KEY, kind="mergesort").reset_index(drop=True)
    return frame[OUTPUT_COLUMNS]


def _package_name(member: Member) -> str:
    return member.package_path.name


# --------------------------------------------------------------------------------------------
# Rebate addenda of the 2001 and 2008 packages (spec 10_tasks 4, 5)

REBATE_2001 = "cex_rebate_2001"
STIMULUS_2008 = "cex_stimulus_2008"
# Member names, at any depth, any case: the 2001 addendum sits in the reference's copy at
# "intrvw01/intrvw01/Addendum - Tax Rebate/TAX013.csv", the 2008 one at "expn08/rbt08.csv".
_TAX_RE = re.compile(r"(?:^|/)tax01([34])\.csv$", re.IGNORECASE)
_RBT_RE = re.compile(r"(?:^|/)rbt08\.csv$", re.IGNORECASE)
TAX_TOKENS = ("013", "014")
# CE flags (spec 4): D-G and T-W are valid values, A a valid blank, B and C invalid.
VALID_FLAGS = frozenset("DEFGTUVW")
KNOWN_FLAGS = VALID_FLAGS | frozenset("ABC")
TAX_FIELDS = ["TAXQ1", "TAXQ3", *(f"TAXMO{i}" for i in range(1, 6)),
              *(f"TAXAMT{i}" for i in range(1, 6))]
RBT_FIELDS = ["CUID", "RBTMO", "RBTAMT", "CHCKEFT", "HOWUSED", "USDINTMO", "USDINTYR"]
RBT_FLAGS = ["RBTMO_", "RBTAMT_", "CHCKEFT_", "HOWUSED_"]  # read when present
# Code lists of the CE data dictionary (TAXQ, RBT files).
ADDENDUM_CODES = {"TAXQ1": frozenset({1, 2}), "TAXQ3": frozenset({1, 2}),
                  "CHCKEFT": frozenset({1, 2}), "HOWUSED": frozenset({1, 2, 3})}
# Interview quarters the dictionary gives each addendum: reports link to those interviews.
LINK_QUARTERS = {REBATE_2001: (qi(2001, 3), qi(2001, 4)),
                 STIMULUS_2008: (qi(2008, 2), qi(2009, 1))}
STIMULUS_DROPS = ("no_newid", "bad_month", "nonpositive_amount")


def _addendum_members(path: Path, year: int, pattern: re.Pattern[str]) -> list[Member]:
    """Members of package `path` matching `pattern`; an unzipped package also looks in a sibling
    `expnYY/` folder (where unzipping intrvwYY.zip into one folder puts rbtYY.csv)."""
    if path.is_file():
        with zipfile.ZipFile(path) as zf:
            names = [i.filename for i in zf.infolist() if not i.is_dir()]
    else:
        names = [str(p.relative_to(path)) for p in sorted(path.rglob("*")) if p.is_file()]
        sibling = path.parent / f"expn{year % 100:02d}"
        if sibling.is_dir():
            names += [f"../{sibling.name}/{p.relative_to(sibling)}"
                      for p in sorted(sibling.rglob("*")) if p.is_file()]
    found = []
    for name in sorted(names):
        m = pattern.search(name.replace("\\", "/"))
        if m:
            token = f"01{m.group(1)}" if m.groups() else f"{year % 100:02d}"
            found.append(Member(year, path, name, token))
    return found


def _require_columns(raw: pd.DataFrame, member: Member, columns: Iterable[str]) -> None:
    for column in columns:
        if column not in raw.columns:
            raise DataError(f"{member.label}: column {column} not found; use the unmodified BLS "
                            f"Interview file ({SOURCE_URL})")


def _flags(raw: pd.Series, column: str, where: str) -> pd.Series:
    """CE flag letters as upper-case text (blank -> NA); a letter outside A-G, T-W is an error."""
    text = raw.str.strip().str.strip("'\"").str.upper()
    text = text.where(~text.isin(_MISSING_TEXT))
    bad = text.notna() & ~text.isin(list(KNOWN_FLAGS))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"{where}: column {column} holds flag {text.iloc[i]!r} (data row {i + 1}),"
                        f" not a CE flag ({''.join(sorted(KNOWN_FLAGS))})")
    return text.astype("string")


def _check_listed(values: pd.Series, column: str, where: str, rows: pd.Series | None = None
                  ) -> None:
    """Codes outside the dictionary's list for `column` are an error (names the data row)."""
    allowed = ADDENDUM_CODES[column]
    bad = values.notna() & ~values.isin(list(allowed))
    if rows is not None:
        bad &= rows
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        code = float(values.iloc[i])
        raise DataError(
            f"{where}: column {column} holds code {int(code) if code.is_integer() else code} "
            f"(data row {i + 1}), which is "
            f"not in the CE data dictionary's code list {sorted(allowed)}; use the unmodified "
            f"BLS file ({SOURCE_URL})"
        )


def read_rebate_2001(members: list[Member]) -> pd.DataFrame:
    """TAX013/TAX014 -> one row per addendum record: typed fields, flags, flag validity."""
    frames = []
    for member in members:
        where = member.label
        wanted = ["NEWID", *TAX_FIELDS, *(f"{f}_" for f in TAX_FIELDS)]
        raw = read_member(member, wanted)
        _require_columns(raw, member, wanted)
        newid = _newids(raw, where)
        numbers = _numbers(raw, TAX_FIELDS, where)
        out: dict[str, object] = {"newid": newid.astype("string"),
                                  "cu_id_raw": newid.str[:-1].astype("string")}
        for field in TAX_FIELDS:
            name = field.lower()
            if field.startswith("TAXAMT"):
                value = numbers[field]
            else:
                value = _integers(numbers[field], field, where)
                if field in ADDENDUM_CODES:
                    _check_listed(value, field, where)
            flag = _flags(raw[f"{field}_"], f"{field}_", where)
            out[name] = value
            out[f"{name}_flag"] = flag
            out[f"{name}_valid"] = (flag.isin(list(VALID_FLAGS)).fillna(False)
                                    & value.notna()).astype(bool)
        frame = pd.DataFrame(out, index=raw.index)
        frame["cex_source_package"] = member.package_path.name
        frame["cex_source_member"] = member.name
        frame["cex_quarter_token"] = member.token
        frame["collection_year"] = 2001
        frame["collection_quarter"] = int(member.token[2])
        frame["source_line"] = np.arange(2, len(frame) + 2)  # file line (the header is line 1)
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    dup = frame.duplicated("newid", keep=False)
    if dup.any():
        a, b = frame[dup].sort_values("newid", kind="mergesort").head(2).itertuples()
        raise DataError(
            f"{members[0].package_path}: NEWID {a.newid} has two tax-rebate addendum records "
            f"({a.cex_source_member} line {a.source_line}, {b.cex_source_member} line "
            f"{b.source_line}); each interview reports once"
        )
    return frame


def read_stimulus_2008(member: Member) -> tuple[pd.DataFrame, dict[str, int]]:
    """rbt08.csv -> the rows kept by spec 5 (NEWID, RBTMO 1-12, RBTAMT > 0), typed, and the
    count dropped by each rule (a row counts for the first rule it fails)."""
    where = member.label
    raw = read_member(member, ["NEWID", *RBT_FIELDS, *RBT_FLAGS])
    _require_columns(raw, member, ["NEWID", *RBT_FIELDS])
    text = raw["NEWID"].str.strip().str.strip("'\"")
    has_id = ~text.isin(_MISSING_TEXT)
    ok = text.str.fullmatch(r"\d{1,8}(?:\.0+)?")
    if (has_id & ~ok).any():
        i = int(np.flatnonzero((has_id & ~ok).to_numpy())[0])
        raise DataError(f"{where}: column NEWID holds {text.iloc[i]!r} (data row {i + 1}), not "
                        "a CE id of up to 8 digits")
    numbers = _numbers(raw, RBT_FIELDS, where)
    month, amount = numbers["RBTMO"], numbers["RBTAMT"]
    fails = {
        "no_newid": ~has_id,
        "bad_month": ~month.isin(list(range(1, 13))),
        "nonpositive_amount": ~(amount > 0),
    }
    dropped = pd.Series(False, index=raw.index)
    counts = {}
    for rule in STIMULUS_DROPS:
        counts[f"{STIMULUS_2008}_dropped_{rule}"] = int((fails[rule] & ~dropped).sum())
        dropped |= fails[rule]
    counts[f"{STIMULUS_2008}_rows_read"] = len(raw)
    keep = ~dropped
    newid = text.where(keep).str.split(".").str[0].str.zfill(8)
    cuid = numbers["CUID"]
    expected = pd.to_numeric(newid, errors="coerce") // 10
    bad = keep & ~(cuid == expected)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{where}: data row {i + 1} has CUID {raw['CUID'].iloc[i].strip()!r} but NEWID "
            f"{newid.iloc[i]} (CUID must equal NEWID // 10 = {int(expected.iloc[i])}); use the "
            f"unmodified BLS file ({SOURCE_URL})"
        )
    kept = raw.index[keep]
    out: dict[str, object] = {"newid": newid[kept].astype("string")}
    out["cu_id_raw"] = newid[kept].str[:-1].astype("string")
    out["cuid"] = cuid[kept].astype("int64").astype(str).str.zfill(7).astype("string")
    for field in RBT_FIELDS[1:]:
        name = field.lower()
        if field == "RBTAMT":
            out[name] = amount[kept]
        else:
            out[name] = _integers(numbers[field][kept], field, where)
        if field in ADDENDUM_CODES:
            _check_listed(numbers[field], field, where, rows=keep)
        if f"{field}_" in RBT_FLAGS:
            flags = (_flags(raw[f"{field}_"], f"{field}_", where) if f"{field}_" in raw.columns
                     else pd.Series(pd.NA, index=raw.index, dtype="string"))
            out[f"{name}_flag"] = flags[kept]
    frame = pd.DataFrame(out, index=kept)
    frame["cex_source_package"] = member.package_path.name
    frame["cex_source_member"] = member.name
    frame["source_line"] = kept.to_numpy() + 2  # file line (the header is line 1)
    return frame.reset_index(drop=True), counts


def link_interviews(frame: pd.DataFrame, table: pd.DataFrame, name: str) -> int:
    """Add the reporting interview (cex_panel_id, interview_year, interview_month) by NEWID among
    the interviews of the addendum's quarters; NA where none (or two) match. Returns the count of
    rows without one."""
    first, last = LINK_QUARTERS[name]
    pool = table.loc[table["q_index"].between(first, last),
                     ["newid", "cex_panel_id", "interview_year", "interview_month"]]
    pool = pool[~pool["newid"].duplicated(keep=False)].set_index("newid")
    linked = pool.reindex(frame["newid"]).set_axis(frame.index)
    frame["cex_panel_id"] = linked["cex_panel_id"].astype("string")
    for column in ("interview_year", "interview_month"):
        frame[column] = linked[column].astype("Int64")
    return int(frame["cex_panel_id"].isna().sum())


def read_addenda(
    packages: dict[int, list[Member]], table: pd.DataFrame, source: str
) -> tuple[dict[str, pd.DataFrame], list[Path], dict[str, int]]:
    """The rebate addenda of packages 2001 and 2008, when those packages are read."""
    frames: dict[str, pd.DataFrame] = {}
    inputs: list[Path] = []
    counts: dict[str, int] = {}
    wanted = {2001: (_TAX_RE, "TAX013.csv and TAX014.csv (2001 tax-rebate addendum)"),
              2008: (_RBT_RE, "expn08/rbt08.csv (2008 stimulus-payment file)")}
    for year, (pattern, what) in wanted.items():
        if year not in packages:
            continue
        path = packages[year][0].package_path
        members = _addendum_members(path, year, pattern)
        tokens = sorted(m.token for m in members)
        expected = list(TAX_TOKENS) if year == 2001 else ["08"]
        if len(set(tokens)) < len(tokens):
            names = ", ".join(m.name for m in members)
            raise DataError(f"{path}: member {what} appears twice ({names}); keep one copy")
        if tokens != expected:
            raise DataError(f"{path}: member {what} not found (found {len(members)} matching "
                            f"files); download intrvw{year % 100:02d}.zip again from {source}")
        if year == 2001:
            name, frame = REBATE_2001, read_rebate_2001(members)
        else:
            name = STIMULUS_2008
            frame, dropped = read_stimulus_2008(members[0])
            counts.update(dropped)
        for column in ("cex_source_package", "cex_source_member", "cex_quarter_token"):
            if column in frame.columns:
                frame[column] = frame[column].astype("string")
        counts[f"{name}_unlinked"] = link_interviews(frame, table, name)
        frames[name] = frame
        if not path.is_file():
            inputs += [path / m.name for m in members]
    return frames, inputs, counts


def read_cex_interview(
    path: Path, source: str = SOURCE_URL, crosswalk: Path | None = None
) -> tuple[dict[str, pd.DataFrame], list[Path], dict[str, int]]:
    """All packages at `path` -> (output tables by name, input files, counts for the report)."""
    packages = find_packages(Path(path), source)
    frames: list[pd.DataFrame] = []
    counts = {"packages": len(packages), "fmli_members": 0, "fmli_records": 0,
              "fmli_members_without_spending": 0, "fmli_members_without_characteristics": 0}
    inputs: list[Path] = []
    for year in sorted(packages):
        for member in packages[year]:
            result = read_fmli(member, _package_name(member))
            frames.append(result.frame)
            counts["fmli_members"] += 1
            counts["fmli_records"] += len(result.frame)
            if not result.has_spending:
                counts["fmli_members_without_spending"] += 1
                log.warning("%s: no spending summary columns; spending is NA", member.label)
            if not result.has_characteristics:
                counts["fmli_members_without_characteristics"] += 1
                log.warning("%s: no consumer-unit characteristics; they are NA", member.label)
            if not member.is_zip:
                inputs.append(member.package_path / member.name)
        first = packages[year][0]
        if first.is_zip:
            inputs.append(first.package_path)
    candidates = pd.concat(frames, ignore_index=True)
    table = finish(candidates, crosswalk)
    counts["fmli_overlap_copies_dropped"] = len(candidates) - len(table)
    addenda, addendum_inputs, addendum_counts = read_addenda(packages, table, source)
    counts.update(addendum_counts)
    return {OUTPUT_NAME: table, **addenda}, inputs + addendum_inputs, counts


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read every package under `survey.raw.interview`; write `cex_interview.parquet` and, when
    packages 2001 / 2008 are read, `cex_rebate_2001.parquet` / `cex_stimulus_2008.parquet`."""
    started = time.perf_counter()
    source = survey.source_url or SOURCE_URL
    path = raw_path(survey, "interview", raw_dir, hint="a folder of intrvwYY.zip packages")
    crosswalk = None
    if survey.raw.get("release_crosswalk"):  # optional; empty = no release dates
        crosswalk = raw_path(survey, "release_crosswalk", raw_dir)
    tables, inputs, counts = read_cex_interview(path, source, crosswalk)
    if crosswalk is not None:
        inputs.append(crosswalk)
    report = write_outputs(survey, out_dir, tables, inputs, started)
    report.rows.update(counts)
    return report
