"""cons_cex_sspay: today's total, food-at-home and food-away-from-home spending of Social Security
households around their payment day (Stephens design; spec 10_tasks section 6; the reference's
scripts/2_tasks/cons_cex_sspay), from `cex_diary_daily.parquet` (hhx.surveys.cex.diary_panel).

Targets: the strict 1986-1996 daily sums (`*_legacy_strict_v1`). Recipients: the reference
person's and the spouse's own OASDI / SSI / Railroad answers (`recipient_class`: OASDI_and_Railroad,
OASDI_and_SSI, pure_OASDI, Railroad_only, SSI_only, else excluded); `social_security_share` =
annual Social Security + Railroad income / annual income.

Payment calendar (`oasdi_calendar`): the 3rd of each month, moved back a day at a time while it
is a Saturday, Sunday or delivery holiday (observed New Year's Day, observed Independence Day,
Labor Day); checked against the reference's spot checks (1986-05-02, 1990-08-31, 1992-12-31,
1994-09-02, 1996-02-02). Event time (`attach_events`): days from the nearest scheduled date
(ties to the earlier one); a dated day more than 17 days from any is an error.

Histories (`add_history`): per CU (both diary weeks), over dated in-scope days with all three
targets, ordered by date; CUs with two records of one date are left out; lag k = the k-th
previous observed day, with its date and the gap in days.

Steps as the reference's: universe = source year 1986-1996, dated, reference person or spouse
with OASDI, nearest payment not in January, event time -7..7; targets present and finite;
predictors: seven prior days each exactly k days back, finite histories and numeric predictors
(age, household size, children, adults, annual income, Social Security income, likely recipients,
the macro context), labelled categories (sex, race, education, marital status, region, area,
tenure, work status, recipient class) not "not reported"; validity: two diary weeks numbered 1
and 2, both strictly started and dated, both pickups complete, both WEEKN 2, starts 7+ days apart,
complete income in both weeks, targets >= 0, food at home + away <= total (+1e-8), current and
every lag, income > 0, Social Security income > 0 and positive in both weeks, 0 < share < 1, a
valid whole number of adults; trim: drop a row whose current total, any of its seven lag totals
(by the lag date's year) or annual income is strictly above the calendar-year p99 over all dated
1986-1996 CU-days (before the task filters; zeros and equality kept). The reference's own
two-week quality flag must agree with the explicit conditions. Rows are published in the
reference's order (source year, date, CU, week).

Memory: only the days of the task's source years are read in full (a parquet filter on
`source_year`); of the other days only the date and the recipient answers are read, to count
their failures in the universe step as if they had been read and dropped. No step uses a day of
another source year (histories, cutoffs and the payment calendar are over in-scope days), so the
table is the same, and the real Diary intermediate (about thirty years) never has to fit in
memory.

Answer and no-change baseline: the targets and the previous day's values, round(x, 2).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import date, timedelta
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS, attach_macro_context
from hhx.tasks.cex.common import SYSTEM_PROMPT, Steps, apply
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import (
    article,
    day_note,
    format_dollars,
    render_macro_paragraph,
    response_instruction,
)

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, cons_cex_sspay).
OUTPUT_ORDER = ("_output_order:number",)

INTERMEDIATE = "cex_diary_daily"
YEARS = range(1986, 1997)
EVENT_WINDOW = (-7, 7)
TARGETS = ["daily_total_expenditure", "daily_food_at_home", "daily_food_away_from_home"]
STRICT = {"daily_total_expenditure": "daily_total_expenditure_legacy_strict_v1",
          "daily_food_at_home": "daily_food_at_home_legacy_strict_v1",
          "daily_food_away_from_home": "daily_food_away_from_home_legacy_strict_v1"}
STRICT_VERSION = "stephens_1986_1996_strict_v1"
LAGS = range(1, 8)
SPOT_CHECKS = {"1986-05": "1986-05-02", "1990-09": "1990-08-31", "1993-01": "1992-12-31",
               "1994-09": "1994-09-02", "1996-02": "1996-02-02"}
AFFIRMATIVE = [f"{who}_{kind}_affirmative" for who in ("reference_person", "spouse")
               for kind in ("oasdi", "ssi", "railroad")]
COLUMNS = [
    "source_day_id", "source_week_id", "source_year", "week_key", "cu_id", "diary_week",
    "diary_day_sequence", "diary_date", "analysis_weight", "release_date",
    "release_date_source", "age_ref", "sex", "race", "education", "marital_status",
    "household_size", "children_under_18", "number_adults", "number_adults_valid", "region",
    "urban_status", "home_tenure", "reference_person_work_status", "annual_income_before_tax",
    "annual_social_security_railroad_income", "likely_social_security_recipients",
    "reference_person_oasdi_affirmative", "reference_person_ssi_affirmative",
    "reference_person_railroad_affirmative", "spouse_oasdi_affirmative",
    "spouse_ssi_affirmative", "spouse_railroad_affirmative", "response_income_complete_records",
    "positive_combined_ss_railroad_income_records", "stephens_1986_1996_quality_flag_v1",
    "stephens_food_available", "stephens_food_version", *STRICT.values(),
    "both_diary_week_numbers_available", "both_diary_week_records_available",
    "legacy_strict_valid_start_week_records", "legacy_strict_valid_dated_week_records",
    "pickup_complete_records", "weekn_equals_two_records", "nonoverlapping_diary_week_dates",
]  # fmt: skip
CATEGORIES = ["sex", "race", "education", "marital_status", "region", "urban_status",
              "home_tenure", "reference_person_work_status", "recipient_class"]
NUMERIC = ["age_ref", "household_size", "children_under_18", "number_adults",
           "annual_income_before_tax", "annual_social_security_railroad_income",
           "likely_social_security_recipients", *CORE_MACRO_COLUMNS]


# --------------------------------------------------------------------------------------------
# Payment calendar


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


def _observed(day: date) -> date:
    if day.weekday() == 5:
        return day - timedelta(days=1)
    return day + timedelta(days=1) if day.weekday() == 6 else day


def delivery_holidays(year: int) -> set[date]:
    return {_observed(date(year, 1, 1)), _observed(date(year, 7, 4)),
            _nth_weekday(year, 9, 0, 1)}


def oasdi_calendar(first_year: int, last_year: int) -> pd.DataFrame:
    """One row per month: normal (the 3rd) and scheduled payment date."""
    holidays = set().union(*(delivery_holidays(y) for y in range(first_year - 1, last_year + 2)))
    rows = []
    for year in range(first_year, last_year + 1):
        for month in range(1, 13):
            normal = scheduled = date(year, month, 3)
            while scheduled.weekday() >= 5 or scheduled in holidays:
                scheduled -= timedelta(days=1)
            rows.append({"payment_month": f"{year:04d}-{month:02d}",
                         "normal_payment_date": pd.Timestamp(normal),
                         "scheduled_payment_date": pd.Timestamp(scheduled)})
    calendar = pd.DataFrame(rows)
    for spot, expected in SPOT_CHECKS.items():
        got = calendar.loc[calendar["payment_month"].eq(spot), "scheduled_payment_date"]
        if len(got) and got.iloc[0].strftime("%Y-%m-%d") != expected:
            raise DataError(f"OASDI calendar: {spot} pays {got.iloc[0]:%Y-%m-%d}, the "
                            f"reference's check says {expected}")
    return calendar


def attach_events(days: pd.DataFrame, calendar: pd.DataFrame) -> pd.DataFrame:
    """Nearest scheduled payment date (ties to the earlier) and event time of dated days."""
    events = calendar.sort_values("scheduled_payment_date").astype(
        {"scheduled_payment_date": "datetime64[ns]", "normal_payment_date": "datetime64[ns]"})
    work = days[["diary_date"]].astype("datetime64[ns]")
    work["_row"] = np.arange(len(work))
    work = work.sort_values("diary_date", kind="mergesort")
    before = pd.merge_asof(work, events, left_on="diary_date",
                           right_on="scheduled_payment_date", direction="backward")
    after = pd.merge_asof(work, events, left_on="diary_date",
                          right_on="scheduled_payment_date", direction="forward")
    gap_before = (before["diary_date"] - before["scheduled_payment_date"]).dt.days.abs()
    gap_after = (after["scheduled_payment_date"] - after["diary_date"]).dt.days.abs()
    use_before = gap_after.isna() | (gap_before.notna() & gap_before.le(gap_after))
    chosen = after.copy()
    for column in events.columns:
        chosen.loc[use_before, column] = before.loc[use_before, column].to_numpy()
    chosen["event_time"] = (chosen["diary_date"] - chosen["scheduled_payment_date"]).dt.days
    far = chosen["scheduled_payment_date"].isna() | chosen["event_time"].abs().gt(17)
    if far.any():
        raise DataError(f"{TASK}: no scheduled payment within 17 days of "
                        f"{chosen.loc[far, 'diary_date'].iloc[0]:%Y-%m-%d}")
    chosen = chosen.sort_values("_row").set_index(days.index)
    return chosen[["scheduled_payment_date", "normal_payment_date", "payment_month",
                   "event_time"]]


TASK = "cons_cex_sspay"


def add_history(daily: pd.DataFrame, years: Iterable[int] = YEARS) -> pd.DataFrame:
    """Lags 1-7 of the targets over each CU's observed days (module notes)."""
    observed = (daily["source_year"].isin(list(years)) & daily["diary_date"].notna()
                & daily[TARGETS].notna().all(axis=1))
    history = daily.loc[observed].sort_values(["cu_id", "diary_date", "week_key",
                                               "source_day_id"], kind="mergesort")
    twice = history.loc[history.duplicated(["cu_id", "diary_date"], keep=False), "cu_id"]
    history = history.loc[~history["cu_id"].isin(set(twice))]
    grouped = history.groupby("cu_id", sort=False, observed=True)
    lags: dict[str, Any] = {}
    for k in LAGS:
        prior = grouped["diary_date"].shift(k)
        lags[f"prior_observed_date_lag{k}"] = prior
        lags[f"calendar_day_gap_lag{k}"] = (history["diary_date"] - prior).dt.days
        for target in TARGETS:
            lags[f"{target}_lag{k}"] = grouped[target].shift(k)
    frame = pd.DataFrame(lags, index=history.index).reindex(daily.index)
    return pd.concat([daily, frame], axis=1)


