"""PSID-SHELF builder: Stata stream reader, seeded round trip, enrichment rules, errors.

Expected values come from what the generator drew (`PsidWorld`: the frames it wrote and the raw
family-wave values behind the Complete Main Study variables) with the rules of spec 1.10 written
out here, or from pandas' own Stata reader; never from the builder's output.
"""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.base import has_synthetic_sidecar, input_sha256
from hhx.surveys.psid import shelf as psid
from hhx.surveys.psid.dta import DtaStream, _Source
from hhx.surveys.psid.main_study import (
    DEFAULT_VARIABLE_MAP,
    ENRICHMENT_COLUMNS,
    MAIN_STUDY_MEMBER,
    read_variable_map,
)
from hhx.surveys.synthetic.macro.release_dates import write_synthetic_release_dates
from hhx.surveys.synthetic.psid import shelf as synth

SEED = 7
MAIN_VARS = ("annual_hours", "job_end_reason_employed", "food_at_home")


@pytest.fixture(scope="module")
def small() -> synth.PsidWorld:
    return synth.synthetic_psid(seed=SEED + 1, n_families=8)


def _survey(long_zip: Path, main_zip: Path, chunk_rows: int = 250_000, **extra: str):
    raw = {"shelf_long": str(long_zip), "main_study": str(main_zip), **extra}
    return SurveyConfig(name="psid", raw=raw, chunk_rows=chunk_rows)


def _build(folder: Path, world: synth.PsidWorld, **extra: str):
    long_zip, main_zip = synth.write_psid_archives(
        world, folder / synth.LONG_ZIP, folder / "Data" / synth.MAIN_STUDY_ZIP
    )
    return psid.build(_survey(long_zip, main_zip, **extra), folder, folder / "out")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("psid")
    raw = folder / "raw"
    layout = psid_layout(raw)
    world = synth.write_synthetic_psid(layout["long"], layout["main"], seed=SEED, n_families=40)
    survey = SurveyConfig(
        name="psid",
        raw={"shelf_long": str(layout["long"].relative_to(raw)),
             "main_study": str(layout["main"].relative_to(raw))},
        chunk_rows=700,  # several blocks
    )
    report = psid.build(survey, raw, folder / "inter")
    frame = pd.read_parquet(report.outputs["psid_main"])
    meta = json.loads((folder / "inter" / psid.METADATA_FILE).read_text())
    return frame, report, meta, layout, world


@pytest.fixture(scope="module")
def world(built) -> synth.PsidWorld:
    return built[4]


def psid_layout(raw: Path) -> dict[str, Path]:
    return {
        "long": raw / "micro" / "psid-shelf" / synth.LONG_ZIP,
        "main": raw / "micro" / "psid-shelf" / "Construction_Files" / "Data" / synth.MAIN_STUDY_ZIP,
    }


def _current(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["panel_current"].eq(1).fillna(False).to_numpy()]


def _with_truth(frame: pd.DataFrame, world: synth.PsidWorld) -> pd.DataFrame:
    now = _current(frame)
    out = now.merge(world.families, on=["year", "fuid"], how="left", validate="many_to_one")
    assert out["rp_id"].notna().all()  # every current row belongs to a drawn family-wave
    return out


# ---------------------------------------------------------------------------------------------
# The Stata reader


