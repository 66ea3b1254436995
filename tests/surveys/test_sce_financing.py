"""Fuster-Zafar financing experiment builder: seeded FZdata_raw.dta -> house_sce_financing.

The generator computes the stored calculator payments in exact rational arithmetic; the builder
must reproduce them with its floating-point calculator. Other expectations are spec facts.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.sce import financing as fz
from hhx.surveys.synthetic.sce.financing import (
    exact_payment,
    synthetic_fz_frame,
    write_fz_dta,
    write_synthetic_fz,
)

RAW = "micro/sce/financing_fuster_zafar_2021/ReplicationMaterial/data/raw/FZdata_raw.dta"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    raw_dir = tmp_path_factory.mktemp("raw")
    write_synthetic_fz(raw_dir / RAW, seed=11)  # default size: the release's 1,211 respondents
    report = fz.build(
        SurveyConfig(name="sce_financing", raw={"sce_financing": RAW}),
        raw_dir,
        tmp_path_factory.mktemp("out"),
    )
    frame = pd.read_parquet(report.outputs["house_sce_financing"])
    audit = pd.read_parquet(report.outputs["house_sce_financing_calculator_audit"])
    raw = pd.read_stata(raw_dir / RAW, convert_categoricals=False)
    return frame, audit, raw, report


def test_default_build_has_the_1211_respondents_and_the_target_mapping(built):
    frame, _, raw, report = built
    assert report.rows["house_sce_financing"] == len(frame) == 1211
    assert report.synthetic is True
    assert frame["userid"].is_unique
    assert frame["hypoversion"].isin([1, 2]).sum() == 1200
    pairs = {  # spec 1.9
        "wtp_flexible_original_rate": "hypo_q2",
        "down_payment_flexible_original_rate": "hypo_d2",
        "wtp_flexible_alternative_rate": "hypo_q3",
        "down_payment_flexible_alternative_rate": "hypo_d3",
        "wtp_after_cash_inheritance": "hypo_q4",
        "down_payment_after_cash_inheritance": "hypo_d4",
    }
    for target, source in pairs.items():
        np.testing.assert_array_equal(frame[target].to_numpy(), raw[source].to_numpy("float64"))
    v1, v2 = frame["hypoversion"] == 1, frame["hypoversion"] == 2
    assert (frame.loc[v1, "initial_rate"] == 4.5).all() and (
        frame.loc[v1, "alternative_rate"] == 6.5
    ).all()
    assert (frame.loc[v2, "initial_rate"] == 6.5).all() and (
        frame.loc[v2, "alternative_rate"] == 4.5
    ).all()
    assert frame.loc[frame["hypoversion"].isna(), "initial_rate"].isna().all()
    for wtp, down in zip(frame["initial_wtp"], frame["initial_down_payment"], strict=True):
        if not math.isnan(wtp):
            assert down == math.floor(0.2 * wtp + 0.5)
    assert (frame["cash_inheritance"] == 100_000).all()


def test_calculator_reproduces_the_stored_payments_exactly(built):
    frame, audit, raw, _ = built
    assert audit["scenario"].tolist() == ["q1", "q2", "q3", "q4"]
    assert (audit["valid_source_rows"] >= 1100).all()  # nearly all assigned rows are valid
    assert audit["status"].eq("pass").all() and (audit["maximum_absolute_error_usd"] == 0).all()
    for k in range(1, 5):
        valid = frame[f"calculator_valid_inputs_q{k}"]
        np.testing.assert_array_equal(
            frame.loc[valid, f"calculator_reproduced_q{k}"].to_numpy(),
            raw.loc[valid.to_numpy(), f"hypo_mpayment_q{k}"].to_numpy("float64"),
        )
    # rows whose down payment breaks the 5% minimum are flagged, not checked
    low = frame["hypo_d2"] < np.floor(0.05 * frame["hypo_q2"] + 0.5)
    assert low.any() and not frame.loc[low, "calculator_valid_inputs_q2"].any()


def test_calculator_matches_exact_arithmetic_and_the_prompt_figures():
    # spec task 18: principal and interest per $100k is about $507 at 4.5% and $632 at 6.5%
    assert np.floor(fz.principal_interest(100_000, 4.5) + 0.5) == 507
    assert np.floor(fz.principal_interest(100_000, 6.5) + 0.5) == 632
    for price, down, home, rate in [(300_000, 60_000, 250_000, 4.5), (123_000, 6_200, 99_000, 6.5)]:
        expected, _ = exact_payment(price, down, home, rate)
        assert fz.calculator_payment(price, down, home, rate) == expected


def test_bands_follow_the_spec_boundaries(built):
    frame, _, raw, _ = built
    liquid = fz.liquid_savings_band(
        pd.Series([0, 1, 4_999, 5_000, 29_999, 30_000, 100_000, 500_000, -1])
    )
    assert liquid.tolist()[:8] == [
        "no liquid savings", "less than $5,000", "less than $5,000", "$5,000 to $30,000",
        "$5,000 to $30,000", "$30,000 to $100,000", "$100,000 to $500,000", "$500,000 or more",
    ]  # fmt: skip
    assert liquid.isna().tolist()[-1]
    debt = fz.non_housing_debt_band(pd.Series([0, 999, 1_000, 5_000, 30_000]))
    assert debt.tolist() == [
        "no non-housing debt", "less than $1,000", "$1,000 to $5,000", "$5,000 to $30,000",
        "$30,000 or more",
    ]  # fmt: skip
    no_savings = frame["q16_6"] == 1
    assert (
        no_savings.any()
        and (frame.loc[no_savings, "liquid_savings_band"] == "no liquid savings").all()
    )
    assert (frame.loc[frame["hh_income"] == 11, "income_band"] == "$200,000 or more").all()
    assert (frame.loc[frame["q14"] == 6, "credit_score_band"] == "does not know").all()
    renters = frame["q4"] == 0
    assert (frame.loc[renters, "current_home_value"] == 0).all()
    assert (frame.loc[renters, "tenure"] == "renter").all()
    assert not any(c.endswith("_label") for c in frame.columns)  # the reference adds none
    assert set(frame["region"]) == {"Northeast", "Midwest", "South", "West"}  # kept as read


def test_respondent_count_check_is_configurable(tmp_path):
    path = write_synthetic_fz(tmp_path / "FZdata_raw.dta", seed=2, n=40)
    with pytest.raises(DataError, match=r"40 respondents, expected exactly 1211 unique userids"):
        fz.clean_financing(path)
    frame, _ = fz.clean_financing(path, expected_respondents=None)
    assert len(frame) == 40


def test_tampered_payment_names_userid_and_scenario(tmp_path):
    raw = synthetic_fz_frame(seed=3, n=30)
    row = raw.index[raw["hypoversion"].notna()][0]
    raw.loc[row, "hypo_mpayment_q3"] += 1
    path = write_fz_dta(raw, tmp_path / "FZdata_raw.dta")
    userid = raw.loc[row, "userid"]
    with pytest.raises(DataError, match=rf"hypo_mpayment_q3 of userid {userid} is"):
        fz.clean_financing(path, expected_respondents=None)


def test_missing_file_column_and_duplicate_id_are_errors(tmp_path):
    with pytest.raises(DataError, match=r"FZdata_raw\.dta.*openicpsr"):
        fz.build(SurveyConfig(name="sce_financing", raw={"sce_financing": RAW}), tmp_path, tmp_path)
    with pytest.raises(ConfigError, match="raw.sce_financing is not set"):
        fz.build(SurveyConfig(name="sce_financing", raw={}), tmp_path, tmp_path)
    raw = synthetic_fz_frame(seed=4, n=20)
    path = write_fz_dta(raw.drop(columns=["q14"]), tmp_path / "a.dta")
    with pytest.raises(DataError, match=r"a\.dta: column q14 not found"):
        fz.clean_financing(path, expected_respondents=None)
    raw = synthetic_fz_frame(seed=4, n=20)
    raw.loc[3, "userid"] = raw.loc[2, "userid"]
    with pytest.raises(DataError, match=r"userid \d+ repeats"):
        fz.clean_financing(write_fz_dta(raw, tmp_path / "c.dta"), expected_respondents=None)


def test_codes_outside_the_codebook_become_missing_and_are_reported(tmp_path, caplog):
    """As the reference: the raw code stays, its derived columns are missing; a warning per
    column counts them. `sce_financing_strict_codes` refuses the file instead."""
    raw = synthetic_fz_frame(seed=4, n=20)
    raw.loc[[5, 7], "hh_income"] = 12
    raw.loc[9, "male"] = 2
    raw.loc[11, "q16_6"] = 3
    path = write_fz_dta(raw, tmp_path / "b.dta")
    clean, _ = fz.clean_financing(write_fz_dta(synthetic_fz_frame(seed=4, n=20),
                                               tmp_path / "clean.dta"), expected_respondents=None)
    with caplog.at_level("WARNING", logger="hhx.surveys.sce.financing"):
        frame, _ = fz.clean_financing(path, expected_respondents=None)
    assert frame.loc[[5, 7], "hh_income"].tolist() == [12, 12]  # the raw column keeps the code
    assert frame.loc[[5, 7], "income_band"].isna().all() and frame.loc[9, "sex"] is pd.NA
    assert frame.loc[11, "liquid_savings_usd"] == raw.loc[11, "liquid_savings"] * 1000
    others = frame.index.difference([5, 7, 9])
    pd.testing.assert_series_equal(frame.loc[others, "income_band"],
                                   clean.loc[others, "income_band"])
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 3 and all("\n" not in w for w in warnings)
    assert any("column hh_income holds 2 value(s) outside the Fuster-Zafar codebook" in w
               and "income_band set missing for 2 respondent(s)" in w for w in warnings)
    assert any("column male holds 1 value(s)" in w and "sex set missing for 1" in w
               for w in warnings)
    assert any("column q16_6 holds 1 value(s)" in w and "read as not 1" in w for w in warnings)

    full = synthetic_fz_frame(seed=4)  # a build needs the release's 1,211 respondents
    full.loc[5, "hh_income"] = 12
    path = write_fz_dta(full, tmp_path / "full.dta")
    survey = SurveyConfig(name="sce_financing", raw={"sce_financing": "full.dta"},
                          improvements=["sce_financing_strict_codes"])
    # without the improvement the build goes through and its report carries the counts
    report = fz.build(SurveyConfig(name="sce_financing", raw={"sce_financing": "full.dta"}),
                      tmp_path, tmp_path / "kept")
    assert report.counts == {"hh_income.outside_codebook": 1, "hh_income.set_missing": 1}
    assert "codes_outside_codebook" not in pd.read_parquet(
        tmp_path / "kept" / "house_sce_financing.parquet").attrs
    with pytest.raises(DataError) as err:
        fz.build(survey, tmp_path, tmp_path / "out")
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    assert "column hh_income holds code 12, not one of [1, 2," in message
    assert not (tmp_path / "out" / "house_sce_financing.parquet").exists()
    survey.improvements = ["strict"]
    with pytest.raises(ConfigError, match=r"unknown improvements \['strict'\]; the SCE financing "
                                          r"builder knows sce_financing_strict_codes"):
        fz.build(survey, tmp_path, tmp_path / "out")


# The reference builder's derived columns, in its order (scripts/1_preprocessing/sce_financing.py).
DERIVED = [
    "source_sequence_complete", "calculator_formula_version", "calculator_term_months",
    "calculator_deductible_interest_share", "calculator_tax_rate",
    "calculator_nonmortgage_annual_rate", "calculator_nonmortgage_value_basis", "target_unit",
    "source_file_sha256", "initial_rate", "alternative_rate", "rate_assignment", "initial_wtp",
    "initial_down_payment", "initial_effective_monthly_payment",
    "monthly_principal_interest_per_100k_initial_rate",
    "monthly_principal_interest_per_100k_alternative_rate", "calculator_rounding_convention",
    "calculator_nonmortgage_component_scope", "calculator_nonmortgage_component_disaggregation",
    "wtp_flexible_original_rate", "down_payment_flexible_original_rate",
    "wtp_flexible_alternative_rate", "down_payment_flexible_alternative_rate",
    "wtp_after_cash_inheritance", "down_payment_after_cash_inheritance", "owner", "renter",
    "comparable_home_value", "current_home_value", "housing_debt", "liquid_savings_usd",
    "income_band", "credit_score_band", "liquid_savings_band", "non_housing_debt_band", "tenure",
    "sex", "education", "married", "numeracy_score", "willingness_to_take_risks",
    "probability_move_three_years", "property_good_investment", "cash_inheritance",
    "scenario_order", "weight",
    *[f"calculator_{kind}_q{k}" for k in range(1, 5)
      for kind in ("reproduced", "difference", "valid_inputs")],
]  # fmt: skip


def test_columns_are_the_raw_ones_then_the_reference_derived_ones_in_order(built):
    frame, _, raw, report = built
    assert list(frame.columns) == [*raw.columns, *DERIVED]
    assert {f"qtime_hypo_q{k}" for k in range(1, 5)} <= set(raw.columns)
    import hashlib

    path = next(iter(report.inputs))
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    assert (frame["source_file_sha256"] == digest).all()
    assert (frame["calculator_term_months"] == 360).all()
    assert (frame["calculator_formula_version"] == "fz_questionnaire_released_code_v1").all()
    v1 = frame["hypoversion"] == 1
    assert (frame.loc[v1, "rate_assignment"] == "4.5_percent_first").all()
    assert (frame.loc[frame["hypoversion"] == 2, "rate_assignment"] == "6.5_percent_first").all()
    assert frame.loc[frame["hypoversion"].isna(), "rate_assignment"].isna().all()
    assert (frame.loc[v1, "monthly_principal_interest_per_100k_initial_rate"] == 507).all()
    assert (frame.loc[v1, "monthly_principal_interest_per_100k_alternative_rate"] == 632).all()
    assert (frame["owner"] == (raw["q4"] == 1)).all()
    assert (frame["renter"] == (raw["q4"] == 0)).all()
    assert frame["owner"].dtype == bool and frame["numeracy_score"].dtype == "Int64"
    assert (frame["scenario_order"] == "initial_fixed_20pct; flexible_original_rate; "
            "flexible_alternative_rate; inheritance").all()
    valid = frame["calculator_valid_inputs_q2"]
    assert (frame.loc[valid, "calculator_difference_q2"] == 0).all()
    complete = raw[["hypo_q1", "hypo_q2", "hypo_q3", "hypo_q4", "hypo_d2", "hypo_d3",
                    "hypo_d4"]].notna().all(axis=1)
    assert (frame["source_sequence_complete"] == complete).all()


def test_the_reference_requires_the_question_timings(tmp_path):
    raw = synthetic_fz_frame(seed=5, n=20)
    path = write_fz_dta(raw.drop(columns=["qtime_hypo_q3"]), tmp_path / "t.dta")
    with pytest.raises(DataError, match=r"t\.dta: column qtime_hypo_q3 not found"):
        fz.clean_financing(path, expected_respondents=None)


def test_enabling_an_improvement_makes_the_build_stale(tmp_path):
    """The build stamp records enabled improvements (absent when none, so older stamps hold)."""
    from hhx.surveys.freshness import Fingerprints
    from hhx.tasks.sources import _survey_state

    fps = Fingerprints(tmp_path / "fps.json")
    plain = SurveyConfig(name="sce_financing", builder="hhx.surveys.sce.financing",
                         raw={"sce_financing": "x.dta"})
    strict = SurveyConfig(name="sce_financing", builder="hhx.surveys.sce.financing",
                          raw={"sce_financing": "x.dta"},
                          improvements=["sce_financing_strict_codes"])
    state = _survey_state(plain, tmp_path, tmp_path, fps)
    assert "improvements" not in state
    assert _survey_state(strict, tmp_path, tmp_path, fps) == {
        **state, "improvements": ["sce_financing_strict_codes"]}
