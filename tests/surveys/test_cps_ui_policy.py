"""UI policy durations: seeded `eui_state_08-14.dta` round trip, label check and grid errors.

Expected values come from the frame the generator wrote, not from the reader.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.cps import ui_policy as cps_ui_policy
from hhx.surveys.synthetic.cps.ui_policy import synthetic_ui_policy_frame, write_ui_policy_dta

RAW = "micro/cps/ui_duration_farber_2015/P2015_1088_data/eui_state_08-14.dta"


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    return synthetic_ui_policy_frame(seed=5)


def _read(frame: pd.DataFrame, folder: Path) -> pd.DataFrame:
    return cps_ui_policy.read_ui_policy(write_ui_policy_dta(frame, folder / "eui.dta"))


def test_round_trip_through_build(raw, tmp_path):
    write_ui_policy_dta(raw.sample(frac=1.0, random_state=0), tmp_path / RAW)  # rows shuffled
    survey = SurveyConfig(name="cps_ui_policy", raw={"ui_policy": RAW})
    report = cps_ui_policy.build(survey, tmp_path, tmp_path / "out")
    out = pd.read_parquet(report.outputs["cps_ui_policy"])
    assert report.rows["cps_ui_policy"] == len(out) == 8976
    assert out["fips"].nunique() == 51 and 11 in set(out["fips"])
    merged = out.merge(raw, on=["fips", "year", "month"], validate="one_to_one")
    assert len(merged) == 8976
    assert (merged["regular_ui_weeks"] == merged["reg_UI"]).all()
    assert (merged["maximum_ui_weeks"] == merged["ui_weeks"]).all()
    assert (merged["source_active_extension_weeks"] == merged["ext_wks"]).all()
    assert np.allclose(merged["extension_ui_weeks"], merged["ui_weeks"] - merged["reg_UI"])
    assert (out["policy_effective_date"].str[:7] == out["year"].astype(str) + "-"
            + out["month"].astype(str).str.zfill(2)).all()  # fmt: skip
    assert out["policy_effective_date"].str.endswith("-05").all()
    # in a lapse month the source total is kept although no extension was active
    lapse = merged[(merged["year"] == 2010) & (merged["month"] == 6)]
    assert (lapse["ext_wks"] == 0).all() and (lapse["extension_ui_weeks"] > 0).all()
    # the reference's layout: its column order, rows by year, month, fips
    assert list(out.columns) == [
        "fips", "year", "month", "policy_effective_date", "regular_ui_weeks",
        "extension_ui_weeks", "maximum_ui_weeks", "source_active_extension_weeks",
    ]  # fmt: skip
    assert list(out[["year", "month", "fips"]].itertuples(index=False)) == sorted(
        out[["year", "month", "fips"]].itertuples(index=False)
    )
    assert str(out["fips"].dtype) == "int64" and str(out["maximum_ui_weeks"].dtype) == "float64"


def test_missing_file_names_path_and_source(tmp_path):
    with pytest.raises(DataError, match=r"eui\.dta: UI policy file .* not found.*P2015_1088"):
        cps_ui_policy.read_ui_policy(tmp_path / "eui.dta")
    with pytest.raises(ConfigError, match="raw.ui_policy is not set"):
        cps_ui_policy.build(SurveyConfig(name="cps_ui_policy", raw={}), tmp_path, tmp_path)


def test_absent_column_and_wrong_label_are_named(raw, tmp_path):
    with pytest.raises(DataError, match=r"column 'ext_wks' not found"):
        _read(raw.drop(columns=["ext_wks"]), tmp_path)
    path = tmp_path / "relabelled.dta"
    labels = {**OFFICIAL_LABELS, "ui_weeks": "weeks of something"}
    raw.to_stata(path, write_index=False, version=118, variable_labels=labels)
    with pytest.raises(DataError, match=r"variable label of ui_weeks is 'weeks of something'"):
        cps_ui_policy.read_ui_policy(path)


def test_bad_codes_and_values_are_named(raw, tmp_path):
    bad = raw.copy()
    bad.loc[0, "fips"] = 72  # Puerto Rico is not one of the 51
    with pytest.raises(DataError, match=r"column fips has code 72"):
        _read(bad, tmp_path)
    bad = raw.copy()
    bad.loc[10, "reg_UI"] = bad.loc[10, "ui_weeks"] + 1
    with pytest.raises(DataError, match=r"extension_ui_weeks is -1\.0 < 0 for fips"):
        _read(bad, tmp_path)
    bad = raw.copy()
    bad.loc[7, "ui_weeks"] = np.nan
    with pytest.raises(DataError, match=r"column ui_weeks is missing or not numeric in row 8"):
        _read(bad, tmp_path)


def test_grid_must_be_complete_and_exact(raw, tmp_path):
    with pytest.raises(DataError, match=r"fips \d+ \d{4}-\d\d repeats"):
        _read(pd.concat([raw, raw.iloc[[3]]], ignore_index=True), tmp_path)
    with pytest.raises(DataError, match=r"fips 1 has 175 months, others 176"):
        _read(raw.drop(index=5), tmp_path)
    with pytest.raises(DataError, match=r"50 states, expected 51 \(missing fips \[11\]\)"):
        _read(raw[raw["fips"] != 11], tmp_path)
    last = (raw["year"] == 2014) & (raw["month"] == 8)
    with pytest.raises(DataError, match=r"8925 state-month rows, expected exactly 8976"):
        _read(raw[~last], tmp_path)


# The reference builder's label check (scripts/1_preprocessing/cps_ui_policy.py EXPECTED_LABELS).
OFFICIAL_LABELS = {
    "fips": "FIPS state code",
    "year": "year of obs.",
    "month": "month of obs.",
    "ext_wks": "total weeks of extended UI (13-73)",
    "reg_UI": "regular UI weeks (<26 for some)",
    "ui_weeks": "Total UI weeks (no suspensions)",
}


def test_generated_file_carries_the_archive_labels(raw, tmp_path):
    path = write_ui_policy_dta(raw, tmp_path / "eui.dta")
    with pd.read_stata(path, iterator=True) as reader:
        assert reader.variable_labels() == OFFICIAL_LABELS


@pytest.mark.parametrize(
    ("column", "label"),
    [("fips", "FIPS state"), ("year", "year"), ("month", "Month of obs."),
     ("reg_UI", "regular UI weeks (<26 for some) ")],
)  # fmt: skip
def test_labels_must_match_exactly(raw, tmp_path, column, label):
    path = tmp_path / "relabelled.dta"
    raw.to_stata(path, write_index=False, version=118,
                 variable_labels={**OFFICIAL_LABELS, column: label})  # fmt: skip
    with pytest.raises(DataError, match=rf"variable label of {column} is "):
        cps_ui_policy.read_ui_policy(path)


def test_source_active_extension_is_not_checked(raw, tmp_path):
    """The reference checks regular, extension and maximum weeks only; ext_wks is audit data."""
    odd = raw.copy()
    odd.loc[0, "ext_wks"] = -1
    out = _read(odd, tmp_path)
    assert (out["source_active_extension_weeks"] < 0).sum() == 1


@pytest.mark.parametrize("damage", ["empty", "no_rows", "cut", "text"])
def test_damaged_files_are_one_line_errors(raw, tmp_path, damage):
    good = write_ui_policy_dta(raw, tmp_path / "good.dta").read_bytes()
    path = tmp_path / "eui_state_08-14.dta"
    if damage == "empty":
        path.write_bytes(b"")
    elif damage == "no_rows":
        raw.iloc[:0].to_stata(path, write_index=False, version=118,
                              variable_labels=OFFICIAL_LABELS)  # fmt: skip
    elif damage == "cut":
        path.write_bytes(good[: len(good) // 2])
    else:
        path.write_text("fips,year,month\n1,2008,1\n")
    survey = SurveyConfig(name="cps_ui_policy", raw={"ui_policy": path.name})
    with pytest.raises(DataError) as info:
        cps_ui_policy.build(survey, tmp_path, tmp_path / "out")
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    assert {"empty": "empty (0 bytes)", "no_rows": "no rows", "cut": "cut short",
            "text": "not a readable Stata file"}[damage] in message  # fmt: skip
    assert not (tmp_path / "out" / "cps_ui_policy.parquet").exists()  # nothing half-written