# --------------------------------------------------------------------------------------------
# Table


def _bool(series: pd.Series) -> pd.Series:
    return series.astype("boolean").fillna(False).astype(bool)


def load_days(ctx: BuildContext, years: Iterable[int] = YEARS
              ) -> tuple[pd.DataFrame, tuple[int, dict[str, int]]]:
    """The days of source `years` with the derived recipient columns, and the universe filters'
    failures among the days of the other years, which are not read in full (module notes)."""
    import pyarrow.parquet as pq

    path = ctx.intermediate_path(INTERMEDIATE, COLUMNS)
    years = [int(y) for y in years]
    daily = _with_recipients(pd.read_parquet(path, columns=COLUMNS,
                                             filters=[("source_year", "in", years)]))
    if daily["source_day_id"].duplicated().any():
        raise DataError(f"{path}: source_day_id is not unique; rebuild it")
    for target, source in STRICT.items():
        daily[target] = daily[source]
    # the other years' days fail the year filter and, undated and unattached to the payment
    # calendar, the calendar filters; the dated and recipient filters are counted on them
    other = pd.read_parquet(path, columns=["diary_date", *AFFIRMATIVE],
                            filters=[("source_year", "not in", years)])
    oasdi = _bool(other["reference_person_oasdi_affirmative"]) | _bool(
        other["spouse_oasdi_affirmative"])
    n = len(other)
    if len(daily) + n != pq.ParquetFile(path).metadata.num_rows:
        raise DataError(f"{path}: some days have no source_year; rebuild it")
    unread = {"source_year_1986_1996": n, "dated": int(other["diary_date"].isna().sum()),
              "reference_or_spouse_oasdi": int((~oasdi).sum()),
              "nearest_payment_not_in_january": n, "event_time_within_7_days": n}
    return daily, (n, unread)