@pytest.mark.parametrize("version,byteorder", [(117, "<"), (118, ">"), (119, "<")])
def test_dta_stream_matches_pandas(version, byteorder):
    frame = pd.DataFrame({
        "b": np.array([-127, 0, 100, 5], dtype=np.int8),
        "i": np.array([-32767, 1, 32740, 7], dtype=np.int16),
        "l": np.array([-2147483647, 2, 2147483620, 9], dtype=np.int32),
        "f": np.array([1.5, np.nan, -3.25, 1e30], dtype=np.float32),
        "d": [np.nan, 2.0, 1e300, -7.125],
        "s": ["a", "", "héllo" if version != 117 else "hello", "z"],
    })
    buffer = io.BytesIO()
    frame.to_stata(buffer, write_index=False, version=version, byteorder=byteorder,
                   value_labels={"b": {0: "zero", 100: "hundred"}},
                   variable_labels={"d": "a double"}, data_label="test file")
    data = buffer.getvalue()
    expected = pd.read_stata(io.BytesIO(data), convert_categoricals=False)
    stream = DtaStream(_Source(io.BytesIO(data), "t.dta", None))
    assert stream.release == version and stream.nobs == 4 and stream.data_label == "test file"
    assert stream.names == list(frame.columns)
    blocks = list(stream.rows(list(frame.columns), chunk_rows=3))
    assert [len(b["b"]) for b in blocks] == [3, 1]
    labels = stream.finish()
    for column in frame.columns:
        got = np.concatenate([b[column] for b in blocks])
        if column == "s":
            assert got.tolist() == expected[column].tolist()
        else:
            assert np.allclose(got, expected[column].to_numpy(np.float64), equal_nan=True)
    assert labels == {"b": {0: "zero", 100: "hundred"}}
    assert stream.variable_labels[4] == "a double"


def test_shelf_member_reads_as_pandas_reads_it(built):
    """The long member: every value and every value label as pandas' own reader sees them."""
    _, _, _, layout, _ = built
    with zipfile.ZipFile(layout["long"]) as zf:
        data = zf.read(psid.LONG_MEMBER)
    with pd.read_stata(io.BytesIO(data), iterator=True, convert_categoricals=False) as reader:
        expected = reader.read()
        value_labels = reader.value_labels()
    stream = DtaStream(_Source(io.BytesIO(data), "long", None))
    numeric = [c for c in stream.names if stream.kind(c) == "number"]
    blocks = list(stream.rows(numeric, 1000))
    got = {c: np.concatenate([b[c] for b in blocks]) for c in numeric}
    labels = stream.finish()
    for column in numeric:
        assert np.allclose(got[column], expected[column].to_numpy(np.float64), equal_nan=True)
    assert labels == {k: {int(c): t for c, t in v.items()} for k, v in value_labels.items()}


# ---------------------------------------------------------------------------------------------
# Round trip


def test_archives_have_the_release_layout(built):
    _, _, _, layout, _ = built
    for path, member in ((layout["long"], psid.LONG_MEMBER),
                         (layout["main"], MAIN_STUDY_MEMBER)):
        with zipfile.ZipFile(path) as zf:
            assert zf.namelist() == [member]
            assert zf.infolist()[0].compress_type == zipfile.ZIP_DEFLATED
            with zf.open(member) as fh:
                assert fh.read(28) == b"<stata_dta><header><release>"
    assert layout["main"].parent.parts[-2:] == ("Construction_Files", "Data")


def test_round_trip_keeps_shelf_rows_and_values(world, built):
    frame, report, meta, _, _ = built
    shelf = world.shelf
    assert report.rows["psid_main"] == len(frame) == len(shelf) == meta["rows"]
    assert frame["id"].tolist() == shelf["id"].tolist()
    assert frame["year"].tolist() == shelf["year"].tolist()
    kept = list(shelf.columns)  # every SHELF column, in file order, as the reference keeps them
    assert {"demo_birth_year", "hlth_srh", "psidshelf_release", "psidshelf_compile"} <= set(kept)
    order = [*kept, *psid.DERIVED_COLUMNS, *psid.RELEASE_COLUMNS, *ENRICHMENT_COLUMNS]
    assert list(frame.columns) == order
    for column in kept:
        if not pd.api.types.is_numeric_dtype(shelf[column]):
            assert frame[column].tolist() == shelf[column].tolist(), column
            continue
        want = shelf[column].astype("float64").to_numpy()
        got = frame[column].astype("float64").to_numpy()
        assert np.array_equal(got, want, equal_nan=True), column
    assert frame["psidshelf_release"].dtype == "string"
    for column, labels in psid.LABELS.items():  # the reference's dtype: codebook categories
        dtype = frame[f"{column}_label"].dtype
        assert isinstance(dtype, pd.CategoricalDtype), column
        assert list(dtype.categories) == [labels[k] for k in sorted(labels)], column
    assert list(frame["occ_major_harmonized"].dtype.categories) == list(psid.OCC_LABELS)
    assert meta["sources"]["shelf_long"]["release_identifiers"] == {
        "psidshelf_compile": 20250115, "psidshelf_release": "2025-01"}
    assert meta["persons"] == shelf["id"].nunique()
    assert meta["rows_by_wave"] == {str(k): int(v) for k, v in
                                    shelf.groupby("year").size().items()}


