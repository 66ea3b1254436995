"""Household job-loss layers of the two PSID event tasks, cons_psid_jobloss and
labor_psid_addedworker (spec 10_tasks 11, 20_tasks_labor_macro 6; facts from the reference's
scripts/utils/psid_events.py), built in memory from `psid_main`.

Adults: current family members (panel_current == 1, fuid present) of the SRC subsample in the
waves 1968-1992 coded rel 1 (reference person) or rel 2 (spouse or partner); family-waves with
two members of the same role are dropped. An adult's partner is the family's spouse (for the
reference person) or reference person (for the spouse), from the intermediate's roles; the
household structure is "partnered" when there is one. Household subject:
`psid_pair_<lower id>_<higher id>` or `psid_single_<id>`. Role fields (`_rp` / `_sp`): annual
hours, hours validity, work status, job-end reasons. Earnings earn_tot_nd are valid when >= 0
and not the top code 9,999,999 (else missing). The Complete Main Study labor reference year
must equal the SHELF income year.

Households: one row per family-wave with a reference adult, reference and partner fields
side by side (`reference_*`, `partner_*`), food from the reference person's row;
relevant_adults_ascertained = both adults' job-end questions asked (partnered) or the
reference person's.

Reports: an ascertained adult whose job-end code is 1 (plant_closure_or_employer_move) or 3
(layoff_or_firing) on the unemployed route, else the employed route (1968 reference persons: one
combined question); both routes qualifying otherwise is an error. A report in survey year T
dates the loss to T - 1. Per person, in survey-year order: 1968 reports are prior-history
markers (never scored); the first other report is the first episode; a later report is a
duplicate when its event year is not after the previous report's or it comes at most one survey
year later, a distinct later episode when the person shows work (emp_work 1, hours > 0 or
earnings > 0) in a wave strictly between the two reports, else unresolved. Episodes: first and
distinct later ones. Shocks: episodes grouped by household subject and survey year
(`psid_household_shock_<subject>_<T>`, reasons sorted and pipe-joined).

Family-income cutoffs: per survey year 1968-1992, p01/p99 of finc_tot_nd over the rows with
response == 0 and sample_person (linear quantile); p01 == p99 is an error.
The reference's connected-component split groups are not built: both tasks split by quarter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.surveys.psid.shelf import EARNINGS_TOPCODE, QUALIFYING_REASONS
from hhx.tasks.context import BuildContext
from hhx.tasks.psid.common import INTERMEDIATE, attach_macro

FIRST_WAVE, LAST_WAVE = 1968, 1992
FIRST, DISTINCT = "first_observed_episode", "confirmed_distinct_later_episode"
FOOD_COLUMNS = [
    "food_at_home_nominal_annual", "food_away_nominal_annual", "food_stamps_net_nominal_annual",
    "food_at_home_assignment_status", "food_away_assignment_status",
    "food_stamps_assignment_status", "food_cash_nominal_annual",
]  # fmt: skip
PANEL_COLUMNS = [
    "id", "year", "income_year", "fuid", "rel", "panel_current", "subsample", "demo_sex",
    "demo_age_gen", "edu_year", "earn_tot_nd", "finc_tot_nd", "fam_size", "fam_size_chi",
    "home_stat", "geo_region", "release_date", "emp_work", "race_eth_maj_col", "demo_sex_label",
    "race_eth_maj_col_label", "geo_region_label", "home_stat_label", "reference_person_id",
    "spouse_person_id", "labor_reference_year", "annual_hours_rp", "annual_hours_sp",
    "annual_hours_valid_rp", "annual_hours_valid_sp", "annual_work_status_rp",
    "annual_work_status_sp", "job_end_reason_ascertained_rp", "job_end_reason_ascertained_sp",
    "job_end_reason_employed_code_rp", "job_end_reason_employed_code_sp",
    "job_end_reason_unemployed_code_rp", "job_end_reason_unemployed_code_sp", *FOOD_COLUMNS,
]  # fmt: skip
ROLE_STEMS = ["annual_hours", "annual_hours_valid", "annual_work_status"]
LABELS = ["demo_sex_label", "race_eth_maj_col_label", "geo_region_label", "home_stat_label"]


def records(frame: pd.DataFrame, columns: list[str] | None = None) -> list[dict]:
    """Rows as dicts of plain values, quickly (arrow-backed text would be slow to box)."""
    columns = list(frame.columns) if columns is None else columns
    arrays = [frame[c].to_numpy(dtype=object) if not pd.api.types.is_numeric_dtype(frame[c])
              else frame[c].to_numpy(dtype="float64", na_value=np.nan)
              if pd.api.types.is_extension_array_dtype(frame[c]) else frame[c].to_numpy()
              for c in columns]
    return [dict(zip(columns, values, strict=True)) for values in zip(*arrays, strict=True)]


@dataclass
class Layers:
    adults: pd.DataFrame  # one row per person x survey_year
    households: pd.DataFrame  # one row per (survey_year, fuid), macro + income cutoffs attached
    reports: pd.DataFrame
    episodes: pd.DataFrame
    shocks: pd.DataFrame
    cutoffs: pd.DataFrame  # survey_year, p01, p99


def _adults(ctx: BuildContext) -> pd.DataFrame:
    ctx.intermediate_path(INTERMEDIATE, PANEL_COLUMNS)  # all named in one line
    keys = ctx.intermediate(INTERMEDIATE, columns=["year", "panel_current", "subsample", "fuid",
                                                   "rel"])
    keep = (keys["year"].between(FIRST_WAVE, LAST_WAVE) & keys["panel_current"].eq(1)
            & keys["subsample"].astype(object).eq("src") & keys["fuid"].notna()
            & keys["rel"].isin([1, 2])).fillna(False).to_numpy(dtype=bool)
    del keys
    adults = ctx.intermediate(INTERMEDIATE, columns=PANEL_COLUMNS, rows=np.flatnonzero(keep))
    adults = adults.reset_index(drop=True).rename(columns={"id": "person_id",
                                                           "year": "survey_year"})
    adults["person_id"] = adults["person_id"].astype("int64")
    adults["survey_year"] = adults["survey_year"].astype("int64")
    for column in LABELS:
        adults[column] = adults[column].astype(object).where(adults[column].notna())
    dup = adults.duplicated(["survey_year", "fuid", "rel"], keep=False)
    ambiguous = adults.loc[dup, ["survey_year", "fuid"]].drop_duplicates()
    if len(ambiguous):
        marks = pd.MultiIndex.from_frame(ambiguous)
        here = pd.MultiIndex.from_frame(adults[["survey_year", "fuid"]])
        adults = adults[~here.isin(marks)].reset_index(drop=True)
    if adults.duplicated(["person_id", "survey_year"]).any():
        raise DataError(f"{INTERMEDIATE}: an adult appears twice in a wave")
    reference = adults["rel"].eq(1).to_numpy()
    adults["role"] = np.where(reference, "reference_person", "spouse_partner")
    spouse = adults["spouse_person_id"].astype("float64").to_numpy()
    head = adults["reference_person_id"].astype("float64").to_numpy()
    partner = np.where(reference, spouse, head)
    has_partner = ~np.isnan(partner)
    adults["partner_person_id"] = pd.Series(partner).astype("Int64")
    own = adults["person_id"].to_numpy()
    other = np.where(has_partner, partner, 0).astype(np.int64)
    low = pd.Series(np.minimum(own, other)).astype(str)
    high = pd.Series(np.maximum(own, other)).astype(str)
    adults["household_structure"] = np.where(has_partner, "partnered", "unpartnered")
    adults["stable_household_subject_id"] = np.where(
        has_partner, "psid_pair_" + low + "_" + high,
        "psid_single_" + adults["person_id"].astype(str))
    for stem in ROLE_STEMS:
        adults[stem] = np.where(reference, adults[f"{stem}_rp"].astype("float64"),
                                adults[f"{stem}_sp"].astype("float64"))
    earnings = pd.to_numeric(adults["earn_tot_nd"], errors="coerce")
    valid = earnings.ge(0) & earnings.ne(EARNINGS_TOPCODE)
    adults["annual_earnings_valid"] = valid.astype("int8")
    adults["earn_tot_nd"] = earnings.where(valid)
    if not adults["labor_reference_year"].eq(adults["income_year"]).fillna(False).all():
        raise DataError(f"{INTERMEDIATE}: Complete Main Study hours and PSID-SHELF earnings "
                        "refer to different years in some adult row")
    for stem, name in (("job_end_reason_ascertained", "displacement_ascertained"),
                       ("job_end_reason_employed_code", "displacement_employed_code"),
                       ("job_end_reason_unemployed_code", "displacement_unemployed_code")):
        adults[name] = np.where(reference, adults[f"{stem}_rp"].astype("float64"),
                                adults[f"{stem}_sp"].astype("float64"))
    adults["displacement_ascertained"] = adults["displacement_ascertained"].fillna(0).astype(int)
    return adults.sort_values(["survey_year", "fuid", "rel"], kind="mergesort").reset_index(
        drop=True)


HOUSEHOLD_FIELDS = [
    "person_id", "partner_person_id", "demo_sex_label", "demo_age_gen", "edu_year", "fam_size",
    "fam_size_chi", "home_stat_label", "geo_region_label", "race_eth_maj_col_label",
    "annual_hours", "annual_work_status", "earn_tot_nd", "finc_tot_nd", "release_date",
    "displacement_ascertained", "household_structure", "stable_household_subject_id",
    *FOOD_COLUMNS,
]  # fmt: skip


def _households(adults: pd.DataFrame) -> pd.DataFrame:
    fields = [c for c in HOUSEHOLD_FIELDS if c in adults.columns]
    keys = ["survey_year", "fuid"]
    ref = adults.loc[adults["role"].eq("reference_person"), keys + fields]
    ref = ref.rename(columns={c: f"reference_{c}" for c in fields})
    par = adults.loc[adults["role"].eq("spouse_partner"), keys + fields]
    par = par.rename(columns={c: f"partner_{c}" for c in fields})
    house = ref.merge(par, on=keys, how="left", validate="one_to_one")
    house = house.rename(columns={
        "reference_stable_household_subject_id": "stable_household_subject_id",
        "reference_household_structure": "household_structure",
        "reference_partner_person_id": "reference_partner_id",
        "partner_person_id": "partner_person_id"})
    partnered = house["household_structure"].eq("partnered")
    ref_ok = house["reference_displacement_ascertained"].eq(1)
    par_ok = house["partner_displacement_ascertained"].eq(1).fillna(False)
    house["relevant_adults_ascertained"] = np.where(partnered, ref_ok & par_ok, ref_ok).astype(
        "int8")
    for column in FOOD_COLUMNS:
        house[column] = house[f"reference_{column}"]
    return house.sort_values(keys, kind="mergesort").reset_index(drop=True)


def _reports(adults: pd.DataFrame) -> pd.DataFrame:
    codes = list(QUALIFYING_REASONS)
    employed = adults["displacement_employed_code"].isin(codes).to_numpy()
    unemployed = adults["displacement_unemployed_code"].isin(codes).to_numpy()
    asked = adults["displacement_ascertained"].eq(1).to_numpy()
    combined = (adults["role"].eq("reference_person") & adults["survey_year"].eq(FIRST_WAVE)
                ).to_numpy()
    both = asked & employed & unemployed & ~combined
    if both.any():
        row = adults[both].iloc[0]
        raise DataError(f"{INTERMEDIATE}: both job-end routes qualify for person "
                        f"{row['person_id']} in wave {row['survey_year']}")
    broken = asked & combined & unemployed & ~employed
    if broken.any():
        row = adults[broken].iloc[0]
        raise DataError(f"{INTERMEDIATE}: person {row['person_id']} 1968: the combined job-end "
                        "route has no qualifying code on the employed variable")
    take = asked & (employed | unemployed)
    if not take.any():
        raise DataError(f"{INTERMEDIATE}: no qualifying job-loss report (job-end code 1 or 3) in "
                        "the SRC adults of waves 1968-1992")
    part = adults[take]
    route_u = (unemployed & ~combined)[take]
    route = np.where(route_u, "unemployed", np.where(combined[take],
                                                     "combined_employed_or_unemployed",
                                                     "employed"))
    code = np.where(route_u, part["displacement_unemployed_code"],
                    part["displacement_employed_code"]).astype(int)
    year = part["survey_year"].to_numpy()
    reports = pd.DataFrame({
        "report_id": [f"psid_report_{p}_{y}_{r}" for p, y, r in
                      zip(part["person_id"], year, route, strict=True)],
        "person_id": part["person_id"].to_numpy(),
        "partner_person_id": part["partner_person_id"].to_numpy(),
        "survey_year": year, "assigned_event_year": year - 1, "fuid": part["fuid"].to_numpy(),
        "stable_household_subject_id": part["stable_household_subject_id"].to_numpy(),
        "person_role": part["role"].to_numpy(), "source_route": route,
        "displacement_reason": [QUALIFYING_REASONS[c] for c in code],
        "is_1968_prior_marker": (year == FIRST_WAVE).astype(int),
    })
    return reports.sort_values(["person_id", "survey_year", "report_id"],
                               kind="mergesort").reset_index(drop=True)


def _classify(reports: pd.DataFrame, adults: pd.DataFrame) -> pd.DataFrame:
    work = (adults["emp_work"].eq(1).fillna(False) | adults["annual_hours"].gt(0)
            | adults["earn_tot_nd"].gt(0))
    evidence: dict[int, list[int]] = {}
    for pid, year in zip(adults.loc[work, "person_id"], adults.loc[work, "survey_year"],
                         strict=True):
        evidence.setdefault(int(pid), []).append(int(year))
    classes = []
    for pid, group in reports.groupby("person_id", sort=False):
        confirmed: list[int] = []
        prev_year = prev_event = None
        for year, event, marker in zip(group["survey_year"], group["assigned_event_year"],
                                       group["is_1968_prior_marker"], strict=True):
            if marker:
                label = "prior_history_marker"
                confirmed.append(event)
            elif not confirmed:
                label = FIRST
                confirmed.append(event)
            elif prev_event is not None and event <= prev_event:
                label = "probable_duplicate_or_continuation"
            elif prev_year is not None and year - prev_year <= 1:
                label = "probable_duplicate_or_continuation"
            elif prev_year is not None and any(prev_year < y < year
                                               for y in evidence.get(int(pid), [])):
                label = DISTINCT
                confirmed.append(event)
            else:
                label = "unresolved_repeat_status"
            classes.append(label)
            prev_year, prev_event = year, event
    out = reports.copy()
    out["repeat_classification"] = classes  # groupby(sort=False) keeps the sorted order
    return out


def build_layers(ctx: BuildContext) -> Layers:
    """Adults, households (macro of the event year's Q4, income cutoffs), reports, episodes,
    shocks and the family-income cutoffs."""
    adults = _adults(ctx)
    households = _households(adults)
    households["assigned_event_year"] = households["survey_year"] - 1
    households = attach_macro(households, households["survey_year"], ctx)  # ref: Q4 of T - 1
    cutoffs = income_cutoffs(ctx)
    years = set(cutoffs["survey_year"])
    uncovered = sorted(set(households["survey_year"]) - years)
    if uncovered:
        raise DataError(f"{INTERMEDIATE}: no family-income cutoffs for survey year {uncovered[0]}")
    if households.duplicated(["stable_household_subject_id", "survey_year"]).any():
        raise DataError(f"{INTERMEDIATE}: a household subject appears twice in a wave")
    reports = _classify(_reports(adults), adults)
    eligible = reports["repeat_classification"].isin([FIRST, DISTINCT]) & reports[
        "is_1968_prior_marker"].eq(0)
    episodes = reports[eligible].copy()
    episodes["episode_id"] = ("psid_episode_" + episodes["person_id"].astype(str) + "_"
                              + episodes["assigned_event_year"].astype(str) + "_"
                              + episodes["source_route"])
    if episodes["episode_id"].duplicated().any():
        raise DataError(f"{INTERMEDIATE}: job-loss episode ids are not unique")
    return Layers(adults, households, reports, episodes.reset_index(drop=True),
                  _shocks(episodes), cutoffs)


def _shocks(episodes: pd.DataFrame) -> pd.DataFrame:
    keys = ["stable_household_subject_id", "survey_year"]
    grouped = episodes.sort_values([*keys, "episode_id"], kind="mergesort").groupby(keys, sort=True)
    shocks = grouped.agg(
        episode_ids=("episode_id", lambda v: "|".join(v)),
        displaced_person_ids=("person_id", lambda v: "|".join(map(str, sorted(set(v))))),
        number_displaced_adults=("person_id", "nunique"),
        displacement_reasons=("displacement_reason", lambda v: "|".join(sorted(set(v)))),
    ).reset_index()
    shocks["survey_year"] = shocks["survey_year"].astype(int)
    shocks.insert(0, "household_shock_id", "psid_household_shock_"
                  + shocks["stable_household_subject_id"] + "_" + shocks["survey_year"].astype(str))
    shocks.insert(3, "assigned_event_year", shocks["survey_year"] - 1)
    return shocks


def income_cutoffs(ctx: BuildContext) -> pd.DataFrame:
    frame = ctx.intermediate(INTERMEDIATE, columns=["year", "response", "sample_person",
                                                    "finc_tot_nd"])
    keep = (frame["response"].eq(0).fillna(False) & frame["sample_person"].fillna(False)
            & frame["year"].between(FIRST_WAVE, LAST_WAVE))
    frame = frame[keep.to_numpy(dtype=bool)]
    rows = []
    for year, group in frame.groupby("year", sort=True):
        values = pd.to_numeric(group["finc_tot_nd"], errors="coerce").dropna()
        p01, p99 = values.quantile([0.01, 0.99]).tolist()
        if not p01 < p99:
            raise DataError(f"{INTERMEDIATE}: degenerate family-income cutoffs in {int(year)} "
                            "(p01 == p99)")
        rows.append({"survey_year": int(year), "p01": float(p01), "p99": float(p99)})
    return pd.DataFrame(rows, columns=["survey_year", "p01", "p99"])


def inside_cutoffs(value: float, year: int, cutoffs: dict[int, tuple[float, float]]) -> bool:
    """Family income strictly inside its survey year's p01/p99 (missing: no)."""
    if value is None or pd.isna(value) or int(year) not in cutoffs:
        return False
    p01, p99 = cutoffs[int(year)]
    return p01 < float(value) < p99


def prior_episodes(episode: dict, by_person: dict[int, list[dict]], prompt_year: int
                   ) -> tuple[str, str]:
    """(years ago, reasons) of the person's earlier episodes, pipe-joined, oldest first."""
    earlier = [e for e in by_person.get(int(episode["person_id"]), [])
               if int(e["assigned_event_year"]) < int(episode["assigned_event_year"])]
    return ("|".join(str(prompt_year - int(e["assigned_event_year"])) for e in earlier),
            "|".join(str(e["displacement_reason"]) for e in earlier))


def episodes_by_person(episodes: pd.DataFrame) -> dict[int, list[dict]]:
    ordered = episodes.sort_values(["assigned_event_year", "episode_id"], kind="mergesort")
    out: dict[int, list[dict]] = {}
    for episode in records(ordered, ["person_id", "assigned_event_year", "displacement_reason"]):
        out.setdefault(int(episode["person_id"]), []).append(episode)
    return out