def _with_recipients(daily: pd.DataFrame) -> pd.DataFrame:
    """The recipient columns from the reference person's and the spouse's own answers."""
    person = {k: _bool(daily[k]) for k in AFFIRMATIVE}
    ref = {k: person[f"reference_person_{k}_affirmative"] for k in ("oasdi", "ssi", "railroad")}
    sp = {k: person[f"spouse_{k}_affirmative"] for k in ("oasdi", "ssi", "railroad")}
    daily["reference_or_spouse_oasdi"] = (ref["oasdi"] | sp["oasdi"]).astype(int)
    daily["reference_or_spouse_ssi"] = (ref["ssi"] | sp["ssi"]).astype(int)
    daily["reference_or_spouse_railroad"] = (ref["railroad"] | sp["railroad"]).astype(int)
    oasdi, ssi, rail = (daily[f"reference_or_spouse_{k}"].eq(1)
                        for k in ("oasdi", "ssi", "railroad"))
    daily["recipient_class"] = np.select(
        [oasdi & rail, oasdi & ssi, oasdi, rail, ssi],
        ["OASDI_and_Railroad", "OASDI_and_SSI", "pure_OASDI", "Railroad_only", "SSI_only"],
        default="excluded_ambiguous_or_no_affirmative_recipient")
    daily["reference_or_spouse_paper_recipient"] = (oasdi | rail).astype(int)
    daily["social_security_share"] = (daily["annual_social_security_railroad_income"]
                                      / daily["annual_income_before_tax"])
    return daily


