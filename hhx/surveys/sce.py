"""NY Fed Survey of Consumer Expectations public microdata (core + topical modules) -> parquet.

Facts: shared/spec/00_common.md 1.3 (SCE row), 1.8 and 2 (SCE release rule); the SCE tasks of
10_tasks (12-17, 19) and 20_tasks (0.6, 7-10, 12-13) read the outputs.

Inputs (`survey.raw`, relative to data.raw_dir; conf/survey/sce.yaml): the nine NY Fed workbooks
of spec 1.8, read with openpyxl in read-only mode:

| key | module | sheet(s) | header row (0-based) | id / date / weight |
|---|---|---|---|---|
| core_13_16, core_17_19, core_20_24, core_latest | core | `Data` | 1 | userid / date / weight |
| household_spending | household_spending | `Data` | 1 | userid / date / - |
| labor_market | labor_market | `Data` | 1 | userid / date / - |
| public_policy | public_policy | `Data` | 10 | userid / date / - |
| housing | housing | `Data {year}`, `Codebook {year}` 2014-24 | 0 | userid / year*100+2 / weights |
| job_search | job_search | `Data` | 0 | userid / year*100+10 / survey_weight |

A key set to null or '' skips that workbook on purpose (e.g. `survey.raw.core_latest=null`);
a key that names a file that is not there is an error naming the file. At least one core
workbook is required. The optional key `release_crosswalk` names the reference's
`release_sce.csv` (`module, survey_year, survey_month, release_date` [+ `source`], validated by
hhx.surveys.release_dates), which then supplies release_date and release_date_source; it must
cover every module-month read.

Outputs, one row per respondent x survey month per module (`sce_<module>.parquet`), the
reference builder's (`scripts/1_preprocessing/sce.py`) columns and rules:
- structural columns: source, release_id, release_date, aggregate_release_date_proxy,
  microdata_release_lag_months, release_date_status, release_date_source, module, raw_file,
  respondent_id (userid as text), survey_year, survey_month, survey_date (first day of the month,
  or the workbook's own `survey_date`), panel_month (`tenure`; only where the sheet has it),
  weight_<module> (where the sheet has a weight column; spending, labor market and policy take
  the core row's weight, appended with `missing_core_weight`), source_wave_year (housing, job
  search). Housing sheets without `date` get date = year * 100 + 2 after userid (a `date` column
  must hold that value in every row); job search gets date = year * 100 + 10 after `year`.
- every workbook column as read: numbers int64 when whole and never blank, else float64 (the
  types of pandas' read_excel); a column holding any non-numeric text stays text; core
  workbooks are concatenated with the union of their columns.
- `<col>__clean` / `<col>__status` (valid, undocumented_special = <= -900 or non-numeric,
  invalid_range = outside the bounds, which wins: -999 in a 0-100 item is invalid_range), in the
  reference's order: density bins of Q9, Q9c, Q24, C1, qsp7dens (0-100); the task key items,
  unbounded (Q9_mean ..., Q13new, Q14new, Q17new, Q18new, Q22new, Q30new, qsp2, qsp12a_1-3,
  qsp13a_1-3, l3, js5, js6, rw2a, rw2b, q113, q115, q121, q122, qp2_1, qp2_7, qp2_16, HQ1_1,
  q1_1, HQ38, hq38, l1a_lfs_rc, l1_lfs_rc, l2_num_jobs, l7_days_spent_searching,
  l11_cps_job_earn_ann); then the probability / share items (0-100) not named before;
- density families (core Q9, Q9c, Q24, C1; spending qsp7dens): `<fam>__sum`, `<fam>__task_valid`
  (NA where no bin is answered), `<fam>__task_status` (valid, range_invalid, partial_missing,
  all_zero, all_same_nonzero, sum_off_100; |sum - 100| <= 1 tolerated);
- `<col>__label` from the manual label maps (housing also from its Codebook sheets); a code
  outside a map, a <= -900 special included, is an error, except `_HH_INC_DETAILED`;
- core: `age_years` (Q32 when reported, else the first reported Q32 advanced by elapsed months
  / 12, floored), `_HH_INC_DETAILED` (Q47 at panel month 1, D6 later);
- labor market: `reservation_wage_annual_full_time` (+ `_status`) = rw2a__clean x unit factor of
  rw2b (hour 40*52, week 52, two weeks 26, month 12, year 1; missing unit from 2017-03 = year);
- job search: semantic statuses for the documented 99999x codes, `l8_months_no_work__clean`
  (integer, 0 <= value <= 12 * age, age 18-100).
A respondent-month in two rows of a module (also across the four core workbooks) is an error,
as in the reference.

Release dates (spec 2): with `release_crosswalk` (the reference's release_sce.csv, whose
columns source, source_url, comments, aggregate_release_date_proxy and
microdata_release_lag_months are required as upstream) every field comes from it
(release_date_source = its `source` text). Without it (hhx's default; the reference always
needs the file) release_date = first day of the survey month + the module's lag (core 9,
household_spending 18, labor_market 18, public_policy 9, housing 18, job_search 9),
aggregate_release_date_proxy = the first day of the following month, source
`sce_<module>_<lag>m_inferred`; status `inferred_from_collection_month_and_official_lag`.

`sce_release_manifest.parquet`: one row per raw file, as upstream (release_id and release_date
of its latest row, the sources used, survey months covered, download URL, SHA-256); the notes
text is hhx's own.

Reading: openpyxl read-only, values only, rows converted to columns 20,000 at a time; workbooks
are read in parallel processes when they total over 8 MB. Housing labels come from the year's
`Codebook {year}` sheet (a column missing there takes the nearest year's entry); the manual maps
win for hq38, qh0, qh4a. Differences from the reference: a workbook can be skipped on purpose
(null key: that module gets no table); the reference keeps blank-named header columns as
`Unnamed: N` where hhx requires them empty and drops them; numeric text cells ("5") are read
as numbers; label columns are text, not pandas categoricals (same values).
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.base import (
    BuildReport,
    input_sha256,
    raw_path,
    require_file,
    sidecar_path,
    write_outputs,
)
from hhx.surveys.release_dates import (
    SCE_LAG_MONTHS,
    read_release_crosswalk,
    sce_inferred_release_date,
)

SOURCE_URL = "https://www.newyorkfed.org/microeconomics/sce"
MODULE_URLS = {
    "core": SOURCE_URL,
    "household_spending": SOURCE_URL + "/household-spending",
    "labor_market": SOURCE_URL + "/labor-market",
    "public_policy": SOURCE_URL + "/public-policy",
    "housing": SOURCE_URL + "/housing",
    "job_search": "https://www.newyorkfed.org/microeconomics/databank.html",
}
MODULES = ("core", "household_spending", "labor_market", "public_policy", "housing", "job_search")
RELEASE_LAG_MONTHS = SCE_LAG_MONTHS  # core 9, spending 18, labor 18, policy 9, housing 18, jobs 9
RELEASE_DATE_STATUS = "inferred_from_collection_month_and_official_lag"
MANIFEST_NAME = "sce_release_manifest"
HOUSING_YEARS = tuple(range(2014, 2025))
# Reading workbooks in parallel processes pays off above this many bytes in all.
PARALLEL_READ_BYTES = 8 * 1024 * 1024
CHUNK_ROWS = 20_000  # sheet rows converted to columns at a time


@dataclass(frozen=True)
class Workbook:
    """One raw workbook: its config key, module, path under micro/sce, sheet layout."""

    key: str
    module: str
    path: str  # default location relative to data.raw_dir (conf/survey/sce.yaml)
    what: str
    sheet: str = "Data"
    header: int = 1
    id_column: str = "userid"
    date_column: str = "date"
    weight_column: str = "weight"


WORKBOOKS = (
    Workbook("core_13_16", "core", "micro/sce/core/FRBNY-SCE-Public-Microdata-Complete-13-16.xlsx",
             "SCE core public microdata 2013-2016"),
    Workbook("core_17_19", "core", "micro/sce/core/FRBNY-SCE-Public-Microdata-Complete-17-19.xlsx",
             "SCE core public microdata 2017-2019"),
    Workbook("core_20_24", "core", "micro/sce/core/frbny-sce-public-microdata-20-24.xlsx",
             "SCE core public microdata 2020-2024"),
    Workbook("core_latest", "core", "micro/sce/core/frbny-sce-public-microdata-latest.xlsx",
             "SCE core public microdata (latest months)"),
    Workbook("household_spending", "household_spending",
             "micro/sce/household_spending/sce-household-spending-microdata.xlsx",
             "SCE Household Spending Survey microdata"),
    Workbook("labor_market", "labor_market",
             "micro/sce/labor_market/sce-labor-microdata-public.xlsx",
             "SCE Labor Market Survey microdata"),
    Workbook("public_policy", "public_policy",
             "micro/sce/public_policy/sce-policy-public-microdata.xlsx",
             "SCE Public Policy Survey microdata", header=10),
    Workbook("housing", "housing",
             "micro/sce/housing/FRBNY-SCE-Housing-Survey-Public-Microdata-Complete.xlsx",
             "SCE Housing Survey microdata", sheet="Data {year}", header=0,
             weight_column="weights"),
    Workbook("job_search", "job_search",
             "micro/sce/job_search/SCE-Public-LM-Quarterly-Microdata.xlsx",
             "SCE Job Search (October Labor Market) microdata", header=0,
             date_column="year", weight_column="survey_weight"),
)  # fmt: skip
BY_KEY = {w.key: w for w in WORKBOOKS}

# Columns a sheet must have (besides the id/date columns) for the derived columns.
REQUIRED_COLUMNS = {
    "core": ["tenure"],
    "labor_market": ["rw2a", "rw2b"],
    "job_search": ["age", "l8_months_no_work"],  # + the documented special-code columns
}
CORE_REQUIRED_AFTER_CONCAT = ["Q32", "Q47", "D6"]

# ---------------------------------------------------------------------------------------------
# __clean / __status companions (spec 1.8): (pattern, lower, upper); None bounds = unbounded.

_PROB = (0.0, 100.0)
_FREE = (None, None)
CORE_PROBABILITY_ITEMS = (
    "Q4new", "Q5new", "Q6new", "ES3new", "Q13new", "Q14new", "Q17new", "Q18new", "Q20new",
    "Q21new", "Q22new", "Q30new",
)  # fmt: skip
# Density families whose bins get 0-100 companions in every module.
DENSITY_PREFIXES = ("Q9", "Q9c", "Q24", "C1", "qsp7dens")
# The reference's task key items: companions without bounds (they come before the probability
# rules, so Q13new, Q14new, Q17new, Q18new, Q22new, Q30new, qsp12a_1-3, qsp13a_1-3, q113,
# q115, q121 and q122 stay unbounded although they are probabilities or shares).
TASK_KEY_ITEMS = {
    "core": ("Q9_mean", "Q9c_mean", "Q13new", "Q14new", "Q17new", "Q18new", "Q22new", "Q30new",
             "Q24_mean", "C1_mean"),
    "household_spending": ("qsp2", "qsp12a_1", "qsp12a_2", "qsp12a_3", "qsp13a_1", "qsp13a_2",
                           "qsp13a_3"),
    "labor_market": ("l3", "js5", "js6", "rw2a", "rw2b", "q113", "q115", "q121", "q122"),
    "public_policy": ("qp2_1", "qp2_7", "qp2_16"),
    "housing": ("HQ1_1", "q1_1", "HQ38", "hq38"),
    "job_search": ("l1a_lfs_rc", "l1_lfs_rc", "l2_num_jobs", "l7_days_spent_searching",
                   "l11_cps_job_earn_ann"),
}  # fmt: skip
# Probability and share items (0-100) by module, as full-match patterns.
PROBABILITY_ITEMS = {
    "core": "|".join(CORE_PROBABILITY_ITEMS),
    "public_policy": r"qp1x[123]_\d+",
    "household_spending": r"qsp(4|5)_\d+|qsp1[23]a_\d+",
    "labor_market": r"nl4_\d+|oo1_\d+|oo2b_\d+|oo2c\d+|oo2u|oo2e|oo2f|q113|q115|q119|q121|q122",
}
SPECIAL_AT_OR_BELOW = -900.0
DENSITY_FAMILIES = {"core": ("Q9", "Q9c", "Q24", "C1"), "household_spending": ("qsp7dens",)}
DENSITY_TOLERANCE = 1.0


def density_columns(family: str) -> list[str]:
    if family == "qsp7dens":
        return [f"qsp7dens_{i}" for i in range(1, 11)]
    return [f"{family}_bin{i}" for i in range(1, 11)]


# ---------------------------------------------------------------------------------------------
# Label maps (spec 1.8, 10_tasks 12, 20_tasks 0.6).

FINANCE_CHANGE = {1: "much worse off", 2: "somewhat worse off", 3: "about the same",
                  4: "somewhat better off", 5: "much better off"}  # fmt: skip
HEALTH = {1: "excellent", 2: "very good", 3: "good", 4: "fair", 5: "poor"}
INCOME_DETAILED = {
    1: "Less than $10,000", 2: "$10,000 to $19,999", 3: "$20,000 to $29,999",
    4: "$30,000 to $39,999", 5: "$40,000 to $49,999", 6: "$50,000 to $59,999",
    7: "$60,000 to $74,999", 8: "$75,000 to $99,999", 9: "$100,000 to $149,999",
    10: "$150,000 to $199,999", 11: "$200,000 or more",
}  # fmt: skip
YES_NO_12 = {1: "yes", 2: "no"}
YES_NO_01 = {0: "no", 1: "yes"}
IMPACT = {1: "very_negative", 2: "somewhat_negative", 3: "no_impact", 4: "somewhat_positive",
          5: "very_positive"}  # fmt: skip
DIRECTION = {1: "increase_or_expansion", 2: "decrease_or_reduction"}
RW_UNITS = {1: "hour", 2: "week", 3: "two weeks", 4: "month", 5: "year"}


def _same(*labels: str) -> dict[str, str]:
    return {label: label for label in labels}


LABELS: dict[str, dict[str, dict]] = {
    "core": {
        "_AGE_CAT": _same("Under 40", "40 to 60", "Over 60"),
        "_NUM_CAT": _same("High", "Low"),
        "_REGION_CAT": _same("Midwest", "Northeast", "South", "West"),
        "_EDU_CAT": _same("High School", "Some College", "College"),
        "_HH_INC_CAT": _same("Under 50k", "50k to 100k", "Over 100k"),
        "_HH_INC_DETAILED": INCOME_DETAILED,
        "Q1": FINANCE_CHANGE,
        "Q2": FINANCE_CHANGE,
        **{f"Q10_{i}": YES_NO_01 for i in range(1, 6)},
        "Q12new": {1: "work for someone else", 2: "are self-employed"},
        "Q15": YES_NO_12,
        "Q43": {1: "owns the home", 2: "rents the home", 3: "has another arrangement"},
        "Q44": YES_NO_12,
        "D3": YES_NO_12,
        "Q45b": HEALTH,
    },
    "household_spending": {
        "k2e": YES_NO_12,
        "qsp1": {1: "higher", 2: "lower"},
        "qsp12n": {
            1: "save or invest all", 2: "spend or donate all", 3: "pay down debt all",
            4: "save or invest and spend or donate", 5: "save or invest and pay down debt",
            6: "spend or donate and pay down debt",
            7: "save or invest, spend or donate, and pay down debt",
        },
        "qsp13new": {
            1: "reduce spending all", 2: "reduce saving all", 3: "increase borrowing all",
            4: "reduce spending and reduce saving", 5: "reduce spending and increase borrowing",
            6: "reduce saving and increase borrowing",
            7: "reduce spending, reduce saving, and increase borrowing",
        },
    },
    "labor_market": {
        "nl2b_1": {1: "full-time", 2: "part-time"},
        "nl3_1": {1: "accepted", 2: "accepted", 3: "rejected", 4: "still deciding"},
        "rw2b": RW_UNITS,
        "rw2b__clean": RW_UNITS,
    },
    "public_policy": {
        **{f"hidqp2_{i}": DIRECTION for i in (5, 6, 9, 16)},
        **{f"qp2_{i}": IMPACT for i in (5, 6, 9, 16)},
    },
    "housing": {"hq38": YES_NO_12, "qh0": YES_NO_12, "qh4a": YES_NO_12},
    "job_search": {c: YES_NO_01 for c in ("rw3_accept_relocation", "rw4_accept_commute",
                                          "rw6_accept_hours", "rw7_accept_healthins")},
}  # fmt: skip
# Labels of these housing columns come from the workbook's `Codebook {year}` sheets (the
# manual maps above win where both exist).
HOUSING_CODEBOOK_COLUMNS = ("HQ38", "hq38", "q38", "HQH0", "qh0", "HQH4a", "qh4a", "HQH5", "qh5",
                            "HQH5m", "qh5m")  # fmt: skip
UNMAPPED_ALLOWED = {"_HH_INC_DETAILED"}

# Job Search documented special codes (NY Fed SCE Labor Market Survey data codebook).
_DK = {999999: "dont_know_or_remember"}
_HOME = {999996: "mostly_works_from_home"}
_NOT = {999998: "would_not_accept"}
JOB_SEARCH_SPECIAL_CODES: dict[str, dict[int, str]] = {
    "ec1a_cps_job_employer_type_rc": _DK,
    "ec4b_cps_job_temp_duration": {999992: "less_than_one_month"},
    "ec5_cps_job_commute_time": _HOME,
    "el2a_last_job_employer_type_rc": _DK,
    "el6_last_job_commute_time": _HOME,
    "es9_selfemp_commute_time": _HOME,
    "hh4_spouse_earn_hrly": _DK,
    "jh10_prev_job_earn_hrly": _DK,
    "jh10s_prev_job_earn_hrly": _DK,
    "jh13_cpsj_wks_spent_search": {999993: "opportunity_without_search", **_DK},
    "jh13b_cpsj_wks_btwn_jobs": {999994: "started_immediately", **_DK},
    "jh14_cpsj_applications": _DK,
    "jh15_cpsj_contacts": _DK,
    "jh15b_cpsj_contacts_unsolicited": _DK,
    "jh15c_cpsj_contacts_referral": _DK,
    "jh16_cpsj_offers": _DK,
    "jh1c_cpsj_refer_occup": _DK,
    "jh2b_cpsj_wks_btwn_jobs": _DK,
    "jh2bs_semp_wks_btwn_jobs": _DK,
    "jh2d_cpsj_adv_notice_mos": _DK,
    "jh2ds_semp_adv_notice_mos": _DK,
    "jh5bs_semp_usual_hrs": _DK,
    "jh9_cps_job_start_earn_hrly": _DK,
    "js25c_referral_occup": _DK,
    "js28_accept_start_time": {999997: "already_started"},
    "l8_months_no_work": {999995: "never_had_paid_job"},
    "rw3b_pct_incr_relocation": _NOT,
    "rw4b_pct_incr_commute": _NOT,
    "rw6b_pct_incr_hours": _NOT,
    "rw7b_pct_incr_healthins": _NOT,
}
NEVER_WORKED = 999995
REQUIRED_COLUMNS["job_search"] += [c for c in JOB_SEARCH_SPECIAL_CODES if c != "l8_months_no_work"]
RW_ANNUAL_FACTORS = {"hour": 40.0 * 52.0, "week": 52.0, "two weeks": 26.0, "month": 12.0,
                     "year": 1.0}  # fmt: skip
RW_ANNUAL_FROM = pd.Timestamp("2017-03-01")


# ---------------------------------------------------------------------------------------------
# Reading workbooks


def _numbers(values: list | tuple) -> np.ndarray:
    """Numbers as int64 when every cell holds a whole number, else float64: the column types
    pandas' `read_excel` (the reference's reader) gives, so integer columns stay integers."""
    arr = np.array(values, dtype="float64")
    if len(arr) and not np.isnan(arr).any() and (arr == np.round(arr)).all() and (
            np.abs(arr) < 2**53).all():
        return arr.astype("int64")
    return arr


def _column_values(values: tuple) -> np.ndarray:
    """One sheet column as numbers when every cell is a number (or blank / blank text; int64
    without blanks and fractions, else float64), else as text (object array of str/None).
    Excel dates stay datetimes."""
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if kinds <= {int, float, bool}:
        return _numbers(values)
    cleaned: list = []
    text = False
    for v in values:
        if isinstance(v, str):
            v = v.strip()
            if v == "":
                v = None
            else:
                try:
                    v = float(v)
                except ValueError:
                    text = True
        cleaned.append(v)
    kinds = set(map(type, cleaned)) - {type(None)}
    if not text and kinds <= {int, float, bool}:
        return _numbers(cleaned)
    if kinds <= {dt.datetime, dt.date}:
        return pd.to_datetime(pd.Series(cleaned, dtype="object")).to_numpy()
    return np.array([_as_text(v) for v in values], dtype="object")


def _as_text(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    text = str(v).strip()
    return text or None


def _column_letter(i: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(i + 1)


def _blank(v) -> bool:
    return v is None or v == ""


def _join_chunks(chunks: list[np.ndarray]) -> np.ndarray:
    """Per-chunk column arrays -> one array; text wins over numbers (numbers then as text)."""
    if all(c.dtype.kind in "if" for c in chunks):
        return np.concatenate(chunks) if chunks else np.array([], dtype="float64")
    parts = []
    for c in chunks:
        if c.dtype.kind in "if":
            c = np.array([None if np.isnan(v) else _as_text(v) for v in c.tolist()], dtype=object)
        elif c.dtype.kind == "M":
            c = np.array([None if pd.isna(v) else str(pd.Timestamp(v).date()) for v in c],
                         dtype=object)
        parts.append(c)
    return np.concatenate(parts)


def sheet_frame(rows: Iterable[tuple], header: int, where: str,
                chunk_rows: int = CHUNK_ROWS) -> pd.DataFrame:
    """Rows of a sheet -> DataFrame: row `header` (0-based) names the columns, later rows are
    data; fully blank rows are dropped; blank-named columns must be empty. Rows are converted
    `chunk_rows` at a time, column-wise, so a large sheet never sits in memory as cells."""
    it = iter(rows)
    head = list(islice(it, header + 1))
    if len(head) <= header:
        raise DataError(f"{where}: has {len(head)} rows, so no header at row {header + 1}; "
                        "is this the NY Fed workbook as downloaded?")
    names = [_as_text(v) for v in head[header]]
    while names and names[-1] is None:
        names.pop()
    seen: set[str] = set()
    for name in names:
        if name is not None and name in seen:
            raise DataError(f"{where}: column {name} appears twice in header row {header + 1}")
        seen.add(name)
    keep = [i for i, name in enumerate(names) if name is not None]
    unnamed = [i for i, name in enumerate(names) if name is None]
    width = len(names)
    chunks: list[list[np.ndarray]] = [[] for _ in keep]
    while batch := list(islice(it, chunk_rows)):
        body = []
        for r in batch:
            if all(_blank(v) for v in r):
                continue
            extra = next((i for i in chain(unnamed, range(width, len(r)))
                          if i < len(r) and not _blank(r[i])), None)
            if extra is not None:
                raise DataError(f"{where}: column {_column_letter(extra)} holds data but has no "
                                f"name in header row {header + 1}")
            body.append(r[:width] + (None,) * (width - len(r)))
        if not body:
            continue
        columns = list(zip(*body, strict=True))
        for j, i in enumerate(keep):
            chunks[j].append(_column_values(columns[i]))
    return pd.DataFrame({names[i]: _join_chunks(chunks[j]) for j, i in enumerate(keep)})


def _open(path: Path, what: str, url: str):
    from openpyxl import load_workbook

    require_file(path, what, url)
    try:
        return load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises zipfile/KeyError/InvalidFileException variants
        raise DataError(f"{path}: not a readable .xlsx workbook ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else ''}); download it again "
                        f"from {url}") from None


def _sheet_rows(book, sheet: str, path: Path) -> Iterator[tuple]:
    """The sheet's rows, streamed (the workbook must stay open while they are read)."""
    if sheet not in book.sheetnames:
        raise DataError(f"{path}: sheet {sheet!r} not found (sheets: "
                        f"{', '.join(book.sheetnames)}); is this the NY Fed workbook?")
    ws = book[sheet]
    ws.reset_dimensions()  # some writers store a wrong <dimension>; read what is there
    return ws.iter_rows(values_only=True)


