"""Michigan Surveys of Consumers builder: seeded archive CSV -> mich.parquet, and its errors.

Expected values come from the generator's own truth (true links, clean values it drew before
writing missing codes) or from the raw CSV read with the csv module, never from the builder.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys import mich
from hhx.surveys.synthetic.mich import COLUMNS, synthetic_mich_frames, write_synthetic_mich

SEED, START, END, PER_MONTH = 7, "2023-01", "2026-02", 25


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    path = tmp_path_factory.mktemp("raw") / "micro" / "mich" / "mich.csv"
    write_synthetic_mich(path, seed=SEED, start=START, end=END, per_month=PER_MONTH)
    _, truth = synthetic_mich_frames(seed=SEED, start=START, end=END, per_month=PER_MONTH)
    return path, truth


@pytest.fixture(scope="module")
def built(generated, tmp_path_factory) -> tuple[pd.DataFrame, pd.DataFrame, mich.BuildReport]:
    path, _ = generated
    raw_dir = path.parents[2]
    survey = SurveyConfig(name="mich", raw={"mich": "micro/mich/mich.csv"})
    report = mich.build(survey, raw_dir, tmp_path_factory.mktemp("out"))
    frame = pd.read_parquet(report.outputs["mich"])
    audit = pd.read_parquet(report.outputs["mich_missing_rule_application"])
    return frame, audit, report


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _write(path: Path, rows: list[dict[str, str]], columns: list[str]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_round_trip_keeps_every_interview_and_column(generated, built):
    path, truth = generated
    frame, _, report = built
    rows = _csv_rows(path)
    assert report.rows["mich"] == len(rows) == len(frame)
    assert report.synthetic is True
    assert report.inputs and next(iter(report.inputs)).endswith("mich.csv")
    assert set(COLUMNS) <= set(frame.columns)
    assert frame["CASEID"].is_unique
    assert frame["CASEID"].tolist() == [int(r["CASEID"]) for r in rows]
    # untouched columns come back as written
    for column in ("ICS", "WT", "AGE", "INCOME"):
        expected = [float(r[column]) if r[column] else math.nan for r in rows]
        np.testing.assert_array_equal(frame[column].to_numpy(), np.array(expected))


def test_missing_rules_recover_the_generators_clean_values(generated, built):
    path, truth = generated
    frame, audit, _ = built
    for column in ("PAGO", "BAGO", "GOVT", "DUR", "HOM", "CAR", "SHOM", "BUS12", "PEXP",
                   "INEXQ1", "INEXQ2", "PX1", "PX5", "NUMKID", "NUMADT"):  # fmt: skip
        np.testing.assert_array_equal(
            frame[column].to_numpy(), truth[column].to_numpy(dtype="float64"), err_msg=column
        )
    assert frame["PX1"].isna().any() and frame["NUMKID"].isna().any()  # the rules did fire
    rows = _csv_rows(path)
    dk_pago = sum(1 for r in rows if r["PAGO"] and float(r["PAGO"]) >= 8)
    got = audit.loc[(audit["variable"] == "PAGO") & (audit["operator"] == ">="), "rows"]
    assert got.tolist() == [dk_pago] and dk_pago > 0
    minus97 = sum(1 for r in rows if r["PX5"] == "-97")
    got = audit.loc[(audit["variable"] == "PX5") & (audit["operator"] == "=="), "rows"]
    assert got.tolist() == [minus97]


def test_panel_links_match_the_generators_panels(generated, built):
    path, truth = generated
    frame, _, _ = built
    assert (
        frame["prev_caseid"].astype("Float64").equals(truth["true_prev_caseid"].astype("Float64"))
    )
    assert frame["panel_id"].tolist() == truth["true_panel_id"].tolist()
    assert frame["panel_wave"].tolist() == truth["true_panel_wave"].tolist()
    assert frame["panel_link_expected"].astype(bool).tolist() == truth["link_expected"].tolist()
    ok = frame["panel_link_ok"] == 1
    assert ok.sum() == truth["true_prev_caseid"].notna().sum() > 0
    # some first rows point at interviews before the file starts: expected but not linked
    assert ((frame["panel_link_expected"] == 1) & ~ok).any()
    assert set(frame.loc[frame["panel_wave"] > 1, "panel_wave"]) == {2, 3}
    assert (frame["panel_chain_cycle_flag"] == 0).all()
    rows = _csv_rows(path)
    for r, got in zip(rows, frame["months_since_prev"], strict=True):
        if r["DATEPR"]:
            now, prev = int(r["YYYYMM"]), int(r["DATEPR"])
            assert got == (now // 100 - prev // 100) * 12 + now % 100 - prev % 100
        else:
            assert got is pd.NA


def test_labels_and_derived_columns(built):
    frame, _, _ = built
    pairs = {  # codebook facts (spec: SEX Male/Female; REGION West/North Central/Northeast/South)
        ("SEX", 1): "Male", ("SEX", 2): "Female", ("REGION", 1): "West",
        ("REGION", 2): "North Central", ("REGION", 3): "Northeast", ("REGION", 4): "South",
        ("PAGO", 1): "Better now", ("BAGO", 3): "About the same", ("GOVT", 5): "Poor job",
        ("DUR", 3): "Pro-con", ("EDUC", 3): "Grade 0-12 w/ hs diploma", ("INEXQ1", 5): "Lower",
    }  # fmt: skip
    for (column, code), label in pairs.items():
        labels = frame.loc[frame[column] == code, f"{column}_label"]
        assert len(labels) > 0 and (labels == label).all(), (column, code)
    assert frame.loc[frame["PAGO"].isna(), "PAGO_label"].isna().all()
    assert (frame["survey_date"].dt.strftime("%Y%m").astype(int) == frame["YYYYMM"]).all()
    assert (frame["quarter"] == (frame["month"] - 1) // 3 + 1).all()
    big = frame["PX1"].abs() > 25
    assert big.any() and (frame["PX1_outlier_abs_gt25"] == big.astype("int8")).all()
    assert (frame["INCOME_topcoded"] == (frame["INCOME"] >= 500_000)).all()
    assert frame["INCOME_topcoded"].sum() > 0


def test_methodology_regime_boundaries():
    months = pd.Series([199309, 199310, 201206, 201207, 201412, 201501, 202403, 202404, 202406,
                        202407, 202602])  # fmt: skip
    assert mich.methodology_regime(months).tolist() == [
        "landline_rdd_waksberg", "landline_rdd_list_assisted", "landline_rdd_list_assisted",
        "dual_frame_cell_plus_landline", "dual_frame_cell_plus_landline", "cell_phone_rdd_only",
        "cell_phone_rdd_only", "transition_phone_web", "transition_phone_web", "web_abs_only",
        "web_abs_only",
    ]  # fmt: skip


def test_same_seed_same_bytes(generated, tmp_path):
    path, _ = generated
    again = write_synthetic_mich(
        tmp_path / "mich.csv", seed=SEED, start=START, end=END, per_month=PER_MONTH
    )
    assert again.read_bytes() == path.read_bytes()


def test_linking_cycle_is_flagged_not_followed(generated, tmp_path):
    path, _ = generated
    rows = _csv_rows(path)
    pointed_at = {(r["DATEPR"], r["IDPREV"]) for r in rows}
    fresh = [r for r in rows if not r["DATEPR"] and (r["YYYYMM"], r["ID"]) not in pointed_at]
    a, b, c = fresh[0], fresh[-1], fresh[-2]
    a["DATEPR"], a["IDPREV"] = b["YYYYMM"], b["ID"]
    b["DATEPR"], b["IDPREV"] = a["YYYYMM"], a["ID"]
    c["DATEPR"], c["IDPREV"] = a["YYYYMM"], a["ID"]  # leads into the cycle
    frame, _ = mich.clean_mich(_write(tmp_path / "mich.csv", rows, COLUMNS))
    flagged = frame.loc[frame["panel_chain_cycle_flag"] == 1, "CASEID"]
    assert sorted(flagged) == sorted(int(r["CASEID"]) for r in (a, b, c))
    assert frame.loc[frame["panel_chain_cycle_flag"] == 1, "panel_id"].isna().all()


def test_missing_file_names_path_and_source(tmp_path):
    survey = SurveyConfig(name="mich", raw={"mich": "micro/mich/mich.csv"})
    with pytest.raises(DataError, match=r"micro/mich/mich\.csv.*data\.sca\.isr\.umich\.edu"):
        mich.build(survey, tmp_path, tmp_path)
    with pytest.raises(ConfigError, match="raw.mich is not set"):
        mich.build(SurveyConfig(name="mich", raw={}), tmp_path, tmp_path)


def test_absent_column_is_named(generated, tmp_path):
    rows = _csv_rows(generated[0])
    columns = [c for c in COLUMNS if c != "DATEPR"]
    with pytest.raises(DataError, match=r"mich\.csv: column DATEPR not found"):
        mich.read_mich_csv(_write(tmp_path / "mich.csv", rows, columns))


def test_code_outside_codebook_names_column_and_code(generated, tmp_path):
    rows = _csv_rows(generated[0])
    rows[3]["REGION"] = "7"
    with pytest.raises(DataError, match=r"column REGION holds code 7, which is not in"):
        mich.clean_mich(_write(tmp_path / "mich.csv", rows, COLUMNS))


def test_bad_values_and_duplicate_keys_are_errors(generated, tmp_path):
    rows = _csv_rows(generated[0])
    target = tmp_path / "mich.csv"
    junk = [dict(r) for r in rows]
    junk[5]["PX1"] = "DK"
    with pytest.raises(DataError, match=r"column PX1 holds non-numeric value 'DK' \(data row 6\)"):
        mich.read_mich_csv(_write(target, junk, COLUMNS))
    with pytest.raises(DataError, match=r"CASEID \d+ repeats"):
        mich.read_mich_csv(_write(target, rows + [rows[0]], COLUMNS))
    twin = dict(rows[1], CASEID=str(10**7), YYYYMM=rows[0]["YYYYMM"], ID=rows[0]["ID"])
    with pytest.raises(DataError, match=r"\(YYYYMM, ID\) = .* repeats"):
        mich.clean_mich(_write(target, rows + [twin], COLUMNS))