def attach_sources(daily: pd.DataFrame, ctx: BuildContext, years: Iterable[int] = YEARS
                   ) -> pd.DataFrame:
    """Payment calendar for dated in-scope days, macro context for every dated day."""
    years = list(years)
    out = daily
    scope = out["source_year"].isin(years) & out["diary_date"].notna()
    calendar = oasdi_calendar(min(years) - 1, max(years) + 1)
    events = attach_events(out.loc[scope], calendar)
    out = out.join(events)
    out["calendar_attachment_success"] = out["scheduled_payment_date"].notna()
    dated = out.loc[out["diary_date"].notna()]
    origin = dated["diary_date"].dt.year * 4 + dated["diary_date"].dt.quarter
    macro = attach_macro_context(dated[[]], origin, ctx.macro_context)
    out = out.join(macro)
    out["macro_attachment_success"] = out[CORE_MACRO_COLUMNS].notna().all(axis=1)
    return out


def upper_tails(pool: pd.DataFrame, reference: pd.DataFrame, task: str,
                years: Iterable[int] = YEARS) -> list[tuple[str, pd.Series]]:
    """Keep-masks of the three upper-tail screens (module notes)."""
    reference = reference.loc[reference["source_year"].isin(list(years))
                              & reference["diary_date"].notna()]
    cutoffs = {}
    for variable in ("daily_total_expenditure", "annual_income_before_tax"):
        values = reference.loc[reference[variable].notna()]
        cutoffs[variable] = values.groupby(values["diary_date"].dt.year, observed=True)[
            variable].quantile(0.99)
    year = pool["diary_date"].dt.year
    current = pool["daily_total_expenditure"].gt(year.map(cutoffs["daily_total_expenditure"]))
    income = pool["annual_income_before_tax"].gt(year.map(cutoffs["annual_income_before_tax"]))
    history = pd.Series(False, index=pool.index)
    for k in LAGS:
        value = pool[f"daily_total_expenditure_lag{k}"]
        cutoff = pool[f"prior_observed_date_lag{k}"].dt.year.map(cutoffs["daily_total_expenditure"])
        if (value.notna() & cutoff.isna()).any():
            raise DataError(f"task {task}: no total-spending cutoff for a lag-{k} year")
        history |= value.gt(cutoff)
    return [("daily_total_expenditure_upper_tail", ~current),
            ("history_total_expenditure_upper_tail", ~history),
            ("annual_income_before_tax_upper_tail", ~income)]


def build_table(ctx: BuildContext) -> pd.DataFrame:
    return build_years(ctx, YEARS)


