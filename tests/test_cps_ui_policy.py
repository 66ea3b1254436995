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
from hhx.surveys import cps_ui_policy
from hhx.surveys.synthetic.cps_ui_policy import synthetic_ui_policy_frame, write_ui_policy_dta

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
    assert list(out[["fips", "year", "month"]].itertuples(index=False)) == sorted(
        out[["fips", "year", "month"]].itertuples(index=False)
    )


def test_missing_file_names_path_and_source(tmp_path):
    with pytest.raises(DataError, match=r"eui\.dta: UI policy file .* not found.*P2015_1088"):
        cps_ui_policy.read_ui_policy(tmp_path / "eui.dta")
    with pytest.raises(ConfigError, match="raw.ui_policy is not set"):
        cps_ui_policy.build(SurveyConfig(name="cps_ui_policy", raw={}), tmp_path, tmp_path)


def test_absent_column_and_wrong_label_are_named(raw, tmp_path):
    with pytest.raises(DataError, match=r"column 'ext_wks' not found"):
        _read(raw.drop(columns=["ext_wks"]), tmp_path)
    path = tmp_path / "relabelled.dta"
    labels = {**cps_ui_policy.VARIABLE_LABELS, "ui_weeks": "weeks of something"}
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
    with pytest.raises(DataError, match=r"column ui_weeks is missing in row 8"):
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
