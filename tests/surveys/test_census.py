"""Census (IPUMS USA 1990/2000 1%): seeded Stata extract round trip, the reference's rules,
errors.

Expected values come from the raw frame the generator wrote, its VALUE_LABELS codebook and the
reference's rules written out here (its missing-code and availability tables, its NIU label
phrases, its top codes), not from the reader.
"""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.census import decennial as census
from hhx.surveys.synthetic.census.decennial import (
    VALUE_LABELS,
    synthetic_census_frame,
    write_census_gz,
)
from hhx.surveys.synthetic.macro.release_dates import write_synthetic_crosswalk

SEED = 11
# NA codes the reference's rules give the generator's variables: its missing-codes table
# (EDUC 0 "N/A or no schooling", MIGPLAC5 0/999, ...), value labels with an NIU phrase anywhere
# (MIGMETRO5 4 "... status unknown"), its manual codes. HISPAN 9 "Not Reported" stays.
NA_CODES = {
    "inctot": {9999999}, "incwage": {999999, 999998}, "incss": {99999}, "incbus": {999999},
    "incfarm": {999999}, "incinvst": {999999}, "incretir": {999999}, "occ": {0},
    "ind": {0}, "poverty": {0}, "empstat": {0}, "migrate5": {0, 9}, "migplac5": {0, 999},
    "sex": {9}, "educ": {0, 99}, "educd": {1, 999}, "valueh": {9999999}, "ownershp": {0},
    "migmetro5": {0, 4}, "migcity5": {0, 1}, "school": {0, 8, 9}, "labforce": {0},
    "classwkr": {0}, "workedyr": {0}, "wkswork2": {0}, "rentgrs": {0},
}  # fmt: skip
AVAILABLE = {"PUMA": 199002, "PUMASUPR": 200007, "GRADEATT": 200007, "INCBUS": 199002,
             "INCFARM": 199002}


def _crosswalk(folder: Path) -> Path:
    return write_synthetic_crosswalk(folder / "release_census.csv", "census", seed=1)


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    return synthetic_census_frame(seed=SEED, n_households=150)


@pytest.fixture(scope="module")
def built(raw, tmp_path_factory) -> pd.DataFrame:
    folder = tmp_path_factory.mktemp("census")
    path = write_census_gz(raw, folder / "micro" / "census" / "census.gz")
    _crosswalk(folder / "release_dates")
    survey = SurveyConfig(name="census", raw={"census": "micro/census/census.gz",
                                              "release_dates": "release_dates/release_census.csv"},
                          chunk_rows=97)
    report = census.build(survey, folder, folder / "out")
    frame = pd.read_parquet(report.outputs["census_decennial"])
    assert report.rows["census_decennial"] == len(frame) == len(raw)
    assert str(path) in report.inputs
    return frame


def _build(path: Path, out: Path, **raw_extra: str) -> pd.DataFrame:
    cross = _crosswalk(out.parent / "xwalk")
    survey = SurveyConfig(name="census", raw={"census": str(path), "release_dates": str(cross),
                                              **raw_extra}, chunk_rows=500)
    return pd.read_parquet(
        census.build(survey, Path("/nonexistent"), out).outputs["census_decennial"]
    )


def test_file_is_gzip_stata_with_ipums_names_and_label_sets(raw, tmp_path):
    path = write_census_gz(raw, tmp_path / "census.gz")
    with gzip.open(path, "rb") as fh:
        assert fh.read(11) == b"<stata_dta>"  # Stata 117+ container inside the gzip
    dta = tmp_path / "census.dta"
    dta.write_bytes(gzip.decompress(path.read_bytes()))
    with pd.read_stata(dta, iterator=True) as reader:
        # label sets named by the upper-case variable, as the reference looks them up
        assert reader.value_labels()["MIGRATE5"][3] == "Moved between states"
        assert "migrate5" not in reader.value_labels()
        assert "serial" in reader.variable_labels()


def test_columns_are_the_reference_output(built):
    assert list(built.columns) == census.OUTPUT_COLUMNS and len(built.columns) == 110
    assert built["CNTYGP97"].isna().all() and built["CNTYGP98"].isna().all()
    assert (built["STRUCTURAL_MISSING_COUNT"] == 5).all()
    assert (built["FORM_1970"] == 0).all() and (built["WEIGHT_REGIME"] == 1).all()
    assert (built["MULTIRACE_ERA"] == (built["YEAR"] == 2000).astype(int)).all()
    assert built["release_date"].notna().all() and built["release_date_source"].notna().all()