def test_subsamples_sample_persons_reference_persons(world, built):
    frame, _, meta, _, _ = built
    shelf = world.shelf
    expected = pd.Series("unknown", index=shelf.index)
    for name, low, high, _, _ in synth.SUBSAMPLES:
        expected[shelf["lineage"].between(low, high)] = name
    assert frame["subsample"].tolist() == expected.tolist()
    # Every synthetic person has a lineage in a subsample's range (married-in spouses take the
    # family's, as in PSID-SHELF); a missing or outside lineage would be "unknown".
    assert set(expected) == {s[0] for s in synth.SUBSAMPLES}
    assert psid.derive_subsample(pd.Series([np.nan, 2931.0, 5001.0])).tolist() == [
        "unknown", "unknown", "seo"]
    assert meta["subsamples"] == expected.value_counts().sort_index().to_dict()
    latino = _current(frame)[lambda f: f["subsample"] == "latino"]["year"]
    assert latino.min() == 1990 and latino.max() == 1995  # Latino sample 1990-1995
    assert frame["sample_person"].tolist() == shelf["sampstat"].ne(0).tolist()
    assert frame["sample_person"].dtype == bool
    assert frame["is_reference_person"].tolist() == shelf["rel"].eq(1).tolist()
    assert (frame["income_year"] == shelf["year"] - 1).all()


def test_labels_and_occupation(world, built):
    frame, _, meta, _, _ = built
    shelf = world.shelf
    for column, labels in synth.SHELF_VALUE_LABELS.items():
        if column not in psid.LABELS:
            continue
        want = shelf[column].map(labels)
        got = frame[f"{column}_label"]
        assert got.isna().tolist() == want.isna().tolist(), column
        assert got.dropna().tolist() == want.dropna().tolist(), column
    assert set(meta["labels"]["file_value_labels"].values()) == {"same"}
    # The generator's own code lists; precedence 2010 codes, then 2000, then 1970 (spec 1.10).
    precedence = ["occ_2010c_1m", "occ_2000c_1m", "occ_1970c"]
    group_of = {scheme: {code: g for g, codes in synth.OCC_CODES[scheme].items() for code in codes}
                for scheme in precedence}
    want_group, want_source = [], []
    for row in shelf[precedence].itertuples(index=False):
        found = [(s, group_of[s][int(v)]) for s, v in zip(precedence, row, strict=True)
                 if not np.isnan(v) and int(v) in group_of[s]]
        want_group.append(found[0][1] if found else None)
        want_source.append(found[0][0] if found else None)

    def plain(series: pd.Series) -> list:
        return [None if pd.isna(v) else v for v in series]

    assert plain(frame["occ_major_harmonized"]) == want_group
    assert plain(frame["occ_source"]) == want_source
    assert {"occ_2000c_1m", "occ_2010c_1m", "occ_1970c"} <= set(want_source)
    fallback = shelf["occ_2010c_1m"].eq(9999)
    assert fallback.any() and (frame.loc[fallback, "occ_source"] == "occ_2000c_1m").all()
    labels = frame["occ_major_harmonized"].astype(object).map(psid.OCC_LABELS)
    assert plain(frame["occ_major_harmonized_label"]) == plain(labels)


