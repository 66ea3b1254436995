"""Census (IPUMS USA 1990/2000 1%): seeded Stata extract round trip, codebook rules, errors.

Expected values come from the raw frame the generator wrote and its VALUE_LABELS codebook,
written out here from the IPUMS USA codebook rules, not from the reader.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys import census
from hhx.surveys.synthetic.census import (
    VALUE_LABELS,
    synthetic_census_frame,
    write_census_gz,
)

SEED = 11
# NIU/missing codes of the IPUMS USA codebook for the variables the generator fills.
NA_CODES = {
    "inctot": {9999999}, "incwage": {999999, 999998}, "incss": {99999}, "incbus": {999999},
    "incfarm": {999999}, "incinvst": {999999}, "incretir": {999999}, "occ": {0},
    "ind": {0}, "poverty": {0}, "empstat": {0}, "migrate5": {0, 9}, "migplac5": {0, 999},
    "sex": {9}, "hispan": {9}, "hispand": {900}, "educ": {99}, "educd": {1, 999}, "valueh": {9999999},
    "migmetro5": {0}, "migcity5": {0},
}  # fmt: skip


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    return synthetic_census_frame(seed=SEED, n_households=150)


@pytest.fixture(scope="module")
def built(raw, tmp_path_factory) -> pd.DataFrame:
    folder = tmp_path_factory.mktemp("census")
    path = write_census_gz(raw, folder / "micro" / "census" / "census.gz")
    survey = SurveyConfig(name="census", raw={"census": "micro/census/census.gz"}, chunk_rows=97)
    report = census.build(survey, folder, folder / "out")
    frame = pd.read_parquet(report.outputs["census_decennial"])
    assert report.rows["census_decennial"] == len(frame) == len(raw)
    assert str(path) in report.inputs
    return frame


def _build(path: Path, out: Path, **raw_extra: str) -> pd.DataFrame:
    survey = SurveyConfig(name="census", raw={"census": str(path), **raw_extra}, chunk_rows=500)
    return pd.read_parquet(
        census.build(survey, Path("/nonexistent"), out).outputs["census_decennial"]
    )


def test_file_is_gzip_stata_with_lower_case_ipums_names_and_labels(raw, tmp_path):
    path = write_census_gz(raw, tmp_path / "census.gz")
    with gzip.open(path, "rb") as fh:
        assert fh.read(11) == b"<stata_dta>"  # Stata 117+ container inside the gzip
    dta = tmp_path / "census.dta"
    dta.write_bytes(gzip.decompress(path.read_bytes()))
    with pd.read_stata(dta, iterator=True) as reader:
        assert reader.value_labels()["migrate5"][3] == "Moved between states"
        assert "serial" in reader.variable_labels()


def test_round_trip_keeps_keys_codes_and_order(raw, built):
    kept = [c for c in census.KEEP_COLUMNS]
    assert list(built.columns[: len(kept)]) == kept
    assert not built.duplicated(census.KEY_COLUMNS).any()
    assert set(built["SAMPLE"]) == {199002, 200007}
    assert (built["YEAR"] == built["SAMPLE"].map({199002: 1990, 200007: 2000})).all()
    for column in ["SERIAL", "PERNUM", "AGE", "STATEFIP", "RACE", "INCBUS", "ROOMS"]:
        expected = raw[column.lower()].astype("int64")
        na = expected.isin(NA_CODES.get(column.lower(), set()))
        got = built[column]
        assert got[~na].astype("int64").tolist() == expected[~na].tolist(), column
        assert got[na].isna().all(), column
    assert built["CPI99"].tolist() == raw["cpi99"].tolist()
    # extra variables of the extract are not kept
    assert "CBSERIAL" not in built.columns and "BPL" not in built.columns


def test_niu_codes_become_na_from_labels_and_manual_table(raw, built):
    for column, codes in NA_CODES.items():
        na = raw[column].isin(codes).to_numpy()
        assert built[column.upper()].isna().to_numpy().tolist() == na.tolist(), column
    assert raw["inctot"].eq(9999999).any() and raw["occ"].eq(0).any()
    # EDUC 0 "N/A or no schooling" is an answer (no schooling), not NIU.
    zero = raw["educ"].eq(0).to_numpy()
    assert zero.any() and (built.loc[zero, "EDUC"] == 0).all()
    assert (built.loc[zero, "EDUC_label"] == "N/A or no schooling").all()


def test_label_columns_carry_the_codebook_text(raw, built):
    for column in census.LABEL_COLUMNS:
        codes = raw[column.lower()]
        expected = codes.map(VALUE_LABELS[column.lower()])
        na = codes.isin(NA_CODES.get(column.lower(), set()))
        got = built[f"{column}_label"]
        assert got[~na].fillna("<NA>").tolist() == expected[~na].tolist(), column
        assert got[na].isna().all(), column
    movers = raw["migrate5"].eq(3).to_numpy()
    assert (built.loc[movers, "MIGPLAC5_label"] != built.loc[movers, "STATEFIP_label"]).all()


def test_real99_topcode_flags_and_missing_burden(raw, built):
    inctot = raw["inctot"].where(raw["inctot"] != 9999999)
    expected = (inctot * raw["cpi99"]).to_numpy()
    got = built["INCTOT_REAL99"].astype("float64").to_numpy()
    assert np.allclose(got, expected, equal_nan=True)
    is90 = raw["sample"].eq(199002)
    flag = (is90 & inctot.gt(400000)) | (~is90 & inctot.ge(999998))
    have = inctot.notna()
    assert built.loc[have.to_numpy(), "INCTOT_TOPCODE_KNOWN"].tolist() == flag[have].tolist()
    assert flag.any() and built["INCTOT_TOPCODE_KNOWN"][~have.to_numpy()].isna().all()
    wage_flag = built["INCWAGE_TOPCODE_KNOWN"].fillna(False)
    assert wage_flag.any()  # the generator caps wages at the published top codes
    burden = sum(raw[c.lower()].isin(NA_CODES.get(c.lower(), set())) for c in census.CORE_COLUMNS)
    assert built["CORE_MISSING_BURDEN"].tolist() == burden.tolist()


def test_structural_availability_blanks_a_sample(raw, built, tmp_path):
    assert built.loc[built["SAMPLE"] == 200007, "CNTYGP98"].isna().all()
    assert built.loc[built["SAMPLE"] == 199002, "CNTYGP98"].notna().all()
    path = write_census_gz(raw, tmp_path / "census.gz")
    table = tmp_path / "census_availability.csv"
    table.write_text("variable,199002,200007\nWORKEDYR,False,True\nPUMA,True,True\n")
    frame = _build(path, tmp_path / "out", availability=str(table))
    assert frame.loc[frame["SAMPLE"] == 199002, "WORKEDYR"].isna().all()
    assert frame.loc[frame["SAMPLE"] == 200007, "WORKEDYR"].notna().any()
    table.write_text("variable,199002,200007\nWORKEDYR,maybe,True\n")
    with pytest.raises(DataError, match=r"availability 'maybe' of WORKEDYR for 199002"):
        _build(path, tmp_path / "out", availability=str(table))


def test_missing_file_names_path_and_ipums(tmp_path):
    with pytest.raises(
        DataError, match=r"census\.gz: IPUMS USA census extract not found.*usa\.ipums"
    ):
        _build(tmp_path / "census.gz", tmp_path / "out")
    with pytest.raises(ConfigError, match="raw.census is not set"):
        census.build(SurveyConfig(name="census", raw={}), tmp_path, tmp_path)


def test_absent_column_is_named(raw, tmp_path):
    path = write_census_gz(raw.drop(columns=["migrate5"]), tmp_path / "census.gz")
    with pytest.raises(DataError, match=r"census\.gz: column MIGRATE5 not found"):
        _build(path, tmp_path / "out")
    assert not (tmp_path / "out" / "census_decennial.parquet").exists()


def test_code_outside_the_codebook_is_named(raw, tmp_path):
    bad = raw.copy()
    bad.loc[5, "migrate5"] = 7  # no value label 7 in MIGRATE5
    path = write_census_gz(bad, tmp_path / "census.gz")
    with pytest.raises(DataError, match=r"column MIGRATE5 has code 7 outside the codebook"):
        _build(path, tmp_path / "out")
    bad = raw.copy()
    bad.loc[3, "sample"] = 199001
    path = write_census_gz(bad, tmp_path / "census.gz")
    with pytest.raises(DataError, match=r"column SAMPLE has code 199001 outside the codebook"):
        _build(path, tmp_path / "out")


def test_repeated_person_and_bad_gzip_are_errors(raw, tmp_path):
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


def test_niu_label_rule():
    assert census.is_niu_label("N/A") and census.is_niu_label("Missing/blank")
    assert census.is_niu_label("Not Reported") and census.is_niu_label("NIU (not in universe)")
    assert not census.is_niu_label("N/A or no schooling")
    assert not census.is_niu_label("Not Hispanic") and not census.is_niu_label("No, not in school")


def test_generator_codebook_agrees_with_a_real_ipums_usa_ddi():
    """The real IPUMS USA DDI of the ipumspy sdist (usa_00172.xml) lists SAMPLE, GQ and SEX."""
    import xml.etree.ElementTree as ET

    ddi = Path(__file__).resolve().parent / "fixtures" / "ipumspy" / "usa_00172.xml"
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
    from hhx.surveys.synthetic import census as gen

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
    from hhx.surveys.synthetic.census import write_synthetic_census_ddi

    data, ddi = write_synthetic_census_ddi(tmp_path / "raw" / "census.dat.gz", seed=SEED,
                                           n_households=150)
    survey = SurveyConfig(name="census", raw={"census": "census.dat.gz"}, chunk_rows=97)
    report = census.build(survey, tmp_path / "raw", tmp_path / "out")
    got = pd.read_parquet(report.outputs["census_decennial"])
    pd.testing.assert_frame_equal(got, built)
    assert set(report.inputs) == {str(data), str(ddi)} and report.synthetic
    ddi.unlink()
    with pytest.raises(DataError, match=r"census\.xml: the DDI codebook of census\.dat\.gz"):
        census.build(survey, tmp_path / "raw", tmp_path / "out2")


def test_real_ipums_usa_fixed_width_extract_is_read_through_its_ddi(tmp_path):
    """The real IPUMS USA extract of the ipumspy sdist (usa_00172: 2012 ACS, 10 variables,
    33,057 persons) opens through the DDI path: its categories become value labels, and the
    build stops at the first of the 64 kept variables the extract lacks, naming it."""
    from hhx.surveys.ipums_cps import read_ddi_codebook

    folder = Path(__file__).resolve().parent / "fixtures" / "ipumspy"
    data = folder / "usa_00172.dat.gz"
    if not data.is_file():
        pytest.skip("tests/fixtures/ipumspy/usa_00172.dat.gz is absent (ipumspy 0.9.0 sdist)")
    names, labels = census._ddi_labels(read_ddi_codebook(folder / "usa_00172.xml"))
    assert names == ["YEAR", "SAMPLE", "SERIAL", "CBSERIAL", "HHWT", "GQ", "PERNUM", "PERWT",
                     "SEX", "AGE"]
    assert labels["SEX"] == {1: "Male", 2: "Female"} and labels["AGE"][0] == "Less than 1 year old"
    assert labels["SAMPLE"][199002] == VALUE_LABELS["sample"][199002]
    survey = SurveyConfig(name="census", raw={"census": str(data)})
    with pytest.raises(DataError, match=r"usa_00172\.dat\.gz: column NUMPREC not found \(54 of "
                                        r"the 64 kept variables missing\)"):
        census.build(survey, folder, tmp_path / "out")
    assert not (tmp_path / "out" / "census_decennial.parquet").exists()