@dataclass
class Piece:
    """One sheet as read: raw columns plus where it came from."""

    key: str
    module: str
    path: Path
    sheet: str
    frame: pd.DataFrame
    wave_year: int | None = None
    codebook: dict[str, dict[object, str]] | None = None


def read_workbook(key: str, path: Path) -> list[Piece]:
    """Every sheet hhx reads from one workbook (housing: one piece per year)."""
    spec = BY_KEY[key]
    url = MODULE_URLS[spec.module]
    book = _open(path, spec.what, url)
    try:
        if spec.module != "housing":
            frame = _data_sheet(book, spec, spec.sheet, path)
            return [Piece(key, spec.module, path, spec.sheet, frame)]
        pieces = []
        for year in HOUSING_YEARS:
            sheet = spec.sheet.format(year=year)
            frame = _data_sheet(book, spec, sheet, path)
            codebook = parse_codebook(list(_sheet_rows(book, f"Codebook {year}", path)),
                                      set(frame.columns))
            pieces.append(Piece(key, "housing", path, sheet, frame, year, codebook))
        return pieces
    finally:
        book.close()


def _data_sheet(book, spec: Workbook, sheet: str, path: Path) -> pd.DataFrame:
    """A data sheet; when the id column is not in the header row, say where it is instead."""
    rows = _sheet_rows(book, sheet, path)
    where = f"{path} sheet {sheet}"
    head = list(islice(rows, max(spec.header + 1, 40)))
    header = head[spec.header] if len(head) > spec.header else ()
    if spec.id_column not in [_as_text(v) for v in header]:
        found = next((i for i, row in enumerate(head)
                      if spec.id_column in [_as_text(v) for v in row]), None)
        hint = (f" (it is in row {found + 1}: the sheet's layout differs from the NY Fed "
                "workbook hhx reads)" if found is not None else "")
        raise DataError(f"{where}: column {spec.id_column} not found in header row "
                        f"{spec.header + 1}{hint}; download the workbook again from "
                        f"{MODULE_URLS[spec.module]}")
    return sheet_frame(chain(head, rows), spec.header, where)


