"""NY Fed SCE reader: the workbook specs, item tables and label maps (spec 1.8, 2).

What hhx.surveys.sce.microdata and its reader modules (workbook, structural, derived) read
and derive by, and what the synthetic SCE workbooks are written to:
- `Workbook` / `WORKBOOKS` / `BY_KEY`: the nine NY Fed workbooks (config key, module, default
  path under micro/sce, sheet, 0-based header row, id / date / weight columns; the table in
  hhx.surveys.sce.microdata), `MODULE_URLS`, `MODULES`, `HOUSING_YEARS` (the housing sheets 2014-24);
- `RELEASE_LAG_MONTHS` (core 9, household_spending 18, labor_market 18, public_policy 9,
  housing 18, job_search 9) and `RELEASE_DATE_STATUS` of the lag rule;
- `REQUIRED_COLUMNS` a sheet must have for the derived columns, `CORE_REQUIRED_AFTER_CONCAT`;
- the `__clean` / `__status` companion rules: `DENSITY_PREFIXES`, `TASK_KEY_ITEMS`,
  `PROBABILITY_ITEMS` (`CORE_PROBABILITY_ITEMS`), `SPECIAL_AT_OR_BELOW`; the density families
  (`DENSITY_FAMILIES`, `density_columns`, `DENSITY_TOLERANCE`);
- the manual label maps `LABELS` (`IMPACT`, `DIRECTION`, ...), `HOUSING_CODEBOOK_COLUMNS`
  (labelled from the Codebook sheets), `UNMAPPED_ALLOWED`;
- the Job Search documented special codes `JOB_SEARCH_SPECIAL_CODES` (`NEVER_WORKED`) and the
  reservation-wage unit factors `RW_ANNUAL_FACTORS` (`RW_ANNUAL_FROM`).
How they are applied: hhx.surveys.sce.derived.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from hhx.surveys.macro.release_dates import SCE_LAG_MONTHS

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
HOUSING_YEARS = tuple(range(2014, 2025))


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