def test_round_trip_keeps_keys_codes_and_order(raw, built):
    assert not built.duplicated(census.KEY_COLUMNS).any()
    assert (built["YEAR"] == built["SAMPLE"].map({199002: 1990, 200007: 2000})).all()
    for column in ["SERIAL", "PERNUM", "AGE", "STATEFIP", "RACE", "ROOMS", "HISPAN"]:
        expected = raw[column.lower()].astype("int64")
        na = expected.isin(NA_CODES.get(column.lower(), set())).to_numpy()
        got = built[column]
        assert got[~na].astype("int64").tolist() == expected[~na].tolist(), column
        assert got[na].isna().all(), column
    assert built["CPI99"].tolist() == raw["cpi99"].tolist()
    assert "CBSERIAL" not in built.columns and "BPL" not in built.columns


def test_niu_codes_follow_the_reference_rules(raw, built):
    for column, codes in NA_CODES.items():
        na = raw[column].isin(codes).to_numpy()
        if column.upper() in AVAILABLE:
            na = na | raw["sample"].ne(AVAILABLE[column.upper()]).to_numpy()
        assert built[column.upper()].isna().to_numpy().tolist() == na.tolist(), column
    assert raw["migmetro5"].eq(4).any() and raw["educ"].eq(0).any()
    assert census.is_niu_label("Central/principal city status unknown")
    assert census.is_niu_label("N/A or no schooling") and not census.is_niu_label("Not Reported")
    assert not census.is_niu_label("Not Hispanic") and census.is_niu_label("Missing/blank")


def test_availability_blanks_what_a_sample_lacks(raw, built):
    for column, only in AVAILABLE.items():
        assert built.loc[built["SAMPLE"] != only, column].isna().all(), column
    assert built.loc[built["SAMPLE"] == 199002, "PUMA"].notna().all()


def test_label_columns_carry_the_codebook_text(raw, built):
    for column in census.LABEL_COLUMNS:
        codes = raw[column.lower()]
        expected = codes.map(VALUE_LABELS[column.lower()])
        na = codes.isin(NA_CODES.get(column.lower(), set())).to_numpy()
        got = built[f"{column}_label"].astype(object)
        assert got[~na].tolist() == expected[~na].tolist(), column
        assert got[na].isna().all(), column
    assert "Same house" in built["MIGMETRO5_label"].cat.categories  # the manual label


def test_real99_topcode_flags_and_missing_burden(raw, built):
    inctot = raw["inctot"].where(raw["inctot"] != 9999999)
    assert np.allclose(built["INCTOT_REAL99"], inctot * raw["cpi99"], equal_nan=True)
    is90 = raw["sample"].eq(199002)
    flag = (is90 & inctot.gt(400000)) | (~is90 & inctot.ge(999998))
    have = inctot.notna().to_numpy()
    assert built.loc[have, "INCTOT_TOPCODE_KNOWN"].tolist() == flag[have].astype(int).tolist()
    assert flag.any() and built["INCTOT_TOPCODE_KNOWN"][~have].isna().all()
    # INCWAGE flags values *above* the top code: the generator's capped wages equal it
    assert raw["incwage"].isin([140000, 175000]).any()
    assert (built["INCWAGE_TOPCODE_KNOWN"].dropna() == 0).all()
    assert built.loc[built["YEAR"] == 2000, "INCBUS_TOPCODE_KNOWN"].isna().all()  # no rule
    core = [c.lower() for c in census.CORE_COLUMNS]
    share = sum(raw[c].isin(NA_CODES.get(c, set())) for c in core) / 8
    assert np.allclose(built["CORE_MISSING_BURDEN"], share.astype("float32"))
    assert built["CORE_MISSING_BURDEN"].dtype == "float32"


def test_missing_file_names_path_and_ipums(tmp_path):
    with pytest.raises(
        DataError, match=r"census\.gz: IPUMS USA census extract not found.*usa\.ipums"
    ):
        _build(tmp_path / "census.gz", tmp_path / "out")
    with pytest.raises(ConfigError, match="raw.census is not set"):
        census.build(SurveyConfig(name="census", raw={}), tmp_path, tmp_path)