def build_years(ctx: BuildContext, years: Iterable[int]) -> pd.DataFrame:
    """The task over diary source `years` (the task: 1986-1996; tests use other spans)."""
    years = list(years)
    task = ctx.task
    steps = Steps()
    daily, unread = load_days(ctx, years)
    total = len(daily) + unread[0]
    steps.step("Start from source observations", total, total)
    daily = attach_sources(daily, ctx, years)
    steps.step("Attach additional sources", total, total)
    daily = add_history(daily, years)
    steps.step("Construct leads and lags", total, total)
    in_scope = daily["source_year"].isin(years)
    _check_quality_flag(daily, in_scope, task.name)
    universe = apply(daily, steps, "Restrict universe", unread=unread, filters=[
        ("source_year_1986_1996", in_scope),
        ("dated", daily["diary_date"].notna()),
        ("reference_or_spouse_oasdi", daily["reference_or_spouse_oasdi"].eq(1)),
        ("nearest_payment_not_in_january",
         daily["calendar_attachment_success"] & ~daily["scheduled_payment_date"].dt.month.eq(1)),
        ("event_time_within_7_days", daily["event_time"].between(*EVENT_WINDOW)),
    ])
    target_values = universe[TARGETS]
    pool = apply(universe, steps, "Require observed targets", [
        ("strict_targets_available", _bool(universe["stephens_food_available"])
         & universe["stephens_food_version"].eq(STRICT_VERSION).fillna(False)),
        ("targets_observed_and_finite", target_values.notna().all(axis=1)
         & np.isfinite(target_values.astype("float64")).all(axis=1)),
    ])
    lag_values = pool[[f"{t}_lag{k}" for k in LAGS for t in TARGETS]].astype("float64")
    numbers = pool[NUMERIC].astype("float64")
    filters = [
        ("seven_prior_days", pool[[f"prior_observed_date_lag{k}" for k in LAGS]].notna()
         .all(axis=1) & lag_values.notna().all(axis=1) & np.isfinite(lag_values).all(axis=1)),
        ("numeric_predictors_finite", numbers.notna().all(axis=1)
         & np.isfinite(numbers).all(axis=1) & pool["macro_attachment_success"]),
        *[(f"lag{k}_is_{k}_days_back", pool[f"calendar_day_gap_lag{k}"].eq(k)) for k in LAGS],
        *[(f"{c}_reported", ~pool[c].astype("string").str.casefold().isin(
            ["", "not reported", "nan", "<na>"])) for c in CATEGORIES],
    ]
    pool = apply(pool, steps, "Require observed predictors", filters)
    pool = apply(pool, steps, "Apply logical and validity filters", _validity_filters(pool))
    _check(pool, task.name)
    pool = apply(pool, steps, "Apply outlier trimming",
                 upper_tails(pool, daily, task.name, years))
    if pool.empty:
        raise DataError(f"task {task.name}: no rows remain after the task filters")
    return _public(pool, ctx, steps, years)


def _check_quality_flag(daily: pd.DataFrame, in_scope: pd.Series, task: str) -> None:
    """The reference's two-week quality flag must agree with its explicit conditions in scope."""
    explicit = (_bool(daily["both_diary_week_records_available"])
                & _bool(daily["both_diary_week_numbers_available"])
                & daily["legacy_strict_valid_start_week_records"].eq(2)
                & daily["legacy_strict_valid_dated_week_records"].eq(2)
                & daily["pickup_complete_records"].eq(2) & daily["weekn_equals_two_records"].eq(2)
                & _bool(daily["nonoverlapping_diary_week_dates"])).fillna(False)
    upstream = _bool(daily["stephens_1986_1996_quality_flag_v1"])
    if not explicit[in_scope].eq(upstream[in_scope]).all():
        raise DataError(f"task {task}: the intermediate's two-week quality flag disagrees "
                        "with its own conditions; rebuild survey cex_diary")


def _validity_filters(pool: pd.DataFrame) -> list[tuple[str, pd.Series]]:
    """The logical and validity filters (module notes), current day first, then each lag."""
    share = pool["social_security_share"]
    total, home, away = (pool[t] for t in TARGETS)
    validity = [
        ("two_source_week_records", _bool(pool["both_diary_week_records_available"])),
        ("diary_week_numbers_one_and_two", _bool(pool["both_diary_week_numbers_available"])),
        ("two_valid_start_weeks", pool["legacy_strict_valid_start_week_records"].eq(2)),
        ("two_valid_dated_weeks", pool["legacy_strict_valid_dated_week_records"].eq(2)),
        ("two_complete_pickups", pool["pickup_complete_records"].eq(2)),
        ("two_week_design", pool["weekn_equals_two_records"].eq(2)),
        ("nonoverlapping_week_dates", _bool(pool["nonoverlapping_diary_week_dates"])),
        ("two_complete_income_records", pool["response_income_complete_records"].eq(2)),
        ("current_targets_nonnegative", pool[TARGETS].ge(0).all(axis=1)),
        ("current_food_within_total", total.add(1e-8).ge(home + away)),
        ("annual_income_positive", pool["annual_income_before_tax"].gt(0)),
        ("annual_benefit_income_positive", pool["annual_social_security_railroad_income"].gt(0)),
        ("two_positive_benefit_records", pool["positive_combined_ss_railroad_income_records"].eq(2)),
        ("benefit_share_open_unit_interval", np.isfinite(share) & share.gt(0) & share.lt(1)),
        ("adult_count_valid", _bool(pool["number_adults_valid"]) & pool["number_adults"].ge(0)
         & np.isclose(pool["number_adults"], np.round(pool["number_adults"]))),
    ]
    for k in LAGS:
        validity += [
            (f"lag{k}_targets_nonnegative",
             pool[[f"{t}_lag{k}" for t in TARGETS]].ge(0).all(axis=1)),
            (f"lag{k}_food_within_total", pool[f"daily_total_expenditure_lag{k}"].add(1e-8).ge(
                pool[f"daily_food_at_home_lag{k}"] + pool[f"daily_food_away_from_home_lag{k}"])),
        ]
    return validity


