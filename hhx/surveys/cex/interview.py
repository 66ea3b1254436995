"""CEX Interview (BLS CE public-use FMLI files) -> `cex_interview.parquet`, one row an interview.

Facts: shared/spec/00_common.md 1.1 (package names), 1.3 (CEX Interview row), 1.5, 2 (release
year); 10_tasks_cons_house_income.md 1-5 (the columns the cons_cex_* task builders read).

The builder (`build`, named in conf/survey/cex_interview.yaml) and its orchestration: the
packages under `survey.raw.interview` are found and their FMLI members read
(hhx.surveys.cex.interview_packages: the input layout, damaged packages), each member parsed to
candidate records (hhx.surveys.cex.interview_fmli: column checks, typing, spending), the
candidates of all packages reduced to one row per interview (hhx.surveys.cex.interview_reconcile:
overlaps, sample design) and finished here (`finish`: time columns, panel id, labels of
hhx.surveys.cex.interview_labels, screens of hhx.surveys.cex.interview_flags, release dates);
the rebate addenda of packages 2001 and 2008 come from hhx.surveys.cex.interview_addenda. The
variable and code tables are in hhx.surveys.cex.interview_variables.

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
- labels (pandas categoricals; hhx.surveys.cex.interview_labels): `region_label`,
  `bls_urbn_label`, `sex_ref_label`, `sex2_label`, `marital1_label`, `tenure_harmonized`,
  `race_ref_harmonized`, `race2_harmonized`, `educ_ref_harmonized`, `educ2_harmonized`
  (ordered);
- `state`: 2-digit FIPS text (the legacy code map: hhx.surveys.cex.interview_fmli). No cons_cex
  task reads `state`;
- spending (hhx.surveys.cex.interview_fmli), each `cons_X` = X current quarter + X previous
  quarter (sum with at least one present): `cons_total` (TOTEXP), `cons_food`, `cons_alcohol`,
  `cons_housing`, `cons_apparel`, `cons_transport`, `cons_health`, `cons_entertainment`,
  `cons_personal_care`, `cons_read`, `cons_education`, `cons_tobacco`, `cons_misc`,
  `cons_cash_contrib`, `cons_life_insurance`, `cons_retirement_pension_social_security`,
  `cons_utilities`, `cons_housop`, `cons_pubtra`, `cons_gasmo`; `food_definition_regime`;
  `cons_parker_total`, `cons_food_agg`, `cons_strict_nondurables`, `cons_nondurables`,
  `cons_durables` (spec 1.5);
- household screens per cex_panel_id (int8, computed, not applied;
  hhx.surveys.cex.interview_flags): `flag_hh_income_lt_1000_ever`,
  `flag_hh_cons_total_lt_250_ever`, `flag_hh_food_annualized_gt_mean_income`,
  `flag_hh_qoq_{income,cons_total}_change_{bottom,top}_1pct_ever`, and `flag_hh_any_screen`.

Rebate addenda: `cex_rebate_2001.parquet` / `cex_stimulus_2008.parquet`, written when package
2001 / 2008 is among the inputs (hhx.surveys.cex.interview_addenda).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.base import BuildReport, raw_path, write_outputs
from hhx.surveys.cex.interview_addenda import read_addenda
from hhx.surveys.cex.interview_flags import FLAG_COLUMNS, add_quality_flags
from hhx.surveys.cex.interview_fmli import read_fmli
from hhx.surveys.cex.interview_labels import add_labels
from hhx.surveys.cex.interview_packages import Member, find_packages
from hhx.surveys.cex.interview_reconcile import interview_position, reconcile, sample_design
from hhx.surveys.cex.interview_variables import CONSUMPTION, PANEL_KEY, RECORD_KEY, SOURCE_URL
from hhx.surveys.macro.release_dates import read_release_crosswalk

log = logging.getLogger(__name__)

OUTPUT_NAME = "cex_interview"

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


def add_release_dates(frame: pd.DataFrame, crosswalk: Path | None) -> None:
    """release_date by first release year from the reference's release_cex.csv (validated by
    hhx.surveys.macro.release_dates); NA without a crosswalk."""
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