def test_reference_person_and_spouse_roles(world, built):
    frame, _, meta, _, _ = built
    rows = _with_truth(frame, world)
    ambiguous = rows["ambiguous"]
    assert ambiguous.any() and (~ambiguous).any()
    plain = rows[~ambiguous]
    assert plain["reference_person_id"].astype("float64").tolist() == plain["rp_id"].tolist()
    want_sp = plain["sp_id"].astype("float64").to_numpy()
    got_sp = plain["spouse_person_id"].astype("float64").to_numpy()
    assert np.array_equal(got_sp, want_sp, equal_nan=True)
    assert rows.loc[ambiguous, "reference_person_id"].isna().all()
    assert rows.loc[ambiguous, "spouse_person_id"].isna().all()
    age = world.shelf.set_index(["id", "year"])["demo_age_gen"]
    rp_age = age.reindex(pd.MultiIndex.from_arrays([plain["rp_id"], plain["year"]]))
    assert plain["demo_age_gen_rp"].tolist() == rp_age.tolist()
    truth = world.families
    assert meta["enrichment"]["ambiguous_family_waves"] == int(truth["ambiguous"].sum())
    assert meta["enrichment"]["family_waves"] == len(truth)
    absent = frame[frame["panel_current"].eq(0).to_numpy()]
    assert absent[list(ENRICHMENT_COLUMNS)].isna().all().all()


def _valid(value: pd.Series, accuracy: pd.Series, topcode: float) -> pd.Series:
    return value.ge(0) & value.lt(topcode) & accuracy.isin([0, 1, 2])


def test_hours_and_job_end_reasons_land_on_the_right_person_wave(world, built):
    frame, _, _, _, _ = built
    rows = _with_truth(frame, world)
    early = rows[rows["year"] <= 1992]
    status = {0: "direct_or_valid_zero", 1: "minor_assignment", 2: "major_assignment"}
    for role in ("rp", "sp"):
        ok = _valid(early[f"hours_{role}"], early[f"hours_acc_{role}"], 9999)
        want = early[f"hours_{role}"].where(ok)
        got = early[f"annual_hours_{role}"]
        assert np.array_equal(got.to_numpy(), want.to_numpy(), equal_nan=True), role
        want_status = early[f"hours_acc_{role}"].map(status).where(ok, "missing_or_topcoded")
        assert early[f"annual_hours_assignment_status_{role}"].tolist() == want_status.tolist()
        assert (early[f"annual_hours_valid_{role}"] == ok.astype(int)).all()
        work = np.where(ok, (early[f"hours_{role}"] > 0).astype(float), np.nan)
        assert np.array_equal(early[f"annual_work_status_{role}"].to_numpy(), work,
                              equal_nan=True)
        # the validity rule is exercised both ways
        assert (early[f"hours_{role}"].eq(9999)).any() or role == "sp"
        assert (early[f"hours_acc_{role}"].eq(3) & ~ok).any()
        for route in ("employed", "unemployed"):
            want_code = early[f"reason_{route}_{role}"]
            got_code = early[f"job_end_reason_{route}_code_{role}"].astype("float64")
            assert np.array_equal(got_code.to_numpy(), want_code.to_numpy(), equal_nan=True)
    sp_waves = {1976, *range(1979, 1993)}
    assert (early["job_end_reason_ascertained_rp"] == 1).all()
    assert (early["job_end_reason_ascertained_sp"] == early["year"].isin(sp_waves)).all()
    assert early["reason_employed_rp"].isin([1, 3]).any()  # qualifying codes occur
    assert (early["labor_reference_year"] == early["year"] - 1).all()
    late = rows[rows["year"] > 1992]
    assert late["annual_hours_rp"].isna().all() and late["labor_reference_year"].isna().all()
    assert (late["job_end_reason_ascertained_rp"] == 0).all()
    # 1968: one combined question answers both routes
    in68 = early[early["year"] == 1968]
    assert (in68["job_end_reason_employed_code_rp"] == in68["job_end_reason_unemployed_code_rp"]
            ).all()