_BRACKET = re.compile(r"^\[([A-Za-z0-9_]+)\]\s*:?\s*(.*)$")


def _code(text: str) -> object:
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


def parse_codebook(rows: list[tuple], variables: set[str]) -> dict[str, dict[object, str]]:
    """A housing `Codebook {year}` sheet -> {data column: {code: label}}.

    Layout of the NY Fed codebooks: a variable block starts with a row whose first cell is the
    variable name (or `[name]: question text`), followed by value rows with the numeric code in
    column B and its label in column C; a blank row ends the block. Names match the year's data
    columns case-insensitively; blocks of other names are skipped."""
    lookup = {v.lower(): v for v in variables}
    out: dict[str, dict[object, str]] = {}
    current: str | None = None
    for row in rows:
        cells = ["" if v is None else str(v).strip() for v in row] + ["", "", ""]
        if not any(cells):
            current = None
            continue
        first = cells[0]
        if first:
            match = _BRACKET.match(first)
            name = match.group(1) if match else first.split(":", 1)[0].strip()
            current = lookup.get(name.lower())
            continue
        code = _code(cells[1])
        if current is not None and cells[2] and not isinstance(code, str):  # skips "Code"
            out.setdefault(current, {})[code] = " ".join(cells[2].split())
    return out


def _read_all(jobs: list[tuple[str, Path]]) -> list[list[Piece]]:
    """Read workbooks, in parallel processes when they are big enough to be worth it."""
    import os

    size = sum(p.stat().st_size for _, p in jobs)
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers > 1 and size >= PARALLEL_READ_BYTES:
        from joblib import Parallel, delayed

        return Parallel(n_jobs=workers)(delayed(read_workbook)(k, p) for k, p in jobs)
    return [read_workbook(k, p) for k, p in jobs]


