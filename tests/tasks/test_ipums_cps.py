"""IPUMS CPS reader: chunked streaming, typing, NIU/labels, errors, release dates, and the real
IPUMS fixed-width fixtures of the ipumspy source distribution (fetched by
tests/fixtures/fetch_ipums_fixtures.sh; those tests skip when absent)."""

from __future__ import annotations

import gzip
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.cps.ipums import (
    EXTRACT_COLUMNS,
    build,
    iter_csv_chunks,
    iter_extract,
    read_normalized,
)
from hhx.surveys.cps.labels import LABEL_SPECS, STATE_NAMES
from hhx.surveys.macro.release_dates import cps_release_dates, proxy_release_date
from hhx.surveys.synthetic.cps.ipums import write_synthetic_cps
from hhx.tasks.cps.common import TWELVE_MONTHS, link_months

FIXTURES = Path(
    os.environ.get("HHX_IPUMS_FIXTURES", Path(__file__).parents[1] / "fixtures" / "ipumspy")
)


def survey(**raw: str) -> SurveyConfig:
    return SurveyConfig(
        name="cps",
        raw=raw or {"cps_basic": "cps_basic.csv.gz"},
        source_url="https://cps.ipums.org",
        chunk_rows=1000,
    )


@pytest.fixture(scope="module")
def extract(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cps") / "cps_basic.csv.gz"
    return write_synthetic_cps(path, seed=7, n_households=300, start="2019-01", end="2020-06")


@pytest.fixture(scope="module")
def raw(extract: Path) -> pd.DataFrame:
    """The same file read by plain pandas: the independent reference."""
    return pd.read_csv(extract, dtype={"HRSAMPLE": str}, dtype_backend="numpy_nullable")


def write_variant(raw: pd.DataFrame, path: Path, **changes) -> Path:
    df = raw.copy()
    for col, value in changes.items():
        if value is None:
            df = df.drop(columns=col)
        else:
            df[col] = df[col].astype(object)
            df.loc[df.index[:3], col] = value
    with gzip.open(path, "wt") as fh:
        df.to_csv(fh, index=False)
    return path


# --------------------------------------------------------------------------------------------
# CSV path


def test_chunked_reading_equals_whole_file(extract: Path) -> None:
    small = read_normalized(extract, chunk_rows=613)
    whole = read_normalized(extract, chunk_rows=10**7)
    assert len(small) > 2000
    pd.testing.assert_frame_equal(small, whole)


def test_build_streams_to_parquet_with_types_niu_labels_and_release(
    extract: Path, raw: pd.DataFrame, tmp_path: Path
) -> None:
    report = build(survey(), extract.parent, tmp_path)
    out = pd.read_parquet(report.outputs["cps_basic"])
    assert report.rows["cps_basic"] == len(raw) == len(out)
    assert report.synthetic  # the generator's sidecar is detected
    assert list(out.columns[: len(EXTRACT_COLUMNS)]) == list(EXTRACT_COLUMNS)
    assert str(out["EMPSTAT"].dtype) == "Int32" and str(out["CPSIDP"].dtype) == "Int64"
    assert str(out["WTFINL"].dtype) == "Float64"
    # file order kept
    assert (out["CPSIDP"].to_numpy() == raw["CPSIDP"].to_numpy()).all()
    # NIU codes of the reference table -> NA, other values unchanged
    for col, niu in (("EMPSTAT", 0), ("CLASSWKR", 0)):
        was_niu = (raw[col] == niu).to_numpy()
        assert was_niu.any() and out[col][was_niu].isna().all()
        assert (out[col][~was_niu].to_numpy() == raw[col][~was_niu].to_numpy()).all()
    # labels follow the IPUMS codes
    assert (out.loc[raw["SEX"] == 2, "sex"] == "woman").all()
    assert (out.loc[raw["STATEFIP"] == 6, "state"] == "California").all()
    assert (
        out.loc[raw["EMPSTAT"].isin([21, 22]), "empstat"].astype(str).str.startswith("unemployed")
    ).all()
    assert (out.loc[raw["WKSTAT"] == 50, "wkstat"] == "unemployed, seeking full-time work").all()
    # each row carries its own month's release date (proxy rule, checked by hand below)
    march19 = (raw["YEAR"] == 2019) & (raw["MONTH"] == 3)
    assert (out.loc[march19, "release_date"] == "2019-04-22").all()
    assert set(out["covid_period"].unique()) == {0, 1}
    assert (out.loc[raw["YEAR"] == 2020, "covid_period"] == 1).all()


def test_intermediate_is_the_reference_s_by_default_and_hhx_codes_are_opt_in(
    extract: Path, raw: pd.DataFrame, tmp_path: Path
) -> None:
    official = pd.read_parquet(build(survey(), extract.parent, tmp_path / "a").outputs["cps_basic"])
    cfg = survey()
    cfg.improvements = ["cps_extra_missing_codes", "cps_raw_dws_columns"]
    hhx = pd.read_parquet(build(cfg, extract.parent, tmp_path / "b").outputs["cps_basic"])
    # the reference's missing-code table lacks these four IPUMS NIU codes: kept by default
    for col, niu in (("DURUNEMP", 999), ("AHRSWORKT", 999), ("EARNWEEK", 9999.99),
                     ("HOURWAGE", 999.99)):
        was = np.isclose(raw[col].to_numpy(dtype=float), niu)
        assert was.any() and (official[col][was] == niu).all()
        assert hhx[col][was].isna().all()
        assert (hhx[col][~was].to_numpy() == official[col][~was].to_numpy()).all()
    # the reference writes the harmonised DWS values into the raw columns too
    for col in ("DWWEEKC", "DWWEEKL", "DWYEARS", "DWJOBSINCE", "DWWKSUN"):
        special = raw[col].to_numpy(dtype=float) >= {"DWYEARS": 99.96, "DWJOBSINCE": 95,
                                                     "DWWKSUN": 996}.get(col, 9999.96)
        assert special.any() and (~special).any()
        assert official[col][special].isna().all()
        assert official[col].equals(official[col.lower()])
        assert np.allclose(official[col][~special].astype(float), raw[col][~special])
        assert np.allclose(hhx[col].astype(float), raw[col])  # raw codes kept on request
        assert hhx[col.lower()].equals(official[col.lower()])


def test_an_unknown_improvement_is_a_config_error(extract: Path, tmp_path: Path) -> None:
    from hhx.errors import ConfigError

    cfg = survey()
    cfg.improvements = ["cps_extra_missing_code"]
    with pytest.raises(ConfigError, match="cps_extra_missing_codes"):
        build(cfg, extract.parent, tmp_path)


def test_build_is_atomic_and_chunk_size_independent(extract: Path, tmp_path: Path) -> None:
    a = build(survey(), extract.parent, tmp_path / "a")
    cfg = survey()
    cfg.chunk_rows = 10**7
    b = build(cfg, extract.parent, tmp_path / "b")
    pd.testing.assert_frame_equal(
        pd.read_parquet(a.outputs["cps_basic"]), pd.read_parquet(b.outputs["cps_basic"])
    )
    # no temporary files left; the generated extract's label follows the output
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [
        "cps_basic.parquet", "cps_basic.parquet.synthetic.json"]
    assert a.synthetic


def test_fingerprint_is_the_reference_rule(extract: Path, tmp_path: Path) -> None:
    import hashlib

    report = build(survey(), extract.parent, tmp_path)
    with gzip.open(extract, "rb") as fh:
        expected = hashlib.sha256(fh.read()).hexdigest()
    assert report.inputs == {str(extract): expected}


def test_missing_required_column_is_named(raw: pd.DataFrame, tmp_path: Path) -> None:
    write_variant(raw, tmp_path / "cps_basic.csv.gz", EMPSTAT=None)
    with pytest.raises(DataError, match=r"cps_basic\.csv\.gz.*EMPSTAT"):
        build(survey(), tmp_path, tmp_path / "out")
    assert not (tmp_path / "out" / "cps_basic.parquet").exists()


def test_missing_file_names_path_and_source(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        build(survey(), tmp_path, tmp_path / "out")
    message = str(err.value)
    assert str(tmp_path / "cps_basic.csv.gz") in message and "https://cps.ipums.org" in message
    assert "\n" not in message


def test_unmapped_code_names_column_and_code(raw: pd.DataFrame, tmp_path: Path) -> None:
    write_variant(raw, tmp_path / "cps_basic.csv.gz", SEX=7)
    with pytest.raises(DataError, match=r"SEX.*\[7\]"):
        build(survey(), tmp_path, tmp_path / "out")


def test_integral_decimals_are_read_but_fractions_rejected(
    raw: pd.DataFrame, tmp_path: Path
) -> None:
    ok = write_variant(raw, tmp_path / "ok.csv.gz", EMPSTAT="10.0")  # as other tools re-save
    assert pd.concat(iter_csv_chunks(ok, 1000))["EMPSTAT"].iloc[:3].tolist() == [10, 10, 10]
    bad = write_variant(raw, tmp_path / "bad.csv.gz", EMPSTAT=10.5)
    with pytest.raises(DataError, match=r"column EMPSTAT has non-integer value 10\.5"):
        list(iter_csv_chunks(bad, 1000))


# --------------------------------------------------------------------------------------------
# Release dates


def test_proxy_release_dates_by_hand() -> None:
    # week (Sun-Sat) containing the 19th; its Saturday + 30 days
    assert proxy_release_date(2026, 1) == "2026-02-23"  # Mon 19 Jan -> Sat 24 Jan
    assert proxy_release_date(2019, 3) == "2019-04-22"  # Tue 19 Mar -> Sat 23 Mar
    assert proxy_release_date(2020, 9) == "2020-10-19"  # Sat 19 Sep is itself the Saturday
    assert proxy_release_date(2025, 12) == "2026-01-19"  # Fri 19 Dec -> Sat 20 Dec


def test_crosswalk_release_dates(tmp_path: Path) -> None:
    cw = tmp_path / "release_cps.csv"
    cw.write_text(
        "partition,year,month,release_date,source,source_url,comments\n"
        "basic,2020,1,2020-02-20,Official release date,https://www.census.gov/data/what-is-data-census-gov/latest-releases/2020.html,c\n"
        "asec,2020,1,2021-01-01,x,u,c\n"
        "basic,2020,2,2020-03-19,Official release date,https://www.census.gov/data/what-is-data-census-gov/latest-releases/2020.html,c\n"
    )
    got = cps_release_dates(pd.Series([2020, 2020, 2020]), pd.Series([2, 1, 2]), cw)
    assert got.tolist() == ["2020-03-19", "2020-02-20", "2020-03-19"]
    with pytest.raises(DataError, match="2020-03"):
        cps_release_dates(pd.Series([2020]), pd.Series([3]), cw)


# --------------------------------------------------------------------------------------------
# Real IPUMS fixed-width extracts (ipumspy sdist fixtures)


def fixture(name: str) -> Path:
    path = FIXTURES / name
    if not path.is_file():
        pytest.skip(f"{path} absent: run tests/fixtures/fetch_ipums_fixtures.sh")
    return path


def ipumspy_readers():
    readers = pytest.importorskip("ipumspy.readers")
    warnings.simplefilter("ignore")
    return readers


def test_fixed_width_equals_its_csv_twin() -> None:
    """cps_00006 (ASEC 1962-63) is shipped as .dat.gz + DDI and as .csv.gz: same frames."""
    dat, csv = fixture("cps_00006.dat.gz"), fixture("cps_00006.csv.gz")
    fixture("cps_00006.xml")
    a = pd.concat(iter_extract(dat, 1000), ignore_index=True)
    b = pd.concat(iter_csv_chunks(csv, 1000), ignore_index=True)
    assert len(a) == 7668
    pd.testing.assert_frame_equal(a, b)


def test_rectangular_fixed_width_matches_ipumspy() -> None:
    readers = ipumspy_readers()
    ddi_path, dat = fixture("cps_00361.xml"), fixture("cps_00361.dat.gz")
    ref = readers.read_microdata(readers.read_ipums_ddi(ddi_path), dat)
    mine = pd.concat(iter_extract(dat, 500), ignore_index=True)
    assert list(mine.columns) == list(ref.columns) and len(mine) == len(ref)
    for col in ref.columns:
        if pd.api.types.is_float_dtype(ref[col]):
            np.testing.assert_allclose(mine[col].to_numpy(float), ref[col].to_numpy(float))
        else:
            assert (
                mine[col].astype(str).to_numpy() == ref[col].astype(str).str.strip().to_numpy()
            ).all(), col


@pytest.mark.slow
def test_hierarchical_persons_carry_their_household_record() -> None:
    """cps_00421 (Basic Monthly Jan 2022 + Jan 2023, H and P records), read in chunks that
    split households, equals ipumspy's whole-file reader joined on (YEAR, SERIAL)."""
    readers = ipumspy_readers()
    ddi_path, dat = fixture("cps_00421.xml"), fixture("cps_00421.dat.gz")
    tables = readers.read_hierarchical_microdata(readers.read_ipums_ddi(ddi_path), dat)
    house = tables["H"].drop(columns="RECTYPE").astype({"YEAR": int, "SERIAL": int})
    person = tables["P"].drop(columns="RECTYPE").astype({"YEAR": int, "SERIAL": int})
    ref = person.merge(house, on=["YEAR", "SERIAL"], how="left", validate="many_to_one")
    mine = pd.concat(iter_extract(dat, 7777), ignore_index=True)
    assert len(mine) == len(ref) == 201_993
    for col in ("MONTH", "MISH", "STATEFIP", "CPSID", "CPSIDP", "AGE", "SEX", "RACE", "PERNUM"):
        assert (mine[col].to_numpy(dtype=np.int64) == ref[col].to_numpy(dtype=np.int64)).all(), col
    np.testing.assert_allclose(mine["HWTFINL"].to_numpy(float), ref["HWTFINL"].to_numpy(float))


def test_labels_cover_the_codebook_codes() -> None:
    """Every non-missing code the real codebook lists for SEX/RACE/STATEFIP has a label, and
    state labels equal IPUMS's own names."""
    readers = ipumspy_readers()
    ddi = readers.read_ipums_ddi(fixture("cps_00421.xml"))
    codes = {d.name: d.codes for d in ddi.data_description}
    specs = {s.source: s for s in LABEL_SPECS}
    assert {label: code for label, code in codes["STATEFIP"].items()} == {
        name: code for code, name in STATE_NAMES.items()
    }
    for var in ("SEX", "RACE"):
        spec = specs[var]
        for label, code in codes[var].items():
            if label in ("NIU", "Blank"):
                continue
            covered = code in spec.exact or any(lo <= code <= hi for lo, hi, _ in spec.ranges)
            assert covered, (var, code, label)


def test_real_twelve_month_links() -> None:
    """Persons in rotation months 1-4 in January 2022 are found in January 2023 at MISH + 4,
    with their sex unchanged and one year older (or top-coded / birthday timing)."""
    df = read_normalized(fixture("cps_00421.dat.gz"), ddi_path=fixture("cps_00421.xml"))
    df["EMPSTAT"] = 10  # this extract has no EMPSTAT; link_months only needs it present
    linked = link_months(df, 12, TWELVE_MONTHS, target_columns=("MISH", "SEX", "AGE"))
    base = (df["YEAR"] == 2022) & df["MISH"].between(1, 4) & linked["_key_ok"]
    ok = base & linked["_linked"]
    assert ok.sum() > 0.6 * base.sum()  # the published CPS 12-month match rate is ~70-80%
    assert (linked.loc[ok, "MISH_t"] == linked.loc[ok, "MISH"] + 4).all()
    assert (linked.loc[ok, "SEX_t"] == linked.loc[ok, "SEX"]).mean() > 0.98
    assert (linked.loc[ok, "AGE_t"] - linked.loc[ok, "AGE"]).between(0, 2).mean() > 0.97
    assert not ((df["YEAR"] == 2023) & linked["_linked"]).any()  # nothing after the last month


def test_build_from_a_ddi_extract(tmp_path: Path) -> None:
    dat, ddi = fixture("cps_00361.dat.gz"), fixture("cps_00361.xml")
    cfg = SurveyConfig(
        name="cps", raw={"cps_basic": dat.name, "cps_ddi": ddi.name}, chunk_rows=1000
    )
    with pytest.raises(DataError, match=r"cps_00361\.xml: required column"):
        build(cfg, dat.parent, tmp_path)
    report = build(cfg, dat.parent, tmp_path, required=("YEAR", "MONTH", "CPSIDP"))
    out = pd.read_parquet(report.outputs["cps_basic"])
    assert len(out) == 2740 and set(out["state"].astype(str)) == {"Minnesota"}
    assert set(report.inputs) == {str(dat), str(ddi)} and not report.synthetic


def test_reading_selected_rows_equals_reading_all(extract: Path, tmp_path: Path) -> None:
    """Task builders read the kept records of the intermediate row group by row group
    (hhx.tasks.context.read_parquet_rows); the result equals reading everything and
    selecting, categorical columns of different chunks included."""
    from hhx.tasks.context import read_parquet_rows

    cfg = survey()
    cfg.chunk_rows = 997  # many row groups, each with its own release_date categories
    path = Path(build(cfg, extract.parent, tmp_path).outputs["cps_basic"])
    columns = ["YEAR", "MONTH", "CPSIDP", "release_date", "empstat", "AGE"]
    full = pd.read_parquet(path, columns=columns)
    rng = np.random.default_rng(0)
    for rows in (np.sort(rng.choice(len(full), 777, replace=False)), np.arange(len(full)),
                 np.array([0, len(full) - 1]), np.array([], dtype=np.int64)):
        got = read_parquet_rows(path, columns, rows)
        expected = full.iloc[rows]
        pd.testing.assert_frame_equal(
            got.astype({"release_date": str}), expected.astype({"release_date": str}))
        assert isinstance(got["release_date"].dtype, pd.CategoricalDtype)
    with pytest.raises(ValueError, match="ascending"):
        read_parquet_rows(path, columns, np.array([5, 3]))
    with pytest.raises(ValueError, match="beyond"):
        read_parquet_rows(path, columns, np.array([len(full)]))


def test_streamed_parquet_writes_row_groups_and_names_a_chunk_that_does_not_fit(tmp_path):
    """The builders' shared streaming writer (hhx.io.write_parquet_chunks)."""
    import pyarrow.parquet as pq

    from hhx.io import write_parquet_chunks

    frames = [pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}), pd.DataFrame({"a": [3], "b": ["z"]})]
    assert write_parquet_chunks(tmp_path / "ok.parquet", iter(frames), "src") == 3
    assert pq.ParquetFile(tmp_path / "ok.parquet").num_row_groups == 2
    assert write_parquet_chunks(tmp_path / "none.parquet", iter([]), "src") == 0
    assert not (tmp_path / "none.parquet").exists()
    bad = [frames[0], pd.DataFrame({"a": ["not a number"], "b": ["z"]})]
    with pytest.raises(DataError, match=r"src \(rows 3-3\): column types differ"):
        write_parquet_chunks(tmp_path / "bad.parquet", iter(bad), "src")