def test_food_waves_stamps_and_top_codes(world, built):
    frame, _, _, _, _ = built
    rows = _with_truth(frame, world)
    early = rows[rows["year"] <= 1992]
    missing_waves = early["year"].isin([1968, 1973, 1988, 1989])
    gone = early[missing_waves]
    assert set(gone["year"]) == {1968, 1973, 1988, 1989}
    assert gone["food_at_home_nominal_annual"].isna().all()
    assert (gone["food_at_home_assignment_status"] == "not_collected").all()
    assert (gone["food_cash_valid"] == 0).all()
    food = early[~missing_waves]
    topcode_home = np.where(food["year"] >= 1983, 99_999, 9_999)
    topcode_stamps = np.where(food["year"] >= 1977, 999, 9_999)
    home_ok = _valid(food["food_home"], food["food_home_acc"], topcode_home)
    away_ok = _valid(food["food_away"], food["food_away_acc"], 9_999)
    stamps_ok = _valid(food["food_stamps"], food["food_stamps_acc"], topcode_stamps)
    factor = np.where(food["year"] >= 1977, 12.0, 1.0)  # last month's amount from 1977
    checks = {
        "food_at_home_nominal_annual": food["food_home"].where(home_ok),
        "food_away_nominal_annual": food["food_away"].where(away_ok),
        "food_stamps_net_nominal_annual": (food["food_stamps"] * factor).where(stamps_ok),
        "food_cash_nominal_annual": (food["food_home"] + food["food_away"]).where(
            home_ok & away_ok),
    }
    for column, want in checks.items():
        assert np.allclose(food[column], want, equal_nan=True), column
    assert (food["food_stamps_annualisation_factor"] == factor).all()
    periods = np.where(food["year"] >= 1977, "last_month", "previous_calendar_year")
    assert food["food_stamps_reference_period"].tolist() == periods.tolist()
    assert (food["food_stamps"].gt(0) & food["year"].ge(1977) & stamps_ok).any()
    at_top = food["food_home"].eq(topcode_home)
    assert at_top.any()
    assert (food.loc[at_top, "food_at_home_assignment_status"] == "missing_or_topcoded").all()
    assert (food["food_cash_positive"] == (checks["food_cash_nominal_annual"] > 0)).all()
    assert rows.loc[rows["year"] > 1992, "food_at_home_assignment_status"].isna().all()


def test_fingerprints_synthetic_flag_and_metadata(built):
    frame, report, meta, layout, _ = built
    assert report.synthetic and meta["synthetic"]
    # the V-variable map decides the enrichment, so its fingerprint is provenance too
    assert report.inputs == {str(layout["long"]): input_sha256(layout["long"]),
                             str(layout["main"]): input_sha256(layout["main"]),
                             str(DEFAULT_VARIABLE_MAP): input_sha256(DEFAULT_VARIABLE_MAP)}
    assert has_synthetic_sidecar(Path(report.outputs["psid_main"]))
    assert meta["sources"]["main_study"]["person_id"] == "ID"
    assert meta["sources"]["main_study"]["id_differs_from_er30001_x1000_plus_er30002"] == 0
    found = {(f["concept"], f["role"], f["survey_year"]): f["variable"]
             for f in meta["enrichment"]["fields_found"]}
    assert found[("annual_hours", "rp", 1968)] == "V47"
    assert found[("food_stamps", "family", 1977)] == "V5269"
    assert len(found) == len(pd.read_csv(DEFAULT_VARIABLE_MAP))
    assert meta["rows_earn_tot_nd_at_topcode"] == int(frame["earn_tot_nd"].eq(9_999_999).sum())
    assert frame["release_date"].isna().all()
    assert not list(Path(report.outputs["psid_main"]).parent.glob(".psid_build_*"))


def test_same_seed_gives_identical_archives(tmp_path):
    a = synth.write_synthetic_psid(tmp_path / "a.zip", tmp_path / "b.zip", seed=3, n_families=5)
    synth.write_synthetic_psid(tmp_path / "c.zip", tmp_path / "d.zip", seed=3, n_families=5)
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "c.zip").read_bytes()
    assert (tmp_path / "b.zip").read_bytes() == (tmp_path / "d.zip").read_bytes()
    assert (tmp_path / "a.zip.synthetic.json").is_file()
    assert len(a.shelf) > 0


# ---------------------------------------------------------------------------------------------
# Options: release dates, variable map, id convention, labels