# ---------------------------------------------------------------------------------------------
# Structural columns and release dates


CROSSWALK_COLUMNS = ["source", "source_url", "comments", "aggregate_release_date_proxy",
                     "microdata_release_lag_months"]  # besides the keys and release_date


@dataclass
class ReleaseCrosswalk:
    """A validated `release_sce.csv` (hhx.surveys.release_dates) as a lookup."""

    path: Path
    # (module, year, month) -> (release date, source text, aggregate proxy date, lag months)
    dates: dict[tuple[str, int, int], tuple[str, str, str, int]]

    @classmethod
    def read(cls, path: Path) -> ReleaseCrosswalk:
        """The reference's columns are required: keys, release_date, source, source_url,
        comments (non-empty), aggregate_release_date_proxy and microdata_release_lag_months
        (the module's lag)."""
        keys = read_release_crosswalk("sce", path)
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
        raw.columns = [c.strip().lower() for c in raw.columns]
        absent = [c for c in CROSSWALK_COLUMNS if c not in raw.columns]
        if absent:
            raise DataError(f"{path}: column(s) {absent} missing; release_sce.csv needs module, "
                            "survey_year, survey_month, release_date, " + ", ".join(
                                CROSSWALK_COLUMNS))
        dates = {}
        for i, (row, key) in enumerate(zip(raw.to_dict("records"), keys.to_dict("records"),
                                           strict=True), start=2):
            empty = [c for c in ("source", "source_url", "comments") if not row[c].strip()]
            try:
                proxy = dt.date.fromisoformat(row["aggregate_release_date_proxy"].strip()[:10])
                lag = int(row["microdata_release_lag_months"])
            except ValueError:
                proxy = lag = None
            module = key["module"].strip()
            if empty or proxy is None or lag != RELEASE_LAG_MONTHS.get(module):
                problem = (f"empty {empty[0]}" if empty else "aggregate_release_date_proxy or "
                           f"microdata_release_lag_months invalid (lag for {module} is "
                           f"{RELEASE_LAG_MONTHS.get(module)})")
                raise DataError(f"{path}:{i}: {problem}")
            dates[(module, int(key["survey_year"]), int(key["survey_month"]))] = (
                key["release_date"], row["source"].strip(), proxy.isoformat(), lag)
        return cls(path, dates)


