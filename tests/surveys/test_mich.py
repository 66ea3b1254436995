"""Michigan Surveys of Consumers builder: seeded archive CSV -> mich.parquet, rules and errors.

Expected values come from the generator's truth (true links, clean values drawn before the
missing codes were written), the raw CSV read with the csv module, or rules written out here
from the reference's mapping tables, never from the builder.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.mich import consumers as mich
from hhx.surveys.synthetic.macro.release_dates import write_synthetic_crosswalk
from hhx.surveys.synthetic.mich.consumers import (
    COLUMNS,
    synthetic_mich_frames,
    write_synthetic_mich,
)

SEED, START, END, PER_MONTH = 7, "2023-06", "2026-02", 25
SURVEY = SurveyConfig(name="mich", raw={"mich": "micro/mich/mich.csv",
                                        "release_dates": "release_dates/release_mich.csv"})


def _raw_dir(root: Path) -> Path:
    write_synthetic_mich(root / "micro/mich/mich.csv", seed=SEED, start=START, end=END,
                         per_month=PER_MONTH)
    write_synthetic_crosswalk(root / "release_dates/release_mich.csv", "mich", seed=SEED)
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = _raw_dir(tmp_path_factory.mktemp("raw"))
    report = mich.build(SURVEY, root, tmp_path_factory.mktemp("out"))
    frame = pd.read_parquet(report.outputs["mich"])
    audit = pd.read_parquet(report.outputs["mich_missing_rule_application"])
    _, truth = synthetic_mich_frames(seed=SEED, start=START, end=END, per_month=PER_MONTH)
    with (root / "micro/mich/mich.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {"root": root, "frame": frame, "audit": audit, "truth": truth, "rows": rows,
            "report": report}


def test_columns_in_the_reference_order(built):
    frame = built["frame"]
    assert list(frame.columns[:118]) == COLUMNS == mich.extract_variables()
    raw = sorted(f"{c}_raw" for c in mich.RAW_SNAPSHOTS)
    assert list(frame.columns[118:130]) == raw
    assert list(frame.columns[130:144]) == [f"{c}_label" for c in mich.LABELLED]
    assert frame.columns[-11:].tolist() == [
        "prev_caseid", "panel_link_expected", "panel_link_ok", "months_since_prev", "panel_id",
        "panel_wave", "panel_chain_cycle_flag", "panel_wave_from_sample",
        "panel_wave_consistent_with_sample", "release_date", "release_date_source"]
    assert len(frame) == len(built["rows"]) and built["report"].synthetic


def test_types_follow_the_text(built):
    frame = built["frame"]
    assert frame["CASEID"].dtype == "Int64" and frame["PAGO"].dtype == "Int64"
    assert frame["WT"].dtype == "Float64"  # decimals in the file
    assert frame["months_since_prev"].dtype == "Float64"
    assert frame["panel_link_ok"].dtype == "Int64" and frame["wt_positive"].dtype == "Int64"


def test_every_missing_rule_of_the_reference_applies(built):
    frame, rows, audit = built["frame"], built["rows"], built["audit"]
    assert len(audit) == 101 and audit["applied"].sum() > 90
    for column, codes in (("UNEMP", {"8", "9"}), ("RATEX", {"8", "9"}), ("PAGO", {"8", "9"}),
                          ("PX1", {"-97", "96", "98", "99"}), ("BUS5", {"98", "99"}),
                          ("NUMKID", {"6", "7"})):
        raw = pd.Series([r[column] for r in rows])
        hit = raw.isin(codes).to_numpy()
        assert hit.any(), column
        assert frame[column][hit].isna().all() and frame[column][~hit & (raw != "")].notna().all()
        assert frame[f"{column}_raw"][hit].notna().all() if column in mich.RAW_SNAPSHOTS else True
    unemp = audit[(audit["target_variable"] == "UNEMP")].iloc[0]
    raw = pd.Series([r["UNEMP"] for r in rows])
    assert unemp["rows_set_missing"] == int(raw.isin({"8", "9"}).sum())


def test_labels_are_the_reference_texts(built):
    frame = built["frame"]
    assert set(frame["MARRY_label"].dropna()) <= {
        "Married/partner (includes spouse absent)", "Divorced (includes separated)", "Widowed",
        "Never married"}
    assert set(frame["SHOM_label"].dropna()) == {"GOOD", "PRO-CON", "BAD"}
    assert list(frame["DUR_label"].cat.categories) == ["Good", "Pro-con", "Bad", "DK", "NA"]
    clean = built["truth"]["PAGO"]
    text = frame["PAGO_label"].astype(object)
    assert (text[clean == 1] == "Better now").all() and text[clean.isna()].isna().all()


def test_panel_links_and_chains_match_the_truth(built):
    frame, truth = built["frame"], built["truth"]
    pd.testing.assert_series_equal(frame["prev_caseid"], truth["true_prev_caseid"],
                                   check_names=False)
    assert (frame["panel_link_expected"] == truth["link_expected"].astype(int)).all()
    linked = truth["true_prev_caseid"].notna().to_numpy()
    # chains whose first interview is in the file have their true root and wave
    rooted = truth["true_panel_wave"].to_numpy() == frame["panel_wave"].to_numpy()
    assert rooted[linked].mean() > 0.7
    first = frame["CASEID"][~linked]
    assert (frame["panel_id"][~linked] == first).all() and (frame["panel_wave"][~linked] == 1).all()
    assert (frame["panel_chain_cycle_flag"] == 0).all()
    gap = frame["months_since_prev"][linked]
    assert gap.isin([6, 7, 8]).all()


def test_loops_resolve_as_the_reference_walks_them():
    root, depth, loop = mich.resolve_chains([1, 2, 3, 4], {1: 2, 2: 1, 4: 3})
    assert root == {1: 1, 2: 2, 3: 3, 4: 3} and depth == {1: 1, 2: 1, 3: 1, 4: 2}
    assert loop == {1: 1, 2: 0, 3: 0, 4: 0}  # only the row whose walk found the loop


def test_derived_flags_and_release_dates(built):
    frame, rows = built["frame"], built["rows"]
    cross = pd.read_csv(built["root"] / "release_dates/release_mich.csv")
    dates = dict(zip(cross["yyyymm"], cross["release_date"], strict=True))
    assert (frame["release_date"] == frame["YYYYMM"].map(dates)).all()
    assert frame["release_date_source"].str.len().gt(0).all()
    ym = frame["YYYYMM"]
    assert (frame.loc[ym <= 202403, "methodology_regime"] == "cell_phone_rdd_only").all()
    assert (frame.loc[ym >= 202407, "mode_effective"] == "web").all()
    bus12 = pd.Series([r["BUS12"] for r in rows])
    assert (frame["BUS12_dk_na"] == bus12.isin({"8", "9"}).astype(int)).all()
    assert (frame.loc[frame["BUS12"] == 2, "BUS12_rep"] == 1).all()
    assert (frame["wt_positive"] == 1).all()


def _rewrite(root: Path, change) -> Path:
    path = root / "micro/mich/mich.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    change(frame)
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("change, pattern", [
    (lambda f: f.drop(columns=["ICS"], inplace=True), r"column ICS not found"),
    (lambda f: f.__setitem__("MARRY", "2"), r"column MARRY holds code 2, which has no label"),
    (lambda f: f.loc.__setitem__((3, "AGE"), "forty"), r"column AGE holds non-numeric value 'forty'"),
    (lambda f: f.loc.__setitem__((1, "CASEID"), f.loc[0, "CASEID"]), r"CASEID \d+ repeats"),
])
def test_damaged_extract_is_one_line_and_writes_nothing(tmp_path, change, pattern):
    root = _raw_dir(tmp_path / "raw")
    path = _rewrite(root, change)
    with pytest.raises(DataError, match=pattern) as err:
        mich.build(SURVEY, root, tmp_path / "out")
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out" / "mich.parquet").exists()


def test_crosswalk_needs_the_reference_fields(tmp_path):
    root = _raw_dir(tmp_path / "raw")
    path = root / "release_dates/release_mich.csv"
    table = pd.read_csv(path, dtype=str)
    table.drop(columns=["comments"]).to_csv(path, index=False)
    with pytest.raises(DataError, match=r"release_mich\.csv: column comments missing"):
        mich.build(SURVEY, root, tmp_path / "out")
    table[table["yyyymm"] != "202401"].to_csv(path, index=False)
    with pytest.raises(DataError, match=r"no release date for survey month\(s\) \[202401\]"):
        mich.build(SURVEY, root, tmp_path / "out")


def test_numbers_are_typed_as_pandas_types_the_text():
    values, junk = mich.numeric_column(pd.Series(["5", " 7 ", "", "NA"], dtype=str))
    assert values.dtype == "Int64" and values.tolist()[:2] == [5, 7] and not junk.any()
    values, _ = mich.numeric_column(pd.Series(["5.0", "2"], dtype=str))
    assert values.dtype == "Float64"
    _, junk = mich.numeric_column(pd.Series(["x", "1"], dtype=str))
    assert junk.tolist() == [True, False]
    assert np.isnan(mich.numeric_column(pd.Series(["", ""], dtype=str))[0].astype(float)).all()