def _check(pool: pd.DataFrame, task: str) -> None:
    row_id = pool["cu_id"] + ":" + pool["diary_date"].dt.strftime("%Y%m%d")
    checks = {"a release date after the diary date": pool["release_date"].gt(pool["diary_date"]),
              "a unique CU-day id": ~row_id.duplicated(keep=False)}
    for name, ok in checks.items():
        if not ok.all():
            raise DataError(f"task {task}: {int((~ok).sum())} rows lack {name}")


def _public(pool: pd.DataFrame, ctx: BuildContext, steps: Steps, years: list[int]
            ) -> pd.DataFrame:
    task = ctx.task
    missing = sorted(set(years) - set(pool["source_year"].astype(int)))
    if missing:
        raise DataError(f"task {task.name}: no rows from source year(s) {missing}; the reference "
                        f"requires every year {years[0]}-{years[-1]} (build the Diary releases "
                        "of those years)")
    weight = pool["analysis_weight"]
    if weight.isna().any() or weight.le(0).any() or weight.nunique() <= 1:
        raise DataError(f"task {task.name}: analysis weights are missing, non-positive or "
                        "constant")
    date_ = pool["diary_date"]
    values: dict[str, Any] = {
        "id": pool["cu_id"] + ":" + date_.dt.strftime("%Y%m%d"),
        "time": date_.dt.strftime("%Y-%m-%d"),
        "release_date": pool["release_date"].dt.strftime("%Y-%m-%d"),
    }
    pool = pool.assign(
        n_adults=pool["household_size"].astype(int) - pool["children_under_18"].astype(int),
        current_day_of_week=date_.dt.day_name(), current_day_of_month=date_.dt.day.astype(int),
        current_month=date_.dt.month_name())
    names = [*task.targets, *task.prompt_predictors]
    absent = [c for c in names if c not in pool.columns]
    if absent:
        raise DataError(f"task {task.name}: predictors {absent} are not built by {__name__}")
    for column in names:
        values[column] = pool[column]
    table = pd.DataFrame(values, index=pool.index)
    order = pool.sort_values(["source_year", "diary_date", "cu_id", "week_key"],
                             kind="mergesort").index
    table["_output_order"] = pd.Series(np.arange(len(order)), index=order)
    table["_event_time"] = pool["event_time"].astype(int)
    table["_scheduled_payment_date"] = pool["scheduled_payment_date"].dt.strftime("%Y-%m-%d")
    table["_analysis_weight"] = weight
    table["_recipient_class"] = pool["recipient_class"]
    table = table.reset_index(drop=True)
    integers = {"n_adults", "current_day_of_month"}
    text = set(task.categorical_predictors)
    table.attrs["float_columns"] = [c for c in names if c not in integers | text]
    steps.step("Export sample", len(pool), len(table))
    table.attrs["construction_steps"] = steps.frame()
    return table


# --------------------------------------------------------------------------------------------
# Prompt

EDUCATION = {
    "associate degree or some college": "an associate degree or some college education",
    "college graduate": "a college degree",
    "doctoral or professional degree": "a doctoral or professional degree",
    "elementary school": "an elementary school education",
    "high school graduate": "a high school diploma",
    "master's degree": "a master's degree",
    "more than four years of college": "more than four years of college education",
    "no reported schooling": "no reported schooling",
    "some college": "some college education",
    "some high school": "some high school education",
}
TENURE = {
    "lives in college housing": "Your household lives in college housing.",
    "occupies housing without cash rent": "Your household occupies its home without cash rent.",
    "owns a home": "Your household owns its home.",
    "owns a home with a mortgage": "Your household owns its home with a mortgage.",
    "owns a home without a mortgage": "Your household owns its home without a mortgage.",
    "rents a home": "Your household rents its home.",
}
WORK = {"currently working", "not currently working", "retired"}
QUESTION = ("Given this information, how much will your household spend today in total, "
            "on food at home, and on food away from home?")
