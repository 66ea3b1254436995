"""SCE core + modules builder: seeded NY Fed workbooks -> the six module tables + manifest.

Expected values come from the generator's truth (what it drew before writing codes), from the
raw sheets it wrote, or from spec facts written out here (lags, labels, unit factors), never
from the builder's own output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from openpyxl import load_workbook

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.sce import microdata as sce
from hhx.surveys.sce.derived import density_columns_for, density_status, months_no_work
from hhx.surveys.sce.items import JOB_SEARCH_SPECIAL_CODES
from hhx.surveys.sce.structural import ReleaseCrosswalk, release_columns
from hhx.surveys.sce.workbook import parse_codebook, read_workbook, sheet_frame
from hhx.surveys.synthetic.sce.microdata import (
    Sheet,
    synthetic_sce,
    write_synthetic_sce,
    write_workbook,
)

SEED, START, END, PER_MONTH = 11, "2013-12", "2025-02", 1
KEYS = ["respondent_id", "survey_year", "survey_month"]
# spec 00_common 1.8: file names, sheets and 0-based header rows
LAYOUT = {
    "core_13_16": ("core/FRBNY-SCE-Public-Microdata-Complete-13-16.xlsx", "Data", 1),
    "core_17_19": ("core/FRBNY-SCE-Public-Microdata-Complete-17-19.xlsx", "Data", 1),
    "core_20_24": ("core/frbny-sce-public-microdata-20-24.xlsx", "Data", 1),
    "core_latest": ("core/frbny-sce-public-microdata-latest.xlsx", "Data", 1),
    "household_spending": ("household_spending/sce-household-spending-microdata.xlsx", "Data", 1),
    "labor_market": ("labor_market/sce-labor-microdata-public.xlsx", "Data", 1),
    "public_policy": ("public_policy/sce-policy-public-microdata.xlsx", "Data", 10),
    "housing": ("housing/FRBNY-SCE-Housing-Survey-Public-Microdata-Complete.xlsx", "Data 2019", 0),
    "job_search": ("job_search/SCE-Public-LM-Quarterly-Microdata.xlsx", "Data", 0),
}  # fmt: skip
# spec section 2: microdata release lag in months
LAGS = {"core": 9, "household_spending": 18, "labor_market": 18, "public_policy": 9,
        "housing": 18, "job_search": 9}  # fmt: skip
DENSITY_CLASSES = {"valid", "range_invalid", "partial_missing", "all_zero", "all_same_nonzero",
                   "sum_off_100"}  # fmt: skip


def _survey(raw: dict[str, str] | None = None) -> SurveyConfig:
    defaults = {key: f"micro/sce/{path}" for key, (path, _, _) in LAYOUT.items()}
    return SurveyConfig(name="sce", raw={**defaults, **(raw or {})})


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    paths = write_synthetic_sce(raw / "micro" / "sce", seed=SEED, start=START, end=END,
                                new_per_month=PER_MONTH)
    data = synthetic_sce(seed=SEED, start=START, end=END, new_per_month=PER_MONTH)
    return raw, paths, data


@pytest.fixture(scope="module")
def built(generated, tmp_path_factory):
    raw, _, _ = generated
    report = sce.build(_survey(), raw, tmp_path_factory.mktemp("out"))
    tables = {name: pd.read_parquet(path) for name, path in report.outputs.items()}
    return tables, report


def _joined(truth: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    merged = truth.merge(table, on=KEYS, how="left", suffixes=("__truth", ""), indicator=True)
    assert (merged["_merge"] == "both").all()
    return merged


def _same(expected: pd.Series, got: pd.Series) -> bool:
    """Equal values with NaN == NaN; numbers compared as floats, other values as text."""
    if expected.dtype.kind in "fiub" or got.dtype.kind in "fiub":
        a = pd.to_numeric(expected, errors="coerce").to_numpy(dtype="float64")
        b = pd.to_numeric(got, errors="coerce").to_numpy(dtype="float64")
        return bool(np.array_equal(np.isnan(a), np.isnan(b))
                    and np.allclose(a[~np.isnan(a)], b[~np.isnan(b)]))
    return bool((expected.astype("string").fillna("<NA>").to_numpy()
                 == got.astype("string").fillna("<NA>").to_numpy()).all())


def _check_truth(truth: pd.DataFrame, table: pd.DataFrame, columns: list[str]) -> None:
    merged = _joined(truth, table)
    for column in columns:
        assert _same(merged[f"{column}__truth"], merged[column]), column


# ---------------------------------------------------------------------------------------------
# Layout and round trip


def test_generated_workbooks_have_the_ny_fed_names_sheets_and_header_rows(generated):
    raw, paths, _ = generated
    for key, (relative, sheet, header) in LAYOUT.items():
        path = raw / "micro" / "sce" / relative
        assert paths[key] == path and path.is_file(), key
        assert (path.parent / (path.name + ".synthetic.json")).is_file()
        book = load_workbook(path, read_only=True)
        rows = list(book[sheet].iter_rows(values_only=True, max_row=header + 1))
        assert "userid" in rows[header], key
        assert all("userid" not in (r or ()) for r in rows[:header]), key
        if key == "housing":
            assert {f"Data {y}" for y in range(2014, 2025)} <= set(book.sheetnames)
            assert {f"Codebook {y}" for y in range(2014, 2025)} <= set(book.sheetnames)
        if key == "job_search":
            assert "year" in rows[0] and "date" not in rows[0]
        book.close()


def test_round_trip_keeps_every_respondent_month(generated, built):
    _, _, data = generated
    tables, report = built
    assert report.synthetic is True
    assert len(report.inputs) == 9
    assert all(len(sha) == 64 for sha in report.inputs.values())
    for module, truth in data.truth.items():
        table = tables[f"sce_{module}"]
        assert len(table) == len(truth) == report.rows[f"sce_{module}"] > 0, module
        assert not table.duplicated(KEYS).any(), module
        assert set(map(tuple, table[KEYS].astype(str).to_numpy())) == set(
            map(tuple, truth[KEYS].astype(str).to_numpy())), module
        assert (table["source"] == "sce").all() and (table["module"] == module).all()
    core = tables["sce_core"]
    assert set(core["raw_file"]) == {f"core/{Path(LAYOUT[k][0]).name}" for k in LAYOUT
                                     if k.startswith("core_")}
    # columns of the workbook come through unchanged
    sheet = data.sheets["core_13_16"][0].frame
    row = sheet.iloc[0]
    got = core[(core["respondent_id"] == str(row["userid"]))
               & (core["survey_year"] * 100 + core["survey_month"] == row["date"])].iloc[0]
    for column in ("Q1", "Q3", "Q9_bin3", "Q32", "weight", "Q9_mean"):
        assert _same(pd.Series([row[column]]), pd.Series([got[column]])), column
    assert got["_REGION_CAT"] == row["_REGION_CAT"]


def test_core_workbooks_do_not_repeat_respondent_months(generated, built):
    _, _, data = generated
    raw = pd.concat([s[0].frame for k, s in data.sheets.items() if k.startswith("core_")])
    assert not raw.duplicated(["userid", "date"]).any()  # the reference refuses repeats
    tables, _ = built
    _check_truth(data.truth["core"], tables["sce_core"], ["weight_core"])


def test_a_respondent_month_in_two_core_workbooks_is_an_error(tmp_path):
    a = _write(tmp_path, "a.xlsx", [Sheet("Data", [["t"]], _core_frame())])
    b = _write(tmp_path, "b.xlsx", [Sheet("Data", [["t"]], _core_frame().iloc[[1]])])
    pieces = read_workbook("core_20_24", a) + read_workbook("core_latest", b)
    with pytest.raises(DataError, match=r"respondent 70000001 appears more than once for "
                                        r"2024-02 \(core/a.xlsx sheet Data, core/b.xlsx"):
        sce.build_tables(pieces)


# ---------------------------------------------------------------------------------------------
# Companions, densities, labels, derived columns


def test_clean_and_status_companions_recover_the_generator(generated, built):
    _, _, data = generated
    tables, _ = built
    statuses: set[str] = set()
    for module, truth in data.truth.items():
        columns = [c for c in truth.columns if c.endswith(("__clean", "__status"))]
        _check_truth(truth, tables[f"sce_{module}"], columns)
        for c in columns:
            if c.endswith("__status"):
                statuses |= set(truth[c].dropna())
    assert {"valid", "undocumented_special", "invalid_range"} <= statuses
    core = tables["sce_core"]
    text = core["Q5new"].astype("string") == "."
    assert text.any() and (core.loc[text, "Q5new__status"] == "undocumented_special").all()
    low = pd.to_numeric(core["Q4new"], errors="coerce") <= -900
    assert low.any() and core.loc[low, "Q4new__clean"].isna().all()
    # the reference bounds none of its task key items: Q13new 150 is valid, -999 special
    high = pd.to_numeric(core["Q13new"], errors="coerce") > 100
    assert high.any() and (core.loc[high, "Q13new__status"] == "valid").all()
    assert (core.loc[high, "Q13new__clean"] > 100).all()
    low = pd.to_numeric(core["Q13new"], errors="coerce") <= -900
    assert low.any() and (core.loc[low, "Q13new__status"] == "undocumented_special").all()
    # ... while -999 in a 0-100 item is out of its range
    low = pd.to_numeric(core["Q4new"], errors="coerce") <= -900
    assert (core.loc[low, "Q4new__status"] == "invalid_range").all()


def test_density_statuses_recover_every_class(generated, built):
    _, _, data = generated
    tables, _ = built
    core = tables["sce_core"]
    families = [("core", "Q9"), ("core", "Q9c"), ("household_spending", "qsp7dens")]
    for module, family in families:
        _check_truth(data.truth[module], tables[f"sce_{module}"], [f"{family}__task_status"])
    assert set(core["Q9__task_status"].dropna()) == DENSITY_CLASSES
    spending = tables["sce_household_spending"]
    assert set(spending["qsp7dens__task_status"].dropna()) <= DENSITY_CLASSES
    valid = (core["Q9__task_status"] == "valid").fillna(False)
    assert (core["Q9__task_valid"].fillna(False) == valid).all()
    # not answered at all -> task_valid missing, as the reference
    assert (core["Q9__task_valid"].isna() == core["Q9__task_status"].isna()).all()
    bins = [f"Q9_bin{i}" for i in range(1, 11)]
    raw = pd.concat([s[0].frame for k, s in data.sheets.items() if k.startswith("core_")])
    sums = pd.DataFrame({"respondent_id": raw["userid"].astype(str),
                         "survey_year": raw["date"] // 100, "survey_month": raw["date"] % 100,
                         "raw_sum": raw[bins].apply(pd.to_numeric, errors="coerce")
                         .sum(axis=1, min_count=1)})
    merged = _joined(sums, core)
    assert _same(merged["raw_sum"], merged["Q9__sum"])
    # tolerance edges written by the generator: sums of 99 or 101, and ten bins of 10
    edge = core["Q9__sum"].isin([99.0, 101.0]) & core[bins].notna().all(axis=1)
    assert edge.any() and (core.loc[edge, "Q9__task_status"] == "valid").all()
    tens = (core[bins].apply(pd.to_numeric, errors="coerce") == 10).all(axis=1)
    assert tens.any() and (core.loc[tens, "Q9__task_status"] == "valid").all()


def test_density_status_rules_on_hand_made_rows():
    rows = pd.DataFrame([
        [10] * 10,                       # valid: ten equal bins that sum to 100
        [50, 50.9] + [0] * 8,            # valid: within the 1-point tolerance
        [50, 48.9] + [0] * 8,            # sum_off_100
        [0] * 10,                        # all_zero
        [5] * 10,                        # all_same_nonzero
        [None, 100] + [0] * 8,           # partial_missing
        [101, None] + [0] * 8,           # range_invalid beats partial_missing
        ["x"] + [0] * 9,                 # non-numeric bin: range_invalid
        [None] * 10,                     # not asked
    ], dtype="object")  # fmt: skip
    total, status = density_status(rows)
    table = rows.set_axis([f"Q24_bin{i}" for i in range(1, 11)], axis=1)
    valid = density_columns_for(table, "core")["Q24__task_valid"]
    assert list(valid[:3]) == [True, True, False] and pd.isna(valid[8])
    assert status.tolist()[:8] == ["valid", "valid", "sum_off_100", "all_zero",
                                   "all_same_nonzero", "partial_missing", "range_invalid",
                                   "range_invalid"]
    assert pd.isna(status.iloc[8]) and np.isnan(total[8])
    assert total[1] == pytest.approx(100.9) and total[5] == 100


def test_age_income_weights_and_panel_month(generated, built):
    _, _, data = generated
    tables, _ = built
    core = tables["sce_core"]
    _check_truth(data.truth["core"], core, ["age_years", "_HH_INC_DETAILED", "panel_month"])
    # spec labels of the 11 income brackets, first and last
    assert (core.loc[core["_HH_INC_DETAILED"] == 1, "_HH_INC_DETAILED__label"]
            == "Less than $10,000").all()
    assert (core.loc[core["_HH_INC_DETAILED"] == 11, "_HH_INC_DETAILED__label"]
            == "$200,000 or more").all()
    assert core["age_years"].notna().all()
    assert (core["Q32"].isna() & core["age_years"].notna()).any()  # advanced, not reported
    weights = core.set_index(KEYS)["weight_core"]
    for module in ("household_spending", "labor_market", "public_policy"):
        table = tables[f"sce_{module}"].set_index(KEYS)
        assert table[f"weight_{module}"].equals(weights.reindex(table.index).rename(
            f"weight_{module}")), module
        assert not table["missing_core_weight"].any()
    # modules without a tenure column have no panel_month (as the reference)
    assert "panel_month" not in tables["sce_job_search"].columns
    housing = tables["sce_housing"]
    assert (housing["date"] == housing["survey_year"] * 100 + 2).all()  # added where absent
    jobs = tables["sce_job_search"]
    assert (jobs["date"] == jobs["year"] * 100 + 10).all()
    _check_truth(data.truth["job_search"], tables["sce_job_search"], ["weight_job_search"])
    _check_truth(data.truth["housing"], tables["sce_housing"], ["weight_housing"])
    assert (tables["sce_housing"]["survey_month"] == 2).all()
    assert (tables["sce_job_search"]["survey_month"] == 10).all()
    assert (tables["sce_housing"]["source_wave_year"] == tables["sce_housing"]["survey_year"]).all()


def test_labels_from_maps_and_housing_codebooks(generated, built):
    _, _, data = generated
    tables, _ = built
    _check_truth(data.truth["core"], tables["sce_core"], ["Q1__label"])
    _check_truth(data.truth["household_spending"], tables["sce_household_spending"],
                 ["qsp12n__label"])
    _check_truth(data.truth["labor_market"], tables["sce_labor_market"], ["nl3_1__label"])
    _check_truth(data.truth["public_policy"], tables["sce_public_policy"],
                 [f"qp2_{i}__label" for i in (5, 6, 9, 16)])
    policy = tables["sce_public_policy"]
    assert set(policy["hidqp2_5__label"].dropna()) == {"increase_or_expansion",
                                                       "decrease_or_reduction"}
    core = tables["sce_core"]
    assert (core["_REGION_CAT__label"] == core["_REGION_CAT"]).all()
    assert (core.loc[core["Q10_1"] == 1, "Q10_1__label"] == "yes").all()
    assert (core.loc[core["Q15"] == 2, "Q15__label"] == "no").all()
    housing = _joined(data.truth["housing"], tables["sce_housing"])
    loan = [row[f"{row['loan_column']}__label"] for _, row in housing.iterrows()]
    assert _same(housing["loan_label"], pd.Series(loan))
    assert "Yes, mortgage(s) only" in set(housing["loan_label"].dropna())
    partner = [row[f"{row['partner_column']}__label"] for _, row in housing.iterrows()]
    assert _same(housing["partner_label"], pd.Series(partner))
    assert {"q6a_lock", "HQH5m2_1", "qh5m2_1"} <= set(tables["sce_housing"].columns)


def test_reservation_wage_per_year_in_every_unit(generated, built):
    _, _, data = generated
    tables, _ = built
    labor = tables["sce_labor_market"]
    _check_truth(data.truth["labor_market"], labor, ["reservation_wage_annual_full_time",
                                                     "reservation_wage_annual_full_time_status"])
    status = labor["reservation_wage_annual_full_time_status"]
    assert {"valid_hour", "valid_year", "missing_pre2017_unit", "missing_amount",
            "invalid_source_amount", "nonpositive_amount"} <= set(status)
    factors = {"valid_hour": 2080, "valid_week": 52, "valid_two_weeks": 26, "valid_month": 12,
               "valid_year": 1}  # 40 hours x 52 weeks; spec 1.8
    for name, factor in factors.items():
        rows = labor[status == name]
        assert np.allclose(rows["reservation_wage_annual_full_time"], rows["rw2a"] * factor)
    late_blank = (labor["survey_date"] >= "2017-03-01") & labor["rw2b"].isna() & (
        labor["rw2a"] > 0)
    assert late_blank.any() and (status[late_blank] == "valid_year").all()
    early_blank = (labor["survey_date"] < "2017-03-01") & labor["rw2b"].isna() & (
        labor["rw2a"] > 0)
    assert early_blank.any() and labor.loc[early_blank,
                                           "reservation_wage_annual_full_time"].isna().all()


def test_job_search_special_codes_and_months_without_work(generated, built):
    _, _, data = generated
    tables, _ = built
    jobs = tables["sce_job_search"]
    never = jobs["l8_months_no_work"] == 999995
    assert never.any() and (jobs.loc[never, "l8_months_no_work__status"]
                            == "never_had_paid_job").all()
    assert jobs.loc[never, "l8_months_no_work__clean"].isna().all()
    assert {"valid", "never_had_paid_job", "invalid_negative", "invalid_noninteger",
            "exceeds_age_in_months", "age_unavailable_for_validation"} == set(
        jobs["l8_months_no_work__status"].dropna())
    valid = jobs["l8_months_no_work__status"] == "valid"
    assert (jobs.loc[valid, "l8_months_no_work__clean"] <= 12 * jobs.loc[valid, "age"]).all()
    would_not = jobs["rw3b_pct_incr_relocation"] == 999998
    assert would_not.any() and (jobs.loc[would_not, "rw3b_pct_incr_relocation__status"]
                                == "would_not_accept").all()
    home = jobs["ec5_cps_job_commute_time"] == 999996
    assert (jobs.loc[home, "ec5_cps_job_commute_time__status"] == "mostly_works_from_home").all()
    assert (jobs["survey_date"].dt.month == 10).all() and (jobs["date"] % 100 == 10).all()


def test_months_no_work_rule_on_hand_made_rows():
    table = pd.DataFrame({"l8_months_no_work": [24, 999995, -2, 3.5, 500, 10, None, 10],
                          "age": [30, 30, 30, 30, 40, None, 50, 17]})
    out = months_no_work(table)
    assert out["l8_months_no_work__status"].tolist()[:6] == [
        "valid", "never_had_paid_job", "invalid_negative", "invalid_noninteger",
        "exceeds_age_in_months", "age_unavailable_for_validation"]
    assert pd.isna(out["l8_months_no_work__status"][6])
    assert out["l8_months_no_work__status"][7] == "age_unavailable_for_validation"
    assert out["l8_months_no_work__clean"][0] == 24 and np.isnan(out["l8_months_no_work__clean"][1])


# ---------------------------------------------------------------------------------------------
# Release dates and manifest


def test_release_dates_follow_the_lag_rule(built):
    tables, _ = built
    for module, lag in LAGS.items():
        table = tables[f"sce_{module}"]
        expected = (table["survey_date"] + pd.DateOffset(months=lag)).dt.strftime("%Y-%m-01")
        assert (table["release_date"] == expected).all(), module
        proxy = (table["survey_date"] + pd.DateOffset(months=1)).dt.strftime("%Y-%m-01")
        assert (table["aggregate_release_date_proxy"] == proxy).all(), module
        assert (table["microdata_release_lag_months"] == lag).all()
        assert (table["release_date_status"]
                == "inferred_from_collection_month_and_official_lag").all()
        assert table["release_id"].str.startswith(f"sce_{module}_").all()
    dates = release_columns("core", np.array([2024, 2025]), np.array([1, 4]))
    assert list(dates["release_date"]) == ["2024-10-01", "2026-01-01"]
    assert list(release_columns("housing", np.array([2014]), np.array([2]))[
        "release_date"]) == ["2015-08-01"]
    assert list(release_columns("job_search", np.array([2020]), np.array([10]))[
        "release_date"]) == ["2021-07-01"]


def test_release_crosswalk_supplies_dates_and_must_cover_every_month(tmp_path):
    path = tmp_path / "release_sce.csv"
    lags = {"core": 9, "household_spending": 18, "labor_market": 18, "public_policy": 9,
            "housing": 18, "job_search": 9}  # the reference's reader needs every module
    head = ("module,survey_year,survey_month,release_date,source,source_url,comments,"
            "aggregate_release_date_proxy,microdata_release_lag_months")

    def write(core_lag: int = 9) -> None:
        lines = [head]
        for module, lag in lags.items():
            if module == "core":
                lines.append(f"core,2024,1,2024-10-14,Official,u,c,2024-02-16,{core_lag}")
            elif module == "housing":
                lines.append(f"housing,2024,2,2025-08-01,Inferred,u,c,2024-04-01,{lag}")
            else:
                lines.append(f"{module},2024,1,2024-10-14,Official,u,c,2024-02-01,{lag}")
        path.write_text("\n".join(lines) + "\n")

    write()
    crosswalk = ReleaseCrosswalk.read(path)
    dates = release_columns("core", np.array([2024, 2024]), np.array([1, 1]), crosswalk)
    assert list(dates["release_date"]) == ["2024-10-14"] * 2
    assert list(dates["release_date_source"]) == ["Official"] * 2  # the crosswalk's text
    assert list(dates["aggregate_release_date_proxy"]) == ["2024-02-16"] * 2
    housing = release_columns("housing", np.array([2024]), np.array([2]), crosswalk)
    assert housing["release_date"][0] == "2025-08-01"
    with pytest.raises(DataError, match=r"release_sce.csv: no release date for SCE core 2024-02"):
        release_columns("core", np.array([2024]), np.array([2]), crosswalk)
    path.write_text("module,survey_year,survey_month,release_date,source\n"
                    "core,2024,1,2024-10-14,Official\n")
    with pytest.raises(DataError, match=r"release_sce.csv: column source_url is missing"):
        ReleaseCrosswalk.read(path)
    write(core_lag=18)
    with pytest.raises(DataError, match=r"release_sce.csv: microdata_release_lag_months 18 for module core; its lag is 9"):
        ReleaseCrosswalk.read(path)


def test_manifest_has_one_row_per_raw_file(generated, built):
    raw, paths, _ = generated
    tables, _ = built
    manifest = tables["sce_release_manifest"]
    assert list(manifest.columns) == sce.MANIFEST_COLUMNS
    assert sorted(manifest["raw_file"]) == sorted(path for path, _, _ in LAYOUT.values())
    for row in manifest.to_dict("records"):
        table = tables[f"sce_{row['module']}"]
        part = table[table["raw_file"] == row["raw_file"]]
        assert row["release_date"] == part["release_date"].max(), row["raw_file"]
        assert row["reference_period_start"] == part["survey_date"].min().strftime("%Y-%m-%d")
        assert row["release_id"].endswith(row["release_date"].replace("-", "_"))
        assert row["release_date_source"] == f"sce_{row['module']}_{LAGS[row['module']]}m_inferred"
    path = raw / "micro" / "sce" / LAYOUT["labor_market"][0]
    import hashlib

    sha = manifest.loc[manifest["module"] == "labor_market", "sha256"].iloc[0]
    assert sha == hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Skipping and errors


def test_skipped_workbooks_leave_no_table_and_are_listed(generated, tmp_path):
    raw, _, _ = generated
    out = tmp_path / "out"
    out.mkdir()
    (out / "sce_housing.parquet").write_bytes(b"stale")
    # null (as `survey.raw.<key>=null` on the command line) and '' both skip a workbook
    skip = {k: None if i % 2 else "" for i, k in enumerate(LAYOUT)
            if k not in ("core_13_16", "job_search")}
    report = sce.build(_survey(skip), raw, out)
    assert set(report.outputs) == {"sce_core", "sce_job_search", "sce_release_manifest"}
    assert not (out / "sce_housing.parquet").exists()
    manifest = pd.read_parquet(report.outputs["sce_release_manifest"])
    assert set(manifest["raw_file"]) == {LAYOUT[k][0] for k in ("core_13_16", "job_search")}
    core = pd.read_parquet(report.outputs["sce_core"])
    assert core["survey_year"].max() <= 2016
    with pytest.raises(ConfigError, match="every core workbook is skipped"):
        sce.build(_survey({k: "" for k in LAYOUT}), raw, out)


def test_missing_workbook_names_the_file_and_the_ny_fed(tmp_path):
    with pytest.raises(DataError) as err:
        sce.build(_survey(), tmp_path, tmp_path / "out")
    message = str(err.value)
    assert "FRBNY-SCE-Public-Microdata-Complete-13-16.xlsx" in message
    assert "newyorkfed.org" in message and "core_13_16=null" in message
    assert len(message.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def _core_frame(**overrides) -> pd.DataFrame:
    frame = pd.DataFrame({
        "userid": [70000001, 70000001, 70000002], "date": [202401, 202402, 202401],
        "weight": [1.0, 1.1, 0.9], "tenure": [1, 2, 1], "Q1": [3, 4, 1], "Q32": [40, None, 70],
        "Q47": [5, None, 11], "D6": [None, 6, None], "_REGION_CAT": ["West", "West", "South"],
    })  # fmt: skip
    for column, values in overrides.items():
        if values is None:
            frame = frame.drop(columns=[column])
        else:
            frame[column] = values
    return frame


def _write(tmp_path: Path, name: str, sheets: list[Sheet]) -> Path:
    return write_workbook(tmp_path / "core" / name, sheets)


def _build_core(path: Path) -> dict[str, pd.DataFrame]:
    tables, _ = sce.build_tables(read_workbook("core_20_24", path))
    return tables


def test_small_core_workbook_builds(tmp_path):
    path = _write(tmp_path, "c.xlsx", [Sheet("Data", [["title"]], _core_frame())])
    core = _build_core(path)["core"]
    assert core["age_years"].tolist() == [40, 40, 70]
    assert core["_HH_INC_DETAILED"].tolist() == [5, 6, 11]
    assert core["Q1__label"].tolist() == ["about the same", "somewhat better off",
                                          "much worse off"]
    assert core["respondent_id"].tolist() == ["70000001", "70000001", "70000002"]
    assert str(core["userid"].dtype) == "int64"  # whole numbers without blanks, as read_excel


def test_missing_sheet_is_named(tmp_path):
    path = _write(tmp_path, "c.xlsx", [Sheet("Sheet1", [["title"]], _core_frame())])
    with pytest.raises(DataError, match=r"c.xlsx: sheet 'Data' not found \(sheets: Sheet1\)"):
        read_workbook("core_20_24", path)


def test_wrong_header_row_names_the_missing_userid_column(tmp_path):
    path = tmp_path / "policy.xlsx"
    write_workbook(path, [Sheet("Data", [["title"]], _core_frame())])  # header at row 2, not 11
    with pytest.raises(DataError) as err:
        read_workbook("public_policy", path)
    message = str(err.value)
    assert "policy.xlsx sheet Data: column userid not found in header row 11" in message
    assert "it is in row 2" in message


def test_missing_column_is_named(tmp_path):
    path = _write(tmp_path, "c.xlsx", [Sheet("Data", [["title"]], _core_frame(tenure=None))])
    with pytest.raises(DataError, match=r"c.xlsx sheet Data: column tenure not found"):
        _build_core(path)
    path = _write(tmp_path, "d.xlsx", [Sheet("Data", [["title"]], _core_frame(Q47=None))])
    with pytest.raises(DataError, match=r"column\(s\) \['Q47'\] not found"):
        _build_core(path)


def test_code_outside_a_label_map_names_file_column_and_code(tmp_path):
    path = _write(tmp_path, "c.xlsx", [Sheet("Data", [["title"]], _core_frame(Q1=[3, 7, 1]))])
    with pytest.raises(DataError, match=r"core/c.xlsx sheet Data: column Q1 holds code 7, which "
                                        r"is not in the SCE core codebook"):
        _build_core(path)
    path = _write(tmp_path, "r.xlsx", [Sheet("Data", [["title"]],
                                             _core_frame(_REGION_CAT=["West", "Mars", "South"]))])
    with pytest.raises(DataError, match=r"column _REGION_CAT holds code 'Mars'"):
        _build_core(path)
    # a <= -900 special has no label either (as the reference); outside the income map: no label
    path = _write(tmp_path, "s.xlsx", [Sheet("Data", [["title"]],
                                             _core_frame(Q1=[3, -999, 1]))])
    with pytest.raises(DataError, match=r"column Q1 holds code -999"):
        _build_core(path)
    path = _write(tmp_path, "i.xlsx", [Sheet("Data", [["title"]], _core_frame(Q47=[5, None, 99]))])
    core = _build_core(path)["core"]
    assert pd.isna(core["_HH_INC_DETAILED__label"][2])


def test_bad_dates_and_repeated_rows_are_errors(tmp_path):
    path = _write(tmp_path, "c.xlsx", [Sheet("Data", [["t"]], _core_frame(date=[202401, 202413,
                                                                                  202401]))])
    with pytest.raises(DataError, match="column date holds 202413, not a YYYYMM month"):
        _build_core(path)
    path = _write(tmp_path, "d.xlsx", [Sheet("Data", [["t"]], _core_frame(date=[202401, 202401,
                                                                                  202401]))])
    with pytest.raises(DataError, match="userid 70000001 appears twice for 2024-01"):
        _build_core(path)
    path = _write(tmp_path, "e.xlsx", [Sheet("Data", [["t"]], _core_frame(date=[202401, "Jan",
                                                                                  202401]))])
    with pytest.raises(DataError, match="column date holds 'Jan'"):
        _build_core(path)


def test_job_search_and_housing_checks(tmp_path):
    jobs = pd.DataFrame({"year": [2020, 2020], "userid": [1, 2], "survey_weight": [1.0, 1.0],
                         "age": [30, 40], "l8_months_no_work": [5, 999995],
                         "l2_num_jobs": [1, 999991],
                         **{c: [None, None] for c in JOB_SEARCH_SPECIAL_CODES
                            if c != "l8_months_no_work"}})
    path = write_workbook(tmp_path / "job_search" / "js.xlsx", [Sheet("Data", frame=jobs)])
    core = _write(tmp_path, "c.xlsx", [Sheet("Data", [["t"]], _core_frame())])
    pieces = read_workbook("core_20_24", core) + read_workbook("job_search", path)
    with pytest.raises(DataError, match="column l2_num_jobs holds special code 999991"):
        sce.build_tables(pieces)
    path = write_workbook(tmp_path / "job_search" / "js2.xlsx", [Sheet("Data", frame=jobs.drop(
        columns=["rw7b_pct_incr_healthins"]))])  # the reference requires every coded column
    pieces = read_workbook("core_20_24", core) + read_workbook("job_search", path)
    with pytest.raises(DataError, match="column rw7b_pct_incr_healthins not found"):
        sce.build_tables(pieces)
    sheets = []
    for year in range(2014, 2025):
        frame = pd.DataFrame({"userid": [1], "date": [year * 100 + (3 if year == 2016 else 2)],
                              "weights": [1.0]})
        sheets += [Sheet(f"Data {year}", frame=frame), Sheet(f"Codebook {year}", rows=[])]
    path = write_workbook(tmp_path / "housing" / "h.xlsx", sheets)
    pieces = read_workbook("core_20_24", core) + read_workbook("housing", path)
    with pytest.raises(DataError, match=r"sheet Data 2016: column date holds 201603 in data row "
                                        r"1; the 2016 housing wave is fielded in February"):
        sce.build_tables(pieces)
    sheets[4] = Sheet("Data 2016", frame=pd.DataFrame({"userid": [1, 2], "date": [201602, None],
                                                       "weights": [1.0, 1.0]}))
    path = write_workbook(tmp_path / "housing" / "h2.xlsx", sheets)
    pieces = read_workbook("core_20_24", core) + read_workbook("housing", path)
    with pytest.raises(DataError, match=r"Data 2016: column date holds blank in data row 2"):
        sce.build_tables(pieces)


def test_sheet_reader_rules():
    rows = [("title",), (), ("userid", "a", None, "b"), (1, " 3 ", None, "x"), (2, "", None, 4),
            (None, None, None, None)]
    frame = sheet_frame(rows, 2, "w")
    assert list(frame.columns) == ["userid", "a", "b"] and len(frame) == 2
    assert frame["a"].dtype == "float64" and frame["a"].tolist()[0] == 3  # a blank: float
    assert np.isnan(frame["a"].tolist()[1])
    assert frame["b"].tolist() == ["x", "4"]  # a text cell keeps the column as text
    # converted in chunks: text in a later chunk turns the earlier numbers into text too
    frame = sheet_frame([("userid", "a"), (1, 2.0), (2, 2.5), (3, "x")], 0, "w",
                            chunk_rows=1)
    assert frame["a"].tolist() == ["2", "2.5", "x"] and frame["userid"].tolist() == [1, 2, 3]
    with pytest.raises(DataError, match="w: column C holds data but has no name in header row 1"):
        sheet_frame([("userid", "a"), (1, 2, 3)], 0, "w")
    with pytest.raises(DataError, match="w: column a appears twice"):
        sheet_frame([("userid", "a", "a"), (1, 2, 3)], 0, "w")


def test_codebook_parser_reads_both_layouts():
    rows = [("Codebook",), (), ("[HQH5]: Do you have a mortgage?",), (None, "Code", "Label"),
            (None, 1, "Yes, mortgage(s) only"), (None, "4", "No"), (),
            ("qh5m", "Rate type"), (None, 1, "Fixed  rate"), (), ("OTHER", "x"), (None, 1, "z")]
    book = parse_codebook(rows, {"hqh5", "qh5m"})
    assert book == {"hqh5": {1: "Yes, mortgage(s) only", 4: "No"},
                    "qh5m": {1: "Fixed rate"}}


def test_generator_is_seeded():
    a = synthetic_sce(seed=5, start="2013-12", end="2025-01", new_per_month=1)
    b = synthetic_sce(seed=5, start="2013-12", end="2025-01", new_per_month=1)
    for key, sheets in a.sheets.items():
        for x, y in zip(sheets, b.sheets[key], strict=True):
            assert x.name == y.name and x.preamble == y.preamble and x.rows == y.rows
            if x.frame is not None:
                pd.testing.assert_frame_equal(x.frame, y.frame)
    with pytest.raises(ConfigError, match="end 2023-01 is before start"):
        synthetic_sce(seed=1, start="2024-01", end="2023-01")
    with pytest.raises(ConfigError, match="leaves core_13_16 sheet Data, core_17_19 sheet Data, housing sheet Data 2014"):
        synthetic_sce(seed=1, start="2024-01", end="2025-06", new_per_month=1)