def test_absent_column_and_ipums_naming_are_required(raw, tmp_path):
    path = write_census_gz(raw.drop(columns=["migrate5"]), tmp_path / "census.gz")
    with pytest.raises(DataError, match=r"census\.gz: column MIGRATE5 not found"):
        _build(path, tmp_path / "out")
    assert not (tmp_path / "out" / "census_decennial.parquet").exists()
    buf = io.BytesIO()  # pandas names label sets after the column: lower case
    raw.to_stata(buf, write_index=False, version=118,
                 value_labels={k: v for k, v in VALUE_LABELS.items() if k in raw.columns})
    path.write_bytes(gzip.compress(buf.getvalue()))
    with pytest.raises(DataError, match=r"column SEX has no value labels \(the label set must "
                                        r"be named SEX\)"):
        _build(path, tmp_path / "out")


def test_code_outside_the_codebook_and_other_samples(raw, tmp_path):
    bad = raw.copy()
    bad.loc[5, "migrate5"] = 7  # no value label 7 in MIGRATE5
    path = write_census_gz(bad, tmp_path / "census.gz")
    with pytest.raises(DataError, match=r"column MIGRATE5 has code 7 without a value label"):
        _build(path, tmp_path / "out")
    other = raw.copy()
    other.loc[:9, "sample"] = 198001  # rows of another sample are skipped, as the reference
    frame = _build(write_census_gz(other, tmp_path / "census.gz"), tmp_path / "out")
    assert len(frame) == len(raw) - 10