LEAD = ("Return only a valid JSON array with exactly 3 numeric elements, in this order: "
        "total_expenditure, food_at_home, food_away_from_home. Use 0 when there is no spending "
        "in a category.")
CAVEAT = "These are annual figures and do not tell you the size of any particular monthly payment."
POLICY = ("Social Security benefits are normally paid on the third day of each month. If the "
          "third falls on a weekend or federal holiday, payment is made on the preceding business "
          "day.")


def _text(row: Mapping[str, Any], column: str, allowed: Iterable[str] | None = None) -> str:
    value = row.get(column)
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        raise DataError(f"{TASK}: {column} is missing for id {row.get('id')!r}")
    text = str(value).strip()
    if not text or (allowed is not None and text.lower() not in allowed):
        raise DataError(f"{TASK}: unexpected {column} {value!r} for id {row.get('id')!r}")
    return text


def _whole(row: Mapping[str, Any], column: str) -> int:
    value = float(row[column])
    if not math.isfinite(value) or value != round(value):
        raise DataError(f"{TASK}: {column} must be a whole number (id {row.get('id')!r})")
    return int(value)


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    age = _whole(row, "age_ref")
    size, children = _whole(row, "household_size"), _whole(row, "children_under_18")
    adults = size - children
    if size < 1 or children < 0 or adults < 0:
        raise DataError(f"{TASK}: household size below the children count ({row['id']!r})")
    sex = {"male": "man", "female": "woman"}.get(_text(row, "sex").lower())
    if sex is None:
        raise DataError(f"{TASK}: unsupported sex label {row['sex']!r}")
    urban = _text(row, "urban_status").lower()
    kids = "no children" if children == 0 else f"{children} {'child' if children == 1 else 'children'}"
    day = pd.Timestamp(str(row["time"]))
    profile = (
        "Here is some background information about yourself and your household. "
        f"You are {article(age)} {age}-year-old {_text(row, 'race').lower()} {sex}, are "
        f"{_text(row, 'marital_status').lower()}, "
        f"have {EDUCATION[_text(row, 'education', EDUCATION).lower()]}, and are "
        f"{_text(row, 'reference_person_work_status', WORK).lower()}. "
        f"You live in {'an' if urban[:1] in 'aeiou' else 'a'} {urban} in the "
        f"{_text(row, 'region').rstrip('.')}. "
        f"Your household consists of {adults} {'adult' if adults == 1 else 'adults'} and {kids}. "
        f"{TENURE[_text(row, 'home_tenure', TENURE).lower()]}"
    )
    resources = (
        "Your household reported about "
        f"{format_dollars(float(row['annual_income_before_tax']))} in income before tax over "
        "the past 12 months. Of this, about "
        f"{format_dollars(float(row['annual_social_security_railroad_income']))}, or "
        f"{float(row['social_security_share']) * 100:.1f}%, came from Social Security and "
        f"Railroad Retirement. {CAVEAT}"
    )
    lines = []
    for k in range(7, 0, -1):
        elapsed = "1 day ago" if k == 1 else f"{k} days ago"
        total, home, away = (format_dollars(float(row[f"{t}_lag{k}"]), 2) for t in TARGETS)
        lines.append(f"- {elapsed}: {total} in total, including {home} on food at home and "
                     f"{away} on food away from home.")
    history = ("Here is your household's spending over the last seven days, listed from oldest "
               f"to most recent. {day_note(day.day_name(), day.day, day.month)}\n\n"
               + "\n".join(lines))
    user = "\n\n".join([profile, resources, history, render_macro_paragraph(row), POLICY,
                        QUESTION, response_instruction(task, lead=LEAD)])
    return SYSTEM_PROMPT, user


def _amounts(row: Mapping[str, Any], columns: list[str]) -> list[float]:
    out = []
    for column in columns:
        value = float(row[column])
        if not math.isfinite(value) or value < 0:
            raise DataError(f"{TASK}: {column} must be a non-negative amount "
                            f"(id {row.get('id')!r})")
        out.append(round(value, 2))
    return out


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    return _amounts(row, [f"{t}_lag1" for t in TARGETS])


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return _amounts(row, TARGETS)