def test_release_dates_cover_the_schedule(small, tmp_path):
    crosswalk = write_synthetic_release_dates(tmp_path, seed=1)["psid"]
    report = _build(tmp_path, small, release_dates=str(crosswalk))
    frame = pd.read_parquet(report.outputs["psid_main"])
    table = pd.read_csv(crosswalk)
    want = frame["year"].map(dict(zip(table["year"], table["release_date"], strict=True)))
    assert frame["release_date"].tolist() == want.tolist()
    # release_date_source is the crosswalk's source text, as in the reference
    assert frame["release_date_source"].tolist() == frame["year"].map(
        dict(zip(table["year"], table["source"], strict=True))).tolist()
    with pytest.raises(DataError, match=r"nope\.csv: psid release-date crosswalk not found"):
        _build(tmp_path, small, release_dates=str(tmp_path / "nope.csv"))
    table[table["year"] != 2005].to_csv(crosswalk, index=False)
    with pytest.raises(DataError, match=r"release_psid\.csv: must cover exactly .*missing \[2005\]"):
        _build(tmp_path, small, release_dates=str(crosswalk))


def test_custom_variable_map_and_its_checks(small, tmp_path):
    table = pd.read_csv(DEFAULT_VARIABLE_MAP, dtype=str, keep_default_na=False)
    reduced = table[table["survey_year"].astype(int) <= 1970]
    path = tmp_path / "vars.csv"
    reduced.to_csv(path, index=False)
    report = _build(tmp_path, small, main_study_vars=str(path))
    frame = pd.read_parquet(report.outputs["psid_main"])
    now = _current(frame)
    assert now.loc[now["year"] == 1971, "annual_hours_rp"].isna().all()
    assert now.loc[now["year"] == 1970, "annual_hours_valid_rp"].notna().all()
    food = reduced[reduced["concept"].str.startswith("food")].assign(survey_year="1973")
    pd.concat([reduced, food]).to_csv(path, index=False)
    with pytest.raises(ConfigError, match=r"vars\.csv:\d+: food_\w+ in wave 1973: spec 1\.10"):
        read_variable_map(path)
    stamps = table[table["concept"] == "food_stamps"].copy()
    stamps.loc[stamps.index[-1], "annualisation_factor"] = "1"
    stamps.to_csv(path, index=False)
    with pytest.raises(ConfigError, match="annualisation_factor 1 does not match"):
        read_variable_map(path)


def test_person_id_from_er30001_er30002_and_label_text_reported(small, tmp_path):
    """Without ID the person id is ER30001*1000+ER30002; the file's own label text differing from
    the spec's is reported in the metadata, while the output keeps the spec's text."""
    main = small.main_study.drop(columns="ID")
    labels = {**synth.SHELF_VALUE_LABELS, "demo_sex": {1: "1. Male", 2: "2. Female"}}
    long_zip, main_zip = synth.write_psid_archives(
        dataclasses.replace(small, main_study=main), tmp_path / "l.zip", tmp_path / "m.zip",
        shelf_labels=labels)
    report = psid.build(_survey(long_zip, main_zip), tmp_path, tmp_path / "out")
    frame = pd.read_parquet(report.outputs["psid_main"])
    meta = json.loads((tmp_path / "out" / psid.METADATA_FILE).read_text())
    assert meta["sources"]["main_study"]["person_id"] == "ER30001*1000+ER30002"
    rows = _with_truth(frame, small)
    early = rows[rows["year"] <= 1992]
    ok = _valid(early["hours_rp"], early["hours_acc_rp"], 9999)
    assert np.array_equal(early["annual_hours_rp"].to_numpy(),
                          early["hours_rp"].where(ok).to_numpy(), equal_nan=True)
    assert set(frame["demo_sex_label"]) == {"Male", "Female"}
    assert meta["labels"]["file_value_labels"]["demo_sex"] == {
        "1": ["Male", "1. Male"], "2": ["Female", "2. Female"]}
    assert meta["labels"]["file_value_labels"]["home_stat"] == "same"