def test_repeated_person_bad_gzip_and_cut_stata_are_errors(raw, tmp_path):
    dup = pd.concat([raw, raw.iloc[[10]]], ignore_index=True)
    path = write_census_gz(dup, tmp_path / "census.gz")
    row = raw.iloc[10]
    expected = f"= {tuple(int(row[c]) for c in ('year', 'sample', 'serial', 'pernum'))} repeats"
    with pytest.raises(DataError, match=re.escape(expected)):
        _build(path, tmp_path / "out")
    assert not (tmp_path / "out" / "census_decennial.parquet").exists()
    (tmp_path / "plain.gz").write_bytes(b"not gzip")
    with pytest.raises(DataError, match=r"plain\.gz: not a readable gzip file"):
        _build(tmp_path / "plain.gz", tmp_path / "out")
    dta = gzip.decompress(write_census_gz(raw, tmp_path / "whole.gz").read_bytes())
    cut = tmp_path / "cut.gz"
    cut.write_bytes(gzip.compress(dta[: len(dta) // 2]))
    with pytest.raises(DataError, match=r"cut\.gz: the Stata file inside ends early") as err:
        _build(cut, tmp_path / "out")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out" / "census_decennial.parquet").exists()


def test_crosswalk_needs_both_samples_and_the_reference_fields(raw, tmp_path):
    path = write_census_gz(raw, tmp_path / "census.gz")
    cross = _crosswalk(tmp_path / "x")
    table = pd.read_csv(cross, dtype=str)
    table.iloc[:1].to_csv(cross, index=False)
    survey = SurveyConfig(name="census", raw={"census": str(path), "release_dates": str(cross)})
    with pytest.raises(DataError, match=r"must list exactly \(1990, 199002\) and"):
        census.build(survey, tmp_path, tmp_path / "out")
    table.drop(columns=["source_url"]).to_csv(cross, index=False)
    with pytest.raises(DataError, match=r"column source_url missing"):
        census.build(survey, tmp_path, tmp_path / "out")


def test_generator_codebook_agrees_with_a_real_ipums_usa_ddi():
    """The real IPUMS USA DDI of the ipumspy sdist (usa_00172.xml) lists SAMPLE, GQ and SEX."""
    import xml.etree.ElementTree as ET

    ddi = Path(__file__).resolve().parents[1] / "fixtures" / "ipumspy" / "usa_00172.xml"
    if not ddi.is_file():
        pytest.skip("tests/fixtures/ipumspy/usa_00172.xml is absent (ipumspy 0.9.0 sdist)")
    root = ET.parse(ddi).getroot()
    ns = {"d": root.tag.split("}")[0][1:]}
    real: dict[str, dict[int, str]] = {}
    for var in root.iter(f"{{{ns['d']}}}var"):
        real[var.get("ID")] = {
            int(c.find("d:catValu", ns).text): c.find("d:labl", ns).text
            for c in var.findall("d:catgry", ns)
        }
    for code in (199002, 200007):
        assert VALUE_LABELS["sample"][code] == real["SAMPLE"][code]
    for name in ("GQ", "SEX"):
        for code, label in real[name].items():
            assert VALUE_LABELS[name.lower()][code] == label, (name, code)


def test_generator_writes_large_extracts_piece_by_piece(tmp_path, monkeypatch):
    """The generator writes pieces into one Stata file (bounded memory at any size); the
    result reads back exactly as the whole frame written by pandas in one go."""
    from hhx.surveys.synthetic.census import decennial as gen

    monkeypatch.setattr(gen, "CHUNK_HOUSEHOLDS", 40)  # 150 households -> 4 pieces per sample
    pieces = list(gen.census_chunks(seed=SEED, n_households=150))
    assert len(pieces) == 8
    whole = pd.concat(pieces, ignore_index=True)
    assert not whole.duplicated(["sample", "serial", "pernum"]).any()  # serials continue
    chunked = gen.write_census_gz(iter(pieces), tmp_path / "chunked.gz")
    single = gen.write_census_gz(whole, tmp_path / "single.gz")
    read = {}
    for name, path in (("chunked", chunked), ("single", single)):
        dta = tmp_path / f"{name}.dta"
        dta.write_bytes(gzip.decompress(path.read_bytes()))
        with pd.io.stata.StataReader(dta) as reader:
            read[name] = (reader.read(convert_categoricals=False), reader.value_labels(),
                          reader.variable_labels())
    pd.testing.assert_frame_equal(read["chunked"][0], read["single"][0])
    pd.testing.assert_frame_equal(read["chunked"][0], whole, check_dtype=False)
    assert read["chunked"][1:] == read["single"][1:]


def test_fixed_width_ddi_form_builds_the_same_table(built, tmp_path):
    """IPUMS's other delivery, `.dat.gz` + DDI `.xml`, of the same synthetic extract builds
    exactly the table the Stata form builds (labels from the DDI categories)."""
    from hhx.surveys.synthetic.census.decennial import write_synthetic_census_ddi

    data, ddi = write_synthetic_census_ddi(tmp_path / "raw" / "census.dat.gz", seed=SEED,
                                           n_households=150)
    cross = _crosswalk(tmp_path / "raw")
    survey = SurveyConfig(name="census", raw={"census": "census.dat.gz",
                                              "release_dates": "release_census.csv"},
                          chunk_rows=97)
    report = census.build(survey, tmp_path / "raw", tmp_path / "out")
    got = pd.read_parquet(report.outputs["census_decennial"])
    pd.testing.assert_frame_equal(got, built)
    assert set(report.inputs) == {str(data), str(ddi), str(cross)} and report.synthetic
    ddi.unlink()
    with pytest.raises(DataError, match=r"census\.xml: the DDI codebook of census\.dat\.gz"):
        census.build(survey, tmp_path / "raw", tmp_path / "out2")


def test_real_ipums_usa_fixed_width_extract_is_read_through_its_ddi(tmp_path):
    """The real IPUMS USA extract of the ipumspy sdist (usa_00172: 2012 ACS, 10 variables,
    33,057 persons) opens through the DDI path: its categories become value labels, and the
    build stops at the first of the 64 kept variables the extract lacks, naming it."""
    from hhx.surveys.cps.ipums import read_ddi_codebook

    folder = Path(__file__).resolve().parents[1] / "fixtures" / "ipumspy"
    data = folder / "usa_00172.dat.gz"
    if not data.is_file():
        pytest.skip("tests/fixtures/ipumspy/usa_00172.dat.gz is absent (ipumspy 0.9.0 sdist)")
    ddi = read_ddi_codebook(folder / "usa_00172.xml")
    names = [d.name for d in ddi.data_description]
    labels = {d.name: {code: label for label, code in d.codes.items()}
              for d in ddi.data_description if d.codes}
    assert names == ["YEAR", "SAMPLE", "SERIAL", "CBSERIAL", "HHWT", "GQ", "PERNUM", "PERWT",
                     "SEX", "AGE"]
    assert labels["SEX"] == {1: "Male", 2: "Female"} and labels["AGE"][0] == "Less than 1 year old"
    assert labels["SAMPLE"][199002] == VALUE_LABELS["sample"][199002]
    cross = _crosswalk(tmp_path / "x")
    survey = SurveyConfig(name="census", raw={"census": str(data), "release_dates": str(cross)})
    with pytest.raises(DataError, match=r"usa_00172\.dat\.gz: column NUMPREC not found \(52 of "
                                        r"the kept variables missing\)"):
        census.build(survey, folder, tmp_path / "out")
    assert not (tmp_path / "out" / "census_decennial.parquet").exists()