def release_columns(
    module: str, year: np.ndarray, month: np.ndarray, crosswalk: ReleaseCrosswalk | None = None
) -> dict[str, np.ndarray]:
    """release_date, aggregate_release_date_proxy, microdata_release_lag_months,
    release_date_status, release_date_source for survey months (year, month): the lag rule
    (first day of the survey month + the module's lag), or the crosswalk's dates."""
    lag = RELEASE_LAG_MONTHS[module]
    index = np.asarray(year, dtype="int64") * 12 + np.asarray(month, dtype="int64") - 1
    months, inverse = np.unique(index, return_inverse=True)
    release, proxy, source, lags = [], [], [], []
    for y, m in zip((months // 12).tolist(), (months % 12 + 1).tolist(), strict=True):
        if crosswalk is None:
            release.append(sce_inferred_release_date(module, y, m))
            proxy.append(dt.date(y + m // 12, m % 12 + 1, 1).isoformat())
            source.append(f"sce_{module}_{lag}m_inferred")
            lags.append(lag)
        elif (module, y, m) in crosswalk.dates:
            date, src, agg, months_lag = crosswalk.dates[(module, y, m)]
            release.append(date)
            source.append(src)
            proxy.append(agg)
            lags.append(months_lag)
        else:
            raise DataError(f"{crosswalk.path}: no release date for SCE {module} {y}-{m:02d}; "
                            "add the row")
    n = len(index)
    return {
        "release_date": np.array(release, dtype="object")[inverse],
        "aggregate_release_date_proxy": np.array(proxy, dtype="object")[inverse],
        "microdata_release_lag_months": np.array(lags, dtype="int64")[inverse],
        "release_date_status": np.full(n, RELEASE_DATE_STATUS, dtype="object"),
        "release_date_source": np.array(source, dtype="object")[inverse],
    }


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _where(piece: Piece) -> str:
    return f"{piece.path} sheet {piece.sheet}"


def _numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(frame[column], errors="coerce")


def structural(piece: Piece, crosswalk: ReleaseCrosswalk | None) -> pd.DataFrame:
    """Structural columns + every raw column of one sheet (spec 1.8)."""
    spec = BY_KEY[piece.key]
    df, where = piece.frame, _where(piece)
    url = MODULE_URLS[spec.module]
    for column in [spec.id_column, spec.date_column if piece.module != "housing" else None,
                   *REQUIRED_COLUMNS.get(piece.module, [])]:
        if column is not None and column not in df.columns:
            raise DataError(f"{where}: column {column} not found in header row {spec.header + 1}; "
                            f"download the workbook again from {url}")
    n = len(df)
    if piece.module == "housing":
        expected = piece.wave_year * 100 + 2
        if "date" in df.columns:  # must be the February fielding month in every row
            seen = _numeric(df, "date")
            bad = seen.isna() | (seen != expected)
            if bad.any():
                shown = "blank" if pd.isna(seen[bad].iloc[0]) else f"{seen[bad].iloc[0]:g}"
                raise DataError(f"{where}: column date holds {shown} in data row "
                                f"{int(np.flatnonzero(bad.to_numpy())[0]) + 1}; the "
                                f"{piece.wave_year} housing wave is fielded in February "
                                f"({expected})")
        else:  # the reference adds it after userid
            df = df.copy()
            df.insert(list(df.columns).index(spec.id_column) + 1, "date",
                      np.full(n, expected, dtype="int64"))
        date = np.full(n, float(expected))
    elif piece.module == "job_search":
        year = _numeric(df, "year")
        if (year.isna() | (year != year.round())).any():
            raise DataError(f"{where}: column year is blank or not a year in some row")
        date = (year * 100 + 10).to_numpy()
        df = df.copy()  # the reference adds date = year * 100 + 10 after year
        df.insert(list(df.columns).index("year") + 1, "date", date.astype("int64"))
    else:
        date = _numeric(df, spec.date_column).to_numpy()
        text_date = pd.isna(date) & pd.notna(df[spec.date_column].to_numpy())
        if text_date.any():
            raise DataError(f"{where}: column {spec.date_column} holds "
                            f"{df[spec.date_column][text_date].iloc[0]!r}, not a YYYYMM month")
    if pd.isna(date).any():
        raise DataError(f"{where}: column {spec.date_column} is blank in data row "
                        f"{int(np.flatnonzero(pd.isna(date))[0]) + 1}")
    year, month = (date // 100).astype("int64"), (date % 100).astype("int64")
    bad = (month < 1) | (month > 12) | (year < 1900) | (date != np.round(date))
    if bad.any():
        raise DataError(f"{where}: column {spec.date_column} holds {date[bad][0]:g}, not a "
                        "YYYYMM month")
    ids = pd.Series([_as_text(v) for v in df[spec.id_column].tolist()], dtype="string")
    if ids.isna().any():
        raise DataError(f"{where}: column {spec.id_column} is blank in data row "
                        f"{int(np.flatnonzero(ids.isna())[0]) + 1}")
    df = df.copy()
    for column in (spec.id_column, spec.date_column, "tenure"):  # whole numbers as Int64
        values = df[column] if column in df.columns else None
        if values is not None and values.dtype == "float64" and (
                values.dropna() == values.dropna().round()).all():
            df[column] = values.astype("Int64")
    if "survey_date" in df.columns:
        survey_date = pd.to_datetime(df["survey_date"], errors="coerce")
        if survey_date.isna().any():
            raise DataError(f"{where}: column survey_date is blank or not a date in some row")
        df = df.drop(columns=["survey_date"])
    else:
        survey_date = pd.to_datetime(pd.DataFrame({"year": year, "month": month, "day": 1}))
    release = release_columns(piece.module, year, month, crosswalk)
    raw_file = f"{piece.path.parent.name}/{piece.path.name}"
    slug = _slug(piece.path.stem)
    out = pd.DataFrame({
        "source": "sce",
        "release_id": [f"sce_{piece.module}_{slug}_{y:04d}_{m:02d}_{r.replace('-', '_')}"
                       for y, m, r in zip(year, month, release["release_date"], strict=True)],
        **{k: release[k] for k in ("release_date", "aggregate_release_date_proxy",
                                   "microdata_release_lag_months", "release_date_status",
                                   "release_date_source")},
        "module": piece.module,
        "raw_file": raw_file,
        "respondent_id": ids.to_numpy(),
        "survey_year": year,
        "survey_month": month,
        "survey_date": survey_date.astype("datetime64[ns]").to_numpy(),
    })  # fmt: skip
    out["respondent_id"] = out["respondent_id"].astype("string")
    if "tenure" in df.columns:  # as the reference: no panel_month where the sheet has no tenure
        out["panel_month"] = _integer(df, "tenure", where)
    if spec.weight_column in df.columns:
        out[f"weight_{piece.module}"] = _numeric(df, spec.weight_column)
    if piece.wave_year is not None or piece.module == "job_search":
        out["source_wave_year"] = (np.full(n, piece.wave_year) if piece.wave_year is not None
                                   else year)
    out["_sheet"] = piece.sheet  # dropped before writing; locates errors and manifest rows
    dup = out.duplicated(["respondent_id", "survey_year", "survey_month"])
    if dup.any():
        first = out[dup].iloc[0]
        raise DataError(f"{where}: {spec.id_column} {first['respondent_id']} appears twice for "
                        f"{first['survey_year']}-{first['survey_month']:02d}; a sheet must hold "
                        "one row per respondent and month")
    return pd.concat([out.reset_index(drop=True), df.reset_index(drop=True)], axis=1)


def _integer(df: pd.DataFrame, column: str, where: str) -> pd.array:
    values = _numeric(df, column)
    bad = (values.notna() & (values != values.round())) | (values.isna() & df[column].notna())
    if bad.any():
        raise DataError(f"{where}: column {column} holds {df[column][bad].iloc[0]!r}, not a "
                        "whole number")
    return values.astype("Int64").array


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Union of columns; a column that is text in one sheet and numbers in another becomes text
    (numbers written as the workbook shows them)."""
    if len(frames) == 1:
        return frames[0]
    kinds: dict[str, set[bool]] = {}
    for frame in frames:
        for column, dtype in frame.dtypes.items():
            kinds.setdefault(column, set()).add(pd.api.types.is_numeric_dtype(dtype))
    out = pd.concat(frames, ignore_index=True, sort=False)
    for column, seen in kinds.items():
        if seen == {True, False}:
            out[column] = np.array(
                [None if v is None or (isinstance(v, float) and np.isnan(v)) else _as_text(v)
                 for v in out[column].tolist()], dtype="object")
    return out


def _file_of(frame: pd.DataFrame, mask: pd.Series | np.ndarray) -> str:
    """`<raw_file> sheet <sheet>` of the first row where mask holds (for error messages)."""
    row = frame.loc[np.asarray(mask)].iloc[0]
    return f"{row['raw_file']} sheet {row['_sheet']}"


# ---------------------------------------------------------------------------------------------
# Core derived columns, duplicates across core workbooks, module weights


def check_unique(table: pd.DataFrame, module: str) -> None:
    """One row per respondent x survey month (the reference refuses repeats, also across the
    four core workbooks)."""
    dup = table.duplicated(["respondent_id", "survey_year", "survey_month"], keep=False)
    if dup.any():
        rows = table[dup]
        first = rows.iloc[0]
        same = rows[(rows["respondent_id"] == first["respondent_id"])
                    & (rows["survey_year"] == first["survey_year"])
                    & (rows["survey_month"] == first["survey_month"])]
        files = ", ".join(f"{f} sheet {sh}" for f, sh in zip(same["raw_file"], same["_sheet"],
                                                             strict=True))
        raise DataError(f"SCE {module}: respondent {first['respondent_id']} appears more than "
                        f"once for {first['survey_year']}-{int(first['survey_month']):02d} "
                        f"({files}); the module must hold one row per respondent and month "
                        "(remove the repeated rows from the later workbook)")


def add_core_derived(core: pd.DataFrame) -> pd.DataFrame:
    """age_years and _HH_INC_DETAILED (20_tasks 0.6)."""
    missing = [c for c in CORE_REQUIRED_AFTER_CONCAT if c not in core.columns]
    if missing:
        raise DataError(f"SCE core workbooks: column(s) {missing} not found in any core "
                        f"workbook; download them again from {MODULE_URLS['core']}")
    month_index = core["survey_year"].to_numpy() * 12 + core["survey_month"].to_numpy()
    reported = _numeric(core, "Q32")  # as reported (the reference does not screen specials)
    first = (pd.DataFrame({"id": core["respondent_id"], "m": month_index, "age": reported})
             .dropna(subset=["age"]).sort_values(["id", "m"], kind="stable")
             .drop_duplicates("id"))
    base = core[["respondent_id"]].merge(first.rename(columns={"id": "respondent_id"}),
                                         on="respondent_id", how="left")
    advanced = np.floor(base["age"].to_numpy() + (month_index - base["m"].to_numpy()) / 12.0)
    core["age_years"] = reported.where(reported.notna(), advanced).to_numpy()
    panel = core["panel_month"].astype("Float64").to_numpy(dtype="float64", na_value=np.nan)
    q47, d6 = _numeric(core, "Q47").to_numpy(), _numeric(core, "D6").to_numpy()
    core["_HH_INC_DETAILED"] = np.where(panel == 1, q47, np.where(panel > 1, d6, np.nan))
    return core


def attach_core_weights(table: pd.DataFrame, core: pd.DataFrame, module: str) -> pd.DataFrame:
    """Spending, labor market, policy: `weight_<module>` from the core row of the same
    respondent-month where the sheet has no weight column, then `missing_core_weight` (both
    appended, as the reference's merge does)."""
    weight = f"weight_{module}"
    if weight not in table.columns:
        keys = ["respondent_id", "survey_year", "survey_month"]
        merged = table[keys].merge(core[keys + ["weight_core"]], on=keys, how="left")
        assert len(merged) == len(table)
        table[weight] = merged["weight_core"].to_numpy()
    table["missing_core_weight"] = table[weight].isna().to_numpy()
    return table


# ---------------------------------------------------------------------------------------------
# Companion columns


def clean_status(values: pd.Series, lower: float | None, upper: float | None
                 ) -> tuple[np.ndarray, pd.Series]:
    """(`__clean`, `__status`): valid / undocumented_special (<= -900 or not a number) /
    invalid_range (outside the bounds; wins over special, so -999 in a 0-100 item is
    invalid_range, as in the reference); blank -> NA."""
    numeric = pd.to_numeric(values, errors="coerce").to_numpy(dtype="float64")
    present = values.notna().to_numpy()
    special = present & (np.isnan(numeric) | (numeric <= SPECIAL_AT_OR_BELOW))
    with np.errstate(invalid="ignore"):
        out_of_range = present & ~np.isnan(numeric) & (
            (numeric < lower if lower is not None else False)
            | (numeric > upper if upper is not None else False))
    valid = present & ~special & ~out_of_range
    status = np.full(len(values), None, dtype="object")
    status[valid], status[special] = "valid", "undocumented_special"
    status[out_of_range] = "invalid_range"
    return np.where(valid, numeric, np.nan), pd.Series(status, dtype="string")


def companion_specs(columns: list[str], module: str) -> list[tuple[str, float | None,
                                                                   float | None]]:
    """(column, lower, upper) of every companion, in the reference's order: density bins of
    any module (0-100), then the module's task key items (unbounded), then its probability and
    share items (0-100); a column keeps the first rule that names it."""
    out: dict[str, tuple[float | None, float | None]] = {}
    for prefix in DENSITY_PREFIXES:
        regex = re.compile(rf"{re.escape(prefix)}_(bin|dens_?)?\d+")
        for column in columns:
            if regex.fullmatch(column):
                out.setdefault(column, _PROB)
    for column in TASK_KEY_ITEMS.get(module, ()):
        if column in columns:
            out.setdefault(column, _FREE)
    regex = PROBABILITY_ITEMS.get(module)
    if regex is not None:
        for column in columns:
            if re.fullmatch(regex, column):
                out.setdefault(column, _PROB)
    return [(c, lo, hi) for c, (lo, hi) in out.items()]


def companion_columns(table: pd.DataFrame, module: str) -> dict[str, object]:
    additions: dict[str, object] = {}
    for column, lower, upper in companion_specs(list(table.columns), module):
        clean, status = clean_status(table[column], lower, upper)
        additions[f"{column}__clean"] = clean
        additions[f"{column}__status"] = status.array
    return additions


def density_status(bins: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
    """(`__sum`, `__task_status`) of a 10-bin family (spec 1.8; |sum - 100| <= 1 tolerated)."""
    numeric = bins.apply(pd.to_numeric, errors="coerce").to_numpy(dtype="float64")
    present = bins.notna().to_numpy()
    any_present, all_present = present.any(axis=1), present.all(axis=1)
    bad = (present & (np.isnan(numeric) | (numeric < 0) | (numeric > 100))).any(axis=1)
    all_numeric = (~np.isnan(numeric)).all(axis=1)
    total = np.where(present.any(axis=1) & (~np.isnan(numeric)).any(axis=1),
                     np.nansum(numeric, axis=1), np.nan)
    off = all_numeric & (np.abs(total - 100.0) > DENSITY_TOLERANCE)
    zero = all_numeric & (numeric == 0).all(axis=1)
    same = all_numeric & (numeric == numeric[:, :1]).all(axis=1) & (numeric[:, 0] != 0) & off
    status = np.full(len(bins), None, dtype="object")
    # Later assignments win: range problems first, then missing bins, then the sum checks.
    status[any_present & all_numeric] = "valid"
    status[any_present & ~bad & off] = "sum_off_100"
    status[any_present & ~bad & same] = "all_same_nonzero"
    status[any_present & ~bad & zero] = "all_zero"
    status[any_present & ~bad & ~all_present] = "partial_missing"
    status[any_present & bad] = "range_invalid"
    return total, pd.Series(status, dtype="string")


def density_columns_for(table: pd.DataFrame, module: str) -> dict[str, object]:
    additions: dict[str, object] = {}
    for family in DENSITY_FAMILIES.get(module, ()):
        columns = density_columns(family)
        if not all(c in table.columns for c in columns):
            continue
        total, status = density_status(table[columns])
        additions[f"{family}__sum"] = total
        # NA where the family is not answered at all (status NA), as the reference
        additions[f"{family}__task_valid"] = pd.array(status == "valid", dtype="boolean")
        additions[f"{family}__task_status"] = status.array
    return additions


def label_series(table: pd.DataFrame, column: str, mapping: dict, module: str,
                 values: pd.Series | None = None) -> pd.Series:
    """Codes -> labels. Blank and <= -900 specials -> NA; any other code outside the map is an
    error naming the workbook, column and code (except `_HH_INC_DETAILED`)."""
    raw = table[column] if values is None else values
    text_keys = all(isinstance(k, str) for k in mapping)
    if text_keys:
        codes = pd.Series([_as_text(v) for v in raw.tolist()], dtype="object", index=raw.index)
        present = codes.notna()
        labels = codes.map(mapping)
    else:
        numeric = pd.to_numeric(raw, errors="coerce")
        present = raw.notna()  # a special code (<= -900) has no label: an error, as upstream
        # int keys match equal floats (hash(1.0) == hash(1))
        labels = numeric.map(mapping).where(present)
    unknown = present & labels.isna()
    if unknown.any() and column not in UNMAPPED_ALLOWED:
        code = raw[unknown].iloc[0]
        code = (f"{float(code):g}" if isinstance(code, (int, float, np.integer, np.floating))
                else repr(code))
        allowed = ", ".join(str(k) for k in mapping)
        raise DataError(f"{_file_of(table, unknown)}: column {column} holds code {code}, which "
                        f"is not in the SCE {module} codebook ({allowed}); download the "
                        f"workbook again from {MODULE_URLS[module]}")
    return labels.astype("string")


def label_columns(table: pd.DataFrame, module: str, pending: dict[str, object]
                  ) -> dict[str, object]:
    additions: dict[str, object] = {}
    for column, mapping in LABELS.get(module, {}).items():
        if column in table.columns:
            additions[f"{column}__label"] = label_series(table, column, mapping, module).array
        elif column in pending:  # a companion, e.g. rw2b__clean
            values = pd.Series(pending[column], index=table.index)
            additions[f"{column}__label"] = label_series(table, column, mapping, module,
                                                         values).array
    return additions


def housing_codebook_labels(piece: Piece, frame: pd.DataFrame, others: list[Piece]
                            ) -> dict[str, object]:
    """`__label` of the codebook-labelled housing columns of one year's sheet; a column missing
    from this year's codebook uses the nearest year's entry that has it."""
    additions: dict[str, object] = {}
    for column in HOUSING_CODEBOOK_COLUMNS:
        if column not in frame.columns or column in LABELS["housing"]:
            continue
        ranked = sorted(others, key=lambda p: abs(p.wave_year - piece.wave_year))
        mapping = next((p.codebook[c] for p in [piece, *ranked] for c in p.codebook
                        if c.lower() == column.lower()), None)
        if mapping:
            additions[f"{column}__label"] = label_series(frame, column, mapping, "housing").array
    return additions


def reservation_wage(table: pd.DataFrame, pending: dict[str, object]) -> dict[str, object]:
    """Annual full-time reservation wage from rw2a__clean and the rw2b unit (spec 1.8)."""
    amount = pd.Series(pending["rw2a__clean"], index=table.index, dtype="float64")
    source_ok = pd.Series(pending["rw2a__status"], index=table.index) == "valid"
    unit = pd.Series(pending["rw2b__clean__label"], index=table.index, dtype="string")
    annual_regime = table["survey_date"] >= RW_ANNUAL_FROM
    unit = unit.mask(amount.notna() & annual_regime & unit.isna(), "year")
    contradiction = amount.notna() & annual_regime & unit.notna() & (unit != "year")
    if contradiction.any():
        row = table[contradiction].iloc[0]
        raise DataError(f"{_file_of(table, contradiction)}: column rw2b gives unit "
                        f"{unit[contradiction].iloc[0]!r} in {row['survey_year']}-"
                        f"{row['survey_month']:02d}; from March 2017 the reservation wage is "
                        "asked per year only")
    positive = source_ok & (amount > 0)
    factor = unit.map(RW_ANNUAL_FACTORS).astype("float64")
    annual = (amount * factor).where(positive & factor.notna())
    status = pd.Series(pd.NA, index=table.index, dtype="string")
    status[table["rw2a"].isna()] = "missing_amount"
    status[table["rw2a"].notna() & ~source_ok] = "invalid_source_amount"
    status[source_ok & (amount <= 0)] = "nonpositive_amount"
    status[positive & unit.isna()] = "missing_pre2017_unit"
    for name in RW_ANNUAL_FACTORS:
        status[positive & (unit == name)] = f"valid_{name.replace(' ', '_')}"
    return {"reservation_wage_annual_full_time": annual.to_numpy(),
            "reservation_wage_annual_full_time_status": status.array}


def job_search_specials(table: pd.DataFrame) -> dict[str, object]:
    """Semantic statuses for the documented 99999x codes; an undocumented 99999x code in any
    numeric column is an error (it would otherwise pass as a real value)."""
    for column in table.columns:
        if column.startswith("_") or table[column].dtype.kind not in "if":
            continue
        values = table[column]
        hit = values.between(999990, 999999) & (values == values.round())
        unknown = hit & ~values.isin(list(JOB_SEARCH_SPECIAL_CODES.get(column, {})))
        if unknown.any():
            raise DataError(f"{_file_of(table, unknown)}: column {column} holds special code "
                            f"{values[unknown].iloc[0]:g}, which the SCE Job Search codebook "
                            "does not define for it; download the workbook again from "
                            f"{MODULE_URLS['job_search']}")
    additions: dict[str, object] = {}
    for column, codes in JOB_SEARCH_SPECIAL_CODES.items():
        if column not in table.columns or column == "l8_months_no_work":
            continue
        raw = table[column]
        numeric = pd.to_numeric(raw, errors="coerce")
        present = raw.notna()
        special = numeric.isin(list(codes))
        status = pd.Series(pd.NA, index=table.index, dtype="string")
        for code, name in codes.items():
            status[numeric == code] = name
        status[present & numeric.isna()] = "invalid_numeric"
        status[present & (numeric < 0) & ~special] = "invalid_negative"
        valid = present & numeric.notna() & (numeric >= 0) & ~special
        status[valid] = "valid"
        additions[f"{column}__clean"] = numeric.where(valid).to_numpy(dtype="float64")
        additions[f"{column}__status"] = status.array
    additions.update(months_no_work(table))
    return additions


def months_no_work(table: pd.DataFrame) -> dict[str, object]:
    """l8_months_no_work__clean: a whole number 0 <= months <= 12 * age, age 18-100."""
    raw = table["l8_months_no_work"]
    months = pd.to_numeric(raw, errors="coerce")
    age = pd.to_numeric(table["age"], errors="coerce")
    present = raw.notna()
    never = months == NEVER_WORKED
    ordinary = present & months.notna() & ~never
    negative = ordinary & (months < 0)
    fraction = ordinary & ~negative & (months != months.round())
    ordinary = ordinary & ~negative & ~fraction
    age_ok = age.between(18, 100) & (age == age.round())
    too_many = ordinary & age_ok & (months > 12 * age)
    valid = ordinary & age_ok & ~too_many
    status = pd.Series(pd.NA, index=table.index, dtype="string")
    status[never] = "never_had_paid_job"
    status[present & months.isna()] = "invalid_numeric"
    status[negative] = "invalid_negative"
    status[fraction] = "invalid_noninteger"
    status[ordinary & ~age_ok] = "age_unavailable_for_validation"
    status[too_many] = "exceeds_age_in_months"
    status[valid] = "valid"
    return {"l8_months_no_work__clean": months.where(valid).to_numpy(dtype="float64"),
            "l8_months_no_work__status": status.array}


def finish_module(table: pd.DataFrame, module: str,
                  extra: Callable[[pd.DataFrame], dict[str, object]] | None = None
                  ) -> pd.DataFrame:
    """Add companions, density filters, labels and module-specific columns in one concat."""
    additions = companion_columns(table, module)
    additions.update(density_columns_for(table, module))
    additions.update(label_columns(table, module, additions))
    if module == "labor_market":
        additions.update(reservation_wage(table, additions))
    if module == "job_search":
        additions.update(job_search_specials(table))
    if extra is not None:
        additions.update(extra(table))
    new = pd.DataFrame(additions, index=table.index)
    out = pd.concat([table, new[[c for c in new.columns if c not in table.columns]]], axis=1)
    return out.drop(columns=[c for c in ("_sheet", "_key") if c in out.columns])


# ---------------------------------------------------------------------------------------------
# Build


MANIFEST_COLUMNS = [
    "source", "release_id", "release_date", "official_release_date", "release_date_source",
    "release_date_status", "release_date_unit", "microdata_release_lag_months",
    "reference_period_start", "reference_period_end", "module", "raw_file", "download_url",
    "sha256", "task_ready", "leakage_ready", "notes",
]  # fmt: skip


def manifest_rows(table: pd.DataFrame, paths: dict[str, Path]) -> pd.DataFrame:
    """One row per raw file (the reference's `sce_release_manifest`): latest row-level release
    date, the sources used, the survey months covered, the file's SHA-256."""
    rows = []
    for (module, raw_file), part in table.groupby(["module", "raw_file"], sort=True):
        release = str(part["release_date"].max())
        sources = "; ".join(sorted(part["release_date_source"].dropna().astype(str).unique()))
        first = part["survey_date"].min().date().isoformat()
        last = part["survey_date"].max().date().isoformat()
        slug = _slug(Path(raw_file).stem)
        rows.append({
            "source": "sce", "release_id": f"sce_{module}_{slug}_{release.replace('-', '_')}",
            "release_date": release, "official_release_date": "",
            "release_date_source": sources, "release_date_status": RELEASE_DATE_STATUS,
            "release_date_unit": "max_row_level_inferred_microdata_release_date",
            "microdata_release_lag_months": int(part["microdata_release_lag_months"].max()),
            "reference_period_start": first, "reference_period_end": last,
            "module": module, "raw_file": raw_file, "download_url": MODULE_URLS[module],
            "sha256": input_sha256(paths[raw_file]), "task_ready": 0, "leakage_ready": 1,
            "notes": (f"{len(part)} respondent-month rows, survey months {first} to {last}; "
                      "row eligibility uses each row's own release_date."),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=MANIFEST_COLUMNS)


def _resolve(survey: SurveyConfig, raw_dir: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """(workbooks to read, keys skipped on purpose); every named file must exist."""
    jobs, skipped = [], []
    for spec in WORKBOOKS:
        if spec.key in survey.raw and not (survey.raw[spec.key] or "").strip():
            skipped.append(spec.key)
            continue
        path = raw_path(survey, spec.key, raw_dir, hint=spec.path)
        if not path.is_file():
            raise DataError(f"{path}: {spec.what} workbook not found; download it from "
                            f"{MODULE_URLS[spec.module]} and place it there, or set "
                            f"survey.raw.{spec.key}=null to build without it")
        jobs.append((spec.key, path))
    if not any(BY_KEY[k].module == "core" for k, _ in jobs):
        raise ConfigError(f"survey {survey.name}: every core workbook is skipped; the modules "
                          "join the core survey, so set at least one of raw.core_13_16, "
                          "raw.core_17_19, raw.core_20_24, raw.core_latest")
    return jobs, skipped


def build_tables(
    pieces: list[Piece], crosswalk: ReleaseCrosswalk | None = None
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Sheets as read -> ({module: table}, manifest)."""
    by_module: dict[str, list[pd.DataFrame]] = {}
    for piece in pieces:
        frame = structural(piece, crosswalk)
        if piece.module == "housing":
            codebook = housing_codebook_labels(
                piece, frame, [p for p in pieces if p.module == "housing" and p is not piece])
            frame = pd.concat([frame, pd.DataFrame(codebook, index=frame.index)], axis=1)
        by_module.setdefault(piece.module, []).append(frame)
    paths = {f"{p.path.parent.name}/{p.path.name}": p.path for p in pieces}

    tables, manifests = {}, []
    core = add_core_derived(_concat(by_module["core"]))
    for module in MODULES:
        if module not in by_module:
            continue
        table = core if module == "core" else _concat(by_module[module])
        check_unique(table, module)
        if module in ("household_spending", "labor_market", "public_policy"):
            table = attach_core_weights(table, core, module)
        manifests.append(manifest_rows(table, paths))
        tables[module] = finish_module(table, module)
    return tables, pd.concat(manifests, ignore_index=True)


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read the SCE workbooks named in `survey.raw` and write the module tables + manifest."""
    started = time.perf_counter()
    jobs, skipped = _resolve(survey, raw_dir)
    crosswalk = None
    if survey.raw.get("release_crosswalk"):
        crosswalk = ReleaseCrosswalk.read(raw_path(survey, "release_crosswalk", raw_dir))
    pieces = [p for group in _read_all(jobs) for p in group]
    tables, manifest = build_tables(pieces, crosswalk)
    frames = {f"sce_{module}": table for module, table in tables.items()}
    frames[MANIFEST_NAME] = manifest
    inputs = [p for _, p in jobs] + ([crosswalk.path] if crosswalk else [])
    report = write_outputs(survey, out_dir, frames, inputs, started)
    # A skipped module leaves no table: an older build's would not match the manifest.
    for module in MODULES:
        if module not in tables:
            stale = Path(out_dir) / f"sce_{module}.parquet"
            stale.unlink(missing_ok=True)
            sidecar_path(stale).unlink(missing_ok=True)
    return report