# ---------------------------------------------------------------------------------------------
# Errors: one line naming the file, member, column, code or wave; nothing written


def _no_outputs(folder: Path) -> bool:
    out = folder / "out"
    return not out.exists() or not [p for p in out.iterdir()]


def test_wave_outside_schedule_and_missing_wave(small, tmp_path):
    shelf = small.shelf.copy()
    shelf.loc[shelf["year"] == 1999, "year"] = 1998
    with pytest.raises(DataError, match=r"LONG\.dta: wave 1998 is not in the PSID wave schedule"):
        _build(tmp_path, dataclasses.replace(small, shelf=shelf))
    shelf = small.shelf[small.shelf["year"] != 2021]
    with pytest.raises(DataError, match=r"wave\(s\) 2021 of the PSID schedule are missing"):
        _build(tmp_path, dataclasses.replace(small, shelf=shelf))
    assert _no_outputs(tmp_path)


def test_missing_archive_member_and_file(small, tmp_path):
    long_zip, main_zip = synth.write_psid_archives(small, tmp_path / "l.zip", tmp_path / "m.zip")
    renamed = tmp_path / "renamed.zip"
    with zipfile.ZipFile(main_zip) as src, zipfile.ZipFile(renamed, "w") as dst:
        dst.writestr("PSID_FULL.dta", src.read(MAIN_STUDY_MEMBER))
    with pytest.raises(DataError, match=r"renamed\.zip: member "
                       r"PSID_COMPLETE_MAIN_STUDY_1968_2021_FULL\.dta not found"):
        psid.build(_survey(long_zip, renamed), tmp_path, tmp_path / "out")
    with pytest.raises(DataError, match=r"nope\.zip: PSID-SHELF long archive not found.*194322"):
        psid.build(_survey(tmp_path / "nope.zip", main_zip), tmp_path, tmp_path / "out")
    with pytest.raises(ConfigError, match="raw.main_study is not set"):
        psid.build(SurveyConfig(name="psid", raw={"shelf_long": str(long_zip)}), tmp_path,
                   tmp_path / "out")
    assert _no_outputs(tmp_path)


def test_missing_columns_are_named(small, tmp_path):
    with pytest.raises(DataError, match=r"LONG\.dta: column fuid not found"):
        _build(tmp_path, dataclasses.replace(small, shelf=small.shelf.drop(columns="fuid")))
    main = small.main_study.drop(columns="V1138")
    with pytest.raises(DataError, match=r"FULL\.dta: column V1138 \(annual_hours rp 1970\)"):
        _build(tmp_path, dataclasses.replace(small, main_study=main))
    main = small.main_study.drop(columns=["ID", "ER30002"])
    with pytest.raises(DataError, match="no person id: columns ID or ER30001 and ER30002"):
        _build(tmp_path, dataclasses.replace(small, main_study=main))
    assert _no_outputs(tmp_path)


def test_codes_outside_the_codebook(small, tmp_path):
    shelf = small.shelf.copy()
    shelf.loc[shelf.index[5], "demo_sex"] = 3
    with pytest.raises(DataError, match=r"LONG\.dta: column demo_sex has code 3 outside"):
        _build(tmp_path, dataclasses.replace(small, shelf=shelf))
    assert _no_outputs(tmp_path)


def test_job_end_codes_are_kept_as_published(small, tmp_path):
    """As the reference: a code outside the documented 0-9 stays (counted in the metadata); a
    fractional code is an error."""
    main = small.main_study.copy()
    main.loc[main["V3986"].notna(), "V3986"] = 12  # every family, so members stay consistent
    assert main["V3986"].eq(12).any()
    report = _build(tmp_path, dataclasses.replace(small, main_study=main))
    frame = pd.read_parquet(report.outputs["psid_main"])
    wave = _current(frame)[lambda f: f["year"] == 1975]
    assert wave["job_end_reason_employed_code_rp"].dropna().eq(12).all()
    meta = json.loads((tmp_path / "out" / psid.METADATA_FILE).read_text())
    counts = meta["enrichment"]["job_end_codes_outside_0_9"]
    assert counts["V3986 (job_end_reason_employed rp 1975)"] == int(
        wave["job_end_reason_employed_code_rp"].notna().sum())
    main.loc[main["V3986"].notna(), "V3986"] = 1.5
    with pytest.raises(DataError, match=r"column V3986 \(job_end_reason_employed rp 1975\) has "
                                        r"non-integer code 1.5"):
        _build(tmp_path / "again", dataclasses.replace(small, main_study=main))


def test_missing_sampstat_counts_as_sample_person(small, tmp_path):
    """The reference's rule sampstat != 0 holds for a missing sampstat too."""
    shelf = small.shelf.astype({"sampstat": "float64"})
    shelf.loc[shelf.index[:3], "sampstat"] = np.nan
    report = _build(tmp_path, dataclasses.replace(small, shelf=shelf))
    frame = pd.read_parquet(report.outputs["psid_main"])
    assert frame["sample_person"].iloc[:3].tolist() == [True] * 3
    assert frame["sample_person"].tolist() == shelf["sampstat"].ne(0).tolist()


def test_strl_columns_are_read(small, tmp_path):
    """A SHELF text variable stored as a strL reaches the output as its text."""
    import io as _io

    buffer = _io.BytesIO()
    shelf = small.shelf.assign(psid_retrieve="PSID data center extract " + "x" * 2100)
    shelf.to_stata(buffer, write_index=False, version=118, convert_strl=["psid_retrieve"],
                   value_labels={k: v for k, v in synth.SHELF_VALUE_LABELS.items()
                                 if k in shelf.columns})
    long_zip = tmp_path / "l.zip"
    with zipfile.ZipFile(long_zip, "w") as zf:
        zf.writestr(psid.LONG_MEMBER, buffer.getvalue())
    _, main_zip = synth.write_psid_archives(small, tmp_path / "x.zip", tmp_path / "m.zip")
    report = psid.build(_survey(long_zip, main_zip), tmp_path, tmp_path / "out")
    frame = pd.read_parquet(report.outputs["psid_main"])
    assert frame["psid_retrieve"].tolist() == shelf["psid_retrieve"].tolist()
    meta = json.loads((tmp_path / "out" / psid.METADATA_FILE).read_text())
    assert meta["columns"]["shelf_strl"] == ["psid_retrieve"]
    assert meta["sources"]["shelf_long"]["release_identifiers"]["psid_retrieve"].startswith(
        "PSID data center extract")


def test_family_values_must_agree_across_members(small, tmp_path):
    """Also: a failed rebuild leaves the previous outputs as they were."""
    first = _build(tmp_path, small)
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    assert set(before) == {"psid_main.parquet", psid.METADATA_FILE}
    assert Path(first.outputs["psid_main"]).name == "psid_main.parquet"
    rows = _current(small.shelf)
    family = rows[rows["year"] == 1980].groupby("fuid")["id"].apply(list)
    members = family[family.map(len) > 1].iloc[0]
    main = small.main_study.copy()
    main.loc[main["ID"] == members[0], "V6934"] = 1234  # 1980 hours of the reference person
    main.loc[main["ID"] == members[1], "V6934"] = 2345
    with pytest.raises(DataError, match=r"V6934 differs across the current members of family "
                                        r"\d+ in wave 1980"):
        _build(tmp_path, dataclasses.replace(small, main_study=main))
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before


def test_truncated_member_is_named(small, tmp_path):
    long_zip, main_zip = synth.write_psid_archives(small, tmp_path / "l.zip", tmp_path / "m.zip")
    with zipfile.ZipFile(long_zip) as zf:
        data = zf.read(psid.LONG_MEMBER)
    cut = tmp_path / "cut.zip"
    with zipfile.ZipFile(cut, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(psid.LONG_MEMBER, data[: len(data) // 2])
    with pytest.raises(DataError, match=r"cut\.zip!PSIDSHELF_1968_2021_LONG\.dta: file ends early"):
        psid.build(_survey(cut, main_zip), tmp_path, tmp_path / "out")
    assert _no_outputs(tmp_path)
